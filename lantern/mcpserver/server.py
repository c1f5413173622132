"""`lantern mcp`: Lantern's tools served over stdio on the MCP SDK's low-level `Server`.

The low-level server (rather than the SDK's decorator API) sends each tool's hand-written
schema exactly as written and lets every error come back as one line of the server's own;
it does not check arguments against the schemas, so `arguments` does.

Startup. Importing `mcp` takes about 0.7 s, and Lantern's own imports (SQLAlchemy) with the
opening of the store about half a second more. The server answers the client's handshake and
its tools/list as soon as the SDK is loaded, and opens the store meanwhile in a worker thread;
the first tool call waits for it. The store is opened once, for the life of the server. When it
cannot be opened (not a store, schema behind), that is said on stderr and returned as the error
of every tool call, rather than ending the process: a client shows the model why.

Calls. The SDK serves requests concurrently; each call runs its repository method in a worker
thread (at most `WORKERS` at once), so the event loop keeps answering while a write waits for
the store's lock. Every call is its own transaction, so what the CLI and other processes wrote
before it is visible to it.

Errors. A `LanternError` (bad arguments, unknown id, busy store, a refusal) becomes a tool
result with `isError` and the CLI's one-line message, without its "Error: " prefix. Anything
unexpected becomes a one-line tool error too, with the traceback on stderr; the server keeps
running either way. An unknown tool name (a write tool under `--read-only` is one) is a protocol
error, as MCP specifies.

Stdout carries the protocol: nothing here prints, and logs go to stderr.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import anyio
import anyio.to_thread
from mcp import types
from mcp.server import Server, ServerRequestContext
from mcp.server.stdio import stdio_server
from mcp.shared.exceptions import MCPError
from pydantic_core import to_json

from lantern import __version__
from lantern.errors import LanternError
from lantern.loading import loading
from lantern.mcpserver import arguments
from lantern.mcpserver.evidence_tools import EVIDENCE_TOOLS
from lantern.mcpserver.memory_tools import MEMORY_TOOLS
from lantern.mcpserver.spec import ToolOutput, ToolSpec
from lantern.mcpserver.wire import RepairingReader, clean_text
from lantern.memory.scopes import ScopePolicy

if TYPE_CHECKING:
    from lantern.api import Lantern

TOOLS: tuple[ToolSpec, ...] = MEMORY_TOOLS + EVIDENCE_TOOLS
WORKERS = 4
"""Tool calls running at once: SQLite in WAL mode reads beside one writer, and a write waiting
for the lock must not hold up the reads behind it."""

log = logging.getLogger("lantern.mcp")

_INSTRUCTIONS = (
    "Lantern stores evidence (raw material: tool outputs, notes, transcripts, files, split into "
    "keyword-searchable chunks) and memory records (durable facts, preferences, goals, "
    "constraints, task states, observations and hypotheses, each with a scope, priority, "
    "urgency, confidence and status, and references to the evidence behind it). It returns "
    "them filtered and in a documented order, and decides nothing about them."
)


class StoreHandle:
    """The server's one `Lantern`, opened in a worker thread while the handshake runs."""

    def __init__(self, open_store: Callable[[], Lantern]) -> None:
        self._open_store = open_store
        self._lantern: Lantern | None = None
        self._error: LanternError | None = None
        self._ready: anyio.Event | None = None

    async def open(self) -> None:
        """Open the store, once; calls wait for this (see `get`)."""
        ready = self._event()
        try:
            self._lantern = await anyio.to_thread.run_sync(self._open_store)
        except LanternError as exc:
            self._error = exc
            log.error("cannot open the store: %s", exc.message)
        except Exception as exc:
            self._error = _unexpected(exc)
            log.exception("cannot open the store")
        finally:
            ready.set()

    async def get(self) -> Lantern:
        await self._event().wait()
        if self._error is not None:
            # A new exception each time: re-raising one object would grow its traceback.
            raise type(self._error)(self._error.message)
        assert self._lantern is not None
        return self._lantern

    def close(self) -> None:
        if self._lantern is not None:
            self._lantern.close()

    def _event(self) -> anyio.Event:
        # Created on first use, inside the event loop (anyio events belong to one).
        if self._ready is None:
            self._ready = anyio.Event()
        return self._ready


