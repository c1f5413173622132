"""`lantern mcp --http`: the same server on the SDK's Streamable HTTP transport, at `/mcp`.

The tools, their checks, errors and results are those of stdio (`server.build_server`); what
HTTP adds is who may call, from where, and how much:

- Every request carries a bearer token from the token file (`tokens`), loopback included: any
  local process or web page could reach the port otherwise. A missing, wrong or revoked token
  gets 401 with `WWW-Authenticate: Bearer` and nothing else. The token's label, scopes and
  read-only flag decide each request's access, so each client gets the facade of its own fence
  (`StoreHandle.get`), and a session opened with one token answers no other (the SDK's session
  manager compares the principal: the label and the token's hash).
- The Host and Origin headers must name this server (DNS-rebinding protection): a page on
  another site cannot talk to it through a name that resolves to 127.0.0.1. That is checked
  before anything else; a refused request gets 421 (Host) or 403 (Origin).
- A request body is at most `MAX_BODY_BYTES` (413 past it): the largest `lantern_ingest_text`
  call, JSON-encoded.
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
from mcp.server.transport_security import TransportSecurityMiddleware, TransportSecuritySettings
from mcp.shared.exceptions import MCPError
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.middleware.authentication import AuthenticationMiddleware
from starlette.requests import Request
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send

from lantern.errors import StoreIOError
from lantern.mcpserver import tokens
from lantern.mcpserver.evidence_tools import MAX_TEXT_BYTES
from lantern.mcpserver.server import (
    Access,
    StoreHandle,
    build_server,
    configure_logging,
    open_store,
)
from lantern.memory.scopes import UNRESTRICTED, ScopePolicy

PATH = "/mcp"
MAX_BODY_BYTES = MAX_TEXT_BYTES + 1024 * 1024
"""The largest request body: a 64 MiB text and the rest of its call."""
GRACE_SECONDS = 10
LOOPBACK = ("127.0.0.1", "localhost", "[::1]")

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
    """Refuses a request whose Host or Origin names another server, before anything else."""

    def __init__(self, app: ASGIApp, settings: TransportSecuritySettings) -> None:
        self._app = app
        self._check = TransportSecurityMiddleware(settings)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            refused = await self._check.validate_request(Request(scope), is_post=False)
            if refused is not None:
                await refused(scope, receive, send)
                return
        await self._app(scope, receive, send)


def security(host: str, allowed_hosts: Sequence[str]) -> TransportSecuritySettings:
    """The Host and Origin values this server answers: the loopback names, the address it
    listens on and the names given with `--allow-host`, on any port."""
    names = dict.fromkeys([*LOOPBACK, _bracketed(host), *allowed_hosts])
    names.pop("0.0.0.0", None)
    names.pop("[::]", None)
    hosts = [form for name in names for form in (name, f"{name}:*")]
    origins = [f"{scheme}://{form}" for scheme in ("http", "https") for form in hosts]
    return TransportSecuritySettings(
        enable_dns_rebinding_protection=True, allowed_hosts=hosts, allowed_origins=origins
    )


def build_app(
    server: Server[Any], verifier: TokenVerifier, settings: TransportSecuritySettings
) -> ASGIApp:
    manager = StreamableHTTPSessionManager(
        app=server, security_settings=settings, max_request_body_size=MAX_BODY_BYTES
    )
    endpoint = RequireAuthMiddleware(StreamableHTTPASGIApp(manager), required_scopes=[])
    app = Starlette(
        routes=[Route(PATH, endpoint=endpoint)],
        middleware=[
            Middleware(AuthenticationMiddleware, backend=BearerAuthBackend(verifier)),
            Middleware(AuthContextMiddleware),
        ],
        lifespan=lambda app: manager.run(),
    )
    return HostGuard(app, settings)


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
) -> int:
    """Serve on HOST:PORT until SIGINT or SIGTERM; the exit code."""
    configure_logging()
    handle = StoreHandle(
        open_store(db, scopes=UNRESTRICTED, read_only=read_only), Access(read_only=read_only)
    )
    server = build_server(handle, access_of=access_of(read_only))
    verifier = TokenVerifier(token_path)
    listening = _listen(host, port)
    bound = listening.getsockname()[1]
    app = build_app(server, verifier, security(host, allowed_hosts))
    sys.stderr.write(
        f"lantern mcp: serving http://{_bracketed(host)}:{bound}{PATH} to the tokens of "
        f"{token_path}\n"
    )
    sys.stderr.flush()
    try:
        anyio.run(_serve, app, listening, handle)
    finally:
        handle.close()
        listening.close()
    return 0


async def _serve(app: ASGIApp, listening: socket.socket, handle: StoreHandle) -> None:
    config = uvicorn.Config(
        app,
        log_level="warning",
        access_log=False,
        lifespan="on",
        timeout_graceful_shutdown=GRACE_SECONDS,
        server_header=False,
    )
    async with anyio.create_task_group() as group:
        group.start_soon(handle.open)
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
    listening = socket.socket(family, socket.SOCK_STREAM)
    listening.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        listening.bind((host, port))
        listening.listen(128)
    except OSError as exc:
        listening.close()
        raise StoreIOError(f"cannot listen on {_bracketed(host)}:{port}: {exc.strerror}") from exc
    return listening


def _bracketed(host: str) -> str:
    return f"[{host}]" if ":" in host and not host.startswith("[") else host
