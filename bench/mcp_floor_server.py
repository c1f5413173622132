"""The SDK's floor for a tool call over stdio: the same low-level `Server` and stdio transport
`lantern mcp` uses, with one tool that returns a constant (and one that returns a saved result,
to show what the size of a result costs the SDK alone).

    python bench/mcp_floor_server.py              # speaks MCP on stdin/stdout; mcp_bench.py runs it
    python bench/mcp_floor_server.py --http PORT  # the same on Streamable HTTP at /mcp (the SDK's
                                                  # own app, loopback, no authentication)

Whatever a `lantern mcp` call costs beyond this server's is Lantern's: argument checking, the
worker thread, the store, rendering the result.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import anyio
from mcp import types
from mcp.server import Server, ServerRequestContext
from mcp.server.stdio import stdio_server
from pydantic_core import to_json

PAYLOAD_ENV = "MCP_FLOOR_PAYLOAD"
NO_ARGUMENTS = {"type": "object", "properties": {}, "additionalProperties": False}
TOOLS = [
    types.Tool(name="constant", description="Return a constant.", input_schema=NO_ARGUMENTS),
    types.Tool(
        name="payload",
        description=f"Return the JSON object in the file named by ${PAYLOAD_ENV}.",
        input_schema=NO_ARGUMENTS,
    ),
]
RESULTS = {"constant": {"ok": True}}
if os.environ.get(PAYLOAD_ENV):
    # What a real tool returns, sent as Lantern sends it: the SDK's cost of the size alone.
    RESULTS["payload"] = json.loads(Path(os.environ[PAYLOAD_ENV]).read_text())
TEXTS = {name: to_json(result).decode() for name, result in RESULTS.items()}


async def on_list_tools(
    ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
) -> types.ListToolsResult:
    return types.ListToolsResult(tools=TOOLS)


async def on_call_tool(
    ctx: ServerRequestContext[Any], params: types.CallToolRequestParams
) -> types.CallToolResult:
    return types.CallToolResult(
        content=[types.TextContent(text=TEXTS[params.name])],
        structured_content=RESULTS[params.name],
    )


async def serve() -> None:
    server = Server("floor", on_list_tools=on_list_tools, on_call_tool=on_call_tool)
    async with stdio_server() as (read_stream, write_stream):
        await server.run(read_stream, write_stream, server.create_initialization_options())


def serve_http(port: int) -> None:
    import uvicorn

    server = Server("floor", on_list_tools=on_list_tools, on_call_tool=on_call_tool)
    uvicorn.run(server.streamable_http_app(), host="127.0.0.1", port=port, log_level="warning")


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--http":
        serve_http(int(sys.argv[2]))
    else:
        anyio.run(serve)
