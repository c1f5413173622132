"""Memory search by meaning: the `semantic` and `hybrid` modes, and records similar to a record.

The vectors of one model come from `lantern.semantic.index` in rounds, best first; each round's
records are read with the search's filters and the scope policy applied by the database (one
statement per round, whatever its size), so that a record outside the filters is never
returned, and a narrow filter only makes the search look deeper. Ties of similarity are broken
by the list order, as in every memory search.

* `semantic`, relevance order: every record with a vector of the model, nearest first, paged
  by offset or cursor (the cursor holds the last similarity and list keys).
* `hybrid`, relevance order: `lantern.retrieval.fusion` over the `any` ranking and the first
  `DEPTH` of the semantic ranking, each keyword candidate with its own similarity; the records
  the `any` ranking finds beyond the fused ones follow with score 0, in their keyword order, so
  that hybrid finds everything `any` finds.
* policy order: the same records (semantic: the first `DEPTH` nearest) in the list order, each
  with the score it has in the relevance order.

In both modes a record no keyword ranking found is returned only when its similarity reaches
the search's floor (`lantern.retrieval.floor`): semantic search stops there.

`without_vector` counts the records the search could have returned that have no vector of the
model: one count when some record lacks one, none when every record has one.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from itertools import islice
from typing import TYPE_CHECKING, Any

from sqlalchemy import Select, bindparam, exists, func, select

from lantern.memory import fts, search, topk
from lantern.memory.core import MemoryCore
from lantern.memory.cursor import (
    SearchCursor,
    after_branches,
    list_key,
    policy_page,
    relevance_start,
    search_cursor_for,
)
from lantern.memory.filters import Conditions, MemoryFilter
from lantern.memory.records import MemoryMatch, MemoryRecord, Page
from lantern.memory.rows import SCORE_COLUMN, row_to_record
from lantern.retrieval.floor import keeps
from lantern.retrieval.fusion import DEPTH, Fused, fuse, lead_for
from lantern.retrieval.modes import SearchMode, SearchSummary
from lantern.retrieval.query import ParsedQuery
from lantern.semantic import index
from lantern.semantic.plan import ModePlan, embed_query
from lantern.semantic.sides import MEMORY
from lantern.store.dialect import from_id_list, id_list_value
from lantern.store.models import memory_embeddings
from lantern.store.models import memory_records as table

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import NDArray


@dataclass(frozen=True, slots=True)
class Request:
    """A semantic or hybrid search, checked and planned by `MemoryReads.search`."""

    plan: ModePlan
    query: str
    parsed: ParsedQuery | None
    order: str
    conditions: Conditions
    all_statuses: bool
    limit: int
    offset: int
    position: SearchCursor | None
    fingerprint: str
    filters: MemoryFilter
    floor: float | None = None
    """The similarity a hit without keyword support must reach (`lantern.retrieval.floor`)."""


class SemanticSearch:
    """One search of a repository (its store, scopes and compiled statements)."""

    def __init__(self, core: MemoryCore, request: Request) -> None:
        self._core = core
        self._store = core._store
        self._request = request
        self._dialect = core._store.dialect
        self._loaded: index.Loaded | None = None
        self._vector: NDArray[np.float32] | None = None
        self._word_index = False
        """Whether the keyword ranking came from the word index (BM25 on every engine)."""

    # --- the two modes -------------------------------------------------------------------

    def run(self) -> Page:
        request = self._request
        if request.plan.mode is SearchMode.SEMANTIC:
            page = self._semantic()
        elif request.order == "relevance":
            page = self._hybrid()
        else:
            page = self._hybrid_policy()
        page.summary = SearchSummary(
            request.plan.mode.value, request.plan.model, self._without_vector()
        )
        return page

    def _semantic(self) -> Page:
        request = self._request
        if request.order == "policy":
            nearest = [
                (record, similarity)
                for record, similarity in islice(self._nearest(DEPTH), DEPTH)
                if keeps(request.floor, similarity, None)
            ]
            matches = [
                self._match(record, similarity, similarity, None, rank)
                for rank, (record, similarity) in enumerate(nearest, 1)
            ]
            return self._policy_page(matches)
        start, boundary = self._start()
        found: list[MemoryMatch] = []
        for rank, (record, similarity) in enumerate(self._nearest(start + request.limit + 1), 1):
            if not keeps(request.floor, similarity, None):
                break  # nearest first: everything after is below the floor too
            if boundary is not None:
                if (-similarity, *list_key(record)) <= boundary:
                    continue
            elif rank <= start:
                continue
            found.append(self._match(record, similarity, similarity, None, rank))
            if len(found) > request.limit:
                break
        return self._relevance_page(found)

    def _hybrid(self) -> Page:
        request = self._request
        start = request.offset
        if request.position is not None:
            start = request.position.rank or 0
        keyword = self._keyword(max(DEPTH, start + request.limit + 1))
        nearest = list(islice(self._nearest(DEPTH), DEPTH)) if request.plan.has_vectors else []
        records = {record.id: record for record, _score in [*keyword, *nearest]}
        ordered = [
            item
            for item in self._fuse(keyword, nearest)
            if keeps(request.floor, item.similarity, item.keyword_rank)
        ]
        if request.position is not None:
            ids = [item.key for item in ordered]
            cursor_id = request.position.key.id
            if cursor_id in ids:  # continue after it, where it ranks now
                start = ids.index(cursor_id) + 1
        matches = [
            self._match(
                records[str(item.key)],
                item.score,
                item.similarity,
                item.keyword_rank,
                item.semantic_rank,
            )
            for item in ordered[start : start + request.limit + 1]
        ]
        return self._relevance_page(matches, first_rank=start)

    def _fuse(
        self, keyword: list[tuple[MemoryRecord, float]], nearest: list[tuple[MemoryRecord, float]]
    ) -> list[Fused]:
        """`lantern.retrieval.fusion` over the two rankings, with the similarity of each keyword
        candidate the semantic ranking did not place."""
        placed = {record.id for record, _similarity in nearest}
        others = [record.id for record, _score in keyword[:DEPTH] if record.id not in placed]
        similarities = {}
        if self._loaded is not None and self._vector is not None and others:
            similarities = index.similarities(self._loaded, self._vector, others)
        return fuse(
            [(record.id, score) for record, score in keyword],
            [(record.id, similarity) for record, similarity in nearest],
            similarities,
            lead=lead_for(self._dialect, word_index=self._word_index),
        )

    def _hybrid_policy(self) -> Page:
        """Hybrid matches in the list order: the `any` matches (paged by the database, with
        their place among all of them) and the nearest records, merged, each with its fused
        score (those placed past the depth by the `any` ranking score 0)."""
        request = self._request
        nearest = list(islice(self._nearest(DEPTH), DEPTH)) if request.plan.has_vectors else []
        fused = {item.key: item for item in self._fuse(self._keyword(DEPTH), nearest)}
        keyword: dict[str, tuple[MemoryRecord, int]] = {}
        ranking = (
            topk.ranking(self._core, self._any_query(), request.filters, request.conditions)
            if self._core._scopes.restricted
            else None
        )
        if ranking is not None:
            # A confined caller's places in the ranking are counted within its scopes.
            for record, _score, rank in ranking.ranked_all():
                keyword[record.id] = (record, rank)
        else:
            for row in self._policy_rows():
                record = row_to_record(row)
                keyword[record.id] = (record, int(row[SCORE_COLUMN + 1]))
        candidates = {record.id: record for record, _ in keyword.values()}
        candidates.update((record.id, record) for record, _ in nearest)
        matches = []
        for record in candidates.values():
            kw_rank = keyword[record.id][1] if record.id in keyword else None
            item = fused.get(record.id)
            if not keeps(request.floor, None if item is None else item.similarity, kw_rank):
                continue
            if item is None:
                matches.append(self._match(record, 0.0, None, kw_rank, None))
            else:
                matches.append(
                    self._match(record, item.score, item.similarity, kw_rank, item.semantic_rank)
                )
        return self._policy_page(matches)

    # --- the rankings --------------------------------------------------------------------

    def _nearest(self, needed: int) -> Iterator[tuple[MemoryRecord, float]]:
        """Records with a vector of the model that pass the filters, nearest first (ties in the
        list order), looking about `needed` deep first and deeper as the filters require."""
        request = self._request
        if not request.plan.has_vectors or request.plan.provider is None:
            return
        loaded = self._loaded = index.load(self._store, MEMORY, request.plan.provider.model)
        if not len(loaded):
            return
        query = self._vector = embed_query(request.plan.provider, request.query)
        yield from self._ranked(loaded, query, needed)

    def _ranked(
        self, loaded: index.Loaded, query: NDArray[np.float32], needed: int, skip: str = ""
    ) -> Iterator[tuple[MemoryRecord, float]]:
        return index.nearest(
            loaded,
            query,
            needed,
            self._records,
            order=lambda hit: (-hit[1], *list_key(hit[0])),
            skip=skip,
        )

    def _records(self, ids: list[str]) -> dict[str, MemoryRecord]:
        """Those of `ids` that pass the search's filters and the scope policy."""
        conditions = self._request.conditions
        dialect = self._dialect

        def build() -> Select[Any]:
            source, by_id = from_id_list(dialect, table, table.c.id, "ids")
            return (
                select(table)
                .select_from(source)
                .where(*by_id, *conditions.clauses(), *self._core._policy())
            )

        statement = self._core._prepared(("semantic", conditions.key), build)
        values = {**conditions.values, "ids": id_list_value(dialect, ids)}
        records = (row_to_record(row) for row in self._store.fetch(statement, values))
        return {record.id: record for record in records}

    def _keyword(self, depth: int) -> list[tuple[MemoryRecord, float]]:
        """The first `depth` records of the `any` ranking, with their scores."""
        request = self._request
        ranking = topk.ranking(self._core, self._any_query(), request.filters, request.conditions)
        if ranking is not None:
            self._word_index = True  # BM25, whichever ranking made it
            return list(islice(ranking.records(depth), depth))
        dialect = self._dialect
        conditions = request.conditions
        values = {
            **conditions.values,
            "match": fts.match_value(dialect, self._any_query()),
            "limit": depth,
            "offset": 0,
        }

        def build() -> Select[Any]:
            where = [*conditions.clauses(), *self._core._policy()]
            return search.by_relevance(
                dialect, where, values, paged=False, all_statuses=request.all_statuses
            )

        shape = ("search", conditions.key, "relevance", False, request.all_statuses)
        rows = self._store.fetch(self._core._prepared(shape, build), values)
        return [(row_to_record(row), float(row[SCORE_COLUMN])) for row in rows]

    def _policy_rows(self) -> list[Any]:
        """A page of the `any` matches in the list order, after the cursor, each with its
        place among all of them by relevance (`search.by_policy`)."""
        request = self._request
        dialect = self._dialect
        conditions = request.conditions
        values = {
            **conditions.values,
            "match": fts.match_value(dialect, self._any_query()),
            "limit": request.offset + request.limit + 1,
            "offset": 0,
        }
        paged = request.position is not None
        if request.position is not None:
            values.update(
                after_branches(request.position.key, all_statuses=request.all_statuses)[0]
            )

        def build() -> Select[Any]:
            where = [*conditions.clauses(), *self._core._policy()]
            return search.by_policy(
                dialect, where, values, paged=paged, all_statuses=request.all_statuses
            )

        shape = ("search", conditions.key, "policy", paged, request.all_statuses)
        return self._store.fetch(self._core._prepared(shape, build), values)

    def _any_query(self) -> ParsedQuery:
        parsed = self._request.parsed
        assert parsed is not None, "a hybrid search has a query to match"
        return parsed.any_of()

    # --- pages ---------------------------------------------------------------------------

    def _start(self) -> tuple[int, tuple[Any, ...] | None]:
        return relevance_start(self._request.position, self._request.offset)

    def _relevance_page(self, matches: list[MemoryMatch], first_rank: int = 0) -> Page:
        request = self._request
        more = len(matches) > request.limit
        matches = matches[: request.limit]
        if not (more and matches):
            return Page(matches)
        last = matches[-1]
        rank = first_rank + len(matches)
        if request.plan.mode is SearchMode.SEMANTIC:
            rank = last.semantic_rank or rank
        cursor = search_cursor_for(request.fingerprint, "relevance", last.record, last.score, rank)
        return Page(matches, cursor)

    def _policy_page(self, matches: list[MemoryMatch]) -> Page:
        request = self._request
        return policy_page(
            matches, request.limit, request.offset, request.position, request.fingerprint
        )

    def _match(
        self,
        record: MemoryRecord,
        score: float,
        similarity: float | None,
        keyword_rank: int | None,
        semantic_rank: int | None,
    ) -> MemoryMatch:
        return MemoryMatch(
            record=record,
            score=score,
            mode=self._request.plan.mode.value,
            keyword_rank=keyword_rank,
            semantic_rank=semantic_rank,
            similarity=similarity,
        )

    # --- coverage ------------------------------------------------------------------------

    def _without_vector(self) -> int:
        request = self._request
        model = request.plan.model
        if model is None:
            return 0
        return count_without_vector(self._core, request.conditions, model, self._loaded)


