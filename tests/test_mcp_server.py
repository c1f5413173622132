"""`lantern mcp` as a client sees it: the SDK's own client over stdio against the real process.

One server per engine serves the whole module. Results are compared, parsed, with what the
CLI's `--json` prints for the same store, and errors with the CLI's own one-line messages.
"""

from __future__ import annotations

import json
import os
import re
import sqlite3
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import MCPError, types

from lantern import __version__
from lantern.api import Lantern
from lantern.validation import MEMORY_KINDS, STATUS_FILTERS
from tests.helpers import LANTERN_BIN
from tests.mcp_helpers import (
    McpClient,
    cli_error,
    cli_json,
    cli_note,
    module_store,
    running,
    server_parameters,
    texts,
)

UNKNOWN = "mem_00000000000000ff"
TOOLS = [
    "lantern_memory_add",
    "lantern_memory_list",
    "lantern_memory_search",
    "lantern_memory_similar",
    "lantern_memory_show",
    "lantern_memory_history",
    "lantern_memory_update",
    "lantern_memory_supersede",
    "lantern_memory_archive",
    "lantern_memory_restore",
    "lantern_search",
    "lantern_source_show",
    "lantern_chunk_show",
    "lantern_ingest_text",
    "lantern_entity_list",
    "lantern_entity_show",
    "lantern_entity_attach",
    "lantern_entity_detach",
]
# (readOnlyHint, destructiveHint, idempotentHint) per tool; openWorldHint is False for all.
HINTS = {
    "lantern_memory_add": (False, False, True),
    "lantern_memory_update": (False, True, True),
    "lantern_memory_supersede": (False, True, False),
    "lantern_memory_archive": (False, True, True),
    "lantern_memory_restore": (False, True, True),
    "lantern_ingest_text": (False, True, True),
    "lantern_entity_attach": (False, False, True),
    "lantern_entity_detach": (False, True, True),
    **{
        name: (True, False, True)
        for name in (
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
        )
    },
}
TOOL_OUTPUT = (
    "============================= test session starts =============================\n"
    "collected 3 items\n\n"
    "tests/test_deploy.py ..F\n\n"
    "FAILED tests/test_deploy.py::test_rollback - the migration failed with a timeout\n"
)


