"""Statement forms that differ between SQLite and PostgreSQL, kept in this one place."""

from __future__ import annotations

from sqlalchemy import Connection, Table
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.sql.dml import Insert


def insert_ignoring_conflicts(conn: Connection, table: Table) -> Insert:
    """An INSERT that skips rows whose key exists, so concurrent writers never collide."""
    if conn.dialect.name == "postgresql":
        return postgresql.insert(table).on_conflict_do_nothing()
    return sqlite.insert(table).on_conflict_do_nothing()
