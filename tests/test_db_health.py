"""`lantern db check`, `db rebuild-index` and `db backup`: what they find, fix and copy."""

from __future__ import annotations

import errno
import json
import sqlite3
import stat
import threading
from pathlib import Path

import pytest
import sqlalchemy
from click.testing import CliRunner, Result

from alembic import command
from lantern.api import Lantern
from lantern.cli import cli
from lantern.maintenance.health import CHECKS
from lantern.store import migrations
from lantern.store.location import resolve
from tests.helpers import CliRun, ProcessRun, file_state, lantern_process
from tests.legacy_stores import build_legacy_store
from tests.memory_helpers import add_source, sql


def _cli(db: Path, *args: str) -> Result:
    """The CLI in-process on a SQLite store (for the tests about SQLite files)."""
    return CliRunner().invoke(cli, ["--db", str(db), *args])


NOT_BUILT = {
    "word_index": "no word index beside this store: its searches run in the database",
    "vector_index": "no vector index beside this store: semantic searches read the vectors",
}


def _healthy_checks(store_url: str) -> list[dict[str, object]]:
    """A healthy store's checks: a SQLite store's writes built its word index; it has no
    vectors, so no vector index; PostgreSQL has neither (`test_word_index.py` and
    `test_vector_index.py` check the indexes themselves)."""
    built = {"word_index"} if "://" not in store_url else set()
    return [
        {"name": name, "status": "skipped", "problems": [NOT_BUILT[name]]}
        if name in NOT_BUILT and name not in built
        else {"name": name, "status": "ok", "problems": []}
        for name in CHECKS
    ]


def _check(run_cli: CliRun) -> tuple[int, dict[str, object], str]:
    result = run_cli("db", "check", "--json")
    return result.exit_code, json.loads(result.stdout), result.stderr


def _failed(report: dict[str, object], status: str = "failed") -> dict[str, list[str]]:
    checks = report["checks"]
    assert isinstance(checks, list)
    return {c["name"]: c["problems"] for c in checks if c["status"] == status}


def test_a_healthy_store_checks_ok_with_the_documented_json(
    run_cli: CliRun, store_url: str
) -> None:
    with Lantern.open(store_url) as lt:
        _sid, chunks = add_source(lt, "file:///notes/a.md", ["one", "two"])
        lt.memory.add(kind="fact", content="cites a chunk", source_refs=[f"chunk:{chunks[0]}"])
        url = lt.location.display_url
        path = lt.location.path
    code, report, stderr = _check(run_cli)
    assert code == 0, stderr
    assert report == {
        "url": url,
        "path": None if path is None else str(path),
        "revision": migrations.HEAD,
        "healthy": True,
        "checks": _healthy_checks(store_url),
    }
    text = run_cli("db", "check")
    assert text.exit_code == 0
    assert text.stdout.splitlines()[0] == "integrity:           ok"


def test_problems_every_engine_can_have_are_found_and_listed(
    run_cli: CliRun, store_url: str
) -> None:
    with Lantern.open(store_url) as lt:
        _sid, chunks = add_source(lt, "file:///notes/a.md", ["one", "two"])
        record = lt.memory.add(kind="fact", content="x", source_refs=[f"chunk:{chunks[1]}"])
        other = lt.memory.add(kind="fact", content="y", source_refs=["session:s1"])
        sql(lt, "DELETE FROM chunks WHERE id = :id", id=chunks[1])
        sql(lt, "DELETE FROM memory_refs WHERE record_id = :id", id=other.id)
        sql(lt, "CREATE TABLE _alembic_tmp_chunks (id TEXT)")
    code, report, stderr = _check(run_cli)
    assert code == 4
    assert report["healthy"] is False
    assert _failed(report) == {
        "migration_leftovers": ["table _alembic_tmp_chunks was left by an interrupted migration"],
        "memory_refs": [f"{other.id} cites session:s1 but has no reference row for it"],
    }
    dangling = (
        f"{record.id} cites chunk:{chunks[1]}, which is not in the store (removed or "
        "re-ingested since; see memory check-refs)"
    )
    assert _failed(report, "warning") == {"references": [dangling]}
    warning, error = stderr.strip().splitlines()
    assert (
        warning
        == f"lantern: warnings about the store at {_where(store_url)}: references: {dangling}"
    )
    assert error.startswith("Error: the store at ") and "is not healthy: 2 problems" in error


