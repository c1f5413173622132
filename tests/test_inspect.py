"""`lantern inspect`: the store at a glance, through the API, the CLI and the executable."""

from __future__ import annotations

import json

from lantern.api import Lantern
from lantern.store import migrations
from tests.helpers import BASE_TIME, CliRun, Clock, ProcessRun
from tests.memory_helpers import add_source, remove_source

INSPECT_KEYS = [
    "url",
    "path",
    "size_bytes",
    "revision",
    "journal_mode",
    "sources",
    "chunks",
    "memories",
    "dangling_refs",
    "history_entries",
    "last_write_at",
]
MEMORY_KEYS = ["total", "by_kind", "by_status", "top_scopes", "expired_active"]


def test_an_empty_store(lt: Lantern) -> None:
    found = lt.inspect().to_json()
    assert list(found) == INSPECT_KEYS and list(found["memories"]) == MEMORY_KEYS
    sqlite = lt.store.dialect == "sqlite"
    assert found["revision"] == migrations.HEAD
    assert found["journal_mode"] == ("wal" if sqlite else None)
    assert (found["path"] is not None) is sqlite
    assert found["size_bytes"] > 0
    assert found["memories"] == {
        "total": 0,
        "by_kind": dict.fromkeys(
            ["fact", "preference", "goal", "constraint", "task_state", "observation", "hypothesis"],
            0,
        ),
        "by_status": {"active": 0, "archived": 0, "superseded": 0},
        "top_scopes": [],
        "expired_active": 0,
    }
    assert (found["sources"], found["chunks"], found["dangling_refs"]) == (0, 0, 0)
    assert (found["history_entries"], found["last_write_at"]) == (0, None)


def test_counts_attention_and_last_write(lt: Lantern, clock: Clock) -> None:
    sid, (chunk, _second) = add_source(lt, "file:///x.md", ["a", "b"], at=BASE_TIME - 50)
    for n in range(3):
        lt.memory.add(kind="fact", scope="busy", content=f"b{n}")
    lt.memory.add(kind="goal", scope="alpha", content="a1")
    lt.memory.add(kind="goal", scope="zeta", content="z1")
    lt.memory.add(kind="goal", scope="zeta", content="z2", expires_at=clock.now - 1)
    cited = lt.memory.add(
        kind="fact", scope="alpha", content="cites", source_refs=[f"chunk:{chunk}"]
    )
    old = lt.memory.add(kind="hypothesis", scope="busy", content="h1")
    clock.advance(30)
    lt.memory.supersede(old.id, content="h2")
    remove_source(lt, sid)
    found = lt.inspect().to_json()
    assert (found["sources"], found["chunks"]) == (0, 0)
    memories = found["memories"]
    assert memories["total"] == 9
    assert memories["by_kind"]["fact"] == 4 and memories["by_kind"]["hypothesis"] == 2
    assert memories["by_status"] == {"active": 8, "archived": 0, "superseded": 1}
    assert memories["top_scopes"] == [
        {"scope": "busy", "count": 5},
        {"scope": "alpha", "count": 2},
        {"scope": "zeta", "count": 2},
    ]
    assert memories["expired_active"] == 1
    assert found["dangling_refs"] == 1
    assert found["history_entries"] == 10
    assert found["last_write_at"] == clock.now
    assert lt.memory.check_refs()[0].record_id == cited.id


def test_inspect_command(run_cli: CliRun) -> None:
    run_cli("memory", "add", "--kind", "fact", "--scope", "s", "x")
    shown = run_cli("inspect")
    assert shown.exit_code == 0, shown.output
    for label in ("location:", "revision:", "memories:", "top scopes:", "dangling refs:"):
        assert label in shown.stdout
    assert "s 1" in shown.stdout
    as_json = json.loads(run_cli("inspect", "--json").stdout)
    assert list(as_json) == INSPECT_KEYS and as_json["memories"]["total"] == 1


def test_inspect_through_the_real_executable(run_lantern: ProcessRun, store_url: str) -> None:
    Lantern.open(store_url).close()
    result = run_lantern("inspect", "--json")
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["revision"] == migrations.HEAD
