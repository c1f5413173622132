"""Semantic and hybrid search through the Python API, on every engine, with the hashing provider.

The hashing provider (`lantern-hashing-v1-256`) is not semantic: texts score high when they
share words or parts of words. That is enough to test storage, ranking, filters, paging,
invalidation and coverage in milliseconds; what a real model finds is tested with MiniLM in
`test_semantic_minilm.py`.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np
import pytest
from sqlalchemy import Connection, event

from lantern.api import Lantern
from lantern.embeddings.hashing import HashingProvider
from lantern.embeddings.registry import resolve_provider
from lantern.errors import InvalidInput, NotFound
from lantern.retrieval.fusion import DEPTH
from lantern.semantic import index
from lantern.semantic.sides import CHUNKS, MEMORY
from lantern.semantic.storage import write_memory_vectors
from tests.memory_helpers import sql

HASHING = "lantern-hashing-v1-256"

RECORDS = [
    ("user:rosa", "fact", "Rosa lives in a flat in Campo de Ourique, Lisbon."),
    ("user:rosa", "preference", "Rosa prefers green tea to coffee in the morning."),
    ("user:rosa", "constraint", "Rosa is allergic to nuts; never suggest almond dishes."),
    ("project:claims", "fact", "The migration ticket is CLM-2291; its deadline moved to June."),
    ("project:claims", "task_state", "The dispatch retry fix waits for review."),
    ("project:claims", "fact", "The deploy script lives in scripts/deploy.sh."),
]


@pytest.fixture(autouse=True)
def hashing(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every search and embed of this module uses the hashing provider."""
    monkeypatch.setenv("LANTERN_EMBED_MODEL", "hashing")


@pytest.fixture
def records(lt: Lantern) -> dict[str, str]:
    """The records, added; their ids by the start of their content."""
    added = lt.memory.add_many(
        [{"scope": scope, "kind": kind, "content": content} for scope, kind, content in RECORDS]
    )
    return {record.content.split()[1]: record.id for record, _created in added}


def _ids(page: Sequence[Any]) -> list[str]:
    return [match.record.id for match in page]


def _vectors(lt: Lantern, table: str = "memory_embeddings") -> list[Any]:
    key = "memory_id" if table == "memory_embeddings" else "chunk_id"
    return sql(lt, f"SELECT {key}, model, dim FROM {table} ORDER BY {key}")


# --- a store without vectors ----------------------------------------------------------------


def test_a_store_without_vectors_searches_as_before(lt: Lantern, records: dict[str, str]) -> None:
    default = lt.memory.search("where does Rosa live")
    assert default == lt.memory.search("where does Rosa live", mode="any")
    assert default.summary is not None and default.summary.to_json() == {
        "mode": "any",
        "model": None,
        "without_vector": 0,
    }
    assert {match.mode for match in default} == {"any"}
    # Asked for, semantic runs and says what it could not compare, without loading a model.
    semantic = lt.memory.search("where does Rosa live", mode="semantic")
    assert list(semantic) == []
    assert semantic.summary is not None
    assert (semantic.summary.model, semantic.summary.without_vector) == (HASHING, len(RECORDS))
    hybrid = lt.memory.search("where does Rosa live", mode="hybrid")
    assert _ids(hybrid) == _ids(default) and {m.mode for m in hybrid} == {"hybrid"}
    assert all(m.semantic_rank is None and m.similarity is None for m in hybrid)


# --- embedding ------------------------------------------------------------------------------


def test_embed_computes_the_missing_vectors_once(lt: Lantern, records: dict[str, str]) -> None:
    first = lt.embed()
    assert (first.provider, first.model) == ("hashing", HASHING)
    assert first.memory is not None and first.sources is not None
    assert (first.memory.embedded, first.memory.unchanged) == (len(RECORDS), 0)
    assert (first.sources.embedded, first.sources.unchanged) == (0, 0)
    again = lt.embed(sources=False)
    assert again.sources is None and again.memory is not None
    assert (again.memory.embedded, again.memory.unchanged) == (0, len(RECORDS))
    stored = _vectors(lt)
    assert [tuple(row[1:]) for row in stored] == [(HASHING, 256)] * len(RECORDS)
    with pytest.raises(InvalidInput, match="nothing to embed"):
        lt.embed(memory=False, sources=False)


