"""A confined caller's memory search beside an unconfined one, on the same store.

    python bench/confined_search.py                  # 10,000 records
    python bench/confined_search.py --size 100000

A store of N records written by `add_many` (the corpus of `common.py`: 100 skewed scopes, the
busiest, `project:p000`, holds about a fifth of them). Keyword (1-3 words, every word required)
and any (a 6-10 word question) searches, top 20, call by call in turns:

- unconfined, with the word index (tantivy) and without it (`LANTERN_INDEXES=off`: FTS5);
- confined to `project:p000`, with its fenced word index, and without it (BM25 counted within
  the scopes over FTS5's matches, `lantern.memory.fenced`);
- the confined search right after a record is added outside its scopes, beside the same
  search after nothing was written (what a confined caller could time).

Nothing here asserts a number; the table is the result.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from common import WORDS, build_memory_store, percentiles, question_queries, search_queries

from lantern import Lantern

FENCE = "project:p000"
REPEAT = 60


def _timed(calls: dict[str, Callable[[int], object]], repeat: int) -> dict[str, list[float]]:
    """Milliseconds of each call, the calls taking turns; each gets its index."""
    for call in calls.values():
        for i in range(5):
            call(repeat + i)
    samples: dict[str, list[float]] = {name: [] for name in calls}
    for i in range(repeat):
        for name, call in calls.items():
            start = time.perf_counter()
            call(i)
            samples[name].append((time.perf_counter() - start) * 1000)
    return samples


def _indexes(on: bool) -> None:
    if on:
        os.environ.pop("LANTERN_INDEXES", None)
    else:
        os.environ["LANTERN_INDEXES"] = "off"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=REPEAT)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "bench.db"
        build_memory_store(path, args.size)
        keywords = search_queries(args.repeat + 10, words=WORDS)
        questions = question_queries(args.repeat + 10, words=WORDS)
        with Lantern.open(path) as lt, Lantern.open(path, scopes=[FENCE]) as confined:
            inside = len(confined.memory.list(status="all", limit=10_000))
            print(f"{args.size:,} records, {inside:,} in {FENCE}; median / p95 ms, top 20")
            for mode, queries in (("keyword", keywords), ("any", questions)):

                def search(
                    handle: Lantern, on: bool, i: int, q: list[str] = queries, m: str = mode
                ) -> object:
                    _indexes(on)
                    return handle.memory.search(q[i % len(q)], mode=m, limit=20)

                calls: dict[str, Callable[[int], object]] = {
                    "unconfined, word index": lambda i: search(lt, True, i),
                    "unconfined, FTS5": lambda i: search(lt, False, i),
                    "confined, fenced word index": lambda i: search(confined, True, i),
                    "confined, BM25 within the scopes": lambda i: search(confined, False, i),
                }
                for name, samples in _timed(calls, args.repeat).items():
                    median, p95 = percentiles(samples)
                    print(f"  {mode:8} {name:34} {median:8.2f} {p95:8.2f}")
            _indexes(True)
            after: list[float] = []
            quiet: list[float] = []
            for i in range(args.repeat):
                lt.memory.add(kind="fact", scope="project:p050", content=f"Elsewhere {i}.")
                time.sleep(0.2)  # the writer's own index catch-up, in the background
                start = time.perf_counter()
                confined.memory.search(keywords[i], mode="keyword", limit=20)
                after.append((time.perf_counter() - start) * 1000)
                start = time.perf_counter()
                confined.memory.search(keywords[i], mode="keyword", limit=20)
                quiet.append((time.perf_counter() - start) * 1000)
            for name, samples in (("after a write outside", after), ("after none", quiet)):
                median, p95 = percentiles(samples)
                print(f"  confined keyword search {name:22} {median:8.2f} {p95:8.2f}")


if __name__ == "__main__":
    main()
