"""Finding memory records: keyword search, the filters list and search share, scope prefixes,
cursor paging under concurrent writes, `explain`, and the index walk behind `memory list`."""

from __future__ import annotations

import base64
import functools
import json
from typing import Any

import pytest

from lantern.api import Lantern
from lantern.errors import InvalidInput
from lantern.memory.cursor import cursor_for, parse_cursor
from lantern.memory.filters import next_string
from lantern.memory.records import MemoryRecord, order_keys
from lantern.store.prepared import Prepared
from tests.helpers import BASE_TIME, Clock


def _contents(records: list[MemoryRecord]) -> list[str]:
    return [record.content for record in records]


# --- search ------------------------------------------------------------------------------------


def test_search_ranks_by_relevance_and_shows_the_score(lt: Lantern) -> None:
    many = lt.memory.add(kind="fact", content="lantern lantern lantern: the lantern project")
    once = lt.memory.add(
        kind="fact",
        priority=100,
        content="A long note that mentions lantern once among many other words about "
        "wicks, oil, glass, brass, handles, hooks, sheds and the evening walk home.",
    )
    lt.memory.add(kind="fact", content="nothing relevant here")
    matches = lt.memory.search("lantern")
    assert [m.record.id for m in matches] == [many.id, once.id]
    assert matches[0].score > matches[1].score > 0
    rendered = matches[0].to_json()
    assert list(rendered)[-5:] == ["score", "mode", "keyword_rank", "semantic_rank", "similarity"]
    assert rendered["score"] == matches[0].score
    assert [rendered[key] for key in list(rendered)[-4:]] == ["any", 1, None, None]
    assert {k: v for k, v in rendered.items() if k in many.to_json()} == many.to_json()
    by_policy = lt.memory.search("lantern", order="policy")
    assert [m.record.id for m in by_policy] == [once.id, many.id]
    # In policy order, keyword_rank is still the place in the relevance ranking.
    assert [m.keyword_rank for m in by_policy] == [2, 1]


def test_modes_keyword_requires_every_word_any_ranks_the_rarest_first(lt: Lantern) -> None:
    home = lt.memory.add(kind="fact", content="Rosa's home is a flat in Campo de Ourique.")
    lt.memory.add(kind="fact", content="Rosa is allergic to nuts.")
    lt.memory.add(kind="fact", content="The user asked where to buy a lamp for the home.")
    question = "Where is the home of Rosa now?"
    assert lt.memory.search(question, mode="keyword") == []
    found = lt.memory.search(question, mode="any")
    assert found[0].record.id == home.id and all(m.mode == "any" for m in found)
    assert [m.record.id for m in lt.memory.search("rosa home", mode="keyword")] == [home.id]
    assert {m.mode for m in lt.memory.search("rosa home", mode="keyword")} == {"keyword"}
    assert lt.memory.search(question) == found  # the default is any where there are no vectors
    # Only common words: they are searched rather than dropped.
    assert [m.record.id for m in lt.memory.search("where the", mode="any")] != []
    with pytest.raises(InvalidInput, match="mode must be one of keyword, any, semantic, hybrid"):
        lt.memory.search("x", mode="fuzzy")


def test_search_syntax_phrases_prefixes_and_odd_input(lt: Lantern) -> None:
    a = lt.memory.add(kind="fact", content="Raphael prefers separate branches.")
    b = lt.memory.add(kind="fact", content="Branches of the separate-repo idea, C++ too.")
    assert {m.record.id for m in lt.memory.search("separate branches")} == {a.id, b.id}
    assert [m.record.id for m in lt.memory.search('"separate branches"')] == [a.id]
    assert {m.record.id for m in lt.memory.search("branch*")} == {a.id, b.id}
    assert [m.record.id for m in lt.memory.search("C++")] == [b.id]
    for odd in ['NEAR(a b) OR "', "col:value ^x (", "AND", "-- ' ; DROP TABLE x"]:
        lt.memory.search(odd)  # never an error
    assert lt.memory.search("") == [] and lt.memory.search("  *  ") == []
    assert lt.memory.search("separate branches", mode="keyword") != []
    with pytest.raises(InvalidInput, match="order must be one of relevance, policy"):
        lt.memory.search("x", order="random")


