"""A full disk during add, ingest, import and upgrade: exit 6, nothing half-written, retry works.

Two ways to run out of space:

* `max_page_count`: every SQLite connection of the test process is capped (an engine `connect`
  listener) a few pages above the store's size; the commands run in-process (Click's runner).
* `tmpfs`: the store lives on a real small file system (mounted for the test; skipped where
  mounting is not allowed), whose free space a filler file takes; the commands run as the
  `lantern` executable. Here SQLite meets a real ENOSPC, in its write-ahead log or elsewhere.

Each time: the command fails with exit code 6 and one line saying the disk is full, the store
is healthy and holds nothing of the failed write, and the same command succeeds once space is
freed. The long tier repeats this at many fill levels. PostgreSQL's disk is the server's
business, so this is SQLite's alone.
"""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from sqlalchemy import event
from sqlalchemy.engine import Engine

from lantern.api import Lantern
from lantern.cli import cli
from tests.helpers import lantern_process
from tests.legacy_stores import build_legacy_store, snapshot
from tests.reliability.conftest import Figures
from tests.reliability.tools import Tier, assert_healthy

Run = Callable[..., tuple[int, str]]


class PageLimit:
    """Caps every new SQLite connection at the store's current size plus `slack` pages."""

    name = "max_page_count"

    def __init__(self, root: Path) -> None:
        self.root = root
        self._listener: Callable[..., None] | None = None

    def fill(self, store: Path, slack: int) -> None:
        reader = sqlite3.connect(f"{store.as_uri()}?mode=ro", uri=True)
        try:
            pages = reader.execute("PRAGMA page_count").fetchone()[0]
        finally:
            reader.close()

        def cap(dbapi_connection: sqlite3.Connection, _record: object) -> None:
            dbapi_connection.execute(f"PRAGMA max_page_count = {pages + slack}")

        self._listener = cap
        event.listen(Engine, "connect", cap)

    def free(self) -> None:
        if self._listener is not None:
            event.remove(Engine, "connect", self._listener)
            self._listener = None

    def run(self, store: Path, *args: str, input: str | None = None) -> tuple[int, str]:
        result = CliRunner().invoke(cli, ["--db", str(store), *args], input=input)
        assert result.exception is None or isinstance(result.exception, SystemExit), (
            result.exception
        )
        return result.exit_code, result.stderr


class SmallMount:
    """A tmpfs of a few megabytes; a filler file takes all but `slack` pages of it."""

    name = "tmpfs"

    def __init__(self, root: Path) -> None:
        self.root = root
        self.filler = root / "filler"

    def fill(self, store: Path, slack: int) -> None:
        block = b"\0" * 65536
        with open(self.filler, "wb") as handle:
            try:
                while True:
                    handle.write(block)
                    handle.flush()
            except OSError:
                pass
        # Give back `slack` pages, so a command can start but not finish its write.
        size = self.filler.stat().st_size
        os.truncate(self.filler, max(0, size - slack * 4096))

    def free(self) -> None:
        self.filler.unlink(missing_ok=True)

    def run(self, store: Path, *args: str, input: str | None = None) -> tuple[int, str]:
        done = lantern_process("--db", str(store), *args, input=input)
        return done.returncode, done.stderr


@contextmanager
def _space(kind: str, tmp_path: Path) -> Iterator[PageLimit | SmallMount]:
    if kind == "max_page_count":
        limit = PageLimit(tmp_path)
        try:
            yield limit
        finally:
            limit.free()
        return
    mount = tmp_path / "small"
    mount.mkdir()
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=6m,mode=0700", "tmpfs", str(mount)],
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        pytest.skip(f"cannot mount a small tmpfs here ({done.stderr.strip()})")
    try:
        yield SmallMount(mount)
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)


def _memory_ids(store: Path) -> list[str]:
    with Lantern.open(store) as lt:
        return sorted(r.id for r in lt.memory.list(status="all", limit=10_000))


def _sources(store: Path) -> list[str]:
    with Lantern.open(store) as lt:
        return sorted(s.uri for s in lt.evidence.list_sources(limit=10_000))


def _schema_and_rows(store: Path) -> tuple[object, ...]:
    with Lantern.open(store, require_current=False) as lt:
        status = lt.status()
    return status.revision, status.legacy_generation, snapshot(store)


