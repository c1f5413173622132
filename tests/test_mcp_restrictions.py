"""`lantern mcp --scope` and `--read-only` through the real server: no tool and no id gets
around them. One scoped and one read-only server per engine serve the module; the scoped one
is started from what `--print-config` prints, which shows that snippet works as given."""

from __future__ import annotations

import json
import stat
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from mcp import MCPError, StdioServerParameters, types

from lantern.api import Lantern
from lantern.memory.records import OUTSIDE_SCOPES
from tests.helpers import lantern_process
from tests.mcp_helpers import McpClient, cli_json, module_store, running, server_parameters

UNKNOWN = "mem_00000000000000ff"
PATTERNS = ["team:*", "solo"]
WRITE_TOOLS = [
    "lantern_memory_add",
    "lantern_memory_update",
    "lantern_memory_supersede",
    "lantern_memory_archive",
    "lantern_memory_restore",
    "lantern_ingest_text",
]
READ_TOOLS = [
    "lantern_memory_list",
    "lantern_memory_search",
    "lantern_memory_similar",
    "lantern_memory_show",
    "lantern_memory_history",
    "lantern_search",
    "lantern_source_show",
    "lantern_chunk_show",
    "lantern_entity_list",
    "lantern_entity_show",
]


@dataclass(frozen=True)
class World:
    inside: dict[str, dict[str, Any]]
    outside: dict[str, dict[str, Any]]
    chunk: str
    source: str


