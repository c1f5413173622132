"""Errors a user can meet reach them as one line and the documented exit code."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from sqlalchemy import create_engine, event, text
from sqlalchemy.exc import DBAPIError

from lantern.api import Lantern
from lantern.errors import NotAStore, StoreIOError
from lantern.location import resolve
from lantern.store import translate
from tests.helpers import lantern_process


def test_busy_past_the_timeout_is_exit_code_3(db_path: Path) -> None:
    Lantern.open(db_path).close()
    holder = sqlite3.connect(db_path, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")
    try:
        result = lantern_process(
            "--db", str(db_path), "memory", "add", "--kind", "fact", "x", "--json",
            env={"LANTERN_BUSY_TIMEOUT": "0.3"},
        )  # fmt: skip
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert result.returncode == 3
    assert result.stderr.strip() == (
        f"Error: the store at {db_path} stayed busy (locked by another writer) past the "
        "0.3 s timeout; try again"
    )
    with Lantern.open(db_path) as lt:
        assert lt.memory.list(status="all") == []


def test_a_bad_busy_timeout_setting_is_refused(db_path: Path) -> None:
    result = lantern_process(
        "--db", str(db_path), "memory", "list", env={"LANTERN_BUSY_TIMEOUT": "soon"}
    )
    assert result.returncode == 1
    assert "LANTERN_BUSY_TIMEOUT must be a number of seconds" in result.stderr


def _driver_error(
    path: Path, statement: str, *, setup: str | None = None, **uri: str
) -> DBAPIError:
    """Provoke a real sqlite3 error through SQLAlchemy, as the store would see it."""
    query = "&".join(f"{key}={value}" for key, value in uri.items())
    engine = create_engine(
        "sqlite://", creator=lambda: sqlite3.connect(f"file:{path}?{query}", uri=True)
    )
    if setup is not None:

        @event.listens_for(engine, "connect")
        def _setup(dbapi_connection: sqlite3.Connection, _record: object) -> None:
            dbapi_connection.execute(setup)

    try:
        with engine.begin() as conn, pytest.raises(DBAPIError) as caught:
            conn.execute(text(statement))
    finally:
        engine.dispose()
    return caught.value


def test_driver_errors_become_lantern_errors(tmp_path: Path) -> None:
    path = tmp_path / "store.db"
    Lantern.open(path).close()
    location = resolve(str(path))
    insert = (
        "INSERT INTO memory_records (id, kind, content, created_at, updated_at) "
        "VALUES ('mem_x', 'fact', zeroblob(1000000), 0, 0)"
    )
    read_only = translate(_driver_error(path, insert, mode="ro"), location)
    assert isinstance(read_only, StoreIOError) and read_only.exit_code == 6
    assert "read-only" in read_only.message
    full = translate(_driver_error(path, insert, setup="PRAGMA max_page_count = 30"), location)
    assert isinstance(full, StoreIOError) and "is full" in full.message
    garbage = tmp_path / "garbage.db"
    garbage.write_bytes(b"not a database at all " * 200)
    not_store = translate(
        _driver_error(garbage, "SELECT * FROM sqlite_master"), resolve(str(garbage))
    )
    assert isinstance(not_store, NotAStore) and not_store.exit_code == 4
