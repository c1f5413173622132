"""`lantern mcp`: Lantern's tools served over stdio on the MCP SDK's low-level `Server`.

The low-level server (rather than the SDK's decorator API) sends each tool's hand-written
schema exactly as written and lets every error come back as one line of the server's own;
it does not check arguments against the schemas, so `arguments` does.

Startup. Importing `mcp` takes about 0.7 s, and Lantern's own imports (SQLAlchemy) with the
opening of the store about half a second more. The server answers the client's handshake and
its tools/list as soon as the SDK is loaded, and opens the store meanwhile in a worker thread;
the first tool call waits for it. The store is opened once, for the life of the server. When it
cannot be opened (not a store, schema behind), that is said on stderr and returned as the error
of every tool call, rather than ending the process: a client shows the model why. A writable
server creates a missing store; a read-only one never does, and tries again at each call, so
that it serves the store once a writer has created it.

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
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

import anyio
import anyio.to_thread
from mcp import types
from mcp.server import Server, ServerRequestContext
from mcp.server.stdio import stdio_server
from mcp.shared.exceptions import MCPError
from pydantic_core import to_json

from lantern import __version__
from lantern.errors import LanternError, NoStore, NotFound
from lantern.loading import loading
from lantern.mcpserver import arguments, resources
from lantern.mcpserver.entity_tools import ENTITY_TOOLS
from lantern.mcpserver.evidence_tools import EVIDENCE_TOOLS
from lantern.mcpserver.memory_tools import MEMORY_TOOLS
from lantern.mcpserver.spec import ToolOutput, ToolSpec, words
from lantern.mcpserver.wire import RepairingReader, clean_text
from lantern.memory.scopes import UNRESTRICTED, ScopePolicy

if TYPE_CHECKING:
    from lantern.api import Lantern

TOOLS: tuple[ToolSpec, ...] = MEMORY_TOOLS + EVIDENCE_TOOLS + ENTITY_TOOLS
WORKERS = 4
"""Tool calls running at once: SQLite in WAL mode reads beside one writer, and a write waiting
for the lock must not hold up the reads behind it."""

log = logging.getLogger("lantern.mcp")
T = TypeVar("T")
RESOURCE_NOT_FOUND = -32002
"""MCP's error code for a resource that does not exist."""
_WARM_UP = "lantern-warm-up"

_INSTRUCTIONS = (
    "Lantern stores evidence (raw material: tool outputs, notes, transcripts, files, split into "
    "keyword-searchable chunks) and memory records (durable facts, preferences, goals, "
    "constraints, task states, observations and hypotheses, each with a scope, priority, "
    "urgency, confidence and status, and references to the evidence behind it). It returns "
    "them filtered and in a documented order, and decides nothing about them."
)


@dataclass(frozen=True, slots=True)
class Access:
    """What a client may see and do: its scopes, and whether it may write. Over stdio it is the
    command line's; over HTTP each token's."""

    scopes: ScopePolicy = UNRESTRICTED
    read_only: bool = False


AccessOf = Callable[[ServerRequestContext[Any]], Access]


class StoreHandle:
    """The server's store, opened in a worker thread while the handshake runs, and the facades
    it hands each kind of access (one per scope policy and read-only flag, on the same store:
    nothing a facade holds belongs to a client, so clients of the same access share one)."""

    def __init__(self, open_store: Callable[[], Lantern], opened_for: Access = Access()) -> None:
        self._open_store = open_store
        self.opened_for = opened_for
        self._lantern: Lantern | None = None
        self._facades: dict[Access, Lantern] = {}
        self._error: LanternError | None = None
        self._ready: anyio.Event | None = None
        self._reopening = anyio.Lock()
        self.calls = Calls()

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

    async def get(self, access: Access | None = None) -> Lantern:
        """The facade for this access (the store as opened when none is given)."""
        await self._event().wait()
        if isinstance(self._error, NoStore):
            # A read-only server never creates the store; it opens it once a writer has.
            async with self._reopening:
                if isinstance(self._error, NoStore):
                    self._error = None
                    await self.open()
        if self._error is not None:
            # A new exception each time: re-raising one object would grow its traceback.
            raise type(self._error)(self._error.message)
        assert self._lantern is not None
        if access is None or access == self.opened_for:
            return self._lantern
        facade = self._facades.get(access)
        if facade is None:
            facade = self._facades[access] = self._lantern.restricted(
                scopes=access.scopes, read_only=access.read_only
            )
        return facade

    def close(self, timeout: float = 30.0) -> None:
        """Abandon the calls still running, wait for their threads (their writes roll back
        unless they committed), then close the store."""
        if not self.calls.abandon_all(timeout):
            log.warning("calls still running after %s s; closing the store anyway", timeout)
        if self._lantern is not None:
            self._lantern.close()

    def _event(self) -> anyio.Event:
        # Created on first use, inside the event loop (anyio events belong to one).
        if self._ready is None:
            self._ready = anyio.Event()
        return self._ready


