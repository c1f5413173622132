"""The statements of a memory search: relevance order, policy order, and where a page starts.

`lantern.memory.reads` decides what to search for and renders the matches; these build the
SQL, once per shape of query (the values are bound by name, see `lantern.store.prepared`).
Scores come from `lantern.memory.fts`, page boundaries from `lantern.memory.cursor`.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import ColumnElement, Select, bindparam, func, or_, select

from lantern.memory import fts
from lantern.memory.cursor import after_score, branches
from lantern.memory.filters import LIST_ORDER, Values, list_order
from lantern.store.models import memory_records as table

BOUNDARY = ("after_score", "after_status", "after_priority", "after_urgency", "after_updated_at")
"""The values a relevance page's boundary is read again as (its id stays the cursor's)."""


def by_relevance(
    dialect: str,
    where: list[ColumnElement[bool]],
    values: Values,
    *,
    paged: bool,
    all_statuses: bool,
) -> Select[Any]:
    """Matches best score first, then in the list order; after the cursor's record if `paged`."""
    source, match, score = fts.matching(dialect)
    conditions = [match, *where]
    if paged:
        conditions.append(after_score(score, all_statuses=all_statuses)(values))
    return (
        select(table, score.label("score"))
        .select_from(source)
        .where(*conditions)
        .order_by(score.desc(), *LIST_ORDER)
        .limit(bindparam("limit"))
        .offset(bindparam("offset"))
    )


def by_policy(
    dialect: str,
    where: list[ColumnElement[bool]],
    values: Values,
    *,
    paged: bool,
    all_statuses: bool,
) -> Select[Any]:
    """Matches in the list order, each with its place in the relevance ranking (counted among
    all the matches, before the page is cut from them): `keyword_rank`, after `score`."""
    source, match, score = fts.matching(dialect)
    found = select(table, score.label("score")).select_from(source).where(match, *where)
    matches = found.subquery("matches")
    keyword_rank = func.row_number().over(order_by=[matches.c.score.desc(), *list_order(matches.c)])
    ranked = select(matches, keyword_rank.label("keyword_rank")).subquery("ranked")
    page = select(ranked)
    if paged:
        page = page.where(or_(*branches(values, all_statuses=all_statuses, columns=ranked.c)))
    return (
        page.order_by(*list_order(ranked.c)).limit(bindparam("limit")).offset(bindparam("offset"))
    )


def boundary(dialect: str, where: list[ColumnElement[bool]]) -> Select[Any]:
    """The score and list keys, now, of the record a relevance cursor ended with, if it still
    matches the search: a relevance page starts right after it (see `lantern.memory.cursor`)."""
    source, match, score = fts.matching(dialect)
    keys = (table.c.status, table.c.priority, table.c.urgency, table.c.updated_at)
    columns = [column.label(name) for column, name in zip((score, *keys), BOUNDARY, strict=True)]
    return (
        select(*columns)
        .select_from(source)
        .where(match, table.c.id == bindparam("after_id"), *where)
    )