def _export(tmp: Path) -> Path:
    """An export of 300 records of about 1 KB each, made in a scratch store."""
    scratch = tmp / "scratch.db"
    with Lantern.open(scratch) as lt:
        for n in range(300):
            lt.memory.add(kind="fact", content=f"imported record {n} " + "filler words " * 80)
        path = tmp / "export.jsonl"
        with open(path, "wb") as out:
            lt.export_jsonl(out)
    return path


def _scenarios(tmp: Path) -> dict[str, dict[str, Any]]:
    big = tmp / "big.md"
    big.write_text("# Big\n\n" + "\n\n".join(f"paragraph {n} " * 60 for n in range(900)))
    return {
        "add": {
            "args": ["memory", "add", "--kind", "fact", "-"],
            "input": "a long memory " * 7_000,
            "before": _memory_ids,
        },
        "ingest": {"args": ["ingest", str(big)], "before": _sources},
        "import": {"args": ["import", str(_export(tmp))], "before": _memory_ids},
        "upgrade": {"args": ["db", "upgrade"], "before": _schema_and_rows},
    }


@pytest.mark.parametrize("kind", ["max_page_count", "tmpfs"])
def test_a_full_disk_fails_cleanly_and_the_retry_succeeds(
    tmp_path: Path, tier: Tier, figures: Figures, kind: str
) -> None:
    work = tmp_path / "work"
    work.mkdir()
    scenarios = _scenarios(work)
    slacks = [1] if tier.name == "quick" else [0, 1, 2, 4, 8, 16, 32, 64]
    outcomes: list[str] = []
    with _space(kind, tmp_path) as space:
        for slack in slacks:
            for name, scenario in scenarios.items():
                store = space.root / f"{name}-{slack}.db"
                if name == "upgrade":
                    # Without the awkward rows, whose deletions leave free pages that the new
                    # tables would fill without growing the file.
                    build_legacy_store(store, 2, awkward=False, n_sources=200, wal_pending=True)
                else:
                    Lantern.open(store).close()
                before = scenario["before"](store)
                space.fill(store, slack)
                try:
                    code, stderr = space.run(store, *scenario["args"], input=scenario.get("input"))
                finally:
                    space.free()
                if code == 0:
                    # Enough room after all (a generous slack): the write must then be whole.
                    assert_healthy(str(store))
                    outcomes.append(f"{name}: fit")
                    continue
                assert code == 6, stderr
                lines = stderr.strip().splitlines()
                assert len(lines) == 1 and "Traceback" not in stderr, stderr
                said = lines[0].replace(str(space.root), "ROOT")
                assert "is full; free some space and retry" in said, said
                for leftover in space.root.glob(".*partial*"):
                    leftover.unlink()  # a backup copy that the full disk cut short
                assert scenario["before"](store) == before, f"{name} wrote part of its data"
                assert_healthy(str(store))
                retried, stderr = space.run(store, *scenario["args"], input=scenario.get("input"))
                assert retried == 0, stderr
                assert scenario["before"](store) != before
                assert_healthy(str(store))
                outcomes.append(f"{name}: exit 6 ({said[7:80]}...), retried ok")
                for path in space.root.iterdir():
                    if path.name.startswith((f"{name}-{slack}.db",)):
                        # The store's files, and the directory of its derived indexes.
                        shutil.rmtree(path) if path.is_dir() else path.unlink()
    figures(
        f"{kind}, {len(slacks)} fill level(s) x {len(scenarios)} commands: "
        f"{sum('exit 6' in o for o in outcomes)} failed with exit 6 leaving the store healthy "
        f"and unchanged, then succeeded on retry; {sum('fit' in o for o in outcomes)} fit. "
        + "; ".join(outcomes[:4])
    )
    assert any("exit 6" in outcome for outcome in outcomes)


def test_disk_full_json_error_is_one_object(tmp_path: Path) -> None:
    """With --json the failure is also a JSON object on stdout, as for every error."""
    store = tmp_path / "store.db"
    Lantern.open(store).close()
    limit = PageLimit(tmp_path)
    limit.fill(store, 1)
    try:
        result = CliRunner().invoke(
            cli, ["--db", str(store), "memory", "add", "--kind", "fact", "--json", "-"],
            input="words " * 16_000,
        )  # fmt: skip
    finally:
        limit.free()
    assert result.exit_code == 6
    assert json.loads(result.stdout)["error"]["code"] == "io_error"
