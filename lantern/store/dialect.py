"""Statement forms that differ between SQLite and PostgreSQL, kept in this one place."""

from __future__ import annotations

from sqlalchemy import Connection, Table
from sqlalchemy.sql.dml import Insert


def insert_ignoring_conflicts(conn: Connection, table: Table) -> Insert:
    """An INSERT that skips rows whose key exists, so concurrent writers never collide."""
    # Each dialect's package is imported only by the engine that needs it.
    if conn.dialect.name == "postgresql":
        from sqlalchemy.dialects import postgresql

        return postgresql.insert(table).on_conflict_do_nothing()
    from sqlalchemy.dialects import sqlite

    return sqlite.insert(table).on_conflict_do_nothing()
