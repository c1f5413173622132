"""Stores made by older Lantern versions, once upgraded, are searched and inspected like new ones.

Legacy stores are SQLite files, so these tests run on SQLite only. They build a store with
`tests.legacy_stores`, upgrade it with `lantern db upgrade`, and compare with what the legacy
FTS index answered before the upgrade.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from lantern.api import Lantern
from lantern.cli import cli
from tests.helpers import lantern_process
from tests.legacy_stores import (
    FTS_PROBE_QUERIES,
    PENDING_FTS_QUERY,
    PENDING_SOURCE_URI,
    build_legacy_store,
    chunk_id,
    entity_id,
    fts_answers,
    source_id,
)

MEETING = "file:///home/ada/notes/meeting-000.md"
SYNTAX = "mailto:ada@example.org?subject=Re%3A%20FTS%20syntax"
MEETING_TEXTS = [
    "Meeting notes 0: the Lantern evidence store keeps every chunk it saw.",
    "Action items 0: review the quarterly budget, then archive the draft.",
    "Follow-up 0: Ada Lovelace asked about the embedding model.",
]


def run(path: Path, *args: str) -> Result:
    return CliRunner().invoke(cli, ["--db", str(path), *args])


def upgrade(path: Path) -> None:
    result = run(path, "db", "upgrade", "--no-backup")
    assert result.exit_code == 0, result.output


def fts_integrity(path: Path) -> None:
    """FTS5's own check that the index matches the `chunks` rows it was built from."""
    conn = sqlite3.connect(path)
    try:
        conn.execute("INSERT INTO chunks_fts(chunks_fts) VALUES ('integrity-check')")
    finally:
        conn.close()


@pytest.fixture(params=[1, 2], ids=["generation-1", "generation-2"])
def legacy(request: pytest.FixtureRequest, tmp_path: Path) -> tuple[Path, dict[str, list[str]]]:
    """An upgraded legacy store and what its FTS index answered before the upgrade."""
    path = tmp_path / "legacy.db"
    build_legacy_store(path, request.param, wal_pending=True)
    answers = fts_answers(path, [*FTS_PROBE_QUERIES, PENDING_FTS_QUERY])
    upgrade(path)
    return path, answers


def test_raw_queries_answer_as_before_the_upgrade(
    legacy: tuple[Path, dict[str, list[str]]],
) -> None:
    path, answers = legacy
    with Lantern.open(path) as lt:
        for query, expected in answers.items():
            hits = lt.evidence.search(query, raw=True, limit=10_000)
            found = sorted(hit.chunk_id for hit in hits)
            assert expected, query
            if query == '"quoted"':  # stems (revision 0012): the text with "quote" too
                assert set(expected) < set(found), query
            else:
                assert found == expected, query


@pytest.mark.parametrize(
    ("query", "uri"),
    [
        ("C++ panic", SYNTAX),
        ("don't", SYNTAX),
        ('"AND OR NOT NEAR"', SYNTAX),
        ("NEAR(alpha omega, 2)", SYNTAX),
        ("col:value", SYNTAX),
        ("東京", "file:///home/ada/Документы/日本語 notes/résumé.md"),
        ("foxfire", "file:///home/ada/Документы/日本語 notes/résumé.md"),
        ("needlework", "file:///var/log/lantern/huge.log"),
        ("zanzibar", "file:///var/log/lantern/huge.log"),
        ("quarterly budget", MEETING),
        (PENDING_FTS_QUERY, PENDING_SOURCE_URI),
    ],
)
def test_user_queries_find_legacy_chunks(
    legacy: tuple[Path, dict[str, list[str]]], query: str, uri: str
) -> None:
    with Lantern.open(legacy[0]) as lt:
        hits = lt.evidence.search(query)
    assert uri in [hit.uri for hit in hits]
    assert all(hit.snippet for hit in hits)


def test_legacy_rows_render_with_empty_metadata_and_missing_offsets(
    legacy: tuple[Path, dict[str, list[str]]],
) -> None:
    shown = run(legacy[0], "source", "show", SYNTAX, "--json")
    assert shown.exit_code == 0, shown.output
    record = json.loads(shown.stdout)
    assert record["id"] == source_id(SYNTAX)
    assert (record["kind"], record["title"], record["metadata"]) == ("email", None, {})
    assert record["created_at"] == 2_200_000_000  # past 2038
    assert record["chunk_count"] == 4
    assert [c["metadata"] for c in record["chunks"]] == [{}, {}, {}, {}]
    assert {(c["start_offset"], c["end_offset"]) for c in record["chunks"]} == {(None, None)}
    hits = json.loads(run(legacy[0], "search", "stray", "--json").stdout)
    assert [(h["uri"], h["start_offset"], h["end_offset"]) for h in hits] == [(SYNTAX, None, None)]


