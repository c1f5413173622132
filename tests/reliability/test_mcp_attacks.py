"""The MCP server under attack: generated arguments, and random calls against its scope fence.

Both run a real `lantern mcp` process and talk to it with the MCP SDK's client over stdio.

* Generated arguments: every tool, with values made from its own input schema and from
  hostile text (Unicode, control characters, huge strings, FTS syntax), wrong types, numbers
  out of range and keys it does not know. Every call must come back as a result or as a
  one-line tool error, never as a protocol error or an "unexpected" error, and the server must
  log nothing (a traceback would be in its log). The SDK's client cannot send a lone surrogate
  (it fails to encode the request), so one test writes such requests as raw JSON-RPC.
* Scope confinement: a server confined to some scopes gets random sequences of calls with ids
  and scopes from inside, from outside and from nowhere. No result may show a record of another
  scope, an error about a record outside must read exactly as one about an id that names
  nothing, and no record outside may change, nor any appear there.
"""

from __future__ import annotations

import json
import os
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

import click
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lantern.api import Lantern
from lantern.memory.scopes import ScopePolicy
from tests.helpers import LANTERN_BIN
from tests.reliability.conftest import Figures
from tests.reliability.mcp_client import mcp_server, text_of
from tests.reliability.tools import Tier, is_postgres, sized

# Text as a JSON request can carry it: any character but a lone surrogate (see the docstring).
TEXT_CHAR = st.characters(exclude_categories=["Cs"])
FRAGMENTS = st.sampled_from(
    ['"', "*", "OR", "NOT", "NEAR(", ")", "text:", "<->", "'", "\\", "\x00", "%", "_", ";",
     "' OR 1=1 --", "\u2028", "\U0001f525", "日本語", "\x1b[0m", "mem_", "chunk:", "session:"]
)  # fmt: skip
HOSTILE_TEXT = st.one_of(
    st.text(TEXT_CHAR, max_size=60),
    st.lists(st.one_of(FRAGMENTS, st.text(TEXT_CHAR, max_size=6)), max_size=12).map(" ".join),
    st.builds(
        lambda part, n: part * n,
        st.text(TEXT_CHAR, min_size=1, max_size=8),
        st.integers(1, 12_000),
    ),
)
SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**63), 2**63),
    st.floats(allow_nan=False, allow_infinity=False),
    HOSTILE_TEXT,
)
ANY_JSON = st.recursive(
    SCALARS,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4),
        st.dictionaries(st.text(TEXT_CHAR, max_size=8), inner, max_size=4),
    ),
    max_leaves=8,
)  # fmt: skip


def _settings(examples: int) -> settings:
    return settings(
        max_examples=examples,
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
        print_blob=True,
    )


def _value_for(schema: dict[str, Any], known: list[str], hostile: bool) -> st.SearchStrategy[Any]:
    """A value for one property: of its type and in its range, or (`hostile`) sometimes of
    any JSON shape and out of range."""
    # A middle value picks the odd one out: Hypothesis draws the ends of a range more often.
    if hostile:
        return st.integers(0, 4).flatmap(
            lambda n: ANY_JSON if n == 2 else _typed_value(schema, known, hostile)
        )
    return _typed_value(schema, known, hostile)


def _typed_value(schema: dict[str, Any], known: list[str], hostile: bool) -> st.SearchStrategy[Any]:
    """Values of the property's type: numbers at and past its bounds, hostile text, known ids."""
    branches = schema.get("anyOf", [schema])
    types = [branch.get("type") for branch in branches]
    if "enum" in schema:
        return st.sampled_from(schema["enum"])
    if "pattern" in schema:
        return (
            st.one_of(st.sampled_from(known), HOSTILE_TEXT) if hostile else st.sampled_from(known)
        )
    slack = 5 if hostile else 0
    options: list[st.SearchStrategy[Any]] = []
    if "integer" in types:
        low, high = schema.get("minimum", -1000), schema.get("maximum", 1000)
        options.append(st.integers(low - slack, min(high, 10_000) + slack))
    if "number" in types:
        low, high = schema.get("minimum", -1e6), schema.get("maximum", 1e6)
        options.append(st.floats(low - slack, high + slack, allow_nan=False))
    if "boolean" in types:
        options.append(st.booleans())
    if "string" in types:
        options += [HOSTILE_TEXT, st.sampled_from(known)]
    if "array" in types:
        item = schema.get("items", {})
        values = _value_for(item, known, hostile) if item else ANY_JSON
        options.append(st.lists(values, max_size=3))
    if "object" in types:
        options.append(st.dictionaries(st.sampled_from(["type", "id", "note"]), HOSTILE_TEXT))
    return st.one_of(options) if options else ANY_JSON


