"""`lantern export` and `lantern import`: a store as JSON Lines, and back."""

from __future__ import annotations

import sys
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import TYPE_CHECKING, BinaryIO

import click

from lantern.cli.context import open_lantern
from lantern.cli.output import counted, emit_json, json_option, note
from lantern.errors import InvalidInput, StoreIOError
from lantern.loading import loading

if TYPE_CHECKING:
    from lantern.transfer.foreign import ForeignImport
    from lantern.transfer.jsonl import TransferReport

# The line types of the export format, as a sentence names them.
_NOUNS = {
    "chunk_entity": "chunk-entity link",
    "entity_scan": "entity scan",
    "history": "history entry",
    "memory": "memory record",
    "memory_entity": "record-entity link",
    "memory_embedding": "memory vector",
}
# The kinds of item another memory system's file holds, as its report's JSON keys name them
# (plural), and the noun of one.
_ITEM_NOUNS = {
    "entities": "entity",
    "memories": "memory",
    "observations": "observation",
    "relations": "relation",
}


def _item_noun(kind: str) -> str:
    return _ITEM_NOUNS.get(kind, kind)


@click.command("export")
@click.option(
    "--scope",
    "scopes",
    multiple=True,
    help="Only memory records of this scope pattern (as for memory list --scope: user:ada, "
    "user:ada*, user:*). Repeatable.",
)
@click.option(
    "--memories", is_flag=True, help="Export memory records, their history and their vectors."
)
@click.option("--evidence", is_flag=True, help="Export sources, chunks, entities, embeddings.")
@click.option(
    "--to",
    "to_format",
    type=click.Choice(["lantern", "mcp-memory"]),
    default="lantern",
    show_default=True,
    help="lantern: Lantern's own format; mcp-memory: the memory.jsonl knowledge graph of the "
    "MCP reference memory server (from the active memory records).",
)
@json_option
@click.pass_context
def export(
    ctx: click.Context,
    scopes: tuple[str, ...],
    memories: bool,
    evidence: bool,
    to_format: str,
    as_json: bool,
) -> None:
    """Write the store as JSON Lines on stdout (both parts unless one is named).

    The format is stable and documented in the manual (docs/json.md, "Export format");
    `lantern import` reads it back. With --to mcp-memory, the memory records' entities,
    observations and relations are written as the MCP memory server's memory.jsonl. Stdout
    is JSON with or without --json; with it, an error also prints its JSON object there.

    \b
        lantern export --memories --scope 'project:lantern/*' > lantern-memories.jsonl
    """
    out = sys.stdout.buffer
    if to_format == "mcp-memory":
        if memories or evidence:
            raise click.UsageError("--memories and --evidence apply to --to lantern")
        written = open_lantern(ctx).export_mcp_memory(out, scope=scopes)
        out.flush()
        note(f"exported {counted(written, 'line')} of a knowledge graph")
        return
    both = not memories and not evidence
    report = open_lantern(ctx).export_jsonl(
        out, scope=scopes, memories=memories or both, evidence=evidence or both
    )
    out.flush()
    lines = ", ".join(counted(n, _NOUNS.get(kind, kind)) for kind, n in report.added.items() if n)
    note(f"exported {lines or 'nothing'}")


@click.command("import")
@click.argument("file", metavar="FILE")
@click.option(
    "--from",
    "from_format",
    type=click.Choice(["lantern", "mcp-memory", "mem0"]),
    default="lantern",
    show_default=True,
    help="lantern: a Lantern export; mcp-memory: the MCP reference memory server's "
    "memory.jsonl; mem0: the JSON of mem0's get_all().",
)
@click.option(
    "--scope",
    metavar="SCOPE",
    help="With --from mcp-memory: the scope of the records (default global); with --from "
    "mem0: the scope of memories that name no user, agent or run.",
)
@click.option("--dry-run", is_flag=True, help="Say what would be written, and write nothing.")
@json_option
@click.pass_context
def import_(
    ctx: click.Context,
    file: str,
    from_format: str,
    scope: str | None,
    dry_run: bool,
    as_json: bool,
) -> None:
    """Add what an export (FILE, or - for stdin) holds and the store does not.

    Idempotent: anything already stored is left as it is. All or nothing: an error in any
    line changes nothing, and names the line; where no store was, none is left behind, and
    --dry-run previews without creating one. --from reads the files of other memory
    systems (the mapping is in the manual, docs/entities.md).

    \b
        lantern import lantern-memories.jsonl

    \b
        lantern import --from mcp-memory ~/.mcp/memory.jsonl --scope user:ada --dry-run
    """
    if from_format == "lantern" and scope is not None:
        raise click.UsageError("--scope applies to --from mcp-memory and mem0")
    with loading():
        # Imported here so that `lantern --help` does not load SQLAlchemy.
        from lantern.api import Lantern
    # The command's own `with`, so that an error of the import reaches `for_import` (Click
    # closes the resources of a context without it): where no store was, none is left.
    with (
        _input(file) as stream,
        Lantern.for_import(ctx.find_root().obj["db"], dry_run=dry_run) as lantern,
    ):
        if from_format == "lantern":
            report: ForeignImport | TransferReport = lantern.import_jsonl(stream, dry_run=dry_run)
        else:
            call = lantern.import_mcp_memory if from_format == "mcp-memory" else lantern.import_mem0
            report = call(stream, scope=scope or "global", dry_run=dry_run)
    if as_json:
        emit_json(report.to_json())
    elif isinstance(report.added, Mapping):
        verb = "would be added" if dry_run else "added"
        for kind, added in report.added.items():
            present = report.skipped[kind]
            if added or present:
                click.echo(f"{kind + ':':<18}{added} {verb}, {present} already present")
    else:
        read = ", ".join(counted(n, _item_noun(kind)) for kind, n in report.read.items())
        verb = "would add" if dry_run else "added"
        records = counted(report.added, "memory record")
        click.echo(f"read {read}: {verb} {records}, {report.present} already present")
    for kind, n in report.ignored.items():
        if kind == "memory_embedding":
            vectors = counted(n, "memory vector")
            note(f"left out {vectors} computed from another text than its record's content")
        else:
            note(f"left out {counted(n, _item_noun(kind))} (not memories)")
    if report.without_vector:
        missing = report.without_vector
        have = "would have" if dry_run else ("has" if missing == 1 else "have")
        note(
            f"{counted(missing, 'imported memory record')} {have} no vector: a search finds "
            f"{'it' if missing == 1 else 'them'} by words only until `lantern embed --memory` "
            "computes the vectors"
        )


@contextmanager
def _input(file: str) -> Iterator[BinaryIO]:
    if file == "-":
        yield sys.stdin.buffer
        return
    with _open(file) as stream:
        yield stream


def _open(path: str) -> BinaryIO:
    try:
        return open(path, "rb")
    except FileNotFoundError as exc:
        raise InvalidInput(f"no such file: {path}") from exc
    except IsADirectoryError as exc:
        raise InvalidInput(f"{path} is a directory, not an export file") from exc
    except OSError as exc:
        raise StoreIOError(f"cannot read {path}: {exc.strerror}") from exc
