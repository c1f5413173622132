"""`add_many`: many records in one transaction, with the same rules as `add`."""

from __future__ import annotations

import pytest

from lantern.api import Lantern
from lantern.errors import InvalidInput


def test_add_many_writes_everything_add_writes(lt: Lantern) -> None:
    results = lt.memory.add_many(
        [
            {"kind": "fact", "content": "one", "scope": "bulk", "priority": 70},
            {"kind": "goal", "content": "two", "scope": "bulk", "source_refs": ["session:s1"]},
        ]
    )
    assert [created for _record, created in results] == [True, True]
    records = [record for record, _created in results]
    assert lt.memory.list(scope="bulk") == records
    for record in records:
        assert lt.memory.get(record.id) == record
        assert [entry.event for entry in lt.memory.history(record.id)] == ["created"]
    assert [m.record.id for m in lt.memory.search("two")] == [records[1].id]
    assert [r.id for r in lt.memory.citing("session:s1")] == [records[1].id]


def test_add_many_returns_existing_and_repeated_records_unchanged(lt: Lantern) -> None:
    stored = lt.memory.add(kind="fact", content="already here", priority=10)
    results = lt.memory.add_many(
        [
            {"kind": "fact", "content": "already  here", "priority": 99},
            {"kind": "fact", "content": "new"},
            {"kind": "fact", "content": "new", "priority": 1},
        ]
    )
    assert [created for _r, created in results] == [False, True, False]
    assert results[0][0] == stored
    assert results[1][0] == results[2][0]
    assert len(lt.memory.list(status="all")) == 2
    # Only the record that went in got its search and history rows.
    assert [len(lt.memory.history(r.id)) for r, _ in results[:2]] == [1, 1]
    assert [m.record.id for m in lt.memory.search("new")] == [results[1][0].id]
    assert [m.record.id for m in lt.memory.search("already")] == [stored.id]


@pytest.mark.parametrize(
    ("records", "message"),
    [
        ([{"kind": "fact", "content": "ok"}, {"kind": "nope", "content": "x"}], "record 1: kind"),
        ([{"kind": "fact"}], "record 0: kind and content are required"),
        ([{"kind": "fact", "content": "x", "colour": "red"}], r"unknown field\(s\) colour"),
        ([{"kind": "fact", "content": "x", "supersedes_id": "mem_1"}], "does not supersede"),
        ([{"kind": "fact", "content": "x", "source_refs": ["chunk:chk_missing"]}], "chk_missing"),
        (["not a mapping"], "record 0: must be a mapping"),
    ],
)
def test_one_bad_record_writes_nothing(lt: Lantern, records: list[object], message: str) -> None:
    with pytest.raises(InvalidInput, match=message):
        lt.memory.add_many(records)  # type: ignore[arg-type]
    assert lt.memory.list(status="all", include_expired=True) == []
