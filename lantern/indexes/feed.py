"""Reading the store's change feed (`index_feed`, revision 0010) for the derived indexes.

Triggers append a row for every change an index reads, in the writing transaction, so what
the feed says after `seq` is exactly what a copy made at `seq` lacks. An index remembers the
`seq` it applied and the item named there (its anchor): a feed that has no such row, or names
another item there, belongs to another store (a file restored over this one, say), and the
index is rebuilt rather than trusted.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sqlalchemy import Connection, bindparam, func, select

from lantern.store.engine import Store
from lantern.store.models import index_feed as table
from lantern.store.prepared import Prepared

MEMORY = "memory"
"""A record inserted, deleted, or changed in content, scope, kind or status."""
MEMORY_VECTOR = "memory_vector"
"""A record's vector of one model written, replaced or removed."""

# The side's greatest seq comes from the (side, seq) index whatever the planner's statistics
# say; an ORDER BY seq DESC LIMIT 1 may walk the table backwards past the other side's rows.
_LAST = Prepared(
    select(table.c.seq, table.c.item_id).where(
        table.c.seq
        == select(func.max(table.c.seq)).where(table.c.side == bindparam("side")).scalar_subquery()
    )
)
_ITEM_AT = Prepared(select(table.c.item_id).where(table.c.seq == bindparam("seq")))
_CHANGED = Prepared(
    select(table.c.item_id)
    .distinct()
    .where(
        table.c.side == bindparam("side"),
        table.c.seq > bindparam("after"),
        table.c.seq <= bindparam("upto"),
    )
)
_CHANGED_OF_MODEL = Prepared(
    select(table.c.item_id)
    .distinct()
    .where(
        table.c.side == bindparam("side"),
        table.c.model == bindparam("model"),
        table.c.seq > bindparam("after"),
        table.c.seq <= bindparam("upto"),
    )
)


@dataclass(frozen=True, slots=True)
class Mark:
    """How far an index has applied the feed: `seq`, and the item the feed names there."""

    seq: int
    anchor: str

    @classmethod
    def now(cls, conn: Connection, side: str) -> Mark:
        """The feed's last row on this side, as of the connection's snapshot."""
        return cls._of(_LAST.rows(conn, {"side": side}))

    @classmethod
    def latest(cls, store: Store, side: str) -> Mark:
        """The feed's last row on this side now: one look-up, outside any transaction."""
        return cls._of(store.fetch(_LAST, {"side": side}))

    @classmethod
    def _of(cls, rows: list[Any]) -> Mark:
        return cls(int(rows[0][0]), str(rows[0][1])) if rows else START


START = Mark(0, "")
"""Before the first row of any feed."""


def anchor(conn: Connection, seq: int) -> str:
    """The item the feed names at `seq` ("" at 0, or when the row is not there)."""
    if seq <= 0:
        return ""
    rows = _ITEM_AT.rows(conn, {"seq": seq})
    return str(rows[0][0]) if rows else ""


def belongs(conn: Connection, mark: Mark, now: Mark) -> bool:
    """Whether an index at `mark` can be caught up to `now` from this store's feed."""
    return mark.seq <= now.seq and anchor(conn, mark.seq) == mark.anchor


def changed(
    conn: Connection, side: str, after: int, upto: int, model: str | None = None
) -> list[str]:
    """The items changed on this side after `after`, up to `upto` (inclusive), once each."""
    values = {"side": side, "after": after, "upto": upto}
    if model is None:
        return [str(row[0]) for row in _CHANGED.rows(conn, values)]
    rows = _CHANGED_OF_MODEL.rows(conn, {**values, "model": model})
    return [str(row[0]) for row in rows]
