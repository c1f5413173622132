"""The memory of a store at a glance, within the scopes: counts, and every record's changes.

`stats` answers "what is in here": records by kind, status and scope, the active records past
their expiry time, and how many changes each recent day saw. `changes` answers "what changed
lately": the history entries of every record, newest first, paged by the entry id (`id` orders
the whole log: it never repeats, and each write appends after the last).

A confined caller is never given an entry's id, whose gaps would count the changes made outside
its scopes (`lantern.memory.outside`): its cursor (`h1_`) names the last entry by its record and
its place in that record's history, and the cursor of an unconfined caller (the entry id) is
refused from it, since paging from any id would place its entries among the others.

Both read within the scope policy like every other read. A history entry belongs to the record
it describes, so it is shown where that record is; a record that was forgotten is gone, and
its one remaining `forgotten` entry (which keeps its scope) is shown where that scope is.
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Iterable
from typing import Any

from sqlalchemy import (
    ColumnElement,
    Connection,
    Integer,
    and_,
    func,
    literal_column,
    or_,
    select,
)

from lantern import validation
from lantern.errors import InvalidInput
from lantern.memory.core import MemoryCore
from lantern.memory.filters import scope_clause
from lantern.memory.history import entry_at, forgotten_in, ordinals
from lantern.memory.outside import outside
from lantern.memory.records import DayCount, HistoryEntry, MemoryStats, Page
from lantern.memory.scopes import ScopePolicy
from lantern.store.models import memory_history as history_table
from lantern.store.models import memory_records as table
from lantern.validation import HISTORY_EVENTS, MEMORY_KINDS, STATUSES

DAY = 86_400
MAX_DAYS = 366
MAX_TOP = 1_000

_PLACE_PREFIX = "h1_"
_DAY_SECONDS = literal_column(str(DAY), Integer)
"""A literal, not a bound value: the day expression must read the same in SELECT and GROUP BY."""


class MemoryActivity(MemoryCore):
    """Counts and recent changes over the records within the scopes."""

    def stats(
        self, *, scope: str | Iterable[str] | None = None, top: int = 10, days: int = 30
    ) -> MemoryStats:
        """Records by kind, status and scope (the `top` largest scopes), and the history
        entries of each of the last `days` UTC days, today included; of the records of these
        `scope` patterns only (as for `list`), when given.

        Args:
            scope: Only the records of these scope patterns (as for `list`); None, every scope.
            top: How many of the largest scopes to list (1 to 1,000).
            days: How many UTC days of changes to count, today included (1 to 366).
        """
        wanted = ScopePolicy.of(_values(scope)) if _values(scope) else ScopePolicy()
        top = validation.limit(top, field="top", maximum=MAX_TOP)
        days = validation.limit(days, field="days", maximum=MAX_DAYS)
        at = self._store.clock()
        policy = self._fences(wanted)
        count = func.count()
        with self._store.read() as conn:
            by_kind = _grouped(conn, table.c.kind, policy)
            by_status = _grouped(conn, table.c.status, policy)
            scopes = conn.execute(
                select(table.c.scope, count)
                .where(*policy)
                .group_by(table.c.scope)
                .order_by(count.desc(), table.c.scope)
                .limit(top)
            ).all()
            scope_count = conn.execute(
                select(func.count(func.distinct(table.c.scope))).where(*policy)
            ).scalar_one()
            expired_active = conn.execute(
                select(count).where(*policy, table.c.status == "active", table.c.expires_at <= at)
            ).scalar_one()
            first_day = at // DAY - (days - 1)
            per_day = self._changes_per_day(conn, first_day * DAY, wanted)
        return MemoryStats(
            total=sum(by_status.values()),
            by_kind={kind: by_kind.get(kind, 0) for kind in MEMORY_KINDS},
            by_status={status: by_status.get(status, 0) for status in STATUSES},
            top_scopes=tuple((scope, number) for scope, number in scopes),
            scope_count=int(scope_count),
            expired_active=int(expired_active),
            changes_per_day=tuple(
                DayCount(
                    start=day * DAY,
                    counts={event: per_day.get((day, event), 0) for event in HISTORY_EVENTS},
                )
                for day in range(first_day, first_day + days)
            ),
        )

    def _fences(self, wanted: ScopePolicy) -> list[ColumnElement[bool]]:
        """The scope conditions of the policy and of the scopes asked for, together."""
        fences = [*self._policy()]
        if wanted.restricted:
            fences.append(scope_clause(self._store.dialect, wanted.patterns, name="wanted"))
        return fences

    def _changes_per_day(
        self, conn: Connection, start: int, wanted: ScopePolicy
    ) -> dict[tuple[int, str], int]:
        h = history_table
        day = (h.c.at // _DAY_SECONDS).label("day")
        stmt = select(day, h.c.event, func.count()).where(h.c.at >= start)
        fenced = self._scopes.restricted or wanted.restricted
        if fenced:
            # Entries of records within the scopes; forgotten records are counted below.
            stmt = stmt.select_from(h.join(table, table.c.id == h.c.record_id)).where(
                *self._fences(wanted)
            )
        counts: dict[tuple[int, str], int] = {
            (int(row[0]), row[1]): int(row[2])
            for row in conn.execute(stmt.group_by(day, h.c.event))
        }
        if fenced:
            forgotten = select(h).where(
                h.c.at >= start,
                h.c.event == "forgotten",
                ~select(table.c.id).where(table.c.id == h.c.record_id).exists(),
            )
            for row in conn.execute(forgotten):
                if _forgotten_within(_entry(row), self._scopes, wanted):
                    key = (row.at // DAY, "forgotten")
                    counts[key] = counts.get(key, 0) + 1
        return counts

    def changes(
        self,
        *,
        scope: str | Iterable[str] | None = None,
        event: str | Iterable[str] | None = None,
        since: int | float | str | None = None,
        before: int | float | str | None = None,
        limit: int = 50,
        after: str | int | None = None,
    ) -> Page:
        """History entries of every record within the scopes, newest first.

        `scope` patterns (as for `list`) and `event` names (`HISTORY_EVENTS`) keep entries of
        those scopes and events; `since` and `before` bound the time of the change (`since` <=
        at < `before`). The page's `next_cursor`, given back as `after`, continues after it.

        Args:
            scope: Only the entries of records of these scope patterns; None, every scope.
            event: Only these events (`created`, `updated`, `archived`, `restored`, `superseded`,
                `expired`, `forgotten`), one or several; None, every event.
            since: Only changes at or after this time (unix seconds or ISO-8601); None, no bound.
            before: Only changes before this time; None, no bound.
            limit: At most this many entries (1 to 10,000).
            after: A previous page's `next_cursor`; None for the first page.

        Returns:
            A page of history entries, newest first.
        """
        wanted = ScopePolicy.of(_values(scope)) if _values(scope) else ScopePolicy()
        events = tuple(validation.choice("event", e, HISTORY_EVENTS) for e in _values(event))
        since_at = validation.optional_timestamp("since", since)
        before_at = validation.optional_timestamp("before", before)
        limit = validation.limit(limit)
        h = history_table
        conditions: list[ColumnElement[bool]] = []
        if events:
            conditions.append(h.c.event.in_(events))
        if since_at is not None:
            conditions.append(h.c.at >= since_at)
        if before_at is not None:
            conditions.append(h.c.at < before_at)
        fences = self._fences(wanted)
        present = table.c.id.label("present")
        stmt = select(h, present).select_from(h.outerjoin(table, table.c.id == h.c.record_id))
        if fences:
            conditions.append(or_(and_(*fences), table.c.id.is_(None)))
        stmt = stmt.where(*conditions).order_by(h.c.id.desc()).limit(limit + 1)
        # A forgotten record's entry is shown where its scope is, which only Python can read:
        # entries of records forgotten elsewhere are passed over, and more are read until the
        # page is full, so that a page and its cursor are the same whatever lies outside.
        entries: list[HistoryEntry] = []
        with self._store.read() as conn:
            last = self._cursor(conn, after)
            while True:
                page_stmt = stmt if last is None else stmt.where(h.c.id < last)
                rows = conn.execute(page_stmt).all()
                entries += [
                    _entry(row)
                    for row in rows
                    if not fences
                    or row.present is not None
                    or _forgotten_within(_entry(row), self._scopes, wanted)
                ]
                if len(entries) > limit or len(rows) <= limit:
                    break
                last = rows[-1].id
            more = len(entries) > limit
            entries = entries[:limit]
            next_cursor = self._next_cursor(conn, entries[-1]) if more and entries else None
        return Page(entries, next_cursor)

    def _next_cursor(self, conn: Connection, last: HistoryEntry) -> str:
        if not self._scopes.restricted:
            return str(last.id)
        place = ordinals(conn, {last.id: last.record_id}).get(last.id, 0)
        body = json.dumps([last.record_id, place], separators=(",", ":")).encode()
        return _PLACE_PREFIX + base64.urlsafe_b64encode(body).decode("ascii").rstrip("=")

    def _cursor(self, conn: Connection, value: str | int | None) -> int | None:
        """The id of the last entry a page looked at, from its cursor (a confined caller's
        names the entry by record and place, and must name one of its scopes)."""
        if value is None:
            return None
        if isinstance(value, str) and value.startswith(_PLACE_PREFIX):
            record_id, place = _place(value)
            found = entry_at(conn, record_id, place)
            if found is None or (
                self._scopes.restricted and outside(conn, self._scopes, [record_id])
            ):
                raise _not_a_cursor(value)
            return found
        if self._scopes.restricted:
            raise _not_a_cursor(value)
        return _cursor(value)


def _forgotten_within(entry: HistoryEntry, *policies: ScopePolicy) -> bool:
    """A forgotten record's entry, shown where every policy admits its scope."""
    if entry.event != "forgotten":
        return False
    return all(forgotten_in(entry, policy) for policy in policies if policy.restricted)


