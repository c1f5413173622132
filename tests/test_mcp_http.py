"""`lantern mcp --http` as its clients see it: the SDK's own Streamable HTTP client against the
real process, beside the same calls over stdio, with tokens of different fences.

One HTTP server and one stdio server serve the module, on one store seeded through the CLI.
"""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Iterator
from dataclasses import dataclass
from http.client import HTTPConnection
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx2
import pytest
from click.testing import CliRunner
from mcp import MCPError, types

from lantern.api import Lantern
from lantern.cli import cli
from lantern.mcpserver import tokens
from tests.mcp_helpers import (
    HttpServer,
    McpClient,
    cli_json,
    http_client,
    http_server,
    module_store,
    running,
    server_parameters,
)

WRITE_TOOLS = {
    "lantern_memory_add",
    "lantern_memory_update",
    "lantern_memory_supersede",
    "lantern_memory_archive",
    "lantern_memory_restore",
    "lantern_ingest_text",
}
UNKNOWN = "mem_00000000000000ff"


@dataclass
class World:
    store: str
    tokens: Path
    secrets: dict[str, str]
    """Each label's token."""
    ids: dict[str, str]
    """Record ids by name: one per scope, and the evidence."""
    server: HttpServer


@pytest.fixture(scope="module", params=["sqlite", "postgres"])
def store(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[str]:
    yield from module_store(request, tmp_path_factory.mktemp("http-store"))


@pytest.fixture(scope="module")
def world(store: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    Lantern.open(store).close()
    home = tmp_path_factory.mktemp("http-home")
    token_file = home / "tokens.json"
    secrets = {
        "admin": tokens.add(token_file, "admin")[0],
        "ada": tokens.add(token_file, "ada", scopes=["user:ada*"])[0],
        "reader": tokens.add(token_file, "reader", scopes=["user:ada*"], read_only=True)[0],
    }
    ids = {}
    for scope in ("user:ada", "user:ada/notes", "user:bob", "team"):
        added = cli_json(store, "memory", "add", "--kind", "fact", "--scope", scope,
                         f"The {scope} deploy runs on Fridays.")  # fmt: skip
        ids[scope] = added["id"]
    ingested = cli_json(store, "ingest", "-", "--uri", "tool://ci/run-1", "--chunk-size", "100",
                        input="The deploy failed on a migration timeout. " * 20)  # fmt: skip
    ids["source"] = ingested["source"]["id"] if "source" in ingested else ""
    source = cli_json(store, "source", "show", "tool://ci/run-1")
    ids["source"], ids["chunk"] = source["id"], source["chunks"][0]["id"]
    env = {"LANTERN_BUSY_TIMEOUT": "5", "HOME": str(home)}
    with http_server(store, token_file, env=env) as server:
        yield World(store, token_file, secrets, ids, server)


@pytest.fixture(scope="module")
def admin(world: World) -> Iterator[McpClient]:
    with http_client(world.server.url, world.secrets["admin"]) as client:
        yield client


@pytest.fixture(scope="module")
def stdio(world: World, tmp_path_factory: pytest.TempPathFactory) -> Iterator[McpClient]:
    home = tmp_path_factory.mktemp("stdio-home")
    with running(server_parameters(world.store, home=home)) as client:
        yield client


def _post(url: str, headers: dict[str, str] | None = None) -> httpx2.Response:
    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-11-25",
            "capabilities": {},
            "clientInfo": {"name": "test", "version": "0"},
        },
    }
    headers = {"Accept": "application/json, text/event-stream", **(headers or {})}
    answer = httpx2.post(url, json=body, headers=headers, timeout=30)
    opened = answer.headers.get("mcp-session-id")
    if answer.status_code == 200 and opened:
        # Ended as a well-behaved client ends it: a token holds only so many sessions.
        ended = httpx2.delete(url, headers={**headers, "Mcp-Session-Id": opened}, timeout=30)
        assert ended.status_code == 200
    return answer


# --- the same server as stdio -----------------------------------------------------------------


def test_the_handshake_declares_tools_and_resources(admin: McpClient) -> None:
    capabilities = admin.initialized.capabilities
    assert capabilities.tools is not None and capabilities.resources is not None
    assert admin.initialized.server_info.name == "lantern"