def test_search_applies_the_list_filters(lt: Lantern, clock: Clock) -> None:
    keep = lt.memory.add(kind="goal", scope="p:a", content="ship the lamp", priority=80)
    lt.memory.add(kind="fact", scope="p:a", content="lamp facts", priority=80)
    lt.memory.add(kind="goal", scope="q", content="ship the other lamp", priority=80)
    lt.memory.add(kind="goal", scope="p:b", content="ship a small lamp", priority=10)
    archived = lt.memory.add(kind="goal", scope="p:c", content="old lamp goal", priority=90)
    lt.memory.archive(archived.id)
    found = lt.memory.search("lamp", scope="p:*", kind="goal", min_priority=50)
    assert [m.record.id for m in found] == [keep.id]
    assert [m.record.id for m in lt.memory.search("lamp", status="archived")] == [archived.id]
    assert len(lt.memory.search("lamp", status="all")) == 5


# --- filters -----------------------------------------------------------------------------------

ODD_SCOPES = [
    "user:a",
    "user:ab",
    "user:a/b",
    "user:a%",
    "user:a%x",
    "user:a_",
    "user:a_x",
    "user:a*",
    "user:A",
    "user_a",
    "user%a",
    "userXa",
    "project:lantern/",
    "project:lantern/core",
    "project:lanternx",
    "é:\U0010ffff",
    "é:\U0010ffff\U0010ffff",
    "é;",
]


@pytest.mark.parametrize(
    ("pattern", "expected"),
    [
        # A name and a star: the name and the scopes under it, never a longer name.
        ("user:a*", ["user:a", "user:a/b"]),
        ("user:*", [s for s in ODD_SCOPES if s.startswith("user:")]),
        ("user:a", ["user:a"]),
        ("user:a%", ["user:a%"]),
        ("user:a_", ["user:a_"]),
        ("user:a%*", ["user:a%", "user:a%x"]),
        ("user:a_*", ["user:a_", "user:a_x"]),
        ("user:a\\*", ["user:a*"]),
        ("user%*", ["user%a"]),
        ("user_*", ["user_a"]),
        ("user:a/*", ["user:a/b"]),
        ("project:lantern/*", ["project:lantern/", "project:lantern/core"]),
        ("é:\U0010ffff*", ["é:\U0010ffff", "é:\U0010ffff\U0010ffff"]),
        ("*", ODD_SCOPES),
    ],
)
def test_scope_filters_are_patterns_with_every_other_character_literal(
    lt: Lantern, pattern: str, expected: list[str]
) -> None:
    for scope in ODD_SCOPES:
        lt.memory.add(kind="fact", scope=scope, content=f"in {scope}")
    assert sorted(r.scope for r in lt.memory.list(scope=pattern, limit=100)) == sorted(expected)
    assert sorted(m.record.scope for m in lt.memory.search("in", scope=pattern, limit=100)) == (
        sorted(expected)
    )


def test_several_scope_patterns_match_any_of_them(lt: Lantern) -> None:
    for scope in ("a:1", "a:2", "b:1", "c"):
        lt.memory.add(kind="fact", scope=scope, content=scope)
    assert sorted(r.scope for r in lt.memory.list(scope=["a:*", "c"])) == ["a:1", "a:2", "c"]


def test_next_string_bounds_every_prefix() -> None:
    assert next_string("abc") == "abd"
    assert next_string("a\U0010ffff") == "b"
    assert next_string("\ud7ff") is None or next_string("\ud7ff") == "\ue000"
    assert next_string("x\ud7ff") == "x\ue000"
    assert next_string("\U0010ffff\U0010ffff") is None


