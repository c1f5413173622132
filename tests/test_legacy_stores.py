"""Tests of the legacy-store helper: upgrade tests are only as good as the stores it builds."""

from __future__ import annotations

import hashlib
import re
import shutil
import sqlite3
import struct
from pathlib import Path
from typing import Any

import pytest

from tests.legacy_stores import (
    EMBEDDING_DIM,
    FTS_PROBE_QUERIES,
    GENERATION_1_DDL,
    GENERATION_2_DDL,
    PENDING_FTS_QUERY,
    PENDING_SOURCE_URI,
    _reading_connection,
    build_legacy_store,
    chunk_id,
    ddl_for,
    ddl_statements,
    entity_id,
    fts_answers,
    snapshot,
    source_id,
)

GENERATIONS = (1, 2)
FTS_SHADOW_TABLES = {"chunks_fts_data", "chunks_fts_idx", "chunks_fts_docsize", "chunks_fts_config"}
#: snapshot() rows hold object; tests index into them knowing the legacy columns.
Rows = dict[str, list[tuple[Any, ...]]]
USUAL_KINDS = {"transcript", "markdown", "source_file", "tool_output", "log", "document"}


@pytest.fixture(scope="module")
def stores(tmp_path_factory: pytest.TempPathFactory) -> dict[tuple[int, bool], Path]:
    """Build each (generation, wal_pending) store once: building one takes ~70 ms."""
    built: dict[tuple[int, bool], Path] = {}
    for generation in GENERATIONS:
        for wal in (False, True):
            folder = tmp_path_factory.mktemp(f"gen{generation}-{'wal' if wal else 'plain'}")
            built[generation, wal] = folder / "lantern.db"
            build_legacy_store(built[generation, wal], generation, wal_pending=wal)
    return built


def _normalise(sql: str) -> str:
    return " ".join(sql.split())


def _copy_main_file_only(store: Path, folder: Path) -> Path:
    """Copy the main database file without its -wal/-shm: what a naive file copy would keep."""
    folder.mkdir()
    target = folder / store.name
    shutil.copyfile(store, target)
    return target


def test_ddl_constants_are_the_specification_text() -> None:
    # Pinned from schema-v1.sql and schema-v2.sql: a failure means the DDL was edited.
    assert hashlib.sha256(GENERATION_1_DDL.encode()).hexdigest() == (
        "5ae9275761892ff933f55de616c4213914b512991126e857065adac4f194e85b"
    )
    assert hashlib.sha256(GENERATION_2_DDL.encode()).hexdigest() == (
        "65fadab975f15787e5d17a36e9c9254451194b73ce7ee9f8e7df1a3c337e0268"
    )
    assert ddl_statements(GENERATION_1_DDL)[0] == "PRAGMA user_version = 1"
    assert ddl_statements(GENERATION_2_DDL)[0] == "PRAGMA user_version = 2"


def test_id_golden_vectors() -> None:
    # Computed by hand with hashlib from the format's conventions.
    sid = source_id("file:///home/ada/notes/meeting-000.md")
    assert sid == "src_262d6c19ef9fe8ba"
    text = "Meeting notes 0: the Lantern evidence store keeps every chunk it saw."
    assert chunk_id(sid, 0, text) == "chk_bc85d7e10dc93666"
    assert entity_id("person", "Ada Lovelace") == "ent_82a355902603f38e"
    assert entity_id("person", "ADA LOVELACE") == "ent_82a355902603f38e"
    assert entity_id("place", "東京") == "ent_be96665419ce73df"


@pytest.mark.parametrize("wal", [False, True])
@pytest.mark.parametrize("generation", GENERATIONS)
def test_store_is_a_legacy_store(
    stores: dict[tuple[int, bool], Path], generation: int, wal: bool
) -> None:
    with _reading_connection(stores[generation, wal]) as conn:
        assert conn.execute("PRAGMA user_version").fetchone() == (generation,)
        assert conn.execute("PRAGMA journal_mode").fetchone() == ("wal" if wal else "delete",)
        assert conn.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
        names = {name for (name,) in conn.execute("SELECT name FROM sqlite_master")}
    assert "alembic_version" not in names


