"""Search at scale: memory search beside the floors of the engines it is built on, by store size.

    python bench/search_scale.py                         # 10k and 100k records
    python bench/search_scale.py --sizes 10000,100000,1000000
    python bench/search_scale.py --json out.json         # also write the figures as JSON

A store of N memory records written by `add_many` (the benchmark corpus of `common.py`: 100
skewed scopes, 50-300 characters, 80 % active), each with a random unit vector of 384
dimensions (MiniLM's size) written straight into `memory_embeddings`. Queries are embedded by
the hashing provider at 384 dimensions (microseconds), so what is timed is the search. Rows, each
beside its floor measured in the same run, call by call in turns:

- keyword (1-3 words, every word required) and any (a 6-10 word question, any word), top 20:
  Lantern (`lt.memory.search`) beside tantivy's own top-k for the same words over the same
  records (a plain index of id, status and content: the engine with nothing around it), and
  beside raw `sqlite3` FTS5 (what a search costs without a top-k engine).
- default search (no mode named: hybrid, `any` fused with semantic), top 20: Lantern beside
  tantivy's OR top-20 plus numpy over the vectors already in memory (`matrix @ q`, best 10).
- one-shot: `lantern memory search QUESTION` and `lantern memory list --json` as processes,
  wall time and peak resident memory.
- semantic search, top 10: Lantern beside numpy over the vectors in memory; with the index's
  nearest-neighbour graph where the store keeps one (`--graph-from`, default 50,000 vectors;
  a graph whose recall on its own rows is too low is not kept), its recall@10 against the
  same searches made exactly (`LANTERN_VECTOR_SEARCH=exact`), and the default search made
  exactly, for comparison. `--vectors clustered` gives the records vectors with
  neighbourhoods (1,000 centres plus noise) instead of random ones, and the questions vectors
  drawn the same way (in this process only; the one-shot CLI rows embed as before).
- the indexes' builds (`lantern db rebuild-index` does the same, the graph included) and their
  size on disk, and a search right after a write, which catches the word index up first.

With `--postgres URL` (a database the benchmark may create schemas in) it measures a
PostgreSQL store instead, in a schema of its own dropped afterwards: keyword and `any` top 20
inside the database (what a one-shot process does) beside the same searches in a process that
keeps the word index (`Lantern.keep_indexes`, as `lantern mcp` and `lantern ui` do), the
index's build at start, a search right after a write, and `lantern memory search` as a process.

Nothing here asserts a number; the table is the result.
"""

from __future__ import annotations

import argparse
import json
import os
import sqlite3
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np
from common import (
    WORDS,
    build_memory_store,
    memory_records,
    percentiles,
    question_queries,
    search_queries,
)

ROOT = Path(__file__).resolve().parent.parent
DIM = 384
MODEL = f"lantern-hashing-v1-{DIM}"
SEED = 20261202
PATCH = (
    f"import lantern.embeddings.hashing as h\nh.HashingProvider.__init__.__defaults__ = ({DIM},)\n"
)
exec(PATCH)
os.environ["LANTERN_EMBED_MODEL"] = "hashing"

import tantivy  # noqa: E402

from lantern import Lantern  # noqa: E402
from lantern.embeddings.hashing import HashingProvider  # noqa: E402
from lantern.indexes import graph, place, vectors, words  # noqa: E402
from lantern.memory import topk  # noqa: E402
from lantern.semantic import index  # noqa: E402

FTS_AND = (
    "SELECT memory_records.id, -bm25(memory_fts) AS score FROM memory_fts "
    "JOIN memory_records ON memory_records.id = memory_fts.record_id "
    "WHERE memory_fts MATCH ? AND memory_records.status = 'active' "
    "ORDER BY score DESC LIMIT 21"
)


VECTORS = ["random"]
"""`random` (the default: every vector a random direction, no neighbourhoods) or `clustered`
(each a random one of 1,000 centres plus noise, as embeddings of texts on shared topics)."""


def clustered_queries() -> None:
    """Queries from the distribution of the clustered vectors: each question's vector is a
    centre chosen by a hash of its text plus noise, as a text's embedding lies near those of
    texts on its topic (the hashing provider's vectors are random directions, which no store
    of embeddings would be asked)."""
    import hashlib

    centres = np.random.default_rng(7).standard_normal((1000, DIM), dtype=np.float32)

    def embed(self: HashingProvider, texts: Any) -> Any:
        rows = []
        for text in texts:
            seed = int.from_bytes(hashlib.blake2b(text.encode(), digest_size=8).digest(), "little")
            noise = np.random.default_rng(seed).standard_normal(DIM, dtype=np.float32)
            rows.append(centres[seed % 1000] + 0.7 * noise)
        matrix = np.asarray(rows, dtype=np.float32).reshape(len(rows), DIM)
        return matrix / np.linalg.norm(matrix, axis=1, keepdims=True)

    HashingProvider.embed = embed  # type: ignore[method-assign]


