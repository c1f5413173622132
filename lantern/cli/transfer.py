"""`lantern export` and `lantern import`: a store as JSON Lines, and back."""

from __future__ import annotations

import sys
from typing import BinaryIO

import click

from lantern.cli.context import open_lantern
from lantern.cli.output import counted, emit_json, json_option, note
from lantern.errors import InvalidInput, StoreIOError

# The line types of the export format, as a sentence names them.
_NOUNS = {
    "chunk_entity": "chunk-entity link",
    "history": "history entry",
    "memory": "memory record",
}


@click.command("export")
@click.option(
    "--scope",
    "scopes",
    multiple=True,
    help="Only memory records of this scope, or of scopes starting with a prefix ending in *. "
    "Repeatable.",
)
@click.option("--memories", is_flag=True, help="Export memory records and their history.")
@click.option("--evidence", is_flag=True, help="Export sources, chunks, entities, embeddings.")
@json_option
@click.pass_context
def export(
    ctx: click.Context, scopes: tuple[str, ...], memories: bool, evidence: bool, as_json: bool
) -> None:
    """Write the store as JSON Lines on stdout (both parts unless one is named).

    The format is stable and documented in the manual (docs/json.md, "Export format");
    `lantern import` reads it back. Stdout is JSON with or without --json; with it, an
    error also prints its JSON object there.

    \b
        lantern export --memories --scope 'project:lantern/*' > lantern-memories.jsonl
    """
    both = not memories and not evidence
    out = sys.stdout.buffer
    report = open_lantern(ctx).export_jsonl(
        out, scope=scopes, memories=memories or both, evidence=evidence or both
    )
    out.flush()
    lines = ", ".join(counted(n, _NOUNS.get(kind, kind)) for kind, n in report.added.items() if n)
    note(f"exported {lines or 'nothing'}")


@click.command("import")
@click.argument("file", metavar="FILE")
@json_option
@click.pass_context
def import_(ctx: click.Context, file: str, as_json: bool) -> None:
    """Add what an export (FILE, or - for stdin) holds and the store does not.

    Idempotent by id: anything already stored is left as it is. All or nothing: an error in
    any line changes nothing.

    \b
        lantern import lantern-memories.jsonl
    """
    lantern = open_lantern(ctx, create=True)
    if file == "-":
        report = lantern.import_jsonl(sys.stdin.buffer)
    else:
        with _open(file) as stream:
            report = lantern.import_jsonl(stream)
    if as_json:
        emit_json(report.to_json())
        return
    for kind in report.added:
        added, skipped = report.added[kind], report.skipped[kind]
        if added or skipped:
            click.echo(f"{kind + ':':<14}{added} added, {skipped} already present")


def _open(path: str) -> BinaryIO:
    try:
        return open(path, "rb")
    except FileNotFoundError as exc:
        raise InvalidInput(f"no such file: {path}") from exc
    except IsADirectoryError as exc:
        raise InvalidInput(f"{path} is a directory, not an export file") from exc
    except OSError as exc:
        raise StoreIOError(f"cannot read {path}: {exc.strerror}") from exc
