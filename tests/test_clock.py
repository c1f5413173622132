"""One clock: every time a store writes, and the "now" it judges expiry by, come from the clock
it was opened with (`Lantern.open(clock=...)`), on every engine under test."""

from __future__ import annotations

import ast
import json

import pytest

from lantern.api import Lantern
from lantern.memory.scopes import ScopePolicy
from tests.helpers import REPO_ROOT, CliRun, Clock
from tests.memory_helpers import sql

FAR = 3_000_000_000
"""A time no test machine has reached: a store that read the real time would be far behind."""

PAST = 1_000_000_000
"""A time every test machine has passed: a store that read the real time would be far ahead."""


@pytest.fixture(autouse=True)
def hashing(monkeypatch: pytest.MonkeyPatch) -> None:
    """Vectors are made by the hashing provider, which needs no model."""
    monkeypatch.setenv("LANTERN_EMBED_MODEL", "hashing")


def test_every_stored_time_is_the_clocks(lt: Lantern, clock: Clock) -> None:
    clock.now = FAR
    lt.set_embedding_settings(on_write=True)
    record = lt.memory.add(kind="fact", content="Ada lives in Paris", expires_at=FAR + 10)
    assert (record.created_at, record.updated_at) == (FAR, FAR)
    vector_times = "SELECT created_at FROM memory_embeddings WHERE memory_id = :id"
    assert sql(lt, vector_times, id=record.id) == [(FAR,)]

    clock.advance(5)
    lt.memory.attach_entities(record.id, ["person:Ada"])
    assert lt.memory.get(record.id).updated_at == FAR + 5

    clock.advance(5)
    revised = lt.memory.update(record.id, content="Ada lives in Lyon")
    assert revised.updated_at == FAR + 10
    assert sql(lt, vector_times, id=record.id) == [(FAR + 10,)]
    assert [entry.at for entry in lt.memory.history(record.id)] == [FAR, FAR + 5, FAR + 10]

    source = lt.evidence.ingest_text("doc:clock", "What the clock says.").source
    assert (source.created_at, source.updated_at) == (FAR + 10, FAR + 10)

    clock.advance(100)  # past the record's expiry by the clock, long before it by the real time
    assert lt.memory.list() == []
    assert lt.memory.list(include_expired=True)[0].id == record.id
    read_only = lt.restricted(scopes=ScopePolicy.of(None), read_only=True)
    assert read_only.memory.list() == []
    assert lt.inspect().to_json()["memories"]["expired_active"] == 1
    [expired] = lt.memory.expire()
    assert (expired.status, expired.updated_at) == ("archived", FAR + 110)


def test_expiry_is_judged_by_the_clock_not_the_real_time(lt: Lantern, clock: Clock) -> None:
    clock.now = PAST
    kept = lt.memory.add(kind="fact", content="due in 2017", expires_at=1_500_000_000)
    assert [record.id for record in lt.memory.list()] == [kept.id]
    assert lt.memory.expire() == []
    assert lt.inspect().to_json()["memories"]["expired_active"] == 0


def test_the_cli_runs_on_the_clock_it_is_given(run_cli: CliRun, clock: Clock) -> None:
    clock.now = FAR
    added = run_cli("memory", "add", "--kind", "fact", "--json", "x")
    assert added.exit_code == 0, added.output
    assert json.loads(added.stdout)["created_at"] == FAR


def test_only_the_store_reads_the_system_time() -> None:
    """Below the surfaces, the time comes from the store's clock: no module calls the system
    clock but `lantern.store.engine` (the default clock) and `lantern.store.migrations` (the
    name of a backup file, which is not stored data)."""
    readers = {("time", "time"), ("time", "time_ns"), ("datetime", "now"), ("datetime", "utcnow")}
    readers |= {("date", "today"), ("time", "gmtime"), ("time", "localtime")}
    allowed = {"store/engine.py", "store/migrations.py"}
    surfaces = ("cli/", "mcpserver/", "ui/")
    found = []
    for path in sorted((REPO_ROOT / "lantern").rglob("*.py")):
        relative = path.relative_to(REPO_ROOT / "lantern").as_posix()
        if relative in allowed or relative.startswith(surfaces):
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and isinstance(node.func.value, ast.Name)
                and (node.func.value.id, node.func.attr) in readers
                and not node.args
            ):
                found.append(f"{relative}:{node.lineno}")
    assert found == []
