"""`lantern memory ...`: the lifecycle, retrieval and visibility of memory records.

Each command parses its arguments, makes one call to `lt.memory` and renders the result; every
rule (validation, state changes, ordering) lives in `lantern.memory.repository`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeVar

import click

from lantern.cli.context import open_lantern
from lantern.cli.output import (
    FLOOR_HELP,
    MIN_SIMILARITY_HELP,
    MODE_HELP,
    MODEL_HELP,
    counted,
    emit_json,
    json_option,
    json_text,
    list_records,
    note,
    origin_text,
    page_hint,
    plural,
    read_stdin,
    ref_text,
    search_notes,
    show_record,
    when,
)
from lantern.cli.parsing import CommandGroup, FreeTextCommand
from lantern.errors import InvalidInput
from lantern.memory.filterspec import BY_NAME, CITING, Filter, offered
from lantern.memory.records import HistoryEntry, MemoryMatch, MemoryRecord, Page, order_keys
from lantern.retrieval.modes import SEARCH_MODES
from lantern.validation import (
    HISTORY_EVENTS,
    MAX_CONTENT_CHARS,
    MEMORY_KINDS,
    SEARCH_ORDERS,
)

F = TypeVar("F", bound=Callable[..., Any])


@click.group(cls=CommandGroup)
def memory() -> None:
    """Memory records: explicit, durable state the agent decided to keep.

    \b
    lantern memory list --scope user:raphael
    """


def _options(*decorators: Callable[[F], F]) -> Callable[[F], F]:
    def apply(func: F) -> F:
        for decorator in reversed(decorators):
            func = decorator(func)
        return func

    return apply


# The vocabularies are choices of the command line: a word outside them is a usage error (exit 2),
# named before anything runs. The repository checks them again for the other callers.
_KIND = click.Choice(MEMORY_KINDS)

_allow_dangling = click.option(
    "--allow-dangling",
    is_flag=True,
    help="Store source: and chunk: references even when they name nothing in this store.",
)
_expiry_options = _options(
    click.option("--expires-at", metavar="TIME", help="Unix seconds or ISO-8601 (naive is UTC)."),
    click.option("--no-expiry", "clear_expiry", is_flag=True, help="Remove the expiry time."),
)
_ENTITY_HELP = (
    "An entity the record is about, KIND:NAME (person:Ada Lovelace, project:lantern). Repeatable."
)
_REF_HELP = (
    "Evidence reference, TYPE:ID (chunk:chk_..., source:src_..., session:...) "
    "or a JSON object with a 'type'. Repeatable."
)


def _filter_option(spec: Filter, **overrides: Any) -> Callable[[F], F]:
    """The Click option of a memory filter, from its entry in the table (`overrides`: the
    command's own default). Its help is the table's, with "Repeatable." after it."""
    settings: dict[str, Any] = {"help": spec.help + (" Repeatable." if spec.repeatable else "")}
    value = spec.value
    if value.form == "flag":
        settings["is_flag"] = True
    elif value.form == "choice":
        settings["type"] = click.Choice(value.choices)
    elif value.form in ("int", "float"):
        settings["type"] = int if value.form == "int" else float
    if value.metavar is not None:
        settings["metavar"] = value.metavar
    if spec.repeatable:
        settings["multiple"] = True
    default = overrides.get("default", spec.default)
    if value.form != "flag" and default is not None:
        settings.update(default=default, show_default=True)
    return click.option(spec.cli_option, spec.name, **settings)


# The filters `list` and `search` share, in the order their help shows them (the table's).
_filter_options = _options(
    *(_filter_option(spec) for spec in offered("cli")),
    click.option("--offset", type=int, default=0, show_default=True, help="Skip this many first."),
    click.option("--after", metavar="CURSOR", help="Continue after a page (its next_cursor)."),
    click.option(
        "--with-cursor",
        is_flag=True,
        help='With --json, print {"records": [...], "next_cursor": ...} instead of the array; '
        "without, print the next cursor on stderr.",
    ),
    click.option("--explain", is_flag=True, help="Show the keys each record was ordered by."),
)


def _filters(params: dict[str, Any]) -> dict[str, Any]:
    """The API's filter arguments from the shared options."""
    given = {spec.name: params[spec.name] for spec in offered("cli")}
    return {**given, "offset": params["offset"], "after": params["after"]}


@memory.command("add", cls=FreeTextCommand)
@click.argument("content")
@click.option("--kind", type=_KIND, required=True, help="What the record is.")
@click.option("--scope", default="global", show_default=True, help="Namespace, e.g. user:raphael.")
@click.option("--priority", type=int, default=50, show_default=True, help="0-100.")
@click.option("--urgency", type=int, default=0, show_default=True, help="0-100.")
@click.option("--confidence", type=float, default=1.0, show_default=True, help="0.0-1.0.")
@click.option("--expires-at", metavar="TIME", help="Unix seconds or ISO-8601 (naive is UTC).")
@click.option("--supersedes", "supersedes_id", metavar="ID", help="Record this one replaces.")
@click.option("--source-ref", "source_refs", multiple=True, metavar="REF", help=_REF_HELP)
@click.option("--entity", "entities", multiple=True, metavar="KIND:NAME", help=_ENTITY_HELP)
@_allow_dangling
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
    entities: tuple[str, ...],
    allow_dangling: bool,
    as_json: bool,
) -> None:
    """Add a memory record; CONTENT is the text, or - to read it from stdin.

    Prints the record's id (the whole record with --json). Adding a record with the same
    scope, kind and content as a stored one changes nothing and returns the stored one.

    \b
        lantern memory add --kind preference --scope user:raphael --priority 90 \\
            "Raphael prefers separate branches on his repos."
    """
    if content == "-":
        content = _read_stdin()
    lantern = open_lantern(ctx, create=True)
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
        allow_dangling=allow_dangling,
        entities=list(entities),
    )
    if not created:
        note(
            f"an identical memory is already stored as {record.id} (status {record.status}); "
            + ("its entities were added to it" if entities else "nothing was changed")
        )
    if as_json:
        emit_json(record.to_json())
    else:
        click.echo(record.id)


