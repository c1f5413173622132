"""Every command against a store that is not what it should be: a documented exit code, one
line on stderr, no traceback, and the file exactly as it was (bytes and modification time).

The cases: a file that is not SQLite; another application's SQLite database; a Lantern store
written by a newer Lantern; a store truncated inside its schema, and one truncated inside its
data; a store on a read-only file system (a read-only bind mount); a store file marked
immutable (`chattr +i`). The tests run as root, for whom permission bits do not stop a write,
so the two read-only cases use what stops root too; each is skipped where it cannot be set up.

The commands run in-process (Click's runner) for every case; each case also runs once through
the `lantern` executable.
"""

from __future__ import annotations

import contextlib
import shutil
import sqlite3
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from lantern.api import Lantern
from lantern.cli import cli
from tests.helpers import command_at, command_paths, file_state, lantern_process
from tests.reliability.conftest import Figures

# Commands that are not about a store: the token commands touch the token file alone (the MCP
# server itself, the `mcp` group's own command, is tested with its client).
NOT_STORE_COMMANDS = {("mcp", "token", "add"), ("mcp", "token", "list"), ("mcp", "token", "revoke")}
# The web view serves until stopped; tests/test_ui_server.py starts it on missing, legacy and
# hostile stores, and its pages run the reading calls this test makes through the CLI.
SERVING_COMMANDS = {("ui",)}

READS, WRITES = "reads", "writes"


def _commands(ids: dict[str, str], tmp: Path) -> dict[tuple[str, ...], tuple[str, list[str]]]:
    """Every leaf command with valid arguments for the prepared store, and whether it writes."""
    export = tmp / "in.jsonl"
    scratch = tmp / "scratch.db"
    with Lantern.open(scratch) as lt, open(export, "wb") as out:
        lt.memory.add(kind="fact", content="an imported memory")
        lt.export_jsonl(out)
    notes = tmp / "notes"
    notes.mkdir(exist_ok=True)
    (notes / "n.md").write_text("# N\n\nhostile stores\n")
    record, source, chunk = ids["record"], ids["source"], ids["chunk"]
    return {
        ("chunk", "show"): (READS, [chunk]),
        ("db", "backup"): (READS, [str(tmp / "copies" / "backup.db")]),
        ("db", "check"): (READS, []),
        ("db", "rebuild-index"): (WRITES, []),
        ("db", "settings"): (READS, []),
        ("db", "status"): (READS, []),
        # A current store: nothing to upgrade, so nothing is written.
        ("db", "upgrade"): (READS, ["--no-backup"]),
        ("embed",): (WRITES, []),
        ("entity", "attach"): (WRITES, ["project:lamp", "--memory", record]),
        ("entity", "detach"): (WRITES, ["project:lantern", "--memory", record]),
        # Ingest scanned every chunk: nothing left to read, nothing to write.
        ("entity", "extract"): (READS, []),
        ("entity", "list"): (READS, []),
        ("entity", "show"): (READS, ["project:lantern"]),
        ("export",): (READS, []),
        ("import",): (WRITES, [str(export)]),
        ("ingest",): (WRITES, [str(notes)]),
        ("inspect",): (READS, []),
        ("memory", "add"): (WRITES, ["--kind", "fact", "a new memory"]),
        ("memory", "archive"): (WRITES, [record]),
        ("memory", "changes"): (READS, []),
        ("memory", "check-refs"): (READS, []),
        ("memory", "cites"): (READS, ["session:s1"]),
        ("memory", "expire"): (READS, []),  # nothing has expired: nothing to write
        ("memory", "forget"): (WRITES, [record, "--yes"]),
        ("memory", "history"): (READS, [record]),
        ("memory", "list"): (READS, []),
        ("memory", "restore"): (READS, [record]),  # an active record: nothing to write
        ("memory", "search"): (READS, ["lantern"]),
        ("memory", "show"): (READS, [record]),
        ("memory", "similar"): (READS, [record]),
        ("memory", "stats"): (READS, []),
        ("memory", "supersede"): (WRITES, [record, "--content", "replaced"]),
        ("memory", "update"): (WRITES, [record, "--priority", "61"]),
        ("search",): (READS, ["hostile"]),
        ("source", "list"): (READS, []),
        ("source", "remove"): (WRITES, [source]),
        ("source", "show"): (READS, [source]),
    }


def _healthy_store(path: Path, tmp: Path) -> dict[str, str]:
    with Lantern.open(path) as lt:
        record = lt.memory.add(
            kind="fact", content="lantern keeps this", source_refs=["session:s1"]
        )
        lt.memory.attach_entities(record.id, ["project:lantern"])
        notes = tmp / "seed.md"
        notes.write_text("# Seed\n\nhostile seed text\n")
        summary = lt.evidence.ingest_path([notes])
        source = summary.sources[0].source
        chunks = lt.evidence.get_source(source.id).chunks
        assert chunks
        chunk = chunks[0]
    return {"record": record.id, "source": source.id, "chunk": chunk.id}


def _sqlite(path: Path, *statements: str) -> None:
    conn = sqlite3.connect(path)
    try:
        for statement in statements:
            conn.execute(statement)
        conn.commit()
    finally:
        conn.close()


