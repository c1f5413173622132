"""The memory-mapped index of memory records' vectors, one per model, kept beside the store.

Why a matrix on disk: exact search over unit vectors is one matrix product, which numpy does
at memory speed (tens of milliseconds for 100,000 vectors of 384 values); what costs a new
process seconds is reading every vector out of the store's rows first. A process that maps a
float32 file instead pays only for the pages the product touches, which the operating system
keeps between processes. The matrix is exact; a large model's generation may also hold a
nearest-neighbour graph of its rows (`lantern.indexes.graph`), which proposes rows to score
instead of scoring them all.

What a generation holds (one directory, `place.new_generation`, named by the model):

* `vectors.f32`: the usable vectors, rows of `dim` little-endian float32 values scaled to unit
  length, as `lantern.semantic.index` scales the vectors it reads from the store;
* `ids.bin`: the record id of each row, UTF-8 in `width` bytes padded with zeros;
* `dead.i64`: rows that no longer hold their record's vector (it was replaced or removed),
  as little-endian int64 row numbers;
* `manifest.json`: how many rows and dead rows are valid, the dimension, the width, the ids
  of the model's vectors that cannot be used (`unusable`, left out as the store's reader
  leaves them out), and the feed marks (`lantern.indexes.feed`) of the last change applied on
  the vector side and on the records side.

How it stays right. The three data files are only ever appended to, beyond what the manifest
says is valid; the manifest is written to a temporary file, synced, and put in place with
`os.replace`, so a reader (which maps only the rows the manifest names) sees one state or the
next, never half of one. Whatever writes an index (a catch-up, a build, a compaction) holds an
exclusive `flock` on the index's lock file (`.<name>.lock` in the index directory), so
processes take turns. A catch-up cuts the files back to the manifest's lengths (what a killed
catch-up appended is dropped), reads what the feed says changed since the mark, appends the
new vectors, marks the old rows dead, syncs the files, then replaces the manifest. When more
than a quarter of the rows are dead, the live rows are copied into a new generation
(`_compact`), published as `place.publish` publishes every index.

A forgotten record's vector must leave the disk, not only the search: the rows of a record
that is no longer in the store (its vector removed with it, or an older vector of it replaced
earlier) are overwritten with zeros in place. That is safe for a reader still using an older
manifest, where such a row may still count as live: every row a search ranks is read back
from the store with the search's filters, and a forgotten record is not there. A forget
catches the indexes up before it returns (`after_forget`); if that process is killed first,
the next catch-up zeroes the rows.

POSIX only (`fcntl.flock`, and files that stay mapped after a new generation removes them);
elsewhere, and without numpy, searches read the vectors from the store as before.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import weakref
from collections.abc import Iterable, Iterator, Sequence
from contextlib import suppress
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO, overload

from sqlalchemy import Connection, bindparam, exists, func, select

from lantern.errors import StoreBusy
from lantern.indexes import feed, place
from lantern.indexes.feed import Mark
from lantern.store import settings
from lantern.store.engine import Store
from lantern.store.models import index_feed
from lantern.store.models import memory_embeddings as table
from lantern.store.models import memory_records as records

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import NDArray

    from lantern.indexes.graph import Graph

PREFIX = "vectors-memory-"
"""Every vector index's name starts so (`vectors-memory-<model, sanitised>-<hash>`)."""
AUTO_BUILD_UP_TO = 50_000
"""A model with at most this many vectors gets its index on the first search that needs it
(a second at most); a larger one is searched from the store's rows until `lantern db
rebuild-index` builds it, so that no search pays a long build unannounced."""
COMPACT_ABOVE = 0.25
"""The share of dead rows above which a catch-up copies the live rows into a new generation."""
FORMAT = 1
SAMPLE = 100
"""Vectors whose dimensions decide which dimension a model's vectors have (the commonest)."""

_MANIFEST = "manifest.json"
_VECTORS = "vectors.f32"
_IDS = "ids.bin"
_DEAD = "dead.i64"
_BATCH = 500
_FETCH = 10_000
_COPY = 65_536
_CHECK_SAMPLE = 64
_TOLERANCE = 1e-6
_KILL_HOOK = "LANTERN_TEST_VECTOR_INDEX_PAUSE"
"""Tests only: a file path; a catch-up or build that has written its data but not its
manifest creates it and waits, so that a test can kill the process at that moment."""

_ROWS = select(table.c.memory_id, table.c.dim, table.c.vector).where(
    table.c.model == bindparam("model")
)
_COUNT = select(func.count()).select_from(table).where(table.c.model == bindparam("model"))
_DIMS = select(table.c.dim).where(table.c.model == bindparam("model")).limit(SAMPLE)


class Broken(ValueError):
    """A generation whose files do not say what a generation says (cut short, edited, of
    another format or model)."""


class _Stale:
    """What a catch-up returns when the generation must be built again from the store."""


STALE = _Stale()


def available() -> bool:
    """Whether this machine can keep the index: numpy (the `embed` extra) and POSIX locks."""
    from importlib.util import find_spec

    return os.name == "posix" and find_spec("numpy") is not None


def directory_of(store: Store, *, looking: bool = False) -> Path | None:
    """Where a store's vector indexes live; None for a store that searches without them (in
    memory, on PostgreSQL outside a server process, without numpy or POSIX locks, with
    `LANTERN_INDEXES=off`, or of a schema older than the change feed, opened to be upgraded).
    `looking`: see `place.directory`."""
    if not available():
        return None
    directory = place.directory(store.location, looking=looking)
    if directory is None or not _has_feed(store):
        return None
    return directory


