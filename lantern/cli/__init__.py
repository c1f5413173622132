"""The `lantern` command: a thin shell over the Python API.

Commands parse arguments, make one API call and render the result; every rule lives in the
repositories. Errors a user can cause become one line on stderr (and a JSON object on stdout
with `--json`) and the documented exit code, never a traceback.

Imports: the facade (`lantern.api`, `lantern`), the public names below it (records, errors,
vocabularies: `PUBLIC` in tests/test_layers.py), and `lantern.mcpserver` and `lantern.ui`,
which `lantern mcp` and `lantern ui` start.
"""

from __future__ import annotations

import gc
import os
import sys
from importlib import import_module
from typing import Any

import click

from lantern import __version__
from lantern.cli.output import remember_argv, report_error, report_usage_error
from lantern.cli.parsing import DB_HELP, DB_METAVAR, CommandGroup, accept_db
from lantern.errors import LanternError
from lantern.loading import loading

# Each command's module, imported when the command runs (or help lists it): a call loads only
# the code of its own command (see the architecture note on import time).
COMMANDS = {
    "chunk": ("lantern.cli.evidence", "chunk"),
    "db": ("lantern.cli.db", "db"),
    "embed": ("lantern.cli.embed", "embed"),
    "entity": ("lantern.cli.entity", "entity"),
    "export": ("lantern.cli.transfer", "export"),
    "import": ("lantern.cli.transfer", "import_"),
    "ingest": ("lantern.cli.evidence", "ingest"),
    "inspect": ("lantern.cli.inspect", "inspect"),
    "mcp": ("lantern.cli.mcp_command", "mcp"),
    "memory": ("lantern.cli.memory", "memory"),
    "search": ("lantern.cli.evidence", "search"),
    "source": ("lantern.cli.evidence", "source"),
    "ui": ("lantern.cli.ui_command", "ui"),
}


# A group called without a command shows its help by raising this (Click 8.2 and later).
_NO_ARGS_IS_HELP: Any = getattr(click.exceptions, "NoArgsIsHelpError", ())


class LanternGroup(CommandGroup):
    """The root group: turns `LanternError`s into their exit codes, once, for every command,
    and loads each command's module only when that command is wanted."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(COMMANDS)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in COMMANDS:
            return None
        module, name = COMMANDS[cmd_name]
        with loading():
            command: click.Command = getattr(import_module(module), name)
        accept_db(command)
        return command

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        remember_argv(ctx, args)
        try:
            return super().parse_args(ctx, args)
        except click.UsageError as exc:
            if isinstance(exc, _NO_ARGS_IS_HELP):
                raise
            report_usage_error(ctx, exc)
            raise click.exceptions.Exit(exc.exit_code) from exc

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except LanternError as exc:
            report_error(ctx, exc)
            ctx.exit(exc.exit_code)
        except click.UsageError as exc:
            if isinstance(exc, _NO_ARGS_IS_HELP):
                raise  # `lantern memory` alone: Click shows the group's help
            report_usage_error(ctx, exc)
            ctx.exit(exc.exit_code)
        except (click.exceptions.Exit, click.ClickException, click.Abort):
            raise
        except BrokenPipeError:
            # The reader went away (`lantern memory list | head`); that is not an error.
            sys.stderr = open(os.devnull, "w")  # noqa: SIM115 - silence the interpreter's flush
            ctx.exit(0)
        except KeyboardInterrupt:
            click.echo("Interrupted.", err=True)
            ctx.exit(130)
        except Exception as exc:  # the last-resort handler at the edge
            if os.environ.get("LANTERN_DEBUG"):
                raise
            report_error(
                ctx,
                LanternError(
                    f"unexpected {type(exc).__name__}: {exc} "
                    "(set LANTERN_DEBUG=1 for a traceback, and please report it)"
                ),
            )
            ctx.exit(1)


@click.group(cls=LanternGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--db", "db", metavar=DB_METAVAR, help=DB_HELP)
@click.version_option(__version__, prog_name="lantern")
@click.pass_context
def cli(ctx: click.Context, db: str | None) -> None:
    """Lantern: local-first memory for AI agents.

    Stores evidence (what an agent observed) and memory records (what it decided to keep),
    and gives them back filtered and deterministically ordered. Example:

    \b
        lantern memory add --kind preference --scope user:raphael "Prefers short answers."
    """
    # A --db given after the command word replaces this one when that command is parsed. A
    # program that runs the CLI in-process may pass `obj={"clock": ...}`: the clock every
    # command's store takes its time from (`Lantern.open(clock=...)`); it is kept.
    ctx.obj = {**(ctx.obj or {}), "db": db}


def main() -> None:
    """The `lantern` command, as a process: it exits when the command ends."""
    try:
        cli(prog_name="lantern")
    finally:
        # The process is about to end and its memory with it. Frozen objects are left out of
        # the interpreter's last full collection, which otherwise walks everything the
        # imports made (SQLAlchemy's above all): 50 ms, a fifth of a short command. The
        # store was closed with the command's context (see `open_lantern`).
        gc.freeze()