@memory.command("update")
@click.argument("record_id", metavar="ID")
@click.option("--content", metavar="TEXT", help="New content, or - to read it from stdin.")
@click.option("--priority", type=int, help="0-100.")
@click.option("--urgency", type=int, help="0-100.")
@click.option("--confidence", type=float, help="0.0-1.0.")
@_expiry_options
@click.option("--add-ref", "add_refs", multiple=True, metavar="REF", help=_REF_HELP)
@click.option(
    "--remove-ref",
    "remove_refs",
    multiple=True,
    metavar="REF",
    help="A reference to remove (TYPE:ID removes every reference with that type and id).",
)
@_allow_dangling
@json_option
@click.pass_context
def update_command(
    ctx: click.Context,
    record_id: str,
    content: str | None,
    priority: int | None,
    urgency: int | None,
    confidence: float | None,
    expires_at: str | None,
    clear_expiry: bool,
    add_refs: tuple[str, ...],
    remove_refs: tuple[str, ...],
    allow_dangling: bool,
    as_json: bool,
) -> None:
    """Revise a record in place: same id, updated_at bumped, the change kept in its history.

    Scope and kind never change in place; that is `memory supersede`.

    \b
        lantern memory update mem_0123456789abcdef --priority 80 --add-ref session:abc
    """
    if content == "-":
        content = _read_stdin()
    record = open_lantern(ctx).memory.update(
        record_id,
        content=content,
        priority=priority,
        urgency=urgency,
        confidence=confidence,
        expires_at=expires_at,
        clear_expiry=clear_expiry,
        add_refs=list(add_refs),
        remove_refs=list(remove_refs),
        allow_dangling=allow_dangling,
    )
    _emit_record(record, as_json)


