"""`lantern mcp --http` under clients that would starve the others: one token holding every
session it may, or too many requests at once; a thousand connections that never finish their
request; a flood of refused requests. Real sockets against the real server process, with the
limits and timeouts made short so that each test takes seconds.
"""

from __future__ import annotations

import json
import re
import socket
import sqlite3
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx2
import pytest

from lantern.api import Lantern
from lantern.mcpserver import tokens
from lantern.mcpserver.limits import Limits
from tests.mcp_helpers import HttpServer, http_client, http_server

ACCEPT = "application/json, text/event-stream"
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "test", "version": "0"},
    },
}


def _headers(secret: str, session: str | None = None) -> dict[str, str]:
    found = {"Authorization": f"Bearer {secret}", "Accept": ACCEPT}
    return {**found, "Mcp-Session-Id": session} if session else found


def _open(url: str, secret: str) -> httpx2.Response:
    return httpx2.post(url, json=INITIALIZE, headers=_headers(secret), timeout=30)


def _log_lines(server: HttpServer) -> list[str]:
    return [line for line in server.log.read_text().splitlines() if "refused" in line]


@pytest.fixture
def store(tmp_path: Path) -> str:
    path = str(tmp_path / "s.db")
    with Lantern.open(path) as lt:
        lt.memory.add(kind="fact", scope="team", content="The deploy runs on Fridays.")
    return path


@pytest.fixture
def secrets(tmp_path: Path) -> dict[str, str]:
    path = tmp_path / "tokens.json"
    return {label: tokens.add(path, label)[0] for label in ("greedy", "polite")}


def test_the_defaults_are_those_the_command_shows() -> None:
    from lantern.cli.mcp_command import _DEFAULTS

    limits = Limits()
    assert {name: getattr(limits, name) for name in _DEFAULTS} == _DEFAULTS


def test_one_token_holding_its_sessions_leaves_the_others_served(
    store: str, secrets: dict[str, str], tmp_path: Path
) -> None:
    limit, idle = 4, 0.05  # minutes: 3 seconds
    args = ["--max-sessions-per-token", str(limit), "--session-idle", str(idle)]
    with http_server(store, tmp_path / "tokens.json", *args) as server:
        url = server.url
        held = [_open(url, secrets["greedy"]) for _ in range(limit)]
        assert [answer.status_code for answer in held] == [200] * limit
        refused = _open(url, secrets["greedy"])
        assert refused.status_code == 429
        assert 1 <= int(refused.headers["retry-after"]) <= 4
        assert refused.json()["error"]["message"].startswith(f"this token has {limit} open")
        # Every other token is served, sessions and calls alike, while the first is refused.
        with http_client(url, secrets["polite"]) as polite:
            assert polite.ok("lantern_memory_list", {})["records"]
            more = [_open(url, secrets["polite"]) for _ in range(limit - 1)]
            assert [answer.status_code for answer in more] == [200] * (limit - 1)
            assert _open(url, secrets["polite"]).status_code == 429
            assert polite.ok("lantern_memory_search", {"query": "deploy"})["records"]
        # A session its client ends frees its place at once.
        first = held[0].headers["mcp-session-id"]
        ended = httpx2.delete(url, headers=_headers(secrets["greedy"], first), timeout=30)
        assert ended.status_code == 200
        again = _open(url, secrets["greedy"])
        assert again.status_code == 200
        assert _open(url, secrets["greedy"]).status_code == 429
        # An idle session is closed after the idle time, and its place freed.
        time.sleep(idle * 60 + 4)
        session = again.headers["mcp-session-id"]
        closed = httpx2.post(
            url,
            json={"jsonrpc": "2.0", "id": 2, "method": "ping"},
            headers={**_headers(secrets["greedy"], session), "Mcp-Protocol-Version": "2025-11-25"},
            timeout=30,
        )
        assert closed.status_code == 404
        reopened = [_open(url, secrets["greedy"]) for _ in range(limit)]
        assert [answer.status_code for answer in reopened] == [200] * limit
    # Refusals are counted, not logged one by one.
    [line] = _log_lines(server)
    assert re.search(r"refused \d+ requests in the last 10 s: .*3 over a token's limits", line)


