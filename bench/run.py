"""Lantern's benchmarks: every operation through Lantern's Python API beside raw `sqlite3`
doing the same work on the same file, in the same run.

    python bench/run.py --quick            # 10k and 100k records, a couple of minutes
    python bench/run.py                    # adds 1M records and 1M chunks (about 20 minutes)
    python bench/run.py --json out.json    # also write the results as JSON

Nothing here asserts a time: the table is the result. See bench/README.md for what each row
measures and the targets.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import hashlib
import importlib.util
import itertools
import json
import os
import platform
import random
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import asdict
from pathlib import Path

import sqlalchemy
from common import (
    SLOW_SAMPLES,
    WORDS,
    Result,
    build_memory_store,
    compile_lantern,
    memory_records,
    percentiles,
    question_queries,
    render,
    scope_names,
    search_queries,
    side_by_side,
    vocabulary,
)

from lantern import Lantern
from lantern.evidence.chunking import chunk_source
from lantern.memory.fts import fts_rowid
from lantern.retrieval.stopwords import STOP_WORDS
from lantern.store import migrations
from lantern.store.ids import chunk_id, memory_id, memory_identity, source_id
from lantern.store.location import resolve

# --- data --------------------------------------------------------------------------------


@contextmanager
def raw_connection(path: Path) -> Iterator[sqlite3.Connection]:
    """The floor: the stdlib driver with the same pragmas Lantern sets."""
    conn = sqlite3.connect(path, isolation_level=None, timeout=15)
    conn.execute("PRAGMA foreign_keys = ON")
    conn.execute("PRAGMA synchronous = NORMAL")
    try:
        yield conn
    finally:
        conn.close()


# --- memory operations ---------------------------------------------------------------------

MEMORY_SEARCH_SQL = (
    "SELECT memory_records.*, -bm25(memory_fts) AS score FROM memory_fts "
    "JOIN memory_records ON memory_records.id = memory_fts.record_id "
    "WHERE memory_fts MATCH ? AND memory_records.status = 'active' "
    "AND (memory_records.expires_at IS NULL OR memory_records.expires_at > ?) "
    "ORDER BY -bm25(memory_fts) DESC, memory_records.status, memory_records.priority DESC, "
    "memory_records.urgency DESC, memory_records.updated_at DESC, memory_records.id LIMIT 21"
)
BULK = 1000
MCP_SIZES = [10_000, 100_000]


INSERT_RECORD_SQL = (
    "INSERT INTO memory_records (id, kind, content, scope, priority, urgency, confidence, "
    "status, created_at, updated_at, expires_at, supersedes_id, source_refs, identity_hash) "
    "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING"
)
"""Every column bound, as any writer of rows that vary must (and as Lantern does)."""
EMBEDS_ON_WRITE_SQL = "SELECT value FROM store_settings WHERE key = ?"
"""What a write of new content asks first, in its transaction: whether the store embeds on
write (`embed.on_write`); Lantern's writes ask it, so the floor does too."""


def embeds_on_write(raw: sqlite3.Connection) -> bool:
    return raw.execute(EMBEDS_ON_WRITE_SQL, ("embed.on_write",)).fetchall() == [("true",)]


def record_values(
    record_id: str, scope: str, content: str, at: int, supersedes: str | None = None
) -> tuple[object, ...]:
    """A new fact's column values, defaults included, in `INSERT_RECORD_SQL`'s order."""
    identity = memory_identity(scope, "fact", content)
    return (record_id, "fact", content, scope, 50, 0, 1.0, "active", at, at, None, supersedes, "[]",
            identity)  # fmt: skip


def created_changes(scope: str, content: str, supersedes: str | None = None) -> str:
    """The `changes` of a `created` history entry, byte for byte as Lantern writes it for a
    fact with default fields, so that the raw side stores as much."""
    after = {
        "kind": "fact",
        "scope": scope,
        "status": "active",
        "content": content,
        "urgency": 0,
        "priority": 50,
        "confidence": 1.0,
        "expires_at": None,
        "source_refs": [],
        "supersedes_id": supersedes,
    }
    return json.dumps({"after": after, "before": None}, ensure_ascii=False, separators=(",", ":"))