def _entry(row: Any) -> HistoryEntry:
    return HistoryEntry.from_stored(row.id, row.record_id, row.event, row.at, row.changes)


def _grouped(conn: Connection, column: Any, policy: list[ColumnElement[bool]]) -> dict[str, int]:
    rows = conn.execute(select(column, func.count()).where(*policy).group_by(column)).all()
    return {value: int(number) for value, number in rows}


def _values(value: str | Iterable[str] | None) -> list[str]:
    if value is None:
        return []
    if isinstance(value, str):
        return [value]
    return list(value)


def _cursor(value: str | int) -> int:
    """A changes page's cursor: the id of the last entry it looked at."""
    if isinstance(value, int) and not isinstance(value, bool) and value > 0:
        return value
    if isinstance(value, str) and value.isdecimal() and value.isascii() and len(value) <= 19:
        return int(value)
    raise _not_a_cursor(value)


def _place(value: str) -> tuple[str, int]:
    """A confined caller's cursor: the record of the last entry and its place there."""
    body = value[len(_PLACE_PREFIX) :]
    try:
        found = json.loads(base64.urlsafe_b64decode(body + "=" * (-len(body) % 4)))
    except (binascii.Error, ValueError, RecursionError) as exc:
        raise _not_a_cursor(value) from exc
    if (
        isinstance(found, list)
        and len(found) == 2
        and isinstance(found[0], str)
        and len(found[0]) <= 1_024
        and isinstance(found[1], int)
        and not isinstance(found[1], bool)
        and 0 < found[1] < 2**31
    ):
        return found[0], found[1]
    raise _not_a_cursor(value)


def _not_a_cursor(value: object) -> InvalidInput:
    return InvalidInput(f"not a cursor of memory changes (a next_cursor they gave): {value!r}")
