"""The memory lifecycle through the Python API: update, supersede, restore, expire, forget,
history and the supersede chain, on every engine under test."""

from __future__ import annotations

import json

import pytest
from sqlalchemy import text

from lantern.api import Lantern
from lantern.errors import Conflict, InvalidInput, LanternError, NotFound
from lantern.memory import history
from lantern.memory.records import MemoryRecord
from lantern.store.ids import memory_id
from lantern.validation import canonical_json
from tests.helpers import Clock
from tests.memory_helpers import add_source, remove_source, sql, table_rows


def _events(lt: Lantern, record_id: str) -> list[str]:
    return [entry.event for entry in lt.memory.history(record_id)]


def _everything(lt: Lantern) -> list[MemoryRecord]:
    return list(lt.memory.list(status="all", include_expired=True, limit=10_000))


def _search_ids(lt: Lantern, query: str) -> list[str]:
    return [m.record.id for m in lt.memory.search(query, status="all", include_expired=True)]


# --- add ---------------------------------------------------------------------------------------


def test_add_writes_a_created_entry_and_a_search_row(lt: Lantern, clock: Clock) -> None:
    record = lt.memory.add(
        kind="fact", scope="s", content="The kettle is blue.", source_refs=["session:x"]
    )
    [entry] = lt.memory.history(record.id)
    assert entry.to_json() == {
        "id": entry.id,
        "record_id": record.id,
        "event": "created",
        "at": clock.now,
        "changes": {
            "after": {
                "kind": "fact",
                "scope": "s",
                "status": "active",
                "content": "The kettle is blue.",
                "urgency": 0,
                "priority": 50,
                "confidence": 1.0,
                "expires_at": None,
                "source_refs": [{"id": "x", "type": "session"}],
                "supersedes_id": None,
            },
            "before": None,
        },
    }
    assert _search_ids(lt, "kettle") == [record.id]
    # Adding it again changes nothing, history included.
    lt.memory.add(kind="fact", scope="s", content="The kettle  is blue.")
    assert _events(lt, record.id) == ["created"]


# --- update ------------------------------------------------------------------------------------


def test_update_revises_in_place_and_records_before_and_after(lt: Lantern, clock: Clock) -> None:
    record = lt.memory.add(kind="task_state", scope="p", content="Step 1 of 3.", priority=40)
    clock.advance(10)
    updated = lt.memory.update(
        record.id,
        content="Step 2 of 3.",
        priority=60,
        urgency=5,
        confidence=0.5,
        expires_at="2030-01-01T00:00:00Z",
        add_refs=["session:s1", "session:s2"],
    )
    assert updated.id == record.id
    assert (updated.content, updated.priority, updated.urgency, updated.confidence) == (
        "Step 2 of 3.",
        60,
        5,
        0.5,
    )
    assert updated.expires_at == 1893456000
    assert updated.updated_at == clock.now and updated.created_at == record.created_at
    assert lt.memory.get(record.id) == updated
    entry = lt.memory.history(record.id)[-1]
    assert entry.event == "updated" and entry.at == clock.now
    assert entry.to_json()["changes"] == {
        "after": {
            "content": "Step 2 of 3.",
            "urgency": 5,
            "priority": 60,
            "confidence": 0.5,
            "expires_at": 1893456000,
            "source_refs": [{"id": "s1", "type": "session"}, {"id": "s2", "type": "session"}],
        },
        "before": {
            "content": "Step 1 of 3.",
            "urgency": 0,
            "priority": 40,
            "confidence": 1.0,
            "expires_at": None,
            "source_refs": [],
        },
    }
    # The search index follows the content; the reference rows follow the references.
    assert _search_ids(lt, "step 2") == [record.id]
    assert _search_ids(lt, '"1 of"') == []
    assert [r.id for r in lt.memory.citing("session:s2")] == [record.id]

    clock.advance(5)
    cleared = lt.memory.update(record.id, clear_expiry=True, remove_refs=["session:s1"])
    assert cleared.expires_at is None
    assert [dict(ref) for ref in cleared.source_refs] == [{"id": "s2", "type": "session"}]
    assert lt.memory.citing("session:s1") == []


