"""What the benchmarks share: the result rows, the generated stores and queries, the table.

`run.py` and `mcp_bench.py` both import this module, and neither imports the other: `run.py`
runs the MCP rows by importing `mcp_bench`, which must not import `run.py` back (a script
imported by name runs a second time, as a module of its own).
"""

from __future__ import annotations

import compileall
import random
import sqlite3
import statistics
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import lantern
from lantern import Lantern

KINDS = ("fact", "preference", "goal", "constraint", "task_state", "observation", "hypothesis")
WORDS = (  # noqa: SIM905 - a word list is easier to read as text
    "agent memory store record scope priority branch deploy review build test release note "
    "user project host config cache index query search result evidence source chunk session "
    "plan goal task state change update archive policy order time value field check error "
    "fix data file path line code module function class method option command output input "
    "log prefer always never before after first last small large fast slow local remote "
    "shared "
).split()
SYLLABLES = (  # noqa: SIM905 - a word list is easier to read as text
    "ka lo mi ner tos va ri den sul pa th or en al is re co de ma li un ex pro ter "
).split()
SLOW_SAMPLES = 100
"""Samples of a keyword search over records: its calls take up to a second at 1M records,
and 100 samples give a steady median and 95th percentile."""


@dataclass
class Result:
    operation: str
    n: int
    lantern_p50: float
    lantern_p95: float
    raw_p50: float | None
    raw_p95: float | None
    unit: str = "ms"

    @property
    def ratio(self) -> float | None:
        if self.raw_p50 in (None, 0):
            return None
        return self.lantern_p50 / self.raw_p50


def timed(fn: Callable[[int], object], i: int) -> float:
    """Milliseconds of one call; each call gets its index so it can vary its input."""
    start = time.perf_counter()
    fn(i)
    return (time.perf_counter() - start) * 1000


def side_by_side(
    operation: str,
    n: int,
    lantern_fn: Callable[[int], object],
    raw_fn: Callable[[int], object] | None,
    repeat: int,
) -> Result:
    # Warm up both, then take turns call by call, so that both sides see the same machine.
    for i in range(min(20, repeat)):
        lantern_fn(repeat * 10 + i)
        if raw_fn is not None:
            raw_fn(repeat * 20 + i)
    own: list[float] = []
    floor: list[float] = []
    for i in range(repeat):
        own.append(timed(lantern_fn, i))
        if raw_fn is not None:
            floor.append(timed(raw_fn, i))
    lantern = percentiles(own)
    raw = percentiles(floor) if raw_fn is not None else (None, None)
    return Result(operation, n, lantern[0], lantern[1], raw[0], raw[1])


def percentiles(samples: list[float]) -> tuple[float, float]:
    ordered = sorted(samples)
    p95 = ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]
    return statistics.median(ordered), p95


def sentence(rng: random.Random, low: int, high: int) -> str:
    target = rng.randint(low, high)
    words: list[str] = []
    length = 0
    while length < target:
        word = rng.choice(WORDS)
        words.append(word)
        length += len(word) + 1
    return " ".join(words)[:target].strip().capitalize() + "."


def scope_names() -> list[str]:
    return [f"project:p{i:03d}" for i in range(100)]


def scope_weights() -> list[float]:
    # Skewed like real use: a few busy scopes, a long tail (Zipf, s = 1).
    return [1 / (rank + 1) for rank in range(100)]


def memory_records(n: int, seed: int = 7) -> Iterator[dict[str, object]]:
    """Deterministic records: 100 skewed scopes, all 7 kinds, content of 50-300 characters."""
    rng = random.Random(seed)
    scopes = scope_names()
    weights = scope_weights()
    for i in range(n):
        yield {
            "kind": KINDS[i % len(KINDS)],
            "scope": rng.choices(scopes, weights)[0],
            "content": f"{sentence(rng, 50, 300)} #{i}",
            "priority": rng.randint(0, 100),
            "urgency": rng.randint(0, 100),
            "confidence": round(rng.random(), 2),
        }


def build_memory_store(path: Path, n: int) -> None:
    """A store of n records written through `add_many` (so search and history rows exist), then
    80 % active / 15 % archived / 5 % superseded, set in bulk."""
    with Lantern.open(path) as lt:
        batch: list[dict[str, object]] = []
        for fields in memory_records(n):
            batch.append(fields)
            if len(batch) == 10_000:
                lt.memory.add_many(batch)
                batch = []
        if batch:
            lt.memory.add_many(batch)
    conn = sqlite3.connect(path)
    conn.execute(
        "UPDATE memory_records SET status = CASE "
        "WHEN abs(rowid * 7919) % 100 < 15 THEN 'archived' "
        "WHEN abs(rowid * 7919) % 100 < 20 THEN 'superseded' ELSE 'active' END"
    )
    conn.commit()
    conn.execute("ANALYZE")
    conn.close()


def vocabulary(size: int = 6000, seed: int = 11) -> list[str]:
    """English-like words: the common ones above, then pseudo-words for a long tail."""
    rng = random.Random(seed)
    words = list(WORDS)
    seen = set(words)
    while len(words) < size:
        word = "".join(rng.choice(SYLLABLES) for _ in range(rng.randint(2, 4)))
        if word not in seen:
            seen.add(word)
            words.append(word)
    return words


def search_queries(count: int, seed: int = 5, words: Sequence[str] | None = None) -> list[str]:
    """1-3 words from the middle of the vocabulary: found in some texts, not in all."""
    rng = random.Random(seed)
    pool = list(words) if words is not None else vocabulary()[60:3000]
    return [" ".join(rng.sample(pool, rng.randint(1, 3))) for _ in range(count)]


def question_queries(count: int, seed: int = 6, words: Sequence[str] | None = None) -> list[str]:
    """Questions as an agent asks them: 2-3 words of the vocabulary among common words."""
    rng = random.Random(seed)
    pool = list(words) if words is not None else vocabulary()[60:3000]
    asked = []
    for _ in range(count):
        picked = rng.sample(pool, rng.randint(2, 3))
        asked.append(f"{rng.choice(QUESTION_WORDS)} {' '.join(picked)}?")
    return asked


QUESTION_WORDS = ("what is the", "where does the", "how do we", "why did the", "which")


def compile_lantern() -> None:
    """Lantern's bytecode, as `pip install` writes it: an editable install run with
    PYTHONDONTWRITEBYTECODE set would otherwise compile its modules on every start, while
    SQLAlchemy's and the SDK's were compiled when they were installed."""
    compileall.compile_dir(Path(lantern.__file__).parent, quiet=1)


def render(results: list[Result]) -> str:
    header = (
        f"{'operation':<42} {'N':>9} {'lantern p50':>12} {'p95':>9} {'raw p50':>10} "
        f"{'p95':>9} {'ratio':>7}"
    )
    lines = [header, "-" * len(header)]
    for r in results:
        raw50 = "-" if r.raw_p50 is None else f"{r.raw_p50:.3f}"
        raw95 = "-" if r.raw_p95 is None else f"{r.raw_p95:.3f}"
        ratio = "-" if r.ratio is None else f"{r.ratio:.2f}x"
        lines.append(
            f"{r.operation:<42} {r.n:>9,} {r.lantern_p50:>12.3f} {r.lantern_p95:>9.3f} "
            f"{raw50:>10} {raw95:>9} {ratio:>7}"
        )
    lines.append("times in ms; process rows compare with `python -c 'import sqlalchemy.orm'`")
    return "\n".join(lines)
