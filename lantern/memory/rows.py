"""Memory records as rows: reading them fast, and fetching them by id within a scope policy."""

from __future__ import annotations

import dataclasses
from operator import itemgetter
from typing import Any

from sqlalchemy import Connection, Row, bindparam, select

from lantern.errors import NotFound
from lantern.memory.records import MemoryRecord, freeze_refs
from lantern.memory.scopes import ScopePolicy
from lantern.store.models import memory_records as table
from lantern.store.prepared import Prepared

# Where each record field sits in a `select(memory_records)` row (the table's column order,
# which search and the paging union keep, extra columns after): reading rows by position is
# several times faster than by attribute name, and this is the hottest loop of a listing.
_FIELDS = itemgetter(
    *(list(table.c.keys()).index(field.name) for field in dataclasses.fields(MemoryRecord))
)
SCORE_COLUMN = len(table.c)  # a search row: the record's columns, then its score


def row_to_record(row: Row[Any]) -> MemoryRecord:
    """A frozen record from a `memory_records` row (also used by export)."""
    (
        record_id,
        kind,
        content,
        scope,
        priority,
        urgency,
        confidence,
        status,
        created_at,
        updated_at,
        expires_at,
        supersedes_id,
        source_refs,
    ) = _FIELDS(row)
    record: MemoryRecord = _NEW(MemoryRecord)
    _SLOT_ID(record, record_id)
    _SLOT_KIND(record, kind)
    _SLOT_CONTENT(record, content)
    _SLOT_SCOPE(record, scope)
    _SLOT_PRIORITY(record, priority)
    _SLOT_URGENCY(record, urgency)
    _SLOT_CONFIDENCE(record, confidence)
    _SLOT_STATUS(record, status)
    _SLOT_CREATED_AT(record, created_at)
    _SLOT_UPDATED_AT(record, updated_at)
    _SLOT_EXPIRES_AT(record, expires_at)
    _SLOT_SUPERSEDES_ID(record, supersedes_id)
    _SLOT_SOURCE_REFS(record, freeze_refs(source_refs))
    return record


# A frozen dataclass's __init__ sets each field through object.__setattr__, which costs twice
# what the slots' own descriptors do, and a listing builds its records by the thousand: a
# stored row fills the slots directly (the record is as frozen as any other afterwards).
_NEW = object.__new__
(
    _SLOT_ID,
    _SLOT_KIND,
    _SLOT_CONTENT,
    _SLOT_SCOPE,
    _SLOT_PRIORITY,
    _SLOT_URGENCY,
    _SLOT_CONFIDENCE,
    _SLOT_STATUS,
    _SLOT_CREATED_AT,
    _SLOT_UPDATED_AT,
    _SLOT_EXPIRES_AT,
    _SLOT_SUPERSEDES_ID,
    _SLOT_SOURCE_REFS,
) = (MemoryRecord.__dict__[field.name].__set__ for field in dataclasses.fields(MemoryRecord))


# Hot statements built once, with bound parameters: building a statement per call (and its
# cache key) cost more than running it.
_BY_ID = select(table).where(table.c.id == bindparam("record_id"))
_FETCH = Prepared(_BY_ID)
_FETCH_FOR_UPDATE = Prepared(_BY_ID.with_for_update())


def fetch(
    conn: Connection, record_id: str, scopes: ScopePolicy, *, for_update: bool = False
) -> MemoryRecord | None:
    """The record with this id, or None when there is none or it is outside `scopes`."""
    statement = _FETCH_FOR_UPDATE if for_update else _FETCH
    rows = statement.rows(conn, {"record_id": record_id})
    if not rows:
        return None
    record = row_to_record(rows[0])
    return record if scopes.allows(record.scope) else None


def require(
    conn: Connection, record_id: str, scopes: ScopePolicy, *, for_update: bool = False
) -> MemoryRecord:
    if not isinstance(record_id, str) or not record_id.strip():
        raise NotFound("a memory id is required")
    record = fetch(conn, record_id, scopes, for_update=for_update)
    if record is None:
        raise NotFound(f"no memory record with id {record_id!r}")
    return record
