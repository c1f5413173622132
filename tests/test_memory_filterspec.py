"""The memory filters' table against every surface that offers them: the Python methods'
signatures and their checks, the CLI's options, the MCP tools' properties and the web view's
fields, each with the table's names, defaults and words."""

from __future__ import annotations

import inspect
import typing
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import click
import pytest
from starlette.testclient import TestClient

from lantern.api import Lantern
from lantern.cli import cli
from lantern.errors import InvalidInput, LanternError
from lantern.mcpserver import spec as mcp_spec
from lantern.mcpserver.memory_tools import MEMORY_TOOLS
from lantern.memory.filterspec import BY_NAME, CITING, FILTERS, Filter, offered
from lantern.memory.repository import MemoryRepository
from lantern.ui.app import build_app
from lantern.ui.fields import MEMORY_FILTERS
from lantern.ui.views import Site
from tests.helpers import command_at

# What the methods, commands and tools take besides the filters.
NOT_FILTERS = {
    "list": {"self", "limit", "offset", "after"},
    "search": {
        "self",
        "query",
        "mode",
        "model",
        "order",
        "limit",
        "offset",
        "after",
        "min_similarity",
        "floor",  # the relevance floor: how far a search reads, not a filter
    },
}
CLI_NOT_FILTERS = {"offset", "after", "with_cursor", "explain", "limit", "as_json", "db"}
CLI_SEARCH_ONLY = {"query", "mode", "model", "order", "min_similarity", "floor"}
MCP_NOT_FILTERS = {"offset", "after", "explain", "limit", "query", "mode", "model", "order"} | {
    "min_similarity",
    "floor",
}
MCP_TOOLS = {spec.name: spec for spec in MEMORY_TOOLS}


@pytest.fixture
def sqlite_lt(tmp_path: Path) -> Iterator[Lantern]:
    # Checking arguments is the same on every engine: it happens before any SQL.
    with Lantern.open(str(tmp_path / "lantern.db")) as lantern:
        lantern.memory.add(kind="fact", content="The build uses make.", scope="project:x")
        yield lantern


def test_the_table_is_whole() -> None:
    assert len(BY_NAME) == len(FILTERS)
    for spec in FILTERS:
        assert spec.help.endswith(".") and "\n" not in spec.help, spec.name
        assert spec.cli_option.startswith("--"), spec.name
        if "web" in spec.surfaces:
            assert spec.label, spec.name
    assert set(CITING) <= set(BY_NAME)


# --- Python -------------------------------------------------------------------------------------


@pytest.mark.parametrize("method", ["list", "search"])
def test_the_methods_take_exactly_the_tables_filters(method: str) -> None:
    """Each listing method names every Python filter as an explicit keyword parameter, with
    the table's annotation and default (IDEs and mypy read the signature)."""
    function = getattr(MemoryRepository, method)
    parameters = inspect.signature(function).parameters
    hints = typing.get_type_hints(function)
    filters = set(parameters) - NOT_FILTERS[method]
    assert filters == {spec.name for spec in offered("python")}
    for spec in offered("python"):
        parameter = parameters[spec.name]
        assert parameter.kind is inspect.Parameter.KEYWORD_ONLY, spec.name
        assert parameter.default == spec.default, spec.name
        assert hints[spec.name] == spec.value.python, spec.name


def test_citing_takes_its_filters_with_its_defaults() -> None:
    parameters = inspect.signature(MemoryRepository.citing).parameters
    hints = typing.get_type_hints(MemoryRepository.citing)
    assert set(parameters) - {"self", "ref", "limit", "after"} == set(CITING)
    for name, default in CITING.items():
        assert parameters[name].default == default, name
        assert hints[name] == BY_NAME[name].value.python, name


WRONG_TYPES: list[tuple[str, Any, str]] = [
    ("cites", 5, "cites must be a string (TYPE:ID), a dict or a list of them, not int"),
    ("cites", [5], "cites must hold strings (TYPE:ID) or dicts, not int"),
    ("min_priority", "x", "min_priority must be an integer from 0 to 100; got 'x'"),
    ("scope", 5, "scope must be a string or a list of strings, not int"),
    ("scope", b"user:*", "scope must be a string or a list of strings, not bytes"),
    ("kind", {"fact": 1}, "kind must be a string or a list of strings, not dict"),
    ("entity", 5, "entity must be a string (KIND:NAME or ent_ id) or a list of them, not int"),
    ("entity", [5.0], "entity must hold strings (KIND:NAME or ent_ ids), not float"),
    ("include_expired", "no", "include_expired must be True or False, not str"),
    ("status", 5, "status must be one of active, archived, superseded, all; got 5"),
]


@pytest.mark.parametrize(("name", "value", "message"), WRONG_TYPES)
def test_a_wrongly_typed_filter_is_named_in_pythons_words(
    sqlite_lt: Lantern, name: str, value: Any, message: str
) -> None:
    for call in (sqlite_lt.memory.list, lambda **kw: sqlite_lt.memory.search("make", **kw)):
        with pytest.raises(InvalidInput) as raised:
            call(**{name: value})
        assert raised.value.message == message


@pytest.mark.parametrize("spec", FILTERS, ids=lambda spec: spec.name)
def test_every_filter_refuses_a_value_of_no_type_it_takes(sqlite_lt: Lantern, spec: Filter) -> None:
    """Whatever the filter, a value it cannot take is a `LanternError` naming it, never a
    `TypeError` from deeper down."""
    wrong: dict[str, Any] = {spec.name: object()}
    with pytest.raises(LanternError) as raised:
        if "python" in spec.surfaces:
            sqlite_lt.memory.list(**wrong)
        else:
            sqlite_lt.memory.citing("chunk:chk_0123456789abcdef", **wrong)
    assert raised.value.message.startswith(f"{spec.name} must"), raised.value.message