def test_every_tool_answers_over_http_as_over_stdio(
    admin: McpClient, stdio: McpClient, world: World
) -> None:
    assert {name: tool.model_dump() for name, tool in admin.tools().items()} == {
        name: tool.model_dump() for name, tool in stdio.tools().items()
    }
    ids = world.ids
    calls: list[tuple[str, dict[str, Any]]] = [
        ("lantern_memory_list", {"status": "all", "explain": True}),
        ("lantern_memory_search", {"query": "deploy fridays", "explain": True}),
        ("lantern_memory_show", {"id": ids["team"], "chain": True}),
        ("lantern_memory_history", {"id": ids["team"]}),
        ("lantern_search", {"query": "migration"}),
        ("lantern_source_show", {"id": ids["source"], "limit": 2}),
        ("lantern_chunk_show", {"id": ids["chunk"], "context": 1}),
        # Writes that change nothing, so both servers see the same store.
        ("lantern_memory_add", {"kind": "fact", "scope": "team",
                                "content": "The team deploy runs on Fridays."}),
        ("lantern_memory_update", {"id": ids["team"], "priority": 50}),
        ("lantern_memory_restore", {"id": ids["team"]}),
    ]  # fmt: skip
    for name, given in calls:
        over_http, over_stdio = admin.call(name, given), stdio.call(name, given)
        assert over_http.model_dump() == over_stdio.model_dump(), name
        assert not over_http.is_error, name
    ingest = {"uri": "tool://ci/run-1", "text": "The deploy failed on a migration timeout. " * 20,
              "chunk_size": 100}  # fmt: skip
    unchanged = admin.ok("lantern_ingest_text", ingest)
    assert {**unchanged, "seconds": 0} == {**stdio.ok("lantern_ingest_text", ingest), "seconds": 0}
    failing: list[tuple[str, dict[str, Any]]] = [
        ("lantern_memory_show", {"id": UNKNOWN}),
        ("lantern_memory_list", {"limit": 0}),
        ("lantern_memory_supersede", {"old_id": ids["team"],
                                      "content": "The team deploy runs on Fridays."}),
        ("lantern_memory_archive", {"id": UNKNOWN}),
        ("lantern_ingest_text", {"uri": "", "text": "x"}),
    ]  # fmt: skip
    for name, given in failing:
        assert admin.error(name, given) == stdio.error(name, given), name


def test_resources_read_the_tools_json(admin: McpClient, world: World) -> None:
    templates = admin.portal.call(admin.session.list_resource_templates).resource_templates
    assert [template.uri_template for template in templates] == [
        "lantern://memory/{id}",
        "lantern://memory/{id}/history",
        "lantern://source/{id}",
        "lantern://chunk/{id}",
    ]
    ids = world.ids
    for uri, tool, given in [
        (f"lantern://memory/{ids['team']}", "lantern_memory_show", {"id": ids["team"]}),
        (f"lantern://memory/{ids['team']}/history", "lantern_memory_history",
         {"id": ids["team"]}),
        (f"lantern://source/{ids['source']}", "lantern_source_show", {"id": ids["source"]}),
        (f"lantern://chunk/{ids['chunk']}", "lantern_chunk_show", {"id": ids["chunk"]}),
    ]:  # fmt: skip
        [content] = admin.portal.call(admin.session.read_resource, uri).contents
        assert isinstance(content, types.TextResourceContents)
        assert content.mime_type == "application/json"
        assert json.loads(content.text) == admin.ok(tool, given)
    listed = admin.portal.call(admin.session.list_resources)
    active = admin.ok("lantern_memory_list", {})["records"]
    assert [entry.uri for entry in listed.resources] == [
        f"lantern://memory/{record['id']}" for record in active
    ]
    for uri in (f"lantern://memory/{UNKNOWN}", "lantern://nothing/1", "file:///etc/passwd"):
        with pytest.raises(MCPError) as missing:
            admin.portal.call(admin.session.read_resource, uri)
        assert missing.value.error.code == -32002


# --- tokens -----------------------------------------------------------------------------------


