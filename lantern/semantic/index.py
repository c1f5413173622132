"""A side's vectors of one model as one float32 matrix, kept for the life of the process.

Loading a million vectors takes seconds and searching them milliseconds, so a long-lived
process (the MCP server, a Python caller) loads them once: the matrix is cached per store,
side and model beside the side's token (`lantern.store.settings`), and a search reads that
token, one look-up by key, to know whether the matrix is still what the store holds. Every
write of vectors replaces the token in its transaction, so a reload happens after a change and
never otherwise. The matrix and the token are read in one transaction, a consistent snapshot.

Rows are scaled to unit length when loaded (older stores' vectors may not be), so a product
with a unit query is a cosine. A vector that cannot be used (a length that disagrees with its
dimension, a dimension other than most of its model's, a value that is not finite) is left out
and counted (`unusable`); `lantern db check` names them.

The nearest rows are found in rounds (`rounds`): the best `first` rows by a partial sort, then
four times as many, and so on, each round strictly below the last, so that a caller who filters
the rows (by scope, kind, status...) looks only as deep as its filters make it, and sees the
rows in order: score, higher first, then position.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Generator, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from sqlalchemy import Connection, bindparam, func, select

from lantern.errors import InvalidInput, LanternError
from lantern.indexes import feed, place
from lantern.indexes.feed import Mark
from lantern.indexes.vectors import IdColumn, commonest_dim
from lantern.semantic.sides import MEMORY, Side
from lantern.store import settings
from lantern.store.engine import Store

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import NDArray

    from lantern.indexes.graph import Graph

_MAX_CACHED = 8
"""Matrices kept at once (per store, side and model); the least recently used goes first."""
_FETCH = 10_000
"""Rows read from the cursor at a time while loading."""
_SAMPLE = 100
"""Vectors whose dimensions decide which dimension a model's vectors have."""
_FIRST_ROUND = 16
"""Rows in the first round of `nearest`, at the least (twice what the caller needs, when more):
each candidate is read from the store, so a deep first round costs what a filter may save."""

Found = TypeVar("Found")


@dataclass(frozen=True, slots=True)
class Loaded:
    """A side's usable vectors of one model, as of `token` (and, from the index, `mark`)."""

    model: str
    token: str | None
    ids: Sequence[str]
    """What each row belongs to: a memory record's id, or a chunk's; "" for a dead row."""
    matrix: NDArray[np.float32]
    """(len(ids), dim), rows of unit length (or zeros)."""
    dim: int
    unusable: int
    positions: dict[str, int] = field(default_factory=dict, compare=False)
    """Row of each id, filled on first use (`row_of`)."""
    dead: NDArray[np.int64] | None = None
    """Rows of the memory-mapped index that hold no record's vector any more (never ranked)."""
    mark: Mark | None = None
    """The index's feed mark these rows are current at; None when read from the store."""
    graph: Graph | None = None
    """A nearest-neighbour graph over the first rows (`lantern.indexes.graph`): a search
    asks it for candidates instead of scoring every row."""

    def __len__(self) -> int:
        """The usable vectors (dead rows left out)."""
        return len(self.ids) - (0 if self.dead is None else len(self.dead))

    def row_of(self, item_id: str) -> int | None:
        """The row holding this id's vector, or None."""
        if isinstance(self.ids, IdColumn):
            return self.ids.row_of(item_id)
        if not self.positions and self.ids:
            with _lock:
                if not self.positions:
                    self.positions.update((item, row) for row, item in enumerate(self.ids))
        return self.positions.get(item_id)


_cache: OrderedDict[tuple[str, str, str], Loaded] = OrderedDict()
_lock = threading.RLock()


def any_vectors(store: Store, side: Side) -> bool:
    """Whether the store holds any vector at all on this side, of any model: one look-up, so
    that a store without vectors does not even look for a provider (the registry of installed
    packages takes a tenth of a second to read)."""
    with store.read() as conn:
        return conn.execute(select(side.key).limit(1)).first() is not None


def has_vectors(store: Store, side: Side, model: str) -> bool:
    """Whether the store holds any vector of `model` on this side: one indexed look-up, and no
    numpy, so that a store without vectors pays nothing for semantic search."""
    cached = _cache.get(_key(store, side, model))
    with store.read() as conn:
        current = None if cached is None else settings.token(conn, side.token)
        if cached is not None and current is not None and current == cached.token:
            return len(cached) > 0
        statement = select(side.key).where(side.table.c.model == bindparam("model")).limit(1)
        return conn.execute(statement, {"model": model}).first() is not None


