"""`LanternStore` against LangGraph's own `InMemoryStore`: the same random sequences of
operations on both, every result the store interface defines compared.

Puts, updates, deletes, gets, searches with filters (and without a query: with one, LangGraph's
store without an index returns every item, where Lantern ranks by relevance), namespace
listings with prefixes, suffixes, depths and pages, and batches of all of them, each through the
sync or the async interface, on SQLite and on PostgreSQL. Compared:

* a get: the item's namespace, key and value (the value as JSON text, so that key order and
  `1` against `1.0` count), or that there is none;
* a search: the items' namespaces, keys and values. The interface fixes no order for a search
  without a query, so the matches are compared as sets, over every match (no page), and a page
  is compared with the same slice of the store's own order (`LanternStore` lists in Lantern's
  documented order) and with the reference's page by its length;
* a listing of namespaces: the list itself (both sort it).

`InMemoryStore` keeps a namespace once a get asked about it or its last item was deleted, and
lists it; no persistent store can, so the reference's listings leave namespaces without items
out (`Reference`).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from langgraph.store.base import (
    BaseStore,
    GetOp,
    Item,
    ListNamespacesOp,
    MatchCondition,
    Op,
    PutOp,
    Result,
    SearchOp,
)
from langgraph.store.memory import InMemoryStore

from lantern.api import Lantern
from lantern.integrations.langgraph import LanternStore

# Namespaces, labels and keys that a scope, a path or Lantern's duplicate detection could
# confuse: the separator, the escape character, pattern stars, spacing, line separators,
# non-ASCII, labels that start another label. Few of them, so that steps meet the same items.
NAMESPACE_POOL = [
    ("a",),
    ("a", "b"),
    ("a", "x y"),
    ("a", "b", "line\u2028sep"),
    ("user:alice",),
    ("user:alice", "sl/ash"),
    ("user:alice2",),
    ("st*r", "%41", "*"),
    (" lead", "é"),
    ("tab\tin", "per%cent"),
]
LABELS = sorted({label for namespace in NAMESPACE_POOL for label in namespace} | {"zzz"})
KEYS = ["k", "k 2", "k  2", "", "ключ", "a/b", "%", "*", " sp", "k\n"]

# Few numbers, so that a filter's bound often equals an item's value.
NUMBERS = st.one_of(
    st.integers(min_value=-2, max_value=2),
    st.sampled_from([0.5, -1.25, 2.0, 1e300, 2**70]),
)
JSON = st.recursive(
    st.none() | st.booleans() | NUMBERS | st.text(max_size=6),
    lambda children: (
        st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=4), children, max_size=3)
    ),
    max_leaves=6,
)
VALUES = st.fixed_dictionaries(
    {"n": NUMBERS},
    optional={
        "s": st.sampled_from(["red", "blue", "green pizza", "é ü", ""]),
        "b": st.one_of(st.none(), st.booleans()),
        "o": st.fixed_dictionaries({"x": st.one_of(NUMBERS, st.sampled_from(["p", "q"]))}),
        "l": st.lists(st.integers(min_value=0, max_value=2), max_size=2),
        "extra": JSON,
    },
)
NAMESPACES = st.sampled_from(NAMESPACE_POOL)
PREFIXES = st.one_of(
    st.just(()),
    st.builds(lambda namespace, depth: namespace[:depth], NAMESPACES, st.integers(1, 3)),
    st.builds(lambda namespace, depth: namespace[:depth], NAMESPACES, st.integers(1, 3)),
    st.lists(st.sampled_from([*LABELS, "*"]), min_size=1, max_size=2).map(tuple),
)
OPERATORS = st.sampled_from(["$eq", "$ne", "$gt", "$gte", "$lt", "$lte"])
COMPARED = st.dictionaries(OPERATORS, NUMBERS, min_size=1, max_size=2).map(lambda ops: {"n": ops})
FILTERS = st.one_of(
    st.none(),
    st.none(),
    COMPARED,
    COMPARED,
    st.fixed_dictionaries({"s": st.sampled_from(["red", "blue", "é ü"])}),
    st.fixed_dictionaries({"o": st.fixed_dictionaries({"x": st.sampled_from([1, "p", 0.5])})}),
    st.fixed_dictionaries({"l": st.lists(st.integers(min_value=0, max_value=2), max_size=2)}),
    st.fixed_dictionaries({"b": st.one_of(st.none(), st.booleans())}),
    st.fixed_dictionaries({"s": st.fixed_dictionaries({"$ne": st.sampled_from(["red", ""])})}),
    st.fixed_dictionaries({"n": NUMBERS, "s": st.sampled_from(["red", "blue"])}),
)
PAGE = st.just(10) | st.integers(min_value=1, max_value=3)
OFFSET = st.just(0) | st.integers(min_value=0, max_value=4)


@dataclass(frozen=True)
class Put:
    namespace: tuple[str, ...]
    key: str
    value: dict[str, Any] | None  # None: a delete


@dataclass(frozen=True)
class Get:
    namespace: tuple[str, ...]
    key: str


@dataclass(frozen=True)
class Search:
    prefix: tuple[str, ...]
    filter: dict[str, Any] | None
    limit: int
    offset: int


@dataclass(frozen=True)
class Listing:
    prefix: tuple[str, ...]
    suffix: tuple[str, ...]
    max_depth: int | None
    limit: int
    offset: int


@dataclass(frozen=True)
class Batch:
    ops: tuple[Put | Get | Search | Listing, ...]


Step = Put | Get | Search | Listing | Batch

# Three draws in four among six items, so that steps often meet what earlier steps put.
FEW = st.sampled_from([(namespace, key) for namespace in NAMESPACE_POOL[:3] for key in KEYS[:2]])
KEYED = st.one_of(FEW, FEW, FEW, st.tuples(NAMESPACES, st.sampled_from(KEYS)))
PUTS = st.builds(lambda at, value: Put(at[0], at[1], value), KEYED, VALUES)
DELETES = st.builds(lambda at: Put(at[0], at[1], None), KEYED)
GETS = st.builds(lambda at: Get(at[0], at[1]), KEYED)
SEARCHES = st.builds(Search, PREFIXES, FILTERS, PAGE, OFFSET)
SUFFIXES = st.one_of(
    st.just(()),
    st.just(()),
    st.builds(lambda namespace, depth: namespace[-depth:], NAMESPACES, st.integers(1, 2)),
    st.lists(st.sampled_from([*LABELS, "*"]), max_size=2).map(tuple),
)
LISTINGS = st.builds(
    Listing,
    PREFIXES,
    SUFFIXES,
    st.one_of(st.none(), st.integers(min_value=1, max_value=3)),
    PAGE,
    OFFSET,
)
SINGLE = st.one_of(PUTS, PUTS, DELETES, GETS, GETS, SEARCHES, SEARCHES, SEARCHES, LISTINGS)


def _batch(ops: list[Put | Get | Search | Listing]) -> Batch:
    return Batch(tuple(ops))


STEPS = st.tuples(
    st.lists(PUTS, min_size=5, max_size=12).map(lambda puts: [(put, True) for put in puts]),
    st.lists(
        st.tuples(
            st.one_of(SINGLE, st.lists(SINGLE, min_size=1, max_size=5).map(_batch)),
            st.booleans(),  # through the async interface
        ),
        min_size=5,
        max_size=30,
    ),
).map(lambda parts: parts[0] + parts[1])
"""Some items put first, then any steps, each through the sync or the async interface."""


class Reference(InMemoryStore):
    """LangGraph's `InMemoryStore`, whose namespace listings leave out the namespaces that hold
    no item (see the module note)."""

    def _handle_list_namespaces(self, op: ListNamespacesOp) -> list[tuple[str, ...]]:
        kept = self._data
        self._data = {namespace: items for namespace, items in kept.items() if items}
        try:
            return super()._handle_list_namespaces(op)
        finally:
            self._data = kept


def _op(step: Put | Get | Search | Listing) -> Op:
    if isinstance(step, Put):
        return PutOp(step.namespace, step.key, step.value)
    if isinstance(step, Get):
        return GetOp(step.namespace, step.key)
    if isinstance(step, Search):
        return SearchOp(step.prefix, step.filter, step.limit, step.offset)
    conditions = []
    if step.prefix:
        conditions.append(MatchCondition("prefix", step.prefix))
    if step.suffix:
        conditions.append(MatchCondition("suffix", step.suffix))
    return ListNamespacesOp(tuple(conditions), step.max_depth, step.limit, step.offset)


def _call(store: BaseStore, step: Put | Get | Search | Listing, sync: bool) -> Result:
    """One step through the store's own methods (`put`, `aget`...), as a graph calls them."""
    if isinstance(step, Put):
        if step.value is None:
            if sync:
                store.delete(step.namespace, step.key)
            else:
                asyncio.run(store.adelete(step.namespace, step.key))
        elif sync:
            store.put(step.namespace, step.key, step.value)
        else:
            asyncio.run(store.aput(step.namespace, step.key, step.value))
        return None
    if isinstance(step, Get):
        if sync:
            return store.get(step.namespace, step.key)
        return asyncio.run(store.aget(step.namespace, step.key))
    if isinstance(step, Search):
        if sync:
            return store.search(
                step.prefix, filter=step.filter, limit=step.limit, offset=step.offset
            )
        return asyncio.run(
            store.asearch(step.prefix, filter=step.filter, limit=step.limit, offset=step.offset)
        )
    prefix, suffix = step.prefix or None, step.suffix or None
    if sync:
        return store.list_namespaces(
            prefix=prefix,
            suffix=suffix,
            max_depth=step.max_depth,
            limit=step.limit,
            offset=step.offset,
        )
    return asyncio.run(
        store.alist_namespaces(
            prefix=prefix,
            suffix=suffix,
            max_depth=step.max_depth,
            limit=step.limit,
            offset=step.offset,
        )
    )


