"""`LanternStore` beside LangGraph's own SQLite store: a put and a get, one item at a time.

    python bench/langgraph_bench.py                     # 10,000 items, 500 samples a row
    python bench/langgraph_bench.py --items 100000 --json out.json

Both stores hold the same items, in files of their own: N items spread over 100 namespaces
`("user:uNNN", "memories")`, each value `{"text": ..., "n": ...}` with 50-300 characters of
text (the generator of bench/run.py). `LanternStore`'s are written as it writes them (the same
content and reference, by `add_many`, so that a large store fills in seconds); LangGraph's by
its own `batch`. Every row then takes turns call by call, Lantern and its floor, in the same
process, after a warm-up. Rows:

- put, a new item: `store.put(namespace, new_key, value)`, committed;
- put, a new value: `store.put` of an existing key with another value (Lantern revises the
  record in place and appends to its history);
- get: `store.get(namespace, key)` of an existing item;
- search, no query: `store.search(namespace, limit=10)` (no target: given for scale).

The floor is `langgraph.store.sqlite.SqliteStore` (the `langgraph-checkpoint-sqlite` package)
twice: as `SqliteStore.from_conn_string(path)` gives it, on SQLite's defaults (a rollback
journal and `synchronous = FULL`: a commit waits for two `fsync`s), and on a connection set as
Lantern sets its own (`journal_mode = WAL`, `synchronous = NORMAL`), which makes the same
promise Lantern makes about a commit and is the fair floor. The targets (bench/README.md) are
put and get at most 1.5 times that floor. Nothing here asserts a time: the table is the result.
"""

from __future__ import annotations

import argparse
import json
import platform
import random
import sqlite3
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict
from pathlib import Path
from typing import Any

from common import Result, render, sentence, side_by_side
from langgraph.store.base import BaseStore, PutOp
from langgraph.store.sqlite import SqliteStore

from lantern import Lantern
from lantern.integrations.langgraph import LanternStore
from lantern.integrations.langgraph.mapping import content_of, path_of, reference, scope_of

NAMESPACES = [(f"user:u{n:03d}", "memories") for n in range(100)]


def items(n: int, seed: int = 3) -> Iterator[tuple[tuple[str, str], str, dict[str, Any]]]:
    """N items: a namespace, a key and a value each (fixed seed: two runs put the same)."""
    rng = random.Random(seed)
    for i in range(n):
        yield NAMESPACES[i % len(NAMESPACES)], f"k{i}", {"text": sentence(rng, 50, 300), "n": i}


def fill_lantern(path: Path, n: int) -> None:
    """The items as `LanternStore` writes them: one record each, its content and reference."""
    with Lantern.open(path) as lt:
        batch: list[dict[str, object]] = []
        for namespace, key, value in items(n):
            scope = scope_of(namespace)
            batch.append(
                {
                    "kind": "fact",
                    "scope": scope,
                    "content": content_of(key, value, None),
                    "source_refs": [reference(path_of(scope, key))],
                }
            )
            if len(batch) == 10_000:
                lt.memory.add_many(batch)
                batch = []
        if batch:
            lt.memory.add_many(batch)


def fill_langgraph(store: BaseStore, n: int) -> None:
    ops = [PutOp(namespace, key, value) for namespace, key, value in items(n)]
    for start in range(0, len(ops), 1000):
        store.batch(ops[start : start + 1000])


@contextmanager
def sqlite_store(path: Path, *, lantern_pragmas: bool) -> Iterator[SqliteStore]:
    """LangGraph's SQLite store on `path`, on SQLite's defaults as `from_conn_string` opens
    it, or with the journal and synchronous settings Lantern uses."""
    conn = sqlite3.connect(path, check_same_thread=False, isolation_level=None)
    if lantern_pragmas:
        conn.execute("PRAGMA journal_mode = WAL")
        conn.execute("PRAGMA synchronous = NORMAL")
    try:
        store = SqliteStore(conn)
        store.setup()
        yield store
    finally:
        conn.close()


def rows(ours: BaseStore, theirs: BaseStore, floor: str, n: int, repeat: int) -> list[Result]:
    rng = random.Random(5)
    value = {"text": sentence(rng, 50, 300), "n": -1}
    existing = [(NAMESPACES[i % len(NAMESPACES)], f"k{i}") for i in range(n)]

    def pick(i: int) -> tuple[tuple[str, str], str]:
        return existing[(i * 7919) % n]

    def put_new(store: BaseStore, tag: str) -> Callable[[int], object]:
        def call(i: int) -> None:
            store.put(NAMESPACES[i % len(NAMESPACES)], f"new-{floor}-{tag}-{i}", value)

        return call

    def put_again(store: BaseStore) -> Callable[[int], object]:
        def call(i: int) -> None:
            namespace, key = pick(i)
            store.put(namespace, key, {"text": f"revised {i}: {value['text']}", "n": i})

        return call

    def get(store: BaseStore) -> Callable[[int], object]:
        def call(i: int) -> None:
            namespace, key = pick(i)
            assert store.get(namespace, key) is not None

        return call

    def search(store: BaseStore) -> Callable[[int], object]:
        def call(i: int) -> None:
            assert store.search(NAMESPACES[i % len(NAMESPACES)], limit=10)

        return call

    return [
        side_by_side(
            f"put, a new item ({floor})", n, put_new(ours, "a"), put_new(theirs, "b"), repeat
        ),
        side_by_side(f"put, a new value ({floor})", n, put_again(ours), put_again(theirs), repeat),
        side_by_side(f"get ({floor})", n, get(ours), get(theirs), repeat),
        side_by_side(f"search, top 10 ({floor})", n, search(ours), search(theirs), repeat),
    ]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=10_000, help="items in each store")
    parser.add_argument("--repeat", type=int, default=500, help="samples per row")
    parser.add_argument("--json", dest="json_path", help="also write the rows to this file")
    args = parser.parse_args(argv)
    results: list[Result] = []
    with tempfile.TemporaryDirectory(prefix="lantern-langgraph-bench-") as tmp:
        work = Path(tmp)
        fill_lantern(work / "lantern.db", args.items)
        for floor, pragmas in (("SqliteStore, WAL", True), ("SqliteStore, defaults", False)):
            path = work / f"langgraph-{pragmas}.db"
            with sqlite_store(path, lantern_pragmas=pragmas) as theirs:
                fill_langgraph(theirs, args.items)
                with LanternStore.open(str(work / "lantern.db")) as ours:
                    results.extend(rows(ours, theirs, floor, args.items, args.repeat))
    print(render(results))
    if args.json_path:
        about = {"python": platform.python_version(), "sqlite": sqlite3.sqlite_version}
        payload = {"machine": about, "results": [asdict(r) | {"ratio": r.ratio} for r in results]}
        Path(args.json_path).write_text(json.dumps(payload, indent=2) + "\n")


if __name__ == "__main__":
    main()
