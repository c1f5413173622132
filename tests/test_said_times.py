"""When the words were said: chunks and hits carry it, and said-time filters find by it.

A transcript chunk is dated by its turns, a chunk of a dated source (a file's `mtime`) by that
date, anything else not at all; `said_since`/`said_until` keep the chunks whose said range
overlaps the filter's range and never those of unknown time, and keep the memory records
created in it. Revision 0011 dates the chunks of stores that existed before it.
"""

from __future__ import annotations

import json
import os
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import select, text

from alembic import command
from lantern.api import Lantern
from lantern.evidence.said import said_range
from lantern.store import migrations
from lantern.store.engine import create_store_engine, prepare_sqlite_file
from lantern.store.ids import chunk_id, source_id
from lantern.store.location import resolve
from lantern.store.models import chunks, sources
from tests.helpers import CliRun, Clock, ProcessRun


def _at(iso: str) -> int:
    return int(datetime.fromisoformat(iso).replace(tzinfo=UTC).timestamp())


JAN_15 = _at("2026-01-15T10:00:00")
JAN_31 = _at("2026-01-31T23:59:00")
FEB_1 = _at("2026-02-01T00:00:00")
MARCH = _at("2026-03-01T00:00:00")


def _turn(role: str, content: str, ts: int | str | None) -> str:
    turn: dict[str, Any] = {"role": role, "content": content}
    if ts is not None:
        turn["ts"] = ts
    return json.dumps(turn)


# A session of last January whose last turn comes just after midnight on the first of February.
SESSION = "\n".join(
    [
        _turn("user", "Where do we deploy the payments service?", JAN_15),
        _turn("assistant", "From the eu-west cluster, after the freeze.", "2026-01-15T10:00:30Z"),
        _turn("user", "And the payments rollback?", JAN_31),
        _turn("assistant", "Payments roll back by tag.", FEB_1 + 60),
    ]
)
UNDATED = "\n".join(
    [_turn("user", "Payments deploy question", None), _turn("assistant", "Payments answer", None)]
)


def _store_evidence(lt: Lantern) -> None:
    lt.evidence.ingest_text("chat://january", SESSION, kind="transcript", target_size=200)
    lt.evidence.ingest_text("chat://undated", UNDATED, kind="transcript")
    lt.evidence.ingest_text(
        "file:///notes/deploy.md",
        "# Deploy\n\nThe payments service deploys on Fridays.",
        kind="markdown",
        metadata={"mtime": MARCH},
    )
    lt.evidence.ingest_text("tool://run-1", "payments deploy log line", kind="tool_output")


def _uris(hits: Any) -> list[str]:
    return sorted({hit.uri for hit in hits})


def test_said_range_rule() -> None:
    assert said_range("transcript", {"first_ts": 5, "last_ts": 9}, {"mtime": 1}) == (5, 9)
    assert said_range("transcript", {"first_ts": 9, "last_ts": 5}, {}) == (5, 9)
    assert said_range("transcript", {"first_ts": None, "last_ts": 7}, {}) == (7, 7)
    assert said_range("transcript", {"first_ts": "x", "last_ts": True}, {"mtime": 3}) == (
        None,
        None,
    )
    assert said_range("transcript", None, {"mtime": 3}) == (None, None)
    assert said_range("markdown", {"first_ts": 5}, {"mtime": 3}) == (3, 3)
    assert said_range("markdown", {}, {"mtime": 3.0}) == (3, 3)
    assert said_range("log", {}, {"mtime": "yesterday"}) == (None, None)
    assert said_range(None, {}, None) == (None, None)


