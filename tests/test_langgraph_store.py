"""`LanternStore` on its own: how an item is a record (namespace, key, value), what the
other surfaces see of it, deletes, TTLs, the index, search with a query, and what it refuses.
(`tests/test_langgraph_differential.py` compares it with LangGraph's own store.)"""

from __future__ import annotations

import asyncio
import json
import math
import threading
from datetime import UTC, datetime
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from langgraph.store.base import GetOp, InvalidNamespaceError, PutOp, SearchOp

from lantern.api import Lantern
from lantern.errors import InvalidInput, PolicyRefused
from lantern.integrations.langgraph import LanternStore
from lantern.integrations.langgraph.mapping import escape, namespace_of, scope_of
from tests.helpers import Clock, extra_hint, python_output

NOTES = ("user:ada", "notes")


@pytest.fixture
def store(lt: Lantern) -> LanternStore:
    return LanternStore(lt)


def _records(lt: Lantern, **filters: Any) -> list[dict[str, Any]]:
    return [record.to_json() for record in lt.memory.list(**filters)]


# --- namespaces, keys, values ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("namespace", "scope"),
    [
        (("user:ada", "notes"), "user:ada/notes"),
        (("memories", "u-42"), "memories/u-42"),
        (("a/b", "c"), "a%2Fb/c"),
        (("x y",), "x y"),
        ((" x ",), "%20x%20"),
        (("100%", "*"), "100%25/%2A"),
        (("st*r",), "st%2Ar"),
        (("tab\tline\n",), "tab%09line%0A"),
        (("é", "日本"), "é/日本"),
        (("\u2028",), "%E2%80%A8"),
        (("\ud800",), "%ED%A0%80"),
        (("%41",), "%2541"),
    ],
)
def test_a_namespace_is_a_scope(namespace: tuple[str, ...], scope: str) -> None:
    assert scope_of(namespace) == scope
    assert namespace_of(scope) == namespace


@given(st.lists(st.text(min_size=1).filter(lambda t: "." not in t and "\x00" not in t), min_size=1))
def test_every_namespace_maps_to_a_scope_and_back(labels: list[str]) -> None:
    namespace = tuple(labels)
    if len("/".join(escape(label) for label in labels)) > 512:
        with pytest.raises(InvalidNamespaceError, match="the limit is 512"):
            scope_of(namespace)
        return
    scope = scope_of(namespace)
    assert namespace_of(scope) == namespace
    assert scope == scope.strip() and not any(char in scope for char in "\n\r\t")
    for depth in range(1, len(namespace)):
        assert scope.startswith(scope_of(namespace[:depth]) + "/")


@pytest.mark.parametrize("scope", ["a//b", "%41", "st*r", "a%2f", "%ZZ", "%ED%A0", " a", ""])
def test_a_scope_no_namespace_gives_is_no_namespace(scope: str) -> None:
    assert namespace_of(scope) is None


VALUE = {
    "z": 1,
    "a": [1, 1.0, True, None, -0.0, 2**80, "x"],
    "nested": {"deep": {"deeper": [{"k": "v"}, []]}, "empty": {}},
    "text": "Ada likes pizza \u00e9 \u2028 \x00 \ud800 tabs\tand  runs",
    "float": 0.1,
    "big": -(2**63),
}


def test_a_value_comes_back_unchanged(store: LanternStore) -> None:
    store.put(NOTES, "prefs", VALUE)
    for item in (store.get(NOTES, "prefs"), store.search(("user:ada",))[0]):
        assert item is not None
        assert item.value == VALUE
        assert json.dumps(item.value) == json.dumps(VALUE)  # key order, 1 against 1.0, -0.0
        assert math.copysign(1, item.value["a"][4]) == -1
    [record] = store.lantern.memory.list(scope="user:ada/notes")
    assert json.loads(record.content) == {"key": "prefs", "value": VALUE}


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ({"t": (1, 2)}, r"value\['t'\] is a tuple"),
        ({"s": {1, 2}}, r"value\['s'\] is a set"),
        ({"when": datetime(2026, 1, 1, tzinfo=UTC)}, r"value\['when'\] is a datetime"),
        ({"n": {1: "one"}}, r"value\['n'\] has the key 1"),
        ({"x": [math.nan]}, r"value\['x'\]\[0\] is nan"),
        ({"x": math.inf}, r"value\['x'\] is inf"),
        ({"big": "x" * 100_000}, "its record's content would be 100036 characters"),
    ],
)
def test_a_value_json_cannot_hold_is_refused_and_nothing_is_written(
    store: LanternStore, value: dict[str, Any], message: str
) -> None:
    with pytest.raises(InvalidInput, match=message):
        store.batch([PutOp(NOTES, "first", {"ok": 1}), PutOp(NOTES, "bad", value)])
    assert store.lantern.memory.list(status="all") == []


