"""Records addressed by a reference the caller keeps as their key: `put_by_ref` (written in
place, or added, one record per scope and reference even when writers race) and `by_refs`
(found through the references' index)."""

from __future__ import annotations

import threading
from typing import Any

import pytest

from lantern.api import Lantern
from lantern.errors import Conflict, InvalidInput, PolicyRefused
from lantern.memory.records import MemoryRecord
from lantern.memory.scopes import ScopePolicy
from lantern.store.prepared import Prepared
from tests.helpers import Clock

KEY = {"type": "app", "id": "notes/first"}


def _history(lt: Lantern, record: MemoryRecord) -> list[str]:
    return [entry.event for entry in lt.memory.history(record.id)]


def test_a_new_reference_adds_a_record_that_holds_it(lt: Lantern, clock: Clock) -> None:
    record, created = lt.memory.put_by_ref(
        KEY, content="First note.", scope="user:ada", kind="observation", priority=70
    )
    assert created
    assert (record.kind, record.scope, record.priority, record.content) == (
        "observation",
        "user:ada",
        70,
        "First note.",
    )
    assert [dict(ref) for ref in record.source_refs] == [{"id": "notes/first", "type": "app"}]
    assert lt.memory.by_refs(KEY) == [record]
    assert lt.memory.by_refs("app:notes/first") == [record]
    assert _history(lt, record) == ["created"]


def test_the_same_reference_revises_its_record_in_place(lt: Lantern, clock: Clock) -> None:
    first, _ = lt.memory.put_by_ref(KEY, content="First note.", scope="user:ada", priority=70)
    lt.memory.update(first.id, urgency=30)
    clock.advance(10)
    second, created = lt.memory.put_by_ref(
        KEY, content="First note, revised.", scope="user:ada", kind="goal", priority=10
    )
    assert not created
    assert second.id == first.id
    # Content and expiry are the put's; kind, priority and urgency stay the record's.
    assert (second.content, second.kind, second.priority, second.urgency) == (
        "First note, revised.",
        "fact",
        70,
        30,
    )
    assert second.updated_at == clock.now and second.created_at == first.created_at
    history = lt.memory.history(first.id)
    assert [entry.event for entry in history] == ["created", "updated", "updated"]
    assert dict(history[-1].changes["before"]) == {"content": "First note."}
    assert dict(history[-1].changes["after"]) == {"content": "First note, revised."}
    assert lt.memory.search("revised")[0].record.id == first.id


def test_a_put_that_changes_nothing_writes_nothing(lt: Lantern, clock: Clock) -> None:
    first, _ = lt.memory.put_by_ref(KEY, content="Same.", scope="s", expires_at=clock.now + 60)
    clock.advance(5)
    again, created = lt.memory.put_by_ref(
        KEY, content="Same.", scope="s", expires_at=first.expires_at
    )
    assert (again, created) == (first, False)
    assert _history(lt, first) == ["created"]


def test_the_expiry_is_the_puts(lt: Lantern, clock: Clock) -> None:
    first, _ = lt.memory.put_by_ref(KEY, content="Soon gone.", scope="s", expires_at=clock.now + 60)
    assert first.expires_at == clock.now + 60
    kept, _ = lt.memory.put_by_ref(KEY, content="Soon gone.", scope="s")
    assert kept.expires_at is None
    clock.advance(1)
    later, _ = lt.memory.put_by_ref(KEY, content="Soon gone.", scope="s", expires_at=clock.now)
    clock.advance(1)
    assert lt.memory.by_refs(KEY) == []
    assert lt.memory.by_refs(KEY, include_expired=True) == [later]


def test_an_archived_record_is_restored_and_revised(lt: Lantern) -> None:
    first, _ = lt.memory.put_by_ref(KEY, content="Before.", scope="s")
    lt.memory.archive(first.id)
    assert lt.memory.by_refs(KEY) == []
    again, created = lt.memory.put_by_ref(KEY, content="After.", scope="s")
    assert not created and again.id == first.id and again.status == "active"
    assert _history(lt, first) == ["created", "archived", "restored", "updated"]


def test_a_superseded_record_is_left_to_its_successor(lt: Lantern) -> None:
    first, _ = lt.memory.put_by_ref(KEY, content="Version one.", scope="s")
    successor = lt.memory.supersede(first.id, content="Version two.")
    assert [dict(ref) for ref in successor.source_refs] == [dict(KEY)]
    revised, created = lt.memory.put_by_ref(KEY, content="Version three.", scope="s")
    assert not created and revised.id == successor.id
    assert lt.memory.get(first.id).content == "Version one."
    assert lt.memory.by_refs(KEY, status="all") == [revised, lt.memory.get(first.id)]


def test_the_same_reference_in_another_scope_is_another_record(lt: Lantern) -> None:
    one, _ = lt.memory.put_by_ref(KEY, content="In one.", scope="one")
    two, created = lt.memory.put_by_ref(KEY, content="In two.", scope="two")
    assert created and one.id != two.id
    assert {record.scope for record in lt.memory.by_refs(KEY)} == {"one", "two"}


def test_a_content_another_record_says_is_refused(lt: Lantern) -> None:
    other = lt.memory.add(kind="fact", scope="s", content="Taken.")
    with pytest.raises(Conflict, match=f"already stored as {other.id}"):
        lt.memory.put_by_ref(KEY, content="Taken.", scope="s")
    assert lt.memory.by_refs(KEY) == []
    mine, _ = lt.memory.put_by_ref(KEY, content="Mine.", scope="s")
    with pytest.raises(Conflict, match=f"already stored as {other.id}"):
        lt.memory.put_by_ref(KEY, content="Taken.", scope="s")
    assert lt.memory.get(mine.id).content == "Mine."