@pytest.mark.parametrize("generation", GENERATIONS)
def test_schema_is_exactly_the_ddl(stores: dict[tuple[int, bool], Path], generation: int) -> None:
    expected: dict[str, str] = {}
    for statement in ddl_statements(ddl_for(generation)):
        if statement.startswith("PRAGMA"):
            continue
        match = re.match(r"CREATE (?:VIRTUAL )?(?:TABLE|INDEX|TRIGGER) (\w+)", statement)
        assert match, statement
        expected[match.group(1)] = _normalise(statement)

    with _reading_connection(stores[generation, False]) as conn:
        rows = conn.execute("SELECT name, sql FROM sqlite_master").fetchall()
    actual = {
        name: _normalise(sql)
        for name, sql in rows
        if not name.startswith("sqlite_autoindex_") and name not in FTS_SHADOW_TABLES
    }
    assert actual == expected
    assert {name for name, _ in rows} >= FTS_SHADOW_TABLES
    assert ("entities" in actual) == (generation == 2)


@pytest.mark.parametrize("generation", GENERATIONS)
def test_rows_follow_the_format(stores: dict[tuple[int, bool], Path], generation: int) -> None:
    rows: Rows = snapshot(stores[generation, False])
    sources = {row[0]: row for row in rows["sources"]}
    for sid, uri, *_ in rows["sources"]:
        assert sid == source_id(uri)
    for _, cid, sid, ordinal, text, *_ in rows["chunks"]:
        assert cid == chunk_id(sid, ordinal, text)
        assert sid in sources
    times = [t for row in rows["sources"] for t in row[6:8]] + [row[8] for row in rows["chunks"]]
    assert all(type(t) is int for t in times)  # unix seconds, never text or float
    if generation == 1:
        assert set(rows) == {"sources", "chunks"}
        return

    chunk_ids = {row[1] for row in rows["chunks"]}
    for eid, name, kind in rows["entities"]:
        assert eid == entity_id(kind, name)
    for cid, eid in rows["chunk_entities"]:
        assert cid in chunk_ids
        assert eid in {row[0] for row in rows["entities"]}
    chunks_per_source: dict[str, int] = {}
    for row in rows["chunks"]:
        chunks_per_source[row[2]] = chunks_per_source.get(row[2], 0) + 1
    source_of = {row[1]: row[2] for row in rows["chunks"]}
    for cid, _model, dim, vector in rows["embeddings"]:
        assert cid in chunk_ids
        assert dim == EMBEDDING_DIM
        assert isinstance(vector, bytes) and len(vector) == 4 * dim
        values = struct.unpack("<" + "f" * dim, vector)
        assert struct.pack("<" + "f" * dim, *values) == vector
    assert any(chunks_per_source[source_of[row[0]]] > 1 for row in rows["embeddings"])


@pytest.mark.parametrize("generation", GENERATIONS)
def test_awkward_data_is_present(stores: dict[tuple[int, bool], Path], generation: int) -> None:
    rows: Rows = snapshot(stores[generation, False])
    metadata = [row[5] for row in rows["sources"]] + [row[7] for row in rows["chunks"]]
    assert "" in metadata and "{}" in metadata
    assert any(m and m.startswith("{") and len(m) > 2 for m in metadata)
    assert (None in metadata) == (generation == 1)  # generation 2's DDL forbids NULL

    kinds = {row[2] for row in rows["sources"]}
    assert kinds - USUAL_KINDS and kinds & USUAL_KINDS
    assert any(row[3] is None for row in rows["sources"])  # a NULL title
    assert any(row[5] is None and row[6] is None for row in rows["chunks"])  # NULL offsets
    assert any(row[6] > 2**31 for row in rows["sources"])  # a time past 2038

    texts = [row[4] for row in rows["chunks"]]
    assert max(len(text) for text in texts) >= 1_000_000
    joined = "".join(text for text in texts if len(text) < 10_000)
    for needle in ('"quoted"', "AND OR NOT NEAR(", "col:value", "a*", "^x", "C++", "don't"):
        assert needle in joined
    for needle in ("🦊", "東京", "שלום", "مرحبا", "e\u0301", "\x07", "\x1b", "\u200b"):
        assert needle in joined
    assert "\x00" not in joined

    rowids = [row[0] for row in rows["chunks"]]
    assert rowids != list(range(1, len(rowids) + 1))  # a gap left by a deleted chunk