def test_ordinal_gaps_are_neighbours_all_the_same(
    legacy: tuple[Path, dict[str, list[str]]],
) -> None:
    with Lantern.open(legacy[0]) as lt:
        huge = lt.evidence.get_source("file:///var/log/lantern/huge.log")
        assert huge.chunks is not None
        assert [c.ordinal for c in huge.chunks] == [0, 2]
        detail = lt.evidence.get_chunk(huge.chunks[0].id, context=1)
    assert detail.after == (huge.chunks[1],)


def test_entities_and_embeddings_are_shown_and_removed_with_their_source(tmp_path: Path) -> None:
    path = tmp_path / "legacy.db"
    build_legacy_store(path, 2)
    upgrade(path)
    ids = [chunk_id(source_id(MEETING), n, text) for n, text in enumerate(MEETING_TEXTS)]
    shown = json.loads(run(path, "source", "show", MEETING, "--json").stdout)
    lantern_entity = {"id": entity_id("project", "Lantern"), "name": "Lantern", "kind": "project"}
    ada_entity = {
        "id": entity_id("person", "Ada Lovelace"),
        "name": "Ada Lovelace",
        "kind": "person",
    }
    small = {"model": "lantern-embed-small", "dim": 8}
    assert [c["id"] for c in shown["chunks"]] == ids
    assert [(c["entities"], c["embeddings"]) for c in shown["chunks"]] == [
        ([lantern_entity], []),
        ([], [small]),
        ([ada_entity, lantern_entity], [small]),
    ]
    chunk = json.loads(run(path, "chunk", "show", ids[2], "--json").stdout)
    assert (chunk["entities"], chunk["embeddings"]) == ([ada_entity, lantern_entity], [small])
    human = run(path, "chunk", "show", ids[2])
    assert "entities: Ada Lovelace (person), Lantern (project)" in human.stdout
    assert "embedding: lantern-embed-small, 8 dimensions" in human.stdout

    removed = run(path, "source", "remove", MEETING, "--json")
    assert removed.exit_code == 0 and json.loads(removed.stdout)["chunk_count"] == 3
    conn = sqlite3.connect(path)
    try:
        placeholders = ", ".join("?" * len(ids))
        for table in ("chunk_entities", "embeddings", "chunks"):
            count = conn.execute(
                f"SELECT count(*) FROM {table} WHERE chunk_id IN ({placeholders})"
                if table != "chunks"
                else f"SELECT count(*) FROM chunks WHERE id IN ({placeholders})",
                ids,
            ).fetchone()[0]
            assert count == 0, table
        assert conn.execute("SELECT count(*) FROM entities").fetchone()[0] == 7  # entities stay
    finally:
        conn.close()
    fts_integrity(path)
    assert json.loads(run(path, "search", "quarterly", "--json").stdout) != []  # other meetings
    hits = json.loads(run(path, "search", '"Action items 0"', "--json").stdout)
    assert hits == []


def test_reingesting_legacy_evidence_keeps_its_ids(tmp_path: Path) -> None:
    path = tmp_path / "legacy.db"
    build_legacy_store(path, 2)
    upgrade(path)
    ids = [chunk_id(source_id(MEETING), n, text) for n, text in enumerate(MEETING_TEXTS)]
    with Lantern.open(path) as lt:
        kind = lt.evidence.get_source(MEETING).kind
        same = lt.evidence.ingest_text(MEETING, "\n\n".join(MEETING_TEXTS), kind=kind)
        assert same.status == "unchanged"  # the legacy content hash is the same sha256
        edited = [
            MEETING_TEXTS[0],
            "Action items 0: review the annual budget, then publish the final draft.",
            MEETING_TEXTS[2],
        ]
        result = lt.evidence.ingest_text(MEETING, "\n\n".join(edited), kind=kind, target_size=100)
        assert (result.status, result.chunks_written, result.chunks_kept) == ("updated", 1, 2)
        after = lt.evidence.get_source(MEETING)
    assert after.chunks is not None
    assert [c.id for c in after.chunks] == [ids[0], chunk_id(after.id, 1, edited[1]), ids[2]]
    assert [len(c.embeddings) for c in after.chunks] == [0, 0, 1]  # the replaced one's is gone
    assert [len(c.entities) for c in after.chunks] == [1, 0, 2]
    fts_integrity(path)


def test_the_real_executable_searches_an_upgraded_store(tmp_path: Path) -> None:
    path = tmp_path / "legacy.db"
    build_legacy_store(path, 1)
    upgraded = lantern_process("--db", str(path), "db", "upgrade", "--no-backup")
    assert upgraded.returncode == 0, upgraded.stderr
    found = lantern_process("--db", str(path), "search", "needlework", "--json")
    assert found.returncode == 0, found.stderr
    assert [hit["uri"] for hit in json.loads(found.stdout)] == ["file:///var/log/lantern/huge.log"]
    listed = lantern_process("--db", str(path), "source", "list", "--kind", "email", "--json")
    assert [s["uri"] for s in json.loads(listed.stdout)] == [SYNTAX]
