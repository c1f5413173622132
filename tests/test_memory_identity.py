"""Duplicates follow what each record says now, not its id: after an update, on every write
path, under concurrent writers, on both engines; and `add --supersedes` agrees with
`supersede`."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import pytest

from lantern.api import Lantern
from lantern.errors import Conflict, InvalidInput, LanternError, NotFound
from lantern.memory.records import MemoryRecord
from lantern.store.ids import memory_id
from tests.helpers import CliRun
from tests.memory_helpers import sql


def _active(lt: Lantern) -> list[tuple[str, str]]:
    return sorted((r.id, r.content) for r in lt.memory.list(status="active"))


def test_after_an_update_adding_follows_what_records_say_now(lt: Lantern) -> None:
    x = lt.memory.add(kind="fact", content="alpha")
    updated = lt.memory.update(x.id, content="beta")
    assert updated.id == x.id  # the id names the record for its whole life

    again, created = lt.memory.get_or_add(kind="fact", content="  beta ")
    assert (again.id, created) == (x.id, False)

    # X no longer says alpha: alpha is new, and takes the next id, X's being taken.
    alpha, created = lt.memory.get_or_add(kind="fact", content="alpha")
    assert created and alpha.content == "alpha"
    assert alpha.id == memory_id("global", "fact", "alpha", 1) != x.id
    assert lt.memory.get_or_add(kind="fact", content="alpha") == (alpha, False)
    assert _active(lt) == sorted([(x.id, "beta"), (alpha.id, "alpha")])


def test_no_write_makes_two_records_say_the_same(lt: Lantern) -> None:
    a = lt.memory.add(kind="fact", content="one")
    b = lt.memory.add(kind="fact", content="two")
    lt.memory.update(a.id, content="three")
    with pytest.raises(Conflict, match=f"already stored as {a.id}"):
        lt.memory.update(b.id, content="three")
    with pytest.raises(Conflict, match=f"already stored as {a.id}"):
        lt.memory.supersede(b.id, content="three")
    # A's old text is free again, for an update as for a supersede.
    assert lt.memory.update(b.id, content="one").content == "one"
    replacement = lt.memory.supersede(b.id, content="two")
    assert replacement.id == memory_id("global", "fact", "two", 1)  # b's id stays b's
    assert _active(lt) == sorted([(a.id, "three"), (replacement.id, "two")])
    # Whitespace is not content: the record still says what it said.
    assert lt.memory.update(a.id, content="three ").id == a.id
    assert lt.memory.get_or_add(kind="fact", content="three")[0].id == a.id


def test_add_many_follows_identities_too(lt: Lantern) -> None:
    x = lt.memory.add(kind="fact", content="alpha")
    lt.memory.update(x.id, content="beta")
    pairs = lt.memory.add_many(
        [
            {"kind": "fact", "content": "beta"},
            {"kind": "fact", "content": "alpha"},
            {"kind": "fact", "content": "alpha"},
            {"kind": "fact", "content": "gamma"},
        ]
    )
    ids = [(record.id, created) for record, created in pairs]
    second = memory_id("global", "fact", "alpha", 1)
    gamma = memory_id("global", "fact", "gamma")
    assert ids == [(x.id, False), (second, True), (second, False), (gamma, True)]
    assert len(lt.memory.list(status="all")) == 3


def test_forgetting_frees_the_text(lt: Lantern) -> None:
    x = lt.memory.add(kind="fact", content="alpha")
    lt.memory.update(x.id, content="secret")
    lt.memory.forget(x.id)
    again, created = lt.memory.get_or_add(kind="fact", content="secret")
    assert created and again.id == memory_id("global", "fact", "secret")


# --- add --supersedes ------------------------------------------------------------------------


def test_add_supersedes_agrees_with_supersede(lt: Lantern, run_cli: CliRun) -> None:
    old = lt.memory.add(kind="fact", content="The build uses make.")
    other = lt.memory.add(kind="fact", content="The build uses just.")
    refusal = f"an identical memory is already stored as {other.id}; {old.id} was not superseded"
    with pytest.raises(Conflict, match=refusal):
        lt.memory.add(kind="fact", content="The build uses just.", supersedes_id=old.id)
    with pytest.raises(Conflict, match=refusal):
        lt.memory.supersede(old.id, content="The build uses just.")
    result = run_cli(
        "memory", "add", "--kind", "fact", "--supersedes", old.id, "The build uses just."
    )
    assert result.exit_code == 1 and result.stderr.startswith(f"Error: {refusal}")
    with pytest.raises(InvalidInput, match=f"would be identical to {old.id}"):
        lt.memory.add(kind="fact", content="The build uses make.", supersedes_id=old.id)
    with pytest.raises(InvalidInput, match=f"would be identical to {old.id}"):
        lt.memory.supersede(old.id, content="The build uses make.")
    assert lt.memory.get(old.id).status == "active"
    assert lt.memory.history(old.id)[-1].event == "created"


@pytest.mark.parametrize("content", ["Something new.", "The build uses make."])
def test_add_supersedes_an_unknown_id_is_refused_whatever_the_content(
    lt: Lantern, run_cli: CliRun, content: str
) -> None:
    lt.memory.add(kind="fact", content="The build uses make.")
    before = lt.memory.list(status="all")
    with pytest.raises(NotFound, match="no memory record with id 'mem_00000000000000ff'"):
        lt.memory.add(kind="fact", content=content, supersedes_id="mem_00000000000000ff")
    result = run_cli(
        "memory", "add", "--kind", "fact", "--supersedes", "mem_00000000000000ff", content
    )
    assert result.exit_code == 1
    assert lt.memory.list(status="all") == before


def test_repeating_an_add_supersedes_changes_nothing_more(lt: Lantern) -> None:
    old = lt.memory.add(kind="fact", content="The build uses make.")
    new, created = lt.memory.get_or_add(
        kind="fact", content="The build uses just.", supersedes_id=old.id
    )
    assert created and lt.memory.get(old.id).status == "superseded"
    again = lt.memory.get_or_add(kind="fact", content="The build uses just.", supersedes_id=old.id)
    assert again == (new, False)
    assert [e.event for e in lt.memory.history(old.id)] == ["created", "superseded"]


# --- concurrent writers ----------------------------------------------------------------------


def _at_once(store_url: str, count: int, call: Callable[[Lantern, int], Any]) -> list[Any]:
    """`call(lantern, n)` in `count` threads, each with a store of its own, started together."""
    stores = [Lantern.open(store_url) for _ in range(count)]
    barrier = threading.Barrier(count)
    results: list[Any] = [None] * count

    def run(n: int) -> None:
        barrier.wait()
        try:
            results[n] = call(stores[n], n)
        except LanternError as exc:
            results[n] = exc

    threads = [threading.Thread(target=run, args=(n,)) for n in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    for store in stores:
        store.close()
    return results


def test_writers_adding_one_text_at_once_store_it_once(store_url: str) -> None:
    with Lantern.open(store_url) as lt:
        x = lt.memory.add(kind="fact", content="alpha")
        lt.memory.update(x.id, content="beta")  # so alpha's first id is taken
    for text in ("alpha", "gamma"):

        def get_or_add(store: Lantern, _n: int, text: str = text) -> tuple[MemoryRecord, bool]:
            return store.memory.get_or_add(kind="fact", content=text)

        results = _at_once(store_url, 6, get_or_add)
        assert all(isinstance(pair, tuple) for pair in results), results
        assert len({record.id for record, _created in results}) == 1
        assert sum(created for _record, created in results) == 1
    with Lantern.open(store_url) as lt:
        assert sorted(r.content for r in lt.memory.list()) == ["alpha", "beta", "gamma"]


def test_writers_updating_two_records_to_one_text_at_once(store_url: str) -> None:
    with Lantern.open(store_url) as lt:
        records = [lt.memory.add(kind="fact", content=f"draft {n}") for n in range(4)]

    def rewrite(store: Lantern, n: int) -> MemoryRecord:
        return store.memory.update(records[n].id, content="final")

    results = _at_once(store_url, 4, rewrite)
    done = [r for r in results if isinstance(r, MemoryRecord)]
    assert len(done) == 1, results
    assert all(isinstance(r, Conflict) for r in results if r not in done)
    with Lantern.open(store_url) as lt:
        contents = sorted(r.content for r in lt.memory.list())
        assert contents.count("final") == 1 and len(contents) == 4
        assert lt.check().healthy


# --- stores that already hold duplicates -----------------------------------------------------


def test_a_record_stored_twice_stays_and_the_identity_passes_on(lt: Lantern) -> None:
    """As a store upgraded by revision 0006 (or an import) may hold them: both kept, one holds
    the identity, and when it stops saying the text the other takes it over."""
    holder = lt.memory.add(kind="fact", content="beta")
    twin = lt.memory.add(kind="fact", content="tmp")
    sql(
        lt,
        "UPDATE memory_records SET identity_hash = NULL, content = 'beta' WHERE id = :id",
        id=twin.id,
    )
    assert lt.check().warnings == [
        f"duplicate_memories: {twin.id} says what {holder.id} says (same scope, kind and "
        "content); archive, supersede or forget one of them"
    ]
    assert lt.memory.get_or_add(kind="fact", content="beta")[0].id == holder.id
    lt.memory.update(twin.id, priority=70)  # other fields change nothing about identity
    lt.memory.update(holder.id, content="gamma")
    assert lt.memory.get_or_add(kind="fact", content="beta")[0].id == twin.id
    assert lt.check().warnings == []
    lt.memory.forget(twin.id)
    assert lt.memory.get_or_add(kind="fact", content="beta")[1] is True
