"""The history of memory records: every change appended, with the fields before and after.

Nothing here updates a history row, and the database refuses it anyway (triggers of revision
0005). The one removal is `forget`'s: the earlier entries of a forgotten record hold its content,
so they go with it, and a `forgotten` entry without content stays behind.

`changes` is stored with its keys in canonical order (PostgreSQL JSONB's own), so that an entry
reads back byte for byte the same from either engine, and exports compare across engines.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from sqlalchemy import Connection, bindparam, delete, insert, select

from lantern.memory.records import HistoryEntry, MemoryRecord
from lantern.memory.scopes import ScopePolicy
from lantern.store.models import memory_history
from lantern.store.prepared import Prepared
from lantern.validation import canonical_json

# The fields a history entry tracks: everything but the id and the two timestamps (the entry's
# own `at` is the time of the change).
TRACKED_FIELDS = (
    "kind",
    "content",
    "scope",
    "priority",
    "urgency",
    "confidence",
    "status",
    "expires_at",
    "supersedes_id",
    "source_refs",
)

Row = dict[str, Any]


# The tracked fields in canonical key order (shorter first, then bytewise; all ASCII), so that
# a record's fields need no re-ordering: its references are canonical since they were validated.
_CANONICAL_FIELDS = tuple(sorted(TRACKED_FIELDS, key=lambda name: (len(name), name)))


def fields(record: MemoryRecord) -> dict[str, Any]:
    """A record's tracked fields, as JSON values, in canonical key order."""
    rendered = record.to_json()
    return {name: rendered[name] for name in _CANONICAL_FIELDS}


def entry(
    record_id: str,
    event: str,
    at: int,
    *,
    before: Mapping[str, Any] | None,
    after: Mapping[str, Any] | None,
    **extra: Any,
) -> Row:
    """A history row ready to insert."""
    changes = {
        "before": None if before is None else dict(before),
        "after": None if after is None else dict(after),
        **extra,
    }
    return {"record_id": record_id, "event": event, "at": at, "changes": canonical_json(changes)}


def created(record: MemoryRecord, entities: Sequence[str] = ()) -> Row:
    """The `created` entry: every field, and the record's entities (`KIND:NAME`) if any."""
    # Built in canonical order directly: the hottest entry (every add), and re-ordering a
    # whole record's fields cost a quarter of a bulk add.
    after = fields(record)
    if entities:
        after = canonical_json({**after, "entities": sorted(entities)})
    changes = {"after": after, "before": None}
    return {"record_id": record.id, "event": "created", "at": record.created_at, "changes": changes}


def status_change(record: MemoryRecord, event: str, status: str, at: int, **extra: Any) -> Row:
    return entry(
        record.id, event, at, before={"status": record.status}, after={"status": status}, **extra
    )


def diff(before: MemoryRecord, after: MemoryRecord) -> tuple[dict[str, Any], dict[str, Any]]:
    """The tracked fields that differ, as `(before, after)`; both empty when nothing changed."""
    changed = [name for name in _CANONICAL_FIELDS if getattr(before, name) != getattr(after, name)]
    return (
        {name: _json_field(before, name) for name in changed},
        {name: _json_field(after, name) for name in changed},
    )


def _json_field(record: MemoryRecord, name: str) -> Any:
    if name == "source_refs":
        return [dict(ref) for ref in record.source_refs]
    return getattr(record, name)


_APPEND = Prepared(
    insert(memory_history).values(
        record_id=bindparam("record_id"),
        event=bindparam("event"),
        at=bindparam("at"),
        changes=bindparam("changes", type_=memory_history.c.changes.type),
    )
)


def append(conn: Connection, rows: Iterable[Row]) -> None:
    _APPEND.execute_many(conn, list(rows))


def read(conn: Connection, record_id: str, *, event: str | None = None) -> list[HistoryEntry]:
    """A record's entries, oldest first; only those of `event` when given."""
    stmt = (
        select(memory_history)
        .where(memory_history.c.record_id == record_id)
        .order_by(memory_history.c.id)
    )
    if event is not None:
        stmt = stmt.where(memory_history.c.event == event)
    return [
        HistoryEntry.from_stored(row.id, row.record_id, row.event, row.at, row.changes)
        for row in conn.execute(stmt)
    ]


_BATCH = 500


def ordinals(conn: Connection, entry_ids: Mapping[int, str]) -> dict[int, int]:
    """Each entry's place (from 1) among its record's stored entries, by entry id; `entry_ids`
    maps entry ids to their records.

    What a confined caller is shown as an entry's `id`: the ids number the whole log, so their
    gaps would count the changes made outside its scopes; a record's own entries are all within
    the scopes where the record is (a record never changes scope in place).
    """
    wanted = sorted(set(entry_ids.values()))
    last = max(entry_ids, default=0)
    places: dict[int, int] = {}
    for start in range(0, len(wanted), _BATCH):
        counted: dict[str, int] = {}
        rows = conn.execute(
            select(memory_history.c.record_id, memory_history.c.id)
            .where(
                memory_history.c.record_id.in_(wanted[start : start + _BATCH]),
                memory_history.c.id <= last,
            )
            .order_by(memory_history.c.id)
        )
        for record_id, entry_id in rows:
            counted[record_id] = counted.get(record_id, 0) + 1
            if entry_id in entry_ids:
                places[entry_id] = counted[record_id]
    return places


def entry_at(conn: Connection, record_id: str, ordinal: int) -> int | None:
    """The id of a record's `ordinal`-th stored entry (from 1); None when it has fewer."""
    return conn.execute(
        select(memory_history.c.id)
        .where(memory_history.c.record_id == record_id)
        .order_by(memory_history.c.id)
        .limit(1)
        .offset(ordinal - 1)
    ).scalar()


def forget(conn: Connection, record: MemoryRecord, at: int) -> None:
    """Leave only a `forgotten` entry, without content, for a record already deleted.

    The order matters: the triggers allow removing a record's entries only once the record is
    gone and its `forgotten` entry exists.
    """
    append(
        conn,
        [
            entry(
                record.id,
                "forgotten",
                at,
                before={"kind": record.kind, "scope": record.scope, "status": record.status},
                after=None,
            )
        ],
    )
    conn.execute(
        delete(memory_history).where(
            memory_history.c.record_id == record.id, memory_history.c.event != "forgotten"
        )
    )


def was_forgotten(conn: Connection, record_id: str, scopes: ScopePolicy) -> bool:
    """Whether a record with this id, in a scope `scopes` admits, was forgotten."""
    stmt = select(memory_history.c.changes).where(
        memory_history.c.record_id == record_id, memory_history.c.event == "forgotten"
    )
    if not scopes.restricted:
        return conn.execute(stmt.limit(1)).first() is not None
    # A forgotten entry keeps the record's scope (in `before`), and nothing else does.
    return any(
        (scope := forgotten_scope(changes)) is not None and scopes.allows(scope)
        for changes in conn.execute(stmt).scalars()
    )


def forgotten_scope(changes: Any) -> str | None:
    """The scope a `forgotten` entry kept (in `before`), if it holds one."""
    before = changes.get("before") if isinstance(changes, Mapping) else None
    scope = before.get("scope") if isinstance(before, Mapping) else None
    return scope if isinstance(scope, str) else None


def forgotten_in(entry: HistoryEntry, scopes: ScopePolicy) -> bool:
    """A `forgotten` entry of a record whose scope `scopes` admits."""
    scope = forgotten_scope(entry.changes)
    return entry.event == "forgotten" and scope is not None and scopes.allows(scope)
