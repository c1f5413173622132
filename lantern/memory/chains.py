"""Supersede links: who replaced a record, whom it replaced, and whether it may be replaced."""

from __future__ import annotations

from typing import Any

from sqlalchemy import Connection, select

from lantern.errors import Conflict
from lantern.memory.records import MemoryRecord
from lantern.memory.scopes import ScopePolicy
from lantern.store.models import memory_records as table

_MAX_CHAIN = 10_000  # a supersede chain longer than this is not a chain Lantern made


def successor(conn: Connection, record_id: str, scopes: ScopePolicy) -> str | None:
    """The id of the record that superseded this one, if there is one inside `scopes`."""
    row = conn.execute(
        select(table.c.id, table.c.scope).where(table.c.supersedes_id == record_id)
    ).one_or_none()
    return row.id if row is not None and scopes.allows(row.scope) else None


def successor_id(conn: Connection, record_id: str, scopes: ScopePolicy) -> str:
    return successor(conn, record_id, scopes) or "a record that no longer exists"


def check_supersedable(conn: Connection, old: MemoryRecord, scopes: ScopePolicy) -> None:
    """A record is replaced at most once."""
    if old.status == "superseded":
        raise Conflict(
            f"memory {old.id} is already superseded by {successor_id(conn, old.id, scopes)}"
        )


def walk(
    conn: Connection, start: str | None, match: Any, follow: Any, scopes: ScopePolicy
) -> tuple[str, ...]:
    """Follow supersede links from `start`: each step reads `follow` where `match` is the
    previous id. Stops at the end of the chain (or at a loop, which only a hand-edited store
    could hold), and at a row outside `scopes`, exactly as at a row that does not exist."""
    found: list[str] = []
    current = start
    while current is not None and current not in found and len(found) < _MAX_CHAIN:
        found.append(current)
        row = conn.execute(select(follow, table.c.scope).where(match == current)).one_or_none()
        current = row[0] if row is not None and scopes.allows(row.scope) else None
    return tuple(found)