@memory.command("supersede")
@click.argument("old_id", metavar="OLD_ID")
@click.option("--content", metavar="TEXT", help="The new content, or - to read it from stdin.")
@click.option("--kind", type=_KIND, help="What the new record is.")
@click.option("--scope", help="Namespace, e.g. user:raphael.")
@click.option("--priority", type=int, help="0-100.")
@click.option("--urgency", type=int, help="0-100.")
@click.option("--confidence", type=float, help="0.0-1.0.")
@_expiry_options
@click.option(
    "--source-ref",
    "source_refs",
    multiple=True,
    metavar="REF",
    help=_REF_HELP + " Given, they replace the old record's references.",
)
@click.option(
    "--entity",
    "entities",
    multiple=True,
    metavar="KIND:NAME",
    help=_ENTITY_HELP + " Given, they replace the old record's entities.",
)
@_allow_dangling
@json_option
@click.pass_context
def supersede_command(
    ctx: click.Context,
    old_id: str,
    content: str | None,
    kind: str | None,
    scope: str | None,
    priority: int | None,
    urgency: int | None,
    confidence: float | None,
    expires_at: str | None,
    clear_expiry: bool,
    source_refs: tuple[str, ...],
    entities: tuple[str, ...],
    allow_dangling: bool,
    as_json: bool,
) -> None:
    """Replace a record: the new one takes every field not given from the old one, and the
    old one becomes superseded, in one transaction. Prints the new id.

    \b
        lantern memory supersede mem_0123456789abcdef --content "The build uses just."
    """
    if content == "-":
        content = _read_stdin()
    record = open_lantern(ctx).memory.supersede(
        old_id,
        content=content,
        kind=kind,
        scope=scope,
        priority=priority,
        urgency=urgency,
        confidence=confidence,
        expires_at=expires_at,
        clear_expiry=clear_expiry,
        source_refs=list(source_refs) if source_refs else None,
        allow_dangling=allow_dangling,
        entities=list(entities) if entities else None,
    )
    if as_json:
        emit_json(record.to_json())
    else:
        click.echo(record.id)


@memory.command("list")
@_filter_options
@click.option("--limit", type=int, default=50, show_default=True, help="At most this many.")
@json_option
@click.pass_context
def list_command(ctx: click.Context, /, limit: int, as_json: bool, **params: Any) -> None:
    """List memory records: active first, then higher priority, higher urgency, newer
    updated_at, and id.

    \b
        lantern memory list --scope 'project:lantern/*' --min-priority 70 --json
    """
    records = open_lantern(ctx).memory.list(limit=limit, **_filters(params))
    explain, with_cursor = params["explain"], params["with_cursor"]
    if as_json:
        rendered = [_record_json(record, explain) for record in records]
        emit_json(_paged(rendered, records, with_cursor))
    else:
        for record in records:
            if explain:
                click.echo(_keys_text(order_keys(record)) + "  ", nl=False)
            list_records([record])
    _cursor_note(records, with_cursor, as_json=as_json, offset=params["offset"])


