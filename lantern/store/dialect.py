"""Statement forms that differ between SQLite and PostgreSQL, kept in this one place."""

from __future__ import annotations

from sqlalchemy import Connection, Table, text
from sqlalchemy.sql.dml import Insert


def insert_ignoring_conflicts(conn: Connection, table: Table) -> Insert:
    """An INSERT that skips rows whose key exists, so concurrent writers never collide."""
    # Each dialect's package is imported only by the engine that needs it.
    if conn.dialect.name == "postgresql":
        from sqlalchemy.dialects import postgresql

        return postgresql.insert(table).on_conflict_do_nothing()
    from sqlalchemy.dialects import sqlite

    return sqlite.insert(table).on_conflict_do_nothing()


_WRITER_LOCK = 7460771115  # PostgreSQL advisory lock: evidence writers take turns, as on SQLite


def serialize_writers(conn: Connection) -> None:
    """Make evidence writers (ingest, removal, entity links) take turns on PostgreSQL, as
    `BEGIN IMMEDIATE` does on SQLite.

    Two ingests of the same new file would otherwise both insert it and one would fail, and
    links could be written for a chunk that a concurrent re-ingest removes.
    """
    if conn.dialect.name == "postgresql":
        conn.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": _WRITER_LOCK})