def test_stored_vectors_are_the_providers_little_endian_float32(
    lt: Lantern, records: dict[str, str]
) -> None:
    lt.embed()
    [(blob, hashed)] = sql(
        lt,
        "SELECT vector, text_hash FROM memory_embeddings WHERE memory_id = :id",
        id=records["lives"],
    )
    expected = HashingProvider().embed([RECORDS[0][2]])[0]
    assert bytes(blob) == expected.astype("<f4").tobytes()
    assert hashed == __import__("hashlib").sha256(RECORDS[0][2].encode()).hexdigest()


def test_an_interrupted_embed_resumes(lt: Lantern, records: dict[str, str]) -> None:
    from lantern.memory.recordvectors import embed_missing

    class Failing(HashingProvider):
        calls = 0

        def embed(self, texts: Sequence[str]) -> Any:
            Failing.calls += 1
            if Failing.calls == 2:
                raise KeyboardInterrupt
            return super().embed(texts)

    with pytest.raises(KeyboardInterrupt):
        embed_missing(lt.store, Failing(), batch=2, progress=None)
    assert len(_vectors(lt)) == 2  # the first batch committed
    done: list[tuple[int, int]] = []
    resumed = embed_missing(
        lt.store, HashingProvider(), batch=2, progress=lambda *seen: done.append(seen)
    )
    assert (resumed.embedded, resumed.unchanged) == (len(RECORDS) - 2, 2)
    assert done == [(2, 6), (4, 6), (6, 6)]


# --- semantic and hybrid --------------------------------------------------------------------


@pytest.fixture
def embedded(lt: Lantern, records: dict[str, str]) -> dict[str, str]:
    lt.embed()
    return records


def test_semantic_ranks_every_record_by_cosine(lt: Lantern, embedded: dict[str, str]) -> None:
    found = lt.memory.search("flat in Lisbon", mode="semantic")
    assert len(found) == len(RECORDS) and found[0].record.id == embedded["lives"]
    similarities = [match.similarity for match in found]
    assert similarities == sorted(similarities, reverse=True)
    assert [m.semantic_rank for m in found] == list(range(1, len(RECORDS) + 1))
    assert all(m.keyword_rank is None and m.mode == "semantic" for m in found)
    assert all(m.score == m.similarity for m in found)
    query = HashingProvider().embed(["flat in Lisbon"])[0]
    record = HashingProvider().embed([RECORDS[0][2]])[0]
    assert found[0].similarity == pytest.approx(float(query @ record), abs=1e-6)
    assert found.summary is not None and found.summary.without_vector == 0


def test_the_default_is_hybrid_once_there_are_vectors(
    lt: Lantern, embedded: dict[str, str]
) -> None:
    found = lt.memory.search("CLM-2291 deadline")
    assert found.summary is not None and found.summary.mode == "hybrid"
    assert found[0].record.id == embedded["migration"]  # the exact identifier, first
    top = found[0]
    assert (top.keyword_rank, top.semantic_rank) == (1, 1)
    # First in both rankings (a fused score of 1), and, where keyword scores are BM25, clear of
    # the keyword second (+1).
    assert top.score == pytest.approx(1.0 if lt.store.dialect == "postgresql" else 2.0)
    assert all(m.mode == "hybrid" for m in found)
    # Every fused hit below the first scores in [0, 1]; the order is by score.
    assert all(0 <= m.score <= 1 for m in found[1:])
    assert [m.score for m in found] == sorted((m.score for m in found), reverse=True)


def test_hybrid_finds_whatever_any_finds(lt: Lantern, embedded: dict[str, str]) -> None:
    many = [{"kind": "observation", "content": f"Note {i} about coffee."} for i in range(30)]
    lt.memory.add_many(many)
    lt.embed()
    words = lt.memory.search("coffee", mode="any", limit=100)
    fused = lt.memory.search("coffee", mode="hybrid", limit=100)
    assert set(_ids(words)) <= set(_ids(fused))
    tail = [m for m in fused if m.score == 0]
    assert tail and all(m.keyword_rank is not None and m.keyword_rank > DEPTH for m in tail)
    assert [m.keyword_rank for m in tail] == sorted(m.keyword_rank or 0 for m in tail)