@memory.command("search", cls=FreeTextCommand)
@click.argument("query")
@click.option("--mode", type=click.Choice(SEARCH_MODES), help=MODE_HELP)
@click.option("--model", metavar="NAME", help=MODEL_HELP)
@click.option("--min-similarity", type=float, metavar="COSINE", help=MIN_SIMILARITY_HELP)
@click.option("--floor/--no-floor", default=True, help=FLOOR_HELP)
@click.option(
    "--order",
    type=click.Choice(SEARCH_ORDERS),
    default="relevance",
    show_default=True,
    help="relevance: best score first; policy: the list order among the matches.",
)
@_filter_options
@click.option("--limit", type=int, default=20, show_default=True, help="At most this many.")
@json_option
@click.pass_context
def search_command(
    ctx: click.Context,
    /,
    query: str,
    mode: str | None,
    model: str | None,
    min_similarity: float | None,
    floor: bool,
    order: str,
    limit: int,
    as_json: bool,
    **params: Any,
) -> None:
    """Search memory content; each result shows its score (higher is better).

    The default mode is hybrid: the records sharing the query's rarest words and the records
    nearest in meaning (embeddings, see lantern embed), fused; where the store has no vectors
    it is any. Ask in plain words. --mode keyword requires every word; --mode semantic ranks
    by meaning alone. "quoted words" must appear together; word* matches a prefix; nothing else
    is an operator. Both orders page with --after. A record found only by meaning is shown
    when it is similar enough (the relevance floor: --min-similarity, --no-floor).

    \b
        lantern memory search "where does the user live" --scope 'user:*' --json
    """
    matches = open_lantern(ctx).memory.search(
        query,
        mode=mode,
        model=model,
        order=order,
        limit=limit,
        min_similarity=min_similarity,
        floor=floor,
        **_filters(params),
    )
    explain, with_cursor = params["explain"], params["with_cursor"]
    search_notes(matches.summary, "record", explain=explain)
    if as_json:
        by_relevance = order == "relevance"
        rendered = [m.to_json(explain=explain, by_relevance=by_relevance) for m in matches]
        emit_json(_paged(rendered, matches, with_cursor))
    else:
        for match in matches:
            _show_match(match, explain=explain, by_relevance=order == "relevance")
    _cursor_note(matches, with_cursor, as_json=as_json, offset=params["offset"])


@memory.command("similar")
@click.argument("record_id", metavar="ID")
@click.option("--limit", type=int, default=10, show_default=True, help="At most this many.")
@click.option("--model", metavar="NAME", help=MODEL_HELP)
@json_option
@click.pass_context
def similar_command(
    ctx: click.Context, record_id: str, limit: int, model: str | None, as_json: bool
) -> None:
    """List the active records nearest in meaning to a record, itself left out, nearest first,
    with their cosine similarity: candidates for duplicates, which you decide about.

    Needs vectors (lantern embed); the record's own vector is used, or its content embedded
    when it has none.

    \b
        lantern memory similar mem_0123456789abcdef --limit 5
    """
    matches = open_lantern(ctx).memory.similar(record_id, limit=limit, model=model)
    search_notes(matches.summary, "record", explain=False)
    if as_json:
        emit_json([match.to_json() for match in matches])
        return
    for match in matches:
        click.echo(f"{match.score:>10.4f}  ", nl=False)
        list_records([match.record])


@memory.command("show")
@click.argument("record_id", metavar="ID")
@click.option(
    "--chain",
    "with_chain",
    is_flag=True,
    help='With --json, add "replaces" and "replaced_by": the supersede chain, nearest first.',
)
@json_option
@click.pass_context
def show_command(ctx: click.Context, record_id: str, with_chain: bool, as_json: bool) -> None:
    """Show one memory record, with what it replaced and what replaced it.

    \b
    lantern memory show mem_0123456789abcdef
    """
    lantern = open_lantern(ctx)
    if as_json and not with_chain:
        record = lantern.memory.get(record_id)
        entities = lantern.memory.entities(record.id)
        emit_json({**record.to_json(), "entities": [entity.to_json() for entity in entities]})
        return
    chain = lantern.memory.chain(record_id)
    entities = lantern.memory.entities(chain.record.id)
    if as_json:
        emit_json({**chain.to_json(), "entities": [entity.to_json() for entity in entities]})
        return
    show_record(chain.record)
    click.echo(f"{'replaces:':<15}{' <- '.join(chain.replaces) or '-'}")
    click.echo(f"{'replaced_by:':<15}{' -> '.join(chain.replaced_by) or '-'}")
    named = ", ".join(f"{entity.kind}:{entity.name}" for entity in entities)
    click.echo(f"{'entities:':<15}{named or '-'}")


@memory.command("history")
@click.argument("record_id", metavar="ID")
@json_option
@click.pass_context
def history_command(ctx: click.Context, record_id: str, as_json: bool) -> None:
    """Show every recorded change to a record, oldest first.

    \b
    lantern memory history mem_0123456789abcdef
    """
    entries = open_lantern(ctx).memory.history(record_id)
    if as_json:
        emit_json([entry.to_json() for entry in entries])
        return
    if not entries:
        note(f"no history recorded for {record_id} (it was stored before history existed)")
    for entry in entries:
        click.echo(f"{when(entry.at)}  {entry.event:<10}  {_changes_text(entry)}")


