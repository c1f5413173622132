"""Shared fixtures: an isolated environment, a fresh store per test, and ways to run the CLI.

Every test that touches a store runs against SQLite, and against PostgreSQL as well when
LANTERN_TEST_POSTGRES_URL names a server (each test in a schema of its own); `-k postgres`
selects those runs.

A test that asks for `clock` runs its stores (`lt`, `run_cli`) on that settable clock, from
`BASE_TIME`; any other runs on the real time.
"""

from __future__ import annotations

import os
import sqlite3
import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy
from click.testing import CliRunner, Result

from lantern.api import Lantern
from lantern.cli import cli
from tests.helpers import CliRun, Clock, ProcessRun, lantern_process

POSTGRES_ENV = "LANTERN_TEST_POSTGRES_URL"


def pytest_report_header() -> list[str]:
    postgres = os.environ.get(POSTGRES_ENV)
    return [
        f"sqlite: {sqlite3.sqlite_version}, sqlalchemy: {sqlalchemy.__version__}",
        f"postgresql: {postgres or f'not tested ({POSTGRES_ENV} is not set)'}",
    ]


@pytest.fixture(autouse=True)
def isolated_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """No test sees the user's store, home directory or LANTERN_* settings."""
    for name in list(os.environ):
        if name.startswith("LANTERN_") and name != POSTGRES_ENV:
            monkeypatch.delenv(name)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg-data"))


def _postgres_schema_url(base_url: str) -> Iterator[str]:
    """A fresh schema on the test server, dropped afterwards; the URL selects it."""
    schema = f"t_{uuid.uuid4().hex[:12]}"
    engine = sqlalchemy.create_engine(base_url, isolation_level="AUTOCOMMIT")
    try:
        with engine.connect() as conn:
            conn.exec_driver_sql(f"CREATE SCHEMA {schema}")
    except sqlalchemy.exc.OperationalError as exc:
        engine.dispose()
        pytest.skip(f"PostgreSQL at {base_url} does not answer: {exc.orig}")
    url = sqlalchemy.engine.make_url(base_url)
    url = url.update_query_dict({"options": f"-csearch_path={schema}"})
    try:
        yield url.render_as_string(hide_password=False)
    finally:
        with engine.connect() as conn:
            conn.exec_driver_sql(f"DROP SCHEMA {schema} CASCADE")
        engine.dispose()


@pytest.fixture(params=["sqlite", "postgres"])
def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """The address of a store that does not exist yet, on each engine under test."""
    if request.param == "sqlite":
        yield str(tmp_path / "store" / "lantern.db")
        return
    base_url = os.environ.get(POSTGRES_ENV)
    if not base_url:
        pytest.skip(f"PostgreSQL tests need {POSTGRES_ENV} (e.g. postgresql+psycopg://host/db)")
    yield from _postgres_schema_url(base_url)


@pytest.fixture
def postgres_url() -> Iterator[str]:
    """A fresh PostgreSQL store address, for tests about PostgreSQL alone."""
    base_url = os.environ.get(POSTGRES_ENV)
    if not base_url:
        pytest.skip(f"PostgreSQL tests need {POSTGRES_ENV} (e.g. postgresql+psycopg://host/db)")
    yield from _postgres_schema_url(base_url)


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    """A SQLite store path, for tests about the embedded file itself."""
    return tmp_path / "store" / "lantern.db"


@pytest.fixture
def clock() -> Clock:
    """The time every operation of the test's stores takes as its timestamp, moved by hand."""
    return Clock()


def _clock_of(request: pytest.FixtureRequest) -> Clock | None:
    """The test's `clock` if it asked for one (directly or through a fixture), else None: the
    store then runs on the real time."""
    return request.getfixturevalue("clock") if "clock" in request.fixturenames else None


@pytest.fixture
def lt(store_url: str, request: pytest.FixtureRequest) -> Iterator[Lantern]:
    with Lantern.open(store_url, clock=_clock_of(request)) as lantern:
        yield lantern


@pytest.fixture
def run_cli(store_url: str, request: pytest.FixtureRequest) -> CliRun:
    """Run a `lantern` command in-process with Click's runner, against the test store (on the
    test's `clock`, if it has one)."""
    clock = _clock_of(request)

    def run(*args: str, input: str | bytes | None = None, db: str | None = None) -> Result:
        runner = CliRunner()
        obj = None if clock is None else {"clock": clock}
        return runner.invoke(cli, ["--db", db or store_url, *args], input=input, obj=obj)

    return run


@pytest.fixture
def run_lantern(store_url: str) -> ProcessRun:
    """Run the installed `lantern` executable in a subprocess, against the test store."""

    def run(
        *args: str, input: str | None = None, env: dict[str, Any] | None = None
    ) -> subprocess.CompletedProcess[str]:
        return lantern_process("--db", store_url, *args, input=input, env=env)

    return run
