"""Stores for the web view's tests and screenshots: an ordinary one, and a hostile one.

Both are built through the public API, as an agent would fill them.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import lantern.memory.activity
import lantern.memory.entities
import lantern.memory.lifecycle
import lantern.memory.reads
import lantern.memory.writes
from lantern.api import Lantern

_CLOCKED = (
    lantern.memory.writes,
    lantern.memory.entities,
    lantern.memory.lifecycle,
    lantern.memory.reads,
    lantern.memory.activity,
)


class _Calendar:
    """The time memory writes take, moved by hand: days ago, until it is now again."""

    def __init__(self) -> None:
        self.at: int | None = None

    def days_ago(self, days: float) -> None:
        self.at = int(time.time() - days * 86_400)

    def now(self) -> int:
        return int(time.time()) if self.at is None else self.at


@contextmanager
def _calendar(spread: bool) -> Iterator[_Calendar]:
    calendar = _Calendar()
    if not spread:
        yield calendar
        return
    saved = [module.now for module in _CLOCKED]
    for module in _CLOCKED:
        module.now = calendar.now  # type: ignore[attr-defined]
    try:
        yield calendar
    finally:
        for module, original in zip(_CLOCKED, saved, strict=True):
            module.now = original  # type: ignore[attr-defined]


NOTES = """# Release checklist

Run the whole test suite on SQLite and PostgreSQL before tagging.

Deploy from the `main` branch only, after CI is green.

## Rollback

