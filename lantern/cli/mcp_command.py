"""`lantern mcp`: serve the memory and evidence tools to an MCP client over stdio.

The MCP SDK is an optional extra (`lantern[mcp]`) and slow to import, so it is imported here,
inside the command, and only when a server is to run: `--help` and `--print-config` never load
it, and no other command does.
"""

from __future__ import annotations

from collections.abc import Callable

import click

from lantern.cli.output import emit_json
from lantern.errors import MissingDependency
from lantern.loading import loading

INSTALL_HINT = "pip install 'lantern[mcp]'"
_SDK_MODULES = frozenset({"mcp", "mcp_types", "jsonschema", "anyio", "pydantic"})


@click.command("mcp")
@click.option(
    "--scope",
    "scopes",
    multiple=True,
    metavar="PATTERN",
    help="Confine every memory read and write to this scope, or to scopes starting with a "
    "prefix ending in * (user:*); \\* at the end matches a literal star. Repeatable: any of "
    "them. Records outside behave as if they did not exist.",
)
@click.option(
    "--read-only",
    is_flag=True,
    help="Leave out the tools that write, and open the store read-only.",
)
@click.option(
    "--print-config",
    is_flag=True,
    help="Print the JSON entry for an MCP client's configuration (command, args, env with "
    "LANTERN_DB) and exit.",
)
@click.pass_context
def mcp(ctx: click.Context, scopes: tuple[str, ...], read_only: bool, print_config: bool) -> None:
    """Serve Lantern's memory and evidence tools to an MCP client over stdin and stdout.

    The client starts this command; stdout carries the protocol and messages go to stderr.
    The server exits when the client closes stdin. Example:

        lantern mcp --scope 'project:lantern/*' --print-config
    """
    from lantern.memory.scopes import ScopePolicy
    from lantern.store.location import resolve

    db = ctx.find_root().obj["db"]
    policy = ScopePolicy.of(scopes)  # bad patterns and locations fail before anything starts
    resolve(db)
    if print_config:
        from lantern.mcpserver.config import client_config

        emit_json(client_config(db, scopes=scopes, read_only=read_only))
        return
    serve = _load_server()
    ctx.exit(serve(db, scopes=policy, read_only=read_only))


def _load_server() -> Callable[..., int]:
    """The server's entry point, or `MissingDependency` naming the extra to install."""
    from importlib.util import find_spec

    if find_spec("mcp") is None:
        raise MissingDependency(f"the MCP server needs the MCP SDK: {INSTALL_HINT}")
    try:
        with loading():
            from lantern.mcpserver.server import serve
    except ImportError as exc:
        if (exc.name or "").split(".")[0] not in _SDK_MODULES:
            raise
        found = _sdk_version()
        if found is not None and found.split(".")[0].isdigit() and int(found.split(".")[0]) < 2:
            raise MissingDependency(
                f"the MCP server needs version 2 of the MCP SDK, found {found}: "
                "pip install --upgrade 'lantern[mcp]'"
            ) from exc
        raise MissingDependency(
            f"the MCP server needs the MCP SDK ({exc.name} cannot be imported): {INSTALL_HINT}"
        ) from exc
    return serve


def _sdk_version() -> str | None:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("mcp")
    except PackageNotFoundError:
        return None