def test_numeric_time_and_citation_filters(lt: Lantern, clock: Clock) -> None:
    clock.now = BASE_TIME
    low = lt.memory.add(kind="fact", content="low", priority=10, urgency=90, confidence=0.2)
    clock.now = BASE_TIME + 100
    mid = lt.memory.add(kind="fact", content="mid", priority=50, urgency=50, confidence=0.5)
    clock.now = BASE_TIME + 200
    high = lt.memory.add(
        kind="fact",
        content="high",
        priority=90,
        urgency=10,
        confidence=0.9,
        source_refs=["session:s1"],
    )
    clock.now = BASE_TIME + 300
    assert _contents(lt.memory.list(min_priority=50)) == ["high", "mid"]
    assert _contents(lt.memory.list(min_urgency=50)) == ["mid", "low"]
    assert _contents(lt.memory.list(min_confidence=0.5)) == ["high", "mid"]
    assert _contents(lt.memory.list(updated_since=BASE_TIME + 100)) == ["high", "mid"]
    assert _contents(lt.memory.list(updated_before=BASE_TIME + 100)) == ["low"]
    iso = "2027-01-15T08:01:40Z"  # BASE_TIME + 100 as ISO-8601
    assert _contents(lt.memory.list(updated_since=iso, updated_before=BASE_TIME + 200)) == ["mid"]
    assert [r.id for r in lt.memory.list(cites="session:s1")] == [high.id]
    assert [r.id for r in lt.memory.list(cites=["session:nope", "session:s1"])] == [high.id]
    assert lt.memory.list(cites="session:nope") == []
    assert {r.id for r in lt.memory.list()} == {low.id, mid.id, high.id}


_A_CURSOR = "c1_WyJhY3RpdmUiLDUwLDAsMTgwMDAwMDAwMCwibWVtXzAwMDAwMDAwMDAwMDAwMDAiXQ"


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"min_priority": 101}, "min_priority must be an integer from 0 to 100"),
        ({"min_urgency": -1}, "min_urgency must be an integer from 0 to 100"),
        ({"min_confidence": 1.5}, "min_confidence must be a number from 0.0 to 1.0"),
        ({"updated_since": "yesterday"}, "updated_since must be unix seconds"),
        ({"updated_before": "soon"}, "updated_before must be unix seconds"),
        # Leading zeros count toward Python's 4,300-digit limit on int(); a generated MCP
        # argument found this.
        pytest.param(
            {"updated_before": "0" * 5_000 + "1" * 31}, "updated_before is out of range", id="zeros"
        ),
        pytest.param({"min_confidence": 10**5_000}, "min_confidence must be", id="huge-confidence"),
        pytest.param({"limit": 10**5_000}, "from 1 to 10000; got an integer", id="huge-limit"),
        ({"cites": "nocolon"}, "must be TYPE:ID"),
        ({"scope": " x*"}, "surrounding whitespace"),
        ({"after": "c2_garbage!"}, "not a cursor"),
        ({"after": "nonsense"}, "not a cursor"),
        ({"after": "c2_WzEsMiwzXQ"}, "not a cursor"),  # [1,2,3]
        ({"after": _A_CURSOR, "offset": 3}, "either an offset or a cursor"),
    ],
)
def test_bad_filters_are_refused(lt: Lantern, kwargs: dict[str, Any], message: str) -> None:
    listing: dict[str, Any] = {
        k: v.replace("c2_", "c1_") if isinstance(v, str) else v for k, v in kwargs.items()
    }
    with pytest.raises(InvalidInput, match=message):
        lt.memory.list(**listing)
    with pytest.raises(InvalidInput, match=message):
        lt.memory.search("x", order="policy", **kwargs)


# --- cursors -----------------------------------------------------------------------------------


