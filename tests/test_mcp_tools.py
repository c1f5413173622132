"""The MCP tool table and the server's handlers, without a subprocess: schemas against the CLI
and the API, argument checking, and the server's answers to failures it must survive."""

from __future__ import annotations

import inspect
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import click
import pytest
from jsonschema import Draft202012Validator
from mcp import Client, MCPError, types
from mcp.shared.message import SessionMessage
from pydantic import ValidationError

from lantern.api import Lantern
from lantern.cli import cli
from lantern.entities.repository import EntityRepository
from lantern.errors import InvalidInput
from lantern.evidence import chunking
from lantern.evidence import inputs as evidence_inputs
from lantern.evidence import reads as evidence_reads
from lantern.evidence.files import MAX_FILE_BYTES
from lantern.evidence.repository import EvidenceRepository
from lantern.mcpserver import arguments, evidence_tools, outputs
from lantern.mcpserver.server import TOOLS, Access, StoreHandle, build_server
from lantern.mcpserver.wire import clean_text, repaired
from lantern.memory.repository import MemoryRepository
from lantern.retrieval.modes import DEFAULT_MODE

SPECS = {spec.name: spec for spec in TOOLS}
# Each tool beside the CLI command it mirrors and the API call it makes.
MIRRORS: dict[str, tuple[list[str], Callable[..., Any]]] = {
    "lantern_memory_add": (["memory", "add"], MemoryRepository.get_or_add),
    "lantern_memory_list": (["memory", "list"], MemoryRepository.list),
    "lantern_memory_search": (["memory", "search"], MemoryRepository.search),
    "lantern_memory_similar": (["memory", "similar"], MemoryRepository.similar),
    "lantern_memory_show": (["memory", "show"], MemoryRepository.get),
    "lantern_memory_history": (["memory", "history"], MemoryRepository.history),
    "lantern_memory_update": (["memory", "update"], MemoryRepository.update),
    "lantern_memory_supersede": (["memory", "supersede"], MemoryRepository.supersede),
    "lantern_memory_archive": (["memory", "archive"], MemoryRepository.archive),
    "lantern_memory_restore": (["memory", "restore"], MemoryRepository.restore),
    "lantern_search": (["search"], EvidenceRepository.search),
    "lantern_source_show": (["source", "show"], EvidenceRepository.get_source),
    "lantern_chunk_show": (["chunk", "show"], EvidenceRepository.get_chunk),
    "lantern_ingest_text": (["ingest"], EvidenceRepository.ingest_text),
    "lantern_entity_list": (["entity", "list"], EntityRepository.list),
    "lantern_entity_show": (["entity", "show"], Lantern.entity_show),
    "lantern_entity_attach": (["entity", "attach"], EntityRepository.attach),
    "lantern_entity_detach": (["entity", "detach"], EntityRepository.detach),
}
# Tool arguments named differently in the API (the tool keeps the CLI's name).
API_NAMES = {
    "supersedes": "supersedes_id",
    "no_expiry": "clear_expiry",
    "chunk_size": "target_size",
}
# Flags that choose how a result renders (as the CLI's do), not what the API is asked.
RENDERING = {"explain", "chain"}
# A tool pages a source's chunks by default, where the CLI and the API show them all.
PAGED_BY_DEFAULT = {("lantern_source_show", "limit"), ("lantern_source_show", "no_chunks")}
# What the CLI takes some other way: the text of `ingest -` comes on stdin, the entity of
# `entity show` is its argument KIND:NAME|ID.
NOT_CLI_OPTIONS = {"lantern_ingest_text": {"text"}, "lantern_entity_show": {"entity"}}


def _cli_names(path: list[str]) -> set[str]:
    """Every name a parameter of this command goes by, in snake_case: its long option, its
    destination, and (for an argument) each part of its metavar (`ID|URI` gives id and uri)."""
    command: Any = cli
    for name in path:
        command = command.get_command(click.Context(command), name)
    names: set[str] = set()
    for param in command.params:
        assert param.name is not None
        names.add(param.name)
        for option in getattr(param, "opts", []):
            if option.startswith("--"):
                names.add(option[2:].replace("-", "_"))
        if isinstance(param, click.Argument) and param.metavar:
            names.update(part.lower() for part in param.metavar.split("|"))
    return names


def test_the_table_has_every_tool_once() -> None:
    assert len(SPECS) == len(TOOLS) == 18
    assert set(SPECS) == set(MIRRORS)


def _type_arrays(schema: Any, where: str) -> list[str]:
    """Where a schema gives `type` as an array (some clients accept only a single type)."""
    if isinstance(schema, list):
        return [found for item in schema for found in _type_arrays(item, where)]
    if not isinstance(schema, dict):
        return []
    found = [where] if isinstance(schema.get("type"), list) else []
    for key, value in schema.items():
        found += _type_arrays(value, f"{where}.{key}")
    return found