@st.composite
def _calls(draw: st.DrawFn, tools: list[Any], known: list[str]) -> tuple[str, dict[str, Any]]:
    tool = draw(st.sampled_from(tools))
    schema = tool.input_schema
    hostile = draw(st.integers(0, 3)) == 2
    arguments: dict[str, Any] = {}
    for name, prop in schema.get("properties", {}).items():
        if name in schema.get("required", []) or draw(st.booleans()):
            arguments[name] = draw(_value_for(prop, known, hostile))
    if hostile and draw(st.booleans()):
        arguments[draw(st.text(TEXT_CHAR, min_size=1, max_size=10))] = draw(ANY_JSON)
    return tool.name, arguments


def _assert_answered(name: str, arguments: dict[str, Any], result: Any) -> bool:
    """A result, or a one-line tool error that is not an unexpected one; True for an error."""
    texts = text_of(result)
    if result.is_error:
        assert len(texts) == 1 and "\n" not in texts[0] and texts[0], (name, arguments, texts)
        assert "unexpected" not in texts[0], (name, arguments, texts[0])
        return True
    assert isinstance(result.structured_content, dict), (name, arguments)
    assert json.loads(texts[0]) == result.structured_content
    return False


def _seed(lt: Lantern) -> list[str]:
    ids = []
    for n, scope in enumerate(["global", "user:ada", "team:a/x"]):
        ids.append(lt.memory.add(kind="fact", content=f"seed {n} alpha", scope=scope).id)
    source = lt.evidence.ingest_text("tool://seed", "# Seed\n\nalpha bravo charlie\n").source
    chunks = lt.evidence.get_source(source.id).chunks
    assert chunks
    chunk = chunks[0]
    return [*ids, source.id, chunk.id, f"chunk:{chunk.id}", f"source:{source.id}"]


def test_generated_mcp_arguments_get_an_answer_never_a_crash(
    store_url: str, tier: Tier, figures: Figures
) -> None:
    examples = sized(tier, store_url).examples
    with Lantern.open(store_url) as lt:
        known = _seed(lt)
    counts = {"calls": 0, "errors": 0}
    used: set[str] = set()
    started = time.monotonic()
    with mcp_server(store_url) as server:
        tools = server.tools()

        @_settings(examples)
        @given(_calls(tools, known))
        def any_call(call: tuple[str, dict[str, Any]]) -> None:
            name, arguments = call
            result = server.call(name, arguments)
            counts["calls"] += 1
            counts["errors"] += _assert_answered(name, arguments, result)
            used.add(name)

        any_call()
        log = server.server_log()
    assert log.strip() == "", log[:2000]
    engine = "postgres" if is_postgres(store_url) else "sqlite"
    figures(
        f"{engine}: {counts['calls']} generated calls over {len(used)} of {len(tools)} tools: "
        f"{counts['calls'] - counts['errors']} results, {counts['errors']} one-line tool "
        f"errors, 0 protocol errors, 0 unexpected errors, server log empty; "
        f"{time.monotonic() - started:.1f} s"
    )
    assert counts["calls"] == examples


