"""The evidence repository's reads: chunks searched for, sources and chunks shown and listed.

Each is one read transaction. The rows are read, and made frozen records, by
`lantern.evidence.rows`; the rankings are `lantern.evidence.search` (keyword, per dialect) and
`lantern.evidence.semantic` (by meaning, and both fused).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import replace

from sqlalchemy import and_, exists

from lantern import validation
from lantern.entities import names as entity_names
from lantern.errors import InvalidInput, NotFound, Param
from lantern.evidence import inputs
from lantern.evidence.core import EvidenceCore
from lantern.evidence.records import Chunk, ChunkDetail, Results, SearchResults, Source
from lantern.evidence.rows import find_source, load_chunks, source_select, starts_with, to_source
from lantern.evidence.search import SearchFilters, search_chunks
from lantern.retrieval.floor import resolve as resolve_floor
from lantern.retrieval.modes import KEYWORD_MODES, SEARCH_MODES, SearchMode, SearchSummary
from lantern.retrieval.query import ParsedQuery, parse_query
from lantern.store.models import chunks, sources

DEFAULT_SOURCE_LIMIT = 100
DEFAULT_SEARCH_LIMIT = 20
MAX_CHUNK_PAGE = 1_000
PAGE_CHARS = 1_000_000
"""A page of a source's chunks holds at most this many characters of text (one chunk more
than that when a single chunk is larger)."""


class EvidenceReads(EvidenceCore):
    """Searches chunks, and shows and lists sources and chunks."""

    def search(
        self,
        query: str,
        *,
        kind: str | Iterable[str] | None = None,
        source: str | Iterable[str] | None = None,
        since: int | float | str | None = None,
        until: int | float | str | None = None,
        limit: int = DEFAULT_SEARCH_LIMIT,
        raw: bool = False,
        mode: str | None = None,
        model: str | None = None,
        entity: str | Sequence[str] | None = None,
        said_since: int | float | str | None = None,
        said_until: int | float | str | None = None,
        min_similarity: float | None = None,
        floor: bool = True,
    ) -> SearchResults:
        """The best chunks for `query`, best first (syntax: `lantern.retrieval.query`): a list
        of `SearchHit`s whose `more` says whether other chunks matched past `limit`.

        `mode` is `keyword` (every word required), `any` (any word but the common ones),
        `semantic` (nearest by the embeddings of one model: `model`, else LANTERN_EMBED_MODEL,
        else the store's default, else `minilm`) or `hybrid` (`any` and `semantic` fused);
        None, the default, is `hybrid` where semantic search can run and `any` where it cannot
        (`lantern.retrieval.modes`). `kind` and `source` (a source id or a URI prefix) take one
        value or several (any of them matches); `since`/`until` bound the time a chunk was
        ingested (`since` <= created_at < `until`); `said_since`/`said_until` bound the time its
        words were said (`lantern.evidence.said`): a chunk said over a range matches when that
        range overlaps [`said_since`, `said_until`), and a chunk of unknown time never matches
        either; `entity` keeps the chunks linked to any of these entities (`KIND:NAME` or ids).
        A query with nothing searchable returns no
        hits. With `raw`, the query goes to the engine as it is (FTS5 or `to_tsquery` syntax;
        the mode is then `keyword`, the engine's own), and a malformed one raises
        `InvalidInput`. The result's `summary` says which mode ran, with which model, and how
        many chunks it could not compare for want of a vector.

        Args:
            query: The words to look for (or, with `raw`, the engine's own query).
            kind: Only chunks of sources of these kinds, one or several; None, every kind.
            source: Only chunks of these sources, each a source id or a URI prefix; None, every
                source.
            since: Only chunks ingested at or after this time (unix seconds or ISO-8601); None, no
                bound.
            until: Only chunks ingested before this time; None, no bound.
            limit: At most this many hits (1 to 10,000).
            raw: Pass the query to the engine as written (FTS5 or `to_tsquery` syntax).
            mode: `keyword`, `any`, `semantic` or `hybrid`; None picks `hybrid` or `any` (see
                above).
            model: The embedding provider of a semantic or hybrid search; None uses
                LANTERN_EMBED_MODEL, then the store's default, then `minilm`.
            entity: Only chunks linked to any of these entities (`KIND:NAME` or an entity id), one
                or a list; None, no such filter.
            said_since: Only chunks whose words were said at or after this time (unix seconds or
                ISO-8601); None, no bound.
            said_until: Only chunks whose words were said before this time; None, no bound.
            min_similarity: The relevance floor of `semantic` and `hybrid` (a cosine similarity,
                -1 to 1): a chunk no keyword ranking found is returned only when it is at least
                this similar to the query. None: the model's measured floor, if it has one
                (`lantern.retrieval.floor`).
            floor: False returns every nearest chunk, however dissimilar (no floor).

        Returns:
            The hits, best first, with `more` and the search's `summary`.

        Raises:
            InvalidInput: An unknown mode, a mode with `raw`, a malformed raw query, a filter out of
                range.
        """
        requested = None
        if mode is not None:
            requested = SearchMode(validation.choice("mode", mode, SEARCH_MODES))
        if raw:
            if requested is not None and requested is not SearchMode.KEYWORD:
                raise InvalidInput(
                    "a raw query goes to the engine as written, so its mode is keyword; ",
                    Param("mode"),
                    f" {mode} does not apply (write OR in the query instead)",
                )
            requested = SearchMode.KEYWORD
        filters = SearchFilters(
            kinds=tuple(inputs.filter_values("kind", kind)),
            sources=tuple(inputs.filter_values("source", source)),
            since=None if since is None else validation.timestamp("since", since),
            until=None if until is None else validation.timestamp("until", until),
            entities=tuple(entity_names.id_of(key) for key in entity_names.keys(entity)),
            said_since=validation.optional_timestamp("said_since", said_since),
            said_until=validation.optional_timestamp("said_until", said_until),
        )
        checked_limit = validation.limit(limit)
        if not isinstance(query, str):
            raise InvalidInput(Param("query"), f" must be text; got {type(query).__name__}")
        if requested in KEYWORD_MODES:
            validation.min_similarity(min_similarity, floor)  # checked alike in every mode
            if model is not None:
                from lantern.semantic.plan import check_model

                check_model(model)
            return self._keyword_search(query, raw, requested, filters, checked_limit)
        from lantern.evidence.semantic import search_by_meaning
        from lantern.semantic.plan import plan_mode
        from lantern.semantic.sides import CHUNKS

        plan = plan_mode(self._store, CHUNKS, requested, model)
        threshold = resolve_floor(
            plan.model, validation.min_similarity(min_similarity, floor), floor
        )
        if plan.mode in KEYWORD_MODES:
            return self._keyword_search(query, raw, plan.mode, filters, checked_limit)
        summary = SearchSummary(plan.mode.value, plan.model)
        parsed = parse_query(query)
        if parsed is None:
            return SearchResults([], summary)
        # One more than asked for, to know whether more matched.
        hits, missing = search_by_meaning(
            self._store, plan, query, parsed, filters, checked_limit + 1, threshold
        )
        return SearchResults(
            hits[:checked_limit],
            SearchSummary(plan.mode.value, plan.model, missing),
            more=len(hits) > checked_limit,
        )

    def _keyword_search(
        self, query: str, raw: bool, mode: SearchMode, filters: SearchFilters, limit: int
    ) -> SearchResults:
        summary = SearchSummary(mode.value)
        prepared: ParsedQuery | str
        if raw:
            if not query.strip():
                return SearchResults([], summary)
            prepared = validation.text("query", query, max_chars=inputs.MAX_RAW_QUERY_CHARS)
        else:
            parsed = parse_query(query)
            if parsed is None:
                return SearchResults([], summary)
            prepared = parsed
        # One more than asked for, to know whether more matched.
        hits = search_chunks(self._store, prepared, filters, limit + 1, mode)
        return SearchResults(hits[:limit], summary, more=len(hits) > limit)

    def get_source(
        self,
        ref: str,
        *,
        with_chunks: bool = True,
        limit: int | None = None,
        after: int | None = None,
        said_since: int | float | str | None = None,
        said_until: int | float | str | None = None,
    ) -> Source:
        """A source by id or URI, with its chunks in order (unless `with_chunks` is False).

        `limit` returns one page of chunks rather than all of them: at most that many, and no
        more than `PAGE_CHARS` characters of text (at least one chunk, whatever its size), so
        that a page of a large source stays small. `after` continues after the chunk of that
        ordinal: the page's `next_cursor`, which is None when no chunk follows.

        Args:
            ref: The source's id (`src_...`) or its URI.
            with_chunks: Include the chunks (False gives the source's fields and counts only).
            limit: At most this many chunks on the page (1 to 1,000); None gives every chunk.
            after: The ordinal of the last chunk seen (a page's `next_cursor`); None starts at the
                first chunk.
            said_since: Only the chunks whose words were said at or after this time (unix seconds
                or ISO-8601), as `search` reads it; None, no bound. `chunk_count` still counts
                every chunk of the source.
            said_until: Only the chunks whose words were said before this time; None, no bound.

        Raises:
            NotFound: No source with that id or URI.
        """
        size = None if limit is None else validation.limit(limit, maximum=MAX_CHUNK_PAGE)
        start = None if after is None else inputs.ordinal_cursor(after)
        said = SearchFilters(
            said_since=validation.optional_timestamp("said_since", said_since),
            said_until=validation.optional_timestamp("said_until", said_until),
        )
        with self._store.read() as conn:
            row = find_source(conn, ref)
            if not with_chunks:
                return to_source(row)
            condition = chunks.c.source_id == row.id
            if start is not None:
                condition = and_(condition, chunks.c.ordinal > start)
            if said.values():
                condition = and_(condition, *said.clauses())
            found = load_chunks(conn, condition, limit=None if size is None else size + 1)
        page, more = _page(found, size)
        next_cursor = page[-1].ordinal if more else None
        return replace(to_source(row, tuple(page)), next_cursor=next_cursor)

    def list_sources(
        self,
        *,
        kind: str | Iterable[str] | None = None,
        uri_prefix: str | None = None,
        limit: int = DEFAULT_SOURCE_LIMIT,
        offset: int = 0,
        said_since: int | float | str | None = None,
        said_until: int | float | str | None = None,
    ) -> Results[Source]:
        """Sources in URI order, with their chunk counts: a list of `Source`s whose `more` says
        whether others follow past `limit`.

        `said_since` and `said_until` keep the sources with at least one chunk said in that
        time, as `search` reads them (overlapping ranges match, unknown times never do).

        Args:
            kind: Only sources of these kinds, one or several; None, every kind.
            uri_prefix: Only sources whose URI starts with this text; None, every source.
            limit: At most this many sources (1 to 10,000).
            offset: Skip this many first.
            said_since: Only sources with a chunk said at or after this time (unix seconds or
                ISO-8601); None, no bound.
            said_until: Only sources with a chunk said before this time; None, no bound.
        """
        kinds = inputs.filter_values("kind", kind)
        said = SearchFilters(
            said_since=validation.optional_timestamp("said_since", said_since),
            said_until=validation.optional_timestamp("said_until", said_until),
        )
        checked_limit = validation.limit(limit)
        stmt = source_select().order_by(sources.c.uri, sources.c.id)
        stmt = stmt.limit(checked_limit + 1).offset(validation.offset(offset))
        if kinds:
            stmt = stmt.where(sources.c.kind.in_(kinds))
        if uri_prefix is not None:
            prefix = inputs.filter_values("uri_prefix", uri_prefix)[0]
            stmt = stmt.where(starts_with(sources.c.uri, prefix))
        if said.values():
            stmt = stmt.where(exists().where(chunks.c.source_id == sources.c.id, *said.clauses()))
        with self._store.read() as conn:
            found = [to_source(row) for row in conn.execute(stmt)]
        return Results(found[:checked_limit], more=len(found) > checked_limit)

    def get_chunk(self, chunk_ref: str, *, context: int = 0) -> ChunkDetail:
        """A chunk, its source, and up to `context` chunks on each side of it.

        Args:
            chunk_ref: The chunk's id (`chk_...`).
            context: How many chunks before and after it to include (0 for none).

        Raises:
            NotFound: No chunk with that id.
        """
        count = inputs.context(context)
        if not isinstance(chunk_ref, str) or not chunk_ref.strip():
            raise NotFound("a chunk id is required")
        with self._store.read() as conn:
            found = load_chunks(conn, chunks.c.id == chunk_ref)
            if not found:
                raise NotFound(f"no chunk with id {chunk_ref!r}")
            chunk = found[0]
            row = conn.execute(source_select().where(sources.c.id == chunk.source_id)).one()
            before: list[Chunk] = []
            after: list[Chunk] = []
            if count:
                same_source = chunks.c.source_id == chunk.source_id
                before = load_chunks(
                    conn,
                    and_(same_source, chunks.c.ordinal < chunk.ordinal),
                    descending=True,
                    limit=count,
                )
                before.reverse()
                after = load_chunks(
                    conn, and_(same_source, chunks.c.ordinal > chunk.ordinal), limit=count
                )
            return ChunkDetail(chunk, to_source(row), tuple(before), tuple(after))


def _page(found: list[Chunk], size: int | None) -> tuple[list[Chunk], bool]:
    """The chunks of one page, and whether any follow it."""
    if size is None:
        return found, False
    page: list[Chunk] = []
    chars = 0
    for chunk in found[:size]:
        if page and chars + len(chunk.text) > PAGE_CHARS:
            break
        page.append(chunk)
        chars += len(chunk.text)
    return page, len(page) < len(found)