def test_filters_and_scopes_hold_in_every_mode(
    lt: Lantern, embedded: dict[str, str], store_url: str
) -> None:
    mode: str | None  # a named mode, or None for the default
    for mode in ("semantic", "hybrid"):
        found = lt.memory.search("Rosa deploy migration", mode=mode, scope="project:*")
        assert found and {m.record.scope for m in found} == {"project:claims"}
        kinds = lt.memory.search("Rosa", mode=mode, kind="constraint")
        assert _ids(kinds) == [embedded["is"]]
    lt.memory.archive(embedded["prefers"])
    assert embedded["prefers"] not in _ids(lt.memory.search("tea", mode="semantic"))
    assert embedded["prefers"] in _ids(lt.memory.search("tea", mode="semantic", status="all"))
    with Lantern.open(store_url, scopes=["user:*"]) as fenced:
        for mode in ("semantic", "hybrid", None):
            seen = fenced.memory.search("deploy script CLM-2291", mode=mode, status="all")
            assert seen and {m.record.scope for m in seen} == {"user:rosa"}
        with pytest.raises(NotFound):
            fenced.memory.similar(embedded["deploy"])
        assert {m.record.scope for m in fenced.memory.similar(embedded["lives"])} == {"user:rosa"}


def test_semantic_and_hybrid_pages_follow_each_other(lt: Lantern, embedded: dict[str, str]) -> None:
    for mode in ("semantic", "hybrid"):
        for order in ("relevance", "policy"):
            whole = _ids(lt.memory.search("Rosa flat tea", mode=mode, order=order, limit=100))
            pages: list[str] = []
            after = None
            while True:
                page = lt.memory.search(
                    "Rosa flat tea", mode=mode, order=order, limit=2, after=after
                )
                pages += _ids(page)
                after = page.next_cursor
                if after is None:
                    break
            assert pages == whole, (mode, order)
            by_offset = lt.memory.search("Rosa flat tea", mode=mode, order=order, offset=2)
            assert _ids(by_offset) == whole[2:]
    cursor = lt.memory.search("Rosa", mode="semantic", limit=1).next_cursor
    with pytest.raises(InvalidInput, match="continues another search"):
        lt.memory.search("Rosa", mode="hybrid", limit=1, after=cursor)


def test_policy_order_lists_the_matches_in_the_list_order(
    lt: Lantern, embedded: dict[str, str]
) -> None:
    lt.memory.update(embedded["deploy"], priority=90)
    found = lt.memory.search("deploy script", mode="hybrid", order="policy")
    assert found[0].record.id == embedded["deploy"]
    keys = [(-m.record.priority, -m.record.updated_at, m.record.id) for m in found]
    assert keys == sorted(keys)
    semantic = lt.memory.search("deploy script", mode="semantic", order="policy")
    assert len(semantic) == len(RECORDS)  # every record is among the DEPTH nearest here
    assert all(m.keyword_rank is None for m in semantic)


def test_a_forgotten_record_is_found_by_no_mode(lt: Lantern, embedded: dict[str, str]) -> None:
    gone = embedded["allergic"] if "allergic" in embedded else embedded["is"]
    mode: str | None  # a named mode, or None for the default
    for mode in ("keyword", "any", "semantic", "hybrid"):
        assert gone in _ids(lt.memory.search("allergic nuts", mode=mode))
    cached = index.load(lt.store, MEMORY, HASHING)
    [(blob,)] = sql(lt, "SELECT vector FROM memory_embeddings WHERE memory_id = :id", id=gone)
    lt.memory.forget(gone)
    assert gone not in [row[0] for row in _vectors(lt)]
    path = lt.location.path
    if path is not None:  # SQLite: the vector's bytes left the files too (secure_delete)
        for part in (path, path.with_name(path.name + "-wal")):
            assert not part.exists() or bytes(blob) not in part.read_bytes()
    for mode in ("keyword", "any", "semantic", "hybrid", None):
        assert gone not in _ids(lt.memory.search("allergic nuts", mode=mode))
    assert index.load(lt.store, MEMORY, HASHING) is not cached  # reloaded once, then kept
    assert index.load(lt.store, MEMORY, HASHING) is index.load(lt.store, MEMORY, HASHING)
    for other in (
        x for x in embedded.values() if x != gone and x in _ids(lt.memory.search("Rosa"))
    ):
        assert gone not in _ids(lt.memory.similar(other, limit=50))


