"""`lantern mcp --http`: the same server on the SDK's Streamable HTTP transport, at `/mcp`.

The tools, their checks, errors and results are those of stdio (`server.build_server`); what
HTTP adds is who may call, from where, and how much:

- Every request carries a bearer token from the token file (`tokens`), loopback included: any
  local process or web page could reach the port otherwise. A missing, wrong or revoked token
  gets 401 with `WWW-Authenticate: Bearer` and nothing else. The token's label, scopes and
  read-only flag decide each request's access, so each client gets the facade of its own fence
  (`StoreHandle.get`), and a session opened with one token answers no other (the SDK's session
  manager compares the principal: the label and the token's hash).
- The Host and Origin headers must name this server exactly (DNS-rebinding protection,
  `HostGuard`): a page on another site cannot talk to it through a name that resolves to
  127.0.0.1, nor through a header that only starts like one of its names
  (`localhost:8765@evil.example`). That is checked before anything else; a refused request
  gets 421 (Host) or 403 (Origin).
- A request body is at most `MAX_BODY_BYTES` (413 past it): the largest `lantern_ingest_text`
  call, JSON-encoded. JSON is read as over stdio (`wire.lenient_json`): a lone surrogate escape
  reaches the tools, and answers the same way, on both transports.
- No client can starve the others (`limits`, `connections`): each token has its own allowance
  of open sessions and of requests at once (429 with `Retry-After` past it, for that token
  only), idle sessions are closed after minutes, a connection that does not send its request
  in time is closed, and open connections are capped. Refusals are logged as one line per
  interval with their counts.
- SIGINT or SIGTERM stop the server cleanly: it stops accepting connections, lets requests in
  flight finish for up to `GRACE_SECONDS`, then abandons what is still running (a write not yet
  committed rolls back) and closes the store.
"""

from __future__ import annotations

import logging
import signal
import socket
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import anyio
import uvicorn
from mcp import types
from mcp.server import Server, ServerRequestContext
from mcp.server.auth.middleware.auth_context import AuthContextMiddleware
from mcp.server.auth.middleware.bearer_auth import (
    AuthenticatedUser,
    BearerAuthBackend,
    RequireAuthMiddleware,
)
from mcp.server.auth.provider import AccessToken
from mcp.server.streamable_http_manager import StreamableHTTPASGIApp, StreamableHTTPSessionManager
from mcp.server.transport_security import TransportSecuritySettings
from mcp.shared.exceptions import MCPError
from starlette.applications import Starlette
from starlette.datastructures import Headers
from starlette.middleware import Middleware
from starlette.middleware.authentication import AuthenticationMiddleware
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send

from lantern.errors import StoreIOError
from lantern.mcpserver import tokens
from lantern.mcpserver.evidence_tools import MAX_TEXT_BYTES
from lantern.mcpserver.limits import (
    DEFAULT_LIMITS,
    CountingRefusals,
    Limits,
    SilencedLogs,
    TokenLimits,
)
from lantern.mcpserver.server import (
    Access,
    StoreHandle,
    build_server,
    configure_logging,
    open_store,
)
from lantern.mcpserver.wire import use_lenient_json
from lantern.memory.scopes import UNRESTRICTED, ScopePolicy
from lantern.serving.connections import uvicorn_options
from lantern.serving.refusals import Refusals, raise_file_limit
from lantern.validation import http_host, http_origin

PATH = "/mcp"
MAX_BODY_BYTES = MAX_TEXT_BYTES + 1024 * 1024
"""The largest request body: a 64 MiB text and the rest of its call."""
GRACE_SECONDS = 10
BACKLOG = 1_024
"""Connections the system queues before the server accepts them."""
LOOPBACK = ("127.0.0.1", "localhost", "::1")

log = logging.getLogger("lantern.mcp")


class LanternToken(AccessToken):
    """A verified token: its label (`client_id`), hash (`subject`) and fence."""

    patterns: tuple[str, ...] = ()
    read_only: bool = False


class TokenVerifier:
    """Bearer tokens checked against the token file, read again whenever it changes."""

    def __init__(self, path: Path) -> None:
        self._file = tokens.TokenFile(path)
        self._reported: str | None = None

    async def verify_token(self, token: str) -> AccessToken | None:
        grants = self._file.grants()
        problem = self._file.problem
        if problem != self._reported:
            self._reported = problem
            if problem is not None:
                log.error("no token is accepted until the token file is fixed: %s", problem)
        grant = tokens.find(grants, token)
        if grant is None:
            return None
        # The token itself is kept nowhere: only its label and hash identify the client.
        return LanternToken(
            token=grant.sha256,
            client_id=grant.label,
            subject=grant.sha256,
            scopes=[],
            patterns=grant.scopes,
            read_only=grant.read_only,
        )


class HostGuard:
    """Refuses a request whose Host or Origin names another server, before anything else: the
    Host must be exactly one of `names`, with or without a port, and so must an Origin's host
    when there is an Origin (`validation.http_host`, `validation.http_origin`)."""

    def __init__(self, app: ASGIApp, names: frozenset[str]) -> None:
        self._app = app
        self._names = names

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            headers = Headers(scope=scope)
            if http_host(headers.get("host")) not in self._names:
                await Response("Invalid Host header", status_code=421)(scope, receive, send)
                return
            origin = headers.get("origin")
            if origin is not None and http_origin(origin) not in self._names:
                await Response("Invalid Origin header", status_code=403)(scope, receive, send)
                return
        await self._app(scope, receive, send)