@pytest.mark.parametrize("name", list(MIRRORS))
def test_schemas_are_valid_and_closed(name: str) -> None:
    schema = SPECS[name].input_schema
    Draft202012Validator.check_schema(schema)
    assert schema["type"] == "object" and schema["additionalProperties"] is False
    for prop, fragment in schema["properties"].items():
        options = fragment.get("anyOf", [])
        typed = "type" in fragment or (options and all("type" in option for option in options))
        assert typed, f"{name}.{prop} has no type"


@pytest.mark.parametrize("name", list(MIRRORS))
def test_schemas_are_portable(name: str) -> None:
    spec = SPECS[name]
    for schema, where in ((spec.input_schema, "input"), (spec.output_schema, "output")):
        Draft202012Validator.check_schema(schema)
        assert _type_arrays(schema, f"{name}.{where}") == []


@pytest.mark.parametrize(
    "name", ["lantern_memory_list", "lantern_memory_search", "lantern_memory_similar"]
)
def test_a_page_of_records_costs_a_validating_client_one_node_a_record(name: str) -> None:
    # Clients validate each result against the schema, node by node (the SDK's Python client
    # at every call): a page's records are required by their fields' names, and each field's
    # type is the lone record's schema's (`RECORD`, that of lantern_memory_add and _show).
    items = SPECS[name].output_schema["properties"]["records"]["items"]
    assert items["type"] == "object"
    assert set(outputs.RECORD["required"]) <= set(items["required"])
    assert [key for key, value in items.items() if isinstance(value, dict)] == []


@pytest.mark.parametrize("name", list(MIRRORS))
def test_argument_names_are_the_cli_names(name: str) -> None:
    path, _api = MIRRORS[name]
    offered = set(SPECS[name].input_schema["properties"]) - NOT_CLI_OPTIONS.get(name, set())
    assert offered <= _cli_names(path), offered - _cli_names(path)


@pytest.mark.parametrize("name", list(MIRRORS))
def test_defaults_are_the_api_defaults(name: str) -> None:
    _path, api = MIRRORS[name]
    signature = inspect.signature(api)
    for prop, fragment in SPECS[name].input_schema["properties"].items():
        parameter = signature.parameters.get(API_NAMES.get(prop, prop))
        if (name, prop) in PAGED_BY_DEFAULT:
            continue
        if prop in RENDERING:
            assert parameter is None and fragment["default"] is False
        elif "default" in fragment:
            assert parameter is not None, f"{name}.{prop} is not an API argument"
            # The API takes None for the default mode, so that a raw query can tell "no mode".
            default = DEFAULT_MODE if prop == "mode" else parameter.default
            assert fragment["default"] == default, f"{name}.{prop}"


@pytest.mark.parametrize("name", list(MIRRORS))
def test_descriptions_say_what_not_when(name: str) -> None:
    spec = SPECS[name]
    text = spec.description.lower()
    for advice in ("use this", "call this", "you should", "when you", "before you", "always "):
        assert advice not in text, f"{name}: {advice!r}"
    assert text.endswith(".")


def test_evidence_limits_match_the_repository() -> None:
    assert evidence_tools.MAX_TEXT_BYTES == MAX_FILE_BYTES
    assert evidence_tools.MAX_CHUNK_PAGE == evidence_reads.MAX_CHUNK_PAGE
    assert evidence_tools.MAX_CONTEXT == evidence_inputs.MAX_CONTEXT
    assert evidence_tools.MAX_TARGET_SIZE == evidence_inputs.MAX_TARGET_SIZE
    assert evidence_tools.MAX_URI_CHARS == evidence_inputs.MAX_URI_CHARS
    assert evidence_tools.MIN_TARGET_SIZE == chunking.MIN_TARGET_SIZE


def test_write_tools_are_marked() -> None:
    writes = {spec.name for spec in TOOLS if spec.writes}
    assert writes == {
        "lantern_memory_add",
        "lantern_memory_update",
        "lantern_memory_supersede",
        "lantern_memory_archive",
        "lantern_memory_restore",
        "lantern_ingest_text",
        "lantern_entity_attach",
        "lantern_entity_detach",
    }
    assert all(not spec.destructive for spec in TOOLS if not spec.writes)


# --- arguments ---------------------------------------------------------------------------------


def test_integral_numbers_reach_the_repository_as_ints() -> None:
    spec = SPECS["lantern_memory_add"]
    checked = arguments.check(spec, {"kind": "fact", "content": "x", "priority": 70.0})
    assert checked["priority"] == 70 and type(checked["priority"]) is int
    confidence = arguments.check(spec, {"kind": "fact", "content": "x", "confidence": 1})
    assert confidence["confidence"] == 1


