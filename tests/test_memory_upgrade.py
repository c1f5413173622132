"""Revision 0005 on stores that already hold memory records (made at 0003/0004): they get
search rows and reference rows, an empty history, and everything works on them afterwards."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from types import ModuleType
from typing import Any

from sqlalchemy import Engine, text

from alembic import command
from lantern.api import Lantern
from lantern.memory.fts import fts_rowid
from lantern.memory.identity import claim_order
from lantern.store import migrations
from lantern.store.engine import create_store_engine, prepare_sqlite_file
from lantern.store.ids import memory_id, memory_identity
from lantern.store.location import resolve
from lantern.store.models import memory_records
from tests.legacy_stores import build_legacy_store

OLD_RECORDS = [
    ("mem_00000000000000a1", "The vault opens with brass keys.", [{"id": "s1", "type": "session"}]),
    ("mem_ffffffffffffffff", "Lanterns need oil.", [{"id": "chk_x", "type": "chunk"}]),
    ("mem_8000000000000000", "Wicks are trimmed daily.", []),
]


def _store_at(url: str, revision: str) -> None:
    location = resolve(url)
    config = migrations.alembic_config(migrations._Options(location=location, backup=False))
    command.upgrade(config, revision)


def _insert_old(engine: Engine, rows: list[dict[str, Any]]) -> None:
    """Facts of scope "old", written straight into `memory_records` as an older Lantern did."""
    defaults = {"kind": "fact", "scope": "old", "priority": 50, "urgency": 0, "confidence": 1.0}
    with engine.begin() as conn:
        for row in rows:
            conn.execute(memory_records.insert().values(**defaults, **row))


def _engine(url: str) -> Engine:
    location = resolve(url)
    if location.path is not None:
        prepare_sqlite_file(location.path)
    return create_store_engine(location)


def _add_old_records(url: str) -> None:
    engine = _engine(url)
    try:
        _insert_old(
            engine,
            [
                {
                    "id": record_id,
                    "content": content,
                    "status": "active",
                    "created_at": 1_700_000_000,
                    "updated_at": 1_700_000_000,
                    "source_refs": refs,
                }
                for record_id, content, refs in OLD_RECORDS
            ],
        )
    finally:
        engine.dispose()


def _revision_module(name: str = "0005_memory_history_and_search") -> ModuleType:
    path = migrations.script_location() / "versions" / f"{name}.py"
    spec = importlib.util.spec_from_file_location(f"revision_{name[:4]}", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_revision_derives_search_rowids_as_the_repository_does() -> None:
    revision = _revision_module()
    for record_id in [
        *(record_id for record_id, _c, _r in OLD_RECORDS),
        "mem_0123456789abcdef",
        "mem_7fffffffffffffff",
        "not-a-mem-id",
        "mem_ABCDEF0123456789",
    ]:
        assert revision._fts_rowid(record_id) == fts_rowid(record_id)
    assert fts_rowid("mem_ffffffffffffffff") == -1
    assert fts_rowid("mem_8000000000000000") == -(1 << 63)


def test_records_made_before_0005_are_searchable_citable_and_forgettable(store_url: str) -> None:
    _store_at(store_url, "0004")
    _add_old_records(store_url)
    migrations.upgrade(resolve(store_url), backup=False)
    with Lantern.open(store_url) as lt:
        assert lt.status().revision == migrations.HEAD
        assert [m.record.id for m in lt.memory.search("brass")] == ["mem_00000000000000a1"]
        assert [m.record.id for m in lt.memory.search("oil")] == ["mem_ffffffffffffffff"]
        assert [r.id for r in lt.memory.citing("session:s1")] == ["mem_00000000000000a1"]
        assert [(d.record_id, d.id) for d in lt.memory.check_refs()] == [
            ("mem_ffffffffffffffff", "chk_x")
        ]
        assert lt.memory.history("mem_00000000000000a1") == []
        if lt.store.dialect == "sqlite":
            with lt.store.read() as conn:
                rows = conn.execute(text("SELECT rowid, record_id FROM memory_fts")).all()
            assert sorted(rows) == sorted((fts_rowid(r), r) for r, _c, _s in OLD_RECORDS)
        updated = lt.memory.update("mem_8000000000000000", content="Wicks are trimmed weekly.")
        assert [e.event for e in lt.memory.history(updated.id)] == ["updated"]
        assert [m.record.id for m in lt.memory.search("weekly")] == [updated.id]
        assert lt.memory.search("daily") == []
        lt.memory.forget("mem_ffffffffffffffff")
        assert lt.memory.search("oil") == [] and lt.memory.check_refs() == []


def test_0005_downgrades_cleanly_and_keeps_the_records(store_url: str) -> None:
    _store_at(store_url, "0004")
    _add_old_records(store_url)
    migrations.upgrade(resolve(store_url), backup=False)
    with Lantern.open(store_url) as lt:
        lt.memory.add(kind="fact", content="added at 0005", source_refs=["session:new"])
    config = migrations.alembic_config(
        migrations._Options(location=resolve(store_url), backup=False)
    )
    command.downgrade(config, "0004")
    with Lantern.open(store_url, require_current=False) as lt:
        assert lt.status().revision == "0004"
        with lt.store.read() as conn:
            rows = conn.execute(text("SELECT id, source_refs FROM memory_records ORDER BY id"))
            stored = {record_id: refs for record_id, refs in rows}
            names = set(migrations._table_names(conn))
    assert len(stored) == 4
    assert not names & {"memory_history", "memory_refs", "memory_fts"}
    old_ids = {record_id for record_id, _content, _refs in OLD_RECORDS}
    added = [refs for record_id, refs in stored.items() if record_id not in old_ids]
    assert [json.loads(r) if isinstance(r, str) else r for r in added] == [
        [{"id": "new", "type": "session"}]
    ]
    migrations.upgrade(resolve(store_url), backup=False)
    with Lantern.open(store_url) as lt:
        assert len(lt.memory.search("added")) == 1


def test_a_legacy_store_upgrades_through_0005(tmp_path: Path) -> None:
    path = tmp_path / "legacy.db"
    build_legacy_store(path, 1, awkward=False)
    migrations.upgrade(resolve(str(path)), backup=False)
    with Lantern.open(path) as lt:
        record = lt.memory.add(kind="fact", content="new after the upgrade")
        assert [m.record.id for m in lt.memory.search("upgrade")] == [record.id]
        assert [e.event for e in lt.memory.history(record.id)] == ["created"]


# --- revision 0006: identities -----------------------------------------------------------------


def test_revision_0006_derives_identities_and_holders_as_the_repository_does() -> None:
    revision = _revision_module("0006_memory_identity")
    for scope, kind, content in [
        ("global", "fact", "The sky is blue."),
        ("user:ada", "goal", "  Ship\tv0 \n now "),
        ("p", "constraint", "naïve café ✓"),
    ]:
        assert revision._identity(scope, kind, content) == memory_identity(scope, kind, content)
    key = memory_identity("global", "fact", "x")
    for args in [
        ("mem_" + key, key, "superseded", 9),
        ("mem_0000000000000001", key, "active", 5),
        ("mem_0000000000000002", key, "archived", 1),
        ("mem_0000000000000003", key, "odd", 1),
    ]:
        assert revision._claim_order(*args) == claim_order(*args)


# Records of a store made before 0006: one that was updated to the text of another, and ones
# added again after such updates (scope "old", kind "fact").
SAID_TWICE = [
    # (id, content, status, created_at)
    (memory_id("old", "fact", "alpha"), "beta", "active", 100),  # updated from alpha
    (memory_id("old", "fact", "beta"), "beta", "archived", 200),  # beta's own id: holds it
    ("mem_00000000000000c1", "beta", "active", 50),
    ("mem_00000000000000c2", "two", "superseded", 10),
    ("mem_00000000000000c3", "two", "active", 300),  # active first: holds it
    ("mem_00000000000000c4", "alone", "active", 1),
]


def test_0006_keeps_every_record_that_says_the_same_and_lists_them(store_url: str) -> None:
    _store_at(store_url, "0004")
    location = resolve(store_url)
    engine = _engine(store_url)
    try:
        _insert_old(
            engine,
            [
                {"id": record_id, "content": content, "status": status,
                 "created_at": at, "updated_at": at, "source_refs": []}
                for record_id, content, status, at in SAID_TWICE
            ],
        )  # fmt: skip
        columns = ", ".join(c.name for c in memory_records.c if c.name != "identity_hash")
        query = text(f"SELECT {columns} FROM memory_records ORDER BY id")
        with engine.connect() as conn:
            before = conn.execute(query).all()
        migrations.upgrade(location, backup=False)
        with engine.connect() as conn:
            assert conn.execute(query).all() == before  # nothing changed, nothing lost
            held: dict[str, str] = dict(
                conn.execute(text("SELECT id, identity_hash FROM memory_records")).all()
            )
    finally:
        engine.dispose()
    beta, two = memory_identity("old", "fact", "beta"), memory_identity("old", "fact", "two")
    assert held == {
        SAID_TWICE[0][0]: None,
        SAID_TWICE[1][0]: beta,
        "mem_00000000000000c1": None,
        "mem_00000000000000c2": None,
        "mem_00000000000000c3": two,
        "mem_00000000000000c4": memory_identity("old", "fact", "alone"),
    }
    with Lantern.open(store_url) as lt:
        report = lt.check()
        assert report.healthy and report.problems == []
        assert report.warnings == [
            f"duplicate_memories: {first} says what {second} says (same scope, kind and "
            "content); archive, supersede or forget one of them"
            for first, second in sorted(
                [
                    ("mem_00000000000000c1", SAID_TWICE[1][0]),
                    ("mem_00000000000000c2", "mem_00000000000000c3"),
                    (SAID_TWICE[0][0], SAID_TWICE[1][0]),
                ]
            )
        ]
        assert (
            lt.memory.get_or_add(kind="fact", scope="old", content="beta")[0].id
            == (SAID_TWICE[1][0])
        )
        alpha, created = lt.memory.get_or_add(kind="fact", scope="old", content="alpha")
        assert created and alpha.id == memory_id("old", "fact", "alpha", 1)
    # Down and up again: the same identities.
    command.downgrade(migrations.alembic_config(migrations._Options(location=location)), "0005")
    migrations.upgrade(location, backup=False)
    with Lantern.open(store_url) as lt, lt.store.read() as conn:
        again: dict[str, str] = dict(
            conn.execute(text("SELECT id, identity_hash FROM memory_records")).all()
        )
    assert again == {**held, alpha.id: memory_identity("old", "fact", "alpha")}