def test_keys_that_differ_in_their_spacing_are_different_items(store: LanternStore) -> None:
    keys = ["k 2", "k  2", "k\t2", " k 2", "k 2 ", "k\u00a02"]
    for key in keys:
        store.put(NOTES, key, {"same": "value"})
    assert sorted(item.key for item in store.search(NOTES)) == sorted(keys)
    for key in keys:
        assert store.get(NOTES, key).key == key  # type: ignore[union-attr]


def test_refused_namespaces_and_keys(store: LanternStore) -> None:
    for namespace in [(), ("a.b",), ("",), ("a", 1)]:
        with pytest.raises(InvalidNamespaceError):
            store.batch([PutOp(namespace, "k", {"v": 1})])  # type: ignore[arg-type]
    with pytest.raises(InvalidNamespaceError, match="the limit is 512"):
        store.put(("x" * 600,), "k", {"v": 1})
    with pytest.raises(InvalidInput, match="is too long"):
        store.put(NOTES, "k" * 5000, {"v": 1})
    with pytest.raises(InvalidInput, match="unknown filter operator '\\$in'"):
        store.search(NOTES, filter={"n": {"$in": [1]}})
    with pytest.raises(InvalidInput, match="limit is a whole number"):
        store.batch([SearchOp(NOTES, limit=-1)])
    assert store.lantern.memory.list(status="all") == []


# --- what the other surfaces see -----------------------------------------------------------------


def test_an_item_is_an_ordinary_record(store: LanternStore, clock: Clock) -> None:
    store.put(NOTES, "prefs", {"food": "pizza"})
    lt = store.lantern
    [record] = _records(lt, scope="user:ada/notes")
    assert record["kind"] == "fact" and record["status"] == "active"
    assert record["content"] == '{"key": "prefs", "value": {"food": "pizza"}}'
    assert record["source_refs"] == [{"id": "user:ada/notes/prefs", "type": "langgraph"}]
    assert _records(lt, cites="langgraph:user:ada/notes/prefs") == [record]
    assert [match.record.id for match in lt.memory.search("pizza")] == [record["id"]]
    clock.advance(60)
    store.put(NOTES, "prefs", {"food": "ramen"})
    [updated] = _records(lt, scope="user:ada/*")
    assert updated["id"] == record["id"] and updated["updated_at"] == clock.now
    history = lt.memory.history(record["id"])
    assert [entry.event for entry in history] == ["created", "updated"]
    assert dict(history[1].changes["after"]) == {
        "content": '{"key": "prefs", "value": {"food": "ramen"}}'
    }
    item = store.get(NOTES, "prefs")
    assert item is not None
    assert item.created_at == datetime.fromtimestamp(record["created_at"], UTC)
    assert item.updated_at == datetime.fromtimestamp(clock.now, UTC)
    store.put(NOTES, "prefs", {"food": "ramen"})  # the same value: nothing to write
    assert len(lt.memory.history(record["id"])) == 2


def test_records_of_other_surfaces_are_not_items(store: LanternStore) -> None:
    lt = store.lantern
    store.put(NOTES, "prefs", {"food": "pizza"})
    lt.memory.add(kind="fact", scope="user:ada/notes", content="Ada likes pizza.")
    lt.memory.add(kind="fact", scope="user:ada/notes", content='{"key": "k", "value": {}}')
    lt.memory.add(kind="fact", scope="user:ada/other", content="Not an item either.")
    lt.memory.add(kind="fact", scope="user:ada/%zz", content="Nor this.")
    assert [item.key for item in store.search(("user:ada",))] == ["prefs"]
    assert [item.key for item in store.search(("user:ada",), query="pizza")] == ["prefs"]
    assert store.get(NOTES, "k") is None
    assert store.list_namespaces() == [NOTES]


def test_a_scope_pattern_selects_a_namespace_and_what_is_under_it(store_url: str) -> None:
    with LanternStore.open(store_url) as store:
        for namespace in [("user:alice",), ("user:alice", "notes"), ("user:alice2",)]:
            store.put(namespace, "k", {"v": 1})
        store.put(("user:bob",), "k", {"v": 2})
        scopes = {record.scope for record in store.lantern.memory.list(scope="user:alice/*")}
        assert scopes == {"user:alice/notes"}
        assert [item.namespace for item in store.search(("user:alice",))] in (
            [("user:alice",), ("user:alice", "notes")],
            [("user:alice", "notes"), ("user:alice",)],
        )
    with LanternStore.open(store_url, scopes=["user:alice", "user:alice/*"]) as alice:
        assert alice.list_namespaces() == [("user:alice",), ("user:alice", "notes")]
        assert alice.get(("user:bob",), "k") is None
        with pytest.raises(PolicyRefused):
            alice.put(("user:bob",), "k", {"v": 3})
    with LanternStore.open(store_url) as store:
        assert store.get(("user:bob",), "k").value == {"v": 2}  # type: ignore[union-attr]