def load(store: Store, side: Side, model: str) -> Loaded:
    """The usable vectors of `model` on this side: memory records' from the store's vector
    index where it has one (`lantern.indexes.vectors`), kept while the feed mark holds; else
    read from the store, kept while the token holds."""
    key = _key(store, side, model)
    with _lock:
        cached = _cache.get(key)
        if side.name == MEMORY.name and (indexed := _indexed(store, model, cached)) is not None:
            if indexed is not cached:
                _keep(key, indexed)
            _cache.move_to_end(key)
            return indexed
        with store.read() as conn:
            current = settings.token(conn, side.token)
            if cached is not None and current is not None and cached.token == current:
                _cache.move_to_end(key)
                return cached
            _cache.pop(key, None)  # let the old matrix go before the new one is built
            loaded = _read(conn, side, model, current)
        _keep(key, loaded)
        return loaded


def _keep(key: tuple[str, str, str], loaded: Loaded) -> None:
    _cache[key] = loaded
    while len(_cache) > _MAX_CACHED:
        _cache.popitem(last=False)


def _indexed(store: Store, model: str, cached: Loaded | None) -> Loaded | None:
    """Memory records' vectors of `model` from the store's index, caught up to now; the cached
    ones while the feed says nothing changed since their mark. None: read them from the store
    (no index here, or none yet on a store too large to build one during a search)."""
    from lantern.indexes import vectors

    directory = vectors.directory_of(store)
    if directory is None:
        return None
    if cached is not None and cached.mark is not None:
        with store.read() as conn:
            unchanged = feed.current(
                conn, feed.MEMORY_VECTOR, cached.mark, Mark.now(conn, feed.MEMORY_VECTOR)
            )
        if unchanged and _same_graph(directory, model, cached):
            return cached
    elif cached is not None and place.current(directory, vectors.name_of(model)) is None:
        with store.read() as conn:  # read from the store, and no index since: as before
            current = settings.token(conn, MEMORY.token)
        if current is not None and current == cached.token:
            return None
    snapshot = vectors.ready(store, model)
    if snapshot is None:
        return None
    manifest = snapshot.manifest
    if (
        cached is not None
        and cached.mark == manifest.mark
        and cached.dim == manifest.dim
        and cached.graph is snapshot.graph
    ):
        return cached  # another process caught the index up to what this one holds
    return Loaded(
        model,
        snapshot.token,
        snapshot.ids,
        snapshot.matrix,
        manifest.dim,
        len(manifest.unusable),
        dead=snapshot.dead,
        mark=manifest.mark,
        graph=snapshot.graph,
    )


def _same_graph(directory: Path, model: str, cached: Loaded) -> bool:
    """Whether the graph the cached rows search with is still the newest one (a rebuild in
    another process may have given the index a graph since, without a change to the feed)."""
    from lantern.indexes import graph, vectors

    if graph.exact_only() or not graph.available():
        return cached.graph is None
    generation = place.current(directory, vectors.name_of(model))
    if generation is None:
        return cached.graph is None
    found = graph.files(generation)
    newest = found[0][1] if found else None
    return (cached.graph.path if cached.graph is not None else None) == newest


def after_forget(store: Store) -> None:
    """Catch the store's vector indexes up after a forget, so that the forgotten record's
    vectors leave their files now (`lantern.indexes.vectors.after_forget`)."""
    from lantern.indexes import vectors

    if vectors.directory_of(store) is None:
        return
    try:
        vectors.after_forget(store)
    except (LanternError, OSError):
        return  # the forget is committed; the next catch-up of the index zeroes them


def forget_cached() -> None:
    """Drop every cached matrix (a test, or a caller that wants the memory back)."""
    with _lock:
        _cache.clear()


def _key(store: Store, side: Side, model: str) -> tuple[str, str, str]:
    return (store.location.url, side.name, model)