def _item(item: Item | None) -> tuple[tuple[str, ...], str, str] | None:
    if item is None:
        return None
    return item.namespace, item.key, json.dumps(item.value)


def _items(items: list[Any]) -> list[tuple[tuple[str, ...], str, str]]:
    return [_item(item) for item in items]  # type: ignore[misc]


def _every_match(store: BaseStore, search: Search) -> list[Any]:
    return store.search(search.prefix, filter=search.filter, limit=100_000)


def _compare(
    step: Put | Get | Search | Listing,
    ours: Result,
    theirs: Result,
    matches: tuple[list[Any], list[Any]] | None,
) -> None:
    """Compare one result; `matches` holds every match of a search (ours, the reference's) on
    the store as the search saw it."""
    where = repr(step)
    if isinstance(step, Put):
        assert ours is None and theirs is None, where
    elif isinstance(step, Get):
        assert _item(ours) == _item(theirs), where  # type: ignore[arg-type]
    elif isinstance(step, Search):
        assert matches is not None
        all_ours, all_theirs = _items(matches[0]), _items(matches[1])
        assert sorted(all_ours, key=repr) == sorted(all_theirs, key=repr), where
        assert len(all_ours) == len(set(all_ours)), where
        page = _items(ours)  # type: ignore[arg-type]
        assert page == all_ours[step.offset : step.offset + step.limit], where
        assert len(page) == len(theirs), where  # type: ignore[arg-type]
        assert all(item.score is None for item in ours), where  # type: ignore[union-attr]
    else:
        assert ours == theirs, where