def test_plain_store_without_awkward_rows(tmp_path: Path) -> None:
    store = tmp_path / "plain.db"
    build_legacy_store(store, 2, awkward=False, n_sources=2)
    rows: Rows = snapshot(store)
    assert len(rows["sources"]) == 2 and len(rows["chunks"]) == 6
    assert all(row[7] not in (None, "") for row in rows["chunks"])
    assert rows["embeddings"] and rows["chunk_entities"]


@pytest.mark.parametrize("generation", GENERATIONS)
def test_fts_answers_every_probe_query(
    stores: dict[tuple[int, bool], Path], generation: int, tmp_path: Path
) -> None:
    store = stores[generation, False]
    answers = fts_answers(store, FTS_PROBE_QUERIES)
    assert list(answers) == list(FTS_PROBE_QUERIES)
    assert all(answers.values()), {query: ids for query, ids in answers.items() if not ids}
    assert all(ids == sorted(ids) for ids in answers.values())
    assert fts_answers(store, [PENDING_FTS_QUERY]) == {PENDING_FTS_QUERY: []}

    # The external-content index agrees with the chunks table (on a copy: this is an INSERT).
    copy = _copy_main_file_only(store, tmp_path / "copy")
    conn = sqlite3.connect(copy)
    try:
        conn.execute("INSERT INTO chunks_fts(chunks_fts) VALUES ('integrity-check')")
    finally:
        conn.close()


@pytest.mark.parametrize("generation", GENERATIONS)
def test_wal_pending_rows_live_only_in_the_wal(
    stores: dict[tuple[int, bool], Path], generation: int, tmp_path: Path
) -> None:
    store = stores[generation, True]
    wal = store.with_name(store.name + "-wal")
    assert wal.stat().st_size > 0
    assert store.with_name(store.name + "-shm").exists()

    main_only = _copy_main_file_only(store, tmp_path / "main-only")
    pending_sid = source_id(PENDING_SOURCE_URI)
    full: Rows = snapshot(store)
    checkpointed: Rows = snapshot(main_only)
    assert pending_sid in {row[0] for row in full["sources"]}
    assert sum(row[2] == pending_sid for row in full["chunks"]) == 2
    # The main file alone holds exactly the first batch, which is the plain store's content.
    assert checkpointed == snapshot(stores[generation, False])
    assert fts_answers(store, [PENDING_FTS_QUERY])[PENDING_FTS_QUERY]
    assert fts_answers(main_only, [PENDING_FTS_QUERY]) == {PENDING_FTS_QUERY: []}
    if generation == 2:
        assert len(full["embeddings"]) == len(checkpointed["embeddings"]) + 1
        assert len(full["chunk_entities"]) == len(checkpointed["chunk_entities"]) + 1


@pytest.mark.parametrize("generation", GENERATIONS)
def test_reading_leaves_a_wal_store_as_it_was(
    stores: dict[tuple[int, bool], Path], generation: int
) -> None:
    store = stores[generation, True]
    wal = store.with_name(store.name + "-wal")
    before = store.read_bytes(), wal.read_bytes()
    rows: Rows = snapshot(store)
    fts_answers(store, FTS_PROBE_QUERIES)
    with _reading_connection(store, copy=True) as conn:  # the fallback for read-only folders
        assert conn.execute("SELECT count(*) FROM sources").fetchone() == (len(rows["sources"]),)
    assert (store.read_bytes(), wal.read_bytes()) == before


def test_refuses_unknown_generation_and_existing_files(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="generation"):
        build_legacy_store(tmp_path / "three.db", 3)
    existing = tmp_path / "existing.db"
    existing.with_name("existing.db-wal").write_bytes(b"")
    with pytest.raises(FileExistsError):
        build_legacy_store(existing, 1)
    assert not existing.exists()
