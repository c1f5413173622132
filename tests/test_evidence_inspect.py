"""Showing, listing and removing sources and chunks through the Python API, on every engine."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable

import pytest
from sqlalchemy import insert, select

from lantern.api import Lantern
from lantern.entities.records import EntityRef
from lantern.errors import InvalidInput, NotFound
from lantern.evidence.records import ChunkDetail, EmbeddingInfo
from lantern.store.models import chunk_entities, chunks, embeddings, entities
from tests.helpers import CHUNK_KEYS, FIRST_CHUNK_KEYS, SAID_KEYS, SOURCE_KEYS, CliRun

PARAGRAPHS = [" ".join(f"p{n}w{i}" for i in range(20)) for n in range(5)]
TEXT = "\n\n".join(PARAGRAPHS)


@pytest.fixture
def five(lt: Lantern) -> Lantern:
    """One source of five paragraph-sized chunks."""
    lt.evidence.ingest_text("doc:five", TEXT, target_size=150, metadata={"owner": "ada"})
    return lt


def test_get_source_by_id_or_uri_with_its_chunks(five: Lantern) -> None:
    by_uri = five.evidence.get_source("doc:five")
    assert five.evidence.get_source(by_uri.id) == by_uri
    assert by_uri.chunks is not None
    assert [c.text for c in by_uri.chunks] == PARAGRAPHS
    # Spaced out, which leaves room for chunks inserted later.
    assert [c.ordinal for c in by_uri.chunks] == [0, 1000, 2000, 3000, 4000]
    rendered = by_uri.to_json()
    assert list(rendered) == [*SOURCE_KEYS, "chunks"]
    assert rendered["metadata"] == {"size": len(TEXT), "owner": "ada"}
    assert rendered["chunk_count"] == 5 and rendered["title"] is None
    assert all(list(chunk) == CHUNK_KEYS for chunk in rendered["chunks"])
    first = rendered["chunks"][0]
    assert first == {
        "id": by_uri.chunks[0].id,
        "source_id": by_uri.id,
        "ordinal": 0,
        "text": PARAGRAPHS[0],
        "start_offset": 0,
        "end_offset": len(PARAGRAPHS[0]),
        "metadata": {},
        "created_at": by_uri.created_at,
        "entities": [],
        "embeddings": [],
        "said_from": None,
        "said_until": None,
    }
    bare = five.evidence.get_source("doc:five", with_chunks=False)
    assert bare.chunks is None and list(bare.to_json()) == SOURCE_KEYS


def test_get_chunk_with_context(five: Lantern) -> None:
    stored = five.evidence.get_source("doc:five").chunks
    assert stored is not None
    middle = five.evidence.get_chunk(stored[2].id, context=1)
    assert middle == ChunkDetail(
        chunk=stored[2],
        source=five.evidence.get_source("doc:five", with_chunks=False),
        before=(stored[1],),
        after=(stored[3],),
    )
    assert five.evidence.get_chunk(stored[2].id).before == ()
    edge = five.evidence.get_chunk(stored[0].id, context=3)
    assert edge.before == () and edge.after == tuple(stored[1:4])
    assert five.evidence.get_chunk(stored[4].id, context=100).before == tuple(stored[:4])
    rendered = middle.to_json()
    assert list(rendered) == [*FIRST_CHUNK_KEYS, "source", "before", "after", *SAID_KEYS]
    assert list(rendered["source"]) == SOURCE_KEYS
    assert [c["ordinal"] for c in rendered["before"] + rendered["after"]] == [1000, 3000]


def test_list_sources_filters_orders_and_counts(lt: Lantern) -> None:
    lt.evidence.ingest_text("file:///notes/b.md", "# B\n\nbee", kind="markdown")
    lt.evidence.ingest_text("file:///notes/a.md", "# A\n\nant", kind="markdown")
    lt.evidence.ingest_text("file:///Notes/c.log", "x\ny", kind="log")
    lt.evidence.ingest_text("tool://run", "", kind="tool_output")
    listed = lt.evidence.list_sources()
    assert [s.uri for s in listed] == [
        "file:///Notes/c.log",
        "file:///notes/a.md",
        "file:///notes/b.md",
        "tool://run",
    ]
    assert [s.chunk_count for s in listed] == [1, 1, 1, 0]
    assert all(s.chunks is None for s in listed)
    assert [s.uri for s in lt.evidence.list_sources(kind="markdown")] == [
        "file:///notes/a.md",
        "file:///notes/b.md",
    ]
    assert [s.uri for s in lt.evidence.list_sources(uri_prefix="file:///notes/")] == [
        "file:///notes/a.md",
        "file:///notes/b.md",
    ]
    assert [s.kind for s in lt.evidence.list_sources(kind=["log", "tool_output"])] == [
        "log",
        "tool_output",
    ]
    assert [s.uri for s in lt.evidence.list_sources(limit=2, offset=1)] == [
        "file:///notes/a.md",
        "file:///notes/b.md",
    ]
    assert lt.evidence.list_sources(uri_prefix="nothing:") == []


def test_remove_source_takes_its_chunks_links_and_vectors_and_keeps_memory_refs(
    five: Lantern,
) -> None:
    five.evidence.ingest_text("doc:other", "other text stays")
    target = five.evidence.get_source("doc:five")
    assert target.chunks is not None
    with five.store.write() as conn:
        conn.execute(insert(entities).values(id="ent_1", name="Ada", kind="person"))
        conn.execute(insert(chunk_entities).values(chunk_id=target.chunks[0].id, entity_id="ent_1"))
        conn.execute(
            insert(embeddings).values(
                chunk_id=target.chunks[1].id, model="m", dim=2, vector=b"\0" * 8
            )
        )
    shown = five.evidence.get_chunk(target.chunks[0].id)
    assert shown.chunk.entities == (EntityRef("ent_1", "Ada", "person"),)
    assert five.evidence.get_chunk(target.chunks[1].id).chunk.embeddings == (EmbeddingInfo("m", 2),)
    memory = five.memory.add(
        kind="fact", content="cited", source_refs=[f"chunk:{target.chunks[0].id}"]
    )

    removed = five.evidence.remove_source("doc:five")
    assert removed == dataclasses.replace(target, chunks=None)
    with pytest.raises(NotFound):
        five.evidence.get_source("doc:five")
    with pytest.raises(NotFound, match="no chunk with id"):
        five.evidence.get_chunk(target.chunks[0].id)
    with five.store.read() as conn:
        assert conn.execute(select(chunks.c.source_id)).scalars().all() == [
            five.evidence.get_source("doc:other").id
        ]
        assert conn.execute(select(chunk_entities)).all() == []
        assert conn.execute(select(embeddings)).all() == []
        # An entity goes with the last link to it: only the removed chunk named Ada.
        assert conn.execute(select(entities.c.id)).scalars().all() == []
    assert five.memory.get(memory.id).source_refs == memory.source_refs
    assert [s.uri for s in five.evidence.list_sources()] == ["doc:other"]


@pytest.mark.parametrize(
    ("call", "error", "message"),
    [
        (lambda lt: lt.evidence.get_source("src_0000000000000000"), NotFound, "no source"),
        (lambda lt: lt.evidence.get_source(""), NotFound, "a source id or uri is required"),
        (
            lambda lt: lt.evidence.get_source("/home/ada/notes.md"),
            NotFound,
            "file:///home/ada/notes.md",
        ),
        (lambda lt: lt.evidence.remove_source("doc:nope"), NotFound, "no source with id or uri"),
        (lambda lt: lt.evidence.get_chunk("chk_0000000000000000"), NotFound, "no chunk with id"),
        (lambda lt: lt.evidence.get_chunk(""), NotFound, "a chunk id is required"),
        (lambda lt: lt.evidence.get_chunk("x", context=-1), InvalidInput, "context must be"),
        (lambda lt: lt.evidence.get_chunk("x", context=101), InvalidInput, "context must be"),
        (lambda lt: lt.evidence.list_sources(limit=0), InvalidInput, "limit must be"),
        (lambda lt: lt.evidence.list_sources(offset=-1), InvalidInput, "offset must be"),
        (lambda lt: lt.evidence.list_sources(uri_prefix=""), InvalidInput, "uri_prefix filter"),
    ],
)
def test_lookups_fail_cleanly_and_change_nothing(
    five: Lantern, call: Callable[[Lantern], object], error: type[Exception], message: str
) -> None:
    before = five.evidence.get_source("doc:five")
    with pytest.raises(error, match=message):
        call(five)
    assert five.evidence.get_source("doc:five") == before


def test_source_and_chunk_show_list_the_memories_citing_them(run_cli: CliRun) -> None:
    ingested = run_cli(
        "ingest",
        "-",
        "--uri",
        "note://cited",
        "--kind",
        "document",
        "--json",
        input="Alpha paragraph.\n\nBeta paragraph.\n",
    )
    assert ingested.exit_code == 0, ingested.output
    source = json.loads(run_cli("source", "show", "note://cited", "--json").stdout)
    chunk_id = source["chunks"][0]["id"]
    assert source["cited_by"] == []
    by_chunk = json.loads(
        run_cli(
            "memory",
            "add",
            "--kind",
            "fact",
            "--source-ref",
            f"chunk:{chunk_id}",
            "--json",
            "from the chunk",
        ).stdout
    )
    by_source = json.loads(
        run_cli(
            "memory",
            "add",
            "--kind",
            "fact",
            "--source-ref",
            f"source:{source['id']}",
            "--json",
            "from the source",
        ).stdout
    )
    shown = json.loads(run_cli("source", "show", source["id"], "--json").stdout)
    assert sorted(shown["cited_by"]) == sorted([by_chunk["id"], by_source["id"]])
    assert list(shown)[-2:] == ["cited_by", "next_cursor"]
    chunk = json.loads(run_cli("chunk", "show", chunk_id, "--json").stdout)
    assert chunk["cited_by"] == [by_chunk["id"]]
    human = run_cli("chunk", "show", chunk_id)
    assert f"cited by: {by_chunk['id']}" in human.stdout


def test_cited_by_stays_within_the_scopes_of_a_restricted_lantern(store_url: str) -> None:
    with Lantern.open(store_url) as lt:
        source = lt.evidence.ingest_text("note://scoped", "Some evidence.", kind="document").source
        inside = lt.memory.add(
            kind="fact", scope="team:a", content="in", source_refs=[f"source:{source.id}"]
        )
        lt.memory.add(
            kind="fact", scope="team:b", content="out", source_refs=[f"source:{source.id}"]
        )
    with Lantern.open(store_url, scopes=["team:a"]) as restricted:
        assert restricted.cited_by(f"source:{source.id}") == [inside.id]
