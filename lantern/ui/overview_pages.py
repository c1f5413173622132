"""The overview (what the store holds, what changed, what expires soon, where its schema
stands) and the health page (`inspect` and `db check`, run when asked for: they read the whole
store, and are refused under a scope restriction)."""

from __future__ import annotations

import time
from typing import Any

from lantern.errors import PolicyRefused
from lantern.memory.records import MemoryStats
from lantern.ui.fields import Params
from lantern.ui.memory_pages import history_item, record_row
from lantern.ui.views import Command, Site, View, href, twin_href

SOON_DAYS = 7
RECENT = 10
EXPIRING_SHOWN = 10
DAYS = 30
TOP_SCOPES = 10
CHART_WIDTH = 600
CHART_HEIGHT = 120


def overview(site: Site, params: Params) -> View:
    lt = site.lantern
    stats = lt.memory.stats(top=TOP_SCOPES, days=DAYS)
    recent = lt.memory.changes(limit=RECENT)
    soon = int(time.time()) + SOON_DAYS * 86_400
    expiring = lt.memory.list(expires_before=soon, limit=EXPIRING_SHOWN)
    status = lt.status()
    twins: dict[str, Any] = {
        "stats": stats.to_json,
        "changes": lambda: [entry.to_json() for entry in recent],
        "expiring": lambda: [record.to_json() for record in expiring],
        "status": status.to_json,
    }
    commands = [
        Command(
            "counts",
            site.command(["memory", "stats", *site.fenced({}), "--json"]),
            twin_href("/", [], "stats"),
        ),
        Command(
            "latest changes",
            site.command(["memory", "changes", *site.fenced({}), "--limit", str(RECENT), "--json"]),
            twin_href("/", [], "changes"),
        ),
        Command(
            f"expiring within {SOON_DAYS} days",
            site.command(_expiring_words(soon, site.fenced({}))),
            twin_href("/", [], "expiring"),
        ),
    ]
    if lt.scopes.restricted:
        # `db status` reads the whole store (its embedding coverage counts every scope's
        # records), so a confined view shows no command for it and no twin of it.
        del twins["status"]
    else:
        schema = site.command(["db", "status", "--json"])
        commands.append(Command("schema", schema, twin_href("/", [], "status")))
    parts = dict(twins)
    twins[""] = lambda: {name: make() for name, make in parts.items()}
    return View(
        "overview.html",
        "Overview",
        {
            "stats": stats,
            "scopes_policy": lt.scopes.describe() if lt.scopes.restricted else None,
            "status": status.to_json(),
            "recent": [history_item(entry) for entry in recent],
            "expiring": [record_row(record) for record in expiring],
            "expiring_href": href("/memory", [("expires_before", str(soon))]),
            "expired_href": href(
                "/memory", [("expires_before", str(int(time.time()) + 1)), ("include_expired", "1")]
            ),
            "soon_days": SOON_DAYS,
            "chart": chart(stats),
            "scope_links": [
                (scope, count, href("/memory", [("scope", _exact(scope)), *_EVERY_RECORD]))
                for scope, count in stats.top_scopes
            ],
            "kind_links": [
                (kind, count, href("/memory", [("kind", kind), *_EVERY_RECORD]))
                for kind, count in stats.by_kind.items()
            ],
            "status_links": [
                (status_name, count, href("/memory", [("status", status_name), _EXPIRED_TOO]))
                for status_name, count in stats.by_status.items()
            ],
        },
        twins=twins,
        commands=commands,
    )


def health(site: Site, params: Params) -> View:
    lt = site.lantern
    if lt.scopes.restricted:
        raise PolicyRefused(
            "db check reads the whole store, and this view is restricted to the scopes "
            f"{lt.scopes.describe()}"
        )
    inspection = lt.inspect()
    report = lt.check()
    return View(
        "health.html",
        "Health",
        {"report": report.to_json(), "inspection": inspection.to_json()},
        twins={"": report.to_json, "inspect": inspection.to_json},
        commands=[
            Command(
                "the checks", site.command(["db", "check", "--json"]), twin_href("/health", [])
            ),
            Command(
                "the whole store",
                site.command(["inspect", "--json"]),
                twin_href("/health", [], "inspect"),
            ),
        ],
    )


def chart(stats: MemoryStats) -> dict[str, Any]:
    """Bars of the changes per day, each stacked by event, drawn server-side as SVG shapes."""
    days = stats.changes_per_day
    most = max((sum(day.counts.values()) for day in days), default=0) or 1
    step = CHART_WIDTH / max(len(days), 1)
    bars = []
    for index, day in enumerate(days):
        top = float(CHART_HEIGHT)
        segments = []
        for event, count in day.counts.items():
            if not count:
                continue
            height = count / most * CHART_HEIGHT
            top -= height
            segments.append({"event": event, "count": count, "y": top, "height": height})
        bars.append(
            {
                "x": index * step,
                "width": max(step - 2, 1),
                "day": day.to_json()["day"],
                "total": sum(day.counts.values()),
                "segments": segments,
            }
        )
    events = [name for name in (days[0].counts if days else {})]
    return {
        "width": CHART_WIDTH,
        "height": CHART_HEIGHT,
        "bars": bars,
        "most": most,
        "events": events,
    }


def _expiring_words(soon: int, fence: list[str]) -> list[str]:
    limit = str(EXPIRING_SHOWN)
    return ["memory", "list", *fence, "--expires-before", str(soon), "--limit", limit, "--json"]


_EXPIRED_TOO = ("include_expired", "1")
_EVERY_RECORD = (("status", "all"), _EXPIRED_TOO)
"""The counts cover every record, expired ones included: so do the lists they link to."""


def _exact(scope: str) -> str:
    """A scope as a filter that matches it alone (a final star escaped)."""
    return scope[:-1] + "\\*" if scope.endswith("*") else scope
