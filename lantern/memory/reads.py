"""Reading memory records: by id, their supersede chain and history, listings and search."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from sqlalchemy import Select, bindparam, select, union_all

from lantern import validation
from lantern.boundary import checks_itself
from lantern.entities import links as entity_links
from lantern.entities.records import EntityRef
from lantern.errors import InvalidInput, Param
from lantern.memory import fts, history, refs, search, topk
from lantern.memory.chains import successor, walk
from lantern.memory.core import MemoryCore
from lantern.memory.cursor import (
    SearchCursor,
    after_branches,
    branches,
    cursor_for,
    list_key,
    parse_cursor,
    parse_search_cursor,
    policy_page,
    relevance_start,
    search_cursor_for,
    search_fingerprint,
)
from lantern.memory.filters import LIST_ORDER, Conditions, MemoryFilter
from lantern.memory.filterspec import BY_NAME, CITING, Entities, Refs
from lantern.memory.records import (
    DanglingRef,
    HistoryEntry,
    MemoryChain,
    MemoryMatch,
    MemoryRecord,
    Page,
)
from lantern.memory.refs import holding as refs_holding
from lantern.memory.refs import list_rank, ref_ids_value
from lantern.memory.rows import SCORE_COLUMN, fetch, require, row_to_record
from lantern.memory.scopes import UNRESTRICTED
from lantern.retrieval.floor import resolve as resolve_floor
from lantern.retrieval.modes import (
    KEYWORD_MODES,
    SEARCH_MODES,
    SEMANTIC_MODES,
    SearchMode,
    SearchSummary,
)
from lantern.retrieval.query import ParsedQuery, parse_query
from lantern.store.models import memory_records as table

if TYPE_CHECKING:
    from lantern.memory.fenced import FencedRanking

_MAX_REFS = 10_000
"""At most this many references are looked up at once (`by_refs`)."""

# Inside the class, `list` names its method.
DanglingRefs = list[DanglingRef]
MemoryRecords = list[MemoryRecord]
EntityRefs = list[EntityRef]


@dataclass(frozen=True, slots=True)
class _KeywordPlan:
    """A search in a keyword mode: no provider, no model (see `lantern.semantic.plan`)."""

    mode: SearchMode
    model: None = None


class MemoryReads(MemoryCore):
    """Finds and explains records."""

    def get(self, record_id: str) -> MemoryRecord:
        """The record with this id; `NotFound` if there is none (or it is outside the scopes).

        Args:
            record_id: The record (`mem_...`).
        """
        with self._store.read() as conn:
            return require(conn, record_id, self._scopes)

    def chain(self, record_id: str) -> MemoryChain:
        """A record with the records it replaced and those that replaced it, nearest first.

        Args:
            record_id: Any record of the chain (`mem_...`).

        Raises:
            NotFound: No such record within the scopes.
        """
        with self._store.read() as conn:
            record = require(conn, record_id, self._scopes)
            replaces = walk(conn, record.supersedes_id, False, self._scopes)
            replaced_by = walk(conn, successor(conn, record_id, UNRESTRICTED), True, self._scopes)
        return MemoryChain(record=record, replaces=replaces, replaced_by=replaced_by)

    def history(self, record_id: str) -> list[HistoryEntry]:
        """Every recorded change to a record, oldest first.

        Records stored before schema revision 0005 (which added history) start with none.

        Args:
            record_id: The record (`mem_...`); a forgotten record's id still shows its `forgotten`
                entry.

        Raises:
            NotFound: No such record within the scopes, and no history of one.
        """
        with self._store.read() as conn:
            if self._scopes.restricted and fetch(conn, record_id, self._scopes) is None:
                # No visible record: only what a forget left of one in the scopes remains. Only
                # `forgotten` entries are read, so that a record outside with a long history
                # takes no longer to refuse than an id that names nothing.
                forgotten = history.read(conn, record_id, event="forgotten")
                entries = [e for e in forgotten if history.forgotten_in(e, self._scopes)]
            else:
                entries = history.read(conn, record_id)
            if not entries:
                require(conn, record_id, self._scopes)
            return entries

    @checks_itself(*BY_NAME)
    def list(
        self,
        *,
        scope: str | Iterable[str] | None = None,
        kind: str | Iterable[str] | None = None,
        status: str = "active",
        limit: int = 50,
        offset: int = 0,
        include_expired: bool = False,
        min_priority: int | None = None,
        min_urgency: int | None = None,
        min_confidence: float | None = None,
        updated_since: int | float | str | None = None,
        updated_before: int | float | str | None = None,
        said_since: int | float | str | None = None,
        said_until: int | float | str | None = None,
        expires_before: int | float | str | None = None,
        cites: Refs = None,
        after: str | None = None,
        entity: Entities = None,
    ) -> Page:
        """Records in the documented order (see LIST_ORDER), filtered by visible fields only.

        `scope` takes scope patterns (`validation.scope_pattern`). `cites` takes references
        (`TYPE:ID`) and keeps records citing any of them; `entity` takes entities (`KIND:NAME`
        or an entity id) and keeps records linked to any of them. `after` continues from a
        page's `next_cursor`.

        Args:
            scope: Only these scopes: one pattern or several, each exact (`user:ada`), a name and
                a star for that scope and those under it (`user:ada*`), or a separator and a star
                (`user:*`); None, every scope.
            kind: Only these kinds, one or several; None, every kind.
            status: `active`, `archived`, `superseded`, or `all`.
            include_expired: Also the active records whose `expires_at` has passed.
            min_priority: Only records of at least this priority (0 to 100); None, any.
            min_urgency: Only records of at least this urgency (0 to 100); None, any.
            min_confidence: Only records of at least this confidence (0.0 to 1.0); None, any.
            updated_since: Only records updated at or after this time (unix seconds or ISO-8601);
                None, no bound.
            updated_before: Only records updated before this time; None, no bound.
            said_since: Only records said (created) at or after this time (unix seconds or
                ISO-8601); None, no bound.
            said_until: Only records said (created) before this time; None, no bound.
            expires_before: Only records that expire before this time; None, no bound.
            cites: Only records that cite any of these references (`TYPE:ID`, or an object with a
                `type` and an `id`), one or a list; None, no such filter.
            entity: Only records linked to any of these entities (`KIND:NAME` or an entity id), one
                or a list; None, no such filter.

            limit: At most this many records (1 to 10,000).
            offset: Skip this many first (not together with `after`).
            after: A previous page's `next_cursor`, to continue after it; None for the first page.

        Returns:
            A page of records; its `next_cursor` is None on the last page.

        Raises:
            InvalidInput: A filter value out of range, or both `offset` and `after`.
        """
        filters = MemoryFilter.build(locals())
        return self._page(filters, limit=limit, offset=offset, after=after)

    def by_refs(
        self,
        refs: str | Mapping[str, object] | Sequence[str | Mapping[str, object]],
        *,
        status: str = "active",
        include_expired: bool = False,
        limit: int = 1_000,
    ) -> MemoryRecords:
        """The records that hold any of these references, within the scopes, in list order.

        For references that each name a few records, as a caller's own keys do (`put_by_ref`):
        they are looked up through the references' index, one look-up by key each, however
        many records the store holds. (`citing` pages through every record that cites one
        piece of evidence, in list order.)

        Args:
            refs: One reference or a list of them (at most 10,000), each `TYPE:ID` or an object
                with a string `type` and `id`.
            status: `active`, `archived`, `superseded`, or `all`.
            include_expired: Also the active records whose `expires_at` has passed.
            limit: At most this many records (1 to 10,000).

        Returns:
            The records, each once, in list order.

        Raises:
            InvalidInput: A reference without an id, too many references, or a status or limit
                out of range.
        """
        limit = validation.limit(limit)
        wanted = [refs] if isinstance(refs, str | Mapping) else list(refs)
        if len(wanted) > _MAX_REFS:
            raise InvalidInput(
                Param("refs"), f" holds {len(wanted)} references; the limit is {_MAX_REFS}"
            )
        by_type: dict[str, dict[str, None]] = {}
        for ref in wanted:
            ref_type, ref_id = _lookup_key(ref)
            by_type.setdefault(ref_type, {})[ref_id] = None
        dialect = self._store.dialect
        conditions = _ref_conditions(dialect, status, include_expired, self._store.clock())
        found: dict[str, MemoryRecord] = {}
        for ref_type, ids in by_type.items():
            one = len(ids) == 1

            def holding(one: bool = one) -> Select[Any]:
                return (
                    refs_holding(dialect, one=one)
                    .where(*conditions.clauses(), *self._policy())
                    .order_by(*LIST_ORDER)
                    .limit(bindparam("limit"))
                )

            statement = self._prepared(("by_refs", one, conditions.key), holding)
            values = {**conditions.values, "ref_type": ref_type, "limit": limit}
            if one:
                values["ref_id"] = next(iter(ids))
            else:
                values["ref_ids"] = ref_ids_value(dialect, list(ids))
            for row in self._store.fetch(statement, values):
                record = row_to_record(row)
                found.setdefault(record.id, record)
        records = list(found.values())
        if len(by_type) > 1:
            records.sort(key=list_rank)
        return records[:limit]

    @checks_itself(*CITING)
    def citing(
        self,
        ref: str | Mapping[str, object],
        *,
        through_chunks: bool = False,
        status: str = "all",
        include_expired: bool = True,
        limit: int = 50,
        after: str | None = None,
    ) -> Page:
        """The records that cite a source, chunk or session (`TYPE:ID`), in list order.

        Every status and expired records too, by default: this answers "what depends on this
        evidence". With `through_chunks`, a `source:ID` also finds records citing its chunks.

        Args:
            ref: The evidence, as `TYPE:ID` (`source:src_...`, `chunk:chk_...`, `session:...`) or an
                object with a `type` and an `id`.
            through_chunks: With a `source:ID`, also the records that cite any of its chunks.
            status: `active`, `archived`, `superseded`, or `all`.
            include_expired: Also the active records whose `expires_at` has passed.
            limit: At most this many records (1 to 10,000).
            after: A previous page's `next_cursor`; None for the first page.

        Returns:
            A page of records; its `next_cursor` is None on the last page.
        """
        filters = MemoryFilter.build(locals(), cites=[ref])
        return self._page(filters, limit=limit, offset=0, after=after)

    def _page(self, filters: MemoryFilter, *, limit: int, offset: int, after: str | None) -> Page:
        limit = validation.limit(limit)
        offset = validation.offset(offset)
        if after is not None and offset:
            raise _offset_and_cursor()
        key = None if after is None else parse_cursor(after)
        conditions = filters.conditions(self._store.dialect, self._store.clock())
        values = {**conditions.values, "limit": limit + 1, "offset": offset}
        if key is None:

            def listing() -> Select[Any]:
                return (
                    select(table)
                    .where(*conditions.clauses(), *self._policy())
                    .order_by(*LIST_ORDER)
                    .limit(bindparam("limit"))
                    .offset(bindparam("offset"))
                )

            statement = self._prepared(("list", conditions.key), listing)
        else:
            after_values, _ = after_branches(key, all_statuses=filters.status == "all")
            values.update(after_values)

            def paging() -> Select[Any]:
                # One small ordered query per seekable branch, merged (see after_branches).
                where = [*conditions.clauses(), *self._policy()]
                parts = [
                    select(table)
                    .where(*where, branch)
                    .order_by(*LIST_ORDER)
                    .limit(bindparam("limit"))
                    for branch in branches(after_values, all_statuses=filters.status == "all")
                ]
                merged = union_all(*(select(part.subquery()) for part in parts)).subquery()
                return (
                    select(merged)
                    .order_by(
                        merged.c.status,
                        merged.c.priority.desc(),
                        merged.c.urgency.desc(),
                        merged.c.updated_at.desc(),
                        merged.c.id,
                    )
                    .limit(bindparam("limit"))
                )

            statement = self._prepared(("page", conditions.key, filters.status == "all"), paging)
        records = [row_to_record(row) for row in self._store.fetch(statement, values)]
        more = len(records) > limit
        records = records[:limit]
        return Page(records, cursor_for(records[-1]) if more and records else None)

    @checks_itself(*BY_NAME)
    def search(
        self,
        query: str,
        *,
        mode: str | None = None,
        model: str | None = None,
        order: str = "relevance",
        scope: str | Iterable[str] | None = None,
        kind: str | Iterable[str] | None = None,
        status: str = "active",
        limit: int = 20,
        offset: int = 0,
        include_expired: bool = False,
        min_priority: int | None = None,
        min_urgency: int | None = None,
        min_confidence: float | None = None,
        updated_since: int | float | str | None = None,
        updated_before: int | float | str | None = None,
        said_since: int | float | str | None = None,
        said_until: int | float | str | None = None,
        expires_before: int | float | str | None = None,
        cites: Refs = None,
        after: str | None = None,
        entity: Entities = None,
        min_similarity: float | None = None,
        floor: bool = True,
    ) -> Page:
        """Search over content: `MemoryMatch`es (record, score, higher is better, and origin).

        The query syntax is `lantern.retrieval.query`'s ("phrases", prefix*; nothing in it is
        an operator); a query without a letter or digit finds nothing. `mode` is `keyword`
        (every word required), `any` (any word but the common ones), `semantic` (nearest by
        the embeddings of one model: `model`, else LANTERN_EMBED_MODEL, else the store's
        default, else `minilm`) or `hybrid` (`any` and `semantic` fused); None, the default,
        is `hybrid` where semantic search can run and `any` where it cannot
        (`lantern.retrieval.modes`). `order="relevance"` ranks by score, then the list order;
        `order="policy"` uses the list order among the matches. Either order pages with
        `offset` or with a cursor (`after`: a previous page's `next_cursor`), which only
        continues the same query, mode, order and filters (see `lantern.memory.cursor` for
        what a change to the store between pages does). The page's `summary` says which mode
        ran, with which model, and how many records it could not compare for want of a vector.

        Args:
            query: The words to look for.
            mode: `keyword`, `any`, `semantic` or `hybrid`; None picks `hybrid` or `any` (see
                above).
            model: The embedding provider of a semantic or hybrid search; None uses
                LANTERN_EMBED_MODEL, then the store's default, then `minilm`.
            order: `relevance` (by score) or `policy` (the list order among the matches).
            scope: Only these scopes: one pattern or several, each exact (`user:ada`), a name and
                a star for that scope and those under it (`user:ada*`), or a separator and a star
                (`user:*`); None, every scope.
            kind: Only these kinds, one or several; None, every kind.
            status: `active`, `archived`, `superseded`, or `all`.
            include_expired: Also the active records whose `expires_at` has passed.
            min_priority: Only records of at least this priority (0 to 100); None, any.
            min_urgency: Only records of at least this urgency (0 to 100); None, any.
            min_confidence: Only records of at least this confidence (0.0 to 1.0); None, any.
            updated_since: Only records updated at or after this time (unix seconds or ISO-8601);
                None, no bound.
            updated_before: Only records updated before this time; None, no bound.
            said_since: Only records said (created) at or after this time (unix seconds or
                ISO-8601); None, no bound.
            said_until: Only records said (created) before this time; None, no bound.
            expires_before: Only records that expire before this time; None, no bound.
            cites: Only records that cite any of these references (`TYPE:ID`, or an object with a
                `type` and an `id`), one or a list; None, no such filter.
            entity: Only records linked to any of these entities (`KIND:NAME` or an entity id), one
                or a list; None, no such filter.

            limit: At most this many matches (1 to 10,000).
            offset: Skip this many first (not together with `after`).
            after: A previous page's `next_cursor` for the same search; None for the first page.
            min_similarity: The relevance floor of `semantic` and `hybrid` (a cosine similarity,
                -1 to 1): a record no keyword ranking found is returned only when it is at
                least this similar to the query. None: the model's measured floor, if it has
                one (`lantern.retrieval.floor`).
            floor: False returns every nearest record, however dissimilar (no floor).

        Returns:
            A page of `MemoryMatch`es; its `summary` says which mode ran, and its `next_cursor` is
            None on the last page.

        Raises:
            InvalidInput: An unknown mode or order, a filter value out of range, or a cursor of
                another search.
        """
        validation.choice("order", order, validation.SEARCH_ORDERS)
        requested = None
        if mode is not None:
            requested = SearchMode(validation.choice("mode", mode, SEARCH_MODES))
        if not isinstance(query, str):
            raise InvalidInput(Param("query"), f" must be text; got {type(query).__name__}")
        filters = MemoryFilter.build(locals())
        limit = validation.limit(limit)
        offset = validation.offset(offset)
        if after is not None and offset:
            raise _offset_and_cursor()
        parsed = parse_query(query)
        plan = self._plan(requested, model)
        threshold = resolve_floor(
            plan.model, validation.min_similarity(min_similarity, floor), floor
        )
        ran = plan.mode.value if plan.model is None else f"{plan.mode.value}@{plan.model}"
        if threshold is not None:
            ran += f">={threshold!r}"  # another floor is another search for a cursor
        fingerprint = search_fingerprint(query, ran, order, filters)
        position = None if after is None else parse_search_cursor(after, fingerprint, order)
        summary = SearchSummary(plan.mode.value, plan.model)
        if parsed is None:
            return Page([], summary=summary)
        conditions = filters.conditions(self._store.dialect, self._store.clock())
        if plan.mode in SEMANTIC_MODES:
            from lantern.memory.semantic import Request, SemanticSearch

            request = Request(
                plan,
                query,
                parsed,
                order,
                conditions,
                filters.status == "all",
                limit,
                offset,
                position,
                fingerprint,
                filters,
                threshold,
            )
            return SemanticSearch(self, request).run()
        page = self._keyword_search(
            parsed if plan.mode is SearchMode.KEYWORD else parsed.any_of(),
            plan.mode,
            order,
            filters,
            conditions,
            filters.status == "all",
            limit,
            offset,
            position,
            fingerprint,
        )
        page.summary = summary
        return page

    def _plan(self, requested: SearchMode | None, model: str | None) -> Any:
        """The mode to run (`lantern.semantic.plan`); the keyword modes load nothing more."""
        if requested in KEYWORD_MODES:
            if model is not None:
                from lantern.semantic.plan import check_model

                check_model(model)
            return _KeywordPlan(requested)
        from lantern.semantic.plan import plan_mode
        from lantern.semantic.sides import MEMORY

        return plan_mode(self._store, MEMORY, requested, model)

    def _keyword_search(
        self,
        parsed: ParsedQuery,
        mode: SearchMode,
        order: str,
        filters: MemoryFilter,
        conditions: Conditions,
        all_statuses: bool,
        limit: int,
        offset: int,
        position: SearchCursor | None,
        fingerprint: str,
    ) -> Page:
        confined = self._scopes.restricted
        if (order == "relevance" or confined) and (
            ranking := topk.ranking(self, parsed, filters, conditions)
        ) is not None:
            if order == "relevance":
                return self._ranked_page(ranking, mode, limit, offset, position, fingerprint)
            # A confined caller's places in the ranking are counted in its scopes' index.
            matches = [
                MemoryMatch(record, score, mode.value, keyword_rank=rank)
                for record, score, rank in ranking.ranked_all()
            ]
            return policy_page(matches, limit, offset, position, fingerprint)
        dialect = self._store.dialect
        values = {
            **conditions.values,
            "match": fts.match_value(dialect, parsed),
            "limit": limit + 1,
            "offset": offset,
        }
        by_relevance = order == "relevance"
        if position is not None:
            values.update(after_branches(position.key, all_statuses=all_statuses)[0])
            if position.score is not None:
                values["after_score"] = position.score
                boundary = self._prepared(
                    ("boundary", conditions.key),
                    lambda: search.boundary(dialect, [*conditions.clauses(), *self._policy()]),
                )
                found = self._store.fetch(boundary, values)
                if found:  # the record still matches: continue after it as it ranks now
                    values.update(zip(search.BOUNDARY, found[0], strict=True))

        def searching() -> Select[Any]:
            build = search.by_relevance if by_relevance else search.by_policy
            where = [*conditions.clauses(), *self._policy()]
            return build(
                dialect, where, values, paged=position is not None, all_statuses=all_statuses
            )

        shape = ("search", conditions.key, order, position is not None, all_statuses)
        rows = self._store.fetch(self._prepared(shape, searching), values)
        first_rank = offset if position is None else (position.rank or 0)
        matches = [
            MemoryMatch(
                record=row_to_record(row),
                score=float(row[SCORE_COLUMN]),
                mode=mode.value,
                keyword_rank=first_rank + index if by_relevance else int(row[SCORE_COLUMN + 1]),
            )
            for index, row in enumerate(rows, 1)
        ]
        more = len(matches) > limit
        matches = matches[:limit]
        if not (more and matches):
            return Page(matches)
        last = matches[-1]
        rank, score = (last.keyword_rank, last.score) if by_relevance else (None, None)
        return Page(matches, search_cursor_for(fingerprint, order, last.record, score, rank))

    def _ranked_page(
        self,
        ranking: topk.Ranking | FencedRanking,
        mode: SearchMode,
        limit: int,
        offset: int,
        position: SearchCursor | None,
        fingerprint: str,
    ) -> Page:
        """A relevance page cut from a ranking made outside the database (`topk.Ranking`):
        after `offset` matches, or after the cursor's match as it ranks now (every write
        moves the scores), else where it ranked."""
        start, boundary = relevance_start(position, offset)
        if position is not None and (now := ranking.now(position.key.id)) is not None:
            boundary = (-now[1], *list_key(now[0]))
        matches: list[MemoryMatch] = []
        for rank, (record, score) in enumerate(ranking.records(start + limit + 1), 1):
            if boundary is not None:
                if (-score, *list_key(record)) <= boundary:
                    continue
            elif rank <= start:
                continue
            matches.append(MemoryMatch(record, score, mode.value, keyword_rank=rank))
            if len(matches) > limit:
                break
        more = len(matches) > limit
        matches = matches[:limit]
        if not (more and matches):
            return Page(matches)
        last = matches[-1]
        cursor = search_cursor_for(
            fingerprint, "relevance", last.record, last.score, last.keyword_rank
        )
        return Page(matches, cursor)

    def similar(
        self,
        record_id: str,
        *,
        limit: int = 10,
        model: str | None = None,
    ) -> Page:
        """The active records nearest to a record by the embeddings of one model (`model`, else
        LANTERN_EMBED_MODEL, else the store's default, else `minilm`), the record itself left
        out, nearest first: `MemoryMatch`es whose `score` and `similarity` are the cosine.

        The record's stored vector of that model is used, or its content embedded now when it
        has none. What to do with near duplicates is the caller's decision. The page's
        `summary` counts the active records that have no vector of the model.

        Args:
            record_id: The record to compare with (`mem_...`).
            limit: At most this many matches (1 to 10,000).
            model: The embedding provider; None uses LANTERN_EMBED_MODEL, then the store's default,
                then `minilm`.

        Raises:
            NotFound: No such record within the scopes.
        """
        from lantern.memory.semantic import similar_records
        from lantern.semantic.plan import plan_mode
        from lantern.semantic.sides import MEMORY

        limit = validation.limit(limit)
        filters = MemoryFilter.build(status="active")
        with self._store.read() as conn:
            record = require(conn, record_id, self._scopes)
        plan = plan_mode(self._store, MEMORY, SearchMode.SEMANTIC, model)
        conditions = filters.conditions(self._store.dialect, self._store.clock())
        fingerprint = search_fingerprint(record.id, f"similar@{plan.model}", "relevance", filters)
        return similar_records(self, record, plan, conditions, limit, fingerprint)

    def entities(self, record_id: str) -> EntityRefs:
        """The entities a record is linked to, by kind, then name (`memory show`).

        Args:
            record_id: The record (`mem_...`).

        Raises:
            NotFound: No such record within the scopes.
        """
        with self._store.read() as conn:
            require(conn, record_id, self._scopes)
            return entity_links.of_record(conn, record_id)

    def check_refs(self) -> DanglingRefs:
        """`source` and `chunk` references that name nothing in the store any more."""
        with self._store.read() as conn:
            return refs.dangling(conn, self._scopes.clauses(conn.dialect.name))


_REF_CONDITIONS: dict[tuple[str, str, bool], Conditions] = {}


def _ref_conditions(dialect: str, status: str, include_expired: bool, at: int) -> Conditions:
    """The conditions of a look-up by reference (its status, and expiry at `at`), built once
    per status: a look-up by key costs less than building them (`MemoryFilter.build`)."""
    key = (dialect, status, include_expired)
    made = _REF_CONDITIONS.get(key)
    if made is None:
        filters = MemoryFilter.build(status=status, include_expired=include_expired)
        made = _REF_CONDITIONS[key] = filters.conditions(dialect, at)
    if "at" not in made.values:
        return made
    return Conditions(made.key, {**made.values, "at": at}, made.parts)


def _lookup_key(ref: object) -> tuple[str, str]:
    """The `(type, id)` a reference looks up: `TYPE:ID`, or an object's own strings, as they
    are (nothing is stored, so nothing more is checked); anything else as `validation.ref_key`
    reads it, or refuses it."""
    if isinstance(ref, str) and not ref.lstrip().startswith("{"):
        ref_type, _, ref_id = ref.partition(":")
        if ref_type.strip() and ref_id.strip():
            return ref_type.strip(), ref_id.strip()
    elif isinstance(ref, dict):
        given_type, given_id = ref.get("type"), ref.get("id")
        named = isinstance(given_type, str) and given_type.strip()
        if named and isinstance(given_id, str) and given_id.strip():
            return str(given_type), given_id
    elif isinstance(ref, Mapping):
        ref = dict(ref)
    return validation.ref_key(ref)


def _offset_and_cursor() -> InvalidInput:
    return InvalidInput(
        "give either an ", Param("offset"), " or a cursor (", Param("after"), "), not both"
    )
