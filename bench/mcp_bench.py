"""MCP over stdio and Streamable HTTP: `lantern mcp` beside the SDK's own floor, measured by the
SDK's client in the same run.

    from mcp_bench import bench_mcp           # with bench/ on sys.path, as for bench/run.py
    rows = bench_mcp(work, sizes=[10_000, 100_000], repeat=200)

    python bench/mcp_bench.py --sizes 10000 --repeat 200     # on its own, printing a table

What each row measures (milliseconds, median and 95th percentile):

- `mcp add` / `mcp list (top 50, one scope)` / `mcp search (1-3 words, top 20)`: one
  `call_tool` round trip, from the client's call to its parsed result, against a server on a
  store of N records; beside the floor, `bench/mcp_floor_server.py` (the same SDK server and
  transport, one tool returning a constant). Calls to the two servers alternate, so both see the
  same machine. Each add stores a new record (one commit). Under each, `the API alone` is the
  same call made in process through `Lantern` on the same store, sampled in the same loop: the
  difference between the two rows is what MCP adds (transport, checking, rendering).
- `mcp http ...`: the same round trips over Streamable HTTP, to `lantern mcp --http` (with a
  bearer token) beside the floor server on the SDK's own HTTP app, on the same machine.
- `mcp http throughput, 8 clients`: calls per second with 8 sessions at once, each making 100
  calls in turn of add, list of 50 and search, beside the floor's constant tool the same way
  (for this row a higher figure is better). `mcp http throughput beside stdio` sets the same
  HTTP figure beside the same calls made by 8 stdio clients, each with its own `lantern mcp`
  process on the same store (as stdio clients each start their own server).
- `mcp start to initialize answered` and `mcp start to first tool result (a search)`: spawning
  `lantern mcp` until the handshake is answered, and until a first `lantern_memory_search`
  made right after it returns; beside `python -c "import mcp"` in a fresh interpreter, what
  any server on the SDK pays before it can answer. `mcp floor start to first tool result` is
  the floor server's.

Rows are dicts with the fields of `bench/common.py`'s `Result`: the floor is in `raw_p50` and
`raw_p95`. Stores are `bench/common.py`'s memory stores (`build_memory_store`): the same
deterministic records, written through `add_many`; run.py hands over the ones it measured.

The client is the SDK's `ClientSession`, which validates each result against the output schema
its tool declares, as the SDK's clients do: that is part of what a call to `lantern mcp` costs
them. The floor's tools declare none.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import AsyncExitStack, asynccontextmanager, contextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx2
from common import (
    SLOW_SAMPLES,
    WORDS,
    Result,
    build_memory_store,
    compile_lantern,
    percentiles,
    render,
    scope_names,
    search_queries,
)
from mcp import ClientSession, StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client

from lantern import Lantern

HERE = Path(__file__).resolve().parent
BUSY_SCOPE = scope_names()[0]
Row = dict[str, Any]
Call = Callable[[int], tuple[str, dict[str, Any]]]


# --- servers -----------------------------------------------------------------------------------


def _lantern_command() -> list[str]:
    executable = Path(sys.executable).with_name("lantern")
    return [str(executable)] if executable.exists() else [sys.executable, "-m", "lantern"]


def lantern_server(store: Path) -> StdioServerParameters:
    command, *prefix = _lantern_command()
    return StdioServerParameters(
        command=command, args=[*prefix, "mcp"], env={"LANTERN_DB": str(store)}
    )


def floor_server(payload: Path | None = None) -> StdioServerParameters:
    """The floor server; with `payload`, its `payload` tool returns that file's JSON object."""
    env = None if payload is None else {"MCP_FLOOR_PAYLOAD": str(payload)}
    return StdioServerParameters(
        command=sys.executable, args=[str(HERE / "mcp_floor_server.py")], env=env
    )


Target = StdioServerParameters | tuple[str, str | None]
"""A server to connect to: stdio parameters, or an HTTP URL and its bearer token."""