@pytest.mark.parametrize(
    ("ref", "message"),
    [
        ({"type": "app"}, "needs an id"),
        ("app", "TYPE:ID"),
        ({"type": "", "id": "x"}, "non-empty string 'type'"),
    ],
)
def test_a_reference_without_a_key_is_refused(lt: Lantern, ref: Any, message: str) -> None:
    with pytest.raises(InvalidInput, match=message):
        lt.memory.put_by_ref(ref, content="x", scope="s")
    with pytest.raises(InvalidInput, match=message):
        lt.memory.by_refs(ref)
    assert lt.memory.list(status="all") == []


def test_a_chunk_key_must_name_a_stored_chunk_unless_dangling_is_allowed(lt: Lantern) -> None:
    with pytest.raises(InvalidInput, match="names no chunk"):
        lt.memory.put_by_ref("chunk:chk_0123456789abcdef", content="x", scope="s")
    record, created = lt.memory.put_by_ref(
        "chunk:chk_0123456789abcdef", content="x", scope="s", allow_dangling=True
    )
    assert created and lt.memory.by_refs("chunk:chk_0123456789abcdef") == [record]


def test_scopes_fence_both_calls(store_url: str) -> None:
    with Lantern.open(store_url) as lt:
        lt.memory.put_by_ref(KEY, content="Ada's.", scope="user:ada")
        lt.memory.put_by_ref(KEY, content="Bob's.", scope="user:bob")
        ada = lt.restricted(scopes=ScopePolicy.of("user:ada*"), read_only=False)
        assert [record.content for record in ada.memory.by_refs(KEY)] == ["Ada's."]
        with pytest.raises(PolicyRefused):
            ada.memory.put_by_ref(KEY, content="Bob's, changed.", scope="user:bob")
        assert {record.content for record in lt.memory.by_refs(KEY)} == {"Ada's.", "Bob's."}


def test_by_refs_reads_many_references_of_several_types(lt: Lantern, clock: Clock) -> None:
    records = []
    for n in range(5):
        clock.advance(1)
        record, _ = lt.memory.put_by_ref(f"app:k{n}", content=f"Note {n}.", scope="s", priority=n)
        records.append(record)
    mem0, _ = lt.memory.put_by_ref(
        {"type": "mem0", "id": "m1", "hash": "abc"}, content="M.", scope="s"
    )
    found = lt.memory.by_refs(
        ["app:k1", "app:k3", {"type": "mem0", "id": "m1"}, "app:k1", "app:none"]
    )
    # In list order: priority 50 first, then higher priority first.
    assert found == [mem0, records[3], records[1]]
    assert lt.memory.by_refs(["app:k1", "app:k3", "app:k4"], limit=2) == [records[4], records[3]]
    lt.memory.archive(records[3].id)
    assert lt.memory.by_refs(["app:k3"]) == []
    assert [record.id for record in lt.memory.by_refs(["app:k3"], status="archived")] == [
        records[3].id
    ]
    with pytest.raises(InvalidInput, match="the limit is 10000"):
        lt.memory.by_refs([f"app:{n}" for n in range(10_001)])


def _plans(lt: Lantern, call: Any) -> list[str]:
    """The SQLite query plan of every SELECT on memory_records that `call` runs."""
    captured: list[tuple[str, Any]] = []
    rows_on = Prepared.rows_on

    def capture(prepared: Prepared, driver: Any, dialect: Any, params: Any = None) -> Any:
        statement, values = prepared.explainable(dialect, params)
        if statement.lstrip().upper().startswith("SELECT") and "memory_refs" in statement:
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


@pytest.mark.parametrize("refs", [["app:k7"], ["app:k7", "app:k8"]], ids=["one", "several"])
def test_by_refs_starts_from_the_references_index(lt: Lantern, refs: list[str]) -> None:
    if lt.store.dialect != "sqlite":
        pytest.skip("query plans are checked on SQLite, the embedded default")
    lt.memory.add_many(
        {"kind": "fact", "scope": "s", "content": f"x{n}", "source_refs": f"app:k{n}"}
        for n in range(200)
    )
    [plan] = _plans(lt, lambda: lt.memory.by_refs(refs))
    lines = [line for line in plan.splitlines() if "memory_re" in line]
    assert "SEARCH memory_refs USING COVERING INDEX ix_memory_refs_ref_type" in lines[0], plan
    assert "SEARCH memory_records USING INDEX sqlite_autoindex_memory_records_1 (id=?)" in lines[1]
    assert len(lt.memory.by_refs(refs)) == len(refs)


def test_writers_of_one_new_reference_make_one_record(store_url: str) -> None:
    """Writers racing to put the same new reference take turns: the first adds the record,
    the others revise it; none adds a second one."""
    writers = 6
    Lantern.open(store_url).close()
    stores = [Lantern.open(store_url) for _ in range(writers)]
    start = threading.Barrier(writers)
    errors: list[BaseException] = []

    def put(n: int) -> None:
        try:
            start.wait()
            stores[n].memory.put_by_ref(KEY, content=f"Writer {n} was here.", scope="race")
        except BaseException as exc:  # reported below
            errors.append(exc)

    threads = [threading.Thread(target=put, args=(n,)) for n in range(writers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    try:
        assert errors == []
        [record] = stores[0].memory.by_refs(KEY, status="all")
        assert record.content.startswith("Writer ")
        events = [entry.event for entry in stores[0].memory.history(record.id)]
        assert events[0] == "created" and set(events[1:]) <= {"updated"}
    finally:
        for lt in stores:
            lt.close()