def test_records_and_chunks_added_after_a_search_are_counted_without_a_vector(
    lt: Lantern, embedded: dict[str, str], store_url: str
) -> None:
    """Counting what has no vector is skipped while every row has one; a row added since,
    by this store or by another process's, is counted at once (SQLite keeps that count until
    a commit, here the other store's)."""

    def missing(found: Any) -> int:
        assert found.summary is not None
        return int(found.summary.without_vector)

    assert missing(lt.memory.search("Lisbon", mode="semantic")) == 0
    lt.memory.add(kind="fact", content="Rosa's sister lives in Porto.")
    assert missing(lt.memory.search("Lisbon", mode="semantic")) == 1
    with Lantern.open(store_url) as other:
        other.memory.add(kind="fact", content="Rosa's brother lives in Faro.")
        other.evidence.ingest_text("note:faro", "# Faro\n\nThe brother's address.", kind="markdown")
    assert missing(lt.memory.search("Lisbon", mode="semantic")) == 2
    assert missing(lt.evidence.search("Faro", mode="semantic")) == 1
    lt.embed()
    assert missing(lt.memory.search("Lisbon", mode="semantic")) == 0
    assert missing(lt.evidence.search("Faro", mode="semantic")) == 0


def test_an_update_invalidates_or_reembeds(lt: Lantern, embedded: dict[str, str]) -> None:
    record = embedded["dispatch"]
    lt.memory.update(record, priority=10)  # not the content: the vector stays
    assert record in [row[0] for row in _vectors(lt)]
    lt.memory.update(record, content="The dispatch retry fix was merged on Friday.")
    assert record not in [row[0] for row in _vectors(lt)]
    found = lt.memory.search("dispatch merged", mode="semantic")
    assert record not in _ids(found)
    assert found.summary is not None and found.summary.without_vector == 1
    lt.set_embedding_settings(on_write=True)
    lt.memory.update(record, content="The dispatch retry fix shipped in release 4.2.")
    [(hashed,)] = sql(
        lt, "SELECT text_hash FROM memory_embeddings WHERE memory_id = :id", id=record
    )
    assert (
        hashed
        == __import__("hashlib")
        .sha256(b"The dispatch retry fix shipped in release 4.2.")
        .hexdigest()
    )
    assert lt.memory.search("dispatch release", mode="semantic")[0].record.id == record
    assert lt.check().warnings == []


def test_writes_embed_when_the_store_says_so(lt: Lantern) -> None:
    assert lt.embedding_settings().to_json() == {"default_model": None, "on_write": False}
    lt.memory.add(kind="fact", content="Stored without a vector.")
    assert _vectors(lt) == []
    settings = lt.set_embedding_settings(default_model="hashing", on_write=True)
    assert settings.to_json() == {"default_model": "hashing", "on_write": True}
    added = lt.memory.add(kind="fact", content="Stored with its vector.")
    many = lt.memory.add_many([{"kind": "goal", "content": "Ship the manual."}])
    new = lt.memory.supersede(added.id, content="Stored with its vector, again.")
    moved = lt.memory.supersede(many[0][0].id, scope="project:docs")
    assert {row[0] for row in _vectors(lt)} == {added.id, many[0][0].id, new.id, moved.id}
    lt.evidence.ingest_text("note:a", "The manual is built with MkDocs.")
    assert len(_vectors(lt, "embeddings")) == 1
    lt.set_embedding_settings(on_write=False, clear_default_model=True)
    assert lt.embedding_settings().default_model is None
    with pytest.raises(InvalidInput, match="unknown embedding provider 'bert'"):
        lt.set_embedding_settings(default_model="bert")