_TOTAL = select(func.count()).select_from(table)


def count_without_vector(
    core: MemoryCore, conditions: Conditions, model: str, loaded: index.Loaded | None
) -> int:
    """The records passing `conditions` and the scope policy that have no vector of `model`.

    When the loaded vectors number as many as the records, every record has one: one count of
    the table, no look at the filters. Otherwise one count of those without a vector."""
    store = core._store
    if loaded is not None and len(loaded):
        total = store.fetch_unchanged(core._prepared(("count-records",), lambda: _TOTAL))[0][0]
        if total == len(loaded):
            return 0

    def build() -> Select[Any]:
        has_vector = exists().where(
            memory_embeddings.c.memory_id == table.c.id,
            memory_embeddings.c.model == bindparam("vector_model"),
        )
        return (
            select(func.count())
            .select_from(table)
            .where(*conditions.clauses(), *core._policy(), ~has_vector)
        )

    statement = core._prepared(("without-vector", conditions.key), build)
    rows = store.fetch(statement, {**conditions.values, "vector_model": model})
    return int(rows[0][0])


def similar_records(
    core: MemoryCore,
    record: MemoryRecord,
    plan: ModePlan,
    conditions: Conditions,
    limit: int,
    fingerprint: str,
) -> Page:
    """The records passing `conditions` nearest to `record` (itself left out), nearest first:
    by its stored vector of the model, or, when it has none, by its content embedded now. No
    model is loaded when the store holds no vector of the model to compare with."""
    provider = plan.provider
    assert provider is not None
    request = Request(
        plan,
        record.content,
        None,
        "relevance",
        conditions,
        False,
        limit,
        0,
        None,
        fingerprint,
        MemoryFilter.build(status="active"),
    )
    searcher = SemanticSearch(core, request)
    matches: list[MemoryMatch] = []
    loaded = None
    if plan.has_vectors:
        loaded = index.load(core._store, MEMORY, provider.model)
        row = loaded.row_of(record.id)
        if len(loaded):
            query = loaded.matrix[row] if row is not None else embed_query(provider, record.content)
            for rank, (found, similarity) in enumerate(
                searcher._ranked(loaded, query, limit + 1, skip=record.id), 1
            ):
                matches.append(searcher._match(found, similarity, similarity, None, rank))
                if len(matches) >= limit:
                    break
    page = Page(matches)
    missing = count_without_vector(core, conditions, provider.model, loaded)
    page.summary = SearchSummary(SearchMode.SEMANTIC.value, provider.model, missing)
    return page