def test_a_token_sees_and_writes_only_its_scopes(world: World) -> None:
    ids = world.ids
    inside = {ids["user:ada"], ids["user:ada/notes"]}
    with http_client(world.server.url, world.secrets["ada"]) as ada:
        assert set(ada.tools()) >= WRITE_TOOLS
        listed = ada.ok("lantern_memory_list", {"status": "all"})["records"]
        assert {record["id"] for record in listed} == inside
        found = ada.ok("lantern_memory_search", {"query": "deploy"})["records"]
        assert {record["id"] for record in found} == inside
        resources = ada.portal.call(ada.session.list_resources).resources
        assert {entry.name for entry in resources} == inside
        for scope in ("user:bob", "team"):
            outside = ids[scope]
            message = f"no memory record with id {outside!r}"
            assert ada.error("lantern_memory_show", {"id": outside}) == message
            assert ada.error("lantern_memory_history", {"id": outside}) == message
            assert ada.error("lantern_memory_archive", {"id": outside}) == message
            with pytest.raises(MCPError) as hidden:
                ada.portal.call(ada.session.read_resource, f"lantern://memory/{outside}")
            assert hidden.value.error.code == -32002
        refused = ada.error("lantern_memory_add", {"kind": "fact", "scope": "team", "content": "x"})
        assert "outside the scopes" in refused
        added = ada.ok("lantern_memory_add", {"kind": "fact", "scope": "user:ada", "content": "y"})
        assert added["scope"] == "user:ada"
        # Evidence is shared by every token, as under --scope.
        assert ada.ok("lantern_search", {"query": "migration"})["hits"]


def test_a_read_only_token_has_no_write_tool(world: World) -> None:
    with http_client(world.server.url, world.secrets["reader"]) as reader:
        assert not set(reader.tools()) & WRITE_TOOLS
        for name in WRITE_TOOLS:
            with pytest.raises(MCPError) as unknown:
                reader.call(name, {"id": world.ids["user:ada"], "kind": "fact", "content": "x"})
            assert unknown.value.error.message == f"Unknown tool: {name}"
        records = reader.ok("lantern_memory_list", {"status": "all"})["records"]
        assert {record["scope"] for record in records} <= {"user:ada", "user:ada/notes"}
    assert cli_json(world.store, "memory", "list", "--scope", "user:ada", "--json")


def test_a_missing_wrong_or_revoked_token_gets_401(world: World, tmp_path: Path) -> None:
    url = world.server.url
    for headers in (
        {},
        {"Authorization": "Bearer lantern_not-a-token"},
        {"Authorization": f"Basic {world.secrets['admin']}"},
    ):
        refused = _post(url, headers)
        assert refused.status_code == 401
        assert refused.headers["www-authenticate"].startswith("Bearer ")
        assert refused.json() == {
            "error": "invalid_token",
            "error_description": "Authentication required",
        }
    # A revoked token is refused from the next request, without a restart.
    secret, _grant = tokens.add(world.tokens, "short-lived")
    assert _post(url, {"Authorization": f"Bearer {secret}"}).status_code == 200
    with http_client(url, secret) as client:
        assert client.ok("lantern_memory_list", {"limit": 1})
        tokens.revoke(world.tokens, "short-lived")
        with pytest.raises(Exception):  # noqa: B017 - the transport fails on the 401
            client.call("lantern_memory_list", {"limit": 1})
    assert _post(url, {"Authorization": f"Bearer {secret}"}).status_code == 401
    # The token never reaches the log; its label may.
    assert secret not in world.server.log.read_text()


@pytest.mark.parametrize(
    ("headers", "status"),
    [
        ({"Host": "evil.example.com"}, 421),
        ({"Host": "evil.example.com:80"}, 421),
        ({"Origin": "http://evil.example.com"}, 403),
        ({"Origin": "null"}, 403),
        # Forms that only start like one of the server's names.
        ({"Host": "localhost:8765@evil.example"}, 421),
        ({"Host": "localhost:evil"}, 421),
        ({"Host": "localhost.evil.example"}, 421),
        ({"Host": "127.0.0.1:99999"}, 421),
        ({"Origin": "http://localhost:8765.evil.example"}, 403),
        ({"Origin": "http://localhost@evil.example"}, 403),
        ({"Origin": "http://127.0.0.1:8765/x"}, 403),
    ],
)
def test_another_host_or_origin_is_refused(
    world: World, headers: dict[str, str], status: int
) -> None:
    token = {"Authorization": f"Bearer {world.secrets['admin']}"}
    assert _post(world.server.url, {**token, **headers}).status_code == status
    assert _post(world.server.url, headers).status_code == status  # before the token is asked
    good = {"Origin": world.server.url.removesuffix("/mcp"), **token}
    assert _post(world.server.url, good).status_code == 200


