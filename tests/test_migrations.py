"""Schema migrations: Alembic's invariants, and upgrades of the legacy stores users have."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import alembic.op
import pytest
from alembic.autogenerate import compare_metadata
from alembic.config import Config
from alembic.migration import MigrationContext
from alembic.script import ScriptDirectory
from click.testing import CliRunner
from pytest_alembic.tests import (  # noqa: F401 - collected here, against every store fixture
    test_model_definitions_match_ddl,
    test_single_head_revision,
    test_up_down_consistency,
    test_upgrade,
)
from sqlalchemy import Engine

from lantern.api import Lantern
from lantern.cli import cli
from lantern.errors import SchemaMismatch
from lantern.store import migrations
from lantern.store.engine import create_store_engine, prepare_sqlite_file
from lantern.store.location import resolve
from lantern.store.models import Base
from tests.helpers import REPO_ROOT, file_state, lantern_process
from tests.legacy_stores import FTS_PROBE_QUERIES, build_legacy_store, fts_answers, snapshot


@pytest.fixture
def alembic_config(store_url: str) -> Config:
    config = migrations.alembic_config(migrations._Options(location=resolve(store_url)))
    return config


@pytest.fixture
def alembic_engine(store_url: str) -> Iterator[Engine]:
    location = resolve(store_url)
    if location.path is not None:
        prepare_sqlite_file(location.path)
    engine = create_store_engine(location)
    yield engine
    engine.dispose()


def test_revision_constants_match_the_scripts() -> None:
    script = ScriptDirectory(str(migrations.script_location()))
    ordered = [rev.revision for rev in reversed(list(script.walk_revisions()))]
    assert tuple(ordered) == migrations.REVISIONS
    assert script.get_current_head() == migrations.HEAD


def _schema_diffs(path: Path) -> list[Any]:
    engine = create_store_engine(resolve(str(path)))
    try:
        with engine.connect() as conn:
            context = MigrationContext.configure(
                conn,
                opts={"include_object": migrations.schema_filter("sqlite"), "compare_type": True},
            )
            return list(compare_metadata(context, Base.metadata))
    finally:
        engine.dispose()


def _sqlite_schema(path: Path) -> list[tuple[str, str, str | None]]:
    conn = sqlite3.connect(path)
    try:
        rows = conn.execute(
            "SELECT type, name, sql FROM sqlite_master WHERE name NOT LIKE 'sqlite_%' ORDER BY name"
        ).fetchall()
    finally:
        conn.close()
    return [(kind, name, sql) for kind, name, sql in rows]


def _user_version(path: Path) -> int:
    conn = sqlite3.connect(path)
    try:
        version: int = conn.execute("PRAGMA user_version").fetchone()[0]
        return version
    finally:
        conn.close()


def _upgrade_with_cli(path: Path, *extra: str) -> dict[str, Any]:
    result = CliRunner().invoke(cli, ["--db", str(path), "db", "upgrade", "--json", *extra])
    assert result.exit_code == 0, result.output
    report: dict[str, Any] = json.loads(result.stdout)
    return report


@pytest.mark.parametrize("generation", [1, 2])
@pytest.mark.parametrize("wal_pending", [False, True], ids=["checkpointed", "wal-pending"])
def test_legacy_store_upgrades_with_every_row_and_byte_intact(
    tmp_path: Path, generation: int, wal_pending: bool
) -> None:
    path = tmp_path / "legacy.db"
    build_legacy_store(path, generation, wal_pending=wal_pending)
    before = snapshot(path)
    answers = fts_answers(path, FTS_PROBE_QUERIES)
    assert all(answers.values())

    report = _upgrade_with_cli(path)

    assert report["upgraded"] is True
    assert report["from_revision"] == migrations.LEGACY_GENERATIONS[generation]
    assert report["to_revision"] == migrations.HEAD
    assert report["legacy_generation"] == generation
    backup = Path(report["backup_path"])
    assert backup.parent == path.parent and backup.name.startswith("legacy.db.backup-")
    assert oct(backup.stat().st_mode & 0o777) == oct(0o600)
    assert snapshot(backup) == before
    assert _user_version(backup) == generation

    after = snapshot(path)
    assert {table: after[table] for table in before} == before
    assert all(rows == [] for table, rows in after.items() if table not in before)
    # Every chunk a query found is found still; stemming (revision 0012) only adds the texts
    # holding another form of a word: `"quoted"` now also finds the text with `quote`.
    after_answers = fts_answers(path, FTS_PROBE_QUERIES)
    assert all(set(answers[query]) <= set(after_answers[query]) for query in answers)
    grown = {query for query in answers if after_answers[query] != answers[query]}
    assert grown <= {'"quoted"'}
    assert _user_version(path) == generation
    with Lantern.open(path) as lt:
        status = lt.status()
        assert (status.revision, status.needs_upgrade) == (migrations.HEAD, False)
        assert lt.memory.add(kind="fact", content="works after the upgrade").status == "active"
        assert lt.memory.list(status="all")[0].content == "works after the upgrade"


def test_upgraded_generation_1_store_matches_the_models_exactly(tmp_path: Path) -> None:
    path = tmp_path / "g1.db"
    build_legacy_store(path, 1)
    _upgrade_with_cli(path, "--no-backup")
    assert _schema_diffs(path) == []


def test_upgraded_generation_2_store_differs_only_by_its_stricter_metadata(tmp_path: Path) -> None:
    path = tmp_path / "g2.db"
    build_legacy_store(path, 2)
    _upgrade_with_cli(path, "--no-backup")
    diffs = _schema_diffs(path)
    flattened = [d for group in diffs for d in (group if isinstance(group, list) else [group])]
    described = sorted((d[0], d[2], d[3], d[5], d[6]) for d in flattened)
    assert described == [
        ("modify_nullable", "chunks", "metadata", False, True),
        ("modify_nullable", "sources", "metadata", False, True),
    ]


def test_new_store_matches_the_models_and_the_legacy_evidence_ddl(tmp_path: Path) -> None:
    new = tmp_path / "new.db"
    Lantern.open(new).close()
    assert _schema_diffs(new) == []
    legacy = tmp_path / "legacy.db"
    build_legacy_store(legacy, 1, awkward=False)
    _upgrade_with_cli(legacy, "--no-backup")
    assert _sqlite_schema(new) == _sqlite_schema(legacy)
    assert _user_version(new) == 0


def test_alembic_upgrade_head_from_the_checkout_does_the_same_as_lantern(tmp_path: Path) -> None:
    by_lantern = tmp_path / "by-lantern.db"
    by_alembic = tmp_path / "by-alembic.db"
    build_legacy_store(by_lantern, 2)
    build_legacy_store(by_alembic, 2)
    before = snapshot(by_alembic)
    _upgrade_with_cli(by_lantern)
    alembic_bin = Path(sys.executable).with_name("alembic")
    result = subprocess.run(
        [str(alembic_bin), "upgrade", "head"],
        cwd=REPO_ROOT,
        env={**os.environ, "LANTERN_DB": str(by_alembic)},
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert "backed up the store to" in result.stderr
    assert len(list(tmp_path.glob("by-alembic.db.backup-*"))) == 1
    assert _sqlite_schema(by_alembic) == _sqlite_schema(by_lantern)
    assert snapshot(by_alembic) == before


def test_alembic_x_db_argument_wins_over_the_environment(tmp_path: Path) -> None:
    named = tmp_path / "named.db"
    ignored = tmp_path / "ignored.db"
    build_legacy_store(named, 1, awkward=False)
    alembic_bin = Path(sys.executable).with_name("alembic")
    result = subprocess.run(
        [str(alembic_bin), "-x", f"db={named}", "upgrade", "head"],
        cwd=REPO_ROOT,
        env={**os.environ, "LANTERN_DB": str(ignored)},
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert not ignored.exists()
    with Lantern.open(named) as lt:
        assert lt.status().revision == migrations.HEAD


@pytest.mark.parametrize("generation", [1, 2])
def test_commands_refuse_a_legacy_store_until_it_is_upgraded(
    tmp_path: Path, generation: int
) -> None:
    path = tmp_path / "old store.db"
    build_legacy_store(path, generation, awkward=False)
    before = file_state(path)
    result = lantern_process("--db", str(path), "memory", "list")
    assert result.returncode == 5
    assert result.stderr.strip() == (
        f"Error: {path} is a legacy generation-{generation} store; upgrade it with: "
        f"lantern --db '{path}' db upgrade"
    )
    assert file_state(path) == before
    status = lantern_process("--db", str(path), "db", "status", "--json")
    assert status.returncode == 0, status.stderr
    assert json.loads(status.stdout) == {
        "url": f"sqlite+pysqlite:///{path}",
        "path": str(path),
        "size_bytes": path.stat().st_size,
        "revision": None,
        "head": migrations.HEAD,
        "legacy_generation": generation,
        "needs_upgrade": True,
        "embeddings": None,  # counted only on a current store
        "word_index": None,
        "vector_indexes": None,
    }
    assert file_state(path) == before


def test_a_failed_upgrade_leaves_the_old_schema(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "legacy.db"
    build_legacy_store(path, 1)
    schema = _sqlite_schema(path)
    before = snapshot(path)

    def fail(*_args: object, **_kwargs: object) -> None:
        raise RuntimeError("simulated failure after the first statements ran")

    monkeypatch.setattr(alembic.op, "create_index", fail)
    with pytest.raises(RuntimeError, match="simulated failure"):
        migrations.upgrade(resolve(str(path)))
    assert _sqlite_schema(path) == schema
    assert snapshot(path) == before
    monkeypatch.undo()
    with pytest.raises(SchemaMismatch):
        Lantern.open(path)
    _upgrade_with_cli(path)
    assert Lantern.open(path).status().revision == migrations.HEAD


def _write_sqlite(path: Path, *statements: str) -> None:
    conn = sqlite3.connect(path)
    try:
        for statement in statements:
            conn.execute(statement)
        conn.commit()
    finally:
        conn.close()


UNRECOGNISED = {
    "not-sqlite": (4, "is not a Lantern store"),
    "other-app": (4, "is not a Lantern store (an SQLite file with user_version 0 and tables"),
    "unknown-user-version": (4, "user_version 7"),
    "missing-table": (4, "is not a Lantern store"),
    "newer-lantern": (5, "was written by a newer Lantern (schema revision 9999"),
}


def _make_unrecognised(path: Path, case: str) -> None:
    if case == "not-sqlite":
        path.write_bytes(b"This is a plain text file, not a database.\n" * 100)
    elif case == "other-app":
        _write_sqlite(
            path, "CREATE TABLE bookmarks (url TEXT)", "INSERT INTO bookmarks VALUES ('x')"
        )
    elif case == "unknown-user-version":
        build_legacy_store(path, 1, awkward=False)
        _write_sqlite(path, "PRAGMA user_version = 7")
    elif case == "missing-table":
        build_legacy_store(path, 2, awkward=False)
        _write_sqlite(path, "DROP TABLE embeddings")
    elif case == "newer-lantern":
        Lantern.open(path).close()
        _write_sqlite(path, "UPDATE alembic_version SET version_num = '9999'")


@pytest.mark.parametrize("case", sorted(UNRECOGNISED))
@pytest.mark.parametrize(
    "command",
    [
        ["memory", "list"],
        ["db", "status"],
        ["db", "upgrade"],
        ["memory", "add", "--kind", "fact", "x"],
    ],
)
def test_unrecognised_files_are_refused_untouched(
    tmp_path: Path, case: str, command: list[str]
) -> None:
    path = tmp_path / "store.db"
    _make_unrecognised(path, case)
    before = file_state(path)
    code, message = UNRECOGNISED[case]
    result = lantern_process("--db", str(path), *command, "--json")
    assert result.returncode == code, result.stderr
    assert message in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
    assert "Traceback" not in result.stderr
    assert json.loads(result.stdout)["error"]["message"] in result.stderr
    assert file_state(path) == before
    assert not list(tmp_path.glob("store.db.backup-*"))


def test_upgrade_of_a_current_store_does_nothing_and_makes_no_backup(tmp_path: Path) -> None:
    path = tmp_path / "current.db"
    Lantern.open(path).close()
    report = _upgrade_with_cli(path)
    assert report == {
        "upgraded": False,
        "from_revision": migrations.HEAD,
        "to_revision": migrations.HEAD,
        "legacy_generation": None,
        "backup_path": None,
    }
    assert not list(tmp_path.glob("current.db.backup-*"))
