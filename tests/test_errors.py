"""Errors a user can meet reach them as one line and the documented exit code."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from sqlalchemy import create_engine, event, text
from sqlalchemy.exc import DBAPIError

from lantern.api import Lantern
from lantern.errors import InvalidInput, NotAStore, StoreBusy, StoreIOError, requirement_from
from lantern.store.engine import translate, translate_errors
from lantern.store.location import resolve
from tests.helpers import REPO_ROOT, lantern_process


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
    error.sqlite_errorname = "SQLITE_IOERR_SHMSIZE"
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


_UI_WITHOUT_STARLETTE = (
    "import sys; sys.modules['starlette'] = None; "
    "sys.argv = ['lantern', '--db', sys.argv[1], 'ui']; "
    "from lantern.cli import main; main()"
)


def _installed_as(tmp_path: Path, *, entry_points: str, origin: dict[str, object]) -> Path:
    """A directory holding the installed metadata of a `lantern` distribution, to put first
    on the path: what pip leaves in site-packages (PEP 610's direct_url.json among it)."""
    site = tmp_path / "site"
    info = site / "lantern-2.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: lantern\nVersion: 2.0\n")
    (info / "entry_points.txt").write_text(entry_points)
    (info / "direct_url.json").write_text(json.dumps(origin))
    return site


def _ui_hint(tmp_path: Path, site: Path) -> list[str]:
    ran = subprocess.run(
        [sys.executable, "-c", _UI_WITHOUT_STARLETTE, str(tmp_path / "s.db")],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": os.pathsep.join([str(site), str(REPO_ROOT)])},
    )
    assert ran.returncode == 1 and ran.stdout == ""
    assert not (tmp_path / "s.db").exists()
    return ran.stderr.splitlines()


def test_a_missing_extra_names_the_checkout_lantern_was_installed_from(tmp_path: Path) -> None:
    checkout = tmp_path / "src" / "my lantern"
    checkout.mkdir(parents=True)
    site = _installed_as(
        tmp_path,
        entry_points="[lantern.embedding_providers]\nhashing = x:y\n",
        origin={"url": checkout.as_uri(), "dir_info": {}},
    )
    assert _ui_hint(tmp_path, site) == [
        f"Error: the web view needs starlette (the ui extra): pip install '{checkout}[ui]'"
    ]


def test_a_missing_extra_never_points_at_another_project_called_lantern(tmp_path: Path) -> None:
    """The index's `lantern` is another project: when it is what is installed (this Lantern
    running from a checkout on the path), its origin is not this Lantern's."""
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    site = _installed_as(
        tmp_path,
        entry_points="[console_scripts]\nlantern = other:main\n",
        origin={"url": elsewhere.as_uri(), "dir_info": {}},
    )
    [line] = _ui_hint(tmp_path, site)
    assert line == (
        "Error: the web view needs starlette (the ui extra): install Lantern with its ui extra "
        "from where you installed it (from a checkout: pip install '.[ui]')"
    )
    assert "'lantern[" not in line


@pytest.mark.parametrize(
    ("origin", "expected"),
    [
        (
            {
                "url": "https://example.org/team/lantern.git",
                "vcs_info": {"vcs": "git", "requested_revision": "v0.1", "commit_id": "ab12"},
            },
            (False, "'lantern[mcp] @ git+https://example.org/team/lantern.git@v0.1'"),
        ),
        (
            {
                "url": "https://example.org/mono.git",
                "vcs_info": {"vcs": "git", "commit_id": "ab12"},
                "subdirectory": "python/lantern",
            },
            (
                False,
                "'lantern[mcp] @ git+https://example.org/mono.git@ab12#subdirectory=python/lantern'",
            ),
        ),
        (
            {"url": "https://example.org/lantern-0.1.0.tar.gz", "archive_info": {}},
            (False, "'lantern[mcp] @ https://example.org/lantern-0.1.0.tar.gz'"),
        ),
        ({"url": "file:///nonexistent/lantern", "dir_info": {"editable": True}}, None),
        ({"url": "file:///nonexistent/lantern-0.1.0.whl", "archive_info": {}}, None),
        ({"dir_info": {}}, None),
    ],
)
def test_each_recorded_origin_gives_what_pip_installs_from_it(
    origin: dict[str, object], expected: tuple[bool, str] | None
) -> None:
    assert requirement_from("mcp", origin) == expected


def test_an_editable_checkout_stays_editable(tmp_path: Path) -> None:
    origin: dict[str, object] = {"url": tmp_path.as_uri(), "dir_info": {"editable": True}}
    assert requirement_from("embed", origin) == (True, f"'{tmp_path}[embed]'")
