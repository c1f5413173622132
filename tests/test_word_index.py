"""The derived word index beside a SQLite store (`lantern.indexes.words`).

It must change how fast a search is, never what it finds: the same matches as the database's
own full-text search for every query form and filter, pages that join, every committed change
seen by the next search (from this process or another), a forgotten record's words gone from
the disk, and an index that is missing, behind, killed mid-build or copied from another store
caught up or rebuilt, never trusted.
"""

from __future__ import annotations

import json
import random
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from lantern import Lantern
from lantern.indexes import place, words
from tests.helpers import BASE_TIME, LANTERN_BIN, Clock, lantern_process

pytestmark = pytest.mark.skipif(not words.available(), reason="needs the index extra (tantivy)")

VOCABULARY = (
    *("ledger", "deadlock", "branch", "deploy", "release", "canberra", "sydney", "lamp", "oil"),
    *("wick", "crème", "brûlée", "straße", "naïve", "café", "resume", "résumé", "e-mail"),
    *("don't", "c++", "20.04", "rust", "python", "agent", "memory"),
    # Other forms of the same stems, and words Porter and Snowball stem differently.
    *("deadlocks", "deadlocked", "ledgers", "branches", "branching", "deployment", "deploys"),
    *("released", "releasing", "generously", "skies", "happily", "not", "never", "CLM-2291"),
)


DAY = 86_400


def _content(rng: random.Random) -> str:
    return " ".join(rng.choice(VOCABULARY) for _ in range(rng.randint(2, 12)))


@pytest.fixture
def store(db_path: Path) -> Iterator[Lantern]:
    db_path.parent.mkdir(parents=True, exist_ok=True)
    with Lantern.open(db_path) as lt:
        yield lt


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
    _settle()


def _settle() -> None:
    """Wait for the catch-ups that writes started in the background."""
    from lantern.memory import topk

    for worker in list(topk._workers.values()):
        worker.finish()


def _index_dir(db_path: Path) -> Path:
    return db_path.with_name(db_path.name + ".index")


def _ids(page: list[object]) -> list[str]:
    return [match.record.id for match in page]  # type: ignore[attr-defined]


QUERIES = [
    "ledger",
    "ledger deadlock",
    "creme",
    "Crème brûlée",
    "resume",
    '"deploy release"',
    "dep*",
    '"branch dep"*',
    "e-mail",
    "don't",
    "c++",
    "20.04",
    "which day should we not release",
    "rust python agent memory lamp",
    "deadlocks",
    "ledger deadlocked",
    '"ledgers deadlocks"',
    "deploy*",
    "deploym*",
    "releases",
    "generous",
    "sky",
    "never",
    '"not"',
    "clm-2291",
    "nothing-matches-this",
]
FILTERS: list[dict[str, object]] = [
    {},
    {"scope": "user:ada"},
    {"scope": "user:ada*"},
    {"status": "archived"},
    {"status": "all", "kind": "goal"},
    {"min_priority": 60, "scope": ["project:x", "global"]},
]