def _where(store_url: str) -> str:
    return str(resolve(store_url).path or resolve(store_url).display_url)


def test_dangling_references_are_warnings_not_damage(
    run_cli: CliRun, run_lantern: ProcessRun, store_url: str
) -> None:
    """Evidence re-ingested or removed since, or a reference stored on purpose with
    --allow-dangling: what the caller stored, reported, with exit code 0."""
    with Lantern.open(store_url) as lt:
        lt.evidence.ingest_text("notes://a", "First version of the note.", kind="document")
        [chunk] = lt.evidence.get_source("notes://a").chunks or []
        cited = lt.memory.add(
            kind="fact", content="from the note", source_refs=[f"chunk:{chunk.id}"]
        )
        lt.evidence.ingest_text("notes://a", "Second version, all new.", kind="document")
        on_purpose = lt.memory.add(
            kind="fact",
            content="later",
            source_refs=["source:src_0000000000000001"],
            allow_dangling=True,
        )
    code, report, stderr = _check(run_cli)
    assert code == 0 and report["healthy"] is True
    assert _failed(report) == {}
    assert _failed(report, "warning") == {
        "references": sorted(
            [
                f"{cited.id} cites chunk:{chunk.id}, which is not in the store (removed or "
                "re-ingested since; see memory check-refs)",
                f"{on_purpose.id} cites source:src_0000000000000001, which is not in the store "
                "(removed or re-ingested since; see memory check-refs)",
            ]
        )
    }
    assert stderr.startswith(f"lantern: warnings about the store at {_where(store_url)}: ")
    text = run_lantern("db", "check")
    assert text.returncode == 0, text.stderr
    assert "references:          warning" in text.stdout.splitlines()


def test_identities_are_checked_and_rebuilt(run_cli: CliRun, store_url: str) -> None:
    with Lantern.open(store_url) as lt:
        damaged = lt.memory.add(kind="fact", content="one")
        cleared = lt.memory.add(kind="fact", content="two")
        sql(
            lt,
            "UPDATE memory_records SET identity_hash = 'ffffffffffffffff' WHERE id = :id",
            id=damaged.id,
        )
        sql(lt, "UPDATE memory_records SET identity_hash = NULL WHERE id = :id", id=cleared.id)
    code, report, _stderr = _check(run_cli)
    assert code == 4
    assert _failed(report) == {
        "memory_identity": [
            f"{damaged.id} has identity_hash ffffffffffffffff, but its scope, kind and content "
            f"give {damaged.id[4:]} (rebuild it with db rebuild-index)",
            f"{cleared.id} has no identity_hash, and no other record says what it says "
            "(rebuild it with db rebuild-index)",
        ]
    }
    assert run_cli("db", "rebuild-index").exit_code == 0
    assert _check(run_cli)[0] == 0
    with Lantern.open(store_url) as lt:
        assert lt.memory.get_or_add(kind="fact", content="one") == (damaged, False)
        assert lt.memory.get_or_add(kind="fact", content="two") == (cleared, False)


def test_sqlite_index_and_file_problems_are_found(db_path: Path) -> None:
    with Lantern.open(db_path) as lt:
        sid, _chunks = add_source(lt, "file:///notes/a.md", ["alpha", "bravo"])
        kept = lt.memory.add(kind="fact", content="kept")
        lost = lt.memory.add(kind="fact", content="lost from the index")
    conn = sqlite3.connect(db_path)
    conn.executescript(
        f"""
        DELETE FROM memory_fts WHERE record_id = '{lost.id}';
        INSERT INTO memory_fts (rowid, record_id, content) VALUES (7, 'mem_ghost', 'boo');
        DROP TRIGGER chunks_ai;
        INSERT INTO chunks (id, source_id, ordinal, text, created_at)
            VALUES ('chk_unindexed', '{sid}', 9, 'not in the index', 0);
        PRAGMA foreign_keys = OFF;
        INSERT INTO chunks (id, source_id, ordinal, text, created_at)
            VALUES ('chk_orphan', 'src_missing', 0, 'orphan', 0);
        """
    )
    conn.close()
    result = _cli(db_path, "db", "check", "--json")
    code, report = result.exit_code, json.loads(result.stdout)
    assert code == 4
    failed = _failed(report)
    assert failed["schema"] == ["trigger chunks_ai is missing"]
    assert failed["chunk_index"] == [
        "chunks_fts does not match its table: database disk image is malformed"
    ]
    assert failed["memory_index"] == [
        f"{lost.id} has no search row",
        "search row 7 ('mem_ghost') belongs to no record",
    ]
    assert failed["foreign_keys"] == ["chunks row 4 references a missing sources row"]
    assert kept.id not in json.dumps(failed)


