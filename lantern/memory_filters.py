"""Which memory records a listing or search returns, in what order, and where a page ends.

`memory list` and `memory search` share these filters, so a filter means the same in both, in
the CLI and in the Python API. Every filter is a condition on visible fields; none of them
needs anything but the record row, except `cites`, which looks at `memory_refs`.

Paging uses a cursor rather than an offset: the cursor holds the list-order keys of the last
record returned, and the next page starts strictly after them. Records inserted or removed
meanwhile shift an offset, never a cursor; a page neither repeats nor skips a record that
stayed put. A cursor is `c1_` and the base64url of those keys as JSON: opaque to use, readable
when debugging.
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from sqlalchemy import ColumnElement, and_, literal, or_, tuple_

from lantern import validation
from lantern.errors import InvalidInput
from lantern.memory_refs import cites_clause
from lantern.models import memory_records as table
from lantern.records import MemoryRecord

# The documented list order: active first (status words sort alphabetically with `active`
# first, so ordering by the column keeps the index walk that a CASE expression would prevent),
# then higher priority, higher urgency, newer update, and the id to break ties.
LIST_ORDER = (
    table.c.status,
    table.c.priority.desc(),
    table.c.urgency.desc(),
    table.c.updated_at.desc(),
    table.c.id,
)

CURSOR_PREFIX = "c1_"


@dataclass(frozen=True, slots=True)
class MemoryFilter:
    """Validated filters; build one with `MemoryFilter.build(...)`."""

    scopes: tuple[tuple[str, bool], ...] = ()
    """`(text, is_prefix)` pairs: a record matches any of them."""
    kinds: tuple[str, ...] = ()
    status: str = "active"
    min_priority: int | None = None
    min_urgency: int | None = None
    min_confidence: float | None = None
    updated_since: int | None = None
    """Inclusive: `updated_at >= updated_since`."""
    updated_before: int | None = None
    """Exclusive: `updated_at < updated_before`."""
    cites: tuple[tuple[str, str], ...] = ()
    """`(type, id)` pairs: a record matches when it cites any of them."""
    include_expired: bool = False
    through_chunks: bool = False
    """A cited `source:ID` also matches records citing that source's chunks."""

    @classmethod
    def build(
        cls,
        *,
        scope: str | Iterable[str] | None = None,
        kind: str | Iterable[str] | None = None,
        status: str = "active",
        min_priority: int | None = None,
        min_urgency: int | None = None,
        min_confidence: float | None = None,
        updated_since: int | str | None = None,
        updated_before: int | str | None = None,
        cites: Any = None,
        include_expired: bool = False,
    ) -> MemoryFilter:
        cited = [] if cites is None else [cites] if isinstance(cites, str | dict) else cites
        return cls(
            scopes=tuple(validation.scope_pattern(value) for value in _as_list(scope)),
            kinds=tuple(validation.kind(value) for value in _as_list(kind)),
            status=validation.status_filter(status),
            min_priority=validation.optional_percent("min_priority", min_priority),
            min_urgency=validation.optional_percent("min_urgency", min_urgency),
            min_confidence=_optional_confidence(min_confidence),
            updated_since=validation.optional_timestamp("updated_since", updated_since),
            updated_before=validation.optional_timestamp("updated_before", updated_before),
            cites=tuple(validation.ref_key(value) for value in cited),
            include_expired=bool(include_expired),
        )

    def clauses(self, dialect: str, at: int) -> list[ColumnElement[bool]]:
        """The WHERE conditions, evaluated at time `at` (for expiry)."""
        found: list[ColumnElement[bool]] = []
        if self.scopes:
            found.append(scope_clause(dialect, self.scopes))
        if self.kinds:
            found.append(_equal_or_in(table.c.kind, self.kinds))
        if self.status != "all":
            found.append(table.c.status == self.status)
        if self.min_priority is not None:
            found.append(table.c.priority >= self.min_priority)
        if self.min_urgency is not None:
            found.append(table.c.urgency >= self.min_urgency)
        if self.min_confidence is not None:
            found.append(table.c.confidence >= self.min_confidence)
        if self.updated_since is not None:
            found.append(table.c.updated_at >= self.updated_since)
        if self.updated_before is not None:
            found.append(table.c.updated_at < self.updated_before)
        if self.cites:
            found.append(cites_clause(self.cites, through_chunks=self.through_chunks))
        if not self.include_expired:
            found.append(or_(table.c.expires_at.is_(None), table.c.expires_at > at))
        return found


def _optional_confidence(value: object) -> float | None:
    if value is None:
        return None
    try:
        return validation.confidence(value)
    except InvalidInput as exc:
        raise InvalidInput(exc.message.replace("confidence", "min_confidence", 1)) from exc