@contextlib.contextmanager
def _read_only_mount(directory: Path) -> Iterator[None]:
    done = subprocess.run(
        ["mount", "--bind", "-o", "ro", str(directory), str(directory)],
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        pytest.skip(f"cannot make a read-only bind mount here ({done.stderr.strip()})")
    try:
        yield
    finally:
        subprocess.run(["umount", "-l", str(directory)], check=False)


@contextlib.contextmanager
def _immutable(path: Path) -> Iterator[None]:
    done = subprocess.run(["chattr", "+i", str(path)], capture_output=True, text=True, check=False)
    if done.returncode != 0:
        pytest.skip(f"cannot mark a file immutable here ({done.stderr.strip()})")
    try:
        yield
    finally:
        subprocess.run(["chattr", "-i", str(path)], check=False)


# What each case answers: an exit code for every command, or one for reads and one for writes.
CASES: dict[str, dict[str, tuple[int, ...]]] = {
    "not-sqlite": {READS: (4,), WRITES: (4,)},
    "other-application": {READS: (4,), WRITES: (4,)},
    "newer-lantern": {READS: (5,), WRITES: (5,)},
    "truncated-schema": {READS: (4,), WRITES: (4,)},
    # Pages past the cut read as zeros: what a command touches decides between a result and 4;
    # `db check` reads every page and always says 4.
    "truncated-data": {READS: (0, 4), WRITES: (4,)},
    "read-only-mount": {READS: (6,), WRITES: (6,)},
    "immutable-file": {READS: (0,), WRITES: (6,)},
}


@contextlib.contextmanager
def _hostile(case: str, path: Path, tmp: Path) -> Iterator[dict[str, str]]:
    ids = {"record": "mem_0000000000000000", "source": "src_0", "chunk": "chk_0"}
    if case == "not-sqlite":
        path.write_bytes(b"Dear diary, today I wrote a file that is not a database.\n" * 200)
    elif case == "other-application":
        _sqlite(path, "CREATE TABLE bookmarks (url TEXT)", "INSERT INTO bookmarks VALUES ('x')")
    else:
        ids = _healthy_store(path, tmp)
    if case == "newer-lantern":
        _sqlite(path, "UPDATE alembic_version SET version_num = '9999'")
    elif case == "truncated-schema":
        with open(path, "r+b") as handle:
            handle.truncate(2048)
    elif case == "truncated-data":
        with open(path, "r+b") as handle:
            handle.truncate(path.stat().st_size // 2)
    if case == "read-only-mount":
        with _read_only_mount(path.parent):
            yield ids
    elif case == "immutable-file":
        with _immutable(path):
            yield ids
    else:
        yield ids


def _takes_json(command: tuple[str, ...]) -> bool:
    return any(param.name == "as_json" for param in command_at(cli, command).params)


def _invoke(path: Path, command: tuple[str, ...], args: list[str]) -> tuple[int, str, str]:
    flags = ["--json"] if _takes_json(command) else []
    result = CliRunner().invoke(cli, ["--db", str(path), *command, *args, *flags])
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise AssertionError(f"{command}: {result.exception!r}") from result.exception
    return result.exit_code, result.stdout, result.stderr


@pytest.mark.parametrize("case", sorted(CASES))
def test_every_command_on_a_hostile_store(tmp_path: Path, figures: Figures, case: str) -> None:
    # One tier: a single pass shows it (the issue asks nothing more of a long tier here).
    directory = tmp_path / "store"
    directory.mkdir()
    path = directory / "lantern.db"
    (tmp_path / "copies").mkdir()
    with _hostile(case, path, tmp_path) as ids:
        commands = _commands(ids, tmp_path)
        every_command = set(command_paths(cli))
        tested = set(commands) | NOT_STORE_COMMANDS | SERVING_COMMANDS
        assert tested == every_command, "a command is untested"
        before = file_state(path)
        listing = sorted(p.name for p in directory.iterdir())
        seen: dict[int, int] = {}
        for command, (kind, args) in commands.items():
            code, stdout, stderr = _invoke(path, command, args)
            expected = CASES[case][kind]
            if case == "truncated-data" and command == ("db", "check"):
                expected = (4,)
            assert code in expected, f"{' '.join(command)}: exit {code}, {stderr!r}"
            assert "Traceback" not in stderr + stdout
            if code:
                lines = stderr.strip().splitlines()
                assert len(lines) == 1 and lines[0].startswith("Error: "), (command, stderr)
            assert file_state(path) == before, f"{' '.join(command)} changed the store file"
            seen[code] = seen.get(code, 0) + 1
            for copy in (tmp_path / "copies").iterdir():
                copy.unlink()
        # The executable too, once per case.
        done = lantern_process("--db", str(path), "memory", "list")
        assert done.returncode in CASES[case][READS], done.stderr
        assert "Traceback" not in done.stderr
        assert file_state(path) == before
        left = sorted(p.name for p in directory.iterdir() if not p.name.endswith(("-wal", "-shm")))
        assert left == [name for name in listing if not name.endswith(("-wal", "-shm"))]
    figures(
        f"{case}: {len(commands)} commands, exit codes "
        f"{', '.join(f'{code}: {n}' for code, n in sorted(seen.items()))}; one-line errors, "
        "no traceback, file bytes and mtime unchanged"
    )


def test_read_only_messages_name_the_cause(tmp_path: Path) -> None:
    """A store that cannot be written says so, rather than calling itself corrupt."""
    directory = tmp_path / "store"
    directory.mkdir()
    path = directory / "lantern.db"
    _healthy_store(path, tmp_path)
    with _read_only_mount(directory):
        code, _out, stderr = _invoke(path, ("memory", "list"), [])
    assert code == 6
    assert "read-only file system or in a directory that cannot be written" in stderr
    with _immutable(path):
        code, _out, stderr = _invoke(path, ("memory", "add"), ["--kind", "fact", "x"])
    assert code == 6
    assert "is read-only" in stderr
    shutil.rmtree(tmp_path / "store", ignore_errors=True)
