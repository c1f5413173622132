"""MCP over stdio: `lantern mcp` beside the SDK's own floor, measured by the SDK's client in the
same run.

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
- `mcp start to initialize answered` and `mcp start to first tool result`: spawning
  `lantern mcp` until the handshake is answered, and until a first `lantern_memory_list`
  returns; beside `python -c "import mcp"` in a fresh interpreter, what any server on the SDK
  pays before it can answer. `mcp floor start to first tool result` is the floor server's.

Rows are dicts with the fields of `bench/run.py`'s `Result`: the floor is in `raw_p50` and
`raw_p95`. Stores are `bench/run.py`'s memory stores (`build_memory_store`): the same
deterministic records, written through `add_many`; run.py hands over the ones it measured.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Callable
from contextlib import AsyncExitStack, asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
from mcp import ClientSession, StdioServerParameters, stdio_client
from run import (
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

from lantern import Lantern

HERE = Path(__file__).resolve().parent
BUSY_SCOPE = scope_names()[0]
Row = dict[str, Any]
Call = Callable[[int], tuple[str, dict[str, Any]]]


# --- servers -----------------------------------------------------------------------------------


def lantern_server(store: Path) -> StdioServerParameters:
    executable = Path(sys.executable).with_name("lantern")
    command, prefix = (
        (str(executable), []) if executable.exists() else (sys.executable, ["-m", "lantern"])
    )
    return StdioServerParameters(
        command=command, args=[*prefix, "mcp"], env={"LANTERN_DB": str(store)}
    )


def floor_server(payload: Path | None = None) -> StdioServerParameters:
    """The floor server; with `payload`, its `payload` tool returns that file's JSON object."""
    env = None if payload is None else {"MCP_FLOOR_PAYLOAD": str(payload)}
    return StdioServerParameters(
        command=sys.executable, args=[str(HERE / "mcp_floor_server.py")], env=env
    )


@asynccontextmanager
async def session(params: StdioServerParameters) -> AsyncIterator[ClientSession]:
    async with stdio_client(params) as (read, write), ClientSession(read, write) as client:
        await client.initialize()
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


async def round_trips(store: Path, n: int, repeat: int) -> list[Row]:
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
    async with AsyncExitStack() as stack:
        own = await stack.enter_async_context(session(lantern_server(store)))
        # The floor server can also return the listing's own result (see `sized`).
        listing = await own.call_tool(*operations[1][1](0))
        payload = store.with_name(f"{store.name}.list-result.json")
        payload.write_text(json.dumps(listing.structured_content))
        floor = await stack.enter_async_context(session(floor_server(payload)))
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
            rows.append(row(f"mcp {label}", n, own_samples, floor_samples))
            # For reference: the same call in process, what the store itself costs.
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
    """Milliseconds from spawning the server to its answer to initialize, and to a tool call."""
    start = time.perf_counter()
    async with stdio_client(params) as (read, write), ClientSession(read, write) as client:
        await client.initialize()
        initialized = (time.perf_counter() - start) * 1000
        await client.call_tool(tool, arguments)
        called = (time.perf_counter() - start) * 1000
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
        own.append(await first_answers(lantern_server(store), "lantern_memory_list", {"limit": 1}))
        bare.append(await first_answers(floor_server(), "constant", {}))
    return [
        row("mcp start to initialize answered", n, [o[0] for o in own], floor),
        row("mcp start to first tool result", n, [o[1] for o in own], floor),
        row("mcp floor start to first tool result", n, [b[1] for b in bare], floor),
    ]


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
        rows += anyio.run(round_trips, store, n, repeat)
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
