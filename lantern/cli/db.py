"""`lantern db ...`: where the store is, upgrading it, checking it, and copying it."""

from __future__ import annotations

from typing import Any

import click

from lantern.cli.context import open_lantern
from lantern.cli.output import counted, emit_json, json_option, note
from lantern.cli.parsing import CommandGroup
from lantern.errors import NotAStore


@click.group(cls=CommandGroup)
def db() -> None:
    """The store itself: status, schema upgrades, health checks and backups.

    \b
    lantern db status
    """


@db.command("status")
@json_option
@click.pass_context
def status_command(ctx: click.Context, as_json: bool) -> None:
    """Show where the store is and whether its schema needs an upgrade.

    \b
    lantern db status --json
    """
    status = open_lantern(ctx, require_current=False).status()
    if as_json:
        emit_json(status.to_json())
        return
    for key, value in status.to_json().items():
        if key == "embeddings" and isinstance(value, dict):
            _show_embeddings(value)
            continue
        if key == "word_index" and isinstance(value, dict):
            click.echo(f"{key + ':':<19}{_word_index_line(value)}")
            continue
        if key == "vector_indexes" and isinstance(value, list):
            for found in value:
                click.echo(f"{'vector_index:':<19}{_vector_index_line(found)}")
            continue
        click.echo(f"{key + ':':<19}{_shown(value)}")


def _shown(value: object) -> object:
    return "-" if value is None else str(value).lower() if isinstance(value, bool) else value


_WORD_INDEX_STATES = {
    "current": "current",
    "behind": "behind by {behind_by} changes (caught up at the next search)",
    "stale": "stale (rebuilt at the next search, or by lantern db rebuild-index)",
    "absent": "none yet (a search builds one while the store is small, else db rebuild-index)",
    "unavailable": "none (searches run in the database; pip install 'lantern[index]' for one)",
}


def _word_index_line(found: dict[str, Any]) -> str:
    line = _WORD_INDEX_STATES[found["state"]].format(**found)
    if found["records"] is not None:
        line += f", {counted(found['records'], 'record')}, {found['size_bytes']} bytes"
    return line


def _vector_index_line(found: dict[str, Any]) -> str:
    if not found["built"]:
        return f"{found['model']}: none yet (a search builds one while it is small)"
    state = "current" if found["current"] else "behind (caught up at the next search)"
    graph = f", a graph of the first {found['graph_rows']}" if found.get("graph_rows") else ""
    return (
        f"{found['model']}: {state}, {counted(found['rows'], 'row')}, "
        f"{found['dead']} dead, {found['bytes']} bytes{graph}"
    )


def _show_embeddings(found: dict[str, Any]) -> None:
    click.echo(f"{'embed_model:':<19}{_shown(found['default_model'])}")
    click.echo(f"{'embed_on_write:':<19}{_shown(found['on_write'])}")
    for model in found["models"]:
        click.echo(
            f"{'vectors:':<19}{model['model']} ({counted(model['dim'], 'dimension')}): "
            f"{model['records']} of {counted(found['records'], 'record')}, "
            f"{model['chunks']} of {counted(found['chunks'], 'chunk')}"
        )
    if not found["models"]:
        click.echo(f"{'vectors:':<19}none (lantern embed computes them)")


@db.command("settings")
@click.option(
    "--default-model",
    metavar="NAME",
    help="The embedding provider this store uses when neither --model nor "
    "$LANTERN_EMBED_MODEL names one.",
)
@click.option("--clear-default-model", is_flag=True, help="Forget the store's default provider.")
@click.option(
    "--embed-on-write/--no-embed-on-write",
    "on_write",
    default=None,
    help="Whether memory add, update and supersede and ingest also compute vectors.",
)
@json_option
@click.pass_context
def settings_command(
    ctx: click.Context,
    default_model: str | None,
    clear_default_model: bool,
    on_write: bool | None,
    as_json: bool,
) -> None:
    """Show the store's embedding settings, or change them.

    With no option, shows them. Embedding on write computes each new or changed memory record's
    vector before it is stored (a failure stores nothing) and each ingested source's chunk
    vectors once they are stored; off (the default), writes load no model and pay nothing.

    \b
        lantern db settings --default-model hashing --embed-on-write
    """
    lantern = open_lantern(ctx)
    if default_model is None and not clear_default_model and on_write is None:
        found = lantern.embedding_settings()
    else:
        found = lantern.set_embedding_settings(
            default_model=default_model,
            clear_default_model=clear_default_model,
            on_write=on_write,
        )
    if as_json:
        emit_json(found.to_json())
        return
    for key, value in found.to_json().items():
        click.echo(f"{key + ':':<15}{_shown(value)}")


