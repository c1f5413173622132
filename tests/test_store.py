"""The store itself: where it is, how SQLite is configured, and how writers share it."""

from __future__ import annotations

import gc
import json
import os
import sqlite3
import stat
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result
from sqlalchemy import event

from lantern.api import Lantern
from lantern.cli import cli
from lantern.errors import InvalidInput, NoStore, NotAStore, NotFound
from lantern.store import migrations
from lantern.store.location import default_path, resolve
from tests.helpers import command_paths, lantern_process


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_location_order_flag_then_environment_then_default(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert resolve().path == tmp_path / "xdg-data" / "lantern" / "lantern.db"
    monkeypatch.delenv("XDG_DATA_HOME")
    assert default_path() == tmp_path / "home" / ".local" / "share" / "lantern" / "lantern.db"
    monkeypatch.setenv("LANTERN_DB", str(tmp_path / "env.db"))
    assert resolve().path == tmp_path / "env.db"
    assert resolve(tmp_path / "flag.db").path == tmp_path / "flag.db"


def test_paths_and_urls(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    assert resolve("relative.db").path == tmp_path / "relative.db"
    assert resolve("~/x.db").path == tmp_path / "home" / "x.db"
    assert resolve(f"sqlite:///{tmp_path}/url.db").path == tmp_path / "url.db"
    postgres = resolve("postgresql://me:secret@db.example/lantern")
    assert postgres.path is None
    assert postgres.url.startswith("postgresql+psycopg://me:secret@")
    assert "secret" not in postgres.display_url


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("", "the store location is empty"),
        ("mysql://u@h/db", "unsupported database 'mysql'"),
        ("sqlite://", "in-memory"),
        ("sqlite:///:memory:", "in-memory"),
        ("postgresql+asyncpg://u@h/db", "psycopg 3 driver"),
        ("not a url://x", "not a valid database URL"),
    ],
)
def test_bad_locations_are_refused(value: str, message: str) -> None:
    with pytest.raises(InvalidInput, match=message):
        resolve(value)


def test_default_store_is_created_with_private_modes(tmp_path: Path) -> None:
    os.umask(0o022)
    result = lantern_process("memory", "add", "--kind", "fact", "in the default store")
    assert result.returncode == 0, result.stderr
    store = tmp_path / "xdg-data" / "lantern" / "lantern.db"
    assert store.exists()
    assert _mode(store) == 0o600
    assert _mode(store.parent) == 0o700
    assert _mode(store.parent.parent) == 0o700


def test_wal_and_shm_files_are_owner_only(db_path: Path) -> None:
    os.umask(0o022)
    with Lantern.open(db_path) as lt:
        lt.memory.add(kind="fact", content="one")
        reader = sqlite3.connect(db_path)
        reader.execute("SELECT count(*) FROM memory_records").fetchone()
        companions = [db_path.with_name(db_path.name + s) for s in ("-wal", "-shm")]
        assert all(p.exists() for p in companions)
        assert [_mode(p) for p in (db_path, *companions)] == [0o600, 0o600, 0o600]
        reader.close()


def test_existing_directory_modes_are_left_alone(tmp_path: Path) -> None:
    shared = tmp_path / "shared"
    shared.mkdir(mode=0o755)
    Lantern.open(shared / "x.db").close()
    assert _mode(shared) == 0o755


def test_sqlite_settings(db_path: Path) -> None:
    with Lantern.open(db_path) as lt, lt.store.read() as conn:

        def pragma(name: str) -> Any:
            return conn.exec_driver_sql(f"PRAGMA {name}").scalar_one()

        assert pragma("journal_mode") == "wal"
        assert pragma("foreign_keys") == 1
        assert pragma("busy_timeout") >= 5000
        assert pragma("synchronous") == 1  # NORMAL


def _no_other_connection(path: Path) -> bool:
    """True if nothing else has the file open: only then can the journal mode leave WAL."""
    probe = sqlite3.connect(path, isolation_level=None, timeout=0)
    try:
        return str(probe.execute("PRAGMA journal_mode = DELETE").fetchone()[0]) == "delete"
    except sqlite3.OperationalError as exc:
        assert "locked" in str(exc)
        return False
    finally:
        probe.close()