# --- delete ------------------------------------------------------------------------------------


def test_delete_archives_and_a_put_restores(store: LanternStore) -> None:
    lt = store.lantern
    store.put(NOTES, "prefs", {"food": "pizza"})
    store.delete(NOTES, "prefs")
    assert store.get(NOTES, "prefs") is None
    assert store.search(NOTES) == [] and store.list_namespaces() == []
    [archived] = _records(lt, status="archived")
    store.delete(NOTES, "prefs")  # deleting again changes nothing
    store.put(NOTES, "prefs", {"food": "ramen"})
    assert store.get(NOTES, "prefs").value == {"food": "ramen"}  # type: ignore[union-attr]
    events = [entry.event for entry in lt.memory.history(archived["id"])]
    assert events == ["created", "archived", "restored", "updated"]


def test_delete_forgets_when_asked(lt: Lantern) -> None:
    store = LanternStore(lt, on_delete="forget")
    store.put(NOTES, "secret", {"pin": "1234"})
    [record] = _records(lt)
    store.put(NOTES, "secret", {"pin": "5678"})
    store.delete(NOTES, "secret")
    assert _records(lt, status="all", include_expired=True) == []
    assert [entry.event for entry in lt.memory.history(record["id"])] == ["forgotten"]
    store.put(NOTES, "secret", {"pin": "0000"})
    assert store.get(NOTES, "secret").value == {"pin": "0000"}  # type: ignore[union-attr]
    with pytest.raises(InvalidInput, match="on_delete"):
        LanternStore(lt, on_delete="drop")  # type: ignore[arg-type]


# --- search with a query, the index ------------------------------------------------------------


def test_a_query_ranks_by_relevance_with_a_score(store: LanternStore) -> None:
    store.put(NOTES, "a", {"text": "Ada likes pizza with olives", "n": 1})
    store.put(NOTES, "b", {"text": "Ada likes sushi", "n": 2})
    store.put(NOTES, "c", {"text": "pizza, pizza and more pizza", "n": 3})
    store.put(("user:bob",), "d", {"text": "Bob likes pizza", "n": 4})
    found = store.search(("user:ada",), query="pizza")
    assert {item.key for item in found} == {"a", "c"}
    assert all(isinstance(item.score, float) for item in found)
    scores = [item.score or 0.0 for item in found]
    assert scores == sorted(scores, reverse=True)
    filtered = store.search((), query="pizza", filter={"n": {"$gt": 2}})
    assert {item.key for item in filtered} == {"c", "d"}
    first = store.search((), query="pizza", limit=1)
    second = store.search((), query="pizza", limit=1, offset=1)
    both = store.search((), query="pizza", limit=2)
    assert [item.key for item in first + second] == [item.key for item in both]
    assert store.search(NOTES, query="???") == []


def test_the_index_embeds_each_item_with_a_lantern_provider(lt: Lantern) -> None:
    store = LanternStore(lt, index={"embed": "hashing", "dims": 256, "fields": ["$"]})
    settings = lt.embedding_settings()
    assert (settings.default_model, settings.on_write) == ("hashing", True)
    store.put(NOTES, "a", {"text": "deploying on fridays"})
    store.put(NOTES, "b", {"text": "birthday cake"})
    coverage = lt.status().embeddings
    assert coverage is not None
    [model] = coverage.models
    assert (model.records, model.records_without) == (2, 0)
    found = store.search(NOTES, query="deploy")
    assert found[0].key == "a" and found[0].score is not None
    refused: list[tuple[dict[str, Any], str]] = [
        ({"embed": lambda texts: texts}, "embedding providers"),
        ({"embed": "hashing", "fields": ["text"]}, r"can only be \['\$'\]"),
        ({"embed": "hashing", "dims": 0}, "positive integer"),
        ({"embed": "hashing", "model": "x"}, "index has no 'model'"),
        ({"embed": "no-such-provider"}, "unknown embedding provider"),
    ]
    for index, message in refused:
        with pytest.raises(InvalidInput, match=message):
            LanternStore(lt, index=index)


# --- TTL ---------------------------------------------------------------------------------------