def _check(ours: LanternStore, theirs: Reference, steps: list[tuple[Step, bool]]) -> None:
    for step, sync in steps:
        if isinstance(step, Batch):
            # A batch reads the store as it was before its own writes: the matches too.
            matches = [
                (_every_match(ours, op), _every_match(theirs, op))
                if isinstance(op, Search)
                else None
                for op in step.ops
            ]
            ops = [_op(op) for op in step.ops]
            got = ours.batch(ops) if sync else asyncio.run(ours.abatch(ops))
            expected = theirs.batch(ops)
            assert len(got) == len(expected) == len(ops)
            for op, mine, reference, found in zip(step.ops, got, expected, matches, strict=True):
                _compare(op, mine, reference, found)
        else:
            found = None
            if isinstance(step, Search):
                found = (_every_match(ours, step), _every_match(theirs, step))
            _compare(step, _call(ours, step, sync), _call(theirs, step, sync), found)


def _empty(lt: Lantern) -> None:
    """Forget every record: each example starts from an empty store."""
    while records := lt.memory.list(status="all", include_expired=True, limit=1000):
        for record in records:
            lt.memory.forget(record.id)


@pytest.fixture
def store(store_url: str) -> Iterator[LanternStore]:
    with LanternStore.open(store_url) as opened:
        yield opened


@settings(
    max_examples=60,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(steps=STEPS)
def test_lantern_store_answers_as_langgraph_s_own_store(
    store: LanternStore, steps: list[tuple[Step, bool]]
) -> None:
    _empty(store.lantern)
    _check(store, Reference(), steps)


def test_a_known_sequence_compares_alike(store: LanternStore) -> None:
    """The cases the random sequences are made to find, every time: an update, a delete and a
    put again, keys that differ in their spacing, labels that look like escapes, separators and
    stars, prefixes that are the start of another label, and a batch that reads before it
    writes."""
    at = ("user:alice", "notes")
    steps: list[tuple[Step, bool]] = [
        (Put(at, "k", {"n": 1, "s": "red"}), True),
        (Put(at, "k 2", {"n": 2, "s": "blue"}), False),
        (Put(at, "k  2", {"n": 2, "s": "blue"}), True),
        (Put(("user:alice2",), "k", {"n": 3, "o": {"x": "p"}}), True),
        (Put(("sl/ash", "%41", "*"), "a/b", {"n": 0.5, "l": [1, 2]}), False),
        (Put(("st*r",), "*", {"n": -1, "b": None}), True),
        (Put(at, "k", {"n": 5, "s": "red", "extra": {"z": 1, "a": [1.0, 1, True]}}), True),
        (Get(at, "k"), True),
        (Search(("user:alice",), None, 10, 0), True),
        (Search((), {"n": {"$gte": 2}}, 2, 1), False),
        (Search((), {"s": {"$ne": "red"}}, 10, 0), True),
        (Listing((), (), None, 10, 0), True),
        (Listing(("user:alice",), (), None, 10, 0), False),
        (Listing((), ("*",), 1, 10, 0), True),
        (Listing(("*",), ("notes",), None, 1, 0), True),
        (Put(at, "k", None), True),
        (Get(at, "k"), False),
        (Listing((), (), 2, 3, 1), True),
        (
            Batch(
                (
                    Put(at, "k", {"n": 9}),
                    Get(at, "k"),
                    Search(at, None, 5, 0),
                    Put(at, "k 2", None),
                    Listing(("user:alice",), (), None, 5, 0),
                )
            ),
            True,
        ),
        (Get(at, "k"), True),
        (Get(at, "k 2"), False),
        (Search((), None, 100, 0), True),
    ]
    _check(store, Reference(), steps)
