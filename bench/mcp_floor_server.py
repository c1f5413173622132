"""The SDK's floor for a tool call over stdio: the same low-level `Server` and stdio transport
`lantern mcp` uses, with one tool that returns a constant.

    python bench/mcp_floor_server.py        # speaks MCP on stdin/stdout; bench/mcp_bench.py runs it

Whatever a `lantern mcp` call costs beyond this server's is Lantern's: argument checking, the
worker thread, the store, rendering the result.
"""

from __future__ import annotations

import json
from typing import Any

import anyio
from mcp import types
from mcp.server import Server, ServerRequestContext
from mcp.server.stdio import stdio_server

RESULT = {"ok": True}
TOOL = types.Tool(
    name="constant",
    description="Return a constant.",
    input_schema={"type": "object", "properties": {}, "additionalProperties": False},
)


async def on_list_tools(
    ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
) -> types.ListToolsResult:
    return types.ListToolsResult(tools=[TOOL])


async def on_call_tool(
    ctx: ServerRequestContext[Any], params: types.CallToolRequestParams
) -> types.CallToolResult:
    return types.CallToolResult(
        content=[types.TextContent(text=json.dumps(RESULT))], structured_content=RESULT
    )


async def serve() -> None:
    server = Server("floor", on_list_tools=on_list_tools, on_call_tool=on_call_tool)
    async with stdio_server() as (read_stream, write_stream):
        await server.run(read_stream, write_stream, server.create_initialization_options())


if __name__ == "__main__":
    anyio.run(serve)