def test_a_superseded_record_checks_clean(run_cli: CliRun, store_url: str) -> None:
    """`supersedes_id` refers to its own table; a record that replaces another is no orphan."""
    added = run_cli("memory", "add", "--kind", "fact", "The deadline is Friday.")
    assert added.exit_code == 0, added.stderr
    replaced = run_cli(
        "memory", "supersede", added.stdout.strip(), "--content", "The deadline is Monday."
    )
    assert replaced.exit_code == 0, replaced.stderr
    code, report, stderr = _check(run_cli)
    assert (code, _failed(report), stderr) == (0, {}, "")
    assert report["checks"] == _healthy_checks(store_url)


def _damage_without_foreign_keys(store_url: str, *statements: str) -> None:
    """Run `statements` as an old or careless tool could: SQLite with its foreign keys off,
    PostgreSQL after dropping the constraints of the tables they write to."""
    if "://" not in store_url:
        raw = sqlite3.connect(store_url)
        raw.executescript("PRAGMA foreign_keys = OFF;\n" + ";\n".join(statements))
        raw.close()
        return
    engine = sqlalchemy.create_engine(store_url)
    with engine.begin() as conn:
        for table in ("memory_records", "memory_refs"):
            for key in sqlalchemy.inspect(conn).get_foreign_keys(table):
                conn.exec_driver_sql(f"ALTER TABLE {table} DROP CONSTRAINT {key['name']}")
        for statement in statements:
            conn.exec_driver_sql(statement)
    engine.dispose()


def test_references_to_missing_rows_are_found_on_every_engine(
    run_cli: CliRun, store_url: str
) -> None:
    with Lantern.open(store_url) as lt:
        old = lt.memory.add(kind="fact", content="The deadline is Friday.")
        new = lt.memory.supersede(old.id, content="The deadline is Monday.")
        kept = lt.memory.add(kind="fact", content="Unrelated and sound.")
    _damage_without_foreign_keys(
        store_url,
        f"UPDATE memory_records SET supersedes_id = 'mem_missing' WHERE id = '{new.id}'",
        "INSERT INTO memory_refs (record_id, ref_type, ref_id) VALUES ('mem_gone', 'session', 's')",
    )
    code, report, _stderr = _check(run_cli)
    assert code == 4
    problems = _failed(report)["foreign_keys"]
    if "://" in store_url:
        assert problems == [
            f"memory_records row {new.id} references a missing memory_records row "
            "(supersedes_id = mem_missing)",
            "memory_refs row (mem_gone, session, s) references a missing memory_records row "
            "(record_id = mem_gone)",
        ]
    else:
        conn = sqlite3.connect(store_url)
        [(record_row,)] = conn.execute("SELECT rowid FROM memory_records WHERE id = ?", (new.id,))
        [(ref_row,)] = conn.execute("SELECT rowid FROM memory_refs WHERE record_id = 'mem_gone'")
        conn.close()
        assert sorted(problems) == [
            f"memory_records row {record_row} references a missing memory_records row",
            f"memory_refs row {ref_row} references a missing memory_records row",
        ]
    assert old.id not in json.dumps(problems) and kept.id not in json.dumps(problems)


def test_rebuild_index_repairs_what_check_found(run_cli: CliRun, store_url: str) -> None:
    with Lantern.open(store_url) as lt:
        add_source(lt, "file:///notes/a.md", ["alpha words", "bravo words"])
        record = lt.memory.add(kind="fact", content="findable words", source_refs=["session:s"])
        sql(lt, "DELETE FROM memory_refs")
        if lt.store.dialect == "sqlite":
            sql(lt, "DELETE FROM memory_fts")
            sql(lt, "INSERT INTO chunks_fts (chunks_fts) VALUES ('delete-all')")
    assert _check(run_cli)[0] == 4
    result = run_cli("db", "rebuild-index", "--json")
    assert result.exit_code == 0, result.stderr
    sqlite = "://" not in store_url
    assert json.loads(result.stdout) == {
        "indexes": [
            "chunk_search_text",
            "chunks_fts",
            "memory_fts",
            "memory_refs",
            "identity_hash",
            "word_index",
        ]
        if sqlite
        else ["chunk_search_text", "chunks", "memory_records", "memory_refs", "identity_hash"],
        "chunks": 2,
        "memories": 1,
        "references": 1,
        "search_texts": 0,
    }
    assert _check(run_cli)[0] == 0
    with Lantern.open(store_url) as lt:
        assert [m.record.id for m in lt.memory.search("findable")] == [record.id]
        assert len(lt.evidence.search("bravo")) == 1
        assert [r.id for r in lt.memory.citing("session:s")] == [record.id]


