"""`lantern embed`: compute the missing and stale vectors of memory records and chunks."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

import click

from lantern.cli.context import open_lantern
from lantern.cli.output import (
    MODEL_HELP,
    ProgressBar,
    ProgressLog,
    emit_json,
    json_option,
    stderr_is_terminal,
)

if TYPE_CHECKING:
    from lantern.semantic.backfill import EmbedReport

_SIDES = {"memory": "memory records", "sources": "chunks"}


@click.command("embed")
@click.option("--memory", "memory_only", is_flag=True, help="Memory records only.")
@click.option("--sources", "sources_only", is_flag=True, help="Sources' chunks only.")
@click.option("--model", metavar="NAME", help=MODEL_HELP)
@click.option("--quiet", "-q", is_flag=True, help="No progress on stderr, only errors.")
@json_option
@click.pass_context
def embed(
    ctx: click.Context,
    memory_only: bool,
    sources_only: bool,
    model: str | None,
    quiet: bool,
    as_json: bool,
) -> None:
    """Compute the vectors that semantic and hybrid search compare: for every memory record
    and chunk that has none of the model's, or a stale one (its text changed, another model).

    Both kinds unless --memory or --sources says one. It works in batches that commit one by
    one: interrupt it at will, and run it again to resume. Progress goes to stderr: a bar on
    a terminal, else a line every 5 % or 10 seconds (--quiet: none). To embed at write time
    from now on: lantern db settings --embed-on-write. Examples:

    \b
        lantern embed

    \b
        lantern embed --memory --model hashing --json
    """
    both = memory_only == sources_only
    lantern = open_lantern(ctx)
    started = time.monotonic()
    bars: dict[str, ProgressBar | ProgressLog] = {
        side: ProgressBar(f"Embedding {words}", enabled=not quiet)
        if stderr_is_terminal()
        else ProgressLog(f"embedding {words}", enabled=not quiet, started=started)
        for side, words in _SIDES.items()
    }

    def progress(side: str, done: int, total: int) -> None:
        if bars[side].enabled:
            bars[side].update(done, total)

    try:
        summary = lantern.embed(
            memory=both or memory_only,
            sources=both or sources_only,
            model=model,
            progress=progress,
        )
    finally:
        for bar in bars.values():
            bar.__exit__(None, None, None)
    if as_json:
        emit_json(summary.to_json())
        return
    parts = [
        _line(name, report)
        for name, report in (("memory records", summary.memory), ("chunks", summary.sources))
        if report is not None
    ]
    click.echo(f"{'; '.join(parts)}; model {summary.model}, {summary.seconds:.2f} s")


def _line(name: str, report: EmbedReport) -> str:
    return f"{name}: {report.embedded} embedded, {report.unchanged} unchanged"
