"""Evidence search by meaning: the `semantic` and `hybrid` modes over chunks.

The chunk vectors of one model come from `lantern.semantic.index` in rounds, best first; each
round's chunks are read with the search's filters applied by the database (kind, source, time),
one statement per round, so that a narrow filter only makes the search look deeper. Ties of
similarity are broken by chunk id, as in keyword search.

* `semantic`: the chunks nearest to the query, with their similarity as score. The snippet is
  the start of what the chunk is searched by (a transcript's decoded turns), with no marks.
* `hybrid`: `lantern.retrieval.fusion` over the `any` ranking and the first `DEPTH` of the
  semantic ranking, each keyword candidate with its own similarity (read from the vectors
  already loaded); the chunks the `any` ranking finds beyond the fused ones follow with score
  0, in their keyword order. A hit the keyword side found keeps its marked snippet.

In both modes a chunk no keyword ranking found is returned only when its similarity reaches the
search's floor (`lantern.retrieval.floor`).
"""

from __future__ import annotations

from collections.abc import Iterator
from itertools import islice, takewhile
from typing import TYPE_CHECKING, Any

from sqlalchemy import Select, bindparam, exists, func, select

from lantern.evidence.chunkvectors import SEARCHABLE
from lantern.evidence.records import SearchHit
from lantern.evidence.search import ELLIPSIS, SNIPPET_TOKENS, SearchFilters, search_chunks
from lantern.retrieval.floor import keeps
from lantern.retrieval.fusion import DEPTH, fuse, lead_for
from lantern.retrieval.modes import SearchMode
from lantern.retrieval.query import ParsedQuery
from lantern.semantic import index
from lantern.semantic.plan import ModePlan, embed_query
from lantern.semantic.sides import CHUNKS
from lantern.store.dialect import FixedJoin, from_id_list, id_list_value
from lantern.store.engine import Store
from lantern.store.models import chunk_search_text, chunks, embeddings, sources
from lantern.store.prepared import Prepared

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import NDArray

_SNIPPET_CHARS = 400
"""Characters of a chunk's searchable text read for its snippet: enough for its first words."""
_STATEMENTS: dict[tuple[object, ...], Prepared] = {}
_MAX_SHAPES = 256


def search_by_meaning(
    store: Store,
    plan: ModePlan,
    query: str,
    parsed: ParsedQuery,
    filters: SearchFilters,
    limit: int,
    floor: float | None = None,
) -> tuple[list[SearchHit], int]:
    """The best `limit` chunks in `plan`'s mode (semantic or hybrid), and how many chunks the
    filters admit that have no vector of the model. A chunk no keyword ranking found is left
    out below `floor` (`lantern.retrieval.floor`)."""
    searcher = _Nearest(store, plan, query, filters)
    if plan.mode is SearchMode.SEMANTIC:
        hits = [
            _semantic_hit(row, similarity, rank, plan.mode)
            for rank, (row, similarity) in enumerate(
                takewhile(
                    lambda found: keeps(floor, found[1], None),
                    islice(searcher.ranked(limit), limit),
                ),
                1,
            )
        ]
        return hits, searcher.without_vector()
    keyword = search_chunks(store, parsed, filters, max(DEPTH, limit), SearchMode.ANY)
    nearest = list(islice(searcher.ranked(DEPTH), DEPTH))
    by_id_keyword = {hit.chunk_id: hit for hit in keyword}
    by_id_semantic = {row[0]: row for row, _similarity in nearest}
    others = [hit.chunk_id for hit in keyword[:DEPTH] if hit.chunk_id not in by_id_semantic]
    fused = [
        item
        for item in fuse(
            [(hit.chunk_id, hit.score) for hit in keyword],
            [(row[0], similarity) for row, similarity in nearest],
            searcher.similarities(others),
            lead=lead_for(store.dialect),
        )
        if keeps(floor, item.similarity, item.keyword_rank)
    ]
    hits = []
    for item in fused[:limit]:
        chunk_id = str(item.key)
        found = by_id_keyword.get(chunk_id)
        if found is None:
            base = _semantic_hit(by_id_semantic[chunk_id], 0.0, None, plan.mode)
        else:
            base = found
        hits.append(
            SearchHit(
                chunk_id=base.chunk_id,
                source_id=base.source_id,
                uri=base.uri,
                kind=base.kind,
                ordinal=base.ordinal,
                start_offset=base.start_offset,
                end_offset=base.end_offset,
                score=item.score,
                snippet=base.snippet,
                mode=plan.mode.value,
                keyword_rank=item.keyword_rank,
                semantic_rank=item.semantic_rank,
                similarity=item.similarity,
                said_from=base.said_from,
                said_until=base.said_until,
            )
        )
    return hits, searcher.without_vector()


