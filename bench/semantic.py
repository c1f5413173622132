"""Semantic search on this machine: latency beside its numpy floor, hybrid beside its parts, and
the default model's embedding rates.

    python bench/semantic.py                          # 100k vectors, and hybrid's parts
    python bench/semantic.py --sizes 100000,1000000   # adds a million
    python bench/semantic.py --backfill 10000         # adds MiniLM's rates and a backfill
    python bench/semantic.py --json out.json          # also write the figures as JSON
    python bench/semantic.py --sizes 100000 --memory-sizes 100000,1000000   # a new process

**Latency.** A store of N chunks, each with a random unit vector of 384 dimensions (MiniLM's
size), written straight into the `embeddings` table (fixed seed: two runs measure the same
data; the store is kept under --work and reused). What is timed is the search, not a model: the
queries are embedded by the hashing provider, made to give 384 dimensions in this process
(microseconds a query), and the stored vectors are recorded under its model id. Rows:

- floor: numpy over the float32 matrix already in memory: `matrix @ q`, `argpartition` of the
  best 10, then those sorted; the query vector is computed beforehand.
- long-lived: `lt.evidence.search(text, mode="semantic", limit=10)` in a process that has
  searched before, as the MCP server does: it reads the vectors' token (one look-up), embeds
  the query, scores and selects as the floor does, and reads the 64 best chunks' rows with the
  filters applied. Both sides take turns query by query, so both see the same machine.
- first search: the same call in a process that has not loaded the vectors yet (a new
  `Lantern`, the cache emptied): loading the matrix from the store is most of it.
- one-shot CLI: `lantern search TEXT --mode semantic` in a fresh interpreter (with the same
  384-dimension hashing provider), wall time and peak resident memory, as a shell user pays it.
- resident memory of the long-lived process after its first search.

**Memory records in a new process** (`--memory-sizes`, 100k by default): a store of N memory
records with random unit vectors (no chunks), whose vector index (`lantern.indexes.vectors`)
is built first (its build time and size are a row), then, each in a fresh interpreter and
three times (the median is kept), with the index and with `LANTERN_INDEXES=off` (the vectors
read from the store's rows, as before the index):

- first search: `Lantern.open`, then the process's first `lt.memory.search(text,
  mode="semantic", limit=10)` timed on its own, and a second search after it; peak memory;
- one-shot CLI: `lantern memory search TEXT --mode semantic --limit 10 --json`, wall time and
  peak memory; beside it `lantern memory list --json --limit 10`, what a command costs that
  reads no vector.

The store's files and the index are in the page cache for both sides (the build has just read
them): what is compared is reading the rows against mapping the file.

At 100k, memory records are measured the same way (`lt.memory.search`), and hybrid is set
beside its parts: `any`, `semantic` and `hybrid` on chunks whose text holds words from a
5,000-word vocabulary, queried with three of them.

**Embedding** (`--backfill N`): N memory records of 40-200 characters embedded with MiniLM by
`lt.embed(sources=False)` (records a second; a backfill of 100k records is estimated from it,
linearly: the work per record does not depend on how many there are), and 200 chunks of about
1,000 characters (chunks a second). The machine's load average is printed beside: the two cores
are shared, and the model's rates follow what else runs.

Nothing here asserts a number; the tables are the result.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
DIM = 384
MODEL = f"lantern-hashing-v1-{DIM}"
VOCABULARY = 5_000
SEED = 20261214
LIMIT = 10

# The hashing provider at 384 dimensions, in this process and in the one-shot one: queries cost
# microseconds, so what is timed is the search. Only this benchmark does this.
PATCH = (
    f"import lantern.embeddings.hashing as h\nh.HashingProvider.__init__.__defaults__ = ({DIM},)\n"
)
exec(PATCH)

from lantern.api import Lantern  # noqa: E402
from lantern.semantic import index  # noqa: E402
from lantern.semantic.sides import CHUNKS, MEMORY  # noqa: E402


def words(rng: random.Random, count: int) -> str:
    return " ".join(f"w{rng.randrange(VOCABULARY)}" for _ in range(count))


def build(path: Path, size: int, *, memory: bool, chunks: bool = True) -> None:
    """A store of `size` chunks (and, with `memory`, as many memory records; without `chunks`,
    those alone), each with a random unit vector, written with raw sqlite3 into a store
    Lantern created."""
    Lantern.open(str(path)).close()
    rng = random.Random(SEED)
    generator = np.random.default_rng(SEED)
    conn = sqlite3.connect(path)
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute("PRAGMA synchronous = OFF")
    conn.execute(
        "INSERT INTO sources (id, uri, kind, title, content_hash, metadata, created_at, "
        "updated_at) VALUES ('src_bench', 'bench:vectors', 'document', NULL, 'x', '{}', 1, 1)"
    )
    batch = 20_000
    for start in range(0, size, batch):
        count = min(batch, size - start)
        vectors = generator.standard_normal((count, DIM), dtype=np.float32)
        vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
        blobs = [row.astype("<f4").tobytes() for row in vectors]
        chunk_ids = [f"chk_{i:016x}" for i in range(start, start + count)]
        if chunks:
            conn.executemany(
                "INSERT INTO chunks (id, source_id, ordinal, text, start_offset, end_offset, "
                "metadata, created_at) VALUES (?, 'src_bench', ?, ?, 0, 0, '{}', 1)",
                [(cid, start + i, words(rng, 8)) for i, cid in enumerate(chunk_ids)],
            )
            conn.executemany(
                "INSERT INTO embeddings (chunk_id, model, dim, vector) VALUES (?, ?, ?, ?)",
                [(cid, MODEL, DIM, blob) for cid, blob in zip(chunk_ids, blobs, strict=True)],
            )
        if memory:
            record_ids = [f"mem_{i:016x}" for i in range(start, start + count)]
            conn.executemany(
                "INSERT INTO memory_records (id, kind, content, scope, priority, urgency, "
                "confidence, status, created_at, updated_at, source_refs, identity_hash) "
                "VALUES (?, 'fact', ?, 'bench', 50, 0, 1.0, 'active', 1, 1, '[]', ?)",
                [(rid, words(rng, 8), rid[4:]) for rid in record_ids],
            )
            conn.executemany(
                "INSERT INTO memory_embeddings (memory_id, model, dim, vector, text_hash, "
                "created_at) VALUES (?, ?, ?, ?, 'x', 1)",
                [(rid, MODEL, DIM, blob) for rid, blob in zip(record_ids, blobs, strict=True)],
            )
        conn.commit()
    conn.execute("UPDATE store_settings SET value = 'bench' WHERE key LIKE 'vectors.%'")
    conn.commit()
    conn.close()


def rss_mb() -> float:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def ms(samples: list[float]) -> tuple[float, float]:
    ordered = sorted(samples)
    return statistics.median(ordered) * 1000, ordered[int(0.95 * (len(ordered) - 1))] * 1000


def timed(call: Callable[[], Any]) -> float:
    started = time.perf_counter()
    call()
    return time.perf_counter() - started


def latency(path: Path, size: int, repeat: int, *, memory: bool) -> list[dict[str, Any]]:
    rng = random.Random(SEED + 1)
    queries = [words(rng, 3) for _ in range(repeat)]
    from lantern.embeddings.hashing import HashingProvider

    provider = HashingProvider()
    rows = []
    sides = [("chunks", CHUNKS)] + ([("memory records", MEMORY)] if memory else [])
    for label, side in sides:
        index.forget_cached()
        with Lantern.open(str(path)) as lt:

            def search(text: str, lt: Lantern = lt, label: str = label) -> Any:
                if label == "chunks":
                    return lt.evidence.search(text, mode="semantic", limit=LIMIT, model="hashing")
                return lt.memory.search(text, mode="semantic", limit=LIMIT, model="hashing")

            first = timed(lambda: search(queries[0]))
            resident = rss_mb()
            matrix = index.load(lt.store, side, MODEL).matrix
            vectors = provider.embed(queries)
            floor: list[float] = []
            lantern: list[float] = []
            for position, text in enumerate(queries):
                query = vectors[position]

                def numpy_floor(query: Any = query, matrix: Any = matrix) -> None:
                    scores = matrix @ query
                    best = np.argpartition(-scores, LIMIT)[:LIMIT]
                    best[np.argsort(-scores[best])]

                floor.append(timed(numpy_floor))
                lantern.append(timed(partial(search, text)))
            floor_p50, floor_p95 = ms(floor)
            lantern_p50, lantern_p95 = ms(lantern)
            rows.append(
                {
                    "row": f"semantic search, {label}",
                    "size": size,
                    "floor_p50_ms": floor_p50,
                    "floor_p95_ms": floor_p95,
                    "lantern_p50_ms": lantern_p50,
                    "lantern_p95_ms": lantern_p95,
                    "ratio": lantern_p50 / floor_p50,
                    "first_search_s": first,
                    "resident_mb": resident,
                }
            )
    return rows


CLI = (
    PATCH
    + "import atexit, sys\n"
    + "def peak():\n"
    + "    with open('/proc/self/status') as status:\n"
    + "        line = next(line for line in status if line.startswith('VmHWM:'))\n"
    + "    print('peak_kb', line.split()[1], file=sys.stderr)\n"
    + "atexit.register(peak)\n"
    + "from lantern.cli import main\n"
    + "sys.argv = ['lantern', *sys.argv[1:]]\nmain()\n"
)
"""A fresh interpreter running the CLI's `main`, which reports its peak resident memory on
stderr as it exits: `VmHWM`, the high-water mark of its own address space (`ru_maxrss` would
count the benchmark's own memory too: Linux keeps it across the `exec` that starts the child).
"""


def command(path: Path, *args: str, env: dict[str, str] | None = None) -> dict[str, Any]:
    """One `lantern` command in a fresh interpreter: wall time, peak memory, its JSON."""
    started = time.perf_counter()
    ran = subprocess.run(
        [sys.executable, "-c", CLI, "--db", str(path), *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
        check=False,
        env={**os.environ, **(env or {})},
    )
    elapsed = time.perf_counter() - started
    if ran.returncode != 0:
        raise SystemExit(f"lantern {' '.join(args)} failed: {ran.stderr}")
    peak_kb = int(ran.stderr.split("peak_kb")[-1].split()[0])
    return {"s": elapsed, "peak_mb": peak_kb / 1024, "output": json.loads(ran.stdout)}


def one_shot(path: Path, text: str) -> dict[str, Any]:
    """`lantern search TEXT --mode semantic` as a command: wall time and peak memory."""
    ran = command(
        path,
        "search",
        text,
        "--mode",
        "semantic",
        "--model",
        "hashing",
        "--limit",
        str(LIMIT),
        "--json",
    )
    return {"one_shot_s": ran["s"], "one_shot_peak_mb": ran["peak_mb"], "hits": len(ran["output"])}


FIRST_SEARCH = (
    PATCH
    + """
import json, sys, time
from lantern.api import Lantern

with Lantern.open(sys.argv[1]) as lt:
    started = time.perf_counter()
    found = lt.memory.search(sys.argv[2], mode="semantic", limit=10, model="hashing")
    first = time.perf_counter() - started
    started = time.perf_counter()
    lt.memory.search(sys.argv[3], mode="semantic", limit=10, model="hashing")
    second = time.perf_counter() - started
with open("/proc/self/status") as status:
    peak = int(next(line for line in status if line.startswith("VmHWM:")).split()[1]) / 1024
print(json.dumps({"first_s": first, "second_s": second, "peak_mb": peak, "hits": len(found)}))
"""
)


def first_search(path: Path, env: dict[str, str]) -> dict[str, Any]:
    """A fresh interpreter's first memory search by meaning, and its second."""
    ran = subprocess.run(
        [sys.executable, "-c", FIRST_SEARCH, str(path), "w1 w2 w3", "w4 w5 w6"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        check=False,
        env={**os.environ, **env},
    )
    if ran.returncode != 0:
        raise SystemExit(f"the first search failed: {ran.stderr}")
    result: dict[str, Any] = json.loads(ran.stdout)
    return result


def median_of(runs: list[dict[str, Any]], key: str) -> float:
    return float(statistics.median(run[key] for run in runs))


def memory_process(path: Path, size: int, times: int = 3) -> dict[str, Any]:
    """The vector index built, then a new process's first memory search and the one-shot
    command, with the index and with the indexes off (medians of `times` runs)."""
    from lantern.indexes import place, vectors

    with Lantern.open(str(path)) as lt:
        directory = place.directory(lt.location)
        assert directory is not None
        vectors.remove(directory)
        started = time.perf_counter()
        built = vectors.build(lt.store, directory, MODEL)
        build_s = time.perf_counter() - started
    row: dict[str, Any] = {
        "row": "memory records, new process",
        "size": size,
        "index_build_s": build_s,
        "index_mb": built["bytes"] / 1e6,
        "load_average": os.getloadavg()[0],
    }
    search = ["memory", "search", "w1 w2 w3", "--mode", "semantic", "--model", "hashing"]
    search += ["--limit", str(LIMIT), "--json"]
    for label, env in (("index", {}), ("rows", {"LANTERN_INDEXES": "off"})):
        firsts = [first_search(path, env) for _ in range(times)]
        shots = [command(path, *search, env=env) for _ in range(times)]
        hits = {len(run["output"]) for run in shots} | {r["hits"] for r in firsts}
        assert hits == {LIMIT}, hits
        row[f"{label}_first_s"] = median_of(firsts, "first_s")
        row[f"{label}_second_s"] = median_of(firsts, "second_s")
        row[f"{label}_first_peak_mb"] = median_of(firsts, "peak_mb")
        row[f"{label}_cli_s"] = median_of(shots, "s")
        row[f"{label}_cli_peak_mb"] = median_of(shots, "peak_mb")
    listings = [
        command(path, "memory", "list", "--json", "--limit", str(LIMIT)) for _ in range(times)
    ]
    row["list_cli_s"] = median_of(listings, "s")
    row["list_cli_peak_mb"] = median_of(listings, "peak_mb")
    return row


def hybrid_parts(path: Path, repeat: int) -> dict[str, Any]:
    rng = random.Random(SEED + 2)
    queries = [words(rng, 3) for _ in range(repeat)]
    index.forget_cached()
    samples: dict[str, list[float]] = {"any": [], "semantic": [], "hybrid": []}
    with Lantern.open(str(path)) as lt:
        lt.evidence.search(queries[0], mode="hybrid", model="hashing", limit=LIMIT)
        for text in queries:
            for mode, found in samples.items():
                search = partial(lt.evidence.search, text, mode=mode, model="hashing", limit=LIMIT)
                found.append(timed(search))
    medians = {mode: ms(found)[0] for mode, found in samples.items()}
    return {
        "any_p50_ms": medians["any"],
        "semantic_p50_ms": medians["semantic"],
        "hybrid_p50_ms": medians["hybrid"],
        "hybrid_over_parts": medians["hybrid"] / (medians["any"] + medians["semantic"]),
    }


def backfill(work: Path, count: int) -> dict[str, Any]:
    rng = random.Random(SEED + 3)
    readme = [line.strip() for line in (ROOT / "README.md").read_text().splitlines()]
    prose = [line for line in readme if len(line) > 40]
    path = work / f"backfill-{count}.db"
    path.unlink(missing_ok=True)
    with Lantern.open(str(path)) as lt:
        records = []
        for i in range(count):
            text = rng.choice(prose)[: rng.randrange(40, 200)]
            records.append({"kind": "fact", "content": f"{text} ({i})"})
        lt.memory.add_many(records)
        chunk_text = " ".join(prose)
        for i in range(200):
            start = rng.randrange(0, max(1, len(chunk_text) - 1000))
            lt.evidence.ingest_text(f"bench:{i}", chunk_text[start : start + 1000], kind="document")
        load = os.getloadavg()[0]
        started = time.perf_counter()
        done = lt.embed(sources=False, model="minilm")
        memory_s = time.perf_counter() - started
        chunks = lt.embed(memory=False, model="minilm")
        assert done.memory is not None and chunks.sources is not None
    path.unlink(missing_ok=True)
    return {
        "records": done.memory.embedded,
        "records_s": memory_s,
        "records_per_s": done.memory.embedded / memory_s,
        "backfill_100k_estimated_min": 100_000 / (done.memory.embedded / memory_s) / 60,
        "chunks": chunks.sources.embedded,
        "chunks_per_s": chunks.sources.embedded / chunks.seconds,
        "load_average": load,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument(
        "--sizes", default="100000", help="comma-separated vector counts ('' for none)"
    )
    parser.add_argument("--repeat", type=int, default=200, help="queries per row")
    parser.add_argument("--backfill", type=int, help="records to embed with MiniLM")
    parser.add_argument(
        "--memory-sizes",
        default="100000",
        help="comma-separated memory record counts for the new-process rows ('' for none)",
    )
    parser.add_argument("--work", type=Path, help="where stores are kept (default: a temp dir)")
    parser.add_argument("--json", dest="json_path", type=Path)
    args = parser.parse_args(argv)
    work = args.work or Path(tempfile.mkdtemp(prefix="lantern-semantic-"))
    work.mkdir(parents=True, exist_ok=True)
    results: dict[str, Any] = {"latency": [], "load_average": os.getloadavg()[0]}
    try:
        for size in (int(value) for value in args.sizes.split(",") if value):
            path = work / f"vectors-{size}.db"
            memory = size <= 100_000
            if not path.exists():
                started = time.perf_counter()
                build(path, size, memory=memory)
                print(f"built {path} in {time.perf_counter() - started:.0f} s", file=sys.stderr)
            rows = latency(path, size, args.repeat, memory=memory)
            rows[0].update(one_shot(path, "w1 w2 w3"))
            results["latency"] += rows
            if size == 100_000:
                results["hybrid"] = {"size": size, **hybrid_parts(path, args.repeat)}
        results["memory_process"] = []
        for size in (int(value) for value in args.memory_sizes.split(",") if value):
            path = work / f"memory-{size}.db"
            if not path.exists():
                started = time.perf_counter()
                build(path, size, memory=True, chunks=False)
                print(f"built {path} in {time.perf_counter() - started:.0f} s", file=sys.stderr)
            results["memory_process"].append(memory_process(path, size))
        if args.backfill:
            results["embedding"] = backfill(work, args.backfill)
    finally:
        if args.work is None:
            shutil.rmtree(work, ignore_errors=True)
    print(render(results))
    if args.json_path:
        args.json_path.write_text(json.dumps(results, indent=2) + "\n")
    return 0


def render(results: dict[str, Any]) -> str:
    lines = [
        f"{'row':<32} {'N':>9} {'floor p50':>10} {'Lantern p50':>12} {'ratio':>6} "
        f"{'p95 floor/Lantern':>18} {'first':>7} {'RSS':>7}",
    ]
    for row in results["latency"]:
        lines.append(
            f"{row['row']:<32} {row['size']:>9,} {row['floor_p50_ms']:>8.2f}ms "
            f"{row['lantern_p50_ms']:>10.2f}ms {row['ratio']:>5.2f}x "
            f"{row['floor_p95_ms']:>8.2f}/{row['lantern_p95_ms']:.2f}ms "
            f"{row['first_search_s']:>6.2f}s {row['resident_mb']:>5.0f}MB"
        )
        if "one_shot_s" in row:
            lines.append(
                f"{'  one-shot CLI search':<32} {row['size']:>9,} "
                f"{row['one_shot_s']:>10.2f} s wall, peak {row['one_shot_peak_mb']:.0f} MB"
            )
    for row in results.get("memory_process", []):
        lines.append(
            f"memory records, new process, {row['size']:,}: index built in "
            f"{row['index_build_s']:.1f} s, {row['index_mb']:.0f} MB "
            f"(load average {row['load_average']:.1f})"
        )
        for label, name in (("index", "with the index"), ("rows", "store's rows")):
            lines.append(
                f"  {name:<16} first search {row[f'{label}_first_s']:.3f} s "
                f"(second {row[f'{label}_second_s'] * 1000:.1f} ms, peak "
                f"{row[f'{label}_first_peak_mb']:.0f} MB); one-shot CLI "
                f"{row[f'{label}_cli_s']:.2f} s, peak {row[f'{label}_cli_peak_mb']:.0f} MB"
            )
        lines.append(
            f"  {'memory list':<16} one-shot CLI {row['list_cli_s']:.2f} s, peak "
            f"{row['list_cli_peak_mb']:.0f} MB"
        )
    hybrid = results.get("hybrid")
    if hybrid:
        lines.append(
            f"hybrid at {hybrid['size']:,} chunks: any {hybrid['any_p50_ms']:.2f} ms + semantic "
            f"{hybrid['semantic_p50_ms']:.2f} ms; hybrid {hybrid['hybrid_p50_ms']:.2f} ms = "
            f"{hybrid['hybrid_over_parts']:.2f}x the sum of its parts"
        )
    embedding = results.get("embedding")
    if embedding:
        whole = embedding["records"] >= 100_000
        estimate = f" (100k: about {embedding['backfill_100k_estimated_min']:.0f} min, estimated)"
        lines.append(
            f"MiniLM: {embedding['records']:,} records in {embedding['records_s']:.0f} s = "
            f"{embedding['records_per_s']:.0f} records/s{'' if whole else estimate}; "
            f"{embedding['chunks_per_s']:.1f} chunks/s of ~1,000 characters; "
            f"load average {embedding['load_average']:.1f}"
        )
    lines.append(f"load average at the start: {results['load_average']:.1f} (2 cores, shared)")
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