def test_bad_embedding_settings_are_refused_before_anything_is_written(lt: Lantern) -> None:
    before = lt.embedding_settings()
    refused = {
        "give either a default model or clear it, not both": {
            "default_model": "hashing",
            "clear_default_model": True,
        },
        "the default model must be an embedding provider's name": {"default_model": "  "},
        "unknown embedding provider 'bert'; available: ": {
            "default_model": "bert",
            "on_write": True,
        },
    }
    for message, arguments in refused.items():
        with pytest.raises(InvalidInput) as caught:
            lt.set_embedding_settings(**arguments)  # type: ignore[arg-type]
        assert caught.value.message.startswith(message)
    assert lt.embedding_settings() == before
    assert lt.set_embedding_settings(default_model=" hashing ").default_model == "hashing"


def test_a_write_asks_whether_to_embed_inside_its_own_transaction(lt: Lantern) -> None:
    # A store that does not embed pays one look-up inside the write, not a transaction of its
    # own; one that does still has its vectors computed before the write that stores them.
    import threading

    begun: list[Connection] = []
    caller = threading.current_thread()

    def count(conn: Connection) -> None:
        # The word index's catch-up after each write runs in a thread of its own.
        if threading.current_thread() is caller:
            begun.append(conn)

    event.listen(lt.store.engine, "begin", count)
    try:
        first = lt.memory.add(kind="fact", content="Written in one transaction.")
        revised = lt.memory.update(first.id, content="Revised in one transaction.")
        replaced = lt.memory.supersede(revised.id, content="Superseded in one transaction.")
        lt.memory.add_many([{"kind": "goal", "content": "Added in one transaction."}])
        assert len(begun) == 4
        assert _vectors(lt) == []
        lt.set_embedding_settings(default_model="hashing", on_write=True)
        added = lt.memory.add(kind="fact", content="Embedded before its write.")
        updated = lt.memory.update(replaced.id, content="Embedded again before its write.")
    finally:
        event.remove(lt.store.engine, "begin", count)
    assert {row[0] for row in _vectors(lt)} == {added.id, updated.id}


def test_two_models_never_mix(lt: Lantern, embedded: dict[str, str]) -> None:
    # Vectors of another model, of another size, beside the hashing ones.
    other = np.eye(3, dtype="<f4")
    with lt.store.write() as conn:
        rows = [(record, other[i % 3].tobytes(), "x") for i, record in enumerate(embedded.values())]
        write_memory_vectors(conn, "other-model-3", 3, rows, 1)
    found = lt.memory.search("Lisbon flat", mode="semantic")
    assert found.summary is not None and found.summary.model == HASHING
    assert len(found) == len(RECORDS)
    assert index.load(lt.store, MEMORY, "other-model-3").dim == 3
    assert index.load(lt.store, MEMORY, HASHING).dim == 256
    embeddings = lt.status().embeddings
    assert embeddings is not None
    coverage = {m.model: m for m in embeddings.models}
    assert (coverage[HASHING].records, coverage["other-model-3"].records) == (6, 6)
    # A chunk holds one vector: embedding with another model replaces it.
    lt.evidence.ingest_text("note:b", "Rosa's sister lives in Porto.")
    lt.embed(memory=False)
    with lt.store.write() as conn:
        conn.exec_driver_sql("UPDATE embeddings SET model = 'old-model'")
    replaced = lt.embed(memory=False)
    assert replaced.sources is not None and replaced.sources.embedded == 1
    assert [tuple(row[1:]) for row in _vectors(lt, "embeddings")] == [(HASHING, 256)]