def _busy_threads(lt: Lantern, threads: int = 6, calls: int = 30) -> None:
    """Reads, writes and failing writes from several threads at once."""

    def work(worker: int) -> None:
        for i in range(calls):
            record = lt.memory.add(kind="fact", scope=f"t:{worker}", content=f"call {i}")
            lt.memory.list(scope=[f"t:{worker}"], limit=5)
            lt.memory.get(record.id)
            with pytest.raises(InvalidInput):
                lt.memory.update(record.id, priority=101)

    pool = [threading.Thread(target=work, args=(n,)) for n in range(threads)]
    for thread in pool:
        thread.start()
    for thread in pool:
        thread.join()


def test_connections_of_many_threads_are_all_released_on_close(db_path: Path) -> None:
    lt = Lantern.open(db_path)
    _busy_threads(lt)
    assert len(lt.memory.list(status="all", limit=1000)) == 6 * 30
    assert not _no_other_connection(db_path)
    lt.close()
    assert _no_other_connection(db_path)


def test_transactions_in_turn_reuse_one_connection_of_each_kind(db_path: Path) -> None:
    with Lantern.open(db_path) as lt:
        checkouts: list[object] = []
        event.listen(lt.store.engine, "checkout", lambda *args: checkouts.append(args))
        for i in range(50):
            record = lt.memory.add(kind="fact", content=f"turn {i}")
            lt.memory.get(record.id)
            lt.memory.list(limit=5)
        with pytest.raises(NotFound):  # inside a write transaction: that connection goes
            lt.memory.archive("mem_0000000000000000")
        lt.memory.archive(record.id)
    # At most one for reads, one for writes and one to replace the write connection that
    # failed, where a checkout per transaction would make over 150.
    assert len(checkouts) <= 3


def test_a_store_dropped_without_close_releases_its_connections(db_path: Path) -> None:
    from lantern.memory import topk

    lt = Lantern.open(db_path)
    _busy_threads(lt, threads=2, calls=5)
    del lt
    for worker in list(topk._workers.values()):  # the catch-ups the writes started
        worker.join()
    gc.collect()
    assert _no_other_connection(db_path)


def test_a_command_closes_the_store_before_its_process_exits(db_path: Path) -> None:
    # The last connection to close checkpoints the WAL and deletes it: nothing is left for
    # the interpreter's exit to finalize (the CLI skips its last full collection).
    for args in (("memory", "add", "--kind", "fact", "closed"), ("memory", "list", "--json")):
        result = lantern_process("--db", str(db_path), *args)
        assert result.returncode == 0, result.stderr
        assert not db_path.with_name(db_path.name + "-wal").exists(), args
    assert _no_other_connection(db_path)


def test_a_directory_is_not_a_store(tmp_path: Path) -> None:
    with pytest.raises(InvalidInput, match="is a directory"):
        Lantern.open(tmp_path)


def test_an_empty_file_becomes_a_private_store(tmp_path: Path) -> None:
    path = tmp_path / "empty.db"
    path.touch(mode=0o644)
    os.chmod(path, 0o644)
    with Lantern.open(path) as lt:
        assert lt.status().revision is not None
        lt.memory.add(kind="fact", content="private")
        assert _mode(path.with_name("empty.db-wal")) == 0o600
    assert _mode(path) == 0o600