def test_the_accepted_forms_still_filter(sqlite_lt: Lantern) -> None:
    memory = sqlite_lt.memory
    memory.add(kind="goal", content="Ship it.", scope="user:ada", priority=90)
    assert [r.kind for r in memory.list(scope="user:*")] == ["goal"]
    assert [r.kind for r in memory.list(scope=("user:ada", "project:x"), kind={"goal"})] == ["goal"]
    assert [r.kind for r in memory.list(kind=(k for k in ["fact"]))] == ["fact"]
    assert [r.kind for r in memory.list(min_priority=80, include_expired=True)] == ["goal"]
    assert len(memory.list(cites=[], entity=())) == 2


# --- the CLI ------------------------------------------------------------------------------------


def _options(path: tuple[str, ...]) -> dict[str, click.Option]:
    command = command_at(cli, path)
    return {p.name: p for p in command.params if isinstance(p, click.Option) and p.name}


def _check_option(option: click.Option, spec: Filter, default: Any) -> None:
    assert option.opts == [spec.cli_option], spec.name
    assert option.help == spec.help + (" Repeatable." if spec.repeatable else ""), spec.name
    assert option.multiple == spec.repeatable, spec.name
    assert option.is_flag == (spec.value.form == "flag"), spec.name
    if spec.value.form == "choice":
        assert isinstance(option.type, click.Choice)
        assert tuple(option.type.choices) == spec.value.choices
    if default is None:
        assert not option.show_default, spec.name
    elif not option.is_flag:
        assert option.default == default and option.show_default, spec.name


@pytest.mark.parametrize("command", ["list", "search"])
def test_the_cli_offers_every_filter_in_the_tables_words(command: str) -> None:
    options = _options(("memory", command))
    filters = set(options) - CLI_NOT_FILTERS - CLI_SEARCH_ONLY
    assert filters == {spec.name for spec in offered("cli")}
    for spec in offered("cli"):
        _check_option(options[spec.name], spec, spec.default)
    # In the table's order, so the help lists them as the other surfaces do.
    names = [name for name in options if name in filters]
    assert names == [spec.name for spec in offered("cli")]


def test_memory_cites_takes_its_filters_in_the_tables_words() -> None:
    options = _options(("memory", "cites"))
    for name, default in CITING.items():
        if name in options:
            _check_option(options[name], BY_NAME[name], default)
    assert {"through_chunks", "status"} <= set(options)


# --- MCP ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("tool", ["lantern_memory_list", "lantern_memory_search"])
def test_the_mcp_tools_offer_every_filter_in_the_tables_words(tool: str) -> None:
    properties = MCP_TOOLS[tool].input_schema["properties"]
    filters = [name for name in properties if name not in MCP_NOT_FILTERS]
    assert filters == [spec.name for spec in offered("mcp")]
    for spec in offered("mcp"):
        fragment = properties[spec.name]
        assert fragment["description"] == spec.help, spec.name
        if spec.repeatable:
            assert fragment["type"] == "array" and fragment["items"] == spec.value.schema
        else:
            assert {k: v for k, v in fragment.items() if k not in ("description", "default")} == (
                spec.value.schema
            )
        assert fragment.get("default") == spec.default, spec.name


def test_the_tables_values_are_the_schemas_of_the_other_memory_tools() -> None:
    """A range or a vocabulary tightened for `lantern_memory_add` must be tightened for the
    filters too (and the other way round)."""
    values = {spec.name: spec.value.schema for spec in FILTERS}
    assert values["scope"] == mcp_spec.SCOPE
    assert values["kind"] == mcp_spec.KIND
    assert values["min_priority"] == values["min_urgency"] == mcp_spec.PERCENT
    assert values["min_confidence"] == mcp_spec.CONFIDENCE
    assert values["updated_since"] == mcp_spec.TIME
    assert values["entity"] == mcp_spec.ENTITY
    assert values["cites"]["anyOf"] == mcp_spec.REF["anyOf"]
    status = {k: v for k, v in mcp_spec.STATUS_FILTER.items() if k in ("type", "enum")}
    assert values["status"] == status
    assert mcp_spec.STATUS_FILTER["description"] == BY_NAME["status"].help


# --- the web view -------------------------------------------------------------------------------


def test_the_web_view_offers_every_filter_in_the_tables_words() -> None:
    assert [field.name for field in MEMORY_FILTERS] == [spec.name for spec in offered("web")]
    for field in MEMORY_FILTERS:
        spec = BY_NAME[field.name]
        assert field.help == spec.help and field.label == spec.label and field.hint == spec.hint
        assert field.option == spec.cli_option
        assert field.repeated == spec.repeatable
        assert field.choices == spec.value.choices


def test_the_web_form_shows_each_filters_help(sqlite_lt: Lantern, tmp_path: Path) -> None:
    token = "test-token-0123456789"
    app = build_app(Site(sqlite_lt, ("--db", str(tmp_path / "lantern.db"))), token=token)
    client = TestClient(
        app, base_url="http://127.0.0.1:8470", headers={"Authorization": f"Bearer {token}"}
    )
    for path in ("/memory", "/memory/search?q=make"):
        page = client.get(path)
        assert page.status_code == 200
        for spec in offered("web"):
            assert f'title="{spec.help}"' in page.text, (path, spec.name)