def test_similar_records_leave_the_record_out(lt: Lantern, embedded: dict[str, str]) -> None:
    twin = lt.memory.add(kind="fact", content=RECORDS[0][2], scope="user:rosa-2")
    lt.embed()
    found = lt.memory.similar(embedded["lives"], limit=3)
    assert embedded["lives"] not in _ids(found)
    assert found[0].record.id == twin.id and found[0].similarity == pytest.approx(1.0)
    assert len(found) == 3 and all(m.mode == "semantic" for m in found)
    lt.memory.archive(twin.id)
    assert twin.id not in _ids(lt.memory.similar(embedded["lives"]))
    with pytest.raises(NotFound):
        lt.memory.similar("mem_00000000000000ff")
    with pytest.raises(InvalidInput, match="limit must be"):
        lt.memory.similar(embedded["lives"], limit=0)


def test_bad_models_are_one_line_errors(lt: Lantern, embedded: dict[str, str]) -> None:
    with pytest.raises(InvalidInput, match="unknown embedding provider 'bert'; available"):
        lt.memory.search("x", mode="semantic", model="bert")
    with pytest.raises(InvalidInput, match="unknown embedding provider 'bert'"):
        lt.evidence.search("x", model="bert")
    with pytest.raises(InvalidInput, match="model must be"):
        lt.memory.search("x", model=" ")


# --- chunks ---------------------------------------------------------------------------------


@pytest.fixture
def notes(lt: Lantern) -> Iterator[dict[str, str]]:
    ids = {}
    for uri, kind, text in [
        ("note:home", "markdown", "# Home\n\nRosa moved to a flat in Campo de Ourique."),
        ("note:deploy", "markdown", "# Deploy\n\nRun scripts/deploy.sh after CLM-2291 lands."),
        ("log:ci", "log", "ERROR exit code 137: the dispatch worker ran out of memory"),
    ]:
        ids[uri] = lt.evidence.ingest_text(uri, text, kind=kind).source.id
    lt.embed()
    yield ids


def test_chunks_by_meaning_and_fused(lt: Lantern, notes: dict[str, str]) -> None:
    hits = lt.evidence.search("flat Campo Ourique", mode="semantic")
    assert hits[0].uri == "note:home" and hits[0].mode == "semantic"
    assert (hits[0].keyword_rank, hits[0].semantic_rank) == (None, 1)
    assert "«" not in hits[0].snippet and "Campo de Ourique" in hits[0].snippet
    assert hits.summary is not None and hits.summary.to_json() == {
        "mode": "semantic",
        "model": HASHING,
        "without_vector": 0,
    }
    fused = lt.evidence.search("exit code 137")
    assert fused.summary is not None and fused.summary.mode == "hybrid"
    assert fused[0].uri == "log:ci" and "«137»" in fused[0].snippet
    assert (fused[0].keyword_rank, fused[0].semantic_rank) == (1, 1)
    assert lt.evidence.search("Ourique", mode="semantic", kind="log")[0].uri == "log:ci"
    only = lt.evidence.search("Ourique", mode="hybrid", source="note:deploy")
    assert {hit.uri for hit in only} == {"note:deploy"}
    assert len(lt.evidence.search("anything", mode="semantic", limit=2)) == 2
    with pytest.raises(InvalidInput, match="its mode is keyword"):
        lt.evidence.search("x", raw=True, mode="semantic")


def test_chunk_vectors_go_with_their_chunks(lt: Lantern, notes: dict[str, str]) -> None:
    before = {row[0] for row in _vectors(lt, "embeddings")}
    assert len(before) == 3
    lt.evidence.ingest_text("note:home", "# Home\n\nRosa now lives in Arroios.", kind="markdown")
    after = {row[0] for row in _vectors(lt, "embeddings")}
    assert len(after) == 2 and after < before  # the changed chunk's vector went with it
    hits = lt.evidence.search("Arroios", mode="semantic")
    assert "note:home" not in [hit.uri for hit in hits]
    assert hits.summary is not None and hits.summary.without_vector == 1
    lt.evidence.remove_source(notes["log:ci"])
    assert len(_vectors(lt, "embeddings")) == 1
    # A chunk whose searchable text changes with its source's kind loses its vector.
    lt.evidence.ingest_text("chat:1", '{"role": "user", "content": "caf\\u00e9 at noon"}',
                            kind="log")  # fmt: skip
    lt.embed(memory=False)
    count = len(_vectors(lt, "embeddings"))
    lt.evidence.ingest_text("chat:1", '{"role": "user", "content": "caf\\u00e9 at noon"}',
                            kind="transcript")  # fmt: skip
    assert len(_vectors(lt, "embeddings")) == count - 1
    lt.embed(memory=False)
    assert lt.evidence.search("café", mode="semantic")[0].uri == "chat:1"