def add_vectors(path: Path) -> None:
    """A unit vector of 384 dimensions for every record (see `VECTORS`), recorded under the
    hashing provider's model id (raw sqlite3: the triggers feed the vector index as any write
    does)."""
    generator = np.random.default_rng(SEED)
    centres = np.random.default_rng(7).standard_normal((1000, DIM), dtype=np.float32)
    conn = sqlite3.connect(path)
    ids = [row[0] for row in conn.execute("SELECT id FROM memory_records ORDER BY id")]
    for start in range(0, len(ids), 20_000):
        part = ids[start : start + 20_000]
        vectors = generator.standard_normal((len(part), DIM), dtype=np.float32)
        if VECTORS[0] == "clustered":
            vectors = centres[generator.integers(0, 1000, len(part))] + 0.7 * vectors
        vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
        conn.executemany(
            "INSERT INTO memory_embeddings (memory_id, model, dim, vector, text_hash, "
            "created_at) VALUES (?, ?, ?, ?, 'x', 1)",
            [
                (rid, MODEL, DIM, row.astype("<f4").tobytes())
                for rid, row in zip(part, vectors, strict=True)
            ],
        )
    conn.commit()
    conn.close()


class Floor:
    """The engines alone: tantivy over (id, status, content), numpy over the vectors."""

    def __init__(self, path: Path, work: Path) -> None:
        builder = tantivy.SchemaBuilder()
        builder.add_text_field("id", stored=True, tokenizer_name="raw")
        builder.add_text_field("status", tokenizer_name="raw")
        builder.add_text_field("content", index_option="position")
        self.schema = builder.build()
        folder = work / f"floor-{path.stem}"
        folder.mkdir()
        self.index = tantivy.Index(self.schema, path=str(folder))
        writer = self.index.writer(256_000_000)
        conn = sqlite3.connect(path)
        for record_id, status, content in conn.execute(
            "SELECT id, status, content FROM memory_records"
        ):
            writer.add_document(tantivy.Document(id=record_id, status=status, content=content))
        writer.commit()
        writer.wait_merging_threads()
        self.index.reload()
        self.searcher = self.index.searcher()
        rows = conn.execute(
            "SELECT memory_id, vector FROM memory_embeddings WHERE model = ?", (MODEL,)
        ).fetchall()
        conn.close()
        self.ids = [row[0] for row in rows]
        self.matrix = np.frombuffer(b"".join(row[1] for row in rows), "<f4").reshape(-1, DIM)
        self.provider = HashingProvider(DIM)

    def words(self, text: str, *, any_word: bool) -> list[str]:
        occur = tantivy.Occur.Should if any_word else tantivy.Occur.Must
        terms = [word.lower() for word in text.replace("?", " ").split()]
        query = tantivy.Query.boolean_query(
            [
                (
                    tantivy.Occur.Must,
                    tantivy.Query.boolean_query(
                        [
                            (occur, tantivy.Query.term_query(self.schema, "content", term))
                            for term in terms
                        ]
                    ),
                ),
                (tantivy.Occur.Must, tantivy.Query.term_query(self.schema, "status", "active")),
            ]
        )
        hits = self.searcher.search(query, 20, count=False).hits
        return [self.searcher.doc(address)["id"][0] for _score, address in hits]

    def vectors(self, text: str) -> list[str]:
        query = self.provider.embed([text])[0]
        scores = self.matrix @ np.asarray(query, dtype=np.float32)
        best = np.argpartition(-scores, 10)[:10]
        return [self.ids[i] for i in best[np.argsort(-scores[best])]]


class exact_search:
    """Searches compare the query with every vector (`LANTERN_VECTOR_SEARCH=exact`)."""

    def __enter__(self) -> None:
        os.environ[graph.ENV_VAR] = "exact"
        index.forget_cached()

    def __exit__(self, *exc: object) -> None:
        del os.environ[graph.ENV_VAR]
        index.forget_cached()


def recall(lt: Lantern, questions: list[str]) -> float:
    """recall@10 of semantic search (through the graph where the index has one) against the
    same search made exactly: the share of exact search's first ten it finds."""

    def first_ten() -> list[set[str]]:
        return [
            {m.record.id for m in lt.memory.search(q, mode="semantic", limit=10)} for q in questions
        ]

    found = first_ten()
    with exact_search():
        exact = first_ten()
    return round(sum(len(a & b) for a, b in zip(found, exact, strict=True)) / (10 * len(exact)), 4)


