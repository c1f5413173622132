"""Memory records through the Python API: add, get, list, archive, and their rules."""

from __future__ import annotations

import pytest

from lantern.api import Lantern
from lantern.errors import Conflict, InvalidInput, NotFound
from lantern.memory.records import MemoryRecord
from lantern.store.ids import memory_id
from tests.helpers import Clock


def test_add_returns_the_stored_record(lt: Lantern, clock: Clock) -> None:
    record = lt.memory.add(
        kind="preference",
        scope="user:raphael",
        content="Raphael prefers separate branches on his repos.",
        priority=90,
        confidence=1.0,
        source_refs=["session:abc", {"type": "url", "id": "https://example.org"}],
    )
    assert record == MemoryRecord(
        id=memory_id(
            "user:raphael", "preference", "Raphael prefers separate branches on his repos."
        ),
        kind="preference",
        content="Raphael prefers separate branches on his repos.",
        scope="user:raphael",
        priority=90,
        urgency=0,
        confidence=1.0,
        status="active",
        created_at=clock.now,
        updated_at=clock.now,
        expires_at=None,
        supersedes_id=None,
        source_refs=record.source_refs,
    )
    assert [dict(ref) for ref in record.source_refs] == [
        {"id": "abc", "type": "session"},
        {"id": "https://example.org", "type": "url"},
    ]
    assert lt.memory.get(record.id) == record


def test_defaults(lt: Lantern) -> None:
    record = lt.memory.add(kind="fact", content="The sky is blue.")
    assert (record.scope, record.priority, record.urgency, record.confidence) == (
        "global",
        50,
        0,
        1.0,
    )
    assert record.expires_at is None and record.source_refs == ()


def test_adding_the_same_memory_again_returns_the_stored_one_unchanged(
    lt: Lantern, clock: Clock
) -> None:
    first = lt.memory.add(kind="goal", scope="project:lantern", content="Ship v0", priority=80)
    lt.memory.archive(first.id)
    clock.now += 100
    again, created = lt.memory.get_or_add(
        kind="goal", scope="project:lantern", content="  Ship\n\tv0 ", priority=10
    )
    assert not created
    assert again.id == first.id
    assert again.status == "archived" and again.priority == 80
    assert again.content == "Ship v0"
    assert len(lt.memory.list(status="all")) == 1


def test_created_flag_is_true_for_a_new_record(lt: Lantern) -> None:
    _record, created = lt.memory.get_or_add(kind="fact", content="new")
    assert created


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("kind", "opinion", "kind must be one of fact, preference, goal"),
        ("content", "", "content must not be empty"),
        ("content", "  \n\t ", "content must not be empty"),
        ("content", "x" * 100_001, "content is too long"),
        ("content", "a\x00b", "NUL"),
        ("content", "lone \ud800 surrogate", "not valid UTF-8"),
        ("scope", "", "scope must not be empty"),
        ("scope", " padded", "surrounding whitespace"),
        ("priority", 101, "priority must be an integer from 0 to 100"),
        ("priority", -1, "priority must be an integer from 0 to 100"),
        ("priority", 5.5, "priority must be an integer"),
        ("priority", True, "priority must be an integer"),
        ("urgency", 1000, "urgency must be an integer from 0 to 100"),
        ("confidence", 1.5, "confidence must be a number from 0.0 to 1.0"),
        ("confidence", float("nan"), "confidence must be a number"),
        ("confidence", "high", "confidence must be a number"),
        ("expires_at", "tomorrow", "expires_at must be unix seconds or an ISO-8601 time"),
        ("expires_at", 10**20, "expires_at is out of range"),
        # Numbers too long for Python to print or parse (past 4,300 digits) are refused too.
        pytest.param(
            "expires_at", "9" * 5_000, r"expires_at is out of range: 9{30}\.\.\.$", id="digits"
        ),
        pytest.param(
            "expires_at", 10**5_000, "out of range: an integer of 16610 bits", id="huge-time"
        ),
        pytest.param("priority", 10**5_000, "from 0 to 100; got an integer", id="huge-priority"),
        pytest.param("confidence", -(10**5_000), "0.0 to 1.0; got an", id="huge-confidence"),
        ("source_refs", ["chunk"], "source reference must be TYPE:ID"),
        ("source_refs", ["{not json"], "not valid JSON"),
        ("source_refs", [{"id": "x"}], "needs a non-empty string 'type'"),
        ("source_refs", ["[1, 2]"], "must be TYPE:ID"),
        ("supersedes_id", "mem_0000000000000000", "no memory record"),
    ],
)
def test_bad_input_is_refused_and_changes_nothing(
    lt: Lantern, field: str, value: object, message: str
) -> None:
    kwargs: dict[str, object] = {"kind": "fact", "content": "valid", field: value}
    with pytest.raises((InvalidInput, NotFound), match=message):
        lt.memory.add(**kwargs)  # type: ignore[arg-type]
    assert lt.memory.list(status="all", include_expired=True) == []