class Calls:
    """Tool calls and resource reads, each run in a worker thread (at most `WORKERS` at once,
    so that the event loop keeps answering while a write waits for the store's lock).

    A call the client cancels, or that a shutdown interrupts, is abandoned: the thread is not
    waited for, and a write it makes rolls back instead of committing (`abandonable`). A write
    that already committed stays committed; MCP sends no reply to a cancelled request either
    way. `wait` lets a shutdown close the store only once every thread is done.
    """

    def __init__(self) -> None:
        self._limiter = anyio.CapacityLimiter(WORKERS)
        self._running: set[threading.Event] = set()
        self._idle = threading.Condition()

    async def run(self, work: Callable[[], T]) -> T:
        abandoned = threading.Event()

        def tracked() -> T:
            from lantern.api import abandonable

            try:
                with abandonable(abandoned.is_set):
                    return work()
            finally:
                with self._idle:
                    self._running.discard(abandoned)
                    self._idle.notify_all()

        with self._idle:
            self._running.add(abandoned)
        try:
            return await anyio.to_thread.run_sync(
                tracked, limiter=self._limiter, abandon_on_cancel=True
            )
        except anyio.get_cancelled_exc_class():
            abandoned.set()
            raise

    def abandon_all(self, timeout: float) -> bool:
        """Abandon every call still running and wait for their threads; False on a timeout."""
        with self._idle:
            for abandoned in self._running:
                abandoned.set()
            return self._idle.wait_for(lambda: not self._running, timeout)