@memory.command("changes")
@click.option(
    "--scope",
    "scopes",
    multiple=True,
    help="Only changes to records of this scope pattern (as for memory list --scope: user:ada, "
    "user:ada*, user:*). Repeatable.",
)
@click.option(
    "--event",
    "events",
    multiple=True,
    help=f"Only these events: {', '.join(HISTORY_EVENTS)}. Repeatable.",
)
@click.option("--since", metavar="TIME", help="Changes at or after TIME.")
@click.option("--before", metavar="TIME", help="Changes before TIME.")
@click.option("--limit", type=int, default=50, show_default=True, help="At most this many.")
@click.option("--after", metavar="CURSOR", help="Continue after a page (its next_cursor).")
@click.option(
    "--with-cursor",
    is_flag=True,
    help='With --json, print {"entries": [...], "next_cursor": ...} instead of the array; '
    "without, print the next cursor on stderr.",
)
@json_option
@click.pass_context
def changes_command(
    ctx: click.Context,
    scopes: tuple[str, ...],
    events: tuple[str, ...],
    since: str | None,
    before: str | None,
    limit: int,
    after: str | None,
    with_cursor: bool,
    as_json: bool,
) -> None:
    """Show the latest changes to every record, newest first: what `memory history` shows of
    one record, across the store.

    \b
        lantern memory changes --since 2026-12-01 --event superseded
    """
    entries = open_lantern(ctx).memory.changes(
        scope=scopes, event=events, since=since, before=before, limit=limit, after=after
    )
    if as_json:
        rendered = [entry.to_json() for entry in entries]
        if with_cursor:
            emit_json({"entries": rendered, "next_cursor": entries.next_cursor})
        else:
            emit_json(rendered)
        return
    for entry in entries:
        click.echo(
            f"{when(entry.at)}  {entry.record_id}  {entry.event:<10}  {_changes_text(entry)}"
        )
    _cursor_note(entries, with_cursor, as_json=False)


@memory.command("stats")
@click.option(
    "--scope",
    "scopes",
    multiple=True,
    help="Count only records of this scope pattern (as for memory list --scope: user:ada, "
    "user:ada*, user:*). Repeatable.",
)
@click.option(
    "--top", type=int, default=10, show_default=True, help="List this many largest scopes."
)
@click.option(
    "--days",
    type=int,
    default=30,
    show_default=True,
    help="Count the changes of each of this many last days (UTC), today included.",
)
@json_option
@click.pass_context
def stats_command(
    ctx: click.Context, scopes: tuple[str, ...], top: int, days: int, as_json: bool
) -> None:
    """Count the records by kind, status and scope, and the changes of each recent day.

    lantern memory stats --top 20 --json
    """
    stats = open_lantern(ctx).memory.stats(scope=scopes, top=top, days=days)
    if as_json:
        emit_json(stats.to_json())
        return
    click.echo(f"records: {stats.total} in {counted(stats.scope_count, 'scope')}")
    click.echo("by status: " + _counts_text(stats.by_status))
    click.echo("by kind: " + _counts_text(stats.by_kind))
    click.echo(f"expired but active: {stats.expired_active}")
    for scope, count in stats.top_scopes:
        click.echo(f"  {count:>8}  {scope}")
    for day in stats.changes_per_day:
        total = sum(day.counts.values())
        if total:
            changed = _counts_text({k: v for k, v in day.counts.items() if v})
            click.echo(f"{day.to_json()['day']}  {total:>6} {plural(total, 'change')}: {changed}")


@memory.command("archive")
@click.argument("record_id", metavar="ID")
@json_option
@click.pass_context
def archive_command(ctx: click.Context, record_id: str, as_json: bool) -> None:
    """Archive a memory record: it stays stored, and leaves the default listing.

    \b
    lantern memory archive mem_0123456789abcdef
    """
    _emit_record(open_lantern(ctx).memory.archive(record_id), as_json)


