"""Serving the view: the store opened read-only, a fresh token, and uvicorn on one socket.

The socket is bound here, before uvicorn starts, so that the URL printed (with the port the
system chose for `--port 0`) is one that already answers. Its connections are guarded as
`lantern mcp --http`'s are (`lantern.serving.connections`): a request must arrive within
`--request-timeout` seconds, and at most `--max-connections` connections are open.
"""

from __future__ import annotations

import asyncio
import secrets
import socket
import sys
import webbrowser
from collections.abc import Sequence

import uvicorn

from lantern.api import Lantern
from lantern.errors import InvalidInput
from lantern.memory.scopes import ScopePolicy
from lantern.serving.connections import ServerLimits, uvicorn_options
from lantern.serving.refusals import Refusals, raise_file_limit
from lantern.ui.app import build_app
from lantern.ui.security import LOOPBACK_HOSTS
from lantern.ui.views import Site

LOGGER = "lantern.ui"
_DEFAULTS = ServerLimits()


def serve(
    db: str | None,
    *,
    host: str,
    port: int,
    scopes: ScopePolicy,
    patterns: Sequence[str] = (),
    db_words: Sequence[str] = (),
    open_browser: bool = False,
    max_connections: int = _DEFAULTS.max_connections,
    request_timeout: float = _DEFAULTS.request_timeout,
) -> int:
    """Serve the view until interrupted; the URL with its token goes to stdout."""
    limits = ServerLimits(max_connections=max_connections, request_timeout=request_timeout)
    raise_file_limit(limits.max_connections, LOGGER)
    lantern = Lantern.open(db, create=False, read_only=True, scopes=scopes)
    try:
        lantern.keep_indexes()  # a PostgreSQL store's, for the view's many searches
        listening = _bind(host, port)
        token = secrets.token_urlsafe(32)
        site = Site(lantern, tuple(db_words), tuple(patterns))
        app = build_app(site, token=token, hosts=(host,))
        bound_port = listening.getsockname()[1]
        shown_host = f"[{host}]" if ":" in host else host
        url = f"http://{shown_host}:{bound_port}/?token={token}"
        where = lantern.location.display_url
        print(f"lantern: a read-only view of {where}; open it at this address:", file=sys.stderr)
        if host.strip("[]").lower() not in LOOPBACK_HOSTS:
            print(
                f"lantern: {host} is not a loopback address: whoever reaches it with the token "
                "can read the store",
                file=sys.stderr,
            )
        print(url, flush=True)
        print("lantern: press Ctrl-C to stop", file=sys.stderr, flush=True)
        if open_browser:
            webbrowser.open(url)
        refusals = Refusals(limits.log_interval, LOGGER)
        config = uvicorn.Config(
            app,
            **uvicorn_options(limits, refusals),
            log_level="warning",
            access_log=False,
            lifespan="off",
            server_header=False,
        )
        asyncio.run(_serve(uvicorn.Server(config), listening, refusals))
    finally:
        lantern.close()
    return 0


async def _serve(server: uvicorn.Server, listening: socket.socket, refusals: Refusals) -> None:
    """Uvicorn on the socket, with the refusals logged once an interval beside it."""
    counting = asyncio.create_task(refusals.run())
    try:
        await server.serve(sockets=[listening])
    finally:
        counting.cancel()


def _bind(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    # IPPROTO_TCP named, so that asyncio turns Nagle's algorithm off on accepted connections
    # (a response's body would wait 40 ms for the client's delayed ACK of its head).
    listening = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    listening.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        listening.bind((host.strip("[]"), port))
    except OSError as exc:
        listening.close()
        raise InvalidInput(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from exc
    listening.listen(128)
    return listening