def timed(call: Callable[[], object]) -> float:
    started = time.perf_counter()
    call()
    return (time.perf_counter() - started) * 1000


def turns(
    ours: Callable[[int], object], floors: dict[str, Callable[[int], object]], repeat: int
) -> dict[str, tuple[float, float]]:
    for i in range(10):
        ours(repeat + i)
        for floor in floors.values():
            floor(repeat + i)
    samples: dict[str, list[float]] = {"lantern": [], **{name: [] for name in floors}}
    for i in range(repeat):
        samples["lantern"].append(timed(partial(ours, i)))
        for name, floor in floors.items():
            samples[name].append(timed(partial(floor, i)))
    return {name: percentiles(values) for name, values in samples.items()}


def process(argv: list[str]) -> tuple[float, float]:
    """Wall seconds and peak resident MB of the CLI as a fresh process (its own high-water
    mark, `VmHWM`, read as it exits: a forked child's rusage counts its parent's pages)."""
    script = PATCH + "import atexit, sys\nfrom lantern.cli import main\n"
    script += "atexit.register(lambda: print(open('/proc/self/status').read(), file=sys.stderr))\n"
    script += "sys.argv = ['lantern', *sys.argv[1:]]\nmain()\n"
    started = time.perf_counter()
    ran = subprocess.run(
        [sys.executable, "-c", script, *argv], capture_output=True, text=True, check=False
    )
    elapsed = time.perf_counter() - started
    if ran.returncode != 0:
        raise SystemExit(f"{argv} failed: {ran.stderr}")
    peak_kb = next(
        int(line.split()[1]) for line in ran.stderr.splitlines() if line.startswith("VmHWM:")
    )
    return elapsed, peak_kb / 1024


def measure(work: Path, n: int, repeat: int) -> dict[str, Any]:
    path = work / f"memory-{n}.db"
    started = time.perf_counter()
    build_memory_store(path, n)
    add_vectors(path)
    built_store = time.perf_counter() - started
    floor = Floor(path, work)
    keyword_queries = search_queries(repeat + 20, words=WORDS)
    questions = question_queries(repeat + 20, words=WORDS)
    raw = sqlite3.connect(path)
    row: dict[str, Any] = {"records": n, "store_build_s": round(built_store, 1)}
    with Lantern.open(path) as lt:
        started = time.perf_counter()
        words.build(lt.store, place.directory(lt.location) or work)
        row["word_index_build_s"] = round(time.perf_counter() - started, 2)
        current = place.current(place.directory(lt.location) or work, words.NAME)
        row["word_index_mb"] = round(place.size(current) / 1e6, 1) if current else None
        # The vector index, as `lantern db rebuild-index` builds it for a store past the size
        # a search builds one for.
        started = time.perf_counter()
        built = vectors.build(lt.store, place.directory(lt.location) or work, MODEL)
        row["vector_index_build_s"] = round(time.perf_counter() - started, 2)
        row["vector_index_mb"] = round(built["bytes"] / 1e6, 1)
        row["graph_rows"] = built["graph_rows"]
        row["vectors"] = VECTORS[0]
        generation = place.current(place.directory(lt.location) or work, vectors.name_of(MODEL))
        found = graph.files(generation) if generation else []
        row["graph_breadth"] = graph.breadth_of(found[0][1]) if found else None

        def fts(text: str) -> object:
            match = " ".join(f'"{word}"' for word in text.split())
            return raw.execute(FTS_AND, (match,)).fetchall()

        row["keyword"] = turns(
            lambda i: lt.memory.search(keyword_queries[i], mode="keyword", limit=20),
            {
                "tantivy": lambda i: floor.words(keyword_queries[i], any_word=False),
                "fts5": lambda i: fts(keyword_queries[i]),
            },
            repeat,
        )
        row["any"] = turns(
            lambda i: lt.memory.search(questions[i], mode="any", limit=20),
            {"tantivy": lambda i: floor.words(questions[i], any_word=True)},
            repeat,
        )
        row["default"] = turns(
            lambda i: lt.memory.search(questions[i], limit=20),
            {
                "tantivy+numpy": lambda i: (
                    floor.words(questions[i], any_word=True),
                    floor.vectors(questions[i]),
                )
            },
            repeat,
        )
        row["semantic"] = turns(
            lambda i: lt.memory.search(questions[i], mode="semantic", limit=10),
            {"numpy": lambda i: floor.vectors(questions[i])},
            repeat,
        )
        with exact_search():
            row["default_exact"] = turns(
                lambda i: lt.memory.search(questions[i], limit=20), {}, repeat
            )["lantern"]
        row["recall_at_10"] = recall(lt, questions[:repeat])
        mode = lt.memory.search(questions[0], limit=1).summary
        row["default_mode"] = None if mode is None else mode.mode

        def add_then_search(i: int) -> object:
            lt.memory.add(kind="fact", scope="bench:catch-up", content=f"catch up {n} {i}")
            return lt.memory.search(f"catch up {n} {i}", mode="keyword", limit=5)

        row["search_after_a_write"] = turns(add_then_search, {}, min(repeat, 50))["lantern"]
    raw.close()
    row["cli_search"] = process(["--db", str(path), "memory", "search", questions[0]])
    row["cli_list"] = process(["--db", str(path), "memory", "list", "--json"])
    row["vectors_mb"] = round(n * DIM * 4 / 1e6, 1)
    return row