@contextmanager
def lantern_http(store: Path) -> Iterator[tuple[str, str | None]]:
    """`lantern mcp --http` on a free loopback port, with a token of its own."""
    with tempfile.TemporaryDirectory(prefix="lantern-mcp-bench-") as tmp:
        tokens = Path(tmp) / "tokens.json"
        command = [*_lantern_command(), "mcp"]
        token = subprocess.run(
            [*command, "token", "add", "--tokens", str(tokens), "--label", "bench"],
            check=True, capture_output=True, text=True,
        ).stdout.strip()  # fmt: skip
        log = Path(tmp) / "server.log"
        with open(log, "wb") as stderr:
            process = subprocess.Popen(
                [*command, "--http", "127.0.0.1:0", "--tokens", str(tokens)],
                stderr=stderr, env={**os.environ, "LANTERN_DB": str(store)},
            )  # fmt: skip
        try:
            while not (found := re.search(r"http://\S+/mcp", log.read_text())):
                if process.poll() is not None:
                    raise RuntimeError(f"lantern mcp --http did not start: {log.read_text()}")
                time.sleep(0.02)
            yield found[0], token
        finally:
            process.terminate()
            process.wait(timeout=60)


@contextmanager
def floor_http(payload: Path | None = None) -> Iterator[tuple[str, str | None]]:
    """The floor server on Streamable HTTP, on a free loopback port."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    env = {**os.environ, **({} if payload is None else {"MCP_FLOOR_PAYLOAD": str(payload)})}
    process = subprocess.Popen(
        [sys.executable, str(HERE / "mcp_floor_server.py"), "--http", str(port)], env=env
    )
    try:
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                if process.poll() is not None:
                    raise RuntimeError("the floor server did not start") from None
                time.sleep(0.02)
        yield f"http://127.0.0.1:{port}/mcp", None
    finally:
        process.terminate()
        process.wait(timeout=60)


@asynccontextmanager
async def connected(target: Target) -> AsyncIterator[ClientSession]:
    """An initialized client session on a stdio or HTTP server."""
    async with AsyncExitStack() as stack:
        if isinstance(target, StdioServerParameters):
            read, write = await stack.enter_async_context(stdio_client(target))
        else:
            url, token = target
            headers = {} if token is None else {"Authorization": f"Bearer {token}"}
            # The timeouts the SDK gives its own clients (30 s, and 300 s to read a response
            # stream): a bare httpx client gives up reading after 5 s, and a call queued
            # behind seven others at 100,000 records can take longer than that, which the
            # SDK reports as "SSE stream ended without a response".
            timeout = httpx2.Timeout(30, read=300)
            http = await stack.enter_async_context(
                httpx2.AsyncClient(headers=headers, timeout=timeout)
            )
            read, write = await stack.enter_async_context(
                streamable_http_client(url, http_client=http)
            )
        client = await stack.enter_async_context(ClientSession(read, write))
        await client.initialize()
        yield client


@asynccontextmanager
async def session(target: Target) -> AsyncIterator[ClientSession]:
    async with connected(target) as client:
        await client.list_tools()  # the client's own first listing stays out of the samples
        yield client


async def timed_call(client: ClientSession, name: str, arguments: dict[str, Any]) -> float:
    start = time.perf_counter()
    result = await client.call_tool(name, arguments)
    elapsed = (time.perf_counter() - start) * 1000
    if result.is_error:
        raise RuntimeError(f"{name} failed: {result.content}")
    return elapsed


def row(operation: str, n: int, own: list[float], floor: list[float]) -> Row:
    own_p50, own_p95 = percentiles(own)
    floor_p50, floor_p95 = percentiles(floor)
    return {
        "operation": operation,
        "n": n,
        "lantern_p50": own_p50,
        "lantern_p95": own_p95,
        "raw_p50": floor_p50,
        "raw_p95": floor_p95,
        "unit": "ms",
    }


# --- measurements ------------------------------------------------------------------------------


async def round_trips(store: Path, n: int, repeat: int, http: bool = False) -> list[Row]:
    searches = search_queries(repeat + 20, words=WORDS)
    # (label, the tool call for sample i, the same call through the Python API)
    operations: list[tuple[str, Call, Callable[[Lantern, int], object]]] = [
        (
            "add",
            lambda i: (
                "lantern_memory_add",
                {"kind": "fact", "scope": "bench:mcp", "content": f"mcp bench add {n} {i}"},
            ),
            lambda lt, i: lt.memory.add(
                kind="fact", scope="bench:api", content=f"api bench add {n} {i}"
            ),
        ),
        (
            "list (top 50, one scope)",
            lambda i: ("lantern_memory_list", {"scope": [BUSY_SCOPE], "limit": 50}),
            lambda lt, i: lt.memory.list(scope=[BUSY_SCOPE], limit=50),
        ),
        (
            "search (1-3 words, top 20)",
            lambda i: (
                "lantern_memory_search",
                {"query": searches[i % len(searches)], "mode": "keyword"},
            ),
            lambda lt, i: lt.memory.search(searches[i % len(searches)], mode="keyword"),
        ),
    ]
    rows = []
    prefix = "mcp http" if http else "mcp"
    async with AsyncExitStack() as stack:
        own_target = stack.enter_context(lantern_http(store)) if http else lantern_server(store)
        own = await stack.enter_async_context(session(own_target))
        # The floor server can also return the listing's own result (see `sized`).
        listing = await own.call_tool(*operations[1][1](0))
        payload = store.with_name(f"{store.name}.list-result.json")
        payload.write_text(json.dumps(listing.structured_content))
        floor_target = stack.enter_context(floor_http(payload)) if http else floor_server(payload)
        floor = await stack.enter_async_context(session(floor_target))
        lt = stack.enter_context(Lantern.open(store))
        for label, call, direct in operations:
            sized = label.startswith("list")
            for i in range(20):  # warm-up: caches, the worker threads, the validators
                await timed_call(own, *call(repeat + i))
                await timed_call(floor, "constant", {})
                await timed_call(floor, "payload", {})
                direct(lt, repeat + i)
            own_samples, floor_samples, api_samples, sized_samples = [], [], [], []
            for i in range(min(repeat, SLOW_SAMPLES) if label.startswith("search") else repeat):
                own_samples.append(await timed_call(own, *call(i)))
                floor_samples.append(await timed_call(floor, "constant", {}))
                if sized:
                    sized_samples.append(await timed_call(floor, "payload", {}))
                started = time.perf_counter()
                direct(lt, i)
                api_samples.append((time.perf_counter() - started) * 1000)
            rows.append(row(f"{prefix} {label}", n, own_samples, floor_samples))
            # For reference: the same call in process, what the store itself costs.
            if not http:
                rows.append(row(f"  the API alone: {label}", n, api_samples, floor_samples))
            if sized:
                # And the floor server returning this very result: what its size costs the SDK.
                size = len(json.dumps(listing.structured_content)) // 1000
                rows.append(
                    row(f"  the floor returning it ({size} KB)", n, sized_samples, floor_samples)
                )
        payload.unlink()
    return rows


async def first_answers(
    params: StdioServerParameters, tool: str, arguments: dict[str, Any]
) -> tuple[float, float]:
    """Milliseconds from spawning the server to its answer to initialize, and to a first tool
    call made right after it (a search, as a harness's first call usually is)."""
    start = time.perf_counter()
    async with stdio_client(params) as (read, write), ClientSession(read, write) as client:
        await client.initialize()
        initialized = (time.perf_counter() - start) * 1000
        result = await client.call_tool(tool, arguments)
        called = (time.perf_counter() - start) * 1000
    if result.is_error:
        raise RuntimeError(f"{tool} failed: {result.content}")
    return initialized, called


def import_mcp() -> float:
    start = time.perf_counter()
    subprocess.run([sys.executable, "-c", "import mcp"], check=True)
    return (time.perf_counter() - start) * 1000


async def starts(store: Path, n: int, runs: int) -> list[Row]:
    compile_lantern()
    floor: list[float] = []
    own: list[tuple[float, float]] = []
    bare: list[tuple[float, float]] = []
    for _ in range(runs):  # in turns, so that all three see the same machine
        floor.append(import_mcp())
        own.append(
            await first_answers(
                lantern_server(store), "lantern_memory_search", {"query": WORDS[7], "limit": 20}
            )
        )
        bare.append(await first_answers(floor_server(), "constant", {}))
    return [
        row("mcp start to initialize answered", n, [o[0] for o in own], floor),
        row("mcp start to first tool result (a search)", n, [o[1] for o in own], floor),
        row("mcp floor start to first tool result", n, [b[1] for b in bare], floor),
    ]


async def throughput(store: Path, n: int, clients: int = 8, calls: int = 100) -> list[Row]:
    """Calls per second with `clients` sessions at once, each making `calls` mixed calls (add,
    list of 50, search): over HTTP to one `lantern mcp --http`, beside the floor's constant
    tool the same way, and beside stdio (a `lantern mcp` process per client, as stdio clients
    each start their own, on the same store)."""
    searches = search_queries(calls, words=WORDS)

    def mixed(client: int, i: int) -> tuple[str, dict[str, Any]]:
        choices: list[tuple[str, dict[str, Any]]] = [
            ("lantern_memory_add",
             {"kind": "fact", "scope": "bench:http", "content": f"http {n} {client} {i}"}),
            ("lantern_memory_list", {"scope": [BUSY_SCOPE], "limit": 50}),
            ("lantern_memory_search", {"query": searches[i]}),
        ]  # fmt: skip
        return choices[i % 3]

    def stdio_mixed(client: int, i: int) -> tuple[str, dict[str, Any]]:
        name, arguments = mixed(client, i)
        if name == "lantern_memory_add":  # other records than the HTTP run's
            arguments = {**arguments, "content": f"stdio {n} {client} {i}"}
        return name, arguments

    async def rate(target: Target, call: Callable[[int, int], tuple[str, dict[str, Any]]]) -> float:
        async with AsyncExitStack() as stack:
            sessions = [await stack.enter_async_context(session(target)) for _ in range(clients)]

            async def run(k: int) -> None:
                for i in range(calls):
                    result = await sessions[k].call_tool(*call(k, i))
                    if result.is_error:
                        raise RuntimeError(f"{call(k, i)[0]} failed: {result.content}")

            started = time.perf_counter()
            async with anyio.create_task_group() as group:
                for k in range(clients):
                    group.start_soon(run, k)
            return clients * calls / (time.perf_counter() - started)

    with lantern_http(store) as own, floor_http() as floor:
        own_rate = await rate(own, mixed)
        floor_rate = await rate(floor, lambda k, i: ("constant", {}))
    stdio_rate = await rate(lantern_server(store), stdio_mixed)

    def rates(operation: str, lantern: float, raw: float) -> Row:
        return {
            "operation": f"{operation}, {clients} clients (calls/s)",
            "n": n,
            "lantern_p50": lantern,
            "lantern_p95": lantern,
            "raw_p50": raw,
            "raw_p95": raw,
            "unit": "calls/s",
        }

    return [
        rates("mcp http throughput", own_rate, floor_rate),
        rates("mcp http throughput beside stdio", own_rate, stdio_rate),
    ]


def with_word_index(store: Path) -> None:
    """The store's word index, as `lantern db rebuild-index` builds it: a store past the size
    its writes index (`words.AUTO_BUILD_UP_TO`) would otherwise rank every search in FTS5, as
    it does until its owner runs that command."""
    from lantern.indexes import place, words

    with Lantern.open(store) as lt:
        directory = place.directory(lt.location)
        if directory is not None and words.available():
            words.build(lt.store, directory)


def bench_mcp(
    work: Path, sizes: list[int], repeat: int, stores: dict[int, Path] | None = None
) -> list[Row]:
    """Round trips at each store size beside the SDK's floor, then start-up times.

    `stores` maps sizes to stores `bench/run.py` already built (and measured); the others are
    built here, the same way, and removed afterwards.
    """
    rows: list[Row] = []
    given = stores or {}
    built = []
    for n in sizes:
        store = given.get(n)
        if store is None:
            store = work / f"mcp-{n}.db"
            build_memory_store(store, n)
            built.append(store)
        with_word_index(store)
        rows += anyio.run(round_trips, store, n, repeat)
        rows += anyio.run(round_trips, store, n, repeat, True)
        rows += anyio.run(throughput, store, n)
    first = given.get(sizes[0], work / f"mcp-{sizes[0]}.db")
    rows += anyio.run(starts, first, sizes[0], max(3, min(repeat // 20, 10)))
    for store in built:
        for path in (
            store,
            store.with_name(store.name + "-wal"),
            store.with_name(store.name + "-shm"),
        ):
            path.unlink(missing_ok=True)
    return rows


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--repeat", type=int, default=200, help="round trips per operation")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="lantern-mcp-bench-") as tmp:
        rows = bench_mcp(Path(tmp), args.sizes, args.repeat)
        print(render([Result(**row) for row in rows]))
    print(f"python {sys.version.split()[0]}, {os.cpu_count()} CPUs")


if __name__ == "__main__":
    main()