def test_coverage_and_vector_warnings(lt: Lantern, embedded: dict[str, str]) -> None:
    lt.evidence.ingest_text("note:x", "Something to search.")
    status = lt.status().to_json()["embeddings"]
    assert status == {
        "default_model": None,
        "on_write": False,
        "records": 6,
        "chunks": 1,
        "models": [
            {
                "model": HASHING,
                "dim": 256,
                "records": 6,
                "records_without": 0,
                "chunks": 0,
                "chunks_without": 1,
            }
        ],
    }
    assert lt.check().warnings == []
    with lt.store.write() as conn:
        conn.exec_driver_sql(
            f"UPDATE memory_embeddings SET dim = 255 WHERE memory_id = '{embedded['lives']}'"
        )
        stale = embedded["prefers"]  # as if the record had changed behind Lantern's back
        conn.exec_driver_sql(
            f"UPDATE memory_embeddings SET text_hash = 'x' WHERE memory_id = '{stale}'"
        )
    warnings = lt.check().warnings
    assert any(f"memory vector of {embedded['lives']}" in w and "bytes" in w for w in warnings)
    assert any(f"memory vector of {embedded['prefers']}" in w and "stale" in w for w in warnings)
    assert lt.check().healthy
    found = lt.memory.search("Lisbon", mode="semantic")
    assert embedded["lives"] not in _ids(found)  # an unusable vector is left out


def test_the_cache_reloads_only_when_vectors_change(lt: Lantern, embedded: dict[str, str]) -> None:
    first = index.load(lt.store, MEMORY, HASHING)
    lt.memory.add(kind="fact", content="No vector for this one.")
    lt.memory.update(embedded["deploy"], priority=1)
    assert index.load(lt.store, MEMORY, HASHING) is first
    lt.embed()
    assert len(index.load(lt.store, MEMORY, HASHING)) == len(first) + 1
    chunks = index.load(lt.store, CHUNKS, HASHING)
    assert len(chunks) == 0
    provider = resolve_provider("hashing")
    assert provider.model == HASHING


def test_a_legacy_stores_vectors_are_used_as_they_are(tmp_path: Any) -> None:
    """A generation-2 store's chunk vectors survive the upgrade byte for byte, are counted, and
    load as the vectors of their model (scaled to unit length for the cosine)."""
    import sqlite3

    from tests.legacy_stores import EMBEDDING_DIM, build_legacy_store

    path = tmp_path / "legacy.db"
    build_legacy_store(path, 2, awkward=False)
    with sqlite3.connect(path) as conn:
        before = conn.execute("SELECT chunk_id, model, dim, vector FROM embeddings").fetchall()
    with Lantern.open(str(path), require_current=False) as lt:
        lt.upgrade(backup=False)
    with Lantern.open(str(path)) as lt:
        with sqlite3.connect(path) as conn:
            after = conn.execute("SELECT chunk_id, model, dim, vector FROM embeddings").fetchall()
        assert sorted(after) == sorted(before) and before
        [model] = {row[1] for row in before}
        coverage = lt.status().embeddings
        assert coverage is not None
        assert [(m.model, m.dim, m.chunks) for m in coverage.models] == [
            (model, EMBEDDING_DIM, len(before))
        ]
        loaded = index.load(lt.store, CHUNKS, model)
        assert sorted(loaded.ids) == sorted(row[0] for row in before)
        first = np.frombuffer(before[0][3], dtype="<f4")
        row = loaded.row_of(before[0][0])
        assert row is not None
        assert np.allclose(loaded.matrix[row], first / np.linalg.norm(first), atol=1e-6)
        assert lt.check().warnings == []