def measure_postgres(base_url: str, n: int, repeat: int) -> dict[str, Any]:
    """One PostgreSQL row: searches in the database beside a served word index."""
    import uuid

    import sqlalchemy

    schema = f"bench_{uuid.uuid4().hex[:12]}"
    admin = sqlalchemy.create_engine(base_url, isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.exec_driver_sql(f"CREATE SCHEMA {schema}")
    url = sqlalchemy.engine.make_url(base_url)
    url = url.update_query_dict({"options": f"-csearch_path={schema}"})
    db = url.render_as_string(hide_password=False)
    row: dict[str, Any] = {"records": n, "engine": "postgresql"}
    try:
        started = time.perf_counter()
        records = list(memory_records(n))  # all active: the statuses are not varied here
        with Lantern.open(db) as lt:
            for start in range(0, n, 10_000):
                lt.memory.add_many(records[start : start + 10_000])
        row["store_build_s"] = round(time.perf_counter() - started, 1)
        keyword_queries = search_queries(repeat + 20, words=WORDS)
        questions = question_queries(repeat + 20, words=WORDS)
        with Lantern.open(db) as lt:

            def keyword(i: int) -> object:
                return lt.memory.search(keyword_queries[i], mode="keyword", limit=20)

            def question(i: int) -> object:
                return lt.memory.search(questions[i], mode="any", limit=20)

            in_database = {
                "keyword": turns(keyword, {}, repeat)["lantern"],
                "any": turns(question, {}, repeat)["lantern"],
            }
            started = time.perf_counter()
            lt.keep_indexes()
            for build in list(topk._builds):
                build.finish()
            row["word_index_build_s"] = round(time.perf_counter() - started, 2)
            current = place.current(place.directory(lt.location) or Path(), words.NAME)
            row["word_index_mb"] = round(place.size(current) / 1e6, 1) if current else None
            served = {
                "keyword": turns(keyword, {}, repeat)["lantern"],
                "any": turns(question, {}, repeat)["lantern"],
            }
            row["keyword"] = {"served": served["keyword"], "database": in_database["keyword"]}
            row["any"] = {"served": served["any"], "database": in_database["any"]}

            def add_then_search(i: int) -> object:
                lt.memory.add(kind="fact", scope="bench:catch-up", content=f"catch up {n} {i}")
                return lt.memory.search(f"catch up {n} {i}", mode="keyword", limit=5)

            row["search_after_a_write"] = turns(add_then_search, {}, min(repeat, 50))["lantern"]
        row["cli_search"] = process(["--db", db, "memory", "search", questions[0]])
        row["cli_list"] = process(["--db", db, "memory", "list", "--json"])
    finally:
        with admin.connect() as conn:
            conn.exec_driver_sql(f"DROP SCHEMA {schema} CASCADE")
        admin.dispose()
    return row


def render_postgres(rows: list[dict[str, Any]]) -> str:
    lines = [
        "| records | search, top 20 | served index p50 / p95 ms | in the database p50 / p95 ms "
        "| ratio p50 |",
        "| ---: | --- | ---: | ---: | ---: |",
    ]
    for row in rows:
        for label, key in (("keyword (1-3 words)", "keyword"), ("any (question)", "any")):
            ours, theirs = row[key]["served"], row[key]["database"]
            lines.append(
                f"| {row['records']:,} | {label} | {ours[0]:.2f} / {ours[1]:.2f} | "
                f"{theirs[0]:.2f} / {theirs[1]:.2f} | {ours[0] / theirs[0]:.2f}x |"
            )
    lines += ["", "| records | word index build at start | size | search after a write p50 | "
              "`memory search` process | `memory list --json` process |",
              "| ---: | ---: | ---: | ---: | ---: | ---: |"]  # fmt: skip
    for row in rows:
        search_s, search_mb = row["cli_search"]
        list_s, list_mb = row["cli_list"]
        lines.append(
            f"| {row['records']:,} | {row['word_index_build_s']} s | {row['word_index_mb']} MB | "
            f"{row['search_after_a_write'][0]:.1f} ms | {search_s:.2f} s, {search_mb:.0f} MB | "
            f"{list_s:.2f} s, {list_mb:.0f} MB |"
        )
    return "\n".join(lines)


def render(rows: list[dict[str, Any]]) -> str:
    lines = [
        "| records | search | Lantern p50 / p95 ms | floor p50 / p95 ms | ratio p50 |",
        "| ---: | --- | ---: | ---: | ---: |",
    ]
    for row in rows:
        for label, key, floor in (
            ("keyword (1-3 words)", "keyword", "tantivy"),
            ("keyword, beside raw FTS5", "keyword", "fts5"),
            ("any (question)", "any", "tantivy"),
            (f"default ({row['default_mode']})", "default", "tantivy+numpy"),
            ("semantic, top 10", "semantic", "numpy"),
        ):
            ours, theirs = row[key]["lantern"], row[key][floor]
            lines.append(
                f"| {row['records']:,} | {label} | {ours[0]:.2f} / {ours[1]:.2f} | "
                f"{theirs[0]:.2f} / {theirs[1]:.2f} ({floor}) | {ours[0] / theirs[0]:.2f}x |"
            )
    lines += ["", "| records | vectors | graph rows (walk breadth) | recall@10 (semantic, "
              "against exact) | default search, exact p50 / p95 ms |",
              "| ---: | --- | ---: | ---: | ---: |"]  # fmt: skip
    for row in rows:
        exact = row["default_exact"]
        lines.append(
            f"| {row['records']:,} | {row['vectors']} | {row['graph_rows']:,} "
            f"({row['graph_breadth'] or '-'}) | {row['recall_at_10']:.3f} | "
            f"{exact[0]:.2f} / {exact[1]:.2f} |"
        )
    lines += ["", "| records | word index build | size | vector index build | size | "
              "search after a write p50 | `memory search` process | `memory list --json` process |",
              "| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]  # fmt: skip
    for row in rows:
        search_s, search_mb = row["cli_search"]
        list_s, list_mb = row["cli_list"]
        lines.append(
            f"| {row['records']:,} | {row['word_index_build_s']} s | {row['word_index_mb']} MB | "
            f"{row['vector_index_build_s']} s | {row['vector_index_mb']} MB | "
            f"{row['search_after_a_write'][0]:.1f} ms | {search_s:.2f} s, {search_mb:.0f} MB | "
            f"{list_s:.2f} s, {list_mb:.0f} MB |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="10000,100000", help="comma-separated store sizes")
    parser.add_argument("--repeat", type=int, default=100, help="samples per row")
    parser.add_argument("--json", dest="json_path", help="also write the figures here")
    parser.add_argument(
        "--graph-from",
        type=int,
        default=graph.BUILD_FROM,
        help="live vectors from which the vector index gets a nearest-neighbour graph",
    )
    parser.add_argument("--vectors", choices=["random", "clustered"], default="random")
    parser.add_argument("--postgres", metavar="URL", help="measure a PostgreSQL store instead")
    args = parser.parse_args(argv)
    graph.BUILD_FROM = args.graph_from
    VECTORS[0] = args.vectors
    if args.vectors == "clustered":
        clustered_queries()
    sizes = [int(size) for size in args.sizes.split(",")]
    rows = []
    if args.postgres:
        for n in sizes:
            rows.append(measure_postgres(args.postgres, n, args.repeat))
            print(render_postgres(rows[-1:]), flush=True)
        print()
        print(render_postgres(rows))
        if args.json_path:
            Path(args.json_path).write_text(json.dumps(rows, indent=2) + "\n")
        return
    with tempfile.TemporaryDirectory(prefix="lantern-scale-") as tmp:
        for n in sizes:
            rows.append(measure(Path(tmp), n, args.repeat))
            print(render(rows[-1:]), flush=True)
    print()
    print(render(rows))
    if args.json_path:
        Path(args.json_path).write_text(json.dumps(rows, indent=2) + "\n")


if __name__ == "__main__":
    main()
