"""A synchronous handle on a real `lantern mcp` process, through the MCP SDK's stdio client.

The session runs in an event loop of its own (an anyio blocking portal in a thread), so tests
and writer processes call tools as plain functions. The server's stderr goes to a file, so that
a test can show what the server logged (a traceback would be there).
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass
from typing import Any, TextIO

from anyio.from_thread import BlockingPortal, start_blocking_portal
from mcp import ClientSession, StdioServerParameters, stdio_client, types

from tests.helpers import LANTERN_BIN


@dataclass
class Mcp:
    portal: BlockingPortal
    session: ClientSession
    log: TextIO

    def call(self, name: str, arguments: dict[str, Any]) -> types.CallToolResult:
        result: types.CallToolResult = self.portal.call(self.session.call_tool, name, arguments)
        return result

    def tools(self) -> list[types.Tool]:
        return list(self.portal.call(self.session.list_tools).tools)

    def server_log(self) -> str:
        self.log.seek(0)
        return self.log.read()


def text_of(result: types.CallToolResult) -> list[str]:
    return [item.text for item in result.content if isinstance(item, types.TextContent)]


@asynccontextmanager
async def _session(params: StdioServerParameters, log: TextIO) -> AsyncIterator[ClientSession]:
    async with (
        stdio_client(params, errlog=log) as (read, write),
        ClientSession(read, write, read_timeout_seconds=120) as session,
    ):
        await session.initialize()
        yield session


@contextmanager
def mcp_server(store: str, *args: str, command: list[str] | None = None) -> Iterator[Mcp]:
    """`lantern mcp ARGS` on `store` (or `command`, which must start such a server). The SDK
    hands the server only a few variables of its own environment, so the store and the test's
    isolated home are passed explicitly."""
    env = {
        name: os.environ[name]
        for name in ("HOME", "XDG_DATA_HOME", "LANTERN_BUSY_TIMEOUT", "PYTHONPATH")
        if name in os.environ
    }
    program, *start = command or [str(LANTERN_BIN), "mcp"]
    params = StdioServerParameters(
        command=program, args=[*start, *args], env={**env, "LANTERN_DB": store}
    )
    with (
        tempfile.TemporaryFile("w+") as log,
        start_blocking_portal() as portal,
        portal.wrap_async_context_manager(_session(params, log)) as session,
    ):
        yield Mcp(portal, session, log)