def test_cursor_round_trip() -> None:
    key = parse_cursor(_A_CURSOR)
    assert (key.status, key.priority, key.urgency, key.updated_at, key.id) == (
        "active",
        50,
        0,
        1_800_000_000,
        "mem_0000000000000000",
    )
    record = MemoryRecord(
        id=key.id,
        kind="fact",
        content="x",
        scope="s",
        priority=50,
        urgency=0,
        confidence=1.0,
        status="active",
        created_at=1,
        updated_at=1_800_000_000,
        expires_at=None,
        supersedes_id=None,
        source_refs=(),
    )
    assert cursor_for(record) == _A_CURSOR


def _order_key(record: MemoryRecord) -> tuple[Any, ...]:
    return (record.status, -record.priority, -record.urgency, -record.updated_at, record.id)


def _page_through(lt: Lantern, limit: int, **filters: Any) -> list[MemoryRecord]:
    found: list[MemoryRecord] = []
    after = None
    while True:
        page = lt.memory.list(limit=limit, after=after, **filters)
        found += page
        if page.next_cursor is None:
            return found
        after = page.next_cursor


def test_cursor_pages_cover_the_list_exactly(lt: Lantern, clock: Clock) -> None:
    for n in range(40):
        clock.now = BASE_TIME + n % 4
        lt.memory.add(kind="fact", scope="s", content=f"r{n}", priority=n % 3 * 10, urgency=n % 2)
    archived = lt.memory.list(scope="s", limit=5)
    for record in archived:
        lt.memory.archive(record.id)
    expected = list(lt.memory.list(scope="s", status="all", limit=100))
    for limit in (1, 3, 7, 40, 100):
        assert _page_through(lt, limit, scope="s", status="all") == expected
        assert _page_through(lt, limit, status="active") == list(lt.memory.list(limit=100))
    last = lt.memory.list(scope="s", status="all", limit=100)
    assert last.next_cursor is None
    exact = lt.memory.list(scope="s", status="all", limit=len(expected))
    assert exact.next_cursor is None


def test_cursor_paging_stays_correct_while_another_writer_inserts(
    lt: Lantern, store_url: str, clock: Clock
) -> None:
    """Records stored between pages never make a page repeat or skip one that stayed put."""
    for n in range(30):
        clock.now = BASE_TIME + n
        lt.memory.add(kind="fact", scope="s", content=f"original {n}", priority=20 + n % 5 * 10)
    originals = list(lt.memory.list(scope="s", limit=100))
    seen: list[MemoryRecord] = []
    inserted_after: list[str] = []
    after = None
    with Lantern.open(store_url, clock=clock) as other:
        for round_number in range(100):
            page = lt.memory.list(scope="s", limit=4, after=after)
            seen += page
            if page.next_cursor is None:
                break
            after = page.next_cursor
            # Another writer stores one record that sorts before this point and one after the
            # whole list (lowest priority, and older than every record stored so far).
            other.memory.add(kind="fact", scope="s", content=f"early {round_number}", priority=100)
            clock.now = BASE_TIME - 10 * (round_number + 1)
            late = other.memory.add(
                kind="fact", scope="s", content=f"late {round_number}", priority=0
            )
            inserted_after.append(late.id)
    ids = [record.id for record in seen]
    assert len(ids) == len(set(ids)), "a record came twice"
    assert [_order_key(r) for r in seen] == sorted(_order_key(r) for r in seen)
    assert {r.id for r in originals} <= set(ids), "a record that stayed put was skipped"
    assert not any(record.content.startswith("early") for record in seen)
    assert set(inserted_after) <= set(ids)
    # What an offset does in the same situation: an insert ahead pushes a record onto the
    # next page again.
    first = lt.memory.list(scope="s", limit=4)
    clock.now = BASE_TIME + 1_000  # the newest record of all, at the top of the list
    lt.memory.add(kind="fact", scope="s", content="one more early", priority=100)
    second = lt.memory.list(scope="s", limit=4, offset=4)
    assert second[0] == first[-1]