def bulk_add(lt: Lantern, raw: sqlite3.Connection, n: int, batches: int = 10) -> Result:
    """`add_many` of 1,000 records beside raw `executemany` of the same rows (ms per batch),
    taking turns batch by batch."""

    def lantern_batch(b: int) -> None:
        lt.memory.add_many(
            [
                {"kind": "fact", "scope": "bench:bulk", "content": f"lantern bulk {b} {i} {n}"}
                for i in range(BULK)
            ]
        )

    def raw_batch(b: int) -> None:
        at = int(time.time())
        rows = []
        for i in range(BULK):
            content = f"raw bulk {b} {i} {n}"
            rows.append((memory_id("bench:bulk", "fact", content), content))
        raw.execute("BEGIN IMMEDIATE")
        raw.execute("PRAGMA secure_delete = ON")
        embeds_on_write(raw)
        raw.executemany(
            INSERT_RECORD_SQL,
            [record_values(record_id, "bench:bulk", content, at) for record_id, content in rows],
        )
        raw.executemany(
            "INSERT INTO memory_fts (rowid, record_id, content) VALUES (?, ?, ?)",
            sorted((fts_rowid(record_id), record_id, content) for record_id, content in rows),
        )
        raw.executemany(
            "INSERT INTO memory_history (record_id, event, at, changes) VALUES (?, ?, ?, ?)",
            [
                (record_id, "created", at, created_changes("bench:bulk", content))
                for record_id, content in rows
            ],
        )
        raw.execute("COMMIT")

    return side_by_side("memory add_many (1,000 records)", n, lantern_batch, raw_batch, batches)


LIST_SQL = (
    "SELECT id, kind, content, scope, priority, urgency, confidence, status, created_at, "
    "updated_at, expires_at, supersedes_id, source_refs FROM memory_records "
    "WHERE scope = ? AND status = 'active' {kind} AND (expires_at IS NULL OR expires_at > ?) "
    "ORDER BY status, priority DESC, urgency DESC, updated_at DESC, id LIMIT 50"
)


def bench_memory(path: Path, n: int, repeat: int) -> list[Result]:
    build_memory_store(path, n)
    busy_scope = scope_names()[0]
    results = []
    with Lantern.open(path) as lt, raw_connection(path) as raw:
        results.append(
            side_by_side(
                "memory list (top 50, one scope)",
                n,
                lambda _i: lt.memory.list(scope=busy_scope),
                lambda _i: [
                    json.loads(row[12])
                    for row in raw.execute(LIST_SQL.format(kind=""), (busy_scope, int(time.time())))
                ],
                repeat,
            )
        )
        results.append(
            side_by_side(
                "memory list (top 50, scope + kind)",
                n,
                lambda _i: lt.memory.list(scope=busy_scope, kind="goal"),
                lambda _i: [
                    json.loads(row[12])
                    for row in raw.execute(
                        LIST_SQL.format(kind="AND kind = ?"),
                        (busy_scope, "goal", int(time.time())),
                    )
                ],
                repeat,
            )
        )

        def lantern_add(i: int) -> None:
            lt.memory.add(kind="fact", scope="bench:add", content=f"lantern add {n} {i}")

        def raw_add(i: int) -> None:
            content = f"raw add {n} {i}"
            record_id = memory_id("bench:add", "fact", content)
            at = int(time.time())
            raw.execute("BEGIN IMMEDIATE")
            raw.execute("PRAGMA secure_delete = ON")
            embeds_on_write(raw)
            raw.execute(
                "SELECT * FROM memory_records WHERE identity_hash = ?", (record_id[4:],)
            ).fetchone()
            raw.execute(
                INSERT_RECORD_SQL + " RETURNING id",
                record_values(record_id, "bench:add", content, at),
            ).fetchone()
            raw.execute(
                "INSERT INTO memory_fts (rowid, record_id, content) VALUES (?, ?, ?)",
                (fts_rowid(record_id), record_id, content),
            )
            raw.execute(
                "INSERT INTO memory_history (record_id, event, at, changes) VALUES (?, ?, ?, ?)",
                (record_id, "created", at, created_changes("bench:add", content)),
            )
            raw.execute("COMMIT")

        results.append(side_by_side("memory add (one, committed)", n, lantern_add, raw_add, repeat))

        for label, mode, asked, match in search_cases(repeat + 40, words=WORDS):

            def lantern_search(i: int, mode: str = mode, asked: list[str] = asked) -> object:
                return lt.memory.search(asked[i % len(asked)], mode=mode, limit=20)

            def raw_search(
                i: int, asked: list[str] = asked, match: Callable[[str], str] = match
            ) -> object:
                return raw.execute(
                    MEMORY_SEARCH_SQL, (match(asked[i % len(asked)]), int(time.time()))
                ).fetchall()

            results.append(
                side_by_side(
                    f"memory search{label}",
                    n,
                    lantern_search,
                    raw_search,
                    min(repeat, SLOW_SAMPLES),
                )
            )
        results.append(bulk_add(lt, raw, n))

        targets = [
            row[0]
            for row in raw.execute(
                "SELECT id FROM memory_records WHERE status = 'active' ORDER BY id LIMIT ?",
                (repeat * 2 + 60,),
            )
        ]

        def lantern_archive(i: int) -> None:
            lt.memory.archive(targets[i % len(targets)])

        def raw_archive(i: int) -> None:
            record_id = targets[-1 - (i % len(targets))]
            at = int(time.time())
            raw.execute("BEGIN IMMEDIATE")
            raw.execute("PRAGMA secure_delete = ON")
            raw.execute("SELECT * FROM memory_records WHERE id = ?", (record_id,)).fetchone()
            raw.execute(
                "UPDATE memory_records SET status = 'archived', updated_at = ? WHERE id = ?",
                (at, record_id),
            )
            raw.execute(
                "INSERT INTO memory_history (record_id, event, at, changes) VALUES (?, ?, ?, ?)",
                (record_id, "archived", at, '{"after":{"status":"archived"},"before":{}}'),
            )
            raw.execute("COMMIT")

        results.append(
            side_by_side("memory archive (by id)", n, lantern_archive, raw_archive, repeat)
        )
        results.append(bench_update(lt, raw, targets, n, repeat))
        results.append(bench_supersede(lt, raw, targets, n, repeat))
    return results