class _Nearest:
    """The chunks nearest to a query that pass the filters, nearest first."""

    def __init__(self, store: Store, plan: ModePlan, query: str, filters: SearchFilters) -> None:
        self._store = store
        self._plan = plan
        self._query = query
        self._filters = filters
        self._loaded: index.Loaded | None = None
        self._vector: NDArray[np.float32] | None = None

    def ranked(self, needed: int) -> Iterator[tuple[Any, float]]:
        plan = self._plan
        if not plan.has_vectors or plan.provider is None:
            return
        loaded = self._loaded = index.load(self._store, CHUNKS, plan.provider.model)
        if not len(loaded):
            return
        query = self._vector = embed_query(plan.provider, self._query)
        yield from index.nearest(
            loaded, query, needed, self._rows, order=lambda hit: (-hit[1], hit[0][0])
        )

    def similarities(self, ids: list[str]) -> dict[str, float]:
        """The query's cosine with the vectors of `ids` that have one (after `ranked`)."""
        if self._loaded is None or self._vector is None or not ids:
            return {}
        return index.similarities(self._loaded, self._vector, ids)

    def _rows(self, ids: list[str]) -> dict[str, Any]:
        dialect = self._store.dialect
        values = {**self._filters.values(), "ids": id_list_value(dialect, ids)}
        shape = ("rows", dialect, *values)

        def build() -> Select[Any]:
            listed, by_id = from_id_list(dialect, chunks, chunks.c.id, "ids")
            found = FixedJoin(listed, sources, sources.c.id == chunks.c.source_id).outerjoin(
                chunk_search_text, chunk_search_text.c.chunk_id == chunks.c.id
            )
            return (
                select(
                    chunks.c.id,
                    chunks.c.source_id,
                    sources.c.uri,
                    sources.c.kind,
                    chunks.c.ordinal,
                    chunks.c.start_offset,
                    chunks.c.end_offset,
                    func.substr(SEARCHABLE, 1, _SNIPPET_CHARS),
                    chunks.c.said_from,
                    chunks.c.said_until,
                )
                .select_from(found)
                .where(*by_id, *self._filters.clauses())
            )

        rows = self._store.fetch(_prepared(shape, build), values)
        return {row[0]: row for row in rows}

    def without_vector(self) -> int:
        """The chunks the filters admit that have no vector of the model."""
        model = self._plan.model
        if model is None:
            return 0
        dialect = self._store.dialect
        loaded = self._loaded
        if loaded is not None and len(loaded):
            total = self._store.fetch_unchanged(_prepared(("total", dialect), _total))[0][0]
            if total == len(loaded):
                return 0
        values = {**self._filters.values(), "vector_model": model}

        def build() -> Select[Any]:
            has_vector = exists().where(
                embeddings.c.chunk_id == chunks.c.id,
                embeddings.c.model == bindparam("vector_model"),
            )
            return (
                select(func.count())
                .select_from(chunks.join(sources, sources.c.id == chunks.c.source_id))
                .where(*self._filters.clauses(), ~has_vector)
            )

        rows = self._store.fetch(_prepared(("without", dialect, *values), build), values)
        return int(rows[0][0])


def _total() -> Select[Any]:
    return select(func.count()).select_from(chunks)


def _prepared(shape: tuple[object, ...], build: Any) -> Prepared:
    statement = _STATEMENTS.get(shape)
    if statement is None:
        if len(_STATEMENTS) >= _MAX_SHAPES:
            _STATEMENTS.clear()
        statement = _STATEMENTS[shape] = Prepared(build())
    return statement


def _semantic_hit(row: Any, similarity: float, rank: int | None, mode: SearchMode) -> SearchHit:
    return SearchHit(
        chunk_id=row[0],
        source_id=row[1],
        uri=row[2],
        kind=row[3],
        ordinal=row[4],
        start_offset=row[5],
        end_offset=row[6],
        score=similarity,
        snippet=plain_snippet(row[7] or ""),
        mode=mode.value,
        keyword_rank=None,
        semantic_rank=rank,
        similarity=similarity if rank is not None else None,
        said_from=row[8],
        said_until=row[9],
    )


def plain_snippet(text: str) -> str:
    """The first words of a text, as a snippet without marks (a semantic hit matched no word)."""
    words = text.split()
    if len(words) <= SNIPPET_TOKENS and len(text) < _SNIPPET_CHARS:
        return " ".join(words)
    return " ".join(words[:SNIPPET_TOKENS]) + ELLIPSIS
