"""A confined caller learns nothing of what lies outside its scopes from the small signals: the
spelling of a shared entity's name, whether an entity or a record it names exists elsewhere,
or the numbering of history entries.

Each test builds two stores on the same clock, one with writes outside the fence interleaved
with the writes inside, and asks the same of both through a confined handle: the answers must
be the same.
"""

from __future__ import annotations

import base64
import functools
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from lantern.api import Lantern
from lantern.errors import LanternError
from lantern.store.ids import entity_id
from tests.helpers import Clock

FENCE = ["user:alice*"]


def _answer(call: Callable[[], Any]) -> Any:
    try:
        result = call()
    except LanternError as refused:
        return f"{type(refused).__name__}: {refused.message}"
    if isinstance(result, list):
        return [item.to_json() for item in result]
    return result.to_json()


def _both(
    tmp_path: Path, seed: Callable[[Lantern, bool], None], ask: Callable[[Lantern], Any]
) -> Any:
    """What `ask` answers through a confined handle on a store seeded without and with the
    writes outside (`seed(lt, outside)`), which must be the same."""
    answers = []
    for outside in (False, True):
        url = str(tmp_path / f"{'more' if outside else 'plain'}.db")
        clock = Clock()
        with Lantern.open(url, clock=clock) as lt:
            seed(lt, outside)
        with Lantern.open(url, clock=clock, scopes=FENCE) as confined:
            answers.append(json.dumps(ask(confined), sort_keys=True))
    assert answers[0] == answers[1]
    return json.loads(answers[0])


def test_entity_names_are_those_every_spelling_shares(tmp_path: Path) -> None:
    """An entity first written outside (`ADA Lovelace`) and then inside (`Ada Lovelace`) reads
    the same as one written inside only: in the listing, its page, a record's entities, an
    attach's answer and the record's history."""

    def seed(lt: Lantern, outside: bool) -> None:
        if outside:
            lt.memory.add(
                kind="fact",
                scope="user:bob",
                content="Bob met her.",
                entities=["person:ADA Lovelace", "project:ZEBRA"],
            )
        lt.memory.add(
            kind="fact",
            scope="user:alice",
            content="Alice met her.",
            entities=["person:Ada Lovelace"],
        )

    def ask(lt: Lantern) -> Any:
        record = lt.memory.list()[0].id
        return {
            "attach": _answer(lambda: lt.memory.attach_entities(record, ["project:Zebra"])),
            "list": _answer(lt.entities.list),
            "count order": _answer(lambda: lt.entities.list(order="count")),
            "get": _answer(lambda: lt.entities.get("person:ada lovelace")),
            "show": _answer(lambda: lt.entity_show("person:Ada Lovelace")),
            "record": _answer(lambda: lt.memory.entities(record)),
            "history": _answer(lambda: lt.memory.history(record)),
        }

    found = _both(tmp_path, seed, ask)
    assert found["get"]["name"] == "ada lovelace"
    assert "ZEBRA" not in json.dumps(found) and "zebra" in json.dumps(found["history"])


def test_an_entity_only_records_outside_have_reads_as_none(tmp_path: Path) -> None:
    """Attaching or detaching an entity by its id, or detaching one by name, that only records
    outside have is refused as for an entity that does not exist."""
    hidden = "person:Bob Only"

    def seed(lt: Lantern, outside: bool) -> None:
        lt.memory.add(kind="fact", scope="user:alice", content="Alice's note.")
        if outside:
            lt.memory.add(kind="fact", scope="user:bob", content="Bob's.", entities=[hidden])

    def ask(lt: Lantern) -> Any:
        record = lt.memory.list()[0].id
        by_id = entity_id("person", "Bob Only")
        return {
            "detach by name": _answer(lambda: lt.memory.detach_entities(record, [hidden])),
            "detach by id": _answer(lambda: lt.memory.detach_entities(record, [by_id])),
            "attach by id": _answer(lambda: lt.memory.attach_entities(record, [by_id])),
            "add by id": _answer(
                lambda: lt.memory.add(
                    kind="fact", scope="user:alice", content="Named.", entities=[by_id]
                )
            ),
            "add_many by id": _answer(
                lambda: lt.memory.add_many(
                    [{"kind": "fact", "scope": "user:alice", "content": "N.", "entities": [by_id]}]
                )
            ),
            "supersede by id": _answer(
                lambda: lt.memory.supersede(record, content="Renamed.", entities=[by_id])
            ),
            "get": _answer(lambda: lt.entities.get(by_id)),
            "filter": _answer(lambda: lt.memory.list(entity=[by_id])),
        }

    found = _both(tmp_path, seed, ask)
    for call in ("attach by id", "add by id", "add_many by id", "supersede by id"):
        assert found[call].startswith("NotFound"), call