def test_search_pages_by_cursor_in_policy_order(lt: Lantern, clock: Clock) -> None:
    for n in range(12):
        clock.now = BASE_TIME + n
        lt.memory.add(kind="fact", content=f"lamp note {n}", priority=n % 4 * 20)
    lt.memory.add(kind="fact", content="unrelated")
    everything = lt.memory.search("lamp", order="policy", limit=100)
    found: list[str] = []
    after = None
    while True:
        page = lt.memory.search("lamp", order="policy", limit=5, after=after)
        found += [m.record.id for m in page]
        if page.next_cursor is None:
            break
        after = page.next_cursor
    assert found == [m.record.id for m in everything]
    assert [m.keyword_rank for m in everything] == [
        m.keyword_rank for m in _search_pages(lt, "lamp", limit=5, order="policy")
    ]


def _search_pages(lt: Lantern, query: str, **options: Any) -> list[Any]:
    found: list[Any] = []
    after = None
    while True:
        page = lt.memory.search(query, after=after, **options)
        found += page
        if page.next_cursor is None:
            return found
        after = page.next_cursor


@pytest.mark.parametrize("mode", ["keyword", "any"])
@pytest.mark.parametrize("order", ["relevance", "policy"])
def test_every_search_order_pages_by_cursor(
    lt: Lantern, clock: Clock, mode: str, order: str
) -> None:
    """12 records match and a page holds 2: the cursor goes through all of them, in order,
    each once, with keyword ranks that keep counting; null only on the last page."""
    for n in range(12):
        clock.now = BASE_TIME + n
        words = "deploy " * (1 + n % 3) + f"the service {n}"
        lt.memory.add(kind="fact", content=words, priority=n % 4 * 20)
    lt.memory.add(kind="fact", content="unrelated")
    everything = lt.memory.search("deploy service", mode=mode, order=order, limit=100)
    assert len(everything) == 12
    first = lt.memory.search("deploy service", mode=mode, order=order, limit=2)
    assert first.next_cursor is not None and first.next_cursor.startswith("c2_")
    for limit in (1, 2, 5, 11, 12):
        paged = _search_pages(lt, "deploy service", mode=mode, order=order, limit=limit)
        assert paged == list(everything)
    if order == "relevance":
        assert [m.keyword_rank for m in everything] == list(range(1, 13))
    assert lt.memory.search("deploy service", mode=mode, order=order, limit=12).next_cursor is None


def test_relevance_pages_stay_joined_while_another_writer_adds_records(
    lt: Lantern, store_url: str, clock: Clock
) -> None:
    """Every write moves every score (BM25 weighs words by how many records hold them): the
    next page starts after the last hit as it ranks now, so a record that keeps its place
    relative to the others is neither repeated nor skipped."""
    for n in range(20):
        clock.now = BASE_TIME + n
        lt.memory.add(kind="fact", content="lamp " * (1 + n % 4) + f"oil {n}", priority=n % 3)
    before = [m.record.id for m in lt.memory.search("lamp", limit=100)]
    seen: list[str] = []
    after = None
    with Lantern.open(store_url, clock=clock) as other:
        for round_number in range(30):
            page = lt.memory.search("lamp", limit=3, after=after)
            seen += [m.record.id for m in page]
            if page.next_cursor is None:
                break
            after = page.next_cursor
            other.memory.add(kind="fact", content=f"unrelated note {round_number}")
            other.memory.add(kind="fact", content="lamp " * 9 + f"new {round_number}")
    originals = [record_id for record_id in seen if record_id in before]
    assert originals == before