def test_expires_at_accepts_unix_seconds_and_iso_8601(lt: Lantern) -> None:
    iso = lt.memory.add(kind="fact", content="a", expires_at="2030-01-01T00:00:00Z")
    naive = lt.memory.add(kind="fact", content="b", expires_at="2030-01-01T00:00:00")
    offset = lt.memory.add(kind="fact", content="c", expires_at="2030-01-01T02:00:00+02:00")
    digits = lt.memory.add(kind="fact", content="d", expires_at="1893456000")
    number = lt.memory.add(kind="fact", content="e", expires_at=1893456000)
    assert {r.expires_at for r in (iso, naive, offset, digits, number)} == {1893456000}


def test_source_ref_short_form_and_json_form(lt: Lantern) -> None:
    record = lt.memory.add(
        kind="fact",
        content="cited",
        source_refs=[
            "chunk:chk_0123456789abcdef",
            '{"type": "file", "path": "/tmp/x", "line": 3}',
            "chunk:chk_0123456789abcdef",
        ],
        allow_dangling=True,  # no such chunk in this store
    )
    assert [dict(ref) for ref in record.source_refs] == [
        {"id": "chk_0123456789abcdef", "type": "chunk"},
        {"line": 3, "path": "/tmp/x", "type": "file"},
    ]


def test_get_unknown_id_is_not_found(lt: Lantern) -> None:
    with pytest.raises(NotFound, match="no memory record with id 'mem_nope'"):
        lt.memory.get("mem_nope")


def test_archive_keeps_the_record_and_is_idempotent(lt: Lantern, clock: Clock) -> None:
    record = lt.memory.add(kind="task_state", content="step 3 of 5")
    clock.now += 10
    archived = lt.memory.archive(record.id)
    assert archived.status == "archived"
    assert archived.updated_at == clock.now and archived.created_at == record.created_at
    clock.now += 10
    assert lt.memory.archive(record.id) == archived
    assert lt.memory.list() == []
    assert lt.memory.list(status="archived") == [archived]


def test_archive_unknown_id_is_not_found(lt: Lantern) -> None:
    with pytest.raises(NotFound):
        lt.memory.archive("mem_0000000000000000")


def test_add_with_supersedes_retires_the_old_record_in_the_same_write(
    lt: Lantern, clock: Clock
) -> None:
    old = lt.memory.add(kind="fact", content="The build uses make.")
    clock.now += 5
    new = lt.memory.add(kind="fact", content="The build uses just.", supersedes_id=old.id)
    assert new.supersedes_id == old.id
    replaced = lt.memory.get(old.id)
    assert replaced.status == "superseded" and replaced.updated_at == clock.now
    with pytest.raises(Conflict, match=f"already superseded by {new.id}"):
        lt.memory.add(kind="fact", content="The build uses bazel.", supersedes_id=old.id)
    with pytest.raises(Conflict, match=f"superseded by {new.id}"):
        lt.memory.archive(old.id)
    assert len(lt.memory.list(status="all")) == 2