def _read(conn: Connection, side: Side, model: str, token: str | None) -> Loaded:
    import numpy as np

    from lantern.embeddings.vectors import normalise_rows

    table = side.table
    of_model = table.c.model == bindparam("model")
    # Counted on the index alone; the dimension is the commonest of a sample (reading every
    # row's dimension would read every vector twice).
    total = int(
        conn.execute(
            select(func.count()).select_from(table).where(of_model), {"model": model}
        ).scalar_one()
    )
    sample = conn.execute(
        select(table.c.dim).where(of_model).limit(_SAMPLE), {"model": model}
    ).scalars()
    dim = commonest_dim(sample)
    if dim <= 0:
        return Loaded(model, token, [], np.zeros((0, 0), dtype=np.float32), 0, total)
    usable = select(side.key, table.c.vector).where(
        table.c.model == bindparam("model"),
        table.c.dim == bindparam("dim"),
        func.length(table.c.vector) == bindparam("length"),
    )
    params = {"model": model, "dim": dim, "length": 4 * dim}
    expected = total
    matrix = np.empty((expected, dim), dtype=np.float32)
    ids: list[str] = []
    for rows in _batches(conn, usable, params):
        start = len(ids)
        if start + len(rows) > expected:  # cannot happen in one snapshot; kept safe anyway
            matrix = np.concatenate([matrix, np.empty((len(rows), dim), np.float32)])
            expected = matrix.shape[0]
        ids.extend(row[0] for row in rows)
        block = np.frombuffer(b"".join(bytes(row[1]) for row in rows), dtype="<f4")
        matrix[start : len(ids)] = block.reshape(len(rows), dim)
    matrix = matrix[: len(ids)]
    finite = np.isfinite(matrix).all(axis=1)
    unusable = total - len(ids)
    if not finite.all():
        unusable += int((~finite).sum())
        keep = np.flatnonzero(finite)
        matrix = matrix[keep]
        ids = [ids[i] for i in keep]
    for start in range(0, len(ids), _FETCH):  # in place, a block at a time
        matrix[start : start + _FETCH] = normalise_rows(matrix[start : start + _FETCH])
    return Loaded(model, token, ids, matrix, dim, unusable)


def _batches(conn: Connection, statement: Any, params: dict[str, Any]) -> Iterator[list[Any]]:
    """The statement's rows, `_FETCH` at a time, without holding them all."""
    if conn.dialect.name == "sqlite":
        from lantern.store.prepared import Prepared, driver_of

        sql, values = Prepared(statement).explainable(conn.dialect, params)
        cursor = driver_of(conn).execute(sql, values)
        while rows := cursor.fetchmany(_FETCH):
            yield rows
        return
    result = conn.execution_options(stream_results=True, yield_per=_FETCH).execute(
        statement, params
    )
    for partition in result.partitions():
        yield list(partition)


def scores(loaded: Loaded, query: NDArray[np.float32]) -> NDArray[np.float32]:
    """The cosine of a unit-length query with every row; minus infinity for a dead row.

    Each row's product is summed on its own, in the same order wherever the row lies (a
    matrix-vector product in BLAS sums the rows at the edges of its blocks in another order),
    so a vector scores the same in the store's matrix and in the index, bit for bit."""
    import numpy as np

    result: NDArray[np.float32] = np.asarray(
        np.einsum("ij,j->i", loaded.matrix, query.astype(np.float32, copy=False))
    )
    if loaded.dead is not None and len(loaded.dead):
        result[loaded.dead] = -np.inf
    return result


def similarities(
    loaded: Loaded, query: NDArray[np.float32], ids: Sequence[str]
) -> dict[str, float]:
    """The cosine of a unit-length query with the vectors of `ids` that have one, computed as
    `scores` computes it, so that an item has the same similarity here as in `nearest`."""
    import numpy as np

    if isinstance(loaded.ids, IdColumn):
        rows = loaded.ids.rows_of(ids)
    else:
        rows = {item: row for item in ids if (row := loaded.row_of(item)) is not None}
    if not rows or query.shape[0] != loaded.dim:
        return {}
    picked = loaded.matrix[np.fromiter(rows.values(), dtype=np.int64, count=len(rows))]
    values = np.einsum("ij,j->i", picked, query.astype(np.float32, copy=False))
    return {item: float(value) for item, value in zip(rows, values, strict=True)}


def nearest(
    loaded: Loaded,
    query: NDArray[np.float32],
    needed: int,
    fetch: Callable[[list[str]], Mapping[str, Found]],
    order: Callable[[tuple[Found, float]], Any],
    skip: str = "",
) -> Iterator[tuple[Found, float]]:
    """What `fetch` finds of the rows nearest to `query`, with each one's cosine, in `order`
    within each round. `fetch` reads a round's ids and returns those that pass the caller's
    filters, so the rounds go only as deep as the filters make them; `skip` is an id left out
    (a record is not its own neighbour)."""
    if query.shape[0] != loaded.dim:
        raise InvalidInput(
            f"the stored vectors of {loaded.model} have {loaded.dim} dimensions and the "
            f"provider gives {query.shape[0]}; compute them again with lantern embed"
        )
    for rows, values in _ranked_rows(loaded, query, max(_FIRST_ROUND, 2 * needed)):
        ids = [loaded.ids[row] for row in rows]
        found = fetch(ids)
        batch = [
            (found[item], float(value))
            for item, value in zip(ids, values, strict=True)
            if item in found and item != skip
        ]
        batch.sort(key=order)
        yield from batch