def test_check_reads_and_never_writes(db_path: Path) -> None:
    with Lantern.open(db_path) as lt:
        add_source(lt, "file:///notes/a.md", ["alpha", "bravo"])
        lt.memory.add(kind="fact", content="kept")
    before = file_state(db_path)
    result = lantern_process("--db", str(db_path), "db", "check")
    assert result.returncode == 0, result.stderr
    assert file_state(db_path) == before


def test_backup_copies_a_live_store_with_its_write_ahead_log(db_path: Path, tmp_path: Path) -> None:
    with Lantern.open(db_path) as lt:
        for n in range(50):
            lt.memory.add(kind="fact", content=f"before the copy {n}")
        # Another connection keeps the log from being checkpointed into the file.
        holder = sqlite3.connect(db_path)
        holder.execute("SELECT count(*) FROM memory_records").fetchone()
        assert db_path.with_name(db_path.name + "-wal").stat().st_size > 0
        target = tmp_path / "backups" / "copy.db"
        target.parent.mkdir()
        result = _cli(db_path, "db", "backup", str(target), "--json")
        holder.close()
    assert result.exit_code == 0, result.stderr
    assert json.loads(result.stdout) == {
        "path": str(target),
        "size_bytes": target.stat().st_size,
        "revision": migrations.HEAD,
    }
    assert stat.S_IMODE(target.stat().st_mode) == 0o600
    assert sorted(p.name for p in target.parent.iterdir()) == ["copy.db"]
    with Lantern.open(target) as copy:
        assert len(copy.memory.list(limit=100)) == 50
        assert copy.check().healthy


def test_backup_while_writers_write_is_one_consistent_snapshot(
    db_path: Path, tmp_path: Path
) -> None:
    Lantern.open(db_path).close()
    stop = threading.Event()

    def write() -> None:
        with Lantern.open(db_path) as lt:
            n = 0
            while not stop.is_set():
                lt.memory.add(kind="fact", content=f"written during the copy {n}")
                n += 1

    writer = threading.Thread(target=write)
    writer.start()
    try:
        copies = []
        for n in range(5):
            target = tmp_path / f"copy{n}.db"
            with Lantern.open(db_path) as lt:
                lt.backup(target)
            copies.append(target)
    finally:
        stop.set()
        writer.join()
    counts = []
    for target in copies:
        with Lantern.open(target) as copy:
            assert copy.check().healthy
            counts.append(len(copy.memory.list(limit=10_000)))
    assert counts == sorted(counts)


@pytest.mark.parametrize(
    ("target", "extra", "message"),
    [
        ("exists.db", [], "exists; replace it with --force"),
        ("store/lantern.db-wal", [], "is the store itself or one of its files"),
        ("store", [], "is a directory; give the path of the backup file"),
    ],
)
def test_backup_refusals(
    db_path: Path, tmp_path: Path, target: str, extra: list[str], message: str
) -> None:
    Lantern.open(db_path).close()
    (tmp_path / "exists.db").write_bytes(b"precious")
    result = _cli(db_path, "db", "backup", str(tmp_path / target), *extra)
    assert result.exit_code == 1
    assert message in result.stderr
    assert (tmp_path / "exists.db").read_bytes() == b"precious"


def test_backup_force_replaces(db_path: Path, tmp_path: Path) -> None:
    Lantern.open(db_path).close()
    (tmp_path / "exists.db").write_bytes(b"old")
    result = _cli(db_path, "db", "backup", str(tmp_path / "exists.db"), "--force")
    assert result.exit_code == 0, result.stderr
    with Lantern.open(tmp_path / "exists.db") as copy:
        assert copy.status().revision == migrations.HEAD


def test_backup_of_a_postgres_store_points_to_pg_dump(postgres_url: str, tmp_path: Path) -> None:
    Lantern.open(postgres_url).close()
    result = CliRunner().invoke(
        cli, ["--db", postgres_url, "db", "backup", str(tmp_path / "never-written.db")]
    )
    assert result.exit_code == 1
    assert "back up a PostgreSQL store with pg_dump" in result.stderr
    assert not (tmp_path / "never-written.db").exists()