@pytest.fixture(scope="module", params=["sqlite", "postgres"])
def store(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[str]:
    yield from module_store(request, tmp_path_factory.mktemp("mcp-restricted"))


@pytest.fixture(scope="module")
def world(store: str) -> World:
    """Records on both sides of PATTERNS, written without restriction."""
    with Lantern.open(store) as lt:
        result = lt.evidence.ingest_text("tool://shared/run", "Deploy checklist: tag, build, ship.")
        source = result.source.id
        chunk = lt.evidence.get_source(source).chunks[0].id  # type: ignore[index]
        cites = {"source_refs": [f"chunk:{chunk}"]}

        def add(scope: str, content: str, **fields: Any) -> Any:
            return lt.memory.add(kind="fact", scope=scope, content=content, **fields)

        inside = {
            "alpha": add("team:a", "Alpha deploys the shared service.", **cites),
            "solo": add("solo", "Solo deploys by hand."),
            "left": add("team:b", "Left behind when its successor moved out."),
            "moved_in": None,
        }
        outside = {
            "other": add("other", "Other deploys the secret service.", **cites),
            "bare": add("team", "Team without a colon deploys.", expires_at=1),
            "work": add("teamwork:a", "Teamwork deploys nightly."),
            "archived": lt.memory.archive(add("other", "Archived outside deploys.").id),
            "successor": lt.memory.supersede(
                inside["left"].id, scope="other", content="Moved out of the scopes."
            ),
            "predecessor": add("other", "Came in from outside."),
        }
        inside["moved_in"] = lt.memory.supersede(
            outside["predecessor"].id, scope="solo", content="Moved into the scopes."
        )
        inside["left"] = lt.memory.get(inside["left"].id)
        outside["predecessor"] = lt.memory.get(outside["predecessor"].id)
        gone = add("other", "Forgotten outside.")
        lt.memory.forget(gone.id)
        outside["forgotten"] = gone
        return World(
            inside={name: record.to_json() for name, record in inside.items()},
            outside={name: record.to_json() for name, record in outside.items()},
            chunk=chunk,
            source=source,
        )


@pytest.fixture(scope="module")
def scoped(
    store: str, world: World, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[McpClient]:
    args = [arg for pattern in PATTERNS for arg in ("--scope", pattern)]
    printed = lantern_process("--db", store, "mcp", *args, "--print-config")
    assert printed.returncode == 0, printed.stderr
    entry = json.loads(printed.stdout)["mcpServers"]["lantern"]
    home = tmp_path_factory.mktemp("scoped-home")
    params = StdioServerParameters(
        command=entry["command"], args=entry["args"], env={**entry["env"], "HOME": str(home)}
    )
    with running(params) as client:
        yield client


@pytest.fixture(scope="module")
def read_only(
    store: str, world: World, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[McpClient]:
    home = tmp_path_factory.mktemp("read-only-home")
    with running(server_parameters(store, "--read-only", home=home)) as client:
        yield client


def _snapshot(store: str) -> list[Any]:
    """Every memory record and evidence source as the unrestricted CLI shows them."""
    records = cli_json(store, "memory", "list", "--status", "all", "--include-expired",
                       "--limit", "10000")  # fmt: skip
    return [records, cli_json(store, "source", "list")]


def _ids(result: dict[str, Any]) -> set[str]:
    return {record["id"] for record in result["records"]}


# --- --scope --------------------------------------------------------------------------------


def test_listings_and_searches_never_hold_a_record_outside(scoped: McpClient, world: World) -> None:
    inside = {record["id"] for record in world.inside.values()}
    everything = {"status": "all", "include_expired": True, "limit": 10_000}
    assert _ids(scoped.ok("lantern_memory_list", everything)) == inside
    asked_for = {"scope": ["other", "team", "teamwork:*", "team*", "tea*"], **everything}
    assert _ids(scoped.ok("lantern_memory_list", asked_for)) == {
        world.inside["alpha"]["id"],
        world.inside["left"]["id"],
    }
    cites = {"cites": [f"chunk:{world.chunk}"], **everything}
    assert _ids(scoped.ok("lantern_memory_list", cites)) == {world.inside["alpha"]["id"]}
    found = scoped.ok("lantern_memory_search", {"query": "deploys", **everything})
    assert _ids(found) == {world.inside["alpha"]["id"], world.inside["solo"]["id"]}
    for query in ("secret", "nightly", "colon", "outside", '"out of the scopes"'):
        assert scoped.ok("lantern_memory_search", {"query": query, **everything})["records"] == []


@pytest.mark.parametrize(
    ("tool", "arguments"),
    [
        ("lantern_memory_show", {}),
        ("lantern_memory_show", {"chain": True}),
        ("lantern_memory_history", {}),
        ("lantern_memory_update", {"priority": 1}),
        ("lantern_memory_update", {"add_refs": ["session:s"]}),
        ("lantern_memory_archive", {}),
        ("lantern_memory_restore", {}),
    ],
)
def test_an_id_outside_is_an_unknown_id(
    scoped: McpClient, store: str, world: World, tool: str, arguments: dict[str, Any]
) -> None:
    before = _snapshot(store)
    unknown = scoped.error(tool, {"id": UNKNOWN, **arguments})
    for record in world.outside.values():
        hidden = scoped.error(tool, {"id": record["id"], **arguments})
        assert hidden == unknown.replace(UNKNOWN, record["id"])
    assert _snapshot(store) == before


def test_superseding_or_citing_an_id_outside_is_an_unknown_id(
    scoped: McpClient, store: str, world: World
) -> None:
    before = _snapshot(store)
    replace = {"content": "Taken over."}
    unknown = scoped.error("lantern_memory_supersede", {"old_id": UNKNOWN, **replace})
    linked = {"kind": "fact", "scope": "solo", "content": "Replaces one outside."}
    unknown_link = scoped.error("lantern_memory_add", {**linked, "supersedes": UNKNOWN})
    for record in world.outside.values():
        hidden = scoped.error("lantern_memory_supersede", {"old_id": record["id"], **replace})
        assert hidden == unknown.replace(UNKNOWN, record["id"])
        hidden_link = scoped.error("lantern_memory_add", {**linked, "supersedes": record["id"]})
        assert hidden_link == unknown_link.replace(UNKNOWN, record["id"])
    assert _snapshot(store) == before


def test_writing_into_a_scope_outside_is_refused(
    scoped: McpClient, store: str, world: World
) -> None:
    before = _snapshot(store)
    refusal = "scope 'other' is outside the scopes this store is restricted to (team:*, solo)"
    added = {"kind": "fact", "scope": "other", "content": "Sneaking in."}
    assert scoped.error("lantern_memory_add", added) == refusal
    moved = {"old_id": world.inside["solo"]["id"], "scope": "other"}
    assert scoped.error("lantern_memory_supersede", moved) == refusal
    assert _snapshot(store) == before


def test_chains_and_messages_stop_at_the_scopes(scoped: McpClient, world: World) -> None:
    left, successor = world.inside["left"], world.outside["successor"]
    predecessor = world.outside["predecessor"]["id"]
    shown = scoped.ok("lantern_memory_show", {"id": left["id"], "chain": True})
    assert (shown["status"], shown["replaced_by"], shown["replaces"]) == (
        "superseded",
        [OUTSIDE_SCOPES],
        [],
    )
    history = scoped.ok("lantern_memory_history", {"id": left["id"]})["entries"]
    assert history[-1]["changes"]["superseded_by"] == OUTSIDE_SCOPES
    for tool, arguments in [
        ("lantern_memory_update", {"id": left["id"], "priority": 1}),
        ("lantern_memory_archive", {"id": left["id"]}),
        ("lantern_memory_supersede", {"old_id": left["id"], "content": "Again."}),
    ]:
        message = scoped.error(tool, arguments)
        assert successor["id"] not in message
        assert "a record outside the scopes this store is restricted to" in message
    moved_in = scoped.ok(
        "lantern_memory_show", {"id": world.inside["moved_in"]["id"], "chain": True}
    )
    assert (moved_in["supersedes_id"], moved_in["replaces"]) == (OUTSIDE_SCOPES, [OUTSIDE_SCOPES])
    history = scoped.ok("lantern_memory_history", {"id": world.inside["moved_in"]["id"]})
    assert history["entries"][0]["changes"]["after"]["supersedes_id"] == OUTSIDE_SCOPES
    assert predecessor not in json.dumps(history)
    # The placeholder names no record: given back, it is an id like any unknown one.
    unknown = scoped.error("lantern_memory_show", {"id": UNKNOWN})
    assert scoped.error("lantern_memory_show", {"id": OUTSIDE_SCOPES}) == unknown.replace(
        UNKNOWN, OUTSIDE_SCOPES
    )


def test_history_of_a_forgotten_record_outside_is_unknown(scoped: McpClient, world: World) -> None:
    forgotten = world.outside["forgotten"]["id"]
    unknown = scoped.error("lantern_memory_history", {"id": UNKNOWN})
    assert scoped.error("lantern_memory_history", {"id": forgotten}) == unknown.replace(
        UNKNOWN, forgotten
    )


def test_writes_inside_work_and_the_cli_sees_them(scoped: McpClient, store: str) -> None:
    added = scoped.ok("lantern_memory_add", {"kind": "goal", "scope": "team:new", "content": "Go."})
    assert {**added, "entities": []} == cli_json(store, "memory", "show", added["id"])
    updated = scoped.ok("lantern_memory_update", {"id": added["id"], "priority": 70})
    assert {**updated, "entities": []} == cli_json(store, "memory", "show", added["id"])
    assert scoped.ok("lantern_memory_archive", {"id": added["id"]})["status"] == "archived"
    assert scoped.ok("lantern_memory_restore", {"id": added["id"]})["status"] == "active"
    moved = scoped.ok("lantern_memory_supersede", {"old_id": added["id"], "scope": "solo"})
    assert {**moved, "entities": []} == cli_json(store, "memory", "show", moved["id"])
    history = scoped.ok("lantern_memory_history", {"id": added["id"]})
    whole = cli_json(store, "memory", "history", added["id"])
    # The same entries; the confined client's are numbered within the record.
    assert [entry["id"] for entry in history["entries"]] == list(range(1, len(whole) + 1))
    assert [{**e, "id": 0} for e in history["entries"]] == [{**e, "id": 0} for e in whole]


def test_evidence_tools_serve_everything_and_hold_no_memory(
    scoped: McpClient, world: World
) -> None:
    results = [
        scoped.ok("lantern_search", {"query": "checklist"}),
        scoped.ok("lantern_source_show", {"id": world.source}),
        scoped.ok("lantern_chunk_show", {"id": world.chunk, "context": 1}),
        scoped.ok("lantern_ingest_text", {"uri": "tool://scoped/note", "text": "Agent note."}),
    ]
    assert results[0]["hits"][0]["chunk_id"] == world.chunk
    assert results[3]["added"] == 1
    rendered = json.dumps(results)
    for record in world.outside.values():
        assert record["id"] not in rendered and record["content"] not in rendered


# --- --read-only ------------------------------------------------------------------------------


def test_read_only_lists_only_the_reading_tools(read_only: McpClient) -> None:
    assert list(read_only.tools()) == READ_TOOLS


@pytest.mark.parametrize("tool", WRITE_TOOLS)
def test_read_only_has_no_write_tool_to_call(
    read_only: McpClient, store: str, world: World, tool: str
) -> None:
    before = _snapshot(store)
    arguments = {
        "id": world.inside["solo"]["id"],
        "old_id": world.inside["solo"]["id"],
        "kind": "fact",
        "content": "Written anyway?",
        "uri": "tool://read-only",
        "text": "Written anyway?",
    }
    with pytest.raises(MCPError) as refused:
        read_only.call(tool, arguments)
    assert refused.value.error.code == types.INVALID_PARAMS
    assert refused.value.error.message == f"Unknown tool: {tool}"
    assert _snapshot(store) == before


def test_read_only_reads_the_whole_store(read_only: McpClient, world: World) -> None:
    everything = {"status": "all", "include_expired": True, "limit": 10_000}
    listed = _ids(read_only.ok("lantern_memory_list", everything))
    live = {r["id"] for name, r in world.outside.items() if name != "forgotten"}
    assert listed >= {r["id"] for r in world.inside.values()} | live
    assert read_only.ok("lantern_chunk_show", {"id": world.chunk})["id"] == world.chunk


def test_a_missing_store_is_created_by_a_writable_server_only(tmp_path: Path) -> None:
    home = tmp_path / "home"
    store = tmp_path / "new" / "lantern.db"
    with running(server_parameters(str(store), "--read-only", home=home)) as reader:
        message = reader.error("lantern_memory_list")
        assert message.startswith(f"no Lantern store at {store} (nothing is there)")
        assert reader.error("lantern_search", {"query": "x"}) == message
        assert not store.parent.exists()
        with running(server_parameters(str(store), home=home)) as writer:
            added = writer.ok("lantern_memory_add", {"kind": "fact", "content": "now here"})
        assert stat.S_IMODE(store.stat().st_mode) == 0o600
        # The read-only server opens the store once a writer has made it.
        listed = reader.ok("lantern_memory_list")
        assert [record["id"] for record in listed["records"]] == [added["id"]]
