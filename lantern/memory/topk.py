"""Memory search by words through the derived top-k index (`lantern.indexes.words`).

The index ranks; the database decides. The index is asked for its best matches within the
search's statuses and scope patterns, in rounds (`WordIndex.ranked`), and each round's records
are read back by id with every filter and the scope policy applied by the database, as a
semantic search reads its nearest records. So a record outside the filters is never returned
however the index was built, a narrow filter only makes the search look deeper, and ties of
score are broken by the list order, as in every memory search.

Used for the relevance order of `keyword` and `any` and for the `any` side of `hybrid`; the
policy order needs every match and stays in the database. When the store has no index (see
`lantern.indexes`), or it cannot be caught up right now (another process holds its writer
past the busy timeout), `None` sends the search to the database, which answers the same
question more slowly.
"""

from __future__ import annotations

import contextlib
import threading
import weakref
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from sqlalchemy import Select, select

from lantern.errors import LanternError, StoreBusy
from lantern.indexes import place
from lantern.memory.core import MemoryCore
from lantern.memory.cursor import ListKey, list_key
from lantern.memory.filters import Conditions, MemoryFilter, Part
from lantern.memory.records import MemoryRecord
from lantern.memory.rows import row_to_record
from lantern.retrieval.query import ParsedQuery
from lantern.store.dialect import from_id_list, id_list_value
from lantern.store.models import memory_records as table

if TYPE_CHECKING:
    from pathlib import Path

    import tantivy

    from lantern.indexes.words import Fence, WordIndex
    from lantern.memory.fenced import FencedRanking
    from lantern.store.engine import Store

_FIRST_ROUND = 16
_WHOLE_ROWS = 256
"""Rounds larger than this (many equal scores) are ordered by their list keys first."""
_open: dict[tuple[str, str], WordIndex] = {}
_workers: dict[tuple[int, str], _CatchUp] = {}
_declined: set[str] = set()
"""Stores too large to index on a search, by directory: not counted again by this process."""
_lock = threading.RLock()
_builds: weakref.WeakSet[_Build] = weakref.WeakSet()
"""The builds that `keep` started, to wait for (a test)."""


def ready_index(
    core: MemoryCore, *, after_write: bool = False
) -> tuple[WordIndex, tantivy.Searcher] | None:
    """The word index for this repository's scopes caught up to now, with a searcher on it;
    None to search in the database instead.

    An unconfined repository searches the whole store's index, built here while the store is
    small (see `words.AUTO_BUILD_UP_TO`). A confined one searches the index of its scopes'
    records alone (`words.Fence`), built here whatever its size: its relevance statistics must
    not count what lies outside its scopes.

    Only a write (`after_write`), `db rebuild-index` or `db upgrade` creates the directory the
    indexes live in: a search of a store that has none runs in the database, so that reading
    a store that cannot be written (an immutable file) leaves nothing beside it."""
    store = core._store
    directory = place.directory(store.location)
    if directory is None or not (after_write or directory.is_dir()):
        return None
    from lantern.indexes import words

    if not words.available():
        return None
    fence = _fence(core)
    try:
        index = _current(core, fence)
        if index is None:
            if not fence.patterns and (
                str(directory) in _declined or words.count_records(store) > words.AUTO_BUILD_UP_TO
            ):
                _declined.add(str(directory))  # counted once a process: it only grows
                return None
            index = _remember(words.build(store, directory, fence))
        searcher = index.ready(store)
        if searcher is words.STALE:
            index = _remember(words.build(store, directory, fence))
            searcher = index.searcher()
    except (OSError, ValueError, StoreBusy):
        return None  # an index that cannot be read or written now: the database answers
    if searcher is None:
        return None
    return index, searcher