@pytest.mark.parametrize("mode", ["keyword", "any"])
def test_the_index_finds_what_the_database_finds(
    store: Lantern, db_path: Path, mode: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    _fill(store, 400)
    for query in QUERIES:
        for filters in FILTERS:
            indexed = store.memory.search(query, mode=mode, limit=1000, **filters)  # type: ignore[arg-type]
            with monkeypatch.context() as patched:
                patched.setenv(place.ENV_VAR, "off")
                database = store.memory.search(query, mode=mode, limit=1000, **filters)  # type: ignore[arg-type]
            assert sorted(_ids(indexed)) == sorted(_ids(database)), (query, filters)
            scores = [match.score for match in indexed]
            assert scores == sorted(scores, reverse=True)
            assert [match.keyword_rank for match in indexed] == list(range(1, len(indexed) + 1))
    assert words.status(store.store)["state"] == "current"


SAID_FILTERS: list[dict[str, object]] = [
    {"said_since": BASE_TIME + DAY},
    {"said_until": BASE_TIME + 2 * DAY},
    {"said_since": BASE_TIME + DAY, "said_until": BASE_TIME + 3 * DAY},
    {"said_since": BASE_TIME + DAY, "said_until": BASE_TIME + 2 * DAY, "scope": "user:ada*"},
    {"said_since": BASE_TIME + 10 * DAY},
]


@pytest.mark.parametrize("mode", ["keyword", "any"])
def test_said_filters_find_the_same_with_and_without_the_index(
    db_path: Path, mode: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    db_path.parent.mkdir(parents=True, exist_ok=True)
    clock = Clock()
    with Lantern.open(db_path, clock=clock) as lt:
        for day in range(4):  # records said (created) on four days
            _fill(lt, 60, seed=day)
            clock.advance(DAY)
        for query in QUERIES:
            for filters in SAID_FILTERS:
                indexed = lt.memory.search(query, mode=mode, limit=1000, **filters)  # type: ignore[arg-type]
                with monkeypatch.context() as patched:
                    patched.setenv(place.ENV_VAR, "off")
                    database = lt.memory.search(query, mode=mode, limit=1000, **filters)  # type: ignore[arg-type]
                # The same records; near ties may be ordered otherwise (see the test above).
                assert sorted(_ids(indexed)) == sorted(_ids(database)), (query, filters)
                since = int(str(filters.get("said_since", 0)))
                until = int(str(filters.get("said_until", 2**62)))
                assert all(since <= match.record.created_at < until for match in indexed)
        assert lt.memory.search("ledger", mode=mode, limit=1000, said_since=BASE_TIME + DAY)
        assert words.status(lt.store)["state"] == "current"


def test_a_store_filled_before_its_first_search_is_indexed(db_path: Path) -> None:
    db_path.parent.mkdir(parents=True, exist_ok=True)
    with Lantern.open(db_path) as lt:
        _fill(lt, 50)
    # Closing waited for the background work the writes started.
    assert place.current(_index_dir(db_path), words.NAME) is not None
    with Lantern.open(db_path) as lt:
        assert words.status(lt.store)["state"] == "current"
        assert lt.memory.search("ledger", mode="keyword")


@pytest.mark.parametrize("order", ["relevance", "policy"])
def test_pages_join_into_the_whole_ranking(store: Lantern, order: str) -> None:
    _fill(store, 300)
    whole = store.memory.search("ledger lamp", mode="any", order=order, limit=1000)
    assert len(whole) > 50
    for limit in (1, 7, 50):
        seen: list[str] = []
        after = None
        while True:
            page = store.memory.search(
                "ledger lamp", mode="any", order=order, limit=limit, after=after
            )
            seen += _ids(page)
            if page.next_cursor is None:
                break
            after = page.next_cursor
        assert seen == _ids(whole)
    offset = store.memory.search("ledger lamp", mode="any", order=order, limit=10, offset=20)
    assert _ids(offset) == _ids(whole)[20:30]


def test_every_committed_change_is_seen_by_the_next_search(store: Lantern, db_path: Path) -> None:
    _fill(store, 100)
    assert store.memory.search("zebra", mode="keyword") == []
    added = lantern_process("--db", str(db_path), "memory", "add", "--kind", "fact", "a zebra")
    assert added.returncode == 0, added.stderr
    record_id = added.stdout.strip()
    assert _ids(store.memory.search("zebra", mode="keyword")) == [record_id]
    updated = store.memory.update(record_id, content="an okapi now")
    assert store.memory.search("zebra", mode="keyword") == []
    assert _ids(store.memory.search("okapi", mode="keyword")) == [updated.id]
    store.memory.archive(updated.id)
    assert store.memory.search("okapi", mode="keyword") == []
    assert _ids(store.memory.search("okapi", mode="keyword", status="archived")) == [updated.id]
    superseding = store.memory.supersede(updated.id, content="a giraffe instead")
    assert _ids(store.memory.search("giraffe", mode="keyword")) == [superseding.id]
    assert words.status(store.store)["state"] == "current"


def test_a_forgotten_records_words_leave_the_index(store: Lantern, db_path: Path) -> None:
    import tantivy

    _fill(store, 100)
    secret = store.memory.add(kind="fact", content="the vault code is zqxjkvtoken")
    assert _ids(store.memory.search("zqxjkvtoken", mode="keyword")) == [secret.id]
    before = place.current(_index_dir(db_path), words.NAME)
    assert before is not None
    store.memory.forget(secret.id)
    _settle()
    after = place.current(_index_dir(db_path), words.NAME)
    assert after is not None and after != before and not before.exists()
    generations = [p for p in _index_dir(db_path).iterdir() if p.is_dir()]
    assert generations == [after]
    index = tantivy.Index.open(str(after))
    assert index.searcher().doc_freq("content", "zqxjkvtoken") == 0
    assert store.memory.search("zqxjkvtoken", mode="keyword", status="all") == []
    assert len(store.memory.search("ledger", mode="keyword", limit=1000)) > 0


def test_an_index_of_another_format_is_rebuilt_not_searched(store: Lantern, db_path: Path) -> None:
    store.memory.add(kind="fact", content="The ledger deadlocks under load.")
    store.memory.search("ledger")
    _settle()
    before = place.current(_index_dir(db_path), words.NAME)
    assert before is not None
    mark = json.loads((before / words.MARK_FILE).read_text())
    assert mark["format"] == words.FORMAT
    # An index written before stemming records no format: its words are not the queries' stems.
    del mark["format"]
    (before / words.MARK_FILE).write_text(json.dumps(mark))
    from lantern.memory import topk

    topk._open.clear()  # as a new process (the upgraded Lantern) finds it
    assert words.status(store.store)["state"] == "stale"
    found = store.memory.search("deadlock", mode="keyword")
    assert [match.record.content for match in found] == ["The ledger deadlocks under load."]
    after = place.current(_index_dir(db_path), words.NAME)
    assert after is not None and after != before
    assert words.status(store.store)["state"] == "current"


def test_an_index_from_another_store_is_rebuilt_not_trusted(tmp_path: Path) -> None:
    first, second = tmp_path / "a.db", tmp_path / "b.db"
    with Lantern.open(first) as lt:
        lt.memory.add(kind="fact", content="apples in the first store")
        lt.memory.search("apples")
    with Lantern.open(second) as lt:
        lt.memory.add(kind="fact", content="pears in the second store")
        _settle()
        shutil.rmtree(_index_dir(second))
        shutil.copytree(_index_dir(first), _index_dir(second))
        checked = lt.check()
        assert not checked.healthy
        assert (
            "word_index: the word index was not built from this store's changes"
            in (checked.problems[0])
        )
        assert words.status(lt.store)["state"] == "stale"
        assert lt.memory.search("apples") == []
        assert [m.record.content for m in lt.memory.search("pears")] == [
            "pears in the second store"
        ]
        assert lt.check().healthy


def test_db_check_finds_an_index_that_disagrees_and_rebuild_index_repairs_it(
    store: Lantern, db_path: Path
) -> None:
    import tantivy

    _fill(store, 60)
    store.memory.search("ledger")
    assert store.check().healthy
    # A document removed behind the feed's back: the mark says current, the records disagree.
    path = place.current(_index_dir(db_path), words.NAME)
    assert path is not None
    index = tantivy.Index.open(str(path))
    writer = index.writer(15_000_000, 1)
    victim = store.memory.list(limit=1)[0].id
    writer.delete_documents_by_term("id", victim)
    writer.commit()
    writer.wait_merging_threads()
    report = store.check()
    assert not report.healthy
    assert any(f"does not hold {victim}" in p or "holds 59 records" in p for p in report.problems)
    rebuilt = store.rebuild_index()
    assert "word_index" in rebuilt.indexes
    assert store.check().healthy


def test_a_build_killed_midway_leaves_searches_right(db_path: Path) -> None:
    db_path.parent.mkdir(parents=True, exist_ok=True)
    with Lantern.open(db_path) as lt:
        _fill(lt, 200)
        expected = sorted(_ids(lt.memory.search("ledger", mode="keyword", limit=1000)))
        records = [{"kind": "fact", "content": f"filler text {i} lamp"} for i in range(30_000)]
        lt.memory.add_many(records)
    # Kill a full rebuild as it writes its new generation.
    process = subprocess.Popen([str(LANTERN_BIN), "--db", str(db_path), "db", "rebuild-index"])
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and process.poll() is None:
        building = (
            [p for p in _index_dir(db_path).glob(f"{words.NAME}.*") if p.is_dir()]
            if _index_dir(db_path).exists()
            else []
        )
        if any(any(p.iterdir()) for p in building):
            break
        time.sleep(0.01)
    process.send_signal(signal.SIGKILL)
    process.wait()
    with Lantern.open(db_path) as lt:
        found = lt.memory.search("ledger", mode="keyword", limit=1000)
        assert sorted(_ids(found)) == expected
        last = lt.memory.search('"filler text 29999"', mode="keyword")
        assert [match.record.content for match in last] == ["filler text 29999 lamp"]
        assert lt.check().healthy


def test_concurrent_writers_and_searchers_miss_nothing(db_path: Path) -> None:
    db_path.parent.mkdir(parents=True, exist_ok=True)
    with Lantern.open(db_path) as lt:
        _fill(lt, 100)
        lt.memory.search("ledger")
    script = (
        "import sys\nfrom lantern import Lantern\n"
        "with Lantern.open(sys.argv[1]) as lt:\n"
        "    for i in range(40):\n"
        "        lt.memory.add(kind='fact', content=f'okapi {sys.argv[2]} {i}')\n"
        "        assert lt.memory.search(f'okapi {sys.argv[2]} {i}', mode='keyword')\n"
    )
    writers = [
        subprocess.Popen([sys.executable, "-c", script, str(db_path), name])
        for name in ("north", "south")
    ]
    assert [writer.wait(timeout=120) for writer in writers] == [0, 0]
    with Lantern.open(db_path) as lt:
        assert len(lt.memory.search("okapi", mode="keyword", limit=1000)) == 80
        assert lt.check().healthy


def test_without_the_index_searches_run_in_the_database(store: Lantern, db_path: Path) -> None:
    _fill(store, 30)
    env = {place.ENV_VAR: "off"}
    shutil.rmtree(_index_dir(db_path))
    found = lantern_process("--db", str(db_path), "memory", "search", "ledger", "--json", env=env)
    assert found.returncode == 0, found.stderr
    assert json.loads(found.stdout)
    added = lantern_process(
        "--db", str(db_path), "memory", "add", "--kind", "fact", "one more", env=env
    )
    assert added.returncode == 0, added.stderr
    assert not _index_dir(db_path).exists()
    status = lantern_process("--db", str(db_path), "db", "status", "--json", env=env)
    assert json.loads(status.stdout)["word_index"] == {
        "state": "unavailable",
        "records": None,
        "size_bytes": None,
        "behind_by": None,
    }
    shown = lantern_process("--db", str(db_path), "db", "status", env=env)
    assert "word_index:        none (searches run in the database" in shown.stdout


def test_db_status_says_how_the_index_stands(db_path: Path) -> None:
    import sqlite3

    db_path.parent.mkdir(parents=True, exist_ok=True)
    with Lantern.open(db_path) as lt:
        lt.memory.add(kind="fact", content="the first record")
        shutil.rmtree(_index_dir(db_path), ignore_errors=True)
        assert words.status(lt.store)["state"] == "absent"
    with Lantern.open(db_path) as lt:
        _fill(lt, 30)
    status = lantern_process("--db", str(db_path), "db", "status", "--json")
    found = json.loads(status.stdout)["word_index"]
    assert found["state"] == "current" and found["records"] == 31 and found["behind_by"] == 0
    assert found["size_bytes"] > 0
    # A write by a tool of its own: the triggers tell the feed, nothing catches the index up.
    raw = sqlite3.connect(db_path)
    raw.execute("UPDATE memory_records SET status = 'archived' WHERE rowid = 1")
    raw.commit()
    raw.close()
    with Lantern.open(db_path) as lt:
        assert words.status(lt.store) | {"size_bytes": 0} == {
            "state": "behind",
            "records": 31,
            "size_bytes": 0,
            "behind_by": 1,
        }


def test_a_large_store_without_an_index_is_not_indexed_by_a_search(
    store: Lantern, db_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(words, "AUTO_BUILD_UP_TO", 10)
    _fill(store, 30)
    assert store.memory.search("ledger")
    assert words.status(store.store)["state"] == "absent"
    store.rebuild_index()
    assert words.status(store.store)["state"] == "current"


def test_the_feeds_last_row_is_one_index_look_up_whatever_the_statistics(
    store: Lantern, db_path: Path
) -> None:
    """A search reads the feed's last row of its side before anything else; with the other
    side's rows after it and the planner's statistics gathered, it must still not walk them."""
    import sqlite3

    from lantern.indexes import feed
    from lantern.store.prepared import driver_of

    _fill(store, 20)
    raw = sqlite3.connect(db_path)
    raw.executemany(
        "INSERT INTO index_feed (side, item_id, model) VALUES ('memory_vector', ?, 'm')",
        [(f"mem_{i:016x}",) for i in range(5000)],
    )
    raw.execute("ANALYZE")
    raw.commit()
    raw.close()
    with store.store.read() as conn:
        sql, values = feed._LAST.explainable(conn.dialect, {"side": feed.MEMORY})
        plan = [row[-1] for row in driver_of(conn).execute(f"EXPLAIN QUERY PLAN {sql}", values)]
    assert any("COVERING INDEX ix_index_feed_side" in step for step in plan), plan
    assert not any(step.startswith("SCAN") for step in plan), plan


def _confined_view(path: Path, query: str, mode: str, order: str) -> str:
    with Lantern.open(path, scopes=["user:alice"]) as confined:
        page = confined.memory.search(query, mode=mode, order=order, limit=4)
        pages = [[m.to_json(explain=True) for m in page], page.next_cursor]
        if page.next_cursor:
            rest = confined.memory.search(
                query, mode=mode, order=order, limit=50, after=page.next_cursor
            )
            pages.append([m.to_json(explain=True) for m in rest])
        return json.dumps(pages, sort_keys=True)


@pytest.mark.parametrize("order", ["relevance", "policy"])
@pytest.mark.parametrize("mode", ["keyword", "any"])
def test_a_confined_callers_results_do_not_depend_on_other_scopes(
    db_path: Path, mode: str, order: str
) -> None:
    """Relevance statistics counted store-wide would tell a confined caller whether a word
    occurs outside its scopes, and how often; its index holds its scopes' records alone."""
    db_path.parent.mkdir(parents=True, exist_ok=True)
    rng = random.Random(5)
    with Lantern.open(db_path) as lt:
        lt.memory.add_many(
            [
                {"kind": "fact", "scope": "user:alice", "content": f"{_content(rng)} {i}"}
                for i in range(30)
            ]
        )
        lt.memory.add(kind="fact", scope="user:alice", content="my password is hunter2pass")
    queries = ["hunter2pass", "ledger lamp", "which deploy is the release"]
    before = {q: _confined_view(db_path, q, mode, order) for q in queries}
    with Lantern.open(db_path) as lt:
        lt.memory.add_many(
            [
                {"kind": "fact", "scope": scope, "content": f"hunter2pass {_content(rng)} {i}"}
                for i in range(40)
                for scope in ("user:bob", "user:alice2")
            ]
        )
        assert len(lt.memory.search("hunter2pass", mode=mode, limit=100)) == 81
    after = {q: _confined_view(db_path, q, mode, order) for q in queries}
    assert after == before
    assert '"hunter2pass' not in before["ledger lamp"]


def test_a_word_held_by_more_records_than_remain_weighs_nothing_and_breaks_nothing(
    store: Lantern,
) -> None:
    """tantivy counts the records holding a word with its deleted documents until they merge:
    after records are archived and restored (each a delete and an add), a word may be held by
    more documents than the index has live, and its weight must still be a number."""
    from lantern.indexes.words import _fts5_weight, _own_weight

    assert _fts5_weight(10, 25) == 1e-6
    assert _own_weight(10, 25) > 0
    added = store.memory.add_many([{"kind": "fact", "content": f"okapi {i}"} for i in range(5)])
    rows = [record for record, _created in added]
    for _ in range(3):
        for record in rows:
            store.memory.archive(record.id)
            store.memory.restore(record.id)
        _settle()
        assert len(store.memory.search("okapi", mode="keyword")) == 5