def test_hits_and_chunks_say_when_their_words_were_said(lt: Lantern) -> None:
    _store_evidence(lt)
    hits = lt.evidence.search("payments", mode="any", limit=50)
    by_uri: dict[str, list[tuple[int | None, int | None]]] = {}
    for hit in hits:
        by_uri.setdefault(hit.uri, []).append((hit.said_from, hit.said_until))
        rendered = hit.to_json()
        assert (rendered["said_from"], rendered["said_until"]) == (hit.said_from, hit.said_until)
    assert by_uri["chat://undated"] == [(None, None)]
    assert by_uri["tool://run-1"] == [(None, None)]
    assert by_uri["file:///notes/deploy.md"] == [(MARCH, MARCH)]
    session = lt.evidence.get_source("chat://january")
    assert session.chunks is not None and len(session.chunks) >= 2
    ranges = [(chunk.said_from, chunk.said_until) for chunk in session.chunks]
    # Each chunk spans its own turns, in order, within the session.
    assert ranges[0][0] == JAN_15 and ranges[-1][1] == FEB_1 + 60
    for (start, end), chunk in zip(ranges, session.chunks, strict=True):
        assert start is not None and end is not None and start <= end
        assert (start, end) == (chunk.metadata["first_ts"], chunk.metadata["last_ts"])
    assert sorted(set(by_uri["chat://january"])) == sorted(
        r for r, c in zip(ranges, session.chunks, strict=True) if "ayments" in c.text
    )
    detail = lt.evidence.get_chunk(session.chunks[0].id)
    rendered = detail.to_json()
    assert list(rendered)[-2:] == ["said_from", "said_until"]
    assert rendered["said_from"] == JAN_15


def test_said_filters_keep_overlapping_ranges_and_drop_unknown_times(lt: Lantern) -> None:
    _store_evidence(lt)

    def found(**said: Any) -> list[str]:
        return _uris(lt.evidence.search("payments", mode="any", limit=50, **said))

    everything = ["chat://january", "chat://undated", "file:///notes/deploy.md", "tool://run-1"]
    assert found() == everything
    january = found(said_since="2026-01-01", said_until="2026-02-01")
    assert january == ["chat://january"]
    # The last chunk spans midnight: it overlaps February, so the session is found there too.
    assert found(said_since="2026-02-01", said_until="2026-02-02") == ["chat://january"]
    assert found(said_since=FEB_1 + 61) == ["file:///notes/deploy.md"]
    assert found(said_until=JAN_15) == []
    assert found(said_until=JAN_15 + 1) == ["chat://january"]
    assert found(said_since=MARCH, said_until=MARCH + 1) == ["file:///notes/deploy.md"]
    assert found(said_since=0) == ["chat://january", "file:///notes/deploy.md"]
    # Ingest time and said time are different filters: everything was ingested now.
    assert found(since="2026-01-01", until="2026-02-01") == []
    spanning = lt.evidence.search(
        "payments rollback", mode="keyword", said_since="2026-02-01", said_until="2026-03-01"
    )
    assert [(hit.said_from, hit.said_until) for hit in spanning] == [(JAN_31, FEB_1 + 60)]


def test_said_filters_list_the_sources_said_in_a_time(lt: Lantern) -> None:
    _store_evidence(lt)
    listed = lt.evidence.list_sources(said_since="2026-01-01", said_until="2026-02-01")
    assert [source.uri for source in listed] == ["chat://january"]
    assert [s.uri for s in lt.evidence.list_sources(said_since="2026-02-15")] == [
        "file:///notes/deploy.md"
    ]
    assert len(lt.evidence.list_sources()) == 4
    # A source's chunks, listed by the time they were said.
    session = lt.evidence.get_source("chat://january")
    assert session.chunks is not None and len(session.chunks) == 2
    february = lt.evidence.get_source("chat://january", said_since="2026-02-01")
    assert february.chunks == session.chunks[1:] and february.chunk_count == 2
    paged = lt.evidence.get_source("chat://january", said_until=FEB_1, limit=1)
    assert paged.chunks == session.chunks[:1] and paged.next_cursor is not None
    rest = lt.evidence.get_source(
        "chat://january", said_until=FEB_1, limit=1, after=paged.next_cursor
    )
    assert rest.chunks == session.chunks[1:] and rest.next_cursor is None
    assert lt.evidence.get_source("chat://undated", said_since=0).chunks == ()


def test_semantic_and_hybrid_hits_carry_and_obey_said_times(db_path: Path) -> None:
    pytest.importorskip("numpy")
    with Lantern.open(db_path) as lt:
        _store_evidence(lt)
        lt.embed(model="hashing")
        for mode in ("semantic", "hybrid"):
            hits = lt.evidence.search(
                "payments deploy",
                mode=mode,
                model="hashing",
                said_since="2026-01-01",
                said_until="2026-02-01",
            )
            assert hits and {hit.uri for hit in hits} == {"chat://january"}, mode
            assert all(hit.said_from is not None for hit in hits)