def test_one_token_with_too_many_requests_at_once_is_refused_alone(
    store: str, secrets: dict[str, str], tmp_path: Path
) -> None:
    blocker = sqlite3.connect(store, isolation_level=None, check_same_thread=False)
    env = {"LANTERN_BUSY_TIMEOUT": "30"}
    args = ["--max-requests-per-token", "2"]
    with (
        http_server(store, tmp_path / "tokens.json", *args, env=env) as server,
        http_client(server.url, secrets["greedy"]) as greedy,
        http_client(server.url, secrets["polite"]) as polite,
    ):
        greedy.tools()  # the client reads the tools' output schemas once, first
        blocker.execute("BEGIN IMMEDIATE")  # the writes below wait for the store's lock
        results: list[Any] = []

        def write(n: int) -> None:
            given = {"kind": "fact", "scope": "team", "content": f"Written while locked {n}."}
            results.append(greedy.call("lantern_memory_add", given))

        writers = [threading.Thread(target=write, args=(n,)) for n in range(2)]
        for writer in writers:
            writer.start()
        # Once both writes are in flight (waiting for the lock), the token's next request is
        # refused; until then it is served (a session opened is all it does).
        deadline = time.monotonic() + 30
        refused = _open(server.url, secrets["greedy"])
        while refused.status_code == 200 and time.monotonic() < deadline:
            time.sleep(0.2)
            refused = _open(server.url, secrets["greedy"])
        assert refused.status_code == 429 and refused.headers["retry-after"] == "1"
        assert "2 requests at once" in refused.json()["error"]["message"]
        assert polite.ok("lantern_memory_list", {})["records"]  # another token is served
        blocker.execute("ROLLBACK")
        for writer in writers:
            writer.join(timeout=60)
        assert [result.is_error for result in results] == [False, False]
    blocker.close()