def test_an_oversized_body_is_refused(world: World) -> None:
    from lantern.mcpserver.http import MAX_BODY_BYTES

    # Refused on its declared length, before a byte of it is read.
    address = urlsplit(world.server.url)
    connection = HTTPConnection(address.hostname or "", address.port, timeout=30)
    connection.putrequest("POST", address.path)
    for name, value in (
        ("Authorization", f"Bearer {world.secrets['admin']}"),
        ("Content-Type", "application/json"),
        ("Accept", "application/json, text/event-stream"),
        ("Content-Length", str(MAX_BODY_BYTES + 1)),
    ):
        connection.putheader(name, value)
    connection.endheaders()
    assert connection.getresponse().status == 413
    connection.close()


# --- the command line -------------------------------------------------------------------------


def test_token_commands(tmp_path: Path) -> None:
    path = tmp_path / "tokens.json"
    runner = CliRunner()
    added = runner.invoke(
        cli,
        ["mcp", "token", "add", "--tokens", str(path), "--label", "bot", "--scope", "x:*",
         "--read-only", "--json"],
    )  # fmt: skip
    assert added.exit_code == 0, added.output
    shown = json.loads(added.stdout)
    assert shown["token"].startswith("lantern_") and shown["label"] == "bot"
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    assert shown["token"] not in path.read_text()
    listed = runner.invoke(cli, ["mcp", "token", "list", "--tokens", str(path), "--json"])
    assert json.loads(listed.stdout) == [
        {"label": "bot", "scopes": ["x:*"], "read_only": True, "created_at": shown["created_at"]}
    ]
    again = runner.invoke(cli, ["mcp", "token", "add", "--tokens", str(path), "--label", "bot"])
    assert again.exit_code == 1 and "exists already" in again.stderr
    revoked = runner.invoke(cli, ["mcp", "token", "revoke", "--tokens", str(path), "bot"])
    assert revoked.exit_code == 0 and revoked.stdout == "revoked bot\n"
    missing = runner.invoke(cli, ["mcp", "token", "revoke", "--tokens", str(path), "bot"])
    assert missing.exit_code == 1
    os.chmod(path, 0o644)
    loose = runner.invoke(cli, ["mcp", "token", "list", "--tokens", str(path)])
    assert loose.exit_code == 7 and "chmod 600" in loose.stderr


def test_an_ambiguous_scope_pattern_makes_no_token(tmp_path: Path) -> None:
    path = tmp_path / "tokens.json"
    for pattern in ("user:*/notes", "team:*:ops"):
        refused = CliRunner().invoke(
            cli, ["mcp", "token", "add", "--tokens", str(path), "--label", "x", "--scope", pattern]
        )
        assert refused.exit_code == 1
        assert refused.stderr == (
            f"Error: --scope pattern {pattern!r} has a * before its end: a * matches only at the "
            "end of a pattern (write \\* for a literal star)\n"
        )
        assert not path.exists()
    added = CliRunner().invoke(
        cli, ["mcp", "token", "add", "--tokens", str(path), "--label", "x", "--scope", "a\\*b*"]
    )
    assert added.exit_code == 0, added.output


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--http", "8765"], "--http needs --tokens FILE"),
        (["--http", "x:y", "--tokens", "t.json"], "is not [HOST:]PORT"),
        (["--http", "8765", "--tokens", "t.json", "--scope", "a"], "--scope does not go"),
        (["--tokens", "t.json"], "--tokens goes with --http"),
        (["--allow-host", "x", "--session-idle", "2"], "--allow-host and --session-idle go with"),
        (["--http", "8765", "--tokens", "t.json", "--session-idle", "0"], "0<x<=1440"),
        (["--http", "8765", "--tokens", "t.json", "--max-connections", "0"], "1<=x<=1000000"),
        (["--http", "8765", "--tokens", "missing.json"], "no token file at missing.json"),
    ],
)
def test_http_options_fail_before_anything_starts(
    args: list[str], message: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(cli, ["--db", str(tmp_path / "s.db"), "mcp", *args])
    assert result.exit_code in (1, 2)
    assert message in result.stderr
    assert not (tmp_path / "s.db").exists()