def test_reingest_keeps_kept_chunks_dates_and_dates_new_ones(lt: Lantern) -> None:
    first = "# A\n\nAlpha paragraph stays.\n\n# B\n\nBeta paragraph changes."
    lt.evidence.ingest_text(
        "file:///n.md", first, kind="markdown", metadata={"mtime": JAN_15}, target_size=100
    )
    before = lt.evidence.get_source("file:///n.md").chunks
    assert before is not None and len(before) == 2
    second = first.replace("Beta paragraph changes.", "Gamma paragraph is new.")
    lt.evidence.ingest_text(
        "file:///n.md", second, kind="markdown", metadata={"mtime": MARCH}, target_size=100
    )
    after = lt.evidence.get_source("file:///n.md").chunks
    assert after is not None and after[0].id == before[0].id
    assert [(c.said_from, c.said_until) for c in after] == [(JAN_15, JAN_15), (MARCH, MARCH)]
    # A grown session keeps its chunks and dates the new turn by its own time.
    lt.evidence.ingest_text("chat://live", _turn("user", "first turn", JAN_15), kind="transcript")
    grown = SESSION.split("\n")[0] + "\n" + _turn("assistant", "second turn", MARCH)
    lt.evidence.ingest_text("chat://live", grown, kind="transcript")
    live = lt.evidence.get_source("chat://live").chunks
    assert live is not None
    assert live[0].said_from == JAN_15 and live[-1].said_until == MARCH
    # A source whose kind changes is dated by its new kind's rule.
    lt.evidence.ingest_text("doc://x", SESSION, kind="document", metadata={"mtime": MARCH})
    assert {c.said_from for c in lt.evidence.get_source("doc://x").chunks or ()} == {MARCH}
    lt.evidence.ingest_text("doc://x", SESSION, kind="transcript", metadata={"mtime": MARCH})
    redated = lt.evidence.get_source("doc://x").chunks or ()
    assert redated and all(c.said_from is not None and c.said_from < MARCH for c in redated)


def test_files_are_dated_by_their_modification_time(lt: Lantern, tmp_path: Path) -> None:
    note = tmp_path / "note.md"
    note.write_text("# Note\n\nWritten long ago.\n")
    os.utime(note, (JAN_15, JAN_15))
    lt.evidence.ingest_path(str(note))
    [hit] = lt.evidence.search("written long ago", mode="keyword")
    assert (hit.said_from, hit.said_until) == (JAN_15, JAN_15)


def test_export_and_import_keep_the_said_times(lt: Lantern, tmp_path: Path) -> None:
    _store_evidence(lt)
    out = tmp_path / "export.jsonl"
    with out.open("wb") as handle:
        lt.export_jsonl(handle)
    with Lantern.open(tmp_path / "copy.db") as copy:
        with out.open("rb") as handle:
            copy.import_jsonl(handle)
        for uri in ("chat://january", "file:///notes/deploy.md", "chat://undated"):
            original = lt.evidence.get_source(uri).chunks or ()
            imported = copy.evidence.get_source(uri).chunks or ()
            assert [(c.said_from, c.said_until) for c in imported] == [
                (c.said_from, c.said_until) for c in original
            ]


# --- memory records: said when created ---------------------------------------------------------


def test_memory_said_filters_read_the_creation_time(lt: Lantern, clock: Clock) -> None:
    clock.now = JAN_15
    january = lt.memory.add(content="payments deploy from eu-west", kind="fact")
    clock.now = MARCH
    march = lt.memory.add(content="payments deploy from us-east", kind="fact")
    lt.memory.update(january.id, priority=90)  # updated in March, still said in January
    assert [r.id for r in lt.memory.list(said_since="2026-01-01", said_until="2026-02-01")] == [
        january.id
    ]
    assert [r.id for r in lt.memory.list(said_since=FEB_1)] == [march.id]
    in_january = lt.memory.search("payments", said_since="2026-01-01", said_until="2026-02-01")
    assert [m.record.id for m in in_january] == [january.id]
    assert lt.memory.search("payments", said_until=JAN_15) == []
    assert [r.id for r in lt.memory.list(updated_since=FEB_1)] == [january.id, march.id]


# --- the CLI -------------------------------------------------------------------------------------