def test_a_search_cursor_continues_only_its_own_search(lt: Lantern) -> None:
    for n in range(5):
        lt.memory.add(kind="fact", scope="s", content=f"lamp {n}", priority=n)
    cursor = lt.memory.search("lamp", limit=2).next_cursor
    assert cursor is not None
    assert len(lt.memory.search("lamp", limit=2, after=cursor)) == 2
    for other in (
        {"query": "lamps"},
        {"mode": "keyword"},
        {"order": "policy"},
        {"scope": "s"},
        {"status": "all"},
    ):
        options: dict[str, Any] = {"query": "lamp", **other}
        with pytest.raises(InvalidInput, match="this cursor continues another search"):
            lt.memory.search(options.pop("query"), limit=2, after=cursor, **options)
    with pytest.raises(InvalidInput, match="a search's cursor continues that search"):
        lt.memory.list(after=cursor)
    listing = lt.memory.list(limit=2).next_cursor
    with pytest.raises(InvalidInput, match="a listing's cursor continues that listing"):
        lt.memory.search("lamp", after=listing)


def _forged(prefix: str, body: Any) -> str:
    encoded = base64.urlsafe_b64encode(json.dumps(body).encode()).decode().rstrip("=")
    return prefix + encoded


_KEYS = ["active", 50, 0, 1_800_000_000, "mem_0000000000000000"]


@pytest.mark.parametrize(
    "keys",
    [
        ["active", 50, 0, 2**63, "mem_0000000000000000"],  # past SQLite's 64-bit integers
        ["active", 50, 0, 10**400, "mem_0000000000000000"],
        ["deleted", 50, 0, 1, "mem_0000000000000000"],  # an unknown status
        ["active", 101, 0, 1, "mem_0000000000000000"],
        ["active", True, 0, 1, "mem_0000000000000000"],
        ["active", 50, 0, 1.5, "mem_0000000000000000"],
        ["active", 50, 0, 1, ""],
        ["active", 50, 0, 1, "mem_\ud800"],
        ["active", 50, 0, 1, {"id": 1}],
        [["active"], 50, 0, 1, "mem_0000000000000000"],
    ],
)
def test_forged_listing_cursors_are_refused(lt: Lantern, keys: list[Any]) -> None:
    forged = _forged("c1_", keys)
    with pytest.raises(InvalidInput, match="not a cursor from a previous page"):
        lt.memory.list(after=forged)


def test_forged_search_cursors_are_refused(lt: Lantern) -> None:
    lt.memory.add(kind="fact", content="lamp")
    lt.memory.add(kind="fact", content="lamp two")
    genuine = lt.memory.search("lamp", limit=1).next_cursor
    assert genuine is not None
    body = json.loads(base64.urlsafe_b64decode(genuine[3:] + "=="))
    forgeries = [
        {**body, "s": "1.5"},
        {**body, "s": None},
        {**body, "s": 10**400},
        {**body, "r": 0},
        {**body, "r": 2**63},
        {**body, "r": None},
        {**body, "k": ["gone", *_KEYS[1:]]},
        {**body, "extra": 1},
        {key: value for key, value in body.items() if key != "r"},
        [body],
        "text",
    ]
    for forged in forgeries:
        with pytest.raises(InvalidInput, match="not a cursor from a previous page"):
            lt.memory.search("lamp", limit=1, after=_forged("c2_", forged))
    assert lt.memory.search("lamp", limit=1, after=_forged("c2_", body))  # the genuine body
    nan = "c2_" + base64.urlsafe_b64encode(
        json.dumps(body).replace(repr(body["s"]), "NaN").encode()
    ).decode().rstrip("=")
    with pytest.raises(InvalidInput, match="not a cursor from a previous page"):
        lt.memory.search("lamp", limit=1, after=nan)


# --- explain -----------------------------------------------------------------------------------


def test_explain_keys_follow_the_documented_order(lt: Lantern) -> None:
    record = lt.memory.add(kind="fact", content="lamp", priority=70, urgency=3)
    assert order_keys(record) == {
        "status_rank": 0,
        "priority": 70,
        "urgency": 3,
        "updated_at": record.updated_at,
        "id": record.id,
    }
    [match] = lt.memory.search("lamp")
    by_relevance = match.to_json(explain=True)
    assert list(by_relevance)[-6:] == [
        "explain",
        "score",
        "mode",
        "keyword_rank",
        "semantic_rank",
        "similarity",
    ]
    assert list(by_relevance["explain"]) == [
        "relevance",
        "status_rank",
        "priority",
        "urgency",
        "updated_at",
        "id",
    ]
    assert by_relevance["explain"]["relevance"] == match.score
    assert "relevance" not in match.to_json(explain=True, by_relevance=False)["explain"]
    archived = lt.memory.archive(record.id)
    assert order_keys(archived)["status_rank"] == 1