@db.command("upgrade")
@click.option(
    "--no-backup",
    is_flag=True,
    help="Skip the backup copy made beside a SQLite store before upgrading it.",
)
@json_option
@click.pass_context
def upgrade_command(ctx: click.Context, no_backup: bool, as_json: bool) -> None:
    """Upgrade a store made by an older Lantern to the current schema.

    A SQLite store is first copied beside itself (NAME.backup-TIME); the upgrade then runs
    in one transaction: it completes, or the store stays as it was.

    \b
        lantern --db ~/notes/lantern.db db upgrade
    """
    lantern = open_lantern(ctx, require_current=False, create=True)
    report = lantern.upgrade(backup=not no_backup)
    if report.backup_path is not None:
        note(f"backed up the store to {report.backup_path}")
    if as_json:
        emit_json(
            {
                "upgraded": report.upgraded,
                "from_revision": report.from_revision,
                "to_revision": report.to_revision,
                "legacy_generation": report.legacy_generation,
                "backup_path": None if report.backup_path is None else str(report.backup_path),
            }
        )
    elif report.upgraded:
        click.echo(f"upgraded {report.from_revision} -> {report.to_revision}")
    else:
        click.echo(f"already at {report.to_revision}; nothing to do")


@db.command("check")
@json_option
@click.pass_context
def check_command(ctx: click.Context, as_json: bool) -> None:
    """Check the store's health; change nothing. Exit 0 unless something is damaged, then 4.

    Checks page integrity, foreign keys, the schema revision and its tables, leftover
    migration tables, the full-text indexes against their tables, the reference rows and the
    records' identities. Each problem is listed. References whose evidence is gone and records
    that say the same are listed as warnings: they are not damage, and leave the exit code 0.

    \b
        lantern db check --json
    """
    report = open_lantern(ctx, require_current=False).check()
    if as_json:
        emit_json(report.to_json())
    else:
        for result in report.checks:
            click.echo(f"{result.name + ':':<21}{result.status}")
            for problem in result.problems:
                click.echo(f"  {problem}")
    where = report.path or report.url
    if report.warnings:
        more = " (and more in the report)" if len(report.warnings) > 1 else ""
        note(f"warnings about the store at {where}: {report.warnings[0]}{more}")
    if not report.healthy:
        # Not raised: with --json the report above is the whole of stdout.
        count = len(report.problems)
        click.echo(
            f"Error: the store at {where} is not healthy: {counted(count, 'problem')} "
            f"({report.problems[0]})",
            err=True,
        )
        ctx.exit(NotAStore.exit_code)


@db.command("rebuild-index")
@json_option
@click.pass_context
def rebuild_index_command(ctx: click.Context, as_json: bool) -> None:
    """Rebuild the full-text indexes and reference rows from their tables.

    For when `db check` finds an index that disagrees with its table. One transaction; then
    the word index beside a SQLite store is built anew (with the `index` extra).

    \b
        lantern db rebuild-index
    """
    report = open_lantern(ctx).rebuild_index()
    if as_json:
        emit_json(report.to_json())
        return
    click.echo(
        f"rebuilt {', '.join(report.indexes)} from {counted(report.chunks, 'chunk')} "
        f"({report.search_texts} searched by their decoded text), "
        f"{counted(report.memories, 'memory record')} and "
        f"{counted(report.references, 'reference')}"
    )


@db.command("backup")
@click.argument("path", metavar="PATH")
@click.option("--force", is_flag=True, help="Replace PATH if it exists.")
@json_option
@click.pass_context
def backup_command(ctx: click.Context, path: str, force: bool, as_json: bool) -> None:
    """Copy a SQLite store, while it is in use, to PATH (owner-only, WAL content included).

    The copy is one consistent snapshot, checked before it is moved into place. PostgreSQL
    stores are backed up with pg_dump (or `lantern export`).

    \b
        lantern db backup ~/backups/lantern-$(date +%F).db
    """
    report = open_lantern(ctx, require_current=False).backup(path, force=force)
    if as_json:
        emit_json(report.to_json())
        return
    click.echo(f"backed up the store to {report.path} ({counted(report.size_bytes, 'byte')})")