def bench_update(
    lt: Lantern, raw: sqlite3.Connection, targets: list[str], n: int, repeat: int
) -> Result:
    """A new priority for a record, by id: look-up, update, history row, one transaction."""

    def lantern_update(i: int) -> None:
        lt.memory.update(targets[i % len(targets)], priority=i % 101)

    def raw_update(i: int) -> None:
        record_id = targets[-1 - (i % len(targets))]
        at = int(time.time())
        raw.execute("BEGIN IMMEDIATE")
        raw.execute("PRAGMA secure_delete = ON")
        raw.execute("SELECT * FROM memory_records WHERE id = ?", (record_id,)).fetchone()
        raw.execute(
            "UPDATE memory_records SET priority = ?, updated_at = ? WHERE id = ?",
            (i % 101, at, record_id),
        )
        raw.execute(
            "INSERT INTO memory_history (record_id, event, at, changes) VALUES (?, ?, ?, ?)",
            (record_id, "updated", at, json.dumps({"after": {"priority": i}, "before": {}})),
        )
        raw.execute("COMMIT")

    return side_by_side("memory update (priority, by id)", n, lantern_update, raw_update, repeat)


def bench_supersede(
    lt: Lantern, raw: sqlite3.Connection, targets: list[str], n: int, repeat: int
) -> Result:
    """A record replaced by a new one: the new record with its search and history rows, the
    old one marked superseded with its history row, in one transaction."""
    # Each record can be superseded once: each side takes the next of its own half.
    lantern_old = iter(targets[: len(targets) // 2])
    raw_old = iter(targets[len(targets) // 2 :])
    scope = "bench:supersede"

    def lantern_supersede(i: int) -> None:
        lt.memory.supersede(next(lantern_old), content=f"lantern successor {i}", scope=scope)

    def raw_supersede(i: int) -> None:
        old_id = next(raw_old)
        content = f"raw successor {i}"
        new_id = memory_id(scope, "fact", content)
        at = int(time.time())
        raw.execute("BEGIN IMMEDIATE")
        raw.execute("PRAGMA secure_delete = ON")
        embeds_on_write(raw)
        raw.execute("SELECT * FROM memory_records WHERE id = ?", (old_id,)).fetchone()
        raw.execute(
            "SELECT * FROM memory_records WHERE identity_hash = ?", (new_id[4:],)
        ).fetchone()
        raw.execute(
            INSERT_RECORD_SQL + " RETURNING id",
            record_values(new_id, scope, content, at, supersedes=old_id),
        ).fetchone()
        raw.execute(
            "INSERT INTO memory_fts (rowid, record_id, content) VALUES (?, ?, ?)",
            (fts_rowid(new_id), new_id, content),
        )
        raw.executemany(
            "INSERT INTO memory_history (record_id, event, at, changes) VALUES (?, ?, ?, ?)",
            [
                (new_id, "created", at, created_changes(scope, content, supersedes=old_id)),
                (old_id, "superseded", at, '{"after":{"status":"superseded"},"before":{}}'),
            ],
        )
        raw.execute(
            "UPDATE memory_records SET status = 'superseded', updated_at = ? WHERE id = ?",
            (at, old_id),
        )
        raw.execute("COMMIT")

    count = min(repeat, len(targets) // 2 - 20)  # 20 warm-up calls come first
    return side_by_side("memory supersede (by id)", n, lantern_supersede, raw_supersede, count)


# --- evidence -------------------------------------------------------------------------------


class TextMaker:
    """Zipf-distributed words, so a few are everywhere and most are rare, as in real notes."""

    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)
        self.words = vocabulary()
        self.cumulative = list(itertools.accumulate(1 / (r + 1) for r in range(len(self.words))))

    def paragraph(self, chars: int) -> str:
        picked = self.rng.choices(self.words, cum_weights=self.cumulative, k=chars // 5)
        return " ".join(picked)[:chars].rsplit(" ", 1)[0] + "."


CHUNK_CHARS = 850
CHUNKS_PER_SOURCE = 20


def fill_chunks(path: Path, n_chunks: int, *, transcripts: bool = False) -> None:
    """Insert sources and chunks with raw statements (the FTS5 triggers fill the index).

    With `transcripts`, every source is a transcript whose chunks are JSON Lines turns written
    with ASCII escapes, as chat exports are: the chunks whose searchable text is decoded.
    """
    maker = TextMaker(seed=3)
    conn = sqlite3.connect(path)
    at = 1_700_000_000
    kind = "transcript" if transcripts else "markdown"
    for first in range(0, n_chunks, CHUNKS_PER_SOURCE):
        uri = f"file:///bench/doc{first // CHUNKS_PER_SOURCE:07d}.{kind}"
        sid = source_id(uri)
        conn.execute(
            "INSERT INTO sources (id, uri, kind, title, content_hash, metadata, created_at, "
            "updated_at) VALUES (?, ?, ?, NULL, ?, '{}', ?, ?)",
            (sid, uri, kind, f"h{first}", at, at),
        )
        offset = 0
        rows = []
        for ordinal in range(CHUNKS_PER_SOURCE):
            body = maker.paragraph(CHUNK_CHARS)
            if transcripts:
                body = transcript_turns(body, at + ordinal)
            rows.append(
                (chunk_id(sid, ordinal, body), sid, ordinal, body, offset, offset + len(body), at)
            )
            offset += len(body) + 2
        conn.executemany(
            "INSERT INTO chunks (id, source_id, ordinal, text, start_offset, end_offset, "
            "metadata, created_at) VALUES (?, ?, ?, ?, ?, ?, '{}', ?)",
            rows,
        )
    conn.commit()
    conn.execute("ANALYZE")
    conn.close()


def transcript_turns(text: str, at: int) -> str:
    """A paragraph as two JSON Lines turns, as a chat export stores it (`ensure_ascii`)."""
    middle = text.find(" ", len(text) // 2)
    turns = [
        {"role": "user", "content": text[:middle] + " caf\u00e9?", "ts": at},
        {"role": "assistant", "content": text[middle + 1 :] + "\nDone.", "ts": at + 30},
    ]
    return "\n".join(json.dumps(turn) for turn in turns)


def search_cases(
    count: int, words: Sequence[str] | None = None
) -> list[tuple[str, str, list[str], Callable[[str], str]]]:
    """What the search rows ask: 1-3 words in keyword mode, and questions in any mode, each
    with the FTS5 query raw `sqlite3` is given for it (label suffix, mode, queries, match)."""
    return [
        (" (1-3 words, top 20)", "keyword", search_queries(count, words=words), fts_match),
        (
            ", any mode (question, top 20)",
            "any",
            question_queries(count, words=words),
            fts_match_any,
        ),
    ]


def fts_match(query: str) -> str:
    return " ".join(f'"{word}"' for word in query.split())


def fts_match_any(question: str) -> str:
    """What an `any` search sends FTS5: the words that are not common ones, joined by OR."""
    words = question.rstrip("?").split()
    return " OR ".join(f'"{word}"' for word in words if word not in STOP_WORDS)


RAW_SEARCH_SQL = (
    "SELECT chunks.id, chunks.source_id, sources.uri, sources.kind, chunks.ordinal, "
    "chunks.start_offset, chunks.end_offset, -bm25(chunks_fts) AS score, "
    "snippet(chunks_fts, 0, '«', '»', '…', 24) AS snippet "
    "FROM chunks_fts JOIN chunks ON chunks_fts.rowid = chunks.rowid "
    "JOIN sources ON sources.id = chunks.source_id "
    "WHERE chunks_fts MATCH ? ORDER BY bm25(chunks_fts), chunks.id LIMIT 20"
)


def bench_evidence_search(work: Path, n: int, repeat: int) -> list[Result]:
    # A legacy store of n chunks, upgraded: the data the upgrade rows load anyway, built once.
    path = work / f"chunks-{n}.db"
    shutil.copyfile(legacy_template(work, n), path)
    migrations.upgrade(resolve(str(path)), backup=False)
    results: list[Result] = []
    with Lantern.open(path) as lt, raw_connection(path) as raw:
        for label, mode, asked, match in search_cases(repeat + 40):

            def lantern_search(i: int, mode: str = mode, asked: list[str] = asked) -> object:
                return lt.evidence.search(asked[i % len(asked)], mode=mode, limit=20)

            def raw_search(
                i: int, asked: list[str] = asked, match: Callable[[str], str] = match
            ) -> object:
                return raw.execute(RAW_SEARCH_SQL, (match(asked[i % len(asked)]),)).fetchall()

            results.append(
                side_by_side(f"evidence search{label}", n, lantern_search, raw_search, repeat)
            )
    for leftover in work.glob(f"{path.name}*"):
        leftover.unlink()
    return results


def bench_ingest(work: Path, documents: int, rounds: int = 5) -> list[Result]:
    """Throughput of ingesting text (chunking included), as ms per MB, beside a raw load.

    Steady state: each side first ingests one document untimed (imports, compiled statements),
    then the two take turns, `rounds` times, each with its share of the documents.
    """
    maker = TextMaker(seed=9)
    texts = [
        "\n\n".join(maker.paragraph(CHUNK_CHARS) for _ in range(CHUNKS_PER_SOURCE))
        for _ in range(documents + 1)
    ]
    warm_up, texts = texts[0], texts[1:]
    megabytes = sum(len(t.encode()) for t in texts) / 1e6
    lantern_path, raw_path = work / "ingest-lantern.db", work / "ingest-raw.db"
    Lantern.open(raw_path).close()
    with Lantern.open(lantern_path) as lt, raw_connection(raw_path) as raw:

        def lantern_ingest(uri: str, body: str) -> None:
            lt.evidence.ingest_text(uri, body, kind="document")

        def raw_ingest(uri: str, body: str) -> None:
            sid = source_id(uri)
            spans = chunk_source(body, "document")
            at = int(time.time())
            raw.execute("BEGIN IMMEDIATE")
            raw.execute("SELECT id, content_hash, kind FROM sources WHERE uri = ?", (uri,))
            raw.execute(
                "INSERT INTO sources (id, uri, kind, title, content_hash, metadata, created_at, "
                "updated_at) VALUES (?, ?, 'document', NULL, ?, ?, ?, ?)",
                (sid, uri, hashlib.sha256(body.encode()).hexdigest(), '{"size": 1}', at, at),
            )
            raw.executemany(
                "INSERT INTO chunks (id, source_id, ordinal, text, start_offset, end_offset, "
                "metadata, created_at) VALUES (?, ?, ?, ?, ?, ?, '{}', ?)",
                [
                    (chunk_id(sid, s.ordinal, s.text), sid, s.ordinal, s.text, s.start, s.end, at)
                    for s in spans
                ],
            )
            raw.execute("COMMIT")

        elapsed = {lantern_ingest: 0.0, raw_ingest: 0.0}
        for ingest in elapsed:
            ingest("bench://warm-up", warm_up)
        for turn in range(rounds):
            share = list(enumerate(texts))[turn::rounds]
            for ingest in elapsed:
                start = time.perf_counter()
                for i, body in share:
                    ingest(f"bench://doc/{i}", body)
                elapsed[ingest] += (time.perf_counter() - start) * 1000
    for path in (lantern_path, raw_path):
        path.unlink()
    per_mb = (elapsed[lantern_ingest] / megabytes, elapsed[raw_ingest] / megabytes)
    return [
        Result(
            f"ingest ({megabytes:.1f} MB text; ms per MB)",
            documents * CHUNKS_PER_SOURCE,
            per_mb[0],
            per_mb[0],
            per_mb[1],
            per_mb[1],
            unit="ms/MB",
        )
    ]


# --- legacy upgrade ---------------------------------------------------------------------------


def build_legacy_store(path: Path, n_chunks: int, *, transcripts: bool = False) -> None:
    """A generation-1 store (the legacy DDL, user_version 1) holding n chunks."""
    spec = importlib.util.spec_from_file_location(
        "generation_1", migrations.script_location() / "versions" / "0001_evidence_generation_1.py"
    )
    assert spec is not None and spec.loader is not None
    revision = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(revision)
    conn = sqlite3.connect(path)
    for statement in revision.SQLITE_DDL:
        conn.execute(statement)
    conn.execute("PRAGMA user_version = 1")
    conn.commit()
    conn.close()
    fill_chunks(path, n_chunks, transcripts=transcripts)


def legacy_template(work: Path, n_chunks: int, *, transcripts: bool = False) -> Path:
    """A generation-1 store of n chunks, built on first use and copied by whoever needs one:
    a million chunks take minutes to load."""
    template = work / f"legacy-{n_chunks}{'-transcripts' if transcripts else ''}.db"
    if not template.exists():
        build_legacy_store(template, n_chunks, transcripts=transcripts)
    return template


def bench_upgrade(work: Path, n_chunks: int) -> list[Result]:
    """A generation-1 store upgraded to the head revision, once each way; the raw side does the
    schema work in SQL: the memory tables and, what costs, the chunk index rebuilt over the
    view of searchable texts (revision 0007). The transcript row is the same store with every
    chunk a transcript's, whose searchable text the upgrade also decodes."""
    results = []
    cases = [("", False, False), (", with backup", False, True), (", transcripts", True, False)]
    for label, transcripts, backup in cases:
        template = legacy_template(work, n_chunks, transcripts=transcripts)
        floor_path = work / f"legacy-raw-{n_chunks}.db"
        shutil.copyfile(template, floor_path)
        path = work / f"legacy-{n_chunks}-{backup}-{transcripts}.db"
        shutil.copyfile(template, path)
        os.sync()  # the copies' writeback must not land inside the upgrade's own fsync
        start = time.perf_counter()
        migrations.upgrade(resolve(str(path)), backup=backup)
        own = (time.perf_counter() - start) * 1000
        raw = sqlite3.connect(floor_path, isolation_level=None)
        start = time.perf_counter()
        raw.execute("BEGIN IMMEDIATE")
        for statement in (MEMORY_RECORDS_DDL, *MEMORY_RECORDS_INDEXES, *CHUNK_INDEX_DDL):
            raw.execute(statement)
        raw.execute("ROLLBACK")
        floor = (time.perf_counter() - start) * 1000
        raw.close()
        results.append(Result(f"legacy upgrade{label}", n_chunks, own, own, floor, floor))
        for leftover in work.glob(f"{path.name}*"):
            leftover.unlink()
        floor_path.unlink()
    return results


CHUNK_INDEX_DDL = (
    "CREATE TABLE chunk_search_text (chunk_id TEXT NOT NULL PRIMARY KEY, text TEXT NOT NULL)",
    "CREATE VIEW chunk_search AS SELECT chunks.rowid AS rowid, "
    "coalesce(chunk_search_text.text, chunks.text) AS text FROM chunks "
    "LEFT JOIN chunk_search_text ON chunk_search_text.chunk_id = chunks.id",
    "DROP TABLE chunks_fts",
    "CREATE VIRTUAL TABLE chunks_fts USING fts5(text, content='chunk_search', "
    "content_rowid='rowid')",
    "INSERT INTO chunks_fts (chunks_fts) VALUES ('rebuild')",
)
"""The part of revision 0007 that costs, in SQL (triggers left out: they cost nothing)."""


MEMORY_RECORDS_DDL = (
    "CREATE TABLE memory_records (id TEXT NOT NULL PRIMARY KEY, kind TEXT NOT NULL, "
    "content TEXT NOT NULL, scope TEXT NOT NULL DEFAULT 'global', priority INTEGER NOT NULL "
    "DEFAULT 50, urgency INTEGER NOT NULL DEFAULT 0, confidence FLOAT NOT NULL DEFAULT 1.0, "
    "status TEXT NOT NULL DEFAULT 'active', created_at INTEGER NOT NULL, updated_at INTEGER "
    "NOT NULL, expires_at INTEGER, supersedes_id TEXT REFERENCES memory_records (id), "
    "source_refs TEXT NOT NULL DEFAULT '[]')"
)
MEMORY_RECORDS_INDEXES = (
    "CREATE INDEX ix_a ON memory_records (scope, status, priority DESC, urgency DESC, "
    "updated_at DESC, id)",
    "CREATE INDEX ix_b ON memory_records (status, priority DESC, urgency DESC, "
    "updated_at DESC, id)",
)


# --- PostgreSQL ---------------------------------------------------------------------------------


def bench_postgres(url: str, n: int, repeat: int) -> list[Result]:
    """The same add, list and search on PostgreSQL, beside psycopg running the same SQL.

    Uses a fresh schema in the given database, dropped afterwards.
    """
    import psycopg
    from sqlalchemy.engine import make_url

    schema = f"lantern_bench_{os.getpid()}"
    dsn = make_url(url).set(drivername="postgresql").render_as_string(hide_password=False)
    admin = psycopg.connect(dsn, autocommit=True)
    admin.execute(f"CREATE SCHEMA {schema}")
    store_url = make_url(url).update_query_dict({"options": f"-csearch_path={schema}"})
    store = store_url.render_as_string(hide_password=False)
    try:
        with Lantern.open(store) as lt:
            batch = list(memory_records(n))
            for start in range(0, n, 10_000):
                lt.memory.add_many(batch[start : start + 10_000])
        raw = psycopg.connect(dsn, options=f"-csearch_path={schema}", autocommit=True)
        busy = scope_names()[0]
        queries = search_queries(repeat + 40, words=WORDS)
        results = []
        with Lantern.open(store) as lt:
            results.append(
                side_by_side(
                    "postgres: memory list (top 50, one scope)",
                    n,
                    lambda _i: lt.memory.list(scope=busy),
                    lambda _i: raw.execute(PG_LIST_SQL, (busy, int(time.time()))).fetchall(),
                    repeat,
                )
            )

            def lantern_add(i: int) -> None:
                lt.memory.add(kind="fact", scope="bench:add", content=f"pg add {i}")

            def raw_add(i: int) -> None:
                content = f"pg raw add {i}"
                record_id = memory_id("bench:add", "fact", content)
                at = int(time.time())
                with raw.transaction():
                    raw.execute(
                        "SELECT value FROM store_settings WHERE key = %s", ("embed.on_write",)
                    ).fetchall()
                    raw.execute(
                        "SELECT * FROM memory_records WHERE identity_hash = %s", (record_id[4:],)
                    )
                    raw.execute(
                        "INSERT INTO memory_records (id, kind, content, scope, priority, urgency, "
                        "confidence, status, created_at, updated_at, source_refs, identity_hash) "
                        "VALUES (%s, 'fact', %s, 'bench:add', 50, 0, 1.0, 'active', %s, %s, '[]', "
                        "%s) ON CONFLICT DO NOTHING RETURNING id",
                        (record_id, content, at, at, record_id[4:]),
                    ).fetchone()
                    raw.execute(
                        "INSERT INTO memory_history (record_id, event, at, changes) "
                        "VALUES (%s, 'created', %s, %s)",
                        (record_id, at, created_changes("bench:add", content)),
                    )

            results.append(
                side_by_side(
                    "postgres: memory add (one, committed)", n, lantern_add, raw_add, repeat
                )
            )
            results.append(
                side_by_side(
                    "postgres: memory search (1-3 words, top 20)",
                    n,
                    lambda i: lt.memory.search(queries[i % len(queries)], mode="keyword", limit=20),
                    lambda i: raw.execute(
                        PG_SEARCH_SQL,
                        (" & ".join(queries[i % len(queries)].split()), int(time.time())),
                    ).fetchall(),
                    min(repeat, SLOW_SAMPLES),
                )
            )
        raw.close()
        return results
    finally:
        admin.execute(f"DROP SCHEMA {schema} CASCADE")
        admin.close()


PG_LIST_SQL = (
    "SELECT * FROM memory_records WHERE scope = %s AND status = 'active' "
    "AND (expires_at IS NULL OR expires_at > %s) "
    "ORDER BY status, priority DESC, urgency DESC, updated_at DESC, id LIMIT 51"
)
PG_SEARCH_SQL = (
    "SELECT *, ts_rank_cd(content_tsv, q, 1) AS score FROM memory_records, "
    "to_tsquery('simple', %s) AS q WHERE content_tsv @@ q AND status = 'active' "
    "AND (expires_at IS NULL OR expires_at > %s) ORDER BY score DESC, status, priority DESC, "
    "urgency DESC, updated_at DESC, id LIMIT 21"
)


# --- process cold starts ---------------------------------------------------------------------


def time_process(argv: list[str], env: dict[str, str] | None = None) -> float:
    start = time.perf_counter()
    subprocess.run(argv, check=True, capture_output=True, env=env)
    return (time.perf_counter() - start) * 1000


def bench_cold_starts(work: Path, repeat: int) -> list[Result]:
    compile_lantern()
    lantern_bin = shutil.which("lantern") or str(Path(sys.executable).with_name("lantern"))
    store = work / "small.db"
    build_memory_store(store, 1000)
    env = {**os.environ, "LANTERN_DB": str(store)}
    commands = {
        "floor": [sys.executable, "-c", "import sqlalchemy.orm"],
        "process: lantern --help": [lantern_bin, "--help"],
        "process: lantern memory list --json": [lantern_bin, "memory", "list", "--json"],
    }
    samples: dict[str, list[float]] = {label: [] for label in commands}
    for _ in range(repeat):  # in turns, so that all three see the same machine
        for label, argv in commands.items():
            samples[label].append(time_process(argv, env))
    floor = percentiles(samples.pop("floor"))
    return [
        Result(label, 1000, *percentiles(own), floor[0], floor[1]) for label, own in samples.items()
    ]


# --- report ----------------------------------------------------------------------------------


def render_markdown(results: list[Result], about: dict[str, object], command: str) -> str:
    """The table as Markdown, with the machine and the command that produced it."""
    lines = [
        "# Benchmark results",
        "",
        f"`{command}` on {about['cpu']} ({about['cpus']} CPUs), {about['platform']}; "
        f"Python {about['python']}, SQLite {about['sqlite']}, SQLAlchemy {about['sqlalchemy']}.",
        "Times in milliseconds. The raw column is `sqlite3` (or psycopg, or the MCP SDK's floor "
        "server, or `python -c 'import sqlalchemy.orm'`) doing the same work in the same run; "
        "see README.md for what each row measures.",
        "",
        "| operation | N | Lantern p50 | p95 | raw p50 | p95 | ratio |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for r in results:
        raw50 = "-" if r.raw_p50 is None else f"{r.raw_p50:.3f}"
        raw95 = "-" if r.raw_p95 is None else f"{r.raw_p95:.3f}"
        ratio = "-" if r.ratio is None else f"{r.ratio:.2f}x"
        lines.append(
            f"| {r.operation.strip()} | {r.n:,} | {r.lantern_p50:.3f} | {r.lantern_p95:.3f} "
            f"| {raw50} | {raw95} | {ratio} |"
        )
    return "\n".join(lines) + "\n"


def machine() -> dict[str, object]:
    cpu = platform.processor()
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    return {
        "python": platform.python_version(),
        "sqlite": sqlite3.sqlite_version,
        "sqlalchemy": sqlalchemy.__version__,
        "platform": platform.platform(),
        "cpu": cpu,
        "cpus": os.cpu_count(),
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="10k and 100k sizes only")
    parser.add_argument("--json", dest="json_path", help="also write results to this file")
    parser.add_argument("--repeat", type=int, default=200, help="samples per operation")
    parser.add_argument("--no-mcp", action="store_true", help="skip the MCP round trips")
    parser.add_argument(
        "--postgres",
        metavar="URL",
        default=os.environ.get("LANTERN_BENCH_POSTGRES_URL"),
        help="also measure on this PostgreSQL database (default: $LANTERN_BENCH_POSTGRES_URL)",
    )
    parser.add_argument("--markdown", metavar="PATH", help="also write the table as Markdown")
    parser.add_argument(
        "--render",
        metavar="JSON",
        help="measure nothing: print (and --markdown) the results saved by an earlier --json",
    )
    args = parser.parse_args(argv)
    if args.render:
        saved = json.loads(Path(args.render).read_text())
        fields = {f.name for f in dataclasses.fields(Result)}
        rows = [Result(**{k: v for k, v in row.items() if k in fields}) for row in saved["results"]]
        print(render(rows))
        if args.markdown:
            text = render_markdown(rows, saved["machine"], saved.get("command", "bench/run.py"))
            Path(args.markdown).write_text(text)
        return
    sizes = [10_000, 100_000] if args.quick else [10_000, 100_000, 1_000_000]
    results: list[Result] = []
    with tempfile.TemporaryDirectory(prefix="lantern-bench-") as tmp:
        work = Path(tmp)
        memory_stores = {}  # kept for the MCP rows
        for n in sizes:
            path = work / f"memory-{n}.db"
            results.extend(bench_memory(path, n, args.repeat))
            if n in MCP_SIZES:
                memory_stores[n] = path
            else:
                path.unlink()
        for n in [100_000] if args.quick else [100_000, 1_000_000]:
            results.extend(bench_evidence_search(work, n, args.repeat))
        results.extend(bench_ingest(work, 100 if args.quick else 300))
        results.extend(bench_upgrade(work, 100_000 if args.quick else 1_000_000))
        if not args.no_mcp:
            from mcp_bench import bench_mcp

            mcp_rows = bench_mcp(work, MCP_SIZES, args.repeat, stores=memory_stores)
            results.extend(Result(**row) for row in mcp_rows)
        if args.postgres:
            results.extend(bench_postgres(args.postgres, 100_000, args.repeat))
        results.extend(bench_cold_starts(work, 10 if args.quick else 20))
    print(render(results))
    command = "python bench/run.py " + " ".join(
        arg if "://" not in arg else "URL" for arg in (argv if argv is not None else sys.argv[1:])
    )
    if args.json_path:
        payload = {
            "machine": machine(),
            "command": command.strip(),
            "results": [asdict(r) | {"ratio": r.ratio} for r in results],
        }
        Path(args.json_path).write_text(json.dumps(payload, indent=2) + "\n")
    if args.markdown:
        Path(args.markdown).write_text(render_markdown(results, machine(), command.strip()))


if __name__ == "__main__":
    main()
