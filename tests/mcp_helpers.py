"""Driving a real `lantern mcp` process with the MCP SDK's own client, from plain sync tests.

A session lives in an event loop of its own (an anyio blocking portal, in a thread), so a
module-scoped fixture can hold one server for many tests: starting a server costs about a
second, most of it importing the SDK.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import time
import uuid
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

import httpx2
import pytest
import sqlalchemy
from anyio.from_thread import BlockingPortal, start_blocking_portal
from click.testing import CliRunner
from jsonschema import Draft202012Validator
from mcp import ClientSession, StdioServerParameters, stdio_client, types
from mcp.client.streamable_http import streamable_http_client

from lantern.cli import cli
from tests.helpers import LANTERN_BIN

POSTGRES_ENV = "LANTERN_TEST_POSTGRES_URL"


def module_store(request: pytest.FixtureRequest, tmp: Path) -> Iterator[str]:
    """A new store address for a module-scoped fixture: a SQLite path, or a PostgreSQL schema
    (dropped afterwards) when the parameter is "postgres"."""
    if request.param == "sqlite":
        yield str(tmp / "lantern.db")
        return
    base_url = os.environ.get(POSTGRES_ENV)
    if not base_url:
        pytest.skip(f"PostgreSQL tests need {POSTGRES_ENV}")
    schema = f"t_{uuid.uuid4().hex[:12]}"
    engine = sqlalchemy.create_engine(base_url, isolation_level="AUTOCOMMIT")
    with engine.connect() as conn:
        conn.exec_driver_sql(f"CREATE SCHEMA {schema}")
    url = sqlalchemy.engine.make_url(base_url).update_query_dict(
        {"options": f"-csearch_path={schema}"}
    )
    try:
        yield url.render_as_string(hide_password=False)
    finally:
        with engine.connect() as conn:
            conn.exec_driver_sql(f"DROP SCHEMA {schema} CASCADE")
        engine.dispose()


@dataclass
class McpClient:
    """Sync calls into an initialized `ClientSession`."""

    portal: BlockingPortal
    session: ClientSession
    initialized: types.InitializeResult

    def tools(self) -> dict[str, types.Tool]:
        listed = self.portal.call(self.session.list_tools)
        return {tool.name: tool for tool in listed.tools}

    def call(self, name: str, arguments: dict[str, Any] | None = None) -> types.CallToolResult:
        result: types.CallToolResult = self.portal.call(
            self.session.call_tool, name, arguments or {}
        )
        return result

    def ok(self, name: str, arguments: dict[str, Any] | None = None) -> dict[str, Any]:
        """The structured result of a call that must succeed, checked against its text and
        against the output schema the tool declares."""
        result = self.call(name, arguments)
        assert not result.is_error, texts(result)
        assert isinstance(result.structured_content, dict)
        assert json.loads(texts(result)[0]) == result.structured_content
        check_output(self.output_schemas, name, result.structured_content)
        return result.structured_content

    @cached_property
    def output_schemas(self) -> dict[str, dict[str, Any]]:
        schemas = {name: tool.output_schema for name, tool in self.tools().items()}
        return {name: schema for name, schema in schemas.items() if schema is not None}

    def error(self, name: str, arguments: dict[str, Any] | None = None) -> str:
        """The one-line message of a call that must fail as a tool error."""
        result = self.call(name, arguments)
        assert result.is_error, texts(result)
        [message] = texts(result)
        assert "\n" not in message and message
        return message


def check_output(schemas: dict[str, dict[str, Any]], name: str, result: dict[str, Any]) -> None:
    """Every tool declares an output schema, and its result validates against it."""
    assert name in schemas, f"{name} declares no output schema"
    errors = list(Draft202012Validator(schemas[name]).iter_errors(result))
    assert not errors, f"{name}: {errors[0].message} at {list(errors[0].absolute_path)}"


def texts(result: types.CallToolResult) -> list[str]:
    return [item.text for item in result.content if isinstance(item, types.TextContent)]


@asynccontextmanager
async def _session(
    params: StdioServerParameters,
) -> AsyncIterator[tuple[ClientSession, types.InitializeResult]]:
    async with (
        stdio_client(params) as (read, write),
        ClientSession(read, write, read_timeout_seconds=60) as session,
    ):
        yield session, await session.initialize()


def server_parameters(
    store: str, *args: str, env: dict[str, str] | None = None, home: Path | None = None
) -> StdioServerParameters:
    """`lantern mcp ARGS` on `store`; the SDK passes only a few variables on, so the store and
    the isolated home are given explicitly."""
    isolated = {"HOME": str(home), "XDG_DATA_HOME": str(home / "data")} if home else {}
    return StdioServerParameters(
        command=str(LANTERN_BIN),
        args=["mcp", *args],
        env={"LANTERN_DB": store, **isolated, **(env or {})},
    )


@contextmanager
def running(params: StdioServerParameters) -> Iterator[McpClient]:
    with (
        start_blocking_portal() as portal,
        portal.wrap_async_context_manager(_session(params)) as (session, initialized),
    ):
        yield McpClient(portal, session, initialized)


@dataclass
class HttpServer:
    """A `lantern mcp --http` process on a free loopback port."""

    url: str
    process: subprocess.Popen[bytes]
    log: Path

    def stop(self, sig: int = signal.SIGTERM) -> int:
        """Send `sig` and wait; the exit code."""
        if self.process.poll() is None:
            self.process.send_signal(sig)
        return self.process.wait(timeout=60)


@contextmanager
def http_server(
    store: str, token_file: Path, *args: str, env: dict[str, str] | None = None
) -> Iterator[HttpServer]:
    """`lantern --db STORE mcp --http 127.0.0.1:0 --tokens FILE ARGS`, stopped afterwards with
    SIGTERM; its URL comes from the line it prints on stderr once it listens."""
    log = token_file.with_name(f"server-{uuid.uuid4().hex[:8]}.log")
    with open(log, "wb") as stderr:
        process = subprocess.Popen(
            [str(LANTERN_BIN), "--db", store, "mcp", "--http", "127.0.0.1:0", "--tokens",
             str(token_file), *args],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=stderr,
            env={**os.environ, **(env or {})},
        )  # fmt: skip
    server = HttpServer("", process, log)
    try:
        deadline = time.monotonic() + 60
        while not server.url:
            found = re.search(r"serving (http://\S+/mcp)", log.read_text())
            if found:
                server.url = found[1]
            elif process.poll() is not None or time.monotonic() > deadline:
                raise AssertionError(f"the HTTP server did not start: {log.read_text()}")
            else:
                time.sleep(0.05)
        yield server
    finally:
        server.stop()


@asynccontextmanager
async def _http_session(
    url: str, token: str | None
) -> AsyncIterator[tuple[ClientSession, types.InitializeResult]]:
    headers = {"Authorization": f"Bearer {token}"} if token is not None else {}
    async with (
        httpx2.AsyncClient(headers=headers, timeout=60) as http,
        streamable_http_client(url, http_client=http) as (read, write),
        ClientSession(read, write, read_timeout_seconds=60) as session,
    ):
        yield session, await session.initialize()


@contextmanager
def http_client(url: str, token: str | None) -> Iterator[McpClient]:
    """The SDK's own Streamable HTTP client, with this bearer token."""
    with (
        start_blocking_portal() as portal,
        portal.wrap_async_context_manager(_http_session(url, token)) as (session, initialized),
    ):
        yield McpClient(portal, session, initialized)


def cli_json(store: str, *args: str, input: str | None = None) -> Any:
    """What `lantern --db STORE ARGS --json` prints, parsed."""
    result = CliRunner().invoke(cli, ["--db", store, *args, "--json"], input=input)
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def cli_error(
    store: str, *args: str, input: str | None = None, env: dict[str, str] | None = None
) -> str:
    """The one-line message `lantern --db STORE ARGS` prints on stderr, without "Error: "."""
    result = CliRunner().invoke(cli, ["--db", store, *args], input=input, env=env)
    assert result.exit_code != 0, result.output
    [line] = result.stderr.splitlines()
    assert line.startswith("Error: ")
    return line.removeprefix("Error: ")


def cli_note(store: str, *args: str) -> str:
    """The note a successful command prints on stderr, without its "lantern: " prefix."""
    result = CliRunner().invoke(cli, ["--db", store, *args])
    assert result.exit_code == 0, result.output
    [line] = result.stderr.splitlines()
    assert line.startswith("lantern: ")
    return line.removeprefix("lantern: ")
