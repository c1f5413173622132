"""Supersede links: who replaced a record, whom it replaced, and whether it may be replaced."""

from __future__ import annotations

from sqlalchemy import Connection, select

from lantern.errors import Conflict
from lantern.memory.records import MemoryRecord
from lantern.memory.scopes import UNRESTRICTED, ScopePolicy
from lantern.store.models import memory_records as table

_MAX_CHAIN = 10_000  # a supersede chain longer than this is not a chain Lantern made


def successor(conn: Connection, record_id: str, scopes: ScopePolicy) -> str | None:
    """The id of the record that superseded this one, if there is one inside `scopes`."""
    row = conn.execute(
        select(table.c.id, table.c.scope).where(table.c.supersedes_id == record_id)
    ).one_or_none()
    return row.id if row is not None and scopes.allows(row.scope) else None


def successor_id(conn: Connection, record_id: str, scopes: ScopePolicy) -> str:
    """The successor's id for a message: within the scopes, or words that name none."""
    found = successor(conn, record_id, scopes)
    if found is not None:
        return found
    if scopes.restricted and successor(conn, record_id, UNRESTRICTED) is not None:
        return "a record outside the scopes this store is restricted to"
    return "a record that no longer exists"


def check_supersedable(conn: Connection, old: MemoryRecord, scopes: ScopePolicy) -> None:
    """A record is replaced at most once."""
    if old.status == "superseded":
        raise Conflict(
            f"memory {old.id} is already superseded by {successor_id(conn, old.id, scopes)}"
        )


def walk(
    conn: Connection, start: str | None, forward: bool, scopes: ScopePolicy
) -> tuple[str, ...]:
    """The ids of a supersede chain from `start`: the records it replaced (`forward` False) or
    those that replaced it (`forward` True), nearest first.

    Stops at the end of the chain (or at a loop, which only a hand-edited store could hold),
    and at the first record outside `scopes`, which is the last id returned: the caller
    shows that a chain goes on outside without saying where (`lantern.memory.outside`).
    """
    found: list[str] = []
    current = start
    while current is not None and current not in found and len(found) < _MAX_CHAIN:
        found.append(current)
        row = conn.execute(
            select(table.c.scope, table.c.supersedes_id).where(table.c.id == current)
        ).one_or_none()
        if row is None or not scopes.allows(row.scope):
            break
        if forward:
            current = conn.execute(
                select(table.c.id).where(table.c.supersedes_id == current)
            ).scalar_one_or_none()
        else:
            current = row.supersedes_id
    return tuple(found)