Keep the previous wheel; roll back by reinstalling it and running `lantern db status`.
"""

TRANSCRIPT_NOTE = """Raphael asked for separate branches on each of his repositories.
He also said that answers should stay short, with the command first.
The staging server moved from Paris to Lyon in November.
"""


def build_demo_store(path: Path | str, *, spread: bool = False) -> dict[str, str]:
    """A small store with the shapes a person meets: chains, history, evidence and references.

    With `spread`, its records are written over the last three weeks, as an agent would have
    (for the screenshots' timeline). Returns the ids a test looks for, by name.
    """
    with Lantern.open(path) as lt, _calendar(spread) as calendar:
        notes = lt.evidence.ingest_text("file:///home/ada/notes/release.md", NOTES, kind="markdown")
        chat = lt.evidence.ingest_text(
            "https://chat.example.org/sessions/42", TRANSCRIPT_NOTE, kind="document"
        )
        note_chunks = lt.evidence.get_source(notes.source.id).chunks or ()
        chat_chunk = (lt.evidence.get_source(chat.source.id).chunks or ())[0]
        calendar.days_ago(20)
        prefers = lt.memory.add(
            kind="preference",
            scope="user:raphael",
            content="Raphael prefers separate branches on his repos.",
            priority=90,
            source_refs=[f"chunk:{chat_chunk.id}"],
            entities=["person:Raphael"],
        )
        calendar.days_ago(14)
        lt.memory.update(prefers.id, priority=95, add_refs=["session:2026-11-30"])
        calendar.days_ago(13)
        lt.memory.add(
            kind="preference",
            scope="user:raphael",
            content="Answers stay short, with the command first.",
            priority=80,
            urgency=10,
            source_refs=[f"chunk:{chat_chunk.id}"],
        )
        calendar.days_ago(12)
        staging = lt.memory.add(
            kind="fact",
            scope="project:lantern",
            content="The staging server is in Paris.",
            priority=60,
        )
        calendar.days_ago(6)
        moved = lt.memory.supersede(
            staging.id,
            content="The staging server is in Lyon since November.",
            source_refs=[f"chunk:{chat_chunk.id}"],
        )
        lt.memory.attach_entities(moved.id, ["place:Lyon", "project:lantern"])
        calendar.days_ago(5)
        deploy = lt.memory.add(
            kind="constraint",
            scope="project:lantern",
            content="Deploy from main only, after CI is green.",
            priority=85,
            source_refs=[f"chunk:{note_chunks[0].id}", f"source:{notes.source.id}"],
        )
        calendar.days_ago(3)
        step = lt.memory.add(
            kind="task_state",
            scope="project:lantern/docs",
            content="Step 3 of 5 is done: the manual builds strictly.",
            priority=70,
            urgency=30,
            confidence=0.5,
            expires_at=int(time.time()) + 3 * 86_400,
        )
        calendar.days_ago(2)
        lt.memory.add(
            kind="goal",
            scope="project:lantern/docs",
            content="Ship the manual as a site, with screenshots of the web view.",
            priority=75,
        )
        calendar.days_ago(1)
        lt.memory.add(
            kind="hypothesis",
            scope="project:lantern",
            content="The flaky test is a race between two writers.",
            priority=40,
            confidence=0.3,
            source_refs=["chunk:chk_0000000000000000"],
            allow_dangling=True,
        )
        calendar.days_ago(0.8)
        old = lt.memory.add(kind="observation", scope="user:raphael", content="Uses vim.")
        calendar.days_ago(0.5)
        lt.memory.archive(old.id)
        return {
            "prefers": prefers.id,
            "staging": staging.id,
            "moved": moved.id,
            "deploy": deploy.id,
            "step": step.id,
            "archived": old.id,
            "notes": notes.source.id,
            "chat": chat.source.id,
            "chat_chunk": chat_chunk.id,
            "note_chunk": note_chunks[0].id,
        }


ATTACKS = (
    "<script>window.__pwned = 'script'</script>",
    "<img src=x onerror=\"window.__pwned = 'onerror'\">",
    '"><svg onload="window.__pwned=\'svg\'">',
    "<a href=\"javascript:window.__pwned='link'\">click</a>",
    "javascript:window.__pwned='uri'",
    "</textarea></title><style>body{display:none}</style>",
    "{{ 7*7 }} {% raw %}",
)
RTL = "\u202eevil.exe\u202c \u05e9\u05dc\u05d5\u05dd \u0645\u0631\u062d\u0628\u0627 \u2067isolate"
ZERO_WIDTH = "user:ada\u200b\u200d\ufeff"


def build_hostile_store(path: Path | str) -> dict[str, str]:
    """Records, scopes, URIs and chunks made to break a page: markup and script in every field
    a person sees, event handlers, `javascript:` links, a 1 MB line, right-to-left overrides and
    zero-width characters. Returns the ids a test visits, by name."""
    long_line = "x" * 1_000_000
    with Lantern.open(path) as lt:
        hostile = lt.evidence.ingest_text(
            "javascript:window.__pwned='source'//<script>x</script>",
            "\n\n".join([*ATTACKS, RTL, long_line]),
            kind="document",
            metadata={"<b>key</b>": "<script>window.__pwned='meta'</script>", "rtl": RTL},
        )
        chunks = lt.evidence.get_source(hostile.source.id).chunks or ()
        wide = next(chunk for chunk in chunks if len(chunk.text) >= 1_000_000)
        ids: dict[str, str] = {"source": hostile.source.id, "wide_chunk": wide.id}
        lt.evidence.ingest_text("file:///etc/<script>passwd", "file URI " + RTL, kind="log")
        ids["rtl_source"] = lt.evidence.ingest_text(
            "https://example.org/\u202etxt.exe\u200b", "an address that hides its end " + RTL
        ).source.id
        for number, attack in enumerate(ATTACKS):
            record = lt.memory.add(
                kind="observation",
                scope=f"{attack.strip()[:200]}{ZERO_WIDTH}",
                content=f"{attack} {RTL} {'y' * 50_000}",
                priority=50 + number,
                source_refs=[
                    f"chunk:{chunks[0].id}",
                    f"chunk:{attack}",
                    {"type": "url", "href": "javascript:window.__pwned='ref'", "id": attack},
                ],
                allow_dangling=True,
            )
            ids[f"record_{number}"] = record.id
            lt.memory.update(record.id, content=f"{attack} {RTL} changed")
        ids["zero_width"] = lt.memory.add(kind="fact", scope=ZERO_WIDTH, content=RTL).id
        return ids
