"""Keyword search over chunks: one SQL statement per engine, with the same result shape.

A chunk is searched by its searchable text: the decoded turns of a transcript chunk, the
chunk's own text otherwise (`lantern.evidence.searchtext`, stored in `chunk_search_text` where
it differs, revision 0007). SQLite answers from the FTS5 index `chunks_fts`, external content
over the view `chunk_search` (each chunk's rowid and searchable text), kept current by the
`chunks_ai`/`chunks_ad`/`chunks_au` triggers. PostgreSQL answers from two GIN indexes: the
generated `chunks.text_tsv` (revision 0004) for chunks without a searchable-text row and
`chunk_search_text.text_tsv` for those with one, one index-served branch each, merged. Neither
index is in the models: they belong here. Snippets are cut from the searchable text.

The query's words are all required (`keyword`) or any of them may match (`any`, with common
words left out): `lantern.retrieval.query` renders both for each engine.

Ranking (docs/search.md, "Ranking", explains it to users):

* SQLite: BM25 (`bm25(chunks_fts)`, k1 = 1.2, b = 0.75), negated so that higher is better. It
  weighs rare words above common ones (corpus statistics) and favours shorter chunks.
* PostgreSQL: `ts_rank_cd` (cover density: how often and how close together the terms occur),
  divided by 1 + log(chunk length) (normalization 1). It has no corpus statistics, so a rare
  word counts as much as a common one, and its values are small (about 0 to 1).

Scores compare only within one result list. Ties are broken by chunk id, so results are
deterministic. Snippets mark matches with « and »: FTS5 `snippet()` cuts around the best
window and adds … where it cut; `ts_headline` picks one fragment and adds no marks for cuts.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass
from typing import Any

from sqlalchemy import (
    BindParameter,
    ColumnElement,
    Float,
    Select,
    Text,
    bindparam,
    cast,
    column,
    exists,
    func,
    literal_column,
    or_,
    select,
    table,
    union_all,
)
from sqlalchemy.exc import DBAPIError
from sqlalchemy.sql.elements import ColumnClause

from lantern.entities.filters import chunk_clause
from lantern.errors import InvalidInput, LanternError, Setting
from lantern.evidence.records import SearchHit
from lantern.retrieval.modes import SearchMode
from lantern.retrieval.query import ParsedQuery
from lantern.store.dialect import TEXT_SEARCH_REGCONFIG
from lantern.store.engine import Store
from lantern.store.models import chunk_search_text, chunks, sources
from lantern.store.prepared import Prepared

MARK_START = "«"
MARK_END = "»"
ELLIPSIS = "…"
SNIPPET_TOKENS = 24
"""Words in a snippet (FTS5 allows at most 64)."""

_HEADLINE_OPTIONS = (
    f"StartSel={MARK_START}, StopSel={MARK_END}, MaxWords={SNIPPET_TOKENS}, "
    f"MinWords={SNIPPET_TOKENS // 2}, ShortWord=0, MaxFragments=1"
)
_FTS = table("chunks_fts", column("rowid"))
_FTS_TABLE: ColumnClause[Any] = literal_column("chunks_fts")
_CHUNK_ROWID: ColumnClause[Any] = literal_column("chunks.rowid")
_TSVECTOR: ColumnClause[Any] = literal_column("chunks.text_tsv")
_SEARCH_TSVECTOR: ColumnClause[Any] = literal_column("chunk_search_text.text_tsv")
_CONFIG: ColumnClause[Any] = literal_column(TEXT_SEARCH_REGCONFIG)

_SYNTAX_ERROR = "42601"
"""PostgreSQL's SQLSTATE for a syntax error, which a malformed `to_tsquery` argument raises."""

# What the engines say about a malformed raw query (the first line of the driver's message).
_QUERY_ERRORS = (
    "fts5:",
    "syntax error",
    "no such column",
    "unknown special query",
    "unterminated string",
    "malformed match",
    "tsquery",
)