def test_an_update_that_changes_nothing_writes_nothing(lt: Lantern, clock: Clock) -> None:
    record = lt.memory.add(kind="fact", content="same", priority=50)
    clock.advance(10)
    assert lt.memory.update(record.id, priority=50) == record
    assert lt.memory.get(record.id).updated_at == record.updated_at
    assert _events(lt, record.id) == ["created"]


def test_update_refusals_change_nothing(lt: Lantern, clock: Clock) -> None:
    record = lt.memory.add(kind="fact", scope="s", content="one", source_refs=["session:a"])
    lt.memory.add(kind="fact", scope="s", content="two")
    before = _everything(lt)
    refusals: list[tuple[dict[str, object], type[LanternError], str]] = [
        ({}, InvalidInput, "nothing to update"),
        ({"priority": 101}, InvalidInput, "priority must be an integer from 0 to 100"),
        ({"confidence": 2.0}, InvalidInput, "confidence must be a number"),
        ({"content": "  "}, InvalidInput, "content must not be empty"),
        ({"expires_at": 5, "clear_expiry": True}, InvalidInput, "not both"),
        ({"expires_at": "soon"}, InvalidInput, "expires_at must be unix seconds"),
        ({"remove_refs": ["session:zzz"]}, InvalidInput, "has no reference session:zzz"),
        ({"add_refs": ["chunk:chk_0000000000000000"]}, InvalidInput, "names no chunk"),
        ({"content": "two"}, Conflict, "an identical memory is already stored as"),
    ]
    for kwargs, error, message in refusals:
        with pytest.raises(error, match=message):
            lt.memory.update(record.id, **kwargs)  # type: ignore[arg-type]
    with pytest.raises(NotFound, match="no memory record"):
        lt.memory.update("mem_0000000000000000", priority=1)
    assert _everything(lt) == before
    assert _events(lt, record.id) == ["created"]


def test_update_of_a_superseded_record_names_its_successor(lt: Lantern) -> None:
    old = lt.memory.add(kind="fact", content="old")
    new = lt.memory.supersede(old.id, content="new")
    with pytest.raises(Conflict, match=f"superseded by {new.id}; update its successor"):
        lt.memory.update(old.id, priority=1)


# --- supersede ---------------------------------------------------------------------------------


def test_supersede_takes_missing_fields_from_the_old_record(lt: Lantern, clock: Clock) -> None:
    old = lt.memory.add(
        kind="preference",
        scope="user:r",
        content="Prefers tabs.",
        priority=70,
        urgency=10,
        confidence=0.8,
        expires_at=1893456000,
        source_refs=["session:a"],
    )
    clock.advance(60)
    new = lt.memory.supersede(old.id, content="Prefers spaces.", urgency=20)
    assert new == MemoryRecord(
        id=memory_id("user:r", "preference", "Prefers spaces."),
        kind="preference",
        content="Prefers spaces.",
        scope="user:r",
        priority=70,
        urgency=20,
        confidence=0.8,
        status="active",
        created_at=clock.now,
        updated_at=clock.now,
        expires_at=1893456000,
        supersedes_id=old.id,
        source_refs=new.source_refs,
    )
    assert [dict(ref) for ref in new.source_refs] == [{"id": "a", "type": "session"}]
    retired = lt.memory.get(old.id)
    assert retired.status == "superseded" and retired.updated_at == clock.now
    assert _events(lt, old.id) == ["created", "superseded"]
    superseded = lt.memory.history(old.id)[-1].to_json()["changes"]
    assert superseded == {
        "after": {"status": "superseded"},
        "before": {"status": "active"},
        "superseded_by": new.id,
    }
    assert _events(lt, new.id) == ["created"]
    assert lt.memory.history(new.id)[0].changes["after"]["supersedes_id"] == old.id


def test_supersede_can_change_scope_kind_refs_and_clear_the_expiry(lt: Lantern) -> None:
    old = lt.memory.add(kind="hypothesis", scope="a", content="x", expires_at=1893456000)
    new = lt.memory.supersede(
        old.id, kind="fact", scope="b", clear_expiry=True, source_refs=["session:z"]
    )
    assert (new.kind, new.scope, new.content, new.expires_at) == ("fact", "b", "x", None)
    assert [dict(ref) for ref in new.source_refs] == [{"id": "z", "type": "session"}]