def test_cli_filters_by_said_time_and_refuses_a_bad_time(run_cli: CliRun, tmp_path: Path) -> None:
    session = tmp_path / "january.jsonl"
    session.write_text(SESSION + "\n")
    assert run_cli("ingest", str(session)).exit_code == 0
    found = run_cli(
        "search", "payments", "--said-since", "2026-01-01", "--said-until", "2026-02-01", "--json"
    )
    assert found.exit_code == 0, found.output
    hits = json.loads(found.stdout)
    assert hits and all(hit["said_from"] >= JAN_15 for hit in hits)
    assert all(hit["said_from"] < FEB_1 for hit in hits)
    human = run_cli("search", "payments", "--said-since", "2026-01-01")
    assert "said 2026-01-15 10:00:00Z" in human.stdout
    none = run_cli("search", "payments", "--said-until", "2025-01-01", "--json")
    assert none.exit_code == 0 and json.loads(none.stdout) == []
    listed = run_cli("source", "list", "--said-since", "2026-01-01", "--json")
    assert [s["uri"] for s in json.loads(listed.stdout)] == [f"file://{session}"]
    shown = run_cli("source", "show", f"file://{session}", "--said-until", "2026-01-01", "--json")
    assert shown.exit_code == 0 and json.loads(shown.stdout)["chunks"] == []
    for args in (
        ["search", "payments", "--said-since", "notadate"],
        ["source", "list", "--said-until", "notadate"],
        ["source", "show", f"file://{session}", "--said-since", "notadate"],
        ["memory", "list", "--said-since", "notadate"],
        ["memory", "search", "payments", "--said-until", "notadate"],
    ):
        bad = run_cli(*args)
        assert bad.exit_code == 1, args
        assert bad.stderr.count("\n") == 1 and "Traceback" not in bad.stderr
        assert "--said-" in bad.stderr and "notadate" in bad.stderr


def test_the_installed_cli_filters_by_said_time(run_lantern: ProcessRun, tmp_path: Path) -> None:
    session = tmp_path / "january.jsonl"
    session.write_text(SESSION + "\n")
    assert run_lantern("ingest", str(session)).returncode == 0
    january = run_lantern(
        "search", "rollback", "--said-since", "2026-01-31", "--said-until", "2026-02-01", "--json"
    )
    assert january.returncode == 0, january.stderr
    # One chunk holds the whole session: it overlaps the last day of January.
    [hit] = json.loads(january.stdout)
    assert (hit["said_from"], hit["said_until"]) == (JAN_15, FEB_1 + 60)
    shown = run_lantern("chunk", "show", hit["chunk_id"], "--json")
    assert list(json.loads(shown.stdout))[-2:] == ["said_from", "said_until"]
    bad = run_lantern("search", "rollback", "--said-since", "notadate")
    assert bad.returncode == 1
    assert bad.stderr.strip().splitlines() == [
        "Error: --said-since must be unix seconds or an ISO-8601 time; got 'notadate'"
    ]


# --- revision 0011 on a store at 0010 ------------------------------------------------------------


def _upgrade(url: str, revision: str = "head") -> None:
    config = migrations.alembic_config(migrations._Options(location=resolve(url), backup=False))
    command.upgrade(config, revision)


def _downgrade(url: str, revision: str) -> None:
    config = migrations.alembic_config(migrations._Options(location=resolve(url), backup=False))
    command.downgrade(config, revision)


# (uri, kind, source metadata, [(chunk text, chunk metadata)], expected said range per chunk)
STORED_AT_0010: list[tuple[str, str, Any, list[tuple[str, Any]], list[tuple[Any, Any]]]] = [
    (
        "chat.jsonl",
        "transcript",
        {"mtime": MARCH},
        [
            (_turn("user", "payments in january", JAN_15), {"first_ts": JAN_15, "last_ts": JAN_31}),
            (_turn("user", "payments reversed", None), {"first_ts": FEB_1, "last_ts": JAN_15}),
            (_turn("user", "payments untimed", None), {"first_ts": None, "last_ts": None}),
            (_turn("user", "payments odd", None), {"first_ts": "soon", "last_ts": JAN_31}),
            (_turn("user", "payments legacy", None), None),
        ],
        [(JAN_15, JAN_31), (JAN_15, FEB_1), (None, None), (JAN_31, JAN_31), (None, None)],
    ),
    (
        "file:///notes/a.md",
        "markdown",
        {"path": "/notes/a.md", "mtime": MARCH},
        [("# A\n\npayments note", {"heading_path": ["A"]}), ("payments more", {})],
        [(MARCH, MARCH), (MARCH, MARCH)],
    ),
    ("tool://x", "tool_output", {}, [("payments tool", {})], [(None, None)]),
    ("tool://y", "log", None, [("payments log", None)], [(None, None)]),
]