@dataclass(frozen=True, slots=True)
class SearchFilters:
    """Which chunks a search may return; empty means no restriction."""

    kinds: tuple[str, ...] = ()
    sources: tuple[str, ...] = ()
    """Source ids or URI prefixes: a chunk qualifies when its source matches any of them."""
    since: int | None = None
    """Chunks ingested at or after this time (unix seconds)."""
    until: int | None = None
    """Chunks ingested before this time (unix seconds)."""
    entities: tuple[str, ...] = ()
    """Entity ids: a chunk qualifies when it is linked to any of them."""
    said_since: int | None = None
    """Chunks whose words were said at or after this time (unix seconds): whose said range
    (`lantern.evidence.said`) ends at or after it. A chunk of unknown time never qualifies."""
    said_until: int | None = None
    """Chunks whose words were said before this time: whose said range starts before it."""

    def values(self) -> dict[str, Any]:
        """The bound values of `clauses`, named; their names are the shape of the SQL."""
        found: dict[str, Any] = {}
        for i, kind in enumerate(self.kinds):
            found[f"kind_{i}"] = kind
        for i, value in enumerate(self.sources):
            found[f"source_{i}"] = value
            found[f"source_len_{i}"] = len(value)
        if self.since is not None:
            found["since"] = self.since
        if self.until is not None:
            found["until"] = self.until
        for i, entity in enumerate(self.entities):
            found[f"entity_{i}"] = entity
        if self.said_since is not None:
            found["said_since"] = self.said_since
        if self.said_until is not None:
            found["said_until"] = self.said_until
        return found

    def clauses(self) -> list[ColumnElement[bool]]:
        values = self.values()
        found: list[ColumnElement[bool]] = []
        if self.kinds:
            kinds = [_bound(values, f"kind_{i}") for i in range(len(self.kinds))]
            found.append(sources.c.kind.in_(kinds))
        if self.sources:
            found.append(
                or_(
                    *(
                        or_(
                            sources.c.id == _bound(values, f"source_{i}"),
                            func.substr(sources.c.uri, 1, _bound(values, f"source_len_{i}"))
                            == _bound(values, f"source_{i}"),
                        )
                        for i in range(len(self.sources))
                    )
                )
            )
        if self.since is not None:
            found.append(chunks.c.created_at >= _bound(values, "since"))
        if self.until is not None:
            found.append(chunks.c.created_at < _bound(values, "until"))
        if self.entities:
            binds = [_bound(values, f"entity_{i}") for i in range(len(self.entities))]
            found.append(chunk_clause(binds))
        # A chunk said over a range matches when that range overlaps [said_since, said_until):
        # it ends at or after the start and starts before the end. NULL (unknown) fails both.
        if self.said_since is not None:
            found.append(chunks.c.said_until >= _bound(values, "said_since"))
        if self.said_until is not None:
            found.append(chunks.c.said_from < _bound(values, "said_until"))
        return found


def _bound(values: dict[str, Any], name: str) -> BindParameter[Any]:
    return bindparam(name, values[name])


# Compiled search statements by engine and filter shape (see `lantern.store.prepared`).
_STATEMENTS: dict[tuple[object, ...], Prepared] = {}
_MAX_SHAPES = 256


def search_chunks(
    store: Store,
    query: ParsedQuery | str,
    filters: SearchFilters,
    limit: int,
    mode: SearchMode = SearchMode.KEYWORD,
) -> list[SearchHit]:
    """The best `limit` chunks for `query`: parsed user input, or a raw engine query (str).

    A parsed query is matched as `mode` says (all words, or any but the common ones); a raw
    query is the engine's as written. A raw query the engine cannot parse raises
    `InvalidInput`; a parsed query never fails. Hits come ranked, best first, each with its
    `keyword_rank`.
    """
    if isinstance(query, ParsedQuery) and mode is SearchMode.ANY:
        query = query.any_of()
    dialect = store.dialect
    if dialect == "postgresql":
        engine = "PostgreSQL to_tsquery"
        text = query if isinstance(query, str) else query.to_tsquery()
        build = _postgres_statement
    else:
        engine = "SQLite FTS5"
        text = query if isinstance(query, str) else query.to_fts5()
        build = _sqlite_statement
    values = {**filters.values(), "match": text, "limit": limit}
    shape = (dialect, *values)
    statement = _STATEMENTS.get(shape)
    if statement is None:
        if len(_STATEMENTS) >= _MAX_SHAPES:
            _STATEMENTS.clear()
        statement = _STATEMENTS[shape] = Prepared(build(filters))
    try:
        rows = store.fetch(statement, values)
    except InvalidInput:
        raise
    except LanternError as exc:
        cause = exc.__cause__
        if isinstance(query, str) and cause is not None and _is_query_error(cause):
            raise InvalidInput(
                f"the raw query is not valid {engine} syntax ({_first_line(cause)}); search again ",
                Setting("raw", False),
                " to search for the words as typed",
            ) from exc
        raise
    return [_hit(row, mode, rank) for rank, row in enumerate(rows, 1)]


def _columns() -> list[Any]:
    return [
        chunks.c.id,
        chunks.c.source_id,
        sources.c.uri,
        sources.c.kind,
        chunks.c.ordinal,
        chunks.c.start_offset,
        chunks.c.end_offset,
        chunks.c.said_from,
        chunks.c.said_until,
    ]