def test_a_failed_copy_leaves_no_file_under_either_name(
    db_path: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The copy is made under a temporary name and renamed only once it is whole."""
    Lantern.open(db_path).close()

    def no_space(_path: Path) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr("lantern.store.migrations._fsync", no_space)
    result = _cli(db_path, "db", "backup", str(tmp_path / "copy.db"))
    assert result.exit_code == 6
    assert result.stderr.endswith("the disk is full; free some space and retry\n")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["store"]


def _structure_levels(db_path: Path) -> int:
    conn = sqlite3.connect(db_path)
    try:
        block = conn.execute("SELECT block FROM memory_fts_data WHERE id = 10").fetchone()[0]
    finally:
        conn.close()
    return int(block[4])  # one varint byte below 128 levels


def test_many_forgets_keep_the_search_index_within_what_fts5_accepts(
    db_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # SQLite before 3.42 adds a structure level at every `optimize` after a write and refuses
    # the index past 2,000: about 1,000 forgets on a store of a few hundred records. The
    # derived word index beside the store is left out: each forget would rebuild it.
    monkeypatch.setenv("LANTERN_INDEXES", "off")
    with Lantern.open(db_path) as lt:
        kept = lt.memory.add_many(
            [{"kind": "fact", "content": f"kept record {n} with several words"} for n in range(300)]
        )
        for n in range(1_100):
            record = lt.memory.add(kind="fact", content=f"secret number {n} to forget")
            lt.memory.forget(record.id)
            if n % 100 == 0:
                assert _structure_levels(db_path) <= 101
        assert len(lt.memory.search("kept", limit=500)) == len(kept)
        assert lt.memory.search("secret") == []
    assert _cli(db_path, "db", "check").exit_code == 0
    # Rebuilding instead of merging leaves no forgotten word behind either.
    for path in (db_path, db_path.with_name(db_path.name + "-wal")):
        if path.exists():
            assert b"secret" not in path.read_bytes()


def test_rebuild_index_repairs_an_index_fts5_refuses_for_too_many_levels(db_path: Path) -> None:
    with Lantern.open(db_path) as lt:
        record = lt.memory.add(kind="fact", content="findable words")
    # What SQLite before 3.42 left after about 1,000 forgets: 2,002 empty levels.
    broken = b"\x00\x00\x00\x01" + bytes([0x8F, 0x52, 0, 0]) + b"\x00\x00" * 2002
    conn = sqlite3.connect(db_path)
    conn.execute("UPDATE memory_fts_data SET block = ? WHERE id = 10", (broken,))
    conn.commit()
    conn.close()
    assert _cli(db_path, "db", "check").exit_code == 4
    added = _cli(db_path, "memory", "add", "--kind", "fact", "more words")
    assert added.exit_code == 4, added.output
    repaired = _cli(db_path, "db", "rebuild-index")
    assert repaired.exit_code == 0, repaired.output
    assert _cli(db_path, "db", "check").exit_code == 0
    with Lantern.open(db_path) as lt:
        assert [m.record.id for m in lt.memory.search("findable")] == [record.id]
        lt.memory.add(kind="fact", content="more words")


def test_an_older_store_is_checked_for_what_it_holds(tmp_path: Path) -> None:
    """A legacy store, and one at revision 0005: what they cannot hold yet is skipped."""
    legacy = tmp_path / "legacy.db"
    build_legacy_store(legacy, 1, awkward=False)
    result = _cli(legacy, "db", "check", "--json")
    assert result.exit_code == 0, result.output
    statuses = {
        c["name"]: (c["status"], c["problems"]) for c in json.loads(result.stdout)["checks"]
    }
    assert statuses["references"][0] == statuses["memory_identity"][0] == "skipped"
    older = tmp_path / "older.db"
    location = resolve(older)
    config = migrations.alembic_config(migrations._Options(location=location, backup=False))
    command.upgrade(config, "0005")
    result = _cli(older, "db", "check", "--json")
    assert result.exit_code == 0, result.output
    statuses = {
        c["name"]: (c["status"], c["problems"]) for c in json.loads(result.stdout)["checks"]
    }
    assert statuses["references"] == ("ok", [])
    assert statuses["memory_identity"] == (
        "skipped",
        ["the store is older than revision 0006 (upgrade it)"],
    )