def _write_at_0010(url: str) -> dict[str, list[tuple[str, Any]]]:
    """Sources and chunks as a 0010 store holds them (only the columns it has), with the
    metadata the upgrade must leave as it is; the expected said range of each chunk by id."""
    location = resolve(url)
    if location.path is not None:
        prepare_sqlite_file(location.path)
    engine = create_store_engine(location)
    expected: dict[str, list[tuple[str, Any]]] = {}
    try:
        with engine.begin() as conn:
            for uri, kind, source_meta, bodies, ranges in STORED_AT_0010:
                sid = source_id(uri)
                conn.execute(
                    sources.insert().values(
                        id=sid,
                        uri=uri,
                        kind=kind,
                        content_hash="0" * 64,
                        metadata=source_meta,
                        created_at=1_700_000_000,
                        updated_at=1_700_000_000,
                    )
                )
                for ordinal, ((body, meta), said) in enumerate(zip(bodies, ranges, strict=True)):
                    cid = chunk_id(sid, ordinal, body)
                    expected.setdefault(uri, []).append((cid, said))
                    conn.execute(
                        chunks.insert().values(
                            id=cid,
                            source_id=sid,
                            ordinal=ordinal,
                            text=body,
                            metadata=meta,
                            created_at=1_700_000_000,
                        )
                    )
    finally:
        engine.dispose()
    return expected


def _metadata_as_stored(url: str) -> list[Any]:
    location = resolve(url)
    engine = create_store_engine(location)
    try:
        with engine.connect() as conn:
            return list(
                conn.execute(
                    text("SELECT id, text, metadata, created_at FROM chunks ORDER BY id")
                ).all()
            )
    finally:
        engine.dispose()


def test_a_store_at_0010_gets_its_chunks_dated_on_either_engine(store_url: str) -> None:
    _upgrade(store_url, "0010")
    expected = _write_at_0010(store_url)
    before = _metadata_as_stored(store_url)
    _upgrade(store_url)
    assert _metadata_as_stored(store_url) == before
    with Lantern.open(store_url) as lt:
        assert lt.status().revision == migrations.HEAD
        with lt.store.read() as conn:
            stored = {
                row.id: (row.said_from, row.said_until)
                for row in conn.execute(
                    select(chunks.c.id, chunks.c.said_from, chunks.c.said_until)
                )
            }
        for uri, ranges in expected.items():
            for cid, said in ranges:
                assert stored[cid] == said, (uri, cid)
        january = lt.evidence.search(
            "payments", mode="any", limit=50, said_since="2026-01-01", said_until="2026-02-01"
        )
        assert {hit.chunk_id for hit in january} == {
            cid for cid, said in expected["chat.jsonl"] if said != (None, None)
        }
        assert _uris(lt.evidence.search("payments", said_since=MARCH)) == ["file:///notes/a.md"]
        # The chunk index answers as before.
        assert len(lt.evidence.search("payments", mode="keyword", limit=50)) == 9
    _downgrade(store_url, "0010")
    assert _metadata_as_stored(store_url) == before
    _upgrade(store_url)
    with Lantern.open(store_url) as lt:
        assert len(lt.evidence.search("payments", said_since=0, limit=50)) == 5


def test_the_upgrade_keeps_the_chunk_trigger_that_indexes_changes(db_path: Path) -> None:
    _upgrade(str(db_path), "0010")
    _write_at_0010(str(db_path))
    engine = create_store_engine(resolve(str(db_path)))
    try:
        with engine.connect() as conn:
            trigger = conn.exec_driver_sql(
                "SELECT sql FROM sqlite_master WHERE name = 'chunks_au'"
            ).scalar()
    finally:
        engine.dispose()
    _upgrade(str(db_path))
    engine = create_store_engine(resolve(str(db_path)))
    try:
        with engine.begin() as conn:
            after = conn.exec_driver_sql(
                "SELECT sql FROM sqlite_master WHERE name = 'chunks_au'"
            ).scalar()
            assert after == trigger
            conn.exec_driver_sql(
                "UPDATE chunks SET text = 'zebra crossing' WHERE text = 'payments tool'"
            )
    finally:
        engine.dispose()
    with Lantern.open(db_path) as lt:
        assert _uris(lt.evidence.search("zebra", mode="keyword")) == ["tool://x"]
        assert lt.evidence.search("payments tool", mode="keyword") == []