def host_names(host: str, allowed_hosts: Sequence[str]) -> frozenset[str]:
    """The host names this server answers to: the loopback names, the address it listens on
    (unless a wildcard) and the names given with `--allow-host`, as `http_host` reads them."""
    names = {*LOOPBACK, host, *allowed_hosts}
    found = {name.strip("[]").lower() for name in names}
    return frozenset(found - {"0.0.0.0", "::"})


def build_app(
    server: Server[Any],
    verifier: TokenVerifier,
    names: frozenset[str],
    limits: Limits,
    refusals: Refusals,
) -> ASGIApp:
    # Host and Origin are checked by `HostGuard`, strictly, before the session manager sees
    # the request; the SDK's own check (by prefix) is left off, and so is its warning per
    # refused request.
    manager = StreamableHTTPSessionManager(
        app=server,
        security_settings=TransportSecuritySettings(enable_dns_rebinding_protection=False),
        max_request_body_size=MAX_BODY_BYTES,
        session_idle_timeout=limits.session_idle_seconds,
        max_sessions=limits.max_sessions,
    )
    endpoint = RequireAuthMiddleware(
        TokenLimits(StreamableHTTPASGIApp(manager), limits), required_scopes=[]
    )
    app = Starlette(
        routes=[Route(PATH, endpoint=endpoint)],
        middleware=[
            Middleware(AuthenticationMiddleware, backend=BearerAuthBackend(verifier)),
            Middleware(AuthContextMiddleware),
        ],
        lifespan=lambda app: manager.run(),
    )
    return CountingRefusals(HostGuard(app, names), refusals)


def access_of(server_read_only: bool) -> Any:
    """Each request's access, from the token it was authenticated with."""

    def of(ctx: ServerRequestContext[Any]) -> Access:
        user = ctx.request.scope.get("user") if isinstance(ctx.request, Request) else None
        token = user.access_token if isinstance(user, AuthenticatedUser) else None
        if not isinstance(token, LanternToken):  # the route requires one: never reached
            raise MCPError(code=types.INVALID_REQUEST, message="not authenticated")
        scopes = ScopePolicy.of(token.patterns) if token.patterns else UNRESTRICTED
        return Access(scopes, token.read_only or server_read_only)

    return of


def serve_http(
    db: str | None,
    *,
    host: str,
    port: int,
    token_path: Path,
    read_only: bool,
    allowed_hosts: Sequence[str],
    limits: Limits = DEFAULT_LIMITS,
) -> int:
    """Serve on HOST:PORT until SIGINT or SIGTERM; the exit code."""
    configure_logging()
    use_lenient_json()
    raise_file_limit(limits.max_connections)
    handle = StoreHandle(
        open_store(db, scopes=UNRESTRICTED, read_only=read_only), Access(read_only=read_only)
    )
    server = build_server(handle, access_of=access_of(read_only))
    verifier = TokenVerifier(token_path)
    listening = _listen(host, port)
    bound = listening.getsockname()[1]
    refusals = Refusals(limits.log_interval)
    app = build_app(server, verifier, host_names(host, allowed_hosts), limits, refusals)
    sys.stderr.write(
        f"lantern mcp: serving http://{_bracketed(host)}:{bound}{PATH} to the tokens of "
        f"{token_path}\n"
    )
    sys.stderr.flush()
    remove_filter = SilencedLogs(refusals).install()
    try:
        anyio.run(_serve, app, listening, handle, limits, refusals)
    finally:
        remove_filter()
        handle.close()
        listening.close()
    return 0


async def _serve(
    app: ASGIApp,
    listening: socket.socket,
    handle: StoreHandle,
    limits: Limits,
    refusals: Refusals,
) -> None:
    config = uvicorn.Config(
        app,
        **uvicorn_options(limits, refusals),
        ws="none",
        log_level="warning",
        access_log=False,
        lifespan="on",
        timeout_graceful_shutdown=GRACE_SECONDS,
        backlog=BACKLOG,
        server_header=False,
    )
    async with anyio.create_task_group() as group:
        group.start_soon(handle.open)
        group.start_soon(refusals.run)
        await _Uvicorn(config).serve(sockets=[listening])
        group.cancel_scope.cancel()


class _Uvicorn(uvicorn.Server):
    """Uvicorn, stopping on SIGINT and SIGTERM without re-raising the signal afterwards (which
    would end the process before the store is closed)."""

    @contextmanager
    def capture_signals(self) -> Iterator[None]:
        previous = {sig: signal.signal(sig, self.handle_exit) for sig in _SIGNALS}
        try:
            yield
        finally:
            for sig, handler in previous.items():
                signal.signal(sig, handler)


_SIGNALS = (signal.SIGINT, signal.SIGTERM)


def _listen(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    # IPPROTO_TCP named, not left 0: asyncio turns Nagle's algorithm off (TCP_NODELAY) only on
    # sockets that say they are TCP, and the accepted ones inherit this. With it on, the body
    # of each response waited for the client's delayed ACK of its head: 40 ms a request.
    listening = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    listening.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        listening.bind((host, port))
        listening.listen(BACKLOG)
    except OSError as exc:
        listening.close()
        raise StoreIOError(f"cannot listen on {_bracketed(host)}:{port}: {exc.strerror}") from exc
    return listening


def _bracketed(host: str) -> str:
    return f"[{host}]" if ":" in host and not host.startswith("[") else host
