"""The `lantern` command: a thin shell over the Python API.

Commands parse arguments, make one API call and render the result; every rule lives in the
repositories. Errors a user can cause become one line on stderr (and a JSON object on stdout
with `--json`) and the documented exit code, never a traceback.
"""

from __future__ import annotations

import os
import sys
from typing import Any

import click

from lantern import __version__
from lantern.cli.db import db
from lantern.cli.evidence import chunk, ingest, search, source
from lantern.cli.inspect import inspect
from lantern.cli.mcp_command import mcp
from lantern.cli.memory import memory
from lantern.cli.output import report_error
from lantern.cli.transfer import export, import_
from lantern.errors import LanternError


class LanternGroup(click.Group):
    """The root group: turns `LanternError`s into their exit codes, once, for every command."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except LanternError as exc:
            report_error(ctx, exc)
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
@click.option(
    "--db",
    "db",
    metavar="PATH_OR_URL",
    help="Store file path or database URL. Default: $LANTERN_DB, else "
    "$XDG_DATA_HOME/lantern/lantern.db (~/.local/share/lantern/lantern.db).",
)
@click.version_option(__version__, prog_name="lantern")
@click.pass_context
def cli(ctx: click.Context, db: str | None) -> None:
    """Lantern: local-first memory for AI agents.

    Stores evidence (what an agent observed) and memory records (what it decided to keep),
    and gives them back filtered and deterministically ordered. Example:

        lantern memory add --kind preference --scope user:raphael "Prefers short answers."
    """
    ctx.obj = {"db": db}


cli.add_command(memory)
cli.add_command(db)
cli.add_command(inspect)
cli.add_command(export)
cli.add_command(import_)
cli.add_command(ingest)
cli.add_command(search)
cli.add_command(source)
cli.add_command(chunk)
cli.add_command(mcp)


def main() -> None:
    cli(prog_name="lantern")
