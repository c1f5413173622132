"""`lantern db ...`: where the store is, and upgrading stores made by older versions."""

from __future__ import annotations

import click

from lantern.cli.context import open_lantern
from lantern.cli.output import emit_json, json_option, note


@click.group()
def db() -> None:
    """The store itself: status and schema upgrades.

    lantern db status
    """


@db.command("status")
@json_option
@click.pass_context
def status_command(ctx: click.Context, as_json: bool) -> None:
    """Show where the store is and whether its schema needs an upgrade.

    lantern db status --json
    """
    status = open_lantern(ctx, require_current=False).status()
    if as_json:
        emit_json(status.to_json())
        return
    for key, value in status.to_json().items():
        shown = "-" if value is None else str(value).lower() if isinstance(value, bool) else value
        click.echo(f"{key + ':':<19}{shown}")


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

        lantern --db ~/notes/lantern.db db upgrade
    """
    lantern = open_lantern(ctx, require_current=False)
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