def build_server(handle: StoreHandle, *, access_of: AccessOf | None = None) -> Server[Any]:
    """The MCP server: tools (without the write tools for a read-only client) and resources.

    `access_of` tells each request's access (over HTTP, from its token); without it every
    request has the access the store was opened with (over stdio, the command line's).
    """
    access_of = access_of or (lambda ctx: handle.opened_for)
    tables = {
        writable: {spec.name: spec for spec in TOOLS if writable or not spec.writes}
        for writable in (True, False)
    }
    listings = {
        writable: types.ListToolsResult(tools=[_tool(spec) for spec in table.values()])
        for writable, table in tables.items()
    }
    templates = types.ListResourceTemplatesResult(
        resource_templates=[
            types.ResourceTemplate(
                uri_template=template.uri_template,
                name=template.name,
                title=template.title,
                description=template.description,
                mime_type=resources.MIME_TYPE,
            )
            for template in resources.TEMPLATES
        ]
    )
    calls = handle.calls

    async def on_list_tools(
        ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return listings[not access_of(ctx).read_only]

    async def on_call_tool(
        ctx: ServerRequestContext[Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        spec = tables[not access_of(ctx).read_only].get(params.name)
        if spec is None:
            raise MCPError(code=types.INVALID_PARAMS, message=f"Unknown tool: {params.name}")
        given = params.arguments or {}
        try:
            lantern = await handle.get(access_of(ctx))
            output, text = await calls.run(lambda: _call(spec, lantern, given))
        except LanternError as exc:
            return _error(exc.spelled(words(spec)))
        except Exception as exc:
            log.exception("%s failed", spec.name)
            return _error(_unexpected(exc).message)
        content: list[types.ContentBlock] = [types.TextContent(text=text)]
        content += [types.TextContent(text=note) for note in output.notes]
        return types.CallToolResult(content=content, structured_content=output.data)

    async def on_list_resource_templates(
        ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListResourceTemplatesResult:
        return templates

    async def on_list_resources(
        ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListResourcesResult:
        cursor = params.cursor if params is not None else None
        try:
            lantern = await handle.get(access_of(ctx))
            entries, next_cursor = await calls.run(lambda: resources.recent(lantern, cursor))
        except LanternError as exc:
            raise MCPError(code=types.INVALID_PARAMS, message=clean_text(exc.message)) from exc
        return types.ListResourcesResult(
            resources=[types.Resource(**entry) for entry in entries], next_cursor=next_cursor
        )

    async def on_read_resource(
        ctx: ServerRequestContext[Any], params: types.ReadResourceRequestParams
    ) -> types.ReadResourceResult:
        uri = str(params.uri)
        found = resources.parse(uri)
        if found is None:
            raise MCPError(code=RESOURCE_NOT_FOUND, message=f"no resource {clean_text(uri)}")
        template, key = found
        spec = tables[True][template.tool]
        try:
            lantern = await handle.get(access_of(ctx))
            _output, text = await calls.run(lambda: _call(spec, lantern, {"id": key}))
        except NotFound as exc:
            message = clean_text(exc.spelled(words(spec)))
            raise MCPError(code=RESOURCE_NOT_FOUND, message=message) from exc
        except LanternError as exc:
            message = clean_text(exc.spelled(words(spec)))
            raise MCPError(code=types.INTERNAL_ERROR, message=message) from exc
        contents = types.TextResourceContents(uri=uri, mime_type=resources.MIME_TYPE, text=text)
        return types.ReadResourceResult(contents=[contents])

    server: Server[Any] = Server(
        "lantern",
        version=__version__,
        title="Lantern",
        instructions=_INSTRUCTIONS,
        on_list_tools=on_list_tools,
        on_call_tool=on_call_tool,
        on_list_resource_templates=on_list_resource_templates,
        on_list_resources=on_list_resources,
        on_read_resource=on_read_resource,
    )
    return server


def open_store(db: str | None, *, scopes: ScopePolicy, read_only: bool) -> Callable[[], Lantern]:
    """What opens the store in the server: the store, then the code and the statements the
    first calls need (a search of each kind and a listing, which find nothing to speak of), so
    that the first tool call costs what any call costs. The server lives as long as its
    clients, so it keeps a PostgreSQL store's search indexes (`Lantern.keep_indexes`): over
    stdio as over HTTP, its searches answer alike."""

    def opened() -> Lantern:
        with loading():
            from lantern.api import Lantern

            lantern = Lantern.open(db, scopes=scopes, read_only=read_only)
            try:
                lantern.keep_indexes()
                lantern.memory.list(limit=1)
                # In `any` mode: warming up must not load a model (nor call an embedding
                # server); vectors load on the first semantic search, once for the server's life.
                lantern.memory.search(_WARM_UP, limit=1, mode="any")
                lantern.evidence.search(_WARM_UP, limit=1, mode="any")
                arguments.prepare(TOOLS)  # jsonschema, loaded here rather than on a first call
                # The default search's code and the vectors it compares (mapped from the vector
                # index), without the model: a first hybrid search then pays for the model alone.
                lantern.prepare_search()
            except BaseException:
                lantern.close()
                raise
        return lantern

    return opened


def serve(db: str | None, *, scopes: ScopePolicy, read_only: bool) -> int:
    """Run the server on stdin and stdout until the client closes stdin; the exit code."""
    configure_logging()
    handle = StoreHandle(
        open_store(db, scopes=scopes, read_only=read_only), Access(scopes, read_only)
    )
    server = build_server(handle)
    try:
        anyio.run(_run, server, handle)
    except KeyboardInterrupt:
        return 130
    finally:
        handle.close()
    return 0


def configure_logging() -> None:
    logging.basicConfig(
        level=logging.WARNING, stream=sys.stderr, format="lantern mcp: %(levelname)s: %(message)s"
    )


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