# --- the index walk behind `memory list` -------------------------------------------------------


def _plans(lt: Lantern, call: Any) -> list[str]:
    """The SQLite query plan of every SELECT on memory_records that `call` runs."""
    captured: list[tuple[str, Any]] = []
    rows_on = Prepared.rows_on

    def capture(prepared: Prepared, driver: Any, dialect: Any, params: Any = None) -> Any:
        statement, values = prepared.explainable(dialect, params)
        if statement.lstrip().upper().startswith("SELECT") and "memory_records" in statement:
            captured.append((statement, tuple(values)))
        return rows_on(prepared, driver, dialect, params)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(Prepared, "rows_on", capture)
        call()
    plans = []
    with lt.store.read() as conn:
        for statement, parameters in captured:
            rows = conn.exec_driver_sql("EXPLAIN QUERY PLAN " + statement, parameters).all()
            plans.append("\n".join(row[-1] for row in rows))
    return plans


@pytest.mark.parametrize(
    "kwargs",
    [
        {"scope": "project:lantern"},
        {"scope": "project:lantern", "kind": "fact"},
        {"scope": "project:lantern", "kind": ["fact", "goal"], "min_priority": 20},
        {"scope": "project:lantern", "status": "all"},
    ],
    ids=["scope", "scope+kind", "scope+kinds+min", "scope+all"],
)
def test_list_by_scope_walks_the_index_without_sorting(lt: Lantern, kwargs: dict[str, Any]) -> None:
    if lt.store.dialect != "sqlite":
        pytest.skip("query plans are checked on SQLite, the embedded default")
    for n in range(50):
        lt.memory.add(kind="fact", scope=f"s{n % 5}", content=f"x{n}", priority=n)
    [plan] = _plans(lt, lambda: lt.memory.list(**kwargs))
    assert "USING INDEX ix_memory_records_scope_order" in plan, plan
    assert "TEMP B-TREE" not in plan, plan
    [plan] = _plans(lt, lt.memory.list)
    assert "USING INDEX ix_memory_records_status_order" in plan, plan
    assert "TEMP B-TREE" not in plan, plan


def test_each_branch_of_a_cursor_page_seeks_the_index(lt: Lantern) -> None:
    if lt.store.dialect != "sqlite":
        pytest.skip("query plans are checked on SQLite, the embedded default")
    for n in range(50):
        lt.memory.add(kind="fact", scope="s", content=f"x{n}", priority=n % 3)
    page = lt.memory.list(scope="s", limit=10)
    [plan] = _plans(lt, lambda: lt.memory.list(scope="s", limit=10, after=page.next_cursor))
    searches = [line for line in plan.splitlines() if "memory_records" in line]
    assert len(searches) == 2, plan
    assert all(
        "SEARCH memory_records USING INDEX ix_memory_records_scope_order" in line
        for line in searches
    ), plan
    assert "SCAN memory_records" not in plan, plan


def test_what_expires_soon_is_found_by_the_expiry_index(lt: Lantern) -> None:
    if lt.store.dialect != "sqlite":
        pytest.skip("query plans are checked on SQLite, the embedded default")
    for n in range(50):
        lt.memory.add(kind="fact", content=f"x{n}", priority=n)
    soon = BASE_TIME * 2
    for expired in (False, True):
        [plan] = _plans(
            lt,
            functools.partial(lt.memory.list, expires_before=soon, include_expired=expired),
        )
        assert "USING INDEX ix_memory_records_status_expires_at" in plan, plan
