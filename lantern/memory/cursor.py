"""Cursors: where a page of a listing ends and the next one starts.

A cursor holds the list-order keys of the last record returned, and the next page starts
strictly after them. Records inserted or removed meanwhile shift an offset, never a cursor; a
page neither repeats nor skips a record that stayed put. A cursor is `c1_` and the base64url of
those keys as JSON: opaque to use, readable when debugging.
"""

from __future__ import annotations

import base64
import binascii
import json
from dataclasses import dataclass

from sqlalchemy import ColumnElement, and_, or_, tuple_

from lantern.errors import InvalidInput
from lantern.memory.filters import Part, Values, bound
from lantern.memory.records import MemoryRecord
from lantern.store.models import memory_records as table

CURSOR_PREFIX = "c1_"


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


def after_branches(key: CursorKey, *, all_statuses: bool) -> Part:
    """Conditions whose union is "after `key` in the list order", each one index-seekable.

    The order mixes directions (status and id ascending, the rest descending), so no single
    row-value comparison expresses it, and the equivalent OR of ANDs makes SQLite scan from the
    start of the scope (measured: 53 ms at 300k records against 0.07 ms). Each branch is an
    equality prefix plus one range the composite index can seek to; the caller runs them as a
    UNION ALL of small ordered queries (or ORs them, inside a search). The values are named
    `after_*`; the part builds the OR of the branches, `branches` builds them one by one.
    """
    values: Values = {
        "after_status": key.status,
        "after_priority": key.priority,
        "after_urgency": key.urgency,
        "after_updated_at": key.updated_at,
        "after_id": key.id,
    }
    return values, lambda v: or_(*branches(v, all_statuses=all_statuses))


def branches(values: Values, *, all_statuses: bool) -> list[ColumnElement[bool]]:
    """The branches of `after_branches`, one condition each."""
    same = table.c.status == bound(values, "after_status")
    found: list[ColumnElement[bool]] = [
        and_(
            same,
            table.c.priority == bound(values, "after_priority"),
            table.c.urgency == bound(values, "after_urgency"),
            table.c.updated_at == bound(values, "after_updated_at"),
            table.c.id > bound(values, "after_id"),
        ),
        and_(
            same,
            tuple_(table.c.priority, table.c.urgency, table.c.updated_at)
            < tuple_(
                bound(values, "after_priority"),
                bound(values, "after_urgency"),
                bound(values, "after_updated_at"),
            ),
        ),
    ]
    if all_statuses:
        found.append(table.c.status > bound(values, "after_status"))
    return found