def test_a_relative_xdg_data_home_is_ignored(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    default = tmp_path / "home" / ".local" / "share" / "lantern" / "lantern.db"
    for relative in ("data", "./data", "~data"):
        monkeypatch.setenv("XDG_DATA_HOME", relative)
        assert default_path() == default, relative
    monkeypatch.setenv("XDG_DATA_HOME", "")
    assert default_path() == default
    result = lantern_process(
        "memory", "add", "--kind", "fact", "x", env={"XDG_DATA_HOME": "data"}, cwd=tmp_path
    )
    assert result.returncode == 0, result.stderr
    assert default.exists() and not (tmp_path / "data").exists()


ID = "mem_0000000000000001"
# Every command, with arguments it accepts, by what it does to a store that is not there yet.
# (`mcp` serves a store, tested in tests/test_mcp_restrictions.py; its token commands keep a
# file of tokens and touch no store.)
ONLY_READ = [
    ("memory", "list"),
    ("memory", "search", "x"),
    ("memory", "show", ID),
    ("memory", "history", ID),
    ("memory", "similar", ID),
    ("memory", "cites", "session:s"),
    ("memory", "check-refs"),
    ("memory", "expire", "--dry-run"),
    ("memory", "changes"),
    ("memory", "stats"),
    ("search", "x"),
    ("source", "list"),
    ("source", "show", "src_0000000000000001"),
    ("chunk", "show", "chk_0000000000000001"),
    ("inspect",),
    ("export",),
    ("db", "status"),
    ("db", "check"),
    ("db", "settings"),
    ("db", "backup", "{tmp}/copy.db"),
    ("entity", "list"),
    ("entity", "show", "url:https://example.org"),
    ("ui", "--port", "0"),  # the web view: it would serve the store, read-only
]
CHANGE_WHAT_IS_STORED = [
    ("memory", "update", ID, "--priority", "1"),
    ("memory", "supersede", ID, "--content", "y"),
    ("memory", "archive", ID),
    ("memory", "restore", ID),
    ("memory", "expire"),
    ("memory", "forget", ID, "--yes"),
    ("source", "remove", "src_0000000000000001"),
    ("db", "rebuild-index"),
    ("db", "settings", "--default-model", "hashing"),
    ("embed", "--model", "hashing"),
    ("entity", "attach", "url:https://example.org", "--memory", ID),
    ("entity", "detach", "url:https://example.org", "--memory", ID),
    ("entity", "extract"),
]
ADD = [
    ("memory", "add", "--kind", "fact", "x"),
    ("ingest", "{tmp}/notes.md"),
    ("import", "{tmp}/export.jsonl"),
    ("db", "upgrade"),
]


def test_every_command_is_classified() -> None:
    classified = {
        args[:2] if args[0] in ("memory", "db", "source", "chunk", "entity") else args[:1]
        for args in ONLY_READ + CHANGE_WHAT_IS_STORED + ADD
    }
    assert {path for path in command_paths(cli) if path[0] != "mcp"} == classified


def _run(store: str | Path, *args: str) -> Result:
    return CliRunner().invoke(cli, ["--db", str(store), *args])


@pytest.mark.parametrize("args", ONLY_READ + CHANGE_WHAT_IS_STORED, ids=" ".join)
def test_commands_that_add_nothing_never_create_a_store(
    store_url: str, tmp_path: Path, args: tuple[str, ...]
) -> None:
    argv = [arg.format(tmp=tmp_path) for arg in args]
    missing = tmp_path / "typo" / "lantern.db"
    empty = tmp_path / "empty.db"
    empty.touch()
    os.chmod(empty, 0o644)
    postgres = "://" in store_url
    stores = [(str(missing), "nothing is there"), (str(empty), "it is empty")]
    stores.append((store_url, "it is empty" if postgres else "nothing is there"))
    as_json = [] if args[0] in ("export", "ui") else ["--json"]
    for store, why in stores:
        result = _run(store, *argv, *as_json)
        assert result.exit_code == NoStore.exit_code, (store, result.output)
        where = resolve(store).display_url if postgres and store == store_url else store
        assert result.stderr.startswith(f"Error: no Lantern store at {where} ({why}); ")
        if as_json:
            assert json.loads(result.stdout)["error"]["code"] == "no_store"
    assert not missing.parent.exists() and not (tmp_path / "copy.db").exists()
    assert (empty.stat().st_size, _mode(empty)) == (0, 0o644)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["empty.db"]
    if postgres:  # the empty schema was left empty
        with pytest.raises(NoStore):
            Lantern.open(store_url, create=False)


@pytest.mark.parametrize("args", ADD, ids=" ".join)
def test_commands_that_add_create_a_private_store(tmp_path: Path, args: tuple[str, ...]) -> None:
    (tmp_path / "notes.md").write_text("# Notes\n\nSomething to keep.\n", encoding="utf-8")
    (tmp_path / "export.jsonl").write_text('{"type":"lantern_export","format":1}\n')
    argv = [arg.format(tmp=tmp_path) for arg in args]
    os.umask(0o022)
    missing = tmp_path / "new" / "lantern.db"
    empty = tmp_path / "empty.db"
    empty.touch()
    os.chmod(empty, 0o644)
    for store in (missing, empty):
        result = _run(store, *argv)
        assert result.exit_code == 0, result.output
        assert _mode(store) == 0o600
        with Lantern.open(store, create=False) as lt:
            assert lt.status().revision == migrations.HEAD
    assert _mode(missing.parent) == 0o700


def test_the_real_executable_reports_no_store_and_creates_one_only_to_add(tmp_path: Path) -> None:
    store = tmp_path / "newplace" / "a.db"
    for args in (("db", "status"), ("memory", "list"), ("memory", "archive", ID)):
        result = lantern_process("--db", str(store), *args)
        assert result.returncode == 8, result.stderr
        assert result.stderr.startswith(f"Error: no Lantern store at {store} (nothing is there)")
    assert not store.parent.exists()
    added = lantern_process("--db", str(store), "memory", "add", "--kind", "fact", "first")
    assert added.returncode == 0, added.stderr
    listed = lantern_process("--db", str(store), "memory", "list", "--json")
    assert [r["content"] for r in json.loads(listed.stdout)] == ["first"]


def test_garbage_file_is_not_a_store(tmp_path: Path) -> None:
    path = tmp_path / "garbage.db"
    path.write_bytes(os.urandom(4096))
    with pytest.raises(NotAStore):
        Lantern.open(path)


def test_reads_never_wait_for_a_writer(db_path: Path) -> None:
    with Lantern.open(db_path) as lt:
        lt.memory.add(kind="fact", content="visible")
    holder = sqlite3.connect(db_path, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")
    holder.execute(
        "INSERT INTO memory_records (id, kind, content, created_at, updated_at) "
        "VALUES ('mem_uncommitted', 'fact', 'not yet', 0, 0)"
    )
    try:
        # A read that waited for the lock would wait out the busy timeout, set to one second
        # here, and fail with exit code 3: success is the proof that it did not wait.
        result = lantern_process(
            "--db", str(db_path), "memory", "list", "--json", env={"LANTERN_BUSY_TIMEOUT": "1"}
        )
        assert result.returncode == 0, result.stderr
        assert '"visible"' in result.stdout and "not yet" not in result.stdout
    finally:
        holder.execute("ROLLBACK")
        holder.close()


def test_a_writer_waits_for_another_writer_instead_of_failing(db_path: Path) -> None:
    with Lantern.open(db_path):
        pass
    holder = sqlite3.connect(db_path, isolation_level=None, check_same_thread=False)
    holder.execute("BEGIN IMMEDIATE")
    release = threading.Timer(1.5, lambda: holder.execute("COMMIT"))
    release.start()
    try:
        result = lantern_process("--db", str(db_path), "memory", "add", "--kind", "fact", "later")
    finally:
        release.join()
        holder.close()
    assert result.returncode == 0, result.stderr


def test_concurrent_writer_processes_lose_nothing(db_path: Path) -> None:
    with Lantern.open(db_path):
        pass
    script = (
        "import sys\n"
        "from lantern import Lantern\n"
        "with Lantern.open(sys.argv[1]) as lt:\n"
        "    for n in range(40):\n"
        "        lt.memory.add(kind='observation', scope='w' + sys.argv[2], content=f'{n}')\n"
    )
    workers = [
        subprocess.Popen(
            [sys.executable, "-c", script, str(db_path), str(w)], stderr=subprocess.PIPE
        )
        for w in range(4)
    ]
    errors = [worker.communicate(timeout=120)[1] for worker in workers]
    assert [worker.returncode for worker in workers] == [0, 0, 0, 0], errors
    with Lantern.open(db_path) as lt:
        assert len(lt.memory.list(limit=1000)) == 160