def test_superseding_twice_names_the_successor_and_changes_nothing(lt: Lantern) -> None:
    old = lt.memory.add(kind="fact", content="v1")
    new = lt.memory.supersede(old.id, content="v2")
    before = _everything(lt)
    with pytest.raises(Conflict, match=f"memory {old.id} is already superseded by {new.id}"):
        lt.memory.supersede(old.id, content="v3")
    assert _everything(lt) == before


def test_supersede_refusals_change_nothing(lt: Lantern) -> None:
    old = lt.memory.add(kind="fact", scope="s", content="v1")
    other = lt.memory.add(kind="fact", scope="s", content="taken")
    before = _everything(lt)
    with pytest.raises(InvalidInput, match="would be identical to"):
        lt.memory.supersede(old.id, priority=90)
    with pytest.raises(Conflict, match=f"already stored as {other.id}"):
        lt.memory.supersede(old.id, content="taken")
    with pytest.raises(InvalidInput, match="names no source"):
        lt.memory.supersede(old.id, content="v2", source_refs=["source:src_0000000000000000"])
    with pytest.raises(InvalidInput, match="kind must be one of"):
        lt.memory.supersede(old.id, content="v2", kind="opinion")
    with pytest.raises(NotFound):
        lt.memory.supersede("mem_0000000000000000", content="v2")
    assert _everything(lt) == before
    assert _events(lt, old.id) == ["created"]


def _fail_when_superseding(lt: Lantern) -> None:
    """A database trigger that fails the second half of a supersede (retiring the old record)."""
    if lt.store.dialect == "sqlite":
        sql(
            lt,
            "CREATE TRIGGER fail_supersede BEFORE UPDATE OF status ON memory_records "
            "WHEN new.status = 'superseded' BEGIN SELECT RAISE(ABORT, 'simulated failure'); END",
        )
        return
    sql(
        lt,
        "CREATE FUNCTION fail_supersede() RETURNS trigger LANGUAGE plpgsql AS "
        "$$ BEGIN RAISE EXCEPTION 'simulated failure'; END $$",
    )
    sql(
        lt,
        "CREATE TRIGGER fail_supersede BEFORE UPDATE ON memory_records FOR EACH ROW "
        "WHEN (NEW.status = 'superseded') EXECUTE FUNCTION fail_supersede()",
    )


def test_a_supersede_that_fails_leaves_both_records_as_they_were(lt: Lantern) -> None:
    old = lt.memory.add(kind="fact", content="The build uses make.", source_refs=["session:m"])
    history_before = lt.memory.history(old.id)
    _fail_when_superseding(lt)
    with pytest.raises(LanternError, match="simulated failure"):
        lt.memory.supersede(old.id, content="The build uses just.", source_refs=["session:j"])
    new_id = memory_id("global", "fact", "The build uses just.")
    assert _everything(lt) == [old]
    assert lt.memory.history(old.id) == history_before
    with pytest.raises(NotFound):
        lt.memory.history(new_id)
    assert _search_ids(lt, "just") == []
    assert lt.memory.citing("session:j") == []
    # The same through `add --supersedes`.
    with pytest.raises(LanternError, match="simulated failure"):
        lt.memory.add(kind="fact", content="The build uses just.", supersedes_id=old.id)
    assert _everything(lt) == [old]


# --- archive, restore --------------------------------------------------------------------------


def test_archive_and_restore_round_trip_with_history(lt: Lantern, clock: Clock) -> None:
    record = lt.memory.add(kind="goal", content="Ship v0")
    clock.advance(10)
    archived = lt.memory.archive(record.id)
    clock.advance(10)
    restored = lt.memory.restore(record.id)
    assert restored.status == "active" and restored.updated_at == clock.now
    assert lt.memory.get(record.id) == restored
    assert lt.memory.restore(record.id) == restored  # restoring an active record: nothing to do
    assert _events(lt, record.id) == ["created", "archived", "restored"]
    assert [e.at for e in lt.memory.history(record.id)] == [
        record.created_at,
        archived.updated_at,
        restored.updated_at,
    ]
    assert lt.memory.history(record.id)[-1].to_json()["changes"] == {
        "after": {"status": "active"},
        "before": {"status": "archived"},
    }