_FEEDS: weakref.WeakSet[Store] = weakref.WeakSet()
"""Stores known to have the change feed (a table is never dropped by an upgrade)."""


def _has_feed(store: Store) -> bool:
    if store in _FEEDS:
        return True
    with store.read() as conn:
        if conn.dialect.name == "postgresql":
            found = conn.exec_driver_sql("SELECT to_regclass('index_feed')").first()
            found = None if found is None or found[0] is None else found
        else:
            found = conn.exec_driver_sql(
                "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'index_feed'"
            ).first()
    if found is not None:
        _FEEDS.add(store)
    return found is not None


def name_of(model: str) -> str:
    """The index's name for a model: readable, safe as a file name, without a dot (a
    generation is `<name>.<random>`), and told apart from every other model by a hash."""
    readable = re.sub(r"[^A-Za-z0-9_-]+", "_", model)[:48]
    digest = hashlib.sha256(model.encode("utf-8", "surrogatepass")).hexdigest()[:12]
    return f"{PREFIX}{readable}-{digest}"


# --- the manifest ------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Manifest:
    """What a generation holds, as of its marks."""

    model: str
    dim: int
    width: int
    rows: int
    dead: int
    unusable: tuple[str, ...]
    mark: Mark
    """The last change applied on the vector side (`feed.MEMORY_VECTOR`)."""
    records: Mark
    """The last change looked at on the records side (`feed.MEMORY`), for forgotten records."""

    def to_json(self) -> dict[str, Any]:
        return {
            "format": FORMAT,
            "model": self.model,
            "dim": self.dim,
            "width": self.width,
            "rows": self.rows,
            "dead": self.dead,
            "unusable": list(self.unusable),
            "mark": self.mark.to_json(),
            "records": self.records.to_json(),
        }

    @classmethod
    def read(cls, generation: Path) -> Manifest:
        """The generation's manifest, checked against its files' sizes."""
        try:
            data = json.loads((generation / _MANIFEST).read_bytes())
            manifest = cls(
                model=_text(data["model"]),
                dim=_count(data["dim"]),
                width=_count(data["width"]),
                rows=_count(data["rows"]),
                dead=_count(data["dead"]),
                unusable=tuple(_text(item) for item in data["unusable"]),
                mark=Mark.from_json(data["mark"]),
                records=Mark.from_json(data["records"]),
            )
            if data["format"] != FORMAT or manifest.width < 1:
                raise Broken(f"a manifest of format {data['format']!r}")
        except FileNotFoundError:
            raise
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise Broken(f"its manifest cannot be read ({exc})") from exc
        for file, needed in manifest.sizes().items():
            size = (generation / file).stat().st_size
            if size < needed:
                raise Broken(f"{file} holds {size} bytes; its manifest counts {needed}")
        return manifest

    def sizes(self) -> dict[str, int]:
        """The valid bytes of each data file."""
        return {
            _VECTORS: 4 * self.dim * self.rows,
            _IDS: self.width * self.rows,
            _DEAD: 8 * self.dead,
        }

    def write(self, generation: Path) -> None:
        """Put this manifest in place at once (temporary file, sync, `os.replace`)."""
        staged = generation / f"{_MANIFEST}.new"
        with open(staged, "w", encoding="utf-8") as handle:
            json.dump(self.to_json(), handle)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(staged, generation / _MANIFEST)
        place.sync(generation)


def _text(value: object) -> str:
    if not isinstance(value, str):
        raise TypeError(f"{value!r} is not a string")
    return value


def _count(value: object) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise TypeError(f"{value!r} is not a count")
    return value


# --- a generation, mapped ----------------------------------------------------------------------


class IdColumn(Sequence[str]):
    """The record id of each row of a mapped generation, decoded when asked: "" for a dead row
    (one that holds no record's vector any more)."""

    def __init__(self, ids: NDArray[Any], alive: NDArray[np.bool_] | None) -> None:
        self._ids = ids
        self._alive = alive
        self._folded: NDArray[np.uint64] | None = None

    def __len__(self) -> int:
        return int(self._ids.shape[0])

    @overload
    def __getitem__(self, row: int) -> str: ...

    @overload
    def __getitem__(self, row: slice) -> list[str]: ...

    def __getitem__(self, row: int | slice) -> str | list[str]:
        if isinstance(row, slice):
            return [self[position] for position in range(*row.indices(len(self)))]
        if self._alive is not None and not self._alive[row]:
            return ""
        return bytes(self._ids[row]).decode("utf-8", "surrogatepass")

    def live_rows(self) -> NDArray[np.int64]:
        """The rows that hold a record's vector, in order."""
        import numpy as np

        if self._alive is None:
            return np.arange(len(self), dtype=np.int64)
        return np.flatnonzero(self._alive).astype(np.int64)

    def decoded(self, rows: NDArray[np.int64]) -> list[str]:
        """The ids of these rows (live or not), decoded."""
        return [bytes(item).decode("utf-8", "surrogatepass") for item in self._ids[rows]]

    def row_of(self, item_id: str) -> int | None:
        """The live row of an id, if it has one (a vectorised comparison, no dictionary)."""
        if not item_id or not len(self):
            return None
        import numpy as np

        found = np.flatnonzero(self._ids == item_id.encode("utf-8", "surrogatepass"))
        for row in found[::-1]:  # a replaced vector's newer row comes later
            if self._alive is None or self._alive[row]:
                return int(row)
        return None

    def rows_of(self, items: Sequence[str]) -> dict[str, int]:
        """The live row of each of `items` that has one, as `row_of` finds it.

        Comparing whole ids over a million rows costs tens of milliseconds an id; here each id
        is first compared by an eight-byte fold of it (computed once per column), and only the
        few rows that agree are compared whole."""
        import numpy as np

        width = self._ids.dtype.itemsize
        if not len(self):
            return {}
        folded = self._folded
        if folded is None:
            folded = self._folded = _fold(self._ids.view(np.uint8).reshape(len(self), width))
        found: dict[str, int] = {}
        for item in items:
            key = item.encode("utf-8", "surrogatepass")
            if not item or len(key) > width:
                continue
            padded = np.frombuffer(key.ljust(width, b"\0"), dtype=np.uint8).reshape(1, width)
            candidates = np.flatnonzero(folded == _fold(padded)[0])
            if not len(candidates):
                continue
            matching = candidates[self._ids[candidates] == key]
            for row in matching[::-1]:  # a replaced vector's newer row comes later
                if self._alive is None or self._alive[row]:
                    found[item] = int(row)
                    break
        return found