def build_server(handle: StoreHandle, *, read_only: bool) -> Server[Any]:
    """The MCP server: the tool table (without write tools when `read_only`) and handlers."""
    tools = {spec.name: spec for spec in TOOLS if not (read_only and spec.writes)}
    listed = types.ListToolsResult(tools=[_tool(spec) for spec in tools.values()])
    limiter = anyio.CapacityLimiter(WORKERS)

    async def on_list_tools(
        ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return listed

    async def on_call_tool(
        ctx: ServerRequestContext[Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        spec = tools.get(params.name)
        if spec is None:
            raise MCPError(code=types.INVALID_PARAMS, message=f"Unknown tool: {params.name}")
        try:
            lantern = await handle.get()
            output, text = await anyio.to_thread.run_sync(
                _call, spec, lantern, params.arguments or {}, limiter=limiter
            )
        except LanternError as exc:
            return _error(exc.message)
        except Exception as exc:
            log.exception("%s failed", spec.name)
            return _error(_unexpected(exc).message)
        content: list[types.ContentBlock] = [types.TextContent(text=text)]
        content += [types.TextContent(text=note) for note in output.notes]
        return types.CallToolResult(content=content, structured_content=output.data)

    return Server(
        "lantern",
        version=__version__,
        title="Lantern",
        instructions=_INSTRUCTIONS,
        on_list_tools=on_list_tools,
        on_call_tool=on_call_tool,
    )


def serve(db: str | None, *, scopes: ScopePolicy, read_only: bool) -> int:
    """Run the server on stdin and stdout until the client closes stdin; the exit code."""
    logging.basicConfig(
        level=logging.WARNING, stream=sys.stderr, format="lantern mcp: %(levelname)s: %(message)s"
    )

    def open_store() -> Lantern:
        with loading():
            from lantern.api import Lantern

            lantern = Lantern.open(db, scopes=scopes, read_only=read_only)
            arguments.prepare(TOOLS)  # jsonschema, loaded here rather than on the first call
        return lantern

    handle = StoreHandle(open_store)
    server = build_server(handle, read_only=read_only)
    try:
        anyio.run(_run, server, handle)
    except KeyboardInterrupt:
        return 130
    finally:
        handle.close()
    return 0


async def _run(server: Server[Any], handle: StoreHandle) -> None:
    async with anyio.create_task_group() as group:
        group.start_soon(handle.open)
        async with stdio_server() as (read_stream, write_stream):
            await server.run(
                RepairingReader(read_stream), write_stream, server.create_initialization_options()
            )


def _tool(spec: ToolSpec) -> types.Tool:
    return types.Tool(
        name=spec.name,
        title=spec.title,
        description=spec.description,
        input_schema=spec.input_schema,
        output_schema=spec.output_schema,
        annotations=types.ToolAnnotations(
            title=spec.title,
            read_only_hint=not spec.writes,
            destructive_hint=spec.destructive,
            idempotent_hint=spec.idempotent,
            open_world_hint=False,  # a tool touches the store and nothing else
        ),
    )


def _call(spec: ToolSpec, lantern: Lantern, given: dict[str, Any]) -> tuple[ToolOutput, str]:
    """Check, run and render one call (in a worker thread).

    The text block is the structured result as compact JSON, rendered by pydantic-core (the
    SDK's own serializer, three times as fast as `json.dumps` on a listing of 50 records).
    """
    output = spec.run(lantern, arguments.check(spec, given))
    return output, to_json(output.data).decode("utf-8")


def _error(message: str) -> types.CallToolResult:
    # A message may quote what the client sent, lone surrogates included (see `wire`).
    return types.CallToolResult(
        content=[types.TextContent(text=clean_text(message))], is_error=True
    )


def _unexpected(exc: Exception) -> LanternError:
    # LanternError makes the message one line, as every error a client sees is.
    return LanternError(
        f"unexpected {type(exc).__name__}: {exc} (the server's stderr has the traceback; "
        "please report it)"
    )