def test_lone_surrogates_in_raw_json_rpc_do_not_stop_the_server(
    tmp_path: Path, figures: Figures
) -> None:
    """The SDK's client cannot send them; a client of another make can, as JSON escapes.

    Each must get an answer (a one-line error, or a search that finds nothing), the server
    must go on serving, without a traceback, and nothing of them may be stored. Standard input
    stays open until every request is answered: the server handles requests concurrently, so
    answers may come in any order, and at the end of its input it cancels what is in flight.
    """
    store = tmp_path / "store.db"
    Lantern.open(store).close()
    hostile = [
        ("lantern_memory_add", {"kind": "fact", "content": "a\ud800b"}),
        ("lantern_memory_search", {"query": "\udfff\ud83d"}),
        ("lantern_memory_show", {"id": "mem_\udcff"}),
    ]
    messages: list[dict[str, Any]] = [
        {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {},
            "clientInfo": {"name": "raw", "version": "0"}}},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        *({"jsonrpc": "2.0", "id": n, "method": "tools/call",
           "params": {"name": name, "arguments": arguments}}
          for n, (name, arguments) in enumerate(hostile, 1)),
        {"jsonrpc": "2.0", "id": 9, "method": "tools/call", "params": {
            "name": "lantern_memory_add", "arguments": {"kind": "fact", "content": "still here"}}},
    ]  # fmt: skip
    server = subprocess.Popen(
        [str(LANTERN_BIN), "mcp"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "LANTERN_DB": str(store)},
    )
    assert server.stdin is not None and server.stdout is not None
    server.stdin.write("".join(json.dumps(message) + "\n" for message in messages))
    server.stdin.flush()
    lines = []
    waiting = {message["id"] for message in messages if "id" in message}
    watchdog = threading.Timer(60, server.kill)  # a request never answered ends the wait
    watchdog.start()
    try:
        while waiting:
            line = server.stdout.readline()
            assert line, f"the server stopped answering; no answer to {sorted(waiting)}"
            lines.append(line)
            waiting.discard(json.loads(line).get("id"))
    finally:
        watchdog.cancel()
    _rest, stderr = server.communicate(timeout=60)
    done = subprocess.CompletedProcess(server.args, server.returncode, "".join(lines), stderr)
    answers = {a["id"]: a for a in map(json.loads, done.stdout.splitlines()) if "id" in a}
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr
    assert answers[9]["result"]["isError"] is False
    answered = [n for n in range(1, len(hostile) + 1) if n in answers]
    assert answered == [1, 2, 3], answers
    for number in answered:
        assert "unexpected" not in json.dumps(answers[number])
    with Lantern.open(store) as lt:
        assert [r.content for r in lt.memory.list()] == ["still here"]
    figures(
        f"raw JSON-RPC with lone surrogate escapes (which the SDK's client cannot send): "
        f"{len(hostile)} requests, {len(answered)} answered, the server went on serving, no "
        "traceback, nothing stored from them"
    )


# --- scope confinement -----------------------------------------------------------------------

ALLOWED = ["team:a/*", "user:ada"]
INSIDE_SCOPES = ["team:a/x", "team:a/y/z", "user:ada"]
OUTSIDE_SCOPES = ["team:a", "team:ab/x", "team:b", "user:adam", "user:ad", "global", "team:a*"]
ID_TOOLS_NOT_FOUND = "lantern_memory_show"


def _seed_scopes(lt: Lantern) -> tuple[list[str], list[str]]:
    """Records inside and outside, with supersede links that cross the fence both ways."""
    inside, outside = [], []
    for n, scope in enumerate(INSIDE_SCOPES):
        inside.append(lt.memory.add(kind="fact", content=f"inside {n} alpha", scope=scope).id)
    for n, scope in enumerate(OUTSIDE_SCOPES):
        outside.append(lt.memory.add(kind="fact", content=f"outside {n} alpha", scope=scope).id)
    # An outside record replaced by an inside one, and an inside one by an outside one.
    crossed_in = lt.memory.supersede(outside[0], scope="team:a/x", content="crossed in alpha")
    crossed_out = lt.memory.supersede(inside[1], scope="team:b", content="crossed out alpha")
    inside.append(crossed_in.id)
    outside.append(crossed_out.id)
    return inside, outside


def _outside_state(lt: Lantern, policy: ScopePolicy) -> dict[str, Any]:
    """Every record of a scope the server may not touch, with its history."""
    records = lt.memory.list(status="all", include_expired=True, limit=10_000)
    return {r.id: (r, len(lt.memory.history(r.id))) for r in records if not policy.allows(r.scope)}


def _leaks(value: Any, outside: set[str], policy: ScopePolicy, key: str = "") -> list[str]:
    """What a result shows of the records outside: their scopes, or their ids anywhere (a
    visible record's links to one read as the placeholder)."""
    found = []
    if isinstance(value, dict):
        if (
            isinstance(value.get("scope"), str)
            and "id" in value
            and not policy.allows(value["scope"])
        ):
            found.append(f"a record of scope {value['scope']!r}")
        for name, item in value.items():
            found += _leaks(item, outside, policy, name)
    elif isinstance(value, list):
        for item in value:
            found += _leaks(item, outside, policy, key)
    elif isinstance(value, str):
        found += [f"{key}: {record_id}" for record_id in outside if record_id in value]
    return found