@memory.command("restore")
@click.argument("record_id", metavar="ID")
@json_option
@click.pass_context
def restore_command(ctx: click.Context, record_id: str, as_json: bool) -> None:
    """Make an archived record active again.

    \b
    lantern memory restore mem_0123456789abcdef
    """
    _emit_record(open_lantern(ctx).memory.restore(record_id), as_json)


@memory.command("expire")
@click.option("--dry-run", is_flag=True, help="Only list what would be archived.")
@json_option
@click.pass_context
def expire_command(ctx: click.Context, dry_run: bool, as_json: bool) -> None:
    """Archive the active records whose expires_at has passed, and list them.

    Lantern never does this by itself; run it when your agent decides to.

    \b
        lantern memory expire --dry-run
    """
    records = open_lantern(ctx).memory.expire(dry_run=dry_run)
    if as_json:
        emit_json([record.to_json() for record in records])
        return
    list_records(records)
    verb = "would archive" if dry_run else "archived"
    note(f"{verb} {counted(len(records), 'expired record')}")


@memory.command("forget")
@click.argument("record_id", metavar="ID")
@click.option("--yes", is_flag=True, help="Confirm: the record is deleted for good.")
@json_option
@click.pass_context
def forget_command(ctx: click.Context, record_id: str, yes: bool, as_json: bool) -> None:
    """Delete a record for good, content and earlier history included (a secret stored by
    mistake). Only a history entry without content remains.

    On SQLite the content also leaves the file: deleted bytes are zeroed, the search index is
    rewritten and the write-ahead log truncated.

    \b
        lantern memory forget mem_0123456789abcdef --yes
    """
    if not yes:
        raise InvalidInput(f"forget deletes {record_id} for good; add --yes to confirm")
    report = open_lantern(ctx).memory.forget(record_id)
    if report.wal_checkpointed is False:
        note(
            "another connection is using the store, so the write-ahead log was not truncated; "
            "the old pages stay in it until the next full checkpoint"
        )
    if as_json:
        emit_json(report.to_json())
    else:
        click.echo(f"forgot {report.id}")


@memory.command("cites")
@click.argument("ref", metavar="REF")
@_filter_option(BY_NAME["through_chunks"])
@_filter_option(BY_NAME["status"], default=CITING["status"])
@click.option("--limit", type=int, default=50, show_default=True, help="At most this many.")
@click.option("--after", metavar="CURSOR", help="Continue after a page (its next_cursor).")
@click.option(
    "--with-cursor",
    is_flag=True,
    help='With --json, print {"records": [...], "next_cursor": ...} instead of the array.',
)
@json_option
@click.pass_context
def cites_command(
    ctx: click.Context,
    ref: str,
    through_chunks: bool,
    status: str,
    limit: int,
    after: str | None,
    with_cursor: bool,
    as_json: bool,
) -> None:
    """List the memory records that cite a source, chunk or session (REF is TYPE:ID), in
    list order, expired ones included.

    \b
        lantern memory cites chunk:chk_0123456789abcdef
    """
    records = open_lantern(ctx).memory.citing(
        ref, through_chunks=through_chunks, status=status, limit=limit, after=after
    )
    if as_json:
        emit_json(_paged([r.to_json() for r in records], records, with_cursor))
    else:
        list_records(records)
    _cursor_note(records, with_cursor, as_json=as_json)


@memory.command("check-refs")
@json_option
@click.pass_context
def check_refs_command(ctx: click.Context, as_json: bool) -> None:
    """List source: and chunk: references that no longer resolve (the source was removed or
    re-ingested with other chunks).

    \b
        lantern memory check-refs --json
    """
    dangling = open_lantern(ctx).memory.check_refs()
    if as_json:
        emit_json([item.to_json() for item in dangling])
        return
    for item in dangling:
        click.echo(f"{item.record_id}  {item.type}:{item.id}")
    note(counted(len(dangling), "dangling reference"))


