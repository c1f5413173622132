"""`lantern ingest`, `lantern search`, `lantern source ...` and `lantern chunk show`."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

import click

from lantern.cli.context import open_lantern
from lantern.cli.output import (
    FLOOR_HELP,
    MIN_SIMILARITY_HELP,
    MODE_HELP,
    MODEL_HELP,
    ProgressBar,
    counted,
    emit_json,
    json_option,
    note,
    origin_text,
    page_hint,
    plural,
    read_stdin,
    said_text,
    search_notes,
    value_text,
    when,
)
from lantern.cli.parsing import CommandGroup, FreeTextCommand
from lantern.errors import InvalidInput
from lantern.evidence.records import IngestSummary
from lantern.retrieval.modes import SEARCH_MODES

if TYPE_CHECKING:
    from lantern.evidence.records import Chunk, ChunkDetail, SearchHit, Source


@click.command("ingest")
@click.argument("paths", nargs=-1, required=True, metavar="PATH...")
@click.option(
    "--include",
    "include",
    multiple=True,
    metavar="GLOB",
    help="Only files matching this gitignore-style pattern (e.g. '*.md'). Repeatable.",
)
@click.option(
    "--exclude",
    "exclude",
    multiple=True,
    metavar="GLOB",
    help="Leave out files and directories matching this pattern. Repeatable.",
)
@click.option("--kind", help="Source kind for every file (default: detected per file).")
@click.option("--uri", help="The source URI, for standard input (PATH is -).")
@click.option("--metadata", metavar="JSON", help="A JSON object added to each source's metadata.")
@click.option(
    "--chunk-size",
    "target_size",
    type=int,
    help="Target chunk size in characters, 100-100000 (default 1000).",
)
@click.option(
    "--prune", is_flag=True, help="Remove sources under the directories whose files are gone."
)
@click.option(
    "--quiet",
    "-q",
    is_flag=True,
    help="Say nothing on stderr but errors: no progress bar, no list of what was skipped.",
)
@json_option
@click.pass_context
def ingest(
    ctx: click.Context,
    paths: tuple[str, ...],
    include: tuple[str, ...],
    exclude: tuple[str, ...],
    kind: str | None,
    uri: str | None,
    metadata: str | None,
    target_size: int | None,
    prune: bool,
    quiet: bool,
    as_json: bool,
) -> None:
    """Ingest files and directories, or standard input (-), as evidence.

    Directories are walked recursively; .git, node_modules, caches (__pycache__,
    .mypy_cache...), virtual environments, binary files, files a .gitignore excludes and
    symbolic links are skipped and reported. A file named here that cannot be taken (binary,
    not UTF-8, too large) makes the exit code 1, the other paths being ingested. Changed files
    are re-chunked, unchanged ones left as they are. Examples:

    \b
        lantern ingest ~/notes --include '*.md' --prune

    \b
        pytest 2>&1 | lantern ingest - --uri tool://pytest/run-42 --kind tool_output
    """
    # The default size lives in lantern.evidence.chunking, which is not imported for --help.
    sizing: dict[str, Any] = {} if target_size is None else {"target_size": target_size}
    if "-" in paths:
        if len(paths) > 1:
            raise click.UsageError("'-' (standard input) cannot be combined with other paths")
        if uri is None:
            raise click.UsageError("--uri is required when reading standard input (-)")
        if include or exclude or prune:
            raise click.UsageError("--include, --exclude and --prune apply to paths, not to -")
        text = _read_stdin()
        evidence = open_lantern(ctx, create=True).evidence
        started = time.perf_counter()
        result = evidence.ingest_text(uri, text, kind=kind, metadata=metadata, **sizing)
        summary = IngestSummary.from_results([result], seconds=time.perf_counter() - started)
    else:
        if uri is not None:
            raise click.UsageError("--uri names standard input; use it with - as the path")
        with ProgressBar("Ingesting", enabled=not quiet) as bar:
            summary = open_lantern(ctx, create=True).evidence.ingest_path(
                list(paths),
                include=include,
                exclude=exclude,
                kind=kind,
                metadata=metadata,
                prune=prune,
                progress=bar.update if bar.enabled else None,
                **sizing,
            )
    for skipped in summary.skipped_paths:
        if not quiet:
            note(f"skipped {skipped.path}: {skipped.reason}")
    if as_json:
        emit_json(summary.to_json())
    else:
        click.echo(
            f"added {summary.added}, updated {summary.updated}, unchanged {summary.unchanged}, "
            f"skipped {summary.skipped}, removed {summary.removed}; "
            f"{counted(summary.chunks, 'chunk')} written, "
            f"{counted(summary.bytes, 'byte')} in {summary.seconds:.2f} s"
        )
    refused = [skipped for skipped in summary.skipped_paths if skipped.named]
    if refused:
        # Not raised: the summary above is the output, and with --json the whole of stdout.
        more = f" (and {counted(len(refused) - 1, 'other file')})" if len(refused) > 1 else ""
        click.echo(
            f"Error: {refused[0].path} was not ingested: {refused[0].reason}{more}", err=True
        )
        ctx.exit(InvalidInput.exit_code)


@click.command("search", cls=FreeTextCommand)
@click.argument("query", nargs=-1, required=True)
@click.option("--kind", "kinds", multiple=True, help="Only sources of this kind. Repeatable.")
@click.option(
    "--source",
    "sources",
    multiple=True,
    metavar="ID_OR_URI_PREFIX",
    help="Only this source id, or sources whose URI starts with this. Repeatable.",
)
@click.option("--since", metavar="TIME", help="Chunks ingested at or after this time.")
@click.option("--until", metavar="TIME", help="Chunks ingested before this time.")
@click.option(
    "--said-since",
    metavar="TIME",
    help="Chunks whose words were said at or after this time (transcript turn times, a file's "
    "modification time).",
)
@click.option("--said-until", metavar="TIME", help="Chunks whose words were said before this time.")
@click.option("--mode", type=click.Choice(SEARCH_MODES), help=MODE_HELP)
@click.option("--model", metavar="NAME", help=MODEL_HELP)
@click.option("--min-similarity", type=float, metavar="COSINE", help=MIN_SIMILARITY_HELP)
@click.option("--floor/--no-floor", default=True, help=FLOOR_HELP)
@click.option(
    "--entity",
    "entities",
    multiple=True,
    metavar="KIND:NAME",
    help="Only chunks linked to this entity (KIND:NAME or ent_ id). Repeatable: any of them.",
)
@click.option("--limit", type=int, default=20, show_default=True, help="At most this many hits.")
@click.option(
    "--raw",
    is_flag=True,
    help="Pass the query to the engine as it is (FTS5/tsquery); its mode is keyword.",
)
@click.option("--explain", is_flag=True, help="Show the ranking each hit came from, and its rank.")
@click.option(
    "--ids",
    "ids_only",
    is_flag=True,
    help="Print only the hits' chunk ids, one a line: for a shell variable or a pipe.",
)
@json_option
@click.pass_context
def search(
    ctx: click.Context,
    query: tuple[str, ...],
    kinds: tuple[str, ...],
    sources: tuple[str, ...],
    since: str | None,
    until: str | None,
    said_since: str | None,
    said_until: str | None,
    mode: str | None,
    model: str | None,
    min_similarity: float | None,
    floor: bool,
    entities: tuple[str, ...],
    limit: int,
    raw: bool,
    explain: bool,
    ids_only: bool,
    as_json: bool,
) -> None:
    """Search what chunks say, best matches first.

    The default mode is hybrid: the chunks sharing the query's rarest words and the chunks
    nearest in meaning (embeddings, see lantern embed), fused; where the store has no vectors
    it is any. Ask in plain words. --mode keyword requires every word (an exact identifier);
    --mode semantic ranks by meaning alone. "quoted words" match as a phrase, word* as a
    prefix; everything else is literal text, so any input is safe. A chunk found only by
    meaning is shown when it is similar enough (the relevance floor: --min-similarity,
    --no-floor). TIME is unix seconds or ISO-8601. --since/--until bound when a chunk was
    ingested, --said-since/--said-until when its words were said: a chunk matches when its
    time range overlaps, never when its time is unknown. Examples:

    \b
        lantern search where did we decide to deploy from

    \b
        lantern search '"release checklist"' deploy* --mode keyword --kind markdown

    \b
        chunk=$(lantern search rollback --limit 1 --ids)
    """
    _one_output(ids_only=ids_only, as_json=as_json)
    hits = open_lantern(ctx).evidence.search(
        " ".join(query),
        kind=kinds,
        source=sources,
        since=since,
        until=until,
        limit=limit,
        raw=raw,
        mode=mode,
        model=model,
        entity=list(entities),
        said_since=said_since,
        said_until=said_until,
        min_similarity=min_similarity,
        floor=floor,
    )
    search_notes(hits.summary, "chunk", explain=explain)
    if as_json:
        emit_json([hit.to_json() for hit in hits])
    elif ids_only:
        for hit in hits:
            click.echo(hit.chunk_id)
    else:
        for hit in hits:
            _show_hit(hit, explain=explain)
    page_hint(len(hits), "chunk", more=hits.more, next_page=f"a --limit above {limit} shows them")


@click.group("source", cls=CommandGroup)
def source() -> None:
    """Sources: where evidence came from (files, transcripts, piped outputs).

    \b
    lantern source list --kind markdown
    """


@source.command("list")
@click.option("--kind", "kinds", multiple=True, help="Only sources of this kind. Repeatable.")
@click.option("--uri-prefix", metavar="PREFIX", help="Only sources whose URI starts with this.")
@click.option("--limit", type=int, default=100, show_default=True, help="At most this many.")
@click.option("--offset", type=int, default=0, show_default=True, help="Skip this many first.")
@click.option(
    "--said-since",
    metavar="TIME",
    help="Only sources with a chunk whose words were said at or after this time.",
)
@click.option(
    "--said-until",
    metavar="TIME",
    help="Only sources with a chunk whose words were said before this time.",
)
@click.option(
    "--ids",
    "ids_only",
    is_flag=True,
    help="Print only the sources' ids, one a line: for a shell variable or a pipe.",
)
@json_option
@click.pass_context
def list_command(
    ctx: click.Context,
    kinds: tuple[str, ...],
    uri_prefix: str | None,
    limit: int,
    offset: int,
    said_since: str | None,
    said_until: str | None,
    ids_only: bool,
    as_json: bool,
) -> None:
    """List sources in URI order, with their chunk counts.

    \b
    lantern source list --kind markdown --uri-prefix file://$HOME/notes/
    """
    _one_output(ids_only=ids_only, as_json=as_json)
    found = open_lantern(ctx).evidence.list_sources(
        kind=kinds,
        uri_prefix=uri_prefix,
        limit=limit,
        offset=offset,
        said_since=said_since,
        said_until=said_until,
    )
    if as_json:
        emit_json([item.to_json() for item in found])
    elif ids_only:
        for item in found:
            click.echo(item.id)
    else:
        for item in found:
            chunks = plural(item.chunk_count, "chunk")
            click.echo(f"{item.id}  {item.kind:<11}  {item.chunk_count:>6} {chunks:<6}  {item.uri}")
    following = f"--offset {offset + len(found)} shows the next page"
    page_hint(len(found), "source", more=found.more, next_page=following)


@source.command("show")
@click.argument("ref", metavar="ID|URI")
@click.option("--no-chunks", is_flag=True, help="Leave the chunks out: the source alone.")
@click.option(
    "--limit",
    type=int,
    metavar="N",
    help="Show one page of chunks: at most N (1-1000), and at most 1,000,000 characters of "
    "text. Default: every chunk.",
)
@click.option(
    "--after",
    type=int,
    metavar="ORDINAL",
    help="Continue after the chunk of this ordinal (a page's next_cursor).",
)
@click.option(
    "--said-since",
    metavar="TIME",
    help="Only the chunks whose words were said at or after this time.",
)
@click.option(
    "--said-until", metavar="TIME", help="Only the chunks whose words were said before this time."
)
@json_option
@click.pass_context
def show_command(
    ctx: click.Context,
    ref: str,
    no_chunks: bool,
    limit: int | None,
    after: int | None,
    said_since: str | None,
    said_until: str | None,
    as_json: bool,
) -> None:
    """Show a source's metadata, its chunks, and the memory records citing them.

    \b
    lantern source show file://$HOME/notes/todo.md --limit 100
    """
    lantern = open_lantern(ctx)
    found = lantern.evidence.get_source(
        ref,
        with_chunks=not no_chunks,
        limit=limit,
        after=after,
        said_since=said_since,
        said_until=said_until,
    )
    cited_by = lantern.cited_by(f"source:{found.id}", through_chunks=True)
    if as_json:
        emit_json(found.shown_json(cited_by))
        return
    _show_source(found)
    click.echo(f"{'cited_by:':<14}{', '.join(cited_by) or '-'}")
    for chunk in found.chunks or ():
        offsets = f"[{_offset(chunk.start_offset)}:{_offset(chunk.end_offset)}]"
        click.echo(f"  #{chunk.ordinal:<4} {chunk.id}  {offsets:<15} {_preview(chunk.text)}")
        _show_links(chunk, indent="        ")
    if found.next_cursor is not None:
        note(f"more chunks follow: --after {found.next_cursor}")


@source.command("remove")
@click.argument("ref", metavar="ID|URI")
@json_option
@click.pass_context
def remove_command(ctx: click.Context, ref: str, as_json: bool) -> None:
    """Remove a source with its chunks (memory records citing them keep their references).

    \b
    lantern source remove src_0123456789abcdef
    """
    removed = open_lantern(ctx).evidence.remove_source(ref)
    if as_json:
        emit_json(removed.to_json())
        return
    chunks = counted(removed.chunk_count, "chunk")
    click.echo(f"removed {removed.id} ({removed.uri}) and its {chunks}")


@click.group("chunk", cls=CommandGroup)
def chunk() -> None:
    """Chunks: the searchable slices of a source's text.

    \b
    lantern chunk show chk_0123456789abcdef
    """


@chunk.command("show")
@click.argument("chunk_id", metavar="ID")
@click.option(
    "--context",
    type=int,
    default=0,
    show_default=True,
    metavar="N",
    help="Also show up to N neighbouring chunks on each side.",
)
@json_option
@click.pass_context
def chunk_show_command(ctx: click.Context, chunk_id: str, context: int, as_json: bool) -> None:
    """Show a chunk's text, offsets and source, and the memory records citing it.

    \b
    lantern chunk show chk_0123456789abcdef --context 1
    """
    lantern = open_lantern(ctx)
    detail = lantern.evidence.get_chunk(chunk_id, context=context)
    cited_by = lantern.cited_by(f"chunk:{detail.chunk.id}")
    if as_json:
        emit_json(detail.shown_json(cited_by))
        return
    _show_chunk(detail)
    click.echo(f"cited by: {', '.join(cited_by) or '-'}")


def _read_stdin() -> str:
    # The limit lives in lantern.evidence.files, which is not imported for --help.
    from lantern.evidence.files import MAX_FILE_BYTES

    return read_stdin(MAX_FILE_BYTES, "evidence", encoding="utf-8-sig")


def _one_output(*, ids_only: bool, as_json: bool) -> None:
    """Refuse `--ids` with `--json`: a script reading either would get what it did not ask for."""
    if ids_only and as_json:
        raise click.UsageError("--ids and --json print different things: give one of them")


def _offset(value: int | None) -> str:
    return "?" if value is None else str(value)


def _preview(text: str, width: int = 60) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= width else flat[: width - 1] + "…"


def _show_hit(hit: SearchHit, *, explain: bool) -> None:
    offsets = f"[{_offset(hit.start_offset)}:{_offset(hit.end_offset)}]"
    click.echo(f"{hit.chunk_id}  {hit.score:.4g}  {hit.kind}  {hit.uri} #{hit.ordinal} {offsets}")
    if hit.said_from is not None:
        click.echo(f"    said {said_text(hit.said_from, hit.said_until)}")
    if explain:
        click.echo("    " + origin_text(hit))
    click.echo(f"    {' '.join(hit.snippet.split())}")


def _show_source(item: Source) -> None:
    fields = [
        ("id", item.id),
        ("uri", item.uri),
        ("kind", item.kind),
        ("title", item.title or "-"),
        ("content_hash", item.content_hash),
        ("created_at", when(item.created_at)),
        ("updated_at", when(item.updated_at)),
        ("chunk_count", str(item.chunk_count)),
    ]
    for name, value in fields:
        click.echo(f"{name + ':':<14}{value}")
    click.echo("metadata:")
    for key, value in item.metadata.items():
        click.echo(f"  {key}: {value_text(value)}")


def _show_links(item: Chunk, *, indent: str) -> None:
    if item.entities:
        names = ", ".join(f"{entity.name} ({entity.kind})" for entity in item.entities)
        click.echo(f"{indent}entities: {names}")
    for embedding in item.embeddings:
        click.echo(f"{indent}embedding: {embedding.model}, {counted(embedding.dim, 'dimension')}")


def _show_chunk(detail: ChunkDetail) -> None:
    item = detail.chunk
    fields = [
        ("id", item.id),
        ("source", f"{detail.source.id} ({detail.source.kind}) {detail.source.uri}"),
        ("ordinal", str(item.ordinal)),
        ("offsets", f"{_offset(item.start_offset)}-{_offset(item.end_offset)}"),
        ("created_at", when(item.created_at)),
        ("said", said_text(item.said_from, item.said_until)),
    ]
    fields += [(f"meta.{key}", value_text(value)) for key, value in item.metadata.items()]
    for name, value in fields:
        # Aligned at 12 columns; a longer name keeps one space before its value.
        click.echo(f"{name + ':':<11} {value}")
    _show_links(item, indent="")
    for neighbour in detail.before:
        click.echo(f"--- #{neighbour.ordinal} {neighbour.id} (before)")
        click.echo(neighbour.text)
    click.echo(f"--- #{item.ordinal} {item.id}")
    click.echo(item.text)
    for neighbour in detail.after:
        click.echo(f"--- #{neighbour.ordinal} {neighbour.id} (after)")
        click.echo(neighbour.text)