def test_a_superseded_record_cannot_be_restored(lt: Lantern) -> None:
    old = lt.memory.add(kind="fact", content="a")
    new = lt.memory.supersede(old.id, content="b")
    with pytest.raises(Conflict, match=f"superseded by {new.id}; only an archived record"):
        lt.memory.restore(old.id)
    with pytest.raises(NotFound):
        lt.memory.restore("mem_0000000000000000")


# --- expire ------------------------------------------------------------------------------------


def test_expire_archives_active_records_past_their_expiry(lt: Lantern, clock: Clock) -> None:
    now = clock.now
    past = lt.memory.add(kind="task_state", content="past", expires_at=now - 1, priority=10)
    exact = lt.memory.add(kind="task_state", content="exact", expires_at=now, priority=90)
    future = lt.memory.add(kind="task_state", content="future", expires_at=now + 60)
    never = lt.memory.add(kind="task_state", content="never")
    gone = lt.memory.add(kind="task_state", content="archived", expires_at=now - 5)
    lt.memory.archive(gone.id)

    due = lt.memory.expire(dry_run=True)
    assert [r.id for r in due] == [exact.id, past.id]
    assert all(r.status == "active" for r in due)
    assert lt.memory.get(past.id).status == "active"  # a dry run changes nothing

    clock.advance(1)
    expired = lt.memory.expire()
    assert [(r.id, r.status, r.updated_at) for r in expired] == [
        (exact.id, "archived", clock.now),
        (past.id, "archived", clock.now),
    ]
    assert lt.memory.get(past.id) == expired[1]
    assert _events(lt, past.id) == ["created", "expired"]
    assert lt.memory.history(past.id)[-1].to_json()["changes"] == {
        "after": {"status": "archived"},
        "before": {"status": "active"},
    }
    assert lt.memory.get(future.id).status == "active" and lt.memory.get(never.id) == never
    assert _events(lt, gone.id) == ["created", "archived"]
    assert lt.memory.expire() == []
    clock.advance(60)
    assert [r.id for r in lt.memory.expire()] == [future.id]


# --- forget ------------------------------------------------------------------------------------


def test_forget_deletes_the_record_and_leaves_one_entry_without_content(
    lt: Lantern, clock: Clock
) -> None:
    record = lt.memory.add(kind="fact", scope="s", content="api key sk-12345", priority=90)
    lt.memory.update(record.id, add_refs=["session:leak"])
    clock.advance(5)
    report = lt.memory.forget(record.id)
    assert report.id == record.id and report.forgotten_at == clock.now
    assert report.wal_checkpointed is (True if lt.store.dialect == "sqlite" else None)
    with pytest.raises(NotFound):
        lt.memory.get(record.id)
    [entry] = lt.memory.history(record.id)
    assert entry.to_json() == {
        "id": entry.id,
        "record_id": record.id,
        "event": "forgotten",
        "at": clock.now,
        "changes": {"after": None, "before": {"kind": "fact", "scope": "s", "status": "active"}},
    }
    assert _search_ids(lt, "sk") == []
    assert lt.memory.citing("session:leak") == []
    assert table_rows(lt, "memory_refs", "record_id") == []
    stored_changes = [row.changes for row in table_rows(lt, "memory_history", "id")]
    assert "sk-12345" not in repr(stored_changes)
    with pytest.raises(NotFound, match="was already forgotten"):
        lt.memory.forget(record.id)
    with pytest.raises(NotFound, match="no memory record"):
        lt.memory.forget("mem_0000000000000000")
    # The same memory can be stored again; the forgotten entry stays in its history.
    again = lt.memory.add(kind="fact", scope="s", content="api key sk-12345")
    assert again.id == record.id
    assert _events(lt, record.id) == ["forgotten", "created"]


def test_forgetting_a_superseded_record_clears_its_successors_link(
    lt: Lantern, clock: Clock
) -> None:
    first = lt.memory.add(kind="fact", content="v1")
    second = lt.memory.supersede(first.id, content="v2")
    third = lt.memory.supersede(second.id, content="v3")
    clock.advance(5)
    lt.memory.forget(second.id)
    successor = lt.memory.get(third.id)
    assert successor.supersedes_id is None
    assert successor.updated_at == third.updated_at  # its own fields did not change
    assert lt.memory.history(third.id)[-1].to_json()["changes"] == {
        "after": {"supersedes_id": None},
        "before": {"supersedes_id": second.id},
    }
    assert lt.memory.get(first.id).status == "superseded"
    chain = lt.memory.chain(first.id)
    assert chain.replaced_by == ()