def _sqlite_statement(filters: SearchFilters) -> Select[Any]:
    """FTS5 finds and ranks; the joins only fetch provenance and apply the filters."""
    bm25 = func.bm25(_FTS_TABLE)
    snippet = func.snippet(_FTS_TABLE, 0, MARK_START, MARK_END, ELLIPSIS, SNIPPET_TOKENS)
    return (
        select(*_columns(), (-bm25).label("score"), snippet.label("snippet"))
        .select_from(
            _FTS.join(chunks, _FTS.c.rowid == _CHUNK_ROWID).join(
                sources, sources.c.id == chunks.c.source_id
            )
        )
        .where(_FTS_TABLE.match(bindparam("match", type_=Text)), *filters.clauses())
        .order_by(bm25, chunks.c.id)
        .limit(bindparam("limit"))
    )


def _postgres_statement(filters: SearchFilters) -> Select[Any]:
    """The GIN indexes find, ts_rank_cd ranks; ts_headline runs on the returned rows only.

    Two branches, each served by its own index and cut to the best `limit`: chunks searched by
    their own text (no `chunk_search_text` row, an anti-join on its key), and chunks searched
    by their row's text. The best `limit` of both are the best `limit` of all.
    """
    query = func.to_tsquery(_CONFIG, bindparam("match", type_=Text))
    own_score = cast(func.ts_rank_cd(_TSVECTOR, query, 1), Float)
    own = (
        select(*_columns(), chunks.c.text, own_score.label("score"))
        .select_from(chunks.join(sources, sources.c.id == chunks.c.source_id))
        .where(
            _TSVECTOR.op("@@")(query),
            ~exists().where(chunk_search_text.c.chunk_id == chunks.c.id),
            *filters.clauses(),
        )
        .order_by(own_score.desc(), chunks.c.id)
        .limit(bindparam("limit"))
    )
    derived_score = cast(func.ts_rank_cd(_SEARCH_TSVECTOR, query, 1), Float)
    derived = (
        select(*_columns(), chunk_search_text.c.text, derived_score.label("score"))
        .select_from(
            chunk_search_text.join(chunks, chunks.c.id == chunk_search_text.c.chunk_id).join(
                sources, sources.c.id == chunks.c.source_id
            )
        )
        .where(_SEARCH_TSVECTOR.op("@@")(query), *filters.clauses())
        .order_by(derived_score.desc(), chunks.c.id)
        .limit(bindparam("limit"))
    )
    merged = union_all(own.subquery().select(), derived.subquery().select()).subquery("merged")
    best = (
        select(merged)
        .order_by(merged.c.score.desc(), merged.c.id)
        .limit(bindparam("limit"))
        .subquery("best")
    )
    snippet = func.ts_headline(_CONFIG, best.c.text, query, _HEADLINE_OPTIONS)
    return select(
        *(best.c[name] for name in ("id", "source_id", "uri", "kind", "ordinal")),
        best.c.start_offset,
        best.c.end_offset,
        best.c.said_from,
        best.c.said_until,
        best.c.score,
        snippet.label("snippet"),
    ).order_by(best.c.score.desc(), best.c.id)


def _hit(row: Any, mode: SearchMode, rank: int) -> SearchHit:
    return SearchHit(
        chunk_id=row[0],
        source_id=row[1],
        uri=row[2],
        kind=row[3],
        ordinal=row[4],
        start_offset=row[5],
        end_offset=row[6],
        score=float(row[9]),
        snippet=row[10] or "",
        mode=mode.value,
        keyword_rank=rank,
        said_from=row[7],
        said_until=row[8],
    )


def _first_line(exc: BaseException) -> str:
    orig = exc.orig if isinstance(exc, DBAPIError) else exc
    detail = str(orig if orig is not None else exc).strip()
    return detail.splitlines()[0] if detail else type(exc).__name__


def _is_query_error(exc: BaseException) -> bool:
    """Whether the driver error `exc` (wrapped by SQLAlchemy or not) is about the query."""
    orig = exc.orig if isinstance(exc, DBAPIError) else exc
    if isinstance(orig, sqlite3.Error) and not isinstance(orig, sqlite3.OperationalError):
        return False
    if getattr(orig, "sqlstate", None) == _SYNTAX_ERROR:
        # PostgreSQL words some tsquery errors without "syntax" ('there is no escaped
        # character'); their SQLSTATE says what they are.
        return True
    lowered = _first_line(exc).lower()
    return any(marker in lowered for marker in _QUERY_ERRORS)
