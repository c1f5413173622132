"""Derived indexes of a PostgreSQL store, kept by a long-lived server process from the feed.

On PostgreSQL a feed row's `seq` is drawn when it is inserted and transactions commit in their
own order, so the feed is read with a transaction-id horizon (`lantern.indexes.feed`): a row
whose transaction commits after a reader passed its `seq` is still applied by the next
catch-up. A server process (`Lantern.keep_indexes`) keeps the word index in the user's cache
directory and finds what the database finds; any other process searches in the database.
"""

from __future__ import annotations

import json
import random
from collections.abc import Iterator
from pathlib import Path

import pytest
import sqlalchemy

from lantern import Lantern
from lantern.indexes import feed, place, words
from lantern.indexes.feed import START, Mark
from lantern.memory import topk
from tests.helpers import lantern_process
from tests.test_word_index import FILTERS, _content, _ids
from tests.test_word_index import QUERIES as WORD_INDEX_QUERIES

pytestmark = pytest.mark.skipif(not words.available(), reason="needs the index extra (tantivy)")


@pytest.fixture(autouse=True)
def _nothing_served(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each test starts in a process that serves no store."""
    monkeypatch.setattr(place, "_served", set())


def _engine(url: str) -> sqlalchemy.Engine:
    return sqlalchemy.create_engine(url)


def _feed_row(conn: sqlalchemy.Connection, item_id: str) -> int:
    statement = "INSERT INTO index_feed (side, item_id) VALUES ('memory', :item) RETURNING seq"
    return int(conn.execute(sqlalchemy.text(statement), {"item": item_id}).scalar_one())


def test_a_change_committed_after_a_later_one_is_read_by_the_next_catch_up(
    postgres_url: str,
) -> None:
    Lantern.open(postgres_url).close()  # the schema, at head
    engine = _engine(postgres_url)
    try:
        with engine.connect() as slow, engine.connect() as quick, engine.connect() as reader:
            slow.begin()
            low = _feed_row(slow, "mem_slow")  # drawn first, committed last
            with quick.begin():
                high = _feed_row(quick, "mem_quick")
            assert low < high
            with reader.begin():
                first = Mark.now(reader, feed.MEMORY)
                assert first.seq == high and first.anchor == "mem_quick"
                assert feed.changed(reader, feed.MEMORY, START, first) == ["mem_quick"]
            slow.commit()
            with reader.begin():
                now = Mark.now(reader, feed.MEMORY)
                # Read by `seq` alone, the row below the mark would be lost for good.
                assert now.seq == first.seq
                naive = reader.execute(
                    sqlalchemy.text("SELECT item_id FROM index_feed WHERE seq > :after"),
                    {"after": first.seq},
                ).all()
                assert naive == []
                assert feed.lacking(reader, feed.MEMORY, first, now) == 1
                assert feed.changed(reader, feed.MEMORY, first, now) == ["mem_slow"]
                # Once applied, nothing is lacking nor read again.
                assert feed.lacking(reader, feed.MEMORY, now, now) == 0
                assert feed.changed(reader, feed.MEMORY, now, now) == []
    finally:
        engine.dispose()


def test_a_mark_says_whether_anything_was_committed_since(postgres_url: str) -> None:
    with Lantern.open(postgres_url) as lt:
        engine = _engine(postgres_url)
        try:
            with engine.connect() as slow:
                slow.begin()
                _feed_row(slow, "mem_slow")
                with engine.begin() as quick:
                    _feed_row(quick, "mem_quick")
                mark = Mark.latest(lt.store, feed.MEMORY)
                assert feed.unchanged(lt.store, feed.MEMORY, mark)
                slow.commit()
            assert not feed.unchanged(lt.store, feed.MEMORY, mark)
            assert Mark.from_json(json.loads(json.dumps(mark.to_json()))) == mark
        finally:
            engine.dispose()


def _fill(lt: Lantern, n: int, seed: int = 3) -> None:
    rng = random.Random(seed)
    lt.memory.add_many(
        [
            {
                "kind": rng.choice(["fact", "goal", "preference"]),
                "content": f"{_content(rng)} {i}",
                "scope": rng.choice(["user:ada", "user:adam", "project:x", "global"]),
                "priority": rng.randint(0, 100),
            }
            for i in range(n)
        ]
    )
    for record in lt.memory.list(limit=n // 5):
        lt.memory.archive(record.id)


def _served(lt: Lantern) -> Path:
    """Keep the store's indexes as a server does, and wait for the first build."""
    lt.keep_indexes()
    for thread in list(topk._builds):
        thread.finish()
    directory = place.directory(lt.store.location)
    assert directory is not None
    return directory


@pytest.fixture(scope="module")
def filled_postgres() -> Iterator[str]:
    """One PostgreSQL store of 300 records for the tests that only read it."""
    import os

    from tests.conftest import POSTGRES_ENV, _postgres_schema_url

    base_url = os.environ.get(POSTGRES_ENV)
    if not base_url:
        pytest.skip(f"PostgreSQL tests need {POSTGRES_ENV}")
    urls = _postgres_schema_url(base_url)
    url = next(urls)
    with Lantern.open(url) as lt:
        _fill(lt, 300)
    yield url
    next(urls, None)


# Those where PostgreSQL's parser and the index split or fold words apart too (`résumé` is not
# `resume` there; `20.04` is one word): the database decides what matches.
QUERIES = [*WORD_INDEX_QUERIES, "Résumé", "straße"]


@pytest.mark.parametrize("mode", ["keyword", "any"])
def test_a_server_finds_what_the_database_finds(
    filled_postgres: str, mode: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    with Lantern.open(filled_postgres) as lt:
        database = {
            (query, index): _ids(lt.memory.search(query, mode=mode, limit=1000, **filters))  # type: ignore[arg-type]
            for query in QUERIES
            for index, filters in enumerate(FILTERS)
        }
        directory = _served(lt)
        assert place.current(directory, words.NAME) is not None
        for query in QUERIES:
            for index, filters in enumerate(FILTERS):
                found = lt.memory.search(query, mode=mode, limit=1000, **filters)  # type: ignore[arg-type]
                assert sorted(_ids(found)) == sorted(database[query, index]), (query, filters)
                assert [match.keyword_rank for match in found] == list(range(1, len(found) + 1))
        assert words.status(lt.store)["state"] == "current"


def test_a_servers_pages_join_into_its_whole_ranking(filled_postgres: str) -> None:
    with Lantern.open(filled_postgres) as lt:
        _served(lt)
        assert topk.ready_index(lt.memory) is not None
        whole = lt.memory.search("ledger lamp", mode="any", limit=1000)
        assert len(whole) > 50
        for limit in (7, 50):
            seen: list[str] = []
            after = None
            while True:
                page = lt.memory.search("ledger lamp", mode="any", limit=limit, after=after)
                seen += _ids(page)
                if page.next_cursor is None:
                    break
                after = page.next_cursor
            assert seen == _ids(whole)


def test_the_mcp_server_keeps_the_indexes_of_a_postgresql_store(postgres_url: str) -> None:
    from lantern.mcpserver.server import open_store
    from lantern.memory.scopes import ScopePolicy

    with Lantern.open(postgres_url) as lt:
        lt.memory.add(kind="fact", content="a served okapi")
    served = open_store(postgres_url, scopes=ScopePolicy.of(()), read_only=False)()
    try:
        for thread in list(topk._builds):
            thread.finish()
        directory = place.directory(served.store.location)
        assert directory is not None and place.current(directory, words.NAME) is not None
        assert topk.ready_index(served.memory) is not None
    finally:
        served.close()


def test_a_server_sees_a_change_whose_transaction_commits_late(postgres_url: str) -> None:
    with Lantern.open(postgres_url) as lt:
        first = lt.memory.add(kind="fact", content="an ordinary ledger")
        second = lt.memory.add(kind="fact", content="another ordinary ledger")
        _served(lt)
        assert topk.ready_index(lt.memory) is not None
        engine = _engine(postgres_url)
        update = sqlalchemy.text("UPDATE memory_records SET content = :content WHERE id = :id")
        try:
            with engine.connect() as slow:
                slow.begin()
                slow.execute(update, {"content": "a late okapi", "id": first.id})
                with engine.begin() as quick:
                    quick.execute(update, {"content": "a quick zebra", "id": second.id})
                assert _ids(lt.memory.search("zebra", mode="keyword")) == [second.id]
                assert lt.memory.search("okapi", mode="keyword") == []
                slow.commit()
            assert _ids(lt.memory.search("okapi", mode="keyword")) == [first.id]
            assert topk.ready_index(lt.memory) is not None  # found through the index
            assert words.status(lt.store)["state"] == "current"
        finally:
            engine.dispose()


def test_a_one_shot_cli_searches_in_the_database_and_status_reports_the_servers_index(
    postgres_url: str,
) -> None:
    with Lantern.open(postgres_url) as lt:
        record = lt.memory.add(kind="fact", content="a served okapi")
        assert words.status(lt.store)["state"] == "unavailable"  # no server has kept one
        directory = _served(lt)
        assert directory.stat().st_mode & 0o077 == 0
        assert directory.is_relative_to(Path.home() / ".cache" / "lantern" / "indexes")
        found = lantern_process("--db", postgres_url, "memory", "search", "okapi", "--json")
        assert found.returncode == 0, found.stderr
        assert [hit["id"] for hit in json.loads(found.stdout)] == [record.id]
        assert place.current(directory, words.NAME) is not None
        status = lantern_process("--db", postgres_url, "db", "status", "--json")
        assert json.loads(status.stdout)["word_index"] | {"size_bytes": 0} == {
            "state": "current",
            "records": 1,
            "size_bytes": 0,
            "behind_by": 0,
        }
        engine = _engine(postgres_url)  # a write by a tool of its own
        with engine.begin() as conn:
            conn.execute(sqlalchemy.text("UPDATE memory_records SET status = 'archived'"))
        engine.dispose()
        status = lantern_process("--db", postgres_url, "db", "status", "--json")
        assert json.loads(status.stdout)["word_index"]["state"] == "behind"
        checked = lantern_process("--db", postgres_url, "db", "check", "--json")
        assert checked.returncode == 0, checked.stdout + checked.stderr


def test_a_servers_vector_index_gives_the_same_pages_and_follows_other_clients(
    postgres_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from lantern.indexes import vectors
    from lantern.semantic import index
    from lantern.semantic.sides import MEMORY
    from tests.test_vector_index import HASHING, NAME, add, agree, live_ids, table_ids

    monkeypatch.setenv("LANTERN_EMBED_MODEL", "hashing")
    index.forget_cached()
    with Lantern.open(postgres_url) as lt:
        add(lt, 60)
        lt.embed(sources=False)
        directory = _served(lt)
        assert place.current(directory, NAME) is not None  # built at start
        # Hybrid's keyword side in the database in both runs: they differ in vectors alone.
        monkeypatch.setattr(topk, "ready_index", lambda core: None)
        agree(lt, monkeypatch)
        assert index.load(lt.store, MEMORY, HASHING).mark is not None
        ids = [record.id for record in lt.memory.list(limit=100)]
        with Lantern.open(postgres_url) as other:  # another client: nothing of it is served
            added = add(other, 5, seed=11)
            other.embed(sources=False)
            other.memory.update(ids[0], content="A new text about the flight and the hotel.")
            other.memory.forget(ids[2])
        assert live_ids(lt) == table_ids(lt)
        assert set(added) <= set(live_ids(lt)) and ids[2] not in live_ids(lt)
        agree(lt, monkeypatch)
        assert [found["current"] for found in vectors.status(lt.store)] == [True]
    index.forget_cached()


def test_a_confined_caller_of_a_server_searches_its_fenced_index(
    filled_postgres: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from lantern.memory.scopes import ScopePolicy

    with Lantern.open(filled_postgres) as lt:
        directory = _served(lt)
        confined = lt.restricted(scopes=ScopePolicy.of(["user:ada*"]), read_only=True)
        with monkeypatch.context() as patched:
            patched.setenv(place.ENV_VAR, "off")
            database = {
                query: sorted(_ids(confined.memory.search(query, mode="any", limit=1000)))
                for query in ("ledger", "deploy release", "lamp oil")
            }
        assert words.fenced_names(directory) == []
        assert topk.ready_index(confined.memory) is not None  # built by its first search
        assert len(words.fenced_names(directory)) == 1
        for query, expected in database.items():
            found = confined.memory.search(query, mode="any", limit=1000)
            assert sorted(_ids(found)) == expected, query
            assert {match.record.scope for match in found} <= {"user:ada"}