def _ranked_rows(
    loaded: Loaded, query: NDArray[np.float32], first: int
) -> Iterator[tuple[NDArray[Any], NDArray[np.float32]]]:
    """Live rows, nearest first, in rounds of about `first` and then four times as many,
    with their cosines: from the graph where the rows have one, then exactly."""
    import numpy as np

    values: NDArray[np.float32] | None = None
    if loaded.graph is not None and len(loaded.ids) >= _GRAPH_FROM:
        values, first = yield from _graph_rounds(loaded, loaded.graph, query, first)
    if values is None:
        values = scores(loaded, query)
    for ranked in rounds(values, first):
        rows = ranked[np.isfinite(values[ranked])]
        if len(rows):
            yield rows, values[rows]


_GRAPH_FROM = 1_000
"""Rows below which a search scores every row even where a graph exists (it is faster)."""
_GRAPH_SHARE = 16
"""A round deeper than this share of the rows goes on exactly: a search whose filters
reject most of what the graph proposes scores every row once rather than walk it all."""


def _graph_rounds(
    loaded: Loaded, graph: Graph, query: NDArray[np.float32], first: int
) -> Generator[
    tuple[NDArray[Any], NDArray[np.float32]], None, tuple[NDArray[np.float32] | None, int]
]:
    """Rounds of the rows the graph proposes and of the rows it does not cover (appended
    since it was built, scored exactly), each scored again against the matrix, dead rows left
    out, none twice. Returns what the exact rounds that follow need: every row's cosine with
    the rows already given set to minus infinity (None: nothing given yet), and their size."""
    import numpy as np

    q = query.astype(np.float32, copy=False)
    n = len(loaded.ids)
    covered = min(graph.rows, n)
    dead = loaded.dead if loaded.dead is not None else np.zeros(0, dtype=np.int64)
    given = np.zeros(n, dtype=np.bool_)
    dead_mask = np.zeros(n, dtype=np.bool_)
    dead_mask[dead] = True
    tail: NDArray[np.float32] | None = None
    if covered < n:
        tail = np.asarray(np.einsum("ij,j->i", loaded.matrix[covered:], q))
        tail[dead_mask[covered:]] = -np.inf
    size = first
    while size * _GRAPH_SHARE <= n:
        proposed = graph.search(q, size)
        proposed = proposed[(proposed >= 0) & (proposed < covered)]
        keys = proposed[~dead_mask[proposed]] if len(dead) else proposed
        if tail is not None:
            best = min(size, len(tail))
            top = np.argpartition(-tail, best - 1)[:best]
            top = top[np.isfinite(tail[top])]
            keys = np.unique(np.concatenate([keys, top.astype(np.int64) + covered]))
        # The best `size` of what the graph and the tail propose, in order; those given in an
        # earlier round are left out, those below are left for a later one.
        values = np.asarray(np.einsum("ij,j->i", loaded.matrix[keys], q))
        order = np.lexsort((keys, -values))[:size]
        keys, values = keys[order], values[order]
        new = ~given[keys]
        if new.any():
            given[keys[new]] = True
            yield keys[new], values[new]
        if len(proposed) < size:
            break  # the graph holds fewer: the rest, exactly
        size *= 4
    if not given.any():
        return None, size
    rest = scores(loaded, query)
    rest[given] = -np.inf
    return rest, max(1, size - int(given.sum()))


def rounds(values: NDArray[np.float32], first: int) -> Iterator[NDArray[Any]]:
    """Row positions, best score first (ties: lower position first), in rounds of about
    `first`, then four times as many each time, each round scoring strictly below the last."""
    import numpy as np

    n = int(values.shape[0])
    size = max(1, first)
    upper: Any = None
    while n:
        if size >= n:
            rest = np.arange(n) if upper is None else np.flatnonzero(values < upper)
            yield _ordered(rest, values)
            return
        kth = np.partition(values, n - size)[n - size]
        mask = values >= kth if upper is None else (values >= kth) & (values < upper)
        yield _ordered(np.flatnonzero(mask), values)
        upper = kth
        size *= 4


def _ordered(rows: NDArray[Any], values: NDArray[np.float32]) -> NDArray[Any]:
    import numpy as np

    order: NDArray[Any] = rows[np.lexsort((rows, -values[rows]))]
    return order
