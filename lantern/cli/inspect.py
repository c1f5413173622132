"""`lantern inspect`: the store at a glance."""

from __future__ import annotations

from collections.abc import Mapping

import click

from lantern.cli.context import open_lantern
from lantern.cli.output import counted, emit_json, json_option, when


@click.command("inspect")
@json_option
@click.pass_context
def inspect(ctx: click.Context, as_json: bool) -> None:
    """Show the store at a glance: where it is, its size and schema, what it holds, and what
    needs attention (active records past their expiry, references that no longer resolve).

    \b
        lantern inspect --json
    """
    found = open_lantern(ctx).inspect()
    if as_json:
        emit_json(found.to_json())
        return
    rows = [
        ("location", str(found.path) if found.path else found.url),
        ("size", counted(found.size_bytes, "byte")),
        ("revision", found.revision or "-"),
        ("journal_mode", found.journal_mode or "-"),
        ("sources", str(found.sources)),
        ("chunks", str(found.chunks)),
        ("memories", str(found.memories)),
        ("  by status", _counts(found.memories_by_status)),
        ("  by kind", _counts(found.memories_by_kind)),
        ("  top scopes", ", ".join(f"{s} {n}" for s, n in found.top_scopes) or "-"),
        ("expired, active", str(found.expired_active)),
        ("dangling refs", str(found.dangling_refs)),
        ("history entries", str(found.history_entries)),
        ("last write", when(found.last_write_at)),
    ]
    for name, value in rows:
        click.echo(f"{name + ':':<18}{value}")


def _counts(counts: Mapping[str, int]) -> str:
    shown = [f"{name} {count}" for name, count in counts.items() if count]
    return ", ".join(shown) or "-"