def _half_open(address: tuple[str, int]) -> socket.socket:
    """A connection that sends half a request and never the rest."""
    sock = socket.create_connection(address, timeout=30)
    sock.sendall(b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n")
    return sock


def _closed_by_server(sock: socket.socket, deadline: float) -> float | None:
    """When the server closed `sock` (it reads end of file or a reset), or None if it had not
    by `deadline`."""
    sock.settimeout(max(0.01, deadline - time.monotonic()))
    try:
        data = sock.recv(1024)
    except TimeoutError:
        return None
    except ConnectionResetError:
        return time.monotonic()
    assert data in (b"",) or data.startswith(b"HTTP/1.1 "), data
    return time.monotonic()


@pytest.fixture
def many_files() -> Iterator[None]:
    import resource

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    wanted = min(hard, 4_096) if hard != resource.RLIM_INFINITY else 4_096
    if soft < wanted:
        resource.setrlimit(resource.RLIMIT_NOFILE, (wanted, hard))
    if wanted < 2_200:
        pytest.skip(f"the test needs 2,200 open files; the hard limit is {hard}")
    yield
    resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


def test_a_thousand_half_open_connections_are_closed_on_time(
    store: str, secrets: dict[str, str], tmp_path: Path, many_files: None
) -> None:
    timeout = 2.0
    args = ["--request-timeout", str(timeout)]
    with http_server(store, tmp_path / "tokens.json", *args) as server:
        address = urlsplit(server.url)
        where = (address.hostname or "", address.port or 0)
        started = time.monotonic()
        stalled = [_half_open(where) for _ in range(1_000)]
        opened = time.monotonic()
        # A good client is served meanwhile.
        with http_client(server.url, secrets["polite"]) as polite:
            for _ in range(5):
                assert polite.ok("lantern_memory_list", {})["records"]
        served = time.monotonic()
        deadline = started + timeout + (opened - started) + 10  # slack for a loaded machine
        closed = [_closed_by_server(sock, deadline) for sock in stalled]
        for sock in stalled:
            sock.close()
        assert closed.count(None) == 0, f"{closed.count(None)} connections still open"
        assert all(moment - started >= timeout - 0.1 for moment in closed if moment)
        assert served - opened < timeout + 15
        # A refused request is answered at once; the rest of its body must come within one
        # timeout, however it is dripped.
        with socket.create_connection(where, timeout=30) as sock:
            sock.sendall(b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 1000\r\n\r\n{")
            refused_at = time.monotonic()
            answer = sock.recv(4096)
            assert answer.startswith(b"HTTP/1.1 401 ")
            # The headers and the body may come in two segments (Nagle is off): read to the end.
            length = int(re.search(rb"content-length: (\d+)", answer, re.I).group(1))  # type: ignore[union-attr]
            while len(answer.split(b"\r\n\r\n", 1)[-1]) < length:
                answer += sock.recv(4096)
            try:
                for _ in range(20):
                    time.sleep(timeout / 4)
                    sock.sendall(b" ")
            except (BrokenPipeError, ConnectionResetError):
                pass
            assert _closed_by_server(sock, time.monotonic() + timeout + 5) is not None
            assert time.monotonic() - refused_at < timeout * 2 + 5
    lines = _log_lines(server)
    assert len(lines) <= 2 + int((time.monotonic() - started) / 10)
    counted = sum(
        int(n.replace(",", ""))
        for line in lines
        for n in re.findall(r"([\d,]+) closed after a request that did not arrive in time", line)
    )
    assert counted == 1_000 + 1  # and the refused request whose body did not come


def test_past_the_connection_cap_the_oldest_waiting_connection_makes_room(
    store: str, secrets: dict[str, str], tmp_path: Path
) -> None:
    args = ["--max-connections", "50", "--request-timeout", "30"]
    with http_server(store, tmp_path / "tokens.json", *args) as server:
        address = urlsplit(server.url)
        where = (address.hostname or "", address.port or 0)
        stalled = [_half_open(where) for _ in range(200)]
        with http_client(server.url, secrets["polite"]) as polite:
            for _ in range(3):
                assert polite.ok("lantern_memory_list", {})["records"]
        deadline = time.monotonic() + 5
        closed = [_closed_by_server(sock, deadline) for sock in stalled[:150]]
        assert closed.count(None) == 0  # the first ones made room for the later ones
        for sock in stalled:
            sock.close()


def test_a_flood_of_foreign_hosts_logs_a_line_per_interval(
    store: str, secrets: dict[str, str], tmp_path: Path
) -> None:
    with http_server(store, tmp_path / "tokens.json") as server:
        started = time.monotonic()
        with httpx2.Client(timeout=30) as client:
            for n in range(2_000):
                host = "localhost:8765@evil.example" if n % 2 else "evil.example"
                answer = client.post(server.url, json=INITIALIZE, headers={"Host": host})
                assert answer.status_code == 421
        seconds = time.monotonic() - started
    # Answered at once on the kept-alive connection (no delayed ACK before each body).
    assert seconds < 2_000 * 0.01
    lines = _log_lines(server)
    assert len(lines) <= 2 + int(seconds / 10), lines
    counted = sum(
        int(n.replace(",", ""))
        for line in lines
        for n in re.findall(r"([\d,]+) naming another host", line)
    )
    assert counted == 2_000
    assert "evil.example" not in server.log.read_text()


def test_a_lone_surrogate_answers_over_http_as_over_stdio(
    store: str, secrets: dict[str, str], tmp_path: Path
) -> None:
    from tests.helpers import LANTERN_BIN

    raw = '{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"%s","arguments":%s}}'
    calls = [
        ("lantern_memory_search", '{"query":"\\ud800 deploy"}'),
        ("lantern_memory_search", '{"query":"\\ud800"}'),
        ("lantern_memory_add", '{"kind":"fact","content":"a\\ud800b"}'),
    ]
    # Over stdio: raw lines, after the handshake.
    import subprocess

    lines = [
        json.dumps(INITIALIZE),
        json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        "[" * 100_000 + "]" * 100_000,  # nested too deep for either parser: no answer, no crash
        *(raw % (n + 2, name, arguments) for n, (name, arguments) in enumerate(calls)),
    ]
    with subprocess.Popen(
        [str(LANTERN_BIN), "--db", store, "mcp"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    ) as process:
        assert process.stdin is not None and process.stdout is not None
        process.stdin.write("\n".join(lines) + "\n")
        process.stdin.flush()
        by_id: dict[int, Any] = {}
        while len(by_id) < len(calls) + 1:
            answer = json.loads(process.stdout.readline())
            by_id[answer["id"]] = answer
        process.stdin.close()  # the server ends with its input
        assert process.wait(timeout=60) == 0
    stdio = [by_id[n + 2]["result"] for n in range(len(calls))]
    # Over HTTP: the same bodies, in a session.
    with http_server(store, tmp_path / "tokens.json") as server:
        opened = _open(server.url, secrets["polite"])
        session = opened.headers["mcp-session-id"]
        headers = {
            **_headers(secrets["polite"], session),
            "Content-Type": "application/json",
            "Mcp-Protocol-Version": "2025-11-25",
        }
        over_http = []
        for n, (name, arguments) in enumerate(calls):
            body = (raw % (n + 2, name, arguments)).encode()
            answer = httpx2.post(server.url, content=body, headers=headers, timeout=30)
            assert answer.status_code == 200, answer.text
            [data] = [line[6:] for line in answer.text.splitlines() if line.startswith("data: ")]
            over_http.append(json.loads(data)["result"])
        deep = httpx2.post(server.url, content=lines[2].encode(), headers=headers, timeout=30)
        assert deep.status_code == 400 and "recursion limit" in deep.text
    assert over_http == stdio
    assert stdio[0]["structuredContent"]["records"]  # found by its other word
    assert stdio[1]["structuredContent"]["records"] == []  # a query of nothing else: nothing
    assert stdio[2]["isError"] and "not valid UTF-8" in stdio[2]["content"][0]["text"]


def test_closed_sessions_leave_nothing_behind(store: str, tmp_path: Path) -> None:
    """Sessions that end, deleted or idle, keep no object alive: what they held is freed, and a
    token that held its limit can open as many again."""
    import gc

    from mcp.server.streamable_http import StreamableHTTPServerTransport
    from starlette.testclient import TestClient

    from lantern.mcpserver.http import TokenVerifier, build_app
    from lantern.mcpserver.server import Access, StoreHandle, build_server, open_store
    from lantern.memory.scopes import UNRESTRICTED
    from lantern.serving.refusals import Refusals

    token_file = tmp_path / "tokens.json"
    secret, _ = tokens.add(token_file, "one")
    # Three seconds: long enough that twenty sessions open before the first expires on a
    # loaded machine, short enough to wait for.
    limits = Limits(sessions_per_token=20, session_idle_minutes=3 / 60)
    handle = StoreHandle(open_store(store, scopes=UNRESTRICTED, read_only=True), Access())
    server = build_server(handle)
    app = build_app(
        server, TokenVerifier(token_file), frozenset({"testserver"}), limits, Refusals(10)
    )

    def alive() -> int:
        gc.collect()
        return sum(isinstance(o, StreamableHTTPServerTransport) for o in gc.get_objects())

    before = alive()
    with TestClient(app, base_url="http://testserver") as client:
        for ending in ("deleted", "idle", "deleted"):
            opened = [
                client.post("/mcp", json=INITIALIZE, headers=_headers(secret)) for _ in range(20)
            ]
            assert [answer.status_code for answer in opened] == [200] * 20
            assert client.post("/mcp", json=INITIALIZE, headers=_headers(secret)).status_code == 429
            assert alive() >= before + 20
            if ending == "deleted":
                for answer in opened:
                    session = answer.headers["mcp-session-id"]
                    assert (
                        client.delete("/mcp", headers=_headers(secret, session)).status_code == 200
                    )
            else:
                time.sleep(limits.session_idle_seconds + 2.5)
            deadline = time.monotonic() + 30
            while alive() > before and time.monotonic() < deadline:
                time.sleep(0.1)
            assert alive() == before
    handle.close()