def test_a_ttl_is_the_records_expiry_and_reads_refresh_it(store_url: str, clock: Clock) -> None:
    with Lantern.open(store_url, clock=clock) as lt:
        store = LanternStore(lt)
        store.put(NOTES, "soon", {"v": 1}, ttl=1)
        store.put(NOTES, "kept", {"v": 2})
        [record] = [r for r in lt.memory.list() if "soon" in r.content]
        assert record.expires_at == clock.now + 60
        clock.advance(30)
        assert store.get(NOTES, "soon") is not None  # a read pushes the expiry on
        assert lt.memory.get(record.id).expires_at == clock.now + 60
        clock.advance(45)
        assert sorted(item.key for item in store.search(NOTES, refresh_ttl=False)) == [
            "kept",
            "soon",
        ]
        assert store.get(NOTES, "soon", refresh_ttl=False) is not None
        clock.advance(16)
        assert store.get(NOTES, "soon") is None
        assert [item.key for item in store.search(NOTES)] == ["kept"]
        assert [r.id for r in lt.memory.expire()] == [record.id]


def test_the_ttl_configuration(store_url: str, clock: Clock) -> None:
    with Lantern.open(store_url, clock=clock) as lt:
        store = LanternStore(lt, ttl={"default_ttl": 2, "refresh_on_read": False})
        store.put(NOTES, "k", {"v": 1})
        [record] = lt.memory.list()
        assert record.expires_at == clock.now + 120
        clock.advance(60)
        store.get(NOTES, "k")
        assert lt.memory.get(record.id).expires_at == record.expires_at
        store.put(NOTES, "k", {"v": 1}, ttl=None)
        assert lt.memory.get(record.id).expires_at is None
        for ttl, message in [
            ({"sweep_interval_minutes": 5}, "no sweep"),
            ({"omit_expired": False}, "omit_expired"),
            ({"default_ttl": "5"}, "number of minutes"),
            ({"refresh": True}, "ttl has no 'refresh'"),
        ]:
            with pytest.raises(InvalidInput, match=message):
                LanternStore(lt, ttl=ttl)  # type: ignore[arg-type]


# --- filters, batches, threads, opening ---------------------------------------------------------


def test_a_comparison_with_no_number_does_not_match(store: LanternStore) -> None:
    store.put(NOTES, "a", {"n": 3})
    store.put(NOTES, "b", {"n": "three"})
    store.put(NOTES, "c", {"other": 1})
    store.put(NOTES, "d", {"n": "4"})
    assert sorted(item.key for item in store.search(NOTES, filter={"n": {"$gt": 2}})) == ["a", "d"]
    assert sorted(item.key for item in store.search(NOTES, filter={"n": {"$ne": 3}})) == [
        "b",
        "c",
        "d",
    ]


def test_a_batch_answers_in_order_and_reads_before_it_writes(store: LanternStore) -> None:
    store.put(NOTES, "a", {"v": 1})
    results = store.batch(
        [
            PutOp(NOTES, "a", {"v": 2}),
            GetOp(NOTES, "a"),
            PutOp(NOTES, "b", {"v": 3}),
            SearchOp(NOTES),
            PutOp(NOTES, "a", {"v": 4}),
        ]
    )
    assert results[0] is None and results[2] is None and results[4] is None
    assert results[1].value == {"v": 1}  # type: ignore[union-attr]
    assert [item.key for item in results[3]] == ["a"]  # type: ignore[union-attr]
    assert store.get(NOTES, "a").value == {"v": 4}  # type: ignore[union-attr]
    assert asyncio.run(store.aget(NOTES, "b")).value == {"v": 3}  # type: ignore[union-attr]


def test_threads_putting_one_new_key_make_one_record(store_url: str) -> None:
    with LanternStore.open(store_url) as store:
        start = threading.Barrier(4)

        def put(n: int) -> None:
            start.wait()
            store.put(NOTES, "shared", {"writer": n})

        threads = [threading.Thread(target=put, args=(n,)) for n in range(4)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        [record] = store.lantern.memory.list(status="all")
        assert store.get(NOTES, "shared").value == json.loads(record.content)["value"]  # type: ignore[union-attr]


def test_open_closes_what_it_opened(store_url: str) -> None:
    lt = Lantern.open(store_url)
    with LanternStore(lt) as store:
        store.put(NOTES, "k", {"v": 1})
    assert lt.memory.list()  # a Lantern the caller opened stays open
    lt.close()
    with LanternStore.open(store_url) as opened:
        assert opened.get(NOTES, "k") is not None


def test_without_langgraph_the_import_says_what_to_install() -> None:
    script = (
        "import sys\n"
        "sys.modules['langgraph'] = None  # as if the extra were not installed\n"
        "from lantern.errors import MissingDependency\n"
        "try:\n"
        "    import lantern.integrations.langgraph\n"
        "except MissingDependency as exc:\n"
        "    print(exc)\n"
    )
    said = python_output(script).strip()
    assert (
        said == f"LanternStore needs LangGraph, which is not installed: {extra_hint('langgraph')}"
    )
