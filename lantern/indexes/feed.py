"""Reading the store's change feed (`index_feed`, revision 0010) for the derived indexes.

Triggers append a row for every change an index reads, in the writing transaction, so what
the feed says after `seq` is exactly what a copy made at `seq` lacks. An index remembers the
`seq` it applied and the item named there (its anchor): a feed that has no such row, or names
another item there, belongs to another store (a file restored over this one, say), and the
index is rebuilt rather than trusted.

On PostgreSQL `seq` comes from a sequence when a row is inserted, and transactions commit in
their own order: a reader that has applied every row up to the greatest `seq` it sees may lack
one with a lower `seq` whose transaction was still in flight and commits afterwards. Each row
there records its transaction (`xact`, revision 0013), and a mark also records the horizon of
the snapshot it was read in (`pg_snapshot_xmin`: every transaction in flight then had an id
at or above it) and the rows at or above the horizon that it already saw. The next reader
applies the rows after `seq` and those at or above the horizon that the mark did not see: a
row that commits late is found however low its `seq`, and none is applied twice. That is the
transaction-id horizon that outbox and event-store readers polling a table use, without
waiting for the oldest transaction to end (a search must see what is committed now). Rows at or
above a horizon are few unless a writing transaction stays open for long: they are counted
through an index of their own. On SQLite writers take turns (`BEGIN IMMEDIATE`), so rows
commit in `seq` order and the horizon stays 0. The SQL that differs lives here.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sqlalchemy import Connection, bindparam, func, select, text

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


# PostgreSQL: the snapshot's horizon, and the rows at or above it that the snapshot sees
# (through ix_index_feed_xact), with the side's last row; in one statement, one snapshot.
_PG_NOW = text(
    """
    WITH horizon AS (SELECT pg_snapshot_xmin(pg_current_snapshot()) AS xmin)
    SELECT last.seq, last.item_id, horizon.xmin::text,
        ARRAY(SELECT f.seq FROM index_feed f
              WHERE f.xact >= horizon.xmin AND f.side = :side ORDER BY f.seq)
    FROM horizon
    LEFT JOIN index_feed last
        ON last.seq = (SELECT max(seq) FROM index_feed WHERE side = :side)
    """
)
# How many of the side's rows are at or above a horizon now (the mark saw `len(seen)`): rows
# only ever arrive, so an equal count means nothing committed there since.
_PG_SINCE = text(
    """
    SELECT (SELECT max(seq) FROM index_feed WHERE side = :side),
        (SELECT count(*) FROM index_feed
         WHERE xact >= CAST(:horizon AS xid8) AND side = :side)
    """
)
_PG_CHANGED = text(
    """
    SELECT DISTINCT item_id FROM index_feed
    WHERE side = :side AND seq <= :upto AND (CAST(:model AS text) IS NULL OR model = :model)
        AND (seq > :after
             OR (xact >= CAST(:horizon AS xid8) AND seq <> ALL(CAST(:seen AS bigint[]))))
    """
)
_PG_LACKING = text(
    """
    SELECT count(*) FROM index_feed
    WHERE side = :side AND seq <= :upto
        AND (seq > :after
             OR (xact >= CAST(:horizon AS xid8) AND seq <> ALL(CAST(:seen AS bigint[]))))
    """
)


@dataclass(frozen=True, slots=True)
class Mark:
    """How far an index has applied the feed: `seq`, and the item the feed names there; on
    PostgreSQL also the horizon of the snapshot it was read in, and the rows at or above the
    horizon that it saw (`seen`): any other row there may commit after it and must be read."""

    seq: int
    anchor: str
    horizon: int = 0
    seen: tuple[int, ...] = ()

    @classmethod
    def now(cls, conn: Connection, side: str) -> Mark:
        """The feed's last row on this side, as of the connection's snapshot."""
        if conn.dialect.name == "postgresql":
            return cls._of_postgres(conn.execute(_PG_NOW, {"side": side}).one())
        return cls._of(_LAST.rows(conn, {"side": side}))

    @classmethod
    def latest(cls, store: Store, side: str) -> Mark:
        """The feed's last row on this side now: one look-up, outside any transaction."""
        if store.dialect == "postgresql":
            with store.read() as conn:
                return cls.now(conn, side)
        return cls._of(store.fetch(_LAST, {"side": side}))

    @classmethod
    def _of(cls, rows: list[Any]) -> Mark:
        return cls(int(rows[0][0]), str(rows[0][1])) if rows else START

    @classmethod
    def _of_postgres(cls, row: Any) -> Mark:
        seq, item_id, horizon, seen = row
        if seq is None:
            return cls(0, "", int(horizon), tuple(int(each) for each in seen))
        return cls(int(seq), str(item_id), int(horizon), tuple(int(each) for each in seen))

    def to_json(self) -> dict[str, Any]:
        """The mark as kept in an index's files (the horizon only where there is one)."""
        kept: dict[str, Any] = {"seq": self.seq, "anchor": self.anchor}
        if self.horizon:
            kept |= {"horizon": self.horizon, "seen": list(self.seen)}
        return kept

    @classmethod
    def from_json(cls, data: Any) -> Mark:
        """A mark from `to_json`. Raises ValueError, KeyError or TypeError for anything else."""
        seq, anchor = data["seq"], data["anchor"]
        horizon, seen = data.get("horizon", 0), data.get("seen", [])
        numbers = [seq, horizon, *seen]
        if not isinstance(anchor, str) or not all(_count(number) for number in numbers):
            raise ValueError(f"not a feed mark: {data!r}")
        return cls(seq, anchor, horizon, tuple(seen))


