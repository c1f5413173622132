"""`lantern memory ...`: add, list, show and archive memory records."""

from __future__ import annotations

import sys

import click

from lantern.cli.context import open_lantern
from lantern.cli.output import emit_json, json_option, list_records, note, show_record
from lantern.errors import InvalidInput
from lantern.validation import MEMORY_KINDS, STATUS_FILTERS


@click.group()
def memory() -> None:
    """Memory records: explicit, durable state the agent decided to keep.

    lantern memory list --scope user:raphael
    """


@memory.command("add")
@click.argument("content")
@click.option("--kind", required=True, help=f"One of: {', '.join(MEMORY_KINDS)}.")
@click.option("--scope", default="global", show_default=True, help="Namespace, e.g. user:raphael.")
@click.option("--priority", type=int, default=50, show_default=True, help="0-100.")
@click.option("--urgency", type=int, default=0, show_default=True, help="0-100.")
@click.option("--confidence", type=float, default=1.0, show_default=True, help="0.0-1.0.")
@click.option("--expires-at", metavar="TIME", help="Unix seconds or ISO-8601 (naive is UTC).")
@click.option("--supersedes", "supersedes_id", metavar="ID", help="Record this one replaces.")
@click.option(
    "--source-ref",
    "source_refs",
    multiple=True,
    metavar="REF",
    help="Evidence reference, TYPE:ID (chunk:chk_..., source:src_..., session:...) "
    "or a JSON object with a 'type'. Repeatable.",
)
@json_option
@click.pass_context
def add_command(
    ctx: click.Context,
    content: str,
    kind: str,
    scope: str,
    priority: int,
    urgency: int,
    confidence: float,
    expires_at: str | None,
    supersedes_id: str | None,
    source_refs: tuple[str, ...],
    as_json: bool,
) -> None:
    """Add a memory record; CONTENT is the text, or - to read it from stdin.

    Prints the record's id (the whole record with --json). Adding a record with the same
    scope, kind and content as a stored one changes nothing and returns the stored one.

        lantern memory add --kind preference --scope user:raphael --priority 90 \\
            "Raphael prefers separate branches on his repos."
    """
    if content == "-":
        content = _read_stdin()
    lantern = open_lantern(ctx)
    record, created = lantern.memory.get_or_add(
        kind=kind,
        content=content,
        scope=scope,
        priority=priority,
        urgency=urgency,
        confidence=confidence,
        expires_at=expires_at,
        supersedes_id=supersedes_id,
        source_refs=list(source_refs),
    )
    if not created:
        note(
            f"an identical memory is already stored as {record.id} (status {record.status}); "
            "nothing was changed"
        )
    if as_json:
        emit_json(record.to_json())
    else:
        click.echo(record.id)


@memory.command("list")
@click.option("--scope", "scopes", multiple=True, help="Only these scopes. Repeatable.")
@click.option("--kind", "kinds", multiple=True, help="Only these kinds. Repeatable.")
@click.option(
    "--status",
    default="active",
    show_default=True,
    help=f"One of: {', '.join(STATUS_FILTERS)}.",
)
@click.option("--limit", type=int, default=50, show_default=True, help="At most this many.")
@click.option("--offset", type=int, default=0, show_default=True, help="Skip this many first.")
@click.option("--include-expired", is_flag=True, help="Also records whose expires_at has passed.")
@json_option
@click.pass_context
def list_command(
    ctx: click.Context,
    scopes: tuple[str, ...],
    kinds: tuple[str, ...],
    status: str,
    limit: int,
    offset: int,
    include_expired: bool,
    as_json: bool,
) -> None:
    """List memory records: active first, then higher priority, higher urgency, newer
    updated_at, and id.

        lantern memory list --scope user:raphael --status active --json
    """
    records = open_lantern(ctx).memory.list(
        scope=scopes,
        kind=kinds,
        status=status,
        limit=limit,
        offset=offset,
        include_expired=include_expired,
    )
    if as_json:
        emit_json([record.to_json() for record in records])
    else:
        list_records(records)


@memory.command("show")
@click.argument("record_id", metavar="ID")
@json_option
@click.pass_context
def show_command(ctx: click.Context, record_id: str, as_json: bool) -> None:
    """Show one memory record.

    lantern memory show mem_0123456789abcdef
    """
    record = open_lantern(ctx).memory.get(record_id)
    if as_json:
        emit_json(record.to_json())
    else:
        show_record(record)


@memory.command("archive")
@click.argument("record_id", metavar="ID")
@json_option
@click.pass_context
def archive_command(ctx: click.Context, record_id: str, as_json: bool) -> None:
    """Archive a memory record: it stays stored, and leaves the default listing.

    lantern memory archive mem_0123456789abcdef
    """
    record = open_lantern(ctx).memory.archive(record_id)
    if as_json:
        emit_json(record.to_json())
    else:
        show_record(record)


def _read_stdin() -> str:
    data = sys.stdin.buffer.read()
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InvalidInput("standard input is not valid UTF-8 text") from exc
