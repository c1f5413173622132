"""`lantern mcp --http` under load, cancelled and killed: clients at once lose and duplicate no
write and never see "database is locked"; a cancelled write rolls back; a server stopped or
killed mid-write leaves a healthy store."""

from __future__ import annotations

import sqlite3
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

import anyio
import pytest

from lantern.api import Lantern
from lantern.mcpserver import tokens
from tests.mcp_helpers import http_client, http_server, running, server_parameters
from tests.reliability.conftest import Figures
from tests.reliability.tools import Tier, assert_healthy, is_postgres

CLIENTS = 8


def _calls(tier: Tier, store_url: str) -> int:
    """Calls per client: 500 in the long tier, fewer in the quick one (PostgreSQL's fewer)."""
    if tier.name == "long":
        return 500
    return 20 if is_postgres(store_url) else 60


def test_concurrent_http_clients_lose_and_duplicate_nothing(
    store_url: str, tier: Tier, figures: Figures, tmp_path: Path
) -> None:
    Lantern.open(store_url).close()
    token_file = tmp_path / "tokens.json"
    secret, _ = tokens.add(token_file, "load")
    calls = _calls(tier, store_url)
    acknowledged: list[str] = []
    errors: list[str] = []
    lock = threading.Lock()

    def client(n: int, url: str) -> None:
        with http_client(url, secret) as mcp:
            for i in range(calls):
                name, given = _mixed_call(n, i)
                result = mcp.call(name, given)
                with lock:
                    if result.is_error:
                        errors.append(f"{name}: {result.content}")
                    elif name == "lantern_memory_add":
                        assert result.structured_content is not None
                        acknowledged.append(result.structured_content["id"])

    started = time.monotonic()
    with http_server(store_url, token_file) as server:
        threads = [threading.Thread(target=client, args=(n, server.url)) for n in range(CLIENTS)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=1_800)
    seconds = time.monotonic() - started
    assert errors == []
    with Lantern.open(store_url) as lt:
        stored = [record.id for record in lt.memory.list(scope=["load:*"], limit=10_000)]
    assert Counter(stored) == Counter(acknowledged)  # no write lost, none stored twice
    assert len(set(acknowledged)) == len(acknowledged)
    assert_healthy(store_url)
    figures(
        f"{CLIENTS} clients x {calls} calls over HTTP in {seconds:.1f} s: "
        f"{len(acknowledged)} adds acknowledged and stored, {len(errors)} errors"
    )


def _mixed_call(client: int, i: int) -> tuple[str, dict[str, Any]]:
    """Adds (every other call, each a new record), listings, searches and evidence searches."""
    if i % 2 == 0:
        content = f"client {client} note {i} about the deploy"
        return "lantern_memory_add", {"kind": "fact", "scope": f"load:{client}", "content": content}
    return [
        ("lantern_memory_list", {"scope": ["load:*"], "limit": 20}),
        ("lantern_memory_search", {"query": "deploy", "limit": 5}),
        ("lantern_search", {"query": "deploy", "limit": 5}),
    ][(i // 2) % 3]


@pytest.mark.parametrize("cancelled", [True, False])
def test_a_cancelled_write_rolls_back(tmp_path: Path, cancelled: bool) -> None:
    """The write waits for the store's lock (held here); the client gives up on the call; the
    write then gets the lock and rolls back instead of committing. Not cancelled, it commits."""
    store = str(tmp_path / "s.db")
    Lantern.open(store).close()
    params = server_parameters(store, env={"LANTERN_BUSY_TIMEOUT": "30"}, home=tmp_path)
    blocker = sqlite3.connect(store, isolation_level=None, check_same_thread=False)
    with running(params) as mcp:
        assert mcp.ok("lantern_memory_list", {}) == {"records": [], "next_cursor": None}
        blocker.execute("BEGIN IMMEDIATE")
        given = {"uri": "tool://cancelled", "text": "a write the client gave up on"}

        async def call_and_give_up() -> bool:
            with anyio.move_on_after(1.5 if cancelled else 60) as scope:
                await mcp.session.call_tool("lantern_ingest_text", given)
            return scope.cancelled_caught

        def release_later() -> None:
            time.sleep(2.5)
            blocker.execute("ROLLBACK")

        releaser = threading.Thread(target=release_later)
        releaser.start()
        gave_up = mcp.portal.call(call_and_give_up)
        releaser.join()
        assert gave_up is cancelled
        # The server answers on, and its next write waits behind the abandoned one.
        mcp.ok("lantern_memory_add", {"kind": "fact", "content": "after"})
        sources = mcp.ok("lantern_search", {"query": "gave up"})["hits"]
    blocker.close()
    assert (sources == []) is cancelled
    assert_healthy(store)


@pytest.mark.parametrize("signal_name", ["SIGTERM", "SIGKILL"])
def test_a_server_stopped_mid_write_leaves_a_healthy_store(
    tmp_path: Path, signal_name: str
) -> None:
    import signal

    store = str(tmp_path / "s.db")
    Lantern.open(store).close()
    token_file = tmp_path / "tokens.json"
    secret, _ = tokens.add(token_file, "writer")
    text = "A long log line about the deploy and its migration.\n" * 40_000  # ~2 MB
    done: list[object] = []
    with http_server(store, token_file) as server:

        def write() -> None:
            try:
                with http_client(server.url, secret) as mcp:
                    for n in range(50):
                        mcp.call("lantern_ingest_text", {"uri": f"tool://big/{n}", "text": text})
            except BaseException as exc:  # the server goes away under it
                done.append(exc)

        writer = threading.Thread(target=write)
        writer.start()
        time.sleep(3)
        code = server.stop(getattr(signal, signal_name))
        writer.join(timeout=120)
    assert code == (0 if signal_name == "SIGTERM" else -signal.SIGKILL)
    assert done, "the writer did not notice the server stopping"
    assert_healthy(store)
    with Lantern.open(store) as lt:
        for source in lt.evidence.list_sources(limit=100):
            assert lt.evidence.get_source(source.id).chunk_count == source.chunk_count