# --- rendering ---------------------------------------------------------------------------------


def _emit_record(record: MemoryRecord, as_json: bool) -> None:
    if as_json:
        emit_json(record.to_json())
    else:
        show_record(record)


def _record_json(record: MemoryRecord, explain: bool) -> dict[str, Any]:
    rendered = record.to_json()
    if explain:
        rendered["explain"] = order_keys(record)
    return rendered


def _paged(rendered: list[dict[str, Any]], page: Page, with_cursor: bool) -> Any:
    if not with_cursor:
        return rendered
    paged: dict[str, Any] = {"records": rendered, "next_cursor": page.next_cursor}
    if page.summary is not None:
        paged["search"] = page.summary.to_json()
    return paged


def _cursor_note(page: Page, with_cursor: bool, *, as_json: bool, offset: int = 0) -> None:
    """With --with-cursor (and without --json, whose output holds it) the next cursor, always;
    else, at a terminal, that nothing matched or that more did and how to see them."""
    if with_cursor:
        if as_json:
            return
        if page.next_cursor is None:
            note("this is the last page")
        else:
            note(f"more after this page: --after {page.next_cursor}")
        return
    following = f"--offset {offset + len(page)}" if offset else f"--after {page.next_cursor}"
    following += " shows the next page"
    page_hint(len(page), "record", more=page.next_cursor is not None, next_page=following)


def _keys_text(keys: dict[str, Any]) -> str:
    shown = [
        f"{name}={value:.6g}" if isinstance(value, float) else f"{name}={value}"
        for name, value in keys.items()
        if name != "id"
    ]
    return "[" + " ".join(shown) + "]"


def _show_match(match: MemoryMatch, *, explain: bool, by_relevance: bool) -> None:
    prefix = f"{match.score:>10.4g}  "
    if explain:
        relevance = match.score if by_relevance else None
        prefix += origin_text(match) + " "
        prefix += _keys_text(order_keys(match.record, relevance=relevance)) + "  "
    click.echo(prefix, nl=False)
    list_records([match.record])


def _value_text(value: Any) -> str:
    """A field's value in a history line: text quoted and cut at 60 characters, `null`, a
    number, a list of them in brackets (`entities=['person:Ada']`), a source reference as
    `TYPE:ID` (or its JSON object when it holds more)."""
    if isinstance(value, str):
        shown = " ".join(value.split())
        return repr(shown if len(shown) <= 60 else shown[:57] + "...")
    if isinstance(value, list | tuple):
        return "[" + ", ".join(_value_text(item) for item in value) + "]"
    if isinstance(value, Mapping):
        return ref_text(value)
    if isinstance(value, bool) or value is None:
        return json_text(value)
    return str(value)


def _changes_text(entry: HistoryEntry) -> str:
    before = entry.changes.get("before") or {}
    after = entry.changes.get("after") or {}
    if entry.event == "created":
        return " ".join(f"{name}={_value_text(value)}" for name, value in after.items())
    if entry.event == "forgotten":
        kept = " ".join(f"{name}={_value_text(value)}" for name, value in before.items())
        return f"{kept}; its content and earlier history were removed"
    parts = [
        f"{name}: {_value_text(before.get(name))} -> {_value_text(after.get(name))}"
        for name in _names(before, after)
    ]
    successor = entry.changes.get("superseded_by")
    if successor:
        parts.append(f"by {successor}")
    return "; ".join(parts)


def _counts_text(counts: Any) -> str:
    return ", ".join(f"{name} {count}" for name, count in counts.items())


def _names(*mappings: Any) -> Sequence[str]:
    names: list[str] = []
    for mapping in mappings:
        names += [name for name in mapping if name not in names]
    return names


def _read_stdin() -> str:
    # Four bytes per character at most: past that, the content is surely over its limit.
    return read_stdin(4 * MAX_CONTENT_CHARS, f"memory content ({MAX_CONTENT_CHARS} characters)")