def _as_list(value: str | Iterable[str] | None) -> list[str]:
    if value is None:
        return []
    if isinstance(value, str):
        return [value]
    return list(value)


def _equal_or_in(column: Any, values: tuple[str, ...]) -> ColumnElement[bool]:
    # A single value as `=`, which every planner reads as an index equality.
    result: ColumnElement[bool] = column == values[0] if len(values) == 1 else column.in_(values)
    return result


def scope_clause(dialect: str, patterns: Iterable[tuple[str, bool]]) -> ColumnElement[bool]:
    """Exact scopes and scope prefixes, any of them.

    No pattern language reaches the database: an exact scope is compared with `=`; a prefix
    becomes a range on SQLite (`scope >= prefix AND scope < next`, in the BINARY order of
    UTF-8, which the index serves; LIKE would ignore ASCII case there) and an escaped LIKE on
    PostgreSQL (whose collation may not order strings bytewise). So `%`, `_`, `/` and `*` in a
    scope are ordinary characters.
    """
    exact = tuple(text for text, prefix in patterns if not prefix)
    conditions: list[ColumnElement[bool]] = []
    if exact:
        conditions.append(_equal_or_in(table.c.scope, exact))
    for text, prefix in patterns:
        if prefix:
            conditions.append(_prefix(dialect, text))
    return conditions[0] if len(conditions) == 1 else or_(*conditions)


def _prefix(dialect: str, prefix: str) -> ColumnElement[bool]:
    if not prefix:
        return literal(True)
    if dialect == "postgresql":
        escaped = prefix.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
        return table.c.scope.like(escaped + "%", escape="\\")
    upper = next_string(prefix)
    lower = table.c.scope >= prefix
    return lower if upper is None else and_(lower, table.c.scope < upper)


def next_string(prefix: str) -> str | None:
    """The least string greater than every string that starts with `prefix`, in code point
    order (which is UTF-8's byte order); None when there is none (`prefix` is all U+10FFFF).

    Surrogates cannot be stored, so the character after U+D7FF is U+E000.
    """
    chars = list(prefix)
    while chars:
        last = ord(chars.pop())
        if last < 0x10FFFF:
            following = 0xE000 if last == 0xD7FF else last + 1
            return "".join(chars) + chr(following)
    return None


# --- cursors ---------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class CursorKey:
    """The list-order keys of the last record of a page."""

    status: str
    priority: int
    urgency: int
    updated_at: int
    id: str


def cursor_for(record: MemoryRecord) -> str:
    """The cursor that continues a listing after `record`."""
    keys = [record.status, record.priority, record.urgency, record.updated_at, record.id]
    encoded = base64.urlsafe_b64encode(json.dumps(keys, separators=(",", ":")).encode())
    return CURSOR_PREFIX + encoded.decode("ascii").rstrip("=")


def parse_cursor(value: object) -> CursorKey:
    if not isinstance(value, str) or not value.startswith(CURSOR_PREFIX):
        raise InvalidInput(f"not a cursor from a previous page: {value!r}")
    body = value[len(CURSOR_PREFIX) :]
    try:
        raw = base64.urlsafe_b64decode(body + "=" * (-len(body) % 4))
        keys = json.loads(raw.decode("utf-8"))
    except (binascii.Error, ValueError) as exc:
        raise InvalidInput(f"not a cursor from a previous page: {value!r}") from exc
    if not (
        isinstance(keys, list)
        and len(keys) == 5
        and isinstance(keys[0], str)
        and all(isinstance(key, int) and not isinstance(key, bool) for key in keys[1:4])
        and isinstance(keys[4], str)
    ):
        raise InvalidInput(f"not a cursor from a previous page: {value!r}")
    return CursorKey(*keys)


def after_branches(key: CursorKey, *, all_statuses: bool) -> list[ColumnElement[bool]]:
    """Conditions whose union is "after `key` in the list order", each one index-seekable.

    The order mixes directions (status and id ascending, the rest descending), so no single
    row-value comparison expresses it, and the equivalent OR of ANDs makes SQLite scan from the
    start of the scope (measured: 53 ms at 300k records against 0.07 ms). Each branch below is
    an equality prefix plus one range the composite index can seek to; the caller runs them as
    a UNION ALL of small ordered queries.
    """
    same = table.c.status == key.status
    branches: list[ColumnElement[bool]] = [
        and_(
            same,
            table.c.priority == key.priority,
            table.c.urgency == key.urgency,
            table.c.updated_at == key.updated_at,
            table.c.id > key.id,
        ),
        and_(
            same,
            tuple_(table.c.priority, table.c.urgency, table.c.updated_at)
            < tuple_(key.priority, key.urgency, key.updated_at),
        ),
    ]
    if all_statuses:
        branches.append(table.c.status > key.status)
    return branches
