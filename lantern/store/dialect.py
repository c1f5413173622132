"""Statement forms that differ between SQLite and PostgreSQL, kept in this one place."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from typing import Any

from sqlalchemy import (
    ColumnElement,
    Connection,
    Select,
    Table,
    Text,
    any_,
    bindparam,
    func,
    literal_column,
    select,
    text,
)
from sqlalchemy.ext.compiler import compiles
from sqlalchemy.sql.dml import Insert
from sqlalchemy.sql.selectable import FromClause, Join

TEXT_SEARCH_CONFIG = "lantern_english"
"""PostgreSQL's text search configuration for every full-text vector and query (revision
0012): `simple`, with words stemmed by Snowball's English stemmer and no stop word dropped."""
TEXT_SEARCH_REGCONFIG = f"'{TEXT_SEARCH_CONFIG}'::regconfig"
"""The configuration as an SQL literal."""


def insert_ignoring_conflicts(conn: Connection, table: Table) -> Insert:
    """An INSERT that skips rows whose key exists, so concurrent writers never collide."""
    # Each dialect's package is imported only by the engine that needs it.
    if conn.dialect.name == "postgresql":
        from sqlalchemy.dialects import postgresql

        return postgresql.insert(table).on_conflict_do_nothing()
    from sqlalchemy.dialects import sqlite

    return sqlite.insert(table).on_conflict_do_nothing()


def upsert(dialect: str, table: Table, key: Sequence[str], values: Sequence[str]) -> Insert:
    """An INSERT of every column that replaces `values` of the row whose `key` exists (bound by
    column name, for one row or many)."""
    if dialect == "postgresql":
        from sqlalchemy.dialects import postgresql

        pg = postgresql.insert(table)
        return pg.on_conflict_do_update(
            index_elements=list(key), set_={name: pg.excluded[name] for name in values}
        )
    from sqlalchemy.dialects import sqlite

    lite = sqlite.insert(table)
    return lite.on_conflict_do_update(
        index_elements=list(key), set_={name: lite.excluded[name] for name in values}
    )


class FixedJoin(Join):
    """An inner join whose left side SQLite must loop over first (`CROSS JOIN ... ON`).

    Without statistics (Lantern runs no `ANALYZE`), SQLite's planner takes an equality on an
    indexed column (`status = 'active'`) to match about ten rows and loops over that index,
    testing each row against a short list of ids: measured, 230 ms at 10,000 records where
    looking the 64 ids up by key takes 0.4 ms. SQLite never reorders the sides of a `CROSS
    JOIN`; other engines read it as the plain join it is."""

    inherit_cache = True


@compiles(FixedJoin, "sqlite")
def _fixed_join_sqlite(element: FixedJoin, compiler: Any, **kw: Any) -> str:
    kw["asfrom"] = True
    left = compiler.process(element.left, **kw)
    right = compiler.process(element.right, **kw)
    condition = compiler.process(element.onclause, **{**kw, "asfrom": False})
    return f"{left} CROSS JOIN {right} ON {condition}"


def from_id_list(
    dialect: str, table: Table, column: ColumnElement[Any], name: str
) -> tuple[FromClause, list[ColumnElement[bool]]]:
    """Rows of `table` whose `column` is one of a list of ids bound as ONE parameter
    (`id_list_value`), looked up by key: the FROM clause to select from, and the conditions to
    add. On SQLite the list (`json_each`) drives the join (`FixedJoin`); on PostgreSQL the
    table is searched with `= ANY`, which its planner serves by key."""
    if dialect == "postgresql":
        return table, [in_id_list(dialect, column, name)]
    listed = func.json_each(bindparam(name, type_=Text())).table_valued("value").alias("listed")
    return FixedJoin(listed, table, column == listed.c.value), []


def in_id_list(dialect: str, column: ColumnElement[Any], name: str) -> ColumnElement[bool]:
    """`column` is one of a list of ids bound as ONE parameter (`id_list_value`), so that a
    statement for any number of ids is compiled once: a JSON array read by `json_each` on
    SQLite, an array compared with `= ANY` on PostgreSQL."""
    if dialect == "postgresql":
        from sqlalchemy.dialects.postgresql import ARRAY

        return column == any_(bindparam(name, type_=ARRAY(Text())))
    listed: Select[Any] = select(literal_column("value")).select_from(
        func.json_each(bindparam(name, type_=Text()))
    )
    return column.in_(listed.scalar_subquery())


def id_list_value(dialect: str, ids: Sequence[str]) -> Any:
    """The value to bind for `in_id_list`."""
    return list(ids) if dialect == "postgresql" else json.dumps(list(ids))


_WRITER_LOCK = 7460771115  # PostgreSQL advisory lock: evidence writers take turns, as on SQLite


def serialize_writers(conn: Connection) -> None:
    """Make evidence writers (ingest, removal, entity links) take turns on PostgreSQL, as
    `BEGIN IMMEDIATE` does on SQLite.

    Two ingests of the same new file would otherwise both insert it and one would fail, and
    links could be written for a chunk that a concurrent re-ingest removes.
    """
    if conn.dialect.name == "postgresql":
        conn.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": _WRITER_LOCK})


def serialize_writers_of(conn: Connection, name: str) -> None:
    """Make the writers of one `name` take turns on PostgreSQL, as every writer does on SQLite
    (`BEGIN IMMEDIATE`): a transaction-wide advisory lock on a 64-bit hash of the name.

    For a write that first looks for a row and inserts one when there is none, where no unique
    index can say that two such rows are one: two writers of the same name would otherwise
    both find nothing and both insert. Two names of the same hash only wait for each other.
    """
    if conn.dialect.name == "postgresql":
        digest = hashlib.blake2b(name.encode("utf-8", "surrogatepass"), digest_size=8).digest()
        key = int.from_bytes(digest, "big", signed=True)
        conn.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": key})
