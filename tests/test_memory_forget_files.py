"""`memory forget` removes the content from the SQLite files: main file, -wal and -shm.

PostgreSQL keeps dead row versions and its own write-ahead log on the server, outside what a
client can scrub (docs/memory.md, "Forgetting"), so these checks are SQLite's alone.
"""

from __future__ import annotations

import contextlib
import json
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import event

from lantern.api import Lantern
from lantern.memory.repository import MemoryRepository
from tests.helpers import ProcessRun

SECRET = "Top SECRET: the vault code is zqxjkvtoken hunter2plugh, do not store"
ROTATED = "Rotated SECRET: now xyzzyrotated77 and plughvault99"
# The text as stored, and the lower-cased words as the full-text index stores them.
TRACES = [
    SECRET.encode(),
    ROTATED.encode(),
    b"zqxjkvtoken",
    b"hunter2plugh",
    b"xyzzyrotated77",
    b"plughvault99",
]


def _sqlite_only(store_url: str) -> Path:
    if "://" in store_url:
        pytest.skip("the file checks are for SQLite; PostgreSQL keeps dead rows on the server")
    return Path(store_url)


def _files(path: Path) -> bytes:
    return b"".join(
        candidate.read_bytes()
        for candidate in (
            path,
            path.with_name(path.name + "-wal"),
            path.with_name(path.name + "-shm"),
        )
        if candidate.exists()
    )


def _found(path: Path) -> list[bytes]:
    data = _files(path)
    return [trace for trace in TRACES if trace in data]


@contextlib.contextmanager
def _builds_without_secure_delete(lt: Lantern) -> Iterator[None]:
    """Connections start with secure_delete OFF, as on SQLite builds that do not enable it by
    default (this one does), so that the test shows what Lantern does, not what the build does."""

    def off(dbapi_connection: sqlite3.Connection, _record: Any) -> None:
        dbapi_connection.execute("PRAGMA secure_delete = OFF")

    event.listen(lt.store.engine, "connect", off)
    lt.store.engine.dispose()
    try:
        yield
    finally:
        event.remove(lt.store.engine, "connect", off)


def _store_then_forget(lt: Lantern) -> str:
    """A secret that went through the whole life a record can have before being forgotten."""
    for n in range(150):
        lt.memory.add(kind="observation", scope="noise", content=f"filler note {n} about lamps")
    secret = lt.memory.add(kind="fact", scope="vault", content=SECRET, source_refs=["session:s"])
    lt.memory.update(secret.id, content=ROTATED, priority=90)  # the old text is replaced...
    lt.memory.archive(secret.id)
    lt.memory.restore(secret.id)
    for n in range(150):  # ...and the index merges its segments a few times
        lt.memory.add(kind="observation", scope="noise", content=f"more filler {n} on wicks")
    return secret.id


@pytest.mark.parametrize("lantern_secure_delete", [True, False], ids=["lantern", "control"])
def test_forget_leaves_no_trace_of_the_content_in_the_files(
    lt: Lantern,
    store_url: str,
    monkeypatch: pytest.MonkeyPatch,
    lantern_secure_delete: bool,
) -> None:
    path = _sqlite_only(store_url)
    if not lantern_secure_delete:
        # The control: without Lantern's secure_delete, the same steps leave the text behind,
        # which shows the check below can fail.
        monkeypatch.setattr(MemoryRepository, "_write", lambda self, **_: self._store.write())
    with _builds_without_secure_delete(lt):
        secret_id = _store_then_forget(lt)
        assert _found(path), "the secret should be in the files before it is forgotten"
        report = lt.memory.forget(secret_id)
    if not lantern_secure_delete:
        assert _found(path)
        return
    assert report.wal_checkpointed is True
    assert path.with_name(path.name + "-wal").stat().st_size == 0
    assert _found(path) == []
    # The rest of the store is intact and searchable.
    assert len(lt.memory.search("lamps", limit=500)) == 150
    assert lt.memory.search("zqxjkvtoken", status="all", include_expired=True) == []
    with sqlite3.connect(path) as conn:
        assert conn.execute("PRAGMA integrity_check").fetchone() == ("ok",)
        conn.execute("INSERT INTO memory_fts (memory_fts) VALUES ('integrity-check')")


def test_forget_through_the_real_executable_scrubs_the_files(
    store_url: str, run_lantern: ProcessRun
) -> None:
    path = _sqlite_only(store_url)
    added = run_lantern("memory", "add", "--kind", "fact", "--scope", "vault", SECRET)
    assert added.returncode == 0, added.stderr
    record_id = added.stdout.strip()
    for n in range(3):
        run_lantern("memory", "add", "--kind", "fact", f"filler {n}")
    assert _found(path)
    refused = run_lantern("memory", "forget", record_id)
    assert refused.returncode == 1
    assert (
        refused.stderr.strip()
        == f"Error: forget deletes {record_id} for good; add --yes to confirm"
    )
    forgot = run_lantern("memory", "forget", record_id, "--yes", "--json")
    assert forgot.returncode == 0, forgot.stderr
    assert _found(path) == []
    history = run_lantern("memory", "history", record_id, "--json")
    assert [entry["event"] for entry in json.loads(history.stdout)] == ["forgotten"]