@pytest.mark.parametrize(
    ("name", "given", "message"),
    [
        ("lantern_memory_add", {"kind": "fact", "content": "x" * 100_001},
         "content is too long: 100001 characters, the limit is 100000"),
        ("lantern_memory_add", {"kind": "f" * 500, "content": "x"},
         'kind must be one of fact, preference, goal, constraint, task_state, observation, '
         'hypothesis; got "ffffffffffffffffffffffffffffffffffffffffffffffffffffffffff…'),
        ("lantern_memory_show", {"id": "x", "a": 1, "b": 2},
         "unknown argument 'a', 'b'; this tool takes id, chain"),
        ("lantern_memory_list", {"cites": [{"id": "x"}]}, "cites.0: missing required key 'type'"),
        ("lantern_memory_update", {"id": "x", "expires_at": True},
         "expires_at must be a number or a string; got boolean"),
    ],
)  # fmt: skip
def test_messages_are_one_short_line(name: str, given: dict[str, Any], message: str) -> None:
    with pytest.raises(InvalidInput) as refused:
        arguments.check(SPECS[name], given)
    assert refused.value.message == f"invalid arguments: {message}"


# --- the server's handlers, in process ---------------------------------------------------------


class _Broken:
    """Stands for a Lantern whose repository fails in a way nobody planned for."""

    class memory:
        @staticmethod
        def get(record_id: str) -> Any:
            raise RuntimeError("disk on fire\nsecond line")

    def close(self) -> None:
        pass


async def _calls(
    open_store: Callable[[], Any], calls: list[tuple[str, dict[str, Any]]], *, read_only: bool
) -> tuple[list[str], list[types.CallToolResult | MCPError]]:
    handle = StoreHandle(open_store, Access(read_only=read_only))
    await handle.open()
    results: list[types.CallToolResult | MCPError] = []
    try:
        async with Client(build_server(handle), mode="legacy") as client:
            names = [tool.name for tool in (await client.list_tools()).tools]
            for name, given in calls:
                try:
                    results.append(await client.call_tool(name, given))
                except MCPError as exc:
                    results.append(exc)
    finally:
        handle.close()
    return names, results


def _text(result: types.CallToolResult | MCPError) -> str:
    assert isinstance(result, types.CallToolResult) and result.is_error
    [content] = result.content
    assert isinstance(content, types.TextContent)
    return content.text


def test_an_unexpected_failure_is_a_one_line_tool_error() -> None:
    calls: list[tuple[str, dict[str, Any]]] = [
        ("lantern_memory_show", {"id": "mem_0000000000000001"}),
        ("lantern_memory_show", {"id": 7}),
    ]
    _names, results = anyio.run(lambda: _calls(_Broken, calls, read_only=False))
    assert _text(results[0]) == (
        "unexpected RuntimeError: disk on fire second line (the server's stderr has the "
        "traceback; please report it)"
    )
    assert _text(results[1]) == "invalid arguments: id must be a string; got integer"


def test_a_store_that_cannot_be_opened_is_the_error_of_every_call(tmp_path: Path) -> None:
    missing = tmp_path / "missing.db"
    calls = [("lantern_memory_list", {}), ("lantern_search", {"query": "x"})]
    names, results = anyio.run(
        lambda: _calls(lambda: Lantern.open(missing, read_only=True), calls, read_only=True)
    )
    assert "lantern_memory_list" in names and "lantern_memory_add" not in names
    message = (
        f"no Lantern store at {missing} (nothing is there); only commands that add something "
        "(memory add, ingest, import, db upgrade) create one"
    )
    assert [_text(result) for result in results] == [message] * 2
    assert not missing.exists()


def test_an_unknown_tool_is_a_protocol_error(store_url: str) -> None:
    def open_store() -> Lantern:
        return Lantern.open(store_url)

    calls = [("lantern_memory_add", {"kind": "fact", "content": "x"}), ("nope", {})]
    names, results = anyio.run(lambda: _calls(open_store, calls, read_only=True))
    assert len(names) == 10
    for result, name in zip(results, ["lantern_memory_add", "nope"], strict=True):
        assert isinstance(result, MCPError)
        assert (result.error.code, result.error.message) == (-32602, f"Unknown tool: {name}")
    with Lantern.open(store_url) as lt:
        assert lt.memory.list() == []


# --- the wire ----------------------------------------------------------------------------------


def test_a_line_only_python_can_parse_is_read_again() -> None:
    line = json.dumps({"jsonrpc": "2.0", "id": 7, "method": "ping", "params": {"x": "\ud800"}})
    with pytest.raises(ValidationError) as refused:
        types.jsonrpc_message_adapter.validate_json(line, by_name=False)
    message = repaired(refused.value)
    assert isinstance(message, SessionMessage)
    assert isinstance(message.message, types.JSONRPCRequest)
    assert message.message.id == 7
    for unreadable in ("not json", json.dumps({"not": "json-rpc"})):
        with pytest.raises(ValidationError) as still:
            types.jsonrpc_message_adapter.validate_json(unreadable, by_name=False)
        assert repaired(still.value) is still.value
    assert clean_text("a\ud800b") == "a\\ud800b" and clean_text("ü") == "ü"
