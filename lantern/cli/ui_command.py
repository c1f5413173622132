"""`lantern ui`: serve a read-only view of the store to a web browser.

The view needs the optional extra `lantern[ui]` (Starlette, Jinja2, uvicorn), imported here,
inside the command, and only when it runs: `lantern --help` and every other command load none
of it, and without the extra the command fails with one line saying what to install.
"""

from __future__ import annotations

from collections.abc import Callable
from importlib.util import find_spec

import click

from lantern.errors import MissingDependency, install_hint
from lantern.loading import loading

REQUIRED = ("starlette", "jinja2", "uvicorn")
DEFAULT_PORT = 8470
DEFAULT_MAX_CONNECTIONS = 1_024
DEFAULT_REQUEST_TIMEOUT = 5.0
"""The defaults of `lantern.serving.connections.ServerLimits` (that module loads uvicorn: a
test keeps the two the same)."""


@click.command("ui")
@click.option(
    "--host",
    default="127.0.0.1",
    show_default=True,
    help="The address to listen on. Anything but a loopback address lets other machines in "
    "(with the token).",
)
@click.option(
    "--port",
    type=click.IntRange(0, 65_535),
    default=DEFAULT_PORT,
    show_default=True,
    help="The port to listen on; 0 picks a free one.",
)
@click.option(
    "--scope",
    "scopes",
    multiple=True,
    metavar="PATTERN",
    help="Show only records of this scope pattern: exact (user:ada), a name and * for that "
    "scope and those under it (user:ada* admits user:ada/notes, never user:adam), or a "
    "separator and * (user:*); \\* is a literal star. Repeatable: any of them. Records "
    "outside are not shown, counted or found, as with `lantern mcp --scope`.",
)
@click.option("--open", "open_browser", is_flag=True, help="Also open the view in a browser.")
@click.option(
    "--max-connections",
    type=click.IntRange(1, 1_000_000),
    default=DEFAULT_MAX_CONNECTIONS,
    show_default=True,
    metavar="N",
    help="Open connections at most; past them the oldest one waiting for a request is closed.",
)
@click.option(
    "--request-timeout",
    type=click.FloatRange(0, 3_600, min_open=True),
    default=DEFAULT_REQUEST_TIMEOUT,
    show_default=True,
    metavar="SECONDS",
    help="Close a connection whose request's headers (or the next part of its body) do not "
    "arrive within this time.",
)
@click.pass_context
def ui(
    ctx: click.Context,
    host: str,
    port: int,
    scopes: tuple[str, ...],
    open_browser: bool,
    max_connections: int,
    request_timeout: float,
) -> None:
    """Serve a read-only view of the store: records, history, evidence and search.

    It prints the address to open, with a token that every request needs; the view listens
    on 127.0.0.1 only, changes nothing, and runs until Ctrl-C. Example:

    \b
        lantern ui --scope 'project:lantern/*' --port 0
    """
    from lantern.memory.scopes import ScopePolicy
    from lantern.store.location import resolve

    db = ctx.find_root().obj["db"]
    policy = ScopePolicy.of(scopes)  # bad patterns and locations fail before anything starts
    location = resolve(db)
    db_words: tuple[str, ...] = ()
    if db is not None:
        db_words = ("--db", str(location.path) if location.path else location.display_url)
    serve = _load_server()
    ctx.exit(
        serve(
            db,
            host=host,
            port=port,
            scopes=policy,
            patterns=scopes,
            db_words=db_words,
            open_browser=open_browser,
            max_connections=max_connections,
            request_timeout=request_timeout,
        )
    )


def _load_server() -> Callable[..., int]:
    """The server's entry point, or `MissingDependency` naming the extra to install."""
    missing = [name for name in REQUIRED if find_spec(name) is None]
    if missing:
        raise MissingDependency(
            f"the web view needs {', '.join(missing)} (the ui extra): {install_hint('ui')}"
        )
    with loading():
        from lantern.ui.server import serve
    return serve