# --- history is append-only at the database level -----------------------------------------------


def test_the_database_refuses_to_change_or_remove_history(lt: Lantern) -> None:
    record = lt.memory.add(kind="fact", content="kept")
    lt.memory.archive(record.id)
    before = lt.memory.history(record.id)
    attempts = [
        "UPDATE memory_history SET event = 'restored'",
        "UPDATE memory_history SET changes = '{}'"
        if lt.store.dialect == "sqlite"
        else "UPDATE memory_history SET changes = '{}'::jsonb",
        "DELETE FROM memory_history",
        f"DELETE FROM memory_history WHERE record_id = '{record.id}'",
    ]
    if lt.store.dialect == "postgresql":
        attempts.append("TRUNCATE memory_history")
    for statement in attempts:
        with pytest.raises(LanternError, match="memory_history is append-only"):
            sql(lt, statement)
    assert lt.memory.history(record.id) == before
    # Deleting the record by hand does not open the door either: no `forgotten` entry exists.
    sql(lt, f"DELETE FROM memory_records WHERE id = '{record.id}'")
    with pytest.raises(LanternError, match="append-only"):
        sql(lt, "DELETE FROM memory_history")
    # And the entry `forget` leaves can never be removed.
    other = lt.memory.add(kind="fact", content="gone")
    lt.memory.forget(other.id)
    with pytest.raises(LanternError, match="append-only"):
        sql(lt, f"DELETE FROM memory_history WHERE record_id = '{other.id}'")
    assert [e.event for e in lt.memory.history(other.id)] == ["forgotten"]


def test_history_is_complete_for_a_whole_life(lt: Lantern, clock: Clock) -> None:
    record = lt.memory.add(kind="goal", content="g1", expires_at=clock.now + 10)
    clock.advance()
    lt.memory.update(record.id, priority=70)
    clock.advance()
    lt.memory.archive(record.id)
    clock.advance()
    lt.memory.restore(record.id)
    clock.advance(20)
    lt.memory.expire()
    clock.advance()
    lt.memory.restore(record.id)
    clock.advance()
    new = lt.memory.supersede(record.id, content="g2")
    clock.advance()
    lt.memory.forget(new.id)
    entries = lt.memory.history(record.id)
    assert [e.event for e in entries] == [
        "created",
        "updated",
        "archived",
        "restored",
        "expired",
        "restored",
        "superseded",
    ]
    assert [e.at for e in entries] == sorted(e.at for e in entries)
    assert [e.id for e in entries] == sorted(e.id for e in entries)
    assert [e.event for e in lt.memory.history(new.id)] == ["forgotten"]


def test_history_of_an_unknown_id_is_not_found(lt: Lantern) -> None:
    with pytest.raises(NotFound, match="no memory record with id 'mem_0000000000000000'"):
        lt.memory.history("mem_0000000000000000")


# --- the supersede chain -----------------------------------------------------------------------


def test_chain_shows_what_a_record_replaced_and_what_replaced_it(lt: Lantern) -> None:
    v1 = lt.memory.add(kind="fact", content="v1")
    v2 = lt.memory.supersede(v1.id, content="v2")
    v3 = lt.memory.supersede(v2.id, content="v3")
    v4 = lt.memory.supersede(v3.id, content="v4")
    middle = lt.memory.chain(v2.id)
    assert middle.record == lt.memory.get(v2.id)
    assert middle.replaces == (v1.id,)
    assert middle.replaced_by == (v3.id, v4.id)
    assert lt.memory.chain(v4.id).replaces == (v3.id, v2.id, v1.id)
    assert lt.memory.chain(v1.id).replaced_by == (v2.id, v3.id, v4.id)
    lone = lt.memory.add(kind="fact", content="alone")
    assert (lt.memory.chain(lone.id).replaces, lt.memory.chain(lone.id).replaced_by) == ((), ())
    assert list(middle.to_json())[-2:] == ["replaces", "replaced_by"]


# --- references to evidence --------------------------------------------------------------------