def test_an_id_outside_reads_as_one_that_names_nothing(tmp_path: Path) -> None:
    """Every call that takes a record's id answers an id of a record outside (stored, or
    forgotten) as it answers an id that names nothing."""
    url = str(tmp_path / "store.db")
    with Lantern.open(url) as lt:
        lt.memory.add(kind="fact", scope="user:alice", content="Alice's note.")
        bob = lt.memory.add(kind="fact", scope="user:bob", content="Bob's secret.").id
        gone = lt.memory.add(kind="fact", scope="user:bob", content="Bob's forgotten one.").id
        lt.memory.forget(gone)
        lt.embed(model="hashing")
    answers: dict[str, str] = {}
    with Lantern.open(url, scopes=FENCE) as confined:
        memory = confined.memory
        calls: dict[str, Callable[[str], Any]] = {
            "get": memory.get,
            "chain": memory.chain,
            "history": memory.history,
            "entities": memory.entities,
            "similar": lambda rid: memory.similar(rid, model="hashing"),
            "update": lambda rid: memory.update(rid, priority=3),
            "supersede": lambda rid: memory.supersede(rid, content="Mine now."),
            "archive": memory.archive,
            "restore": memory.restore,
            "forget": memory.forget,
            "attach": lambda rid: memory.attach_entities(rid, ["person:X"]),
            "detach": lambda rid: memory.detach_entities(rid, ["person:X"]),
        }
        for record in (bob, gone, "mem_00000000000000ff"):
            for op, call in calls.items():
                answer = _answer(functools.partial(call, record))
                answers[f"{op} {record}"] = str(answer).replace(record, "ID")
    assert set(answers.values()) == {"NotFound: no memory record with id 'ID'"}


def test_a_cursor_of_changes_names_no_entry_outside(tmp_path: Path) -> None:
    """A confined caller's cursor of changes names its last entry by record and place; one
    that names a record outside, or the whole log's entry id, is refused as a cursor that
    names nothing."""
    url = str(tmp_path / "store.db")
    with Lantern.open(url) as lt:
        for n in range(3):
            lt.memory.add(kind="fact", scope="user:alice", content=f"Alice's note {n}.")
            lt.memory.add(kind="fact", scope="user:bob", content=f"Bob's note {n}.")
        bob = lt.memory.list(scope="user:bob")[0].id
    with Lantern.open(url, scopes=FENCE) as confined:
        first = confined.memory.changes(limit=1)
        assert [entry.id for entry in first] == [1]
        assert first.next_cursor is not None and first.next_cursor.startswith("h1_")
        rest = confined.memory.changes(limit=10, after=first.next_cursor)
        assert len(rest) == 2 and rest.next_cursor is None
        forged = first.next_cursor[:3] + base64.urlsafe_b64encode(
            json.dumps([bob, 1]).encode()
        ).decode().rstrip("=")
        nowhere = first.next_cursor[:3] + base64.urlsafe_b64encode(
            json.dumps(["mem_00000000000000ff", 1]).encode()
        ).decode().rstrip("=")
        refused = {
            _answer(functools.partial(confined.memory.changes, after=cursor)).replace(cursor, "C")
            for cursor in (forged, nowhere, "5")
        }
    assert refused == {
        "InvalidInput: not a cursor of memory changes (a next_cursor they gave): 'C'"
    }


def test_writes_outside_leave_a_confined_callers_index_alone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Records added, archived and forgotten outside the scopes make a confined caller's next
    search take no index writer and write nothing beside the store (a sync it could time), and
    its index stays the same generation; a record added inside is found at once."""
    pytest.importorskip("tantivy")
    from lantern.indexes import place, words

    url = str(tmp_path / "store.db")
    with Lantern.open(url) as lt:
        lt.memory.add(kind="fact", scope="user:alice", content="Alice deploys on Fridays.")
    with Lantern.open(url, scopes=FENCE) as confined:
        assert len(confined.memory.search("deploys", mode="keyword")) == 1
        directory = place.directory(confined.location)
        assert directory is not None
        [name] = words.fenced_names(directory)
        generation = place.current(directory, name)
        assert generation is not None
        mark = (generation / words.MARK_FILE).read_bytes()
        with Lantern.open(url) as other:
            for n in range(3):
                other.memory.add(kind="fact", scope="user:bob", content=f"Bob deploys {n}.")
            bobs = other.memory.list(scope="user:bob")
            other.memory.archive(bobs[0].id)
            other.memory.forget(bobs[1].id)
        taken: list[object] = []
        writer = words._writer

        def counting(*args: Any) -> Any:
            taken.append(args)
            return writer(*args)

        monkeypatch.setattr(words, "_writer", counting)
        assert len(confined.memory.search("deploys", mode="keyword")) == 1
        assert taken == []
        assert place.current(directory, name) == generation
        assert (generation / words.MARK_FILE).read_bytes() == mark
        with Lantern.open(url) as other:
            other.memory.add(kind="fact", scope="user:alice", content="Alice deploys again.")
        assert len(confined.memory.search("deploys", mode="keyword")) == 2
