"""Errors a user can meet reach them as one line and the documented exit code."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from sqlalchemy import create_engine, event, text
from sqlalchemy.exc import DBAPIError

from lantern.api import Lantern
from lantern.errors import InvalidInput, NotAStore, StoreBusy, StoreIOError
from lantern.store.engine import translate, translate_errors
from lantern.store.location import resolve
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
    Lantern.open(db_path).close()
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


def test_raw_driver_errors_are_translated_too(tmp_path: Path) -> None:
    """Checkpoints and the journal mode run on the sqlite3 connection itself."""
    location = resolve(str(tmp_path / "store.db"))
    with pytest.raises(StoreBusy), translate_errors(location):
        raise sqlite3.OperationalError("database is locked")


def test_a_full_disk_that_sqlite_reports_as_an_io_error_says_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    location = resolve(str(tmp_path / "store.db"))
    error = sqlite3.OperationalError("disk I/O error")
    error.sqlite_errorname = "SQLITE_IOERR_SHMSIZE"  # type: ignore[attr-defined]
    monkeypatch.setattr("lantern.store.engine._nearly_full", lambda _path: True)
    full = translate(error, location)
    assert isinstance(full, StoreIOError)
    assert full.message == (
        f"the disk holding {location.path} is full; free some space and retry "
        "(disk I/O error, SQLITE_IOERR_SHMSIZE)"
    )
    monkeypatch.setattr("lantern.store.engine._nearly_full", lambda _path: False)
    assert translate(error, location).message.startswith("I/O error on the store at")


def test_a_store_that_cannot_be_opened_for_want_of_write_access_says_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "store.db"
    Lantern.open(path).close()
    error = sqlite3.OperationalError("unable to open database file")
    monkeypatch.setattr("lantern.store.engine._cannot_write_beside", lambda _path: True)
    read_only = translate(error, resolve(str(path)))
    assert isinstance(read_only, StoreIOError) and "read-only file system" in read_only.message
    monkeypatch.setattr("lantern.store.engine._cannot_write_beside", lambda _path: False)
    assert isinstance(translate(error, resolve(str(path))), NotAStore)


def test_arguments_that_are_not_utf8_are_bad_input_not_crashes(db_path: Path) -> None:
    """A command line of invalid UTF-8 reaches Python as lone surrogates."""
    Lantern.open(db_path).close()
    for args in (["memory", "show", b"\xff".decode("utf-8", "surrogateescape")],
                 ["source", "show", "file:///x\udcfe", "--json"]):  # fmt: skip
        result = lantern_process("--db", str(db_path), *args)
        assert result.returncode == 1, result.stderr
        assert result.stderr.startswith("Error: a value given is not valid UTF-8 text: '\\udc")
        assert "unexpected" not in result.stderr
    with Lantern.open(db_path) as lt, pytest.raises(InvalidInput, match="not valid UTF-8"):
        lt.memory.get("mem_\ud800")


def test_error_messages_are_printable_utf8() -> None:
    assert InvalidInput("no memory record with id 'a\udcffb'").message == (
        "no memory record with id 'a\\udcffb'"
    )