def test_source_and_chunk_references_must_resolve_unless_allowed(lt: Lantern) -> None:
    sid, (c0, c1) = add_source(lt, "file:///notes/a.md", ["alpha text", "beta text"])
    record = lt.memory.add(
        kind="fact",
        content="cites evidence",
        source_refs=[f"chunk:{c0}", f"source:{sid}", "session:free-form", "url:https://x.org"],
    )
    assert len(record.source_refs) == 4
    for bad, message in [
        ("chunk:chk_0000000000000000", "reference chunk:chk_0000000000000000 names no chunk"),
        ("source:src_0000000000000000", "names no source"),
        ('{"type": "chunk", "note": "no id"}', "a chunk reference needs a string id"),
    ]:
        with pytest.raises(InvalidInput, match=message):
            lt.memory.add(kind="fact", content=f"bad {bad}", source_refs=[bad])
    assert [r.id for r in _everything(lt)] == [record.id]
    dangling = lt.memory.add(
        kind="fact",
        content="dangles",
        source_refs=["chunk:chk_0000000000000000"],
        allow_dangling=True,
    )
    assert [dict(ref) for ref in dangling.source_refs] == [
        {"id": "chk_0000000000000000", "type": "chunk"}
    ]
    updated = lt.memory.update(record.id, add_refs=[f"chunk:{c1}"])
    assert {"id": c1, "type": "chunk"} in [dict(ref) for ref in updated.source_refs]


def test_citing_and_check_refs(lt: Lantern, clock: Clock) -> None:
    sid, (c0, c1) = add_source(lt, "file:///notes/b.md", ["one", "two"])
    direct = lt.memory.add(kind="fact", content="cites the source", source_refs=[f"source:{sid}"])
    via_chunk = lt.memory.add(
        kind="fact", content="cites a chunk", priority=90, source_refs=[f"chunk:{c1}"]
    )
    archived = lt.memory.add(kind="fact", content="old", source_refs=[f"chunk:{c1}"])
    lt.memory.archive(archived.id)
    lt.memory.add(kind="fact", content="cites nothing")
    assert [r.id for r in lt.memory.citing(f"chunk:{c1}")] == [via_chunk.id, archived.id]
    assert [r.id for r in lt.memory.citing(f"chunk:{c1}", status="active")] == [via_chunk.id]
    assert [r.id for r in lt.memory.citing(f"source:{sid}")] == [direct.id]
    assert {r.id for r in lt.memory.citing(f"source:{sid}", through_chunks=True)} == {
        direct.id,
        via_chunk.id,
        archived.id,
    }
    assert lt.memory.citing(f"chunk:{c0}") == []
    assert [r.id for r in lt.memory.list(cites=f"chunk:{c1}")] == [via_chunk.id]
    assert lt.memory.check_refs() == []
    remove_source(lt, sid)
    assert [item.to_json() for item in lt.memory.check_refs()] == sorted(
        [
            {"record_id": direct.id, "type": "source", "id": sid},
            {"record_id": via_chunk.id, "type": "chunk", "id": c1},
            {"record_id": archived.id, "type": "chunk", "id": c1},
        ],
        key=lambda item: (item["record_id"], item["type"], item["id"]),
    )
    with pytest.raises(InvalidInput, match="needs an id"):
        lt.memory.citing('{"type": "session"}')
    with pytest.raises(InvalidInput, match="must be TYPE:ID"):
        lt.memory.citing("session")


def test_every_sqlite_memory_write_turns_secure_delete_on(lt: Lantern) -> None:
    """Every memory write turns `secure_delete` on (SQLite), whatever the build's default."""
    if lt.store.dialect != "sqlite":
        pytest.skip("secure_delete is a SQLite setting")
    with lt.store.write() as conn:
        conn.exec_driver_sql("PRAGMA secure_delete = OFF")
    lt.memory.add(kind="fact", content="x")
    with lt.store.read() as conn:
        assert conn.execute(text("PRAGMA secure_delete")).scalar_one() == 1


def test_a_created_entry_is_stored_in_canonical_key_order(lt: Lantern) -> None:
    # The entry is built in that order directly (not re-ordered): it must equal the re-ordered.
    refs = [{"type": "url", "id": "https://x", "zeta": 1, "é": 2, "ab": {"yy": 1, "b": 2}}]
    record = lt.memory.add(kind="fact", content="canonical", source_refs=refs)
    entry = history.created(record)
    assert json.dumps(entry["changes"]) == json.dumps(canonical_json(entry["changes"]))