def _count(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


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


def current(conn: Connection, side: str, mark: Mark, now: Mark) -> bool:
    """Whether an index at `mark` has applied every change of this side up to `now`: the same
    mark, or (on PostgreSQL, where the horizon moves with every transaction) one of this feed
    that lacks nothing."""
    if mark == now:
        return True
    if conn.dialect.name != "postgresql":
        return False
    return belongs(conn, mark, now) and lacking(conn, side, mark, now) == 0


def unchanged(store: Store, side: str, mark: Mark) -> bool:
    """Whether nothing was committed on this side since `mark`: one look-up, outside any
    transaction, for an index to answer from what it holds."""
    if store.dialect != "postgresql":
        return Mark.latest(store, side) == mark
    with store.read() as conn:
        last, count = conn.execute(_PG_SINCE, _since(side, mark)).one()
    return int(last or 0) == mark.seq and int(count) == len(mark.seen)


def lacking(conn: Connection, side: str, mark: Mark, now: Mark) -> int:
    """How many of the feed's rows up to `now` an index at `mark` has not applied (0: it is
    current), for a mark that `belongs`."""
    if conn.dialect.name != "postgresql":
        return now.seq - mark.seq
    values = {**_since(side, mark), "after": mark.seq, "upto": now.seq}
    return int(conn.execute(_PG_LACKING, values).scalar_one())


def changed(
    conn: Connection, side: str, mark: Mark, now: Mark, model: str | None = None
) -> list[str]:
    """The items changed on this side since `mark`, up to `now`, once each."""
    if conn.dialect.name == "postgresql":
        values = {**_since(side, mark), "after": mark.seq, "upto": now.seq, "model": model}
        return [str(row[0]) for row in conn.execute(_PG_CHANGED, values)]
    values = {"side": side, "after": mark.seq, "upto": now.seq}
    if model is None:
        return [str(row[0]) for row in _CHANGED.rows(conn, values)]
    rows = _CHANGED_OF_MODEL.rows(conn, {**values, "model": model})
    return [str(row[0]) for row in rows]


def _since(side: str, mark: Mark) -> dict[str, Any]:
    # Where no mark was read on PostgreSQL (a SQLite one, START), every row counts: horizon 0.
    return {"side": side, "horizon": str(mark.horizon), "seen": list(mark.seen)}
