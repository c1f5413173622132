"""`lantern mcp`: serve the memory and evidence tools to MCP clients over stdio or HTTP, and
`lantern mcp token`: the tokens of the HTTP server.

The MCP SDK is an optional extra (`lantern[mcp]`) and slow to import, so it is imported here,
inside the command, and only when a server is to run: `--help` and `--print-config` never load
it, and no other command does.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import click

from lantern.cli.output import emit_json, json_option, note
from lantern.cli.parsing import CommandGroup
from lantern.errors import MissingDependency, install_hint
from lantern.loading import loading

_SDK_MODULES = frozenset({"mcp", "mcp_types", "jsonschema", "anyio", "pydantic"})
_DEFAULTS: dict[str, Any] = {
    "sessions_per_token": 32,
    "requests_per_token": 32,
    "session_idle_minutes": 5.0,
    "max_connections": 1_024,
    "request_timeout": 5.0,
}
"""The defaults of `lantern.mcpserver.limits.Limits` (that module loads the SDK: a test keeps
the two the same)."""
_FLAGS = {
    "sessions_per_token": "--max-sessions-per-token",
    "requests_per_token": "--max-requests-per-token",
    "session_idle_minutes": "--session-idle",
    "max_connections": "--max-connections",
    "request_timeout": "--request-timeout",
}


@click.group("mcp", cls=CommandGroup, invoke_without_command=True)
@click.option(
    "--scope",
    "scopes",
    multiple=True,
    metavar="PATTERN",
    help="Confine every memory read and write to this scope pattern: exact (user:ada), a name "
    "and * for that scope and those under it (user:ada* admits user:ada/notes, never "
    "user:adam), or a separator and * (user:*); \\* is a literal star. Repeatable: any of "
    "them. Records outside behave as if they did not exist. Over HTTP each token carries its "
    "own scopes instead.",
)
@click.option(
    "--read-only",
    is_flag=True,
    help="Leave out the tools that write, and open the store read-only (over HTTP: for every "
    "token).",
)
@click.option(
    "--http",
    "address",
    metavar="[HOST:]PORT",
    help="Serve over Streamable HTTP at http://HOST:PORT/mcp instead of stdio (HOST defaults "
    "to 127.0.0.1; PORT 0 picks a free one). Needs --tokens.",
)
@click.option(
    "--tokens",
    "token_path",
    type=click.Path(dir_okay=False, path_type=Path),
    metavar="FILE",
    help="With --http: the token file (owner-only) of the clients allowed in, made with "
    "`lantern mcp token add`.",
)
@click.option(
    "--allow-host",
    "allowed_hosts",
    multiple=True,
    metavar="NAME",
    help="With --http: a host name clients reach this server by, besides the loopback names "
    "and HOST (requests naming any other Host or Origin are refused). Repeatable.",
)
@click.option(
    "--max-sessions-per-token",
    "sessions_per_token",
    type=click.IntRange(1, 100_000),
    default=_DEFAULTS["sessions_per_token"],
    show_default=True,
    metavar="N",
    help="With --http: the sessions one token may hold open; past them that token's new "
    "sessions get 429 with Retry-After, and other tokens are served.",
)
@click.option(
    "--max-requests-per-token",
    "requests_per_token",
    type=click.IntRange(1, 100_000),
    default=_DEFAULTS["requests_per_token"],
    show_default=True,
    metavar="N",
    help="With --http: the requests of one token served at once; past them, 429.",
)
@click.option(
    "--session-idle",
    "session_idle_minutes",
    type=click.FloatRange(0, 24 * 60, min_open=True),
    default=_DEFAULTS["session_idle_minutes"],
    show_default=True,
    metavar="MINUTES",
    help="With --http: close a session after this many minutes without a request.",
)
@click.option(
    "--max-connections",
    type=click.IntRange(1, 1_000_000),
    default=_DEFAULTS["max_connections"],
    show_default=True,
    metavar="N",
    help="With --http: open connections at most; past them the oldest one waiting for a "
    "request is closed.",
)
@click.option(
    "--request-timeout",
    type=click.FloatRange(0, 3_600, min_open=True),
    default=_DEFAULTS["request_timeout"],
    show_default=True,
    metavar="SECONDS",
    help="With --http: close a connection whose request's headers (or the next part of its "
    "body) do not arrive within this time.",
)
@click.option(
    "--print-config",
    is_flag=True,
    help="Print the JSON entry for an MCP client's configuration (command, args, env with "
    "LANTERN_DB) and exit.",
)
@json_option
@click.pass_context
def mcp(
    ctx: click.Context,
    scopes: tuple[str, ...],
    read_only: bool,
    address: str | None,
    token_path: Path | None,
    allowed_hosts: tuple[str, ...],
    sessions_per_token: int,
    requests_per_token: int,
    session_idle_minutes: float,
    max_connections: int,
    request_timeout: float,
    print_config: bool,
    as_json: bool,
) -> None:
    """Serve Lantern's memory and evidence tools to MCP clients, over stdio or HTTP.

    Over stdio (the default) the client starts this command; stdout carries the protocol and
    messages go to stderr; the server exits when the client closes stdin. With --http it
    serves every client holding a token from --tokens, until SIGINT or SIGTERM. Examples:

    \b
        lantern mcp --scope 'project:lantern/*' --print-config

    \b
        lantern mcp --http 8765 --tokens ~/.config/lantern/tokens.json
    """
    if ctx.invoked_subcommand is not None:
        return
    if as_json and not print_config:
        # A server's stdout carries the protocol; only the printed configuration is JSON.
        raise click.UsageError("--json goes with --print-config (which prints JSON either way)")
    from lantern.memory.scopes import ScopePolicy
    from lantern.store.location import resolve

    db = ctx.find_root().obj["db"]
    policy = ScopePolicy.of(scopes)  # bad patterns and locations fail before anything starts
    location = resolve(db)
    limits: dict[str, float] = {
        "sessions_per_token": sessions_per_token,
        "requests_per_token": requests_per_token,
        "session_idle_minutes": session_idle_minutes,
        "max_connections": max_connections,
        "request_timeout": request_timeout,
    }
    if address is None:
        given = [
            *(["--tokens"] if token_path is not None else []),
            *(["--allow-host"] if allowed_hosts else []),
            *(_FLAGS[name] for name, value in limits.items() if value != _DEFAULTS[name]),
        ]
        if given:
            verb = "goes" if len(given) == 1 else "go"
            raise click.UsageError(f"{' and '.join(given)} {verb} with --http")
        if print_config:
            from lantern.mcpserver.config import client_config

            emit_json(client_config(db, scopes=scopes, read_only=read_only))
            if location.display_url != location.url:
                # The one place a password is printed: the client needs the URL as it is.
                note(
                    "this configuration holds the database password: keep it private, or "
                    "move the password to ~/.pgpass and out of the URL"
                )
            return
        serve = _load_server()
        ctx.exit(serve(db, scopes=policy, read_only=read_only))
    host, port = _address(address)
    if scopes:
        raise click.UsageError(
            "--scope does not go with --http: each token carries its own scopes "
            "(lantern mcp token add --scope PATTERN)"
        )
    if print_config:
        raise click.UsageError(
            "--print-config prints a stdio entry; an HTTP client needs the URL and a token "
            "(see the README's MCP section)"
        )
    if token_path is None:
        raise click.UsageError("--http needs --tokens FILE: HTTP never runs without tokens")
    from lantern.errors import InvalidInput
    from lantern.mcpserver import tokens

    if not tokens.read(token_path):
        raise InvalidInput(
            f"the token file {token_path} holds no token: add one with "
            f"lantern mcp token add --tokens {token_path} --label NAME"
        )
    _load_server()
    from lantern.mcpserver.http import serve_http
    from lantern.mcpserver.limits import Limits

    ctx.exit(
        serve_http(
            db,
            host=host,
            port=port,
            token_path=token_path,
            read_only=read_only,
            allowed_hosts=allowed_hosts,
            limits=Limits(
                sessions_per_token=sessions_per_token,
                requests_per_token=requests_per_token,
                session_idle_minutes=session_idle_minutes,
                max_connections=max_connections,
                request_timeout=request_timeout,
            ),
        )
    )


@mcp.group("token", cls=CommandGroup, uses_store=False)
def token() -> None:
    """Tokens for `lantern mcp --http`: each with a label, its scopes and a read-only flag.

    \b
    lantern mcp token add --tokens ~/.config/lantern/tokens.json --label ada --scope 'user:ada*'
    """


_TOKENS_OPTION = click.option(
    "--tokens",
    "token_path",
    type=click.Path(dir_okay=False, path_type=Path),
    required=True,
    metavar="FILE",
    help="The token file (created owner-only if missing).",
)


@token.command("add")
@_TOKENS_OPTION
@click.option("--label", required=True, help="Who the token is for: letters, digits, . _ @ -.")
@click.option(
    "--scope",
    "scopes",
    multiple=True,
    metavar="PATTERN",
    help="Confine the token to this scope pattern (as for lantern mcp --scope: user:ada, "
    "user:ada*, user:*). Repeatable: any of them. Without it, the whole store.",
)
@click.option("--read-only", is_flag=True, help="The token can read, never write.")
@json_option
def token_add(
    token_path: Path, label: str, scopes: tuple[str, ...], read_only: bool, as_json: bool
) -> None:
    """Make a token and print it, once: the file keeps only its hash.

    \b
    lantern mcp token add --tokens tokens.json --label ci-bot --scope 'project:x/*' --read-only
    """
    from lantern.mcpserver import tokens

    secret, grant = tokens.add(token_path, label, scopes=scopes, read_only=read_only)
    if as_json:
        emit_json({"token": secret, **grant.listed()})
    else:
        click.echo(secret)
    note(f"token {grant.label!r} added to {token_path}; it is shown only this once")


@token.command("list")
@_TOKENS_OPTION
@json_option
def token_list(token_path: Path, as_json: bool) -> None:
    """List the tokens' labels, scopes and read-only flags (never the tokens).

    \b
    lantern mcp token list --tokens ~/.config/lantern/tokens.json
    """
    from lantern.mcpserver import tokens

    grants = tokens.read(token_path)
    if as_json:
        emit_json([grant.listed() for grant in grants])
        return
    for grant in grants:
        access = "read-only" if grant.read_only else "read-write"
        click.echo(f"{grant.label:<24} {access:<10} {', '.join(grant.scopes) or '(all scopes)'}")


@token.command("revoke")
@_TOKENS_OPTION
@click.argument("label")
@json_option
def token_revoke(token_path: Path, label: str, as_json: bool) -> None:
    """Revoke a token: a running server refuses it from its next request.

    \b
    lantern mcp token revoke --tokens ~/.config/lantern/tokens.json ci-bot
    """
    from lantern.mcpserver import tokens

    revoked = tokens.revoke(token_path, label)
    if as_json:
        emit_json(revoked.listed())
    else:
        click.echo(f"revoked {revoked.label}")


def _address(value: str) -> tuple[str, int]:
    """HOST and PORT from `[HOST:]PORT` (an IPv6 host in brackets)."""
    host, _, port = value.rpartition(":")
    host = host.strip("[]") or "127.0.0.1"
    if not port.isdigit() or not 0 <= int(port) <= 65_535:
        raise click.BadParameter(f"{value!r} is not [HOST:]PORT", param_hint="'--http'")
    return host, int(port)


def _load_server() -> Callable[..., int]:
    """The server's entry point, or `MissingDependency` naming the extra to install."""
    from importlib.util import find_spec

    if find_spec("mcp") is None:
        raise MissingDependency(f"the MCP server needs the MCP SDK: {install_hint('mcp')}")
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
                f"{install_hint('mcp', upgrade=True)}"
            ) from exc
        raise MissingDependency(
            f"the MCP server needs the MCP SDK ({exc.name} cannot be imported): "
            f"{install_hint('mcp')}"
        ) from exc
    return serve


def _sdk_version() -> str | None:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("mcp")
    except PackageNotFoundError:
        return None