def _add_at(lt: Lantern, clock: Clock, at: int, **fields: object) -> MemoryRecord:
    clock.now = at
    return lt.memory.add(**fields)  # type: ignore[arg-type]


def test_default_order_breaks_every_tie(lt: Lantern, clock: Clock) -> None:
    """Active first, then priority, urgency, newer updated_at, and id ascending."""
    base = 1_800_000_000
    a = _add_at(lt, clock, base, kind="fact", content="p50 u0 old", priority=50)
    b = _add_at(lt, clock, base + 10, kind="fact", content="p50 u0 new", priority=50)
    c = _add_at(lt, clock, base, kind="fact", content="p50 u5", priority=50, urgency=5)
    d = _add_at(lt, clock, base, kind="fact", content="p90", priority=90)
    same_time = [
        _add_at(lt, clock, base + 10, kind="fact", content=f"twin {n}", priority=50)
        for n in range(3)
    ]
    archived = _add_at(lt, clock, base, kind="fact", content="archived p100", priority=100)
    clock.now = base + 20
    lt.memory.archive(archived.id)
    twins = sorted([b, *same_time], key=lambda r: r.id)
    expected_active = [d.id, c.id, *(r.id for r in twins), a.id]
    assert [r.id for r in lt.memory.list()] == expected_active
    assert [r.id for r in lt.memory.list(status="all")] == [*expected_active, archived.id]


def test_filters_scope_kind_status_limit_offset(lt: Lantern) -> None:
    lt.memory.add(kind="fact", scope="user:a", content="one", priority=10)
    lt.memory.add(kind="goal", scope="user:a", content="two", priority=20)
    lt.memory.add(kind="fact", scope="user:b", content="three", priority=30)
    lt.memory.add(kind="fact", scope="project:x", content="four", priority=40)
    assert [r.content for r in lt.memory.list(scope="user:a")] == ["two", "one"]
    assert [r.content for r in lt.memory.list(scope=["user:a", "user:b"])] == [
        "three",
        "two",
        "one",
    ]
    assert [r.content for r in lt.memory.list(kind="fact")] == ["four", "three", "one"]
    assert [r.content for r in lt.memory.list(kind=["goal"], scope="user:a")] == ["two"]
    assert [r.content for r in lt.memory.list(limit=2)] == ["four", "three"]
    assert [r.content for r in lt.memory.list(limit=2, offset=2)] == ["two", "one"]
    assert lt.memory.list(scope="user:none") == []
    assert lt.memory.list(status="superseded") == []


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"status": "deleted"}, "status must be one of active, archived, superseded, all"),
        ({"kind": "nope"}, "kind must be one of"),
        ({"limit": 0}, "limit must be an integer from 1"),
        ({"offset": -1}, "offset must be a non-negative integer"),
        ({"scope": ""}, "scope must not be empty"),
    ],
)
def test_list_rejects_bad_filters(lt: Lantern, kwargs: dict[str, object], message: str) -> None:
    with pytest.raises(InvalidInput, match=message):
        lt.memory.list(**kwargs)  # type: ignore[arg-type]


def test_expired_records_are_left_out_unless_asked(lt: Lantern, clock: Clock) -> None:
    past = lt.memory.add(kind="task_state", content="expired", expires_at=clock.now - 1)
    now_exact = lt.memory.add(kind="task_state", content="expiring now", expires_at=clock.now)
    future = lt.memory.add(kind="task_state", content="later", expires_at=clock.now + 3600)
    assert past.status == "active"
    assert [r.id for r in lt.memory.list()] == [future.id]
    listed = {r.id for r in lt.memory.list(include_expired=True)}
    assert listed == {past.id, now_exact.id, future.id}