def ranking(
    core: MemoryCore, parsed: ParsedQuery, filters: MemoryFilter, conditions: Conditions
) -> Ranking | FencedRanking | None:
    """A search's ranking made outside the database's own scores: the word index's, or, for a
    confined caller on SQLite without one, BM25 counted within its scopes
    (`lantern.memory.fenced`); None, the database ranks."""
    ready = ready_index(core)
    if ready is not None:
        return Ranking(core, ready, parsed, filters, conditions)
    if core._scopes.restricted and core._store.dialect == "sqlite":
        from lantern.memory.fenced import FencedRanking

        return FencedRanking(core, parsed, conditions)
    return None


def _fence(core: MemoryCore) -> Fence:
    from lantern.indexes.words import WHOLE_STORE, Fence

    patterns = core._scopes.patterns
    if not patterns:
        return WHOLE_STORE
    return Fence(patterns, tuple(core._policy()))


class Ranking:
    """One search's ranking in the word index: its records that pass the filters and the
    policy, best score first, then in the list order."""

    def __init__(
        self,
        core: MemoryCore,
        ready: tuple[WordIndex, tantivy.Searcher],
        parsed: ParsedQuery,
        filters: MemoryFilter,
        conditions: Conditions,
    ) -> None:
        self._core = core
        self._index, self._searcher = ready
        if core._store.dialect == "postgresql":
            conditions = _matched_by_database(conditions, parsed)
        self._conditions = conditions
        statuses = None if filters.status == "all" else [filters.status]
        scopes = [filters.scopes, core._scopes.patterns]
        self._query = self._index.query(self._searcher, parsed, statuses=statuses, scopes=scopes)

    def records(self, needed: int) -> Iterator[tuple[MemoryRecord, float]]:
        """The ranking, looking about `needed` deep first and deeper as the filters need."""
        if self._query is None:
            return
        first = max(_FIRST_ROUND, needed + needed // 4)
        rounds = self._index.ranked(self._searcher, self._query, first)
        for hits in rounds:
            if len(hits) <= _WHOLE_ROWS:
                found = _records(self._core, self._conditions, [hit.record_id for hit in hits])
                batch = [(found[h.record_id], h.score) for h in hits if h.record_id in found]
                batch.sort(key=lambda pair: (-pair[1], *list_key(pair[0])))
                yield from batch
                continue
            # Many ties: order them by their list keys alone, then read whole rows only as
            # far as the caller reads.
            keys = _list_keys(self._core, self._conditions, [hit.record_id for hit in hits])
            ordered = sorted(
                (-hit.score, *keys[hit.record_id]) for hit in hits if hit.record_id in keys
            )
            for start in range(0, len(ordered), _WHOLE_ROWS):
                part = ordered[start : start + _WHOLE_ROWS]
                found = _records(self._core, self._conditions, [key[-1] for key in part])
                for key in part:
                    record = found.get(key[-1])
                    if record is not None:
                        yield record, -key[0]

    def ranked_all(self) -> Iterator[tuple[MemoryRecord, float, int]]:
        """Every match with its score and its 1-based place in the ranking."""
        for rank, (record, score) in enumerate(self.records(_FIRST_ROUND * 4), 1):
            yield record, score, rank

    def now(self, record_id: str) -> tuple[MemoryRecord, float] | None:
        """A record as it is and ranks now, if it still passes the filters and matches."""
        if self._query is None:
            return None
        score = self._index.score_of(self._searcher, self._query, record_id)
        if score is None:
            return None
        found = _records(self._core, self._conditions, [record_id])
        return (found[record_id], score) if record_id in found else None


def _matched_by_database(conditions: Conditions, parsed: ParsedQuery) -> Conditions:
    """The conditions and the database's own match of the query (`lantern.memory.fts`).

    On PostgreSQL the database decides what matches as well: its parser keeps accents and some
    forms whole (`résumé` is not `resume` there, `20.04` is one word), which the index folds or
    splits. A record the index ranks and the database would not match is left out, so that a
    server's searches match what any other process's do (inside the database)."""
    from lantern.memory import fts

    _source, match, _score = fts.matching("postgresql")
    part: Part = ({"match": fts.match_value("postgresql", parsed)}, lambda _values: match)
    values = {**conditions.values, **part[0]}
    return Conditions((*conditions.key, "match"), values, (*conditions.parts, part))


def after_write(core: MemoryCore) -> None:
    """Bring the word index of this repository's scopes up to date in the background after a
    committed write, so that the next search finds it current: a tantivy commit costs tens of
    milliseconds (it syncs every new file), which an agent's next turn usually hides. A store
    without an index gets one here while it is small (`ready_index`), so that a store filled
    before its first search is indexed from the start. A search that comes first waits for it
    (the writer lock) or catches up itself; a process that ends first finishes it (the thread
    is not a daemon), and one killed leaves the index behind, never wrong."""
    store = core._store
    directory = place.directory(store.location)
    if directory is None:
        return
    from lantern.indexes import vectors, words

    if not (words.available() or vectors.available()):
        return  # nothing could be kept there: no directory beside the store either
    with contextlib.suppress(OSError):  # the vector index needs it too, tantivy or not
        place.make(directory)
    fence = _fence(core)
    if not words.available() or (not fence.patterns and str(directory) in _declined):
        return
    key = (id(store), fence.name)
    with _lock:
        worker = _workers.get(key)
        if worker is not None and worker.request():
            return
        worker = _workers[key] = _CatchUp(core, key)
    store.before_close(worker.finish)
    worker.start()


def keep(core: MemoryCore) -> threading.Thread | None:
    """Keep the word index of a database store in this long-lived server process (see
    `lantern.indexes.place.serve`): its whole-store generation is built now, in the background
    and whatever the store's size (the server lives long enough to repay it), and from then on
    every search catches it up from the store's feed, and every write of this process in the
    background, as beside a SQLite file. Searches that come before the build is done run in
    the database. The index is the one of this repository's scopes (the whole store's for an
    unconfined one); another confined caller's is built on its first search.
    The thread that builds it, or None where nothing is built (a SQLite store keeps its
    indexes beside its file whoever opens it; tantivy not installed; `LANTERN_INDEXES=off`)."""
    store = core._store
    directory = place.serve(store.location)
    if directory is None:
        return None
    from lantern.indexes import words

    if not words.available():
        return None
    builder = _Build(core)
    _builds.add(builder)
    store.before_close(builder.finish)
    builder.start()
    return builder


class _Build(threading.Thread):
    """Builds a served store's word index (of the repository's scopes) and vector indexes, or
    catches up those a server before this one left in the cache directory."""

    def __init__(self, core: MemoryCore) -> None:
        super().__init__(name="lantern-word-index-build", daemon=False)
        self._core = weakref.ref(core)

    def run(self) -> None:
        from lantern.indexes import words

        core = self._core()
        if core is None:
            return
        store = core._store
        directory = place.directory(store.location)
        if directory is None:
            return
        fence = _fence(core)
        try:
            if _current(core, fence) is None:
                _remember(words.build(store, directory, fence))
            with _lock:
                _declined.discard(str(directory))  # a search while it was built counted
            ready_index(core)
            _keep_vectors(store, directory)
        except (OSError, ValueError, LanternError):
            return  # searches run in the database; the next write or search tries again

    def finish(self) -> None:
        if self.is_alive() and threading.current_thread() is not self:
            self.join()


def _keep_vectors(store: Store, directory: Path) -> None:
    """Build the vector index of each model the store holds memory vectors of, or catch up the
    one already there (`lantern.indexes.vectors`): a semantic search then maps it rather than
    reading every vector from the database."""
    from lantern.indexes import vectors

    if vectors.directory_of(store) is None:
        return
    for model in vectors.models(store):
        if place.current(directory, vectors.name_of(model)) is None:
            vectors.build(store, directory, model)
        else:
            vectors.ready(store, model)


class _CatchUp(threading.Thread):
    """Brings one index up to date until no write has asked for it since it began."""

    def __init__(self, core: MemoryCore, key: tuple[int, str]) -> None:
        super().__init__(name="lantern-word-index", daemon=False)
        # Weakly: a store its caller dropped without closing it is let go, and its index
        # caught up by the next search instead.
        self._core = weakref.ref(core)
        self._key = key
        self._again = True
        self._done = False

    def request(self) -> bool:
        """Ask for one more pass; False if this worker has ended (start another)."""
        with _lock:
            if self._done:
                return False
            self._again = True
            return True

    def run(self) -> None:
        while True:
            with _lock:
                if not self._again:
                    self._done = True
                    _workers.pop(self._key, None)
                    return
                self._again = False
            core = self._core()
            try:
                if core is not None:
                    ready_index(core, after_write=True)
            except Exception:
                with _lock:
                    self._done = True
                    _workers.pop(self._key, None)
                return

    def finish(self) -> None:
        if self.is_alive() and threading.current_thread() is not self:
            self.join()


def rebuild_after_forget(core: MemoryCore, record_id: str) -> None:
    """Build the store's word indexes that held a forgotten record again, so that its words
    leave the disk now rather than at the next search (tantivy keeps a deleted document's
    words in its segments until they merge): those this process has open are rebuilt, the
    fenced ones it has not are removed (their confined callers build them again on their next
    search). A fenced index that never held the record is left as it is: a forget outside a
    confined caller's scopes must not make its next search slower. If this fails or is killed,
    the next search finds an index behind a forget and rebuilds it."""
    store = core._store
    directory = place.directory(store.location)
    if directory is None:
        return
    from lantern.indexes import words

    with _lock:
        opened = [index for (where, _), index in _open.items() if where == str(directory)]
    try:
        for name in words.fenced_names(directory):
            if all(index.fence.name != name for index in opened) and words.holds_record(
                directory, name, record_id
            ):
                place.remove(directory, name)
        for index in opened:
            if index.fence.patterns and not words.holds_record(
                directory, index.fence.name, record_id
            ):
                continue
            _remember(words.build(store, directory, index.fence))
        if not opened and place.current(directory, words.NAME) is not None:
            _remember(words.build(store, directory))
    except (OSError, ValueError, StoreBusy):
        return


def _records(core: MemoryCore, conditions: Conditions, ids: list[str]) -> dict[str, MemoryRecord]:
    dialect = core._store.dialect

    def build() -> Select[Any]:
        source, by_id = from_id_list(dialect, table, table.c.id, "ids")
        return (
            select(table).select_from(source).where(*by_id, *conditions.clauses(), *core._policy())
        )

    statement = core._prepared(("by-ids", conditions.key), build)
    values = {**conditions.values, "ids": id_list_value(dialect, ids)}
    records = (row_to_record(row) for row in core._store.fetch(statement, values))
    return {record.id: record for record in records}


def _list_keys(core: MemoryCore, conditions: Conditions, ids: list[str]) -> dict[str, ListKey]:
    """The list keys of those of `ids` that pass the filters and the policy."""
    dialect = core._store.dialect
    columns = (table.c.status, table.c.priority, table.c.urgency, table.c.updated_at, table.c.id)

    def build() -> Select[Any]:
        source, by_id = from_id_list(dialect, table, table.c.id, "ids")
        where = [*by_id, *conditions.clauses(), *core._policy()]
        return select(*columns).select_from(source).where(*where)

    statement = core._prepared(("keys-by-ids", conditions.key), build)
    values = {**conditions.values, "ids": id_list_value(dialect, ids)}
    rows = core._store.fetch(statement, values)
    return {row[4]: (row[0], -row[1], -row[2], -row[3], row[4]) for row in rows}


def _current(core: MemoryCore, fence: Fence) -> WordIndex | None:
    from lantern.indexes import words

    store = core._store
    directory = place.directory(store.location)
    if directory is None:
        return None
    path = place.current(directory, fence.name)
    if path is None:
        return None
    with _lock:
        index = _open.get((str(directory), fence.name))
        if index is not None and index.path == path:
            return index
    opened = words.open_current(store, fence)
    return None if opened is None else _remember(opened)


def _remember(index: WordIndex) -> WordIndex:
    with _lock:
        _open[(str(index.directory), index.fence.name)] = index
    return index