@pytest.fixture(scope="module", params=["sqlite", "postgres"])
def store(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[str]:
    yield from module_store(request, tmp_path_factory.mktemp("mcp-store"))


@pytest.fixture(scope="module")
def server(store: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[McpClient]:
    Lantern.open(store).close()  # created before the CLI and the server both reach for it
    home = tmp_path_factory.mktemp("mcp-home")
    env = {"LANTERN_BUSY_TIMEOUT": "1"}
    if "://" in store:
        # On PostgreSQL the server ranks words through the index it keeps, the CLI inside the
        # database (docs/search.md, "Search on PostgreSQL"): the same matches in another
        # order. These tests compare what each renders, so the server searches as the CLI does.
        env["LANTERN_INDEXES"] = "off"
    params = server_parameters(store, env=env, home=home)
    with running(params) as client:
        yield client


def _add(server: McpClient, content: str, **fields: Any) -> dict[str, Any]:
    return server.ok("lantern_memory_add", {"kind": "fact", "content": content, **fields})


# --- the handshake and the tool list ------------------------------------------------------------


def test_initialize_and_the_tools_it_lists(server: McpClient) -> None:
    assert server.initialized.protocol_version == "2025-11-25"  # what the SDK client offers
    assert server.initialized.server_info.name == "lantern"
    assert server.initialized.server_info.version == __version__
    assert server.initialized.capabilities.tools is not None
    tools = server.tools()
    assert list(tools) == TOOLS
    for name, tool in tools.items():
        hints = tool.annotations
        assert hints is not None
        assert (hints.read_only_hint, hints.destructive_hint, hints.idempotent_hint) == HINTS[name]
        assert hints.open_world_hint is False
        assert tool.title and tool.description
        schema = tool.input_schema
        assert schema["type"] == "object" and schema["additionalProperties"] is False
        assert set(schema.get("required", [])) <= set(schema["properties"])


def test_schemas_are_precise(server: McpClient) -> None:
    tools = {name: tool.input_schema for name, tool in server.tools().items()}
    add = tools["lantern_memory_add"]
    assert add["required"] == ["content", "kind"]
    assert add["properties"]["kind"] == {"type": "string", "enum": list(MEMORY_KINDS)}
    for name in ("priority", "urgency"):
        assert add["properties"][name]["type"] == "integer"
        assert (add["properties"][name]["minimum"], add["properties"][name]["maximum"]) == (0, 100)
    assert add["properties"]["confidence"] | {"description": ""} == {
        "type": "number",
        "minimum": 0,
        "maximum": 1,
        "default": 1.0,
        "description": "",
    }
    assert add["properties"]["scope"]["type"] == "string"
    assert add["properties"]["source_refs"]["type"] == "array"
    listing = tools["lantern_memory_list"]["properties"]
    assert listing["scope"]["type"] == "array" and listing["scope"]["items"]["type"] == "string"
    assert listing["kind"]["items"]["enum"] == list(MEMORY_KINDS)
    assert listing["status"]["enum"] == list(STATUS_FILTERS)
    assert listing["status"]["default"] == "active"
    assert (listing["limit"]["minimum"], listing["limit"]["maximum"]) == (1, 10_000)
    assert listing["limit"]["default"] == 50
    assert tools["lantern_memory_search"]["properties"]["limit"]["default"] == 20
    assert tools["lantern_memory_search"]["required"] == ["query"]
    assert tools["lantern_memory_supersede"]["required"] == ["old_id"]
    for name in ("show", "history", "update", "archive", "restore"):
        assert tools[f"lantern_memory_{name}"]["required"] == ["id"]
    assert tools["lantern_chunk_show"]["properties"]["context"]["maximum"] == 100
    assert tools["lantern_ingest_text"]["required"] == ["uri", "text"]


# --- every tool, with the CLI's JSON beside it ------------------------------------------------


def test_memory_tools_return_what_the_cli_prints(server: McpClient, store: str) -> None:
    fields: dict[str, Any] = {
        "kind": "preference",
        "scope": "user:ada",
        "content": "Ada prefers short answers.",
        "priority": 80,
        "urgency": 10,
        "confidence": 0.9,
        "expires_at": "2100-01-01T00:00:00Z",
        "source_refs": ["session:s1", {"type": "url", "id": "https://example.org", "note": "ü"}],
    }
    added = server.ok("lantern_memory_add", fields)
    assert {**added, "entities": []} == cli_json(store, "memory", "show", added["id"])
    assert added["source_refs"][1] == {"id": "https://example.org", "note": "ü", "type": "url"}

    again = server.call("lantern_memory_add", fields)
    assert not again.is_error and again.structured_content == added
    cli_again = cli_note(
        store, "memory", "add", "--kind", "preference", "--scope", "user:ada", fields["content"]
    )
    assert texts(again)[1:] == [cli_again]

    others = [_add(server, f"Ada uses tool {n}.", scope="user:ada", priority=n) for n in (1, 2, 3)]
    listed = server.ok("lantern_memory_list", {"scope": ["user:*"], "limit": 2, "explain": True})
    assert listed == cli_json(
        store, "memory", "list", "--scope", "user:*", "--limit", "2", "--explain", "--with-cursor"
    )
    assert listed["next_cursor"] is not None
    following = server.ok(
        "lantern_memory_list", {"scope": ["user:*"], "after": listed["next_cursor"]}
    )
    assert following == cli_json(
        store, "memory", "list", "--scope", "user:*", "--after", listed["next_cursor"],
        "--with-cursor",
    )  # fmt: skip
    assert [r["id"] for r in listed["records"] + following["records"]] == [
        added["id"], *[o["id"] for o in reversed(others)]
    ]  # fmt: skip

    found = server.ok("lantern_memory_search", {"query": "ada tool*", "explain": True})
    assert found == cli_json(store, "memory", "search", "ada tool*", "--explain", "--with-cursor")
    assert [r["id"] for r in found["records"]] and all("score" in r for r in found["records"])
    by_policy = server.ok(
        "lantern_memory_search", {"query": "ada", "order": "policy", "limit": 1, "status": "all"}
    )
    assert by_policy == cli_json(
        store, "memory", "search", "ada", "--order", "policy", "--limit", "1", "--status", "all",
        "--with-cursor",
    )  # fmt: skip
    assert by_policy["next_cursor"] is not None
    # The default order pages too: a cursor until the last page, then null.
    first = server.ok("lantern_memory_search", {"query": "ada tool", "limit": 2})
    assert first == cli_json(store, "memory", "search", "ada tool", "--limit", "2", "--with-cursor")
    assert first["next_cursor"] is not None
    rest = server.ok("lantern_memory_search", {"query": "ada tool", "after": first["next_cursor"]})
    assert rest["next_cursor"] is None
    everything = server.ok("lantern_memory_search", {"query": "ada tool", "limit": 50})
    assert first["records"] + rest["records"] == everything["records"]
    assert [r["keyword_rank"] for r in everything["records"]] == list(
        range(1, len(everything["records"]) + 1)
    )
    strict = server.ok("lantern_memory_search", {"query": "ada tool 2", "mode": "keyword"})
    assert strict == cli_json(store, "memory", "search", "ada tool 2", "--mode", "keyword",
                              "--with-cursor")  # fmt: skip
    assert [(r["content"], r["mode"]) for r in strict["records"]] == [
        ("Ada uses tool 2.", "keyword")
    ]

    updated = server.ok(
        "lantern_memory_update",
        {"id": added["id"], "priority": 95, "add_refs": ["session:s2"], "no_expiry": True},
    )
    assert {**updated, "entities": []} == cli_json(store, "memory", "show", added["id"])
    assert (updated["priority"], updated["expires_at"]) == (95, None)

    new = server.ok(
        "lantern_memory_supersede",
        {"old_id": added["id"], "content": "Ada prefers very short answers.", "source_refs": []},
    )
    assert {**new, "entities": []} == cli_json(store, "memory", "show", new["id"])
    assert (new["supersedes_id"], new["source_refs"], new["priority"]) == (added["id"], [], 95)
    for chained in (added["id"], new["id"]):
        shown = server.ok("lantern_memory_show", {"id": chained, "chain": True})
        assert shown == cli_json(store, "memory", "show", chained, "--chain")
    assert server.ok("lantern_memory_show", {"id": added["id"]})["status"] == "superseded"

    archived = server.ok("lantern_memory_archive", {"id": others[0]["id"]})
    assert {**archived, "entities": []} == cli_json(store, "memory", "show", others[0]["id"])
    assert archived["status"] == "archived"
    restored = server.ok("lantern_memory_restore", {"id": others[0]["id"]})
    assert {**restored, "entities": []} == cli_json(store, "memory", "show", others[0]["id"])

    history = server.ok("lantern_memory_history", {"id": added["id"]})
    assert history == {"entries": cli_json(store, "memory", "history", added["id"])}
    events = [entry["event"] for entry in history["entries"]]
    assert events == ["created", "updated", "superseded"]


def test_evidence_tools_return_what_the_cli_prints(server: McpClient, store: str) -> None:
    ingested = server.ok(
        "lantern_ingest_text",
        {
            "uri": "tool://pytest/run-1",
            "text": TOOL_OUTPUT,
            "kind": "tool_output",
            "metadata": {"exit_code": 1},
            "chunk_size": 100,
        },
    )
    by_cli = cli_json(
        store, "ingest", "-", "--uri", "tool://pytest/run-2", "--kind", "tool_output",
        "--metadata", '{"exit_code": 1}', "--chunk-size", "100", input=TOOL_OUTPUT + "\n",
    )  # fmt: skip
    assert list(ingested) == [*by_cli, "source"]
    assert {**ingested, "seconds": 0} == {**by_cli, "seconds": 0, "source": ingested["source"]}
    assert (ingested["added"], ingested["chunks"]) == (1, ingested["source"]["chunk_count"])
    source = cli_json(store, "source", "show", "tool://pytest/run-1")
    assert ingested["source"] == {
        key: value
        for key, value in source.items()
        if key not in ("chunks", "next_cursor", "cited_by")
    }
    again = {"uri": "tool://pytest/run-1", "text": TOOL_OUTPUT, "kind": "tool_output"}
    unchanged = server.ok("lantern_ingest_text", again)
    assert (unchanged["unchanged"], unchanged["chunks"]) == (1, 0)

    for ref in (source["id"], source["uri"]):
        assert server.ok("lantern_source_show", {"id": ref}) == source
    assert source["next_cursor"] is None and len(source["chunks"]) >= 3

    # Chunks come in pages, continued after the last ordinal shown, or not at all.
    first = server.ok("lantern_source_show", {"id": source["id"], "limit": 2})
    assert first == cli_json(store, "source", "show", source["id"], "--limit", "2")
    after = source["chunks"][1]["ordinal"]
    assert first["chunks"] == source["chunks"][:2] and first["next_cursor"] == after
    rest = server.ok("lantern_source_show", {"id": source["id"], "after": after, "limit": 999})
    assert rest == cli_json(
        store, "source", "show", source["id"], "--after", str(after), "--limit", "999"
    )
    assert rest["chunks"] == source["chunks"][2:] and rest["next_cursor"] is None
    bare = server.ok("lantern_source_show", {"id": source["id"], "no_chunks": True})
    assert bare == cli_json(store, "source", "show", source["id"], "--no-chunks")
    assert "chunks" not in bare and bare["chunk_count"] == source["chunk_count"]
    chunk = source["chunks"][1]["id"]
    shown = server.ok("lantern_chunk_show", {"id": chunk, "context": 1})
    assert shown == cli_json(store, "chunk", "show", chunk, "--context", "1")
    assert len(shown["before"]) == 1
    assert server.ok("lantern_chunk_show", {"id": chunk}) == cli_json(store, "chunk", "show", chunk)

    searched = {"search": {"mode": "any", "model": None, "without_vector": 0}}
    hits = server.ok("lantern_search", {"query": "migration", "kind": ["tool_output"], "limit": 5})
    assert hits == {"hits": cli_json(store, "search", "migration", "--kind", "tool_output",
                                     "--limit", "5"), **searched}  # fmt: skip
    assert {hit["uri"] for hit in hits["hits"]} == {"tool://pytest/run-1", "tool://pytest/run-2"}
    narrowed = server.ok(
        "lantern_search", {"query": "migration", "source": ["tool://pytest/run-1"]}
    )
    assert narrowed == {"hits": cli_json(store, "search", "migration", "--source",
                                         "tool://pytest/run-1"), **searched}  # fmt: skip
    assert server.ok("lantern_search", {"query": "***"}) == {"hits": [], **searched}
    question: dict[str, Any] = {"query": "why did the rollback test fail?", "limit": 3}
    answered = server.ok("lantern_search", question)
    assert answered == {
        "hits": cli_json(store, "search", question["query"], "--limit", "3"),
        **searched,
    }
    assert answered["hits"] and answered["hits"][0]["mode"] == "any"
    keyword = {"search": {"mode": "keyword", "model": None, "without_vector": 0}}
    # keyword requires every word that carries meaning, by its stem ("fail" finds "failed");
    # the question's function words ("why", "did", "the") are left out.
    by_keyword = server.ok("lantern_search", {**question, "mode": "keyword"})
    assert by_keyword == {
        "hits": cli_json(store, "search", question["query"], "--limit", "3", "--mode", "keyword"),
        **keyword,
    }
    assert {hit["uri"] for hit in by_keyword["hits"]} == {
        "tool://pytest/run-1",
        "tool://pytest/run-2",
    }

    # A memory can cite what was just ingested; a reference to nothing needs allow_dangling.
    cited = _add(
        server, "The rollback test fails on a migration timeout.", source_refs=[f"chunk:{chunk}"]
    )
    assert cited["source_refs"] == [{"id": chunk, "type": "chunk"}]
    dangling = {
        "kind": "fact",
        "content": "Cites nothing.",
        "source_refs": ["chunk:chk_0000000000000000"],
    }
    assert "names no chunk" in server.error("lantern_memory_add", dangling)
    assert server.ok("lantern_memory_add", {**dangling, "allow_dangling": True})["source_refs"]


# --- errors -----------------------------------------------------------------------------------

SCHEMA_ERRORS: list[tuple[str, dict[str, Any], str]] = [
    ("lantern_memory_add", {"kind": "fact"}, "missing required argument 'content'"),
    ("lantern_memory_add", {"kind": "gossip", "content": "x"},
     'kind must be one of fact, preference, goal, constraint, task_state, observation, '
     'hypothesis; got "gossip"'),
    ("lantern_memory_add", {"kind": "fact", "content": "x", "priority": 101},
     "priority must be at most 100; got 101"),
    ("lantern_memory_add", {"kind": "fact", "content": "x", "urgency": "high"},
     "urgency must be an integer; got string"),
    ("lantern_memory_add", {"kind": "fact", "content": "x", "confidence": 1.5},
     "confidence must be at most 1; got 1.5"),
    ("lantern_memory_add", {"kind": "fact", "content": ""}, "content must not be empty"),
    ("lantern_memory_add", {"kind": "fact", "content": "x", "tags": ["a"]},
     "unknown argument 'tags'; this tool takes content, kind, scope, priority, urgency, "
     "confidence, expires_at, supersedes, source_refs, entities, allow_dangling"),
    ("lantern_memory_add", {"kind": "fact", "content": "x", "source_refs": [3]},
     "source_refs.0 must be a string or an object; got integer"),
    ("lantern_memory_add", {"kind": "fact", "content": "x", "source_refs": [{"id": "y"}]},
     "source_refs.0: missing required key 'type'"),
    ("lantern_memory_add", {"kind": "fact", "content": "x", "scope": "s" * 513},
     "scope is too long: 513 characters, the limit is 512"),
    ("lantern_memory_list", {"limit": 0}, "limit must be at least 1; got 0"),
    ("lantern_memory_search", {"query": "x", "mode": "fuzzy"},
     'mode must be one of keyword, any, semantic, hybrid; got "fuzzy"'),
    ("lantern_memory_similar", {"id": "mem_00000000000000ff", "limit": 0},
     "limit must be at least 1; got 0"),
    ("lantern_search", {"query": "x", "since": True},
     "since must be a number or a string; got boolean"),
    ("lantern_memory_list", {"limit": 10_001}, "limit must be at most 10000; got 10001"),
    ("lantern_memory_list", {"status": "deleted"},
     'status must be one of active, archived, superseded, all; got "deleted"'),
    ("lantern_memory_list", {"scope": "user:*"}, "scope must be an array; got string"),
    ("lantern_memory_list", {"kind": ["fact", "nope"]},
     'kind.1 must be one of fact, preference, goal, constraint, task_state, observation, '
     'hypothesis; got "nope"'),
    ("lantern_memory_list", {"min_confidence": -0.1},
     "min_confidence must be at least 0; got -0.1"),
    ("lantern_memory_search", {}, "missing required argument 'query'"),
    ("lantern_memory_search", {"query": "x", "order": "random"},
     'order must be one of relevance, policy; got "random"'),
    ("lantern_memory_show", {}, "missing required argument 'id'"),
    ("lantern_memory_show", {"id": 5}, "id must be a string; got integer"),
    ("lantern_memory_show", {"id": "x", "chain": "yes"}, "chain must be a boolean; got string"),
    ("lantern_memory_history", {"id": ""}, "id must not be empty"),
    ("lantern_memory_update", {"id": "x", "priority": -1}, "priority must be at least 0; got -1"),
    ("lantern_memory_update", {"id": "x", "remove_refs": "session:s"},
     "remove_refs must be an array; got string"),
    ("lantern_memory_supersede", {"content": "x"}, "missing required argument 'old_id'"),
    ("lantern_memory_supersede", {"old_id": "x", "kind": "opinion"},
     'kind must be one of fact, preference, goal, constraint, task_state, observation, '
     'hypothesis; got "opinion"'),
    ("lantern_memory_archive", {"id": None}, "id must be a string; got null"),
    ("lantern_memory_restore", {"id": "x", "force": True},
     "unknown argument 'force'; this tool takes id"),
    ("lantern_search", {"query": "x", "limit": 1.5}, "limit must be an integer; got number"),
    ("lantern_search", {"query": "x", "kind": "log"}, "kind must be an array; got string"),
    ("lantern_source_show", {}, "missing required argument 'id'"),
    ("lantern_chunk_show", {"id": "chk", "context": 101}, "context must be at most 100; got 101"),
    ("lantern_ingest_text", {"uri": "tool://x"}, "missing required argument 'text'"),
    ("lantern_ingest_text", {"uri": "t", "text": "x", "kind": "Tool Output"},
     'kind must match ^[a-z][a-z0-9_-]{0,63}$; got "Tool Output"'),
    ("lantern_ingest_text", {"uri": "t", "text": "x", "metadata": [1]},
     "metadata must be an object; got array"),
    ("lantern_ingest_text", {"uri": "t", "text": "x", "chunk_size": 50},
     "chunk_size must be at least 100; got 50"),
]  # fmt: skip


def test_said_time_filters_of_the_search_tools(server: McpClient, store: str) -> None:
    january, february = 1_768_471_200, 1_769_904_000  # 2026-01-15T10:00Z, 2026-02-01T00:00Z
    session = "\n".join(
        json.dumps({"role": role, "content": content, "ts": ts})
        for role, content, ts in (
            ("user", "Which quay do the zeppelins leave from?", january),
            ("assistant", "The north quay, every hour.", january + 30),
        )
    )
    server.ok("lantern_ingest_text", {"uri": "chat://zeppelins", "text": session})
    said = {"said_since": "2026-01-01", "said_until": "2026-02-01"}
    found = server.ok("lantern_search", {"query": "zeppelins quay", **said})
    assert found["hits"] == cli_json(
        store, "search", "zeppelins quay", "--said-since", "2026-01-01", "--said-until",
        "2026-02-01",
    )  # fmt: skip
    [hit] = found["hits"]
    assert (hit["said_from"], hit["said_until"]) == (january, january + 30)
    shown = server.ok("lantern_chunk_show", {"id": hit["chunk_id"]})
    assert list(shown)[-3:] == ["cited_by", "said_from", "said_until"]
    assert server.ok("lantern_search", {"query": "zeppelins", "said_since": february})["hits"] == []
    listed = server.ok("lantern_source_show", {"id": "chat://zeppelins", **said})
    assert [chunk["id"] for chunk in listed["chunks"]] == [hit["chunk_id"]]
    later = server.ok("lantern_source_show", {"id": "chat://zeppelins", "said_since": february})
    assert later == cli_json(
        store, "source", "show", "chat://zeppelins", "--said-since", str(february), "--limit",
        "100",
    )  # fmt: skip
    assert later["chunks"] == []
    added = _add(server, "zeppelins leave from the north quay")
    records = server.ok("lantern_memory_search", {"query": "zeppelins", "said_since": 0})
    assert [record["id"] for record in records["records"]] == [added["id"]]
    none = server.ok("lantern_memory_list", {"said_until": "2020-01-01"})
    assert none["records"] == []
    error = server.error("lantern_search", {"query": "zeppelins", "said_since": "notadate"})
    assert error == "said_since must be unix seconds or an ISO-8601 time; got 'notadate'"


@pytest.mark.parametrize(
    ("tool", "arguments", "message"),
    SCHEMA_ERRORS,
    ids=[f"{t}-{m[:30]}" for t, _, m in SCHEMA_ERRORS],
)
def test_arguments_outside_the_schema_are_tool_errors(
    server: McpClient, tool: str, arguments: dict[str, Any], message: str
) -> None:
    assert server.error(tool, arguments) == f"invalid arguments: {message}"


# Each call beside the CLI command that fails the same way in the repository.
REPOSITORY_ERRORS: list[tuple[str, dict[str, Any], list[str], str | None]] = [
    ("lantern_memory_show", {"id": UNKNOWN}, ["memory", "show", UNKNOWN], None),
    ("lantern_memory_show", {"id": UNKNOWN, "chain": True},
     ["memory", "show", UNKNOWN, "--chain"], None),
    ("lantern_memory_history", {"id": UNKNOWN}, ["memory", "history", UNKNOWN], None),
    ("lantern_memory_similar", {"id": UNKNOWN}, ["memory", "similar", UNKNOWN], None),
    ("lantern_memory_update", {"id": UNKNOWN, "priority": 1},
     ["memory", "update", UNKNOWN, "--priority", "1"], None),
    ("lantern_memory_update", {"id": UNKNOWN}, ["memory", "update", UNKNOWN], None),
    ("lantern_memory_update", {"id": UNKNOWN, "expires_at": 5, "no_expiry": True},
     ["memory", "update", UNKNOWN, "--expires-at", "5", "--no-expiry"], None),
    ("lantern_memory_archive", {"id": UNKNOWN}, ["memory", "archive", UNKNOWN], None),
    ("lantern_memory_restore", {"id": UNKNOWN}, ["memory", "restore", UNKNOWN], None),
    ("lantern_memory_supersede", {"old_id": UNKNOWN, "content": "x"},
     ["memory", "supersede", UNKNOWN, "--content", "x"], None),
    ("lantern_memory_add", {"kind": "fact", "content": "   "},
     ["memory", "add", "--kind", "fact", "   "], None),
    ("lantern_memory_add", {"kind": "fact", "content": "x", "expires_at": "next tuesday"},
     ["memory", "add", "--kind", "fact", "--expires-at", "next tuesday", "x"], None),
    ("lantern_memory_add", {"kind": "fact", "content": "x", "source_refs": ["nocolon"]},
     ["memory", "add", "--kind", "fact", "--source-ref", "nocolon", "x"], None),
    ("lantern_memory_add", {"kind": "fact", "content": "x", "supersedes": UNKNOWN},
     ["memory", "add", "--kind", "fact", "--supersedes", UNKNOWN, "x"], None),
    ("lantern_memory_list", {"after": "nope"}, ["memory", "list", "--after", "nope"], None),
    ("lantern_memory_list", {"updated_since": "yesterday"},
     ["memory", "list", "--updated-since", "yesterday"], None),
    ("lantern_memory_list", {"cites": ["nocolon"]}, ["memory", "list", "--cites", "nocolon"], None),
    ("lantern_memory_list", {"offset": 1, "after": "c1_x"},
     ["memory", "list", "--offset", "1", "--after", "c1_x"], None),
    ("lantern_memory_search", {"query": "x", "after": "c1_x"},
     ["memory", "search", "x", "--after", "c1_x"], None),
    ("lantern_search", {"query": "x", "since": "soon"}, ["search", "x", "--since", "soon"], None),
    ("lantern_source_show", {"id": "src_0000000000000000"},
     ["source", "show", "src_0000000000000000"], None),
    ("lantern_chunk_show", {"id": "chk_0000000000000000"},
     ["chunk", "show", "chk_0000000000000000"], None),
    ("lantern_ingest_text", {"uri": " padded", "text": "x"},
     ["ingest", "-", "--uri", " padded"], "x"),
    ("lantern_ingest_text", {"uri": "tool://nul", "text": "a\x00b"},
     ["ingest", "-", "--uri", "tool://nul"], "a\x00b"),
]  # fmt: skip


@pytest.mark.parametrize(
    ("tool", "arguments", "cli_args", "stdin"),
    REPOSITORY_ERRORS,
    ids=[" ".join(args[:3]) for _, _, args, _ in REPOSITORY_ERRORS],
)
def test_repository_errors_carry_the_cli_message(
    server: McpClient,
    store: str,
    tool: str,
    arguments: dict[str, Any],
    cli_args: list[str],
    stdin: str | None,
) -> None:
    assert server.error(tool, arguments) == in_tool_words(cli_error(store, *cli_args, input=stdin))


def in_tool_words(message: str) -> str:
    """A CLI message as a tool says it: each surface names its own options (`--expires-at`
    is the argument `expires_at`, the `CONTENT` argument is `content`)."""
    named = re.sub(r"--([a-z][a-z-]*)", lambda m: m.group(1).replace("-", "_"), message)
    return re.sub(r"\b(CONTENT|TEXT)\b", lambda m: m.group(1).lower(), named)


def test_the_server_keeps_answering_after_errors(server: McpClient) -> None:
    with pytest.raises(MCPError) as unknown:
        server.call("lantern_memory_forget", {"id": UNKNOWN})
    assert unknown.value.error.code == types.INVALID_PARAMS
    assert unknown.value.error.message == "Unknown tool: lantern_memory_forget"
    for _ in range(3):
        server.error("lantern_memory_show", {"id": UNKNOWN})
        server.error("lantern_memory_list", {"limit": -1})
    assert "records" in server.ok("lantern_memory_list", {"limit": 1})


def test_a_busy_store_is_a_tool_error_and_reads_go_on(server: McpClient, store: str) -> None:
    if "://" in store:
        pytest.skip("the busy timeout is SQLite's; PostgreSQL writers wait for each other")
    holder = sqlite3.connect(store, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")  # the write lock, as another writer would hold it
    try:
        assert "records" in server.ok("lantern_memory_list", {"limit": 1})
        message = server.error("lantern_memory_add", {"kind": "fact", "content": "Busy."})
        by_cli = cli_error(
            store, "memory", "add", "--kind", "fact", "Busy.", env={"LANTERN_BUSY_TIMEOUT": "1"}
        )
    finally:
        holder.rollback()
        holder.close()
    assert message == by_cli and "stayed busy" in message
    assert _add(server, "Busy.")["content"] == "Busy."


# --- concurrency and other writers -----------------------------------------------------------


def test_writes_by_the_cli_are_seen_by_the_next_call(server: McpClient, store: str) -> None:
    scope = {"scope": ["visible:cli"], "status": "all"}
    assert server.ok("lantern_memory_list", scope)["records"] == []
    added = cli_json(store, "memory", "add", "--kind", "goal", "--scope", "visible:cli", "Seen.")
    assert server.ok("lantern_memory_list", scope)["records"] == [added]
    cli_json(store, "memory", "archive", added["id"])
    assert server.ok("lantern_memory_show", {"id": added["id"]})["status"] == "archived"
    cli_json(store, "ingest", "-", "--uri", "tool://cli/visible", input="Zanzibar quokka.")
    [hit] = server.ok("lantern_search", {"query": "quokka"})["hits"]
    assert hit["uri"] == "tool://cli/visible"


def test_concurrent_calls_all_complete(server: McpClient) -> None:
    async def burst() -> list[types.CallToolResult]:
        results: list[types.CallToolResult] = []

        async def one(name: str, arguments: dict[str, Any]) -> None:
            results.append(await server.session.call_tool(name, arguments))

        async with anyio.create_task_group() as group:
            for n in range(12):
                content = f"Concurrent write {n}."
                group.start_soon(one, "lantern_memory_add", {"kind": "fact", "content": content})
                group.start_soon(one, "lantern_memory_list", {"scope": ["global"], "limit": 5})
        return results

    results = server.portal.call(burst)
    assert len(results) == 24 and not any(result.is_error for result in results)
    found = server.ok("lantern_memory_search", {"query": "concurrent write", "limit": 50})
    assert len(found["records"]) == 12


# --- the process itself ------------------------------------------------------------------------


def _send(process: subprocess.Popen[bytes], message: dict[str, Any]) -> None:
    assert process.stdin is not None
    process.stdin.write(json.dumps(message).encode() + b"\n")
    process.stdin.flush()


def _receive(process: subprocess.Popen[bytes]) -> dict[str, Any]:
    assert process.stdout is not None
    answer: dict[str, Any] = json.loads(process.stdout.readline())
    return answer


def test_the_wire_and_a_clean_exit_when_stdin_closes(store: str, tmp_path: Path) -> None:
    process = subprocess.Popen(
        [str(LANTERN_BIN), "mcp"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env={**os.environ, "LANTERN_DB": store},
        cwd=tmp_path,
    )
    try:
        _send(process, {
            "jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                       "clientInfo": {"name": "test", "version": "0"}},
        })  # fmt: skip
        assert _receive(process)["result"]["protocolVersion"] == "2025-06-18"
        _send(process, {"jsonrpc": "2.0", "method": "notifications/initialized"})
        _send(process, {
            "jsonrpc": "2.0", "id": 2, "method": "tools/call",
            "params": {"name": "lantern_memory_list", "arguments": {"limit": 1}},
        })  # fmt: skip
        result = _receive(process)["result"]
        assert result["isError"] is False and list(result["structuredContent"]) == [
            "records",
            "next_cursor",
        ]
        assert result["content"][0]["type"] == "text"
        assert json.loads(result["content"][0]["text"]) == result["structuredContent"]
        # A lone surrogate escape, which the SDK's JSON parser refuses, and a line that is not
        # JSON at all (ignored, as the SDK ignores it): the server answers what it can read.
        _send(process, {
            "jsonrpc": "2.0", "id": 3, "method": "tools/call",
            "params": {"name": "lantern_memory_add", "arguments": {"kind": "fact",
                                                                   "content": "a\ud800b"}},
        })  # fmt: skip
        answer = _receive(process)
        assert answer["id"] == 3 and answer["result"]["isError"] is True
        assert answer["result"]["content"][0]["text"] == "content is not valid UTF-8 text"
        assert process.stdin is not None
        process.stdin.write(b"not json\n")
        _send(process, {"jsonrpc": "2.0", "id": 4, "method": "ping"})
        assert _receive(process) == {"jsonrpc": "2.0", "id": 4, "result": {}}
        process.stdin.close()
        assert process.wait(timeout=30) == 0
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    assert process.stderr is not None
    assert process.stderr.read() == b""
