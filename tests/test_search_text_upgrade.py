"""Revision 0007 on stores that already hold transcripts: their chunks are indexed by what they
say, on legacy stores of both generations, on stores at 0005 on both engines, and back."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest
from sqlalchemy import text

from alembic import command
from lantern.api import Lantern
from lantern.evidence.searchtext import search_text
from lantern.store import migrations
from lantern.store.engine import create_store_engine, prepare_sqlite_file
from lantern.store.ids import chunk_id, source_id
from lantern.store.location import resolve
from lantern.store.models import chunks, sources
from tests.legacy_stores import (
    FTS_PROBE_QUERIES,
    TRANSCRIPT_URI,
    build_legacy_store,
    fts_answers,
    snapshot,
)


def _upgrade(url: str, revision: str = "head") -> None:
    config = migrations.alembic_config(migrations._Options(location=resolve(url), backup=False))
    command.upgrade(config, revision)


def _downgrade(url: str, revision: str) -> None:
    config = migrations.alembic_config(migrations._Options(location=resolve(url), backup=False))
    command.downgrade(config, revision)


def _keyword(lt: Lantern, query: str) -> set[str]:
    return {hit.uri for hit in lt.evidence.search(query, mode="keyword", limit=100)}


def _search_rows(lt: Lantern) -> dict[str, str]:
    with lt.store.read() as conn:
        return dict(conn.execute(text("SELECT chunk_id, text FROM chunk_search_text")).all())


def _derived(lt: Lantern) -> dict[str, str]:
    """What the current rule derives for every stored chunk."""
    with lt.store.read() as conn:
        rows = conn.execute(
            text("SELECT c.id, s.kind, c.text FROM chunks c JOIN sources s ON s.id = c.source_id")
        ).all()
    return {
        chunk: found for chunk, kind, body in rows if (found := search_text(kind, body)) is not None
    }


@pytest.mark.parametrize("generation", [1, 2])
def test_a_legacy_store_is_searched_by_what_its_transcripts_say(
    tmp_path: Path, generation: int
) -> None:
    path = tmp_path / "legacy.db"
    build_legacy_store(path, generation, transcripts=True, wal_pending=generation == 2)
    before = snapshot(path)
    answers = fts_answers(path, FTS_PROBE_QUERIES)
    raw = fts_answers(path, ["u00fcrich", "role", "nthen", "cafe"])
    assert all(raw[query] for query in ("u00fcrich", "role", "nthen"))
    migrations.upgrade(resolve(str(path)), backup=False)
    after_rows = snapshot(path)
    assert {table: after_rows[table] for table in before} == before  # every row, id and byte
    with Lantern.open(path) as lt:
        assert lt.check().healthy, lt.check().problems
        rows = _search_rows(lt)
        assert len(rows) == 3 and rows == _derived(lt)
        assert _keyword(lt, "zürich café") == {TRANSCRIPT_URI}
        assert _keyword(lt, "then walked") == {TRANSCRIPT_URI}
        assert _keyword(lt, "u00fcrich") == set() and _keyword(lt, "nthen") == set()
        assert TRANSCRIPT_URI not in _keyword(lt, "role")
        assert _keyword(lt, "very long turn ends") == {TRANSCRIPT_URI}
    # Every other answer is the one the store gave before; "cafe" now also finds the café,
    # and `"quoted"`, matched by its stem (revision 0012), the text with "quote".
    after = fts_answers(path, FTS_PROBE_QUERIES)
    grown = {"cafe", '"quoted"'}
    assert {query: after[query] for query in answers if query not in grown} == {
        query: found for query, found in answers.items() if query not in grown
    }
    assert all(set(answers[query]) < set(after[query]) for query in grown)


def _add_transcript_rows(url: str) -> list[str]:
    """Chunks of a transcript and of a note, written as a store at revision 0005 held them."""
    location = resolve(url)
    if location.path is not None:
        prepare_sqlite_file(location.path)
    engine = create_store_engine(location)
    turns = [
        json.dumps({"role": "user", "content": "Gr\u00fc\u00dfe aus Z\u00fcrich.\nBis bald."}),
        json.dumps({"role": "assistant", "content": "Merci \u2014 \u00e0 bient\u00f4t."}),
    ]
    written = []
    try:
        with engine.begin() as conn:
            for uri, kind, bodies in (
                ("chat.jsonl", "transcript", turns),
                ("note.md", "markdown", ["# Note\n\nThe role of a café."]),
            ):
                sid = source_id(uri)
                conn.execute(
                    sources.insert().values(
                        id=sid,
                        uri=uri,
                        kind=kind,
                        content_hash="0" * 64,
                        metadata={},
                        created_at=1_700_000_000,
                        updated_at=1_700_000_000,
                    )
                )
                for ordinal, body in enumerate(bodies):
                    written.append(chunk_id(sid, ordinal, body))
                    conn.execute(
                        chunks.insert().values(
                            id=written[-1],
                            source_id=sid,
                            ordinal=ordinal,
                            text=body,
                            metadata={},
                            created_at=1_700_000_000,
                        )
                    )
    finally:
        engine.dispose()
    return written


def test_a_store_at_0005_gets_its_search_texts_on_either_engine(store_url: str) -> None:
    _upgrade(store_url, "0005")
    first, second, note = _add_transcript_rows(store_url)
    _upgrade(store_url)
    with Lantern.open(store_url) as lt:
        assert lt.status().revision == migrations.HEAD
        assert _search_rows(lt) == {
            first: "user: Grüße aus Zürich.\nBis bald.",
            second: "assistant: Merci — à bientôt.",
        }
        assert _keyword(lt, "grüße zürich") == {"chat.jsonl"}
        assert _keyword(lt, "role") == {"note.md"} and _keyword(lt, "u00fc") == set()
        assert lt.check().healthy, lt.check().problems
        lt.evidence.remove_source("chat.jsonl")
        assert _search_rows(lt) == {} and lt.check().healthy
    assert note


def test_downgrade_gives_back_the_generation_1_index(db_path: Path) -> None:
    _upgrade(str(db_path), "0005")
    _add_transcript_rows(str(db_path))
    conn = sqlite3.connect(db_path)
    schema = conn.execute("SELECT name, sql FROM sqlite_master ORDER BY name").fetchall()
    conn.close()
    at_0005 = fts_answers(db_path, ["u00fc", "role", "zürich", "café"])
    _upgrade(str(db_path))
    assert fts_answers(db_path, ["u00fc", "role", "zürich"])["zürich"] != []
    _downgrade(str(db_path), "0005")
    conn = sqlite3.connect(db_path)
    assert conn.execute("SELECT name, sql FROM sqlite_master ORDER BY name").fetchall() == schema
    conn.close()
    assert fts_answers(db_path, ["u00fc", "role", "zürich", "café"]) == at_0005
