"""`lantern entity ...`: entities found in evidence or given by the caller, and their links.

Each command parses its arguments, makes one call on the facade and renders the result; what
an entity is and how it is normalised lives in `lantern.entities`.
"""

from __future__ import annotations

import click

from lantern.cli.context import open_lantern
from lantern.cli.output import (
    ProgressBar,
    counted,
    emit_json,
    json_option,
    list_records,
    note,
    plural,
)
from lantern.entities.records import LinkChange


@click.group("entity")
def entity() -> None:
    """Entities: URLs, paths, @mentions, issues... found in evidence, and the people, projects
    or places a caller attaches to chunks and memory records. Written KIND:NAME.

    \b
        lantern entity list --kind url --order count
    """


@entity.command("list")
@click.option("--kind", "kinds", multiple=True, help="Only entities of this kind. Repeatable.")
@click.option(
    "--order",
    type=click.Choice(["name", "count"]),
    default="name",
    show_default=True,
    help="name: by kind, then name; count: the most linked first.",
)
@click.option("--limit", type=int, default=100, show_default=True, help="At most this many.")
@click.option("--offset", type=int, default=0, show_default=True, help="Skip this many first.")
@json_option
@click.pass_context
def list_command(
    ctx: click.Context, kinds: tuple[str, ...], order: str, limit: int, offset: int, as_json: bool
) -> None:
    """List entities with how many chunks mention them and how many memory records are about
    them.

    \b
        lantern entity list --kind mention --order count --limit 20
    """
    found = open_lantern(ctx).entities.list(kind=kinds, order=order, limit=limit, offset=offset)
    if as_json:
        emit_json([summary.to_json() for summary in found])
        return
    for summary in found:
        chunks = plural(summary.chunk_count, "chunk")
        memories = plural(summary.memory_count, "memory")
        click.echo(
            f"{summary.id}  {summary.chunk_count:>6} {chunks:<6}  "
            f"{summary.memory_count:>5} {memories:<8}  {summary.kind}:{summary.name}"
        )


@entity.command("show")
@click.argument("entity_ref", metavar="KIND:NAME|ID")
@click.option(
    "--limit", type=int, default=20, show_default=True, help="At most this many of each list."
)
@click.option("--after", metavar="CURSOR", help="Continue after a page (its next_cursor).")
@json_option
@click.pass_context
def show_command(
    ctx: click.Context, entity_ref: str, limit: int, after: str | None, as_json: bool
) -> None:
    """Show an entity: the chunks that mention it and the memory records about it (every
    status), a page of each.

    \b
        lantern entity show 'person:Ada Lovelace'
    """
    view = open_lantern(ctx).entity_show(entity_ref, limit=limit, after=after)
    if as_json:
        emit_json(view.to_json())
        return
    found = view.entity
    click.echo(f"{found.kind}:{found.name}  ({found.id})")
    click.echo(f"chunks: {found.chunk_count}")
    for chunk in view.chunks:
        click.echo(f"  {chunk.chunk_id}  {chunk.uri}#{chunk.ordinal}  {chunk.excerpt}")
    click.echo(f"memories: {found.memory_count}")
    list_records(view.memories)
    if view.next_cursor is not None:
        note(f"more: --after {view.next_cursor}")


def _one_target(chunk: str | None, memory: str | None) -> None:
    """Refused in the command line's words before the store is opened."""
    if (chunk is None) == (memory is None):
        raise click.UsageError("give exactly one of --chunk ID and --memory ID")


def _render(changes: list[LinkChange], as_json: bool, done: str, unchanged: str) -> None:
    if as_json:
        emit_json([change.to_json() for change in changes])
        return
    for change in changes:
        what = f"{change.entity.kind}:{change.entity.name}"
        click.echo(f"{done if change.changed else unchanged} {what} ({change.entity.id})")


_ENTITIES = click.argument("entities", nargs=-1, required=True, metavar="KIND:NAME...")
_CHUNK = click.option("--chunk", metavar="ID", help="The chunk (chk_...).")
_MEMORY = click.option("--memory", metavar="ID", help="The memory record (mem_...).")


@entity.command("attach")
@_ENTITIES
@_CHUNK
@_MEMORY
@json_option
@click.pass_context
def attach_command(
    ctx: click.Context,
    entities: tuple[str, ...],
    chunk: str | None,
    memory: str | None,
    as_json: bool,
) -> None:
    """Link entities to a chunk or to a memory record (KIND:NAME, or an entity's id).

    \b
        lantern entity attach 'person:Ada Lovelace' project:lantern --memory mem_0123456789abcdef
    """
    _one_target(chunk, memory)
    changes = open_lantern(ctx).attach_entities(list(entities), chunk=chunk, memory=memory)
    _render(changes, as_json, "attached", "already attached")


@entity.command("detach")
@_ENTITIES
@_CHUNK
@_MEMORY
@json_option
@click.pass_context
def detach_command(
    ctx: click.Context,
    entities: tuple[str, ...],
    chunk: str | None,
    memory: str | None,
    as_json: bool,
) -> None:
    """Unlink entities from a chunk or a memory record; an entity nothing links any more is
    removed.

    \b
        lantern entity detach project:lantern --memory mem_0123456789abcdef
    """
    _one_target(chunk, memory)
    changes = open_lantern(ctx).detach_entities(list(entities), chunk=chunk, memory=memory)
    _render(changes, as_json, "detached", "was not attached:")


@entity.command("extract")
@json_option
@click.pass_context
def extract_command(ctx: click.Context, as_json: bool) -> None:
    """Find the entities of the chunks stored before extraction ran on them (an upgraded
    store, or rules of a newer Lantern). Incremental: it commits as it goes, and a run that
    is interrupted is taken up where it stopped by the next.

    \b
        lantern entity extract
    """
    with ProgressBar("Extracting") as bar:
        report = open_lantern(ctx).entities.extract(progress=bar.update if bar.enabled else None)
    if as_json:
        emit_json(report.to_json())
        return
    click.echo(
        f"read {counted(report.scanned, 'chunk')} ({report.skipped} already read): "
        f"{counted(report.links_added, 'link')}, {counted(report.entities_added, 'new entity')}, "
        f"in {report.seconds:.2f} s"
    )