@st.composite
def _sequence(
    draw: st.DrawFn, tools: list[Any], inside: list[str], outside: list[str]
) -> list[tuple[str, dict[str, Any]]]:
    ids = st.one_of(
        st.sampled_from(inside), st.sampled_from(outside), st.just("mem_0123456789abcdef")
    )
    scopes = st.sampled_from(INSIDE_SCOPES + OUTSIDE_SCOPES + ["team:*", "*", "user:*"])
    calls = []
    for _ in range(draw(st.integers(1, 6))):
        tool = draw(st.sampled_from(tools))
        properties = tool.input_schema.get("properties", {})
        required = tool.input_schema.get("required", [])
        arguments: dict[str, Any] = {}
        for name in properties:
            if name not in required and not draw(st.booleans()):
                continue
            if name in ("id", "old_id", "supersedes"):
                arguments[name] = draw(ids)
            elif name == "scope":
                scope = draw(scopes)
                is_list = properties[name].get("type") == "array"
                arguments[name] = [scope] if is_list else scope
            elif name in ("content", "query"):
                arguments[name] = draw(st.sampled_from(["alpha", "new words", "crossed"]))
            elif name == "kind":
                arguments[name] = "fact"
            elif name in ("priority", "urgency"):
                arguments[name] = draw(st.integers(0, 100))
            elif name == "status":
                arguments[name] = draw(st.sampled_from(["active", "all", "superseded"]))
            elif name == "cites":
                arguments[name] = [draw(st.sampled_from(["session:s", "chunk:chk_x"]))]
            elif name in required:
                arguments[name] = draw(st.sampled_from(["tool://x", "alpha text"]))
        calls.append((tool.name, arguments))
    return calls


def test_a_confined_server_never_reads_or_writes_outside_its_scopes(
    store_url: str, tier: Tier, figures: Figures
) -> None:
    examples = sized(tier, store_url).sequences
    policy = ScopePolicy.of(ALLOWED)
    with Lantern.open(store_url) as lt:
        inside, outside = _seed_scopes(lt)
        before = _outside_state(lt, policy)
    counts = {"sequences": 0, "calls": 0, "refused": 0}
    started = time.monotonic()
    args = [arg for pattern in ALLOWED for arg in ("--scope", pattern)]
    with mcp_server(store_url, *args) as server, Lantern.open(store_url) as lt:
        tools = server.tools()
        unknown = "mem_0123456789abcdef"
        not_found = {
            tool.name: text_of(server.call(tool.name, {"id": unknown}))
            for tool in tools
            if "id" in tool.input_schema.get("required", [])
        }

        @_settings(examples)
        @given(_sequence(tools, inside, outside))
        def confined(calls: list[tuple[str, dict[str, Any]]]) -> None:
            for name, arguments in calls:
                result = server.call(name, arguments)
                counts["calls"] += 1
                texts = text_of(result)
                if result.is_error:
                    counts["refused"] += 1
                    target = arguments.get("id")
                    if target in outside and name in not_found and len(arguments) == 1:
                        said = texts[0].replace(target, unknown)
                        assert [said] == not_found[name], (name, texts)
                    given = {value for value in arguments.values() if isinstance(value, str)}
                    assert not _leaks(texts, set(outside) - given, policy), (name, arguments)
                    continue
                leaks = _leaks(result.structured_content, set(outside), policy)
                leaks += _leaks(texts[1:], set(outside), policy)
                assert not leaks, (name, arguments, leaks)
            assert _outside_state(lt, policy) == before
            counts["sequences"] += 1

        confined()
        log = server.server_log()
    assert log.strip() == "", log[:2000]
    engine = "postgres" if is_postgres(store_url) else "sqlite"
    figures(
        f"{engine}: {counts['sequences']} random sequences, {counts['calls']} calls with ids "
        f"and scopes from inside, outside and nowhere ({counts['refused']} refused or not "
        f"found): 0 records of other scopes shown, 0 changed or created outside "
        f"({len(before)} outside records checked after each sequence), errors about ids "
        f"outside identical to those about unknown ids; {time.monotonic() - started:.1f} s"
    )
    assert counts["sequences"] == examples


@pytest.fixture(autouse=True)
def _mcp_is_there() -> None:
    from lantern.cli import cli

    if "mcp" not in cli.list_commands(click.Context(cli)):
        pytest.skip("this Lantern has no MCP server")