def _fold(raw: NDArray[np.uint8]) -> NDArray[np.uint64]:
    """Each row of bytes folded into eight by exclusive or, as one unsigned integer."""
    import numpy as np

    rows, width = raw.shape
    blocks = -(-width // 8)
    padded = np.zeros((rows, blocks * 8), dtype=np.uint8)
    padded[:, :width] = raw
    words = padded.view(np.uint64)
    folded: NDArray[np.uint64] = words[:, 0].copy()
    for block in range(1, blocks):
        folded ^= words[:, block]
    return folded


@dataclass(frozen=True, slots=True)
class Snapshot:
    """A generation's valid rows as of its manifest, memory-mapped (read-only)."""

    generation: Path
    manifest: Manifest
    token: str | None
    """The store's memory-vector token read with the marks (`lantern.store.settings`)."""
    matrix: NDArray[np.float32]
    ids: IdColumn
    dead: NDArray[np.int64]
    graph: Graph | None = None
    """The generation's nearest-neighbour graph (`lantern.indexes.graph`), if it has one."""

    @property
    def live(self) -> int:
        return self.manifest.rows - self.manifest.dead


def _map(generation: Path, manifest: Manifest, token: str | None) -> Snapshot:
    import numpy as np

    rows, dim = manifest.rows, manifest.dim
    if rows and dim:
        matrix: NDArray[np.float32] = np.memmap(
            generation / _VECTORS, dtype="<f4", mode="r", shape=(rows, dim)
        )
    else:
        matrix = np.zeros((rows, dim), dtype=np.float32)
    id_type = np.dtype(f"S{manifest.width}")
    if rows:
        ids: NDArray[Any] = np.memmap(generation / _IDS, dtype=id_type, mode="r", shape=(rows,))
    else:
        ids = np.zeros(0, dtype=id_type)
    dead = _dead_rows(generation, manifest)
    alive = None
    if len(dead):
        alive = np.ones(rows, dtype=np.bool_)
        alive[dead] = False
    from lantern.indexes import graph

    found = graph.current(generation, rows, dim) if rows and dim else None
    return Snapshot(generation, manifest, token, matrix, IdColumn(ids, alive), dead, found)


def _dead_rows(generation: Path, manifest: Manifest) -> NDArray[np.int64]:
    import numpy as np

    if not manifest.dead:
        return np.zeros(0, dtype=np.int64)
    dead = np.fromfile(generation / _DEAD, dtype="<i8", count=manifest.dead).astype(np.int64)
    if len(dead) != manifest.dead or dead.min() < 0 or dead.max() >= manifest.rows:
        raise Broken("its dead rows name rows it does not have")
    if len(np.unique(dead)) != len(dead):
        raise Broken("it counts a dead row twice")
    return dead


# --- for a search ------------------------------------------------------------------------------


def ready(store: Store, model: str) -> Snapshot | None:
    """The model's index caught up to the store's last committed change, memory-mapped; None
    when the search must read the store's rows instead (no index and too many vectors to build
    one now, another process holding the index past the busy timeout, a file that cannot be
    read or written here). A small store without an index, or with one that must be rebuilt
    (another store's, cut short), gets a new one here."""
    directory = directory_of(store)
    if directory is None or not directory.is_dir():
        return None  # only a write or a command creates the directory (`place.directory`)
    name = name_of(model)
    try:
        try:
            result = _caught_up(store, directory, name, model)
        except Broken:
            result = STALE
        if isinstance(result, Snapshot):
            return result
        if (result is STALE or result is _MISSING) and _small(store, model):
            return _built_unless_current(store, directory, model)
    except (OSError, Broken):
        pass  # a file that cannot be read or written here: the store answers
    return None


_AGAIN = object()
"""Another generation replaced the one being caught up: look again."""
_MISSING = object()
"""No generation yet."""


def _caught_up(store: Store, directory: Path, name: str, model: str) -> Any:
    """The current generation caught up (a `Snapshot`), `STALE`, `_MISSING`, or None when
    another process holds the lock past the busy timeout; raises `Broken`."""
    for _attempt in range(3):
        generation = place.current(directory, name)
        if generation is None:
            return _MISSING
        try:
            manifest = Manifest.read(generation)
            if manifest.model != model:
                raise Broken(f"it holds the vectors of {manifest.model!r}")
            with store.read() as conn:
                now = Mark.now(conn, feed.MEMORY_VECTOR)
                if feed.current(conn, feed.MEMORY_VECTOR, manifest.mark, now):
                    token = settings.token(conn, settings.MEMORY_VECTORS)
                    return _map(generation, manifest, token)
            result = _catch_up_locked(store, directory, name, generation)
        except FileNotFoundError as exc:
            if place.current(directory, name) == generation:
                raise Broken(f"a file is missing ({Path(exc.filename or '').name})") from exc
            continue  # replaced while it was being opened
        if result is not _AGAIN:
            return result
    return None


def _small(store: Store, model: str) -> bool:
    return count(store, model) <= AUTO_BUILD_UP_TO


def count(store: Store, model: str) -> int:
    """The store's vectors of `model` (counted on the model's index of the table)."""
    with store.read() as conn:
        return int(conn.execute(_COUNT, {"model": model}).scalar_one())


def _built_unless_current(store: Store, directory: Path, model: str) -> Snapshot | None:
    """A new generation, unless another process published a good one while this one waited
    for the lock."""
    name = name_of(model)
    with place.locked(directory, name) as held:
        if not held:
            return None
        generation = place.current(directory, name)
        if generation is not None:
            try:
                manifest = Manifest.read(generation)
                result = STALE
                if manifest.model == model:
                    result = _catch_up(store, directory, name, generation, manifest)
            except (Broken, FileNotFoundError):
                result = STALE
            if isinstance(result, Snapshot):
                return result
        return _build(store, directory, model)


def _catch_up_locked(store: Store, directory: Path, name: str, generation: Path) -> Any:
    with place.locked(directory, name) as held:
        if not held:
            return None
        if place.current(directory, name) != generation:
            return _AGAIN
        return _catch_up(store, directory, name, generation, Manifest.read(generation))


# --- building ----------------------------------------------------------------------------------


def build(store: Store, directory: Path, model: str) -> dict[str, Any]:
    """A new generation of the model's index from the store's vectors, published as the
    current one (what `lantern db rebuild-index` runs); its status (`status`)."""
    with place.locked(directory, name_of(model)) as held:
        if not held:
            raise StoreBusy(
                f"the vector index of {model} is being written by another process; "
                "try again when it is done"
            )
        snapshot = _build(store, directory, model)
    snapshot = _with_graph(store, directory, snapshot)
    with store.read() as conn:
        now = Mark.now(conn, feed.MEMORY_VECTOR)
        current = feed.current(conn, feed.MEMORY_VECTOR, snapshot.manifest.mark, now)
    return _status_of(snapshot.generation, snapshot.manifest, current)


def _with_graph(store: Store, directory: Path, snapshot: Snapshot) -> Snapshot:
    """The snapshot's generation with a nearest-neighbour graph of its rows, when it has
    enough live vectors for one (`graph.BUILD_FROM`), usearch is installed, and the graph
    finds the nearest rows as exact search does (`graph.MIN_RECALL`, measured on its rows).

    The graph is built without the lock (minutes at a million vectors, while searches and
    catch-ups go on), from rows that are never rewritten, only zeroed by a forget; it is named
    under the lock, after the rows forgotten meanwhile are zeroed in it too. If another
    generation replaced this one meanwhile, the graph is dropped."""
    import numpy as np

    from lantern.indexes import graph

    manifest = snapshot.manifest
    if not graph.available() or snapshot.live < graph.BUILD_FROM or not manifest.dim:
        return snapshot
    generation = snapshot.generation
    staged, built = graph.build(generation, snapshot.matrix, snapshot.dead)
    name = name_of(manifest.model)
    try:
        breadth = graph.breadth_for(built, snapshot.matrix, snapshot.dead)
        if breadth is None:
            return snapshot  # it would miss too many of the nearest: searches stay exact
        with place.locked(directory, name) as held:
            if not held or place.current(directory, name) != generation:
                return snapshot
            now = Manifest.read(generation)
            later = _map(generation, now, snapshot.token)
            for row in np.setdiff1d(later.dead, snapshot.dead):
                held_vector = built.get(int(row))
                if (
                    row < manifest.rows
                    and held_vector is not None
                    and not later.matrix[int(row)].any()
                ):  # forgotten while the graph was built
                    graph.zero(staged, [np.asarray(held_vector, dtype="<f4")], row[None])
            graph.publish(generation, staged, manifest.rows, breadth)
            return _map(generation, now, snapshot.token)
    finally:
        staged.unlink(missing_ok=True)


def models(store: Store) -> list[str]:
    """The models the store holds memory vectors of."""
    with store.read() as conn:
        found = conn.execute(select(table.c.model).distinct().order_by(table.c.model))
        return [str(model) for model in found.scalars()]


def commonest_dim(dims: Iterable[int]) -> int:
    """The dimension most of a sample has (the smaller on a tie); 0 for none."""
    from collections import Counter

    counted = Counter(int(dim) for dim in dims)
    return max(counted, key=lambda d: (counted[d], -d)) if counted else 0


def _build(store: Store, directory: Path, model: str) -> Snapshot:
    """Fill a new generation from the store in one read snapshot, then publish it (the caller
    holds the lock)."""
    import numpy as np

    from lantern.embeddings.vectors import normalise_rows

    name = name_of(model)
    generation = place.new_generation(directory, name)
    ids: list[bytes] = []
    unusable: list[str] = []
    with store.read() as conn:
        mark = Mark.now(conn, feed.MEMORY_VECTOR)
        records_mark = Mark.now(conn, feed.MEMORY)
        token = settings.token(conn, settings.MEMORY_VECTORS)
        dim = commonest_dim(conn.execute(_DIMS, {"model": model}).scalars())
        with open(generation / _VECTORS, "wb") as vectors:
            for rows in _batches(conn, model):
                block, kept, left_out = _usable(rows, dim)
                unusable.extend(left_out)
                if kept:
                    normalise_rows(block).astype("<f4", copy=False).tofile(vectors)
                    ids.extend(kept)
            vectors.flush()
            os.fsync(vectors.fileno())
    width = max((len(item) for item in ids), default=1) or 1
    with open(generation / _IDS, "wb") as handle:
        np.array(ids, dtype=f"S{width}").tofile(handle)
        handle.flush()
        os.fsync(handle.fileno())
    (generation / _DEAD).touch()
    manifest = Manifest(model, dim, width, len(ids), 0, tuple(sorted(unusable)), mark, records_mark)
    place.pause_for_a_test(_KILL_HOOK)
    manifest.write(generation)
    place.publish(directory, name, generation)
    return _map(generation, manifest, token)


def _batches(conn: Connection, model: str) -> Iterator[list[Any]]:
    """The model's vector rows, `_FETCH` at a time, without holding them all."""
    from lantern.store.prepared import Prepared, driver_of

    if conn.dialect.name != "sqlite":  # a server-side cursor (PostgreSQL's driver binds by name)
        result = conn.execution_options(stream_results=True).execute(_ROWS, {"model": model})
        while part := result.fetchmany(_FETCH):
            yield list(part)
        return
    sql, values = Prepared(_ROWS).explainable(conn.dialect, {"model": model})
    cursor = driver_of(conn).execute(sql, values)
    while rows := cursor.fetchmany(_FETCH):
        yield rows


def _usable(rows: Sequence[Any], dim: int) -> tuple[NDArray[np.float32], list[bytes], list[str]]:
    """The rows' usable vectors as a matrix, their ids (encoded), and the ids left out: a
    dimension other than `dim`, a length that disagrees with it, a value that is not finite,
    or an id the ids file cannot hold (empty, or with a zero byte)."""
    import numpy as np

    kept: list[bytes] = []
    blobs: list[bytes] = []
    left_out: list[str] = []
    for item_id, item_dim, blob in rows:
        encoded = str(item_id).encode("utf-8", "surrogatepass")
        data = bytes(blob)
        if dim <= 0 or item_dim != dim or len(data) != 4 * dim or not encoded or b"\0" in encoded:
            left_out.append(str(item_id))
            continue
        kept.append(encoded)
        blobs.append(data)
    if not kept:
        return np.zeros((0, max(dim, 0)), dtype=np.float32), [], left_out
    block = np.frombuffer(b"".join(blobs), dtype="<f4").reshape(len(kept), dim)
    finite = np.isfinite(block).all(axis=1)
    if not finite.all():
        left_out.extend(kept[i].decode("utf-8", "surrogatepass") for i in np.flatnonzero(~finite))
        kept = [kept[i] for i in np.flatnonzero(finite)]
        block = block[finite]
    return block, kept, left_out


# --- catching up -------------------------------------------------------------------------------


def _catch_up(
    store: Store, directory: Path, name: str, generation: Path, manifest: Manifest
) -> Any:
    """Apply what the feed says changed since the manifest's marks (the caller holds the
    lock): a `Snapshot` of the result, or `STALE` when the generation must be built again.

    The changed records' vectors are read and appended a batch at a time (a catch-up after
    `lantern embed` of a million records holds one batch, not a million vectors), in the read
    snapshot the marks were taken in."""
    with store.read() as conn:
        now = Mark.now(conn, feed.MEMORY_VECTOR)
        records_now = Mark.now(conn, feed.MEMORY)
        token = settings.token(conn, settings.MEMORY_VECTORS)
        if feed.current(conn, feed.MEMORY_VECTOR, manifest.mark, now) and feed.current(
            conn, feed.MEMORY, manifest.records, records_now
        ):
            return _map(generation, manifest, token)
        if not (
            feed.belongs(conn, manifest.mark, now)
            and feed.belongs(conn, manifest.records, records_now)
        ):
            return STALE
        model = manifest.model
        changed = sorted(feed.changed(conn, feed.MEMORY_VECTOR, manifest.mark, now, model))
        if changed and manifest.dim == 0:
            return STALE  # built without a usable vector: the dimension is not known yet
        width = max([manifest.width, *(len(_encoded(item)) for item in changed)])
        if width > manifest.width:  # an id longer than any before: widen the ids first
            generation, manifest = _compact(directory, name, generation, manifest, width)
        _truncate(generation, manifest)
        appended = 0
        left_out: list[str] = []
        without_vector: list[str] = []
        with (
            open(generation / _VECTORS, "ab") as vectors,
            open(generation / _IDS, "ab") as id_file,
        ):
            for start in range(0, len(changed), _FETCH):
                batch = changed[start : start + _FETCH]
                current = _vectors_of(conn, model, batch)
                without_vector.extend(item for item in batch if item not in current)
                rows = [(item, *current[item]) for item in batch if item in current]
                block, kept, out = _usable(rows, manifest.dim)
                left_out.extend(out)
                _write_rows(vectors, id_file, block, kept, width)
                appended += len(kept)
            _sync(vectors, id_file)
        gone = _forgotten(conn, without_vector)
        gone |= _forgotten_since(conn, manifest.records, records_now)
    dead_before = _dead_rows(generation, manifest)
    finder = _RowFinder(generation, manifest)
    newly_dead = finder.live_rows(dead_before, [*changed, *gone])
    wiped = finder.rows(sorted(gone))
    if len(wiped):
        from lantern.indexes import graph

        graph.forget(generation, _map(generation, manifest, token).matrix, wiped)
        _wipe(generation, manifest, wiped)
    if len(newly_dead):
        with open(generation / _DEAD, "ab") as dead:
            dead.write(newly_dead.astype("<i8").tobytes())
            _sync(dead)
    unusable = (set(manifest.unusable) - set(changed) - gone) | set(left_out)
    grown = replace(
        manifest,
        rows=manifest.rows + appended,
        dead=manifest.dead + len(newly_dead),
        unusable=tuple(sorted(unusable)),
        mark=now,
        records=records_now,
    )
    if left_out and len(unusable) > grown.rows - grown.dead:
        return STALE  # most vectors now have another dimension: choose it again
    if grown.dead > COMPACT_ABOVE * grown.rows:
        generation, grown = _compact(directory, name, generation, grown, width)
        return _map(generation, grown, token)
    place.pause_for_a_test(_KILL_HOOK)
    grown.write(generation)
    return _map(generation, grown, token)


def _encoded(item: str) -> bytes:
    return item.encode("utf-8", "surrogatepass")


def _write_rows(
    vectors: BinaryIO, id_file: BinaryIO, block: NDArray[np.float32], kept: list[bytes], width: int
) -> None:
    """Append rows: their vectors scaled to unit length, and their ids in `width` bytes."""
    import numpy as np

    from lantern.embeddings.vectors import normalise_rows

    if kept:
        normalise_rows(block).astype("<f4", copy=False).tofile(vectors)
        np.array(kept, dtype=f"S{width}").tofile(id_file)


def _sync(*handles: BinaryIO) -> None:
    for handle in handles:
        handle.flush()
        os.fsync(handle.fileno())


def _vectors_of(conn: Connection, model: str, ids: list[str]) -> dict[str, tuple[int, bytes]]:
    statement = _ROWS.where(table.c.memory_id.in_(bindparam("ids", expanding=True)))
    found: dict[str, tuple[int, bytes]] = {}
    for start in range(0, len(ids), _BATCH):
        part = ids[start : start + _BATCH]
        for item_id, dim, blob in conn.execute(statement, {"model": model, "ids": part}):
            found[str(item_id)] = (int(dim), bytes(blob))
    return found


def _forgotten(conn: Connection, ids: list[str]) -> set[str]:
    """Those of `ids` that are no longer records of the store."""
    statement = select(records.c.id).where(records.c.id.in_(bindparam("ids", expanding=True)))
    present: set[str] = set()
    for start in range(0, len(ids), _BATCH):
        present.update(conn.execute(statement, {"ids": ids[start : start + _BATCH]}).scalars())
    return set(ids) - present


def _forgotten_since(conn: Connection, mark: Mark, now: Mark) -> set[str]:
    """Records the records side of the feed names since `mark` that are no longer in the
    store: a record forgotten when it had no vector of the model any more, whose older rows
    the vector side never names again."""
    if conn.dialect.name == "postgresql":  # rows past the horizon count too (`feed`)
        return _forgotten(conn, feed.changed(conn, feed.MEMORY, mark, now))
    after, upto = mark.seq, now.seq
    if upto <= after:
        return set()
    statement = (
        select(index_feed.c.item_id)
        .distinct()
        .where(
            index_feed.c.side == feed.MEMORY,
            index_feed.c.seq > after,
            index_feed.c.seq <= upto,
            ~exists().where(records.c.id == index_feed.c.item_id),
        )
    )
    return {str(item) for item in conn.execute(statement).scalars()}


class _RowFinder:
    """The rows of given ids in a generation, found by a 64-bit key of each id (its bytes,
    eight at a time, mixed), compared as integers, then confirmed byte for byte: a look-up of
    a few ids among a million costs a pass over the keys, not a sort of the ids."""

    def __init__(self, generation: Path, manifest: Manifest) -> None:
        import numpy as np

        self._width = manifest.width
        if manifest.rows:
            self._ids: NDArray[Any] = np.memmap(
                generation / _IDS, dtype=f"S{manifest.width}", mode="r", shape=(manifest.rows,)
            )
        else:
            self._ids = np.zeros(0, dtype=f"S{manifest.width}")
        self._keys: NDArray[np.uint64] | None = None

    def rows(self, items: Sequence[str]) -> NDArray[np.int64]:
        """Every row, live or dead, that holds a vector of one of `items`."""
        import numpy as np

        encoded = [item for item in map(_encoded, items) if len(item) <= self._width]
        if not encoded or not len(self._ids):  # a longer id is in no row (it would be cut)
            return np.zeros(0, dtype=np.int64)
        if self._keys is None:
            self._keys = _keys(self._ids)
        wanted = np.array(encoded, dtype=f"S{self._width}")
        candidates = np.flatnonzero(np.isin(self._keys, _keys(wanted)))
        confirmed = candidates[np.isin(self._ids[candidates], wanted)]
        return confirmed.astype(np.int64)

    def live_rows(self, dead: NDArray[np.int64], items: Sequence[str]) -> NDArray[np.int64]:
        """The live rows of `items` (they die: a newer vector, or none, replaces them)."""
        import numpy as np

        rows = self.rows(items)
        return rows[~np.isin(rows, dead)]


def _keys(ids: NDArray[Any]) -> NDArray[np.uint64]:
    """A 64-bit key of each fixed-width id (equal ids, equal keys)."""
    import numpy as np

    width = ids.dtype.itemsize
    raw = np.ascontiguousarray(ids).view(np.uint8).reshape(len(ids), width)
    padded = -(-width // 8) * 8
    if padded != width:
        grown = np.zeros((len(ids), padded), dtype=np.uint8)
        grown[:, :width] = raw
        raw = grown
    words = raw.view("<u8")
    key = np.zeros(len(ids), dtype=np.uint64)
    prime = np.uint64(1099511628211)
    for column in range(words.shape[1]):
        key = (key * prime) ^ words[:, column]
    return key


def _wipe(generation: Path, manifest: Manifest, rows: NDArray[np.int64]) -> None:
    """Overwrite these rows' vectors with zeros, in place, and make it durable."""
    size = 4 * manifest.dim
    zeros = bytes(size)
    fd = os.open(generation / _VECTORS, os.O_WRONLY)
    try:
        for row in rows:
            os.pwrite(fd, zeros, int(row) * size)
        os.fsync(fd)
    finally:
        os.close(fd)


def _truncate(generation: Path, manifest: Manifest) -> None:
    """Cut each data file back to what the manifest says is valid (what a killed catch-up
    appended after it is dropped; nothing the manifest names is touched)."""
    for file, valid in manifest.sizes().items():
        path = generation / file
        if path.stat().st_size != valid:
            os.truncate(path, valid)


def _compact(
    directory: Path, name: str, generation: Path, manifest: Manifest, width: int
) -> tuple[Path, Manifest]:
    """A new generation of the live rows, ids in `width` bytes, published as the current one:
    the dead rows, and what they held, leave the disk with the old generation."""
    import numpy as np

    new = place.new_generation(directory, name)
    alive = np.ones(manifest.rows, dtype=np.bool_)
    alive[_dead_rows(generation, manifest)] = False
    dim = manifest.dim
    copied = 0
    with open(new / _VECTORS, "wb") as vectors, open(new / _IDS, "wb") as id_file:
        if manifest.rows and dim:
            matrix = np.memmap(
                generation / _VECTORS, dtype="<f4", mode="r", shape=(manifest.rows, dim)
            )
            ids = np.memmap(
                generation / _IDS, dtype=f"S{manifest.width}", mode="r", shape=(manifest.rows,)
            )
            for start in range(0, manifest.rows, _COPY):
                keep = alive[start : start + _COPY]
                np.ascontiguousarray(matrix[start : start + _COPY][keep]).tofile(vectors)
                ids[start : start + _COPY][keep].astype(f"S{width}").tofile(id_file)
                copied += int(keep.sum())
        _sync(vectors, id_file)
    (new / _DEAD).touch()
    compacted = replace(manifest, width=width, rows=copied, dead=0)
    place.pause_for_a_test(_KILL_HOOK)
    compacted.write(new)
    place.publish(directory, name, new)
    return new, compacted


# --- after a forget ----------------------------------------------------------------------------


def after_forget(store: Store) -> None:
    """Catch every vector index of the store up, so that a forgotten record's vectors leave the
    index files now rather than at the next catch-up. An index that cannot be caught up
    (another store's, cut short) is built again when it is small and removed otherwise, since
    it might hold them. If this is killed, the next catch-up zeroes them."""
    directory = directory_of(store)
    if directory is None or not directory.is_dir():
        return
    for name in _names(directory):
        try:
            _scrub(store, directory, name)
        except OSError:
            with suppress(OSError):
                place.remove(directory, name)


def _scrub(store: Store, directory: Path, name: str) -> None:
    for _attempt in range(3):
        generation = place.current(directory, name)
        if generation is None:
            return
        try:
            model = Manifest.read(generation).model
            result = _catch_up_locked(store, directory, name, generation)
        except (Broken, FileNotFoundError):
            if place.current(directory, name) != generation:
                continue  # replaced meanwhile
            place.remove(directory, name)
            return
        if result is _AGAIN:
            continue
        if result is STALE:
            if _small(store, model):
                _built_unless_current(store, directory, model)
            else:
                place.remove(directory, name)
        return


def _names(directory: Path) -> list[str]:
    """The names of the vector indexes that have a pointer in `directory`."""
    return sorted(
        pointer.name.removesuffix(".current") for pointer in directory.glob(f"{PREFIX}*.current")
    )


# --- status, check, removal --------------------------------------------------------------------


def status(store: Store) -> list[dict[str, Any]]:
    """Each model that has memory vectors in the store or an index beside it, for `db status`:
    `model`, `rows` (live rows in the index), `dead` (rows replaced or removed, until the next
    compaction), `bytes` on disk, `current` (built from this store and nothing to catch up),
    `built` (an index exists). For a PostgreSQL store, those a server process on this host
    keeps for it (`place.serve`)."""
    directory = directory_of(store, looking=True)
    found: dict[str, dict[str, Any]] = {}
    with store.read() as conn:
        now = None if directory is None else Mark.now(conn, feed.MEMORY_VECTOR)
        for model in conn.execute(select(table.c.model).distinct()).scalars():
            found[str(model)] = {
                "model": str(model),
                "rows": 0,
                "dead": 0,
                "bytes": 0,
                "current": False,
                "built": False,
                "graph_rows": 0,
            }
    if directory is not None and now is not None and directory.is_dir():
        for name in _names(directory):
            generation = place.current(directory, name)
            if generation is None:
                continue
            try:
                manifest = Manifest.read(generation)
            except (Broken, OSError):
                continue
            with store.read() as conn:
                current = feed.current(conn, feed.MEMORY_VECTOR, manifest.mark, now)
            found[manifest.model] = _status_of(generation, manifest, current)
    return [found[model] for model in sorted(found)]


def _status_of(generation: Path, manifest: Manifest, current: bool) -> dict[str, Any]:
    return {
        "model": manifest.model,
        "rows": manifest.rows - manifest.dead,
        "dead": manifest.dead,
        "bytes": place.size(generation),
        "current": current,
        "built": True,
        "graph_rows": _graph_rows(generation),
    }


def _graph_rows(generation: Path) -> int:
    """The rows the generation's nearest-neighbour graph covers (0: none, searched exactly)."""
    from lantern.indexes import graph

    found = graph.files(generation)
    return found[0][0] if found else 0


def check(store: Store) -> list[str]:
    """What is wrong with the store's vector indexes, one sentence each (empty: nothing).

    Each index is caught up first (as a search would), then compared with the table in one
    read snapshot: the same records (each usable vector once, the others listed as unusable),
    and a sample of vectors equal to the table's scaled to unit length, within float
    tolerance. An index of another store, one cut short or one whose manifest does not read,
    is named with the command that builds it again. For a PostgreSQL store, those a server
    process on this host keeps for it (`place.serve`)."""
    directory = directory_of(store, looking=True)
    if directory is None or not directory.is_dir():
        return []
    problems: list[str] = []
    rebuild = "; lantern db rebuild-index builds it again"
    for name in _names(directory):
        label = f"vector index {name}"
        try:
            generation = place.current(directory, name)
            if generation is None:
                raise Broken("its pointer names no generation")
            model = Manifest.read(generation).model
            label = f"vector index of {model}"
            if name != name_of(model):
                raise Broken("it is kept under another model's name")
            result = _caught_up(store, directory, name, model)
            if result is None:
                problems.append(f"{label}: another process held it past the busy timeout")
            elif not isinstance(result, Snapshot):
                problems.append(f"{label}: it does not belong to this store{rebuild}")
            else:
                problems.extend(f"{label}: {found}{rebuild}" for found in _compare(store, result))
        except Broken as exc:
            problems.append(f"{label}: {exc}{rebuild}")
        except FileNotFoundError as exc:
            missing = Path(exc.filename or "").name
            problems.append(f"{label}: a file is missing ({missing}){rebuild}")
        except OSError as exc:
            problems.append(f"{label}: it cannot be read ({exc.strerror or exc}){rebuild}")
    return problems


def _compare(store: Store, snapshot: Snapshot) -> list[str]:
    import numpy as np

    from lantern.embeddings.vectors import normalise_rows

    manifest = snapshot.manifest
    live_rows = snapshot.ids.live_rows()
    indexed = snapshot.ids.decoded(live_rows)
    with store.read() as conn:
        if not feed.current(
            conn, feed.MEMORY_VECTOR, manifest.mark, Mark.now(conn, feed.MEMORY_VECTOR)
        ):
            return []  # changed since it was caught up: the next search catches it up again
        of_model = conn.execute(
            select(table.c.memory_id).where(table.c.model == bindparam("model")),
            {"model": manifest.model},
        ).scalars()
        stored = {str(item) for item in of_model}
        problems = []
        held = set(indexed)
        if len(held) != len(indexed):
            problems.append("a record has more than one live row")
        unusable = set(manifest.unusable)
        if held | unusable != stored or held & unusable:
            missing = len(stored - held - unusable)
            extra = len((held | unusable) - stored)
            problems.append(
                f"its records differ from the table's ({missing} missing, {extra} not in it)"
            )
            return problems
        step = max(1, len(live_rows) // _CHECK_SAMPLE)
        sample = [int(row) for row in live_rows[::step][:_CHECK_SAMPLE]]
        ids = [indexed[position] for position in range(0, len(live_rows), step)][: len(sample)]
        current = _vectors_of(conn, manifest.model, ids)
    for row, item in zip(sample, ids, strict=True):
        dim, blob = current[item]
        if dim != manifest.dim or len(blob) != 4 * dim:
            problems.append(f"the vector of {item} is not the table's")
            break
        expected = normalise_rows(np.frombuffer(blob, dtype="<f4"))[0]
        if not np.allclose(snapshot.matrix[row], expected, rtol=0, atol=_TOLERANCE):
            problems.append(f"the vector of {item} differs from the table's")
            break
    if snapshot.graph is not None:
        from lantern.indexes import graph

        # Live rows must hold the matrix's vectors in the graph, and zeroed (forgotten) rows
        # zeros: a forgotten record's vector must not stay in the graph's file.
        rows = [*sample, *(int(row) for row in snapshot.dead[:_CHECK_SAMPLE])]
        problems.extend(graph.check(snapshot.graph, snapshot.matrix, iter(rows)))
    return problems


def remove(directory: Path) -> None:
    """Remove every vector index in a store's index directory (generations, pointers, locks)."""
    import shutil

    if not directory.is_dir():
        return
    for name in _names(directory):
        place.remove(directory, name)
    for leftover in directory.glob(f"{PREFIX}*"):
        if leftover.is_dir():
            shutil.rmtree(leftover, ignore_errors=True)
    for lock in directory.glob(f".{PREFIX}*.lock"):
        lock.unlink(missing_ok=True)
