"""The memory repository: every rule about memory records, once, for the CLI, API and MCP.

Each public method is one operation in one transaction, timed once. The statements are
SQLAlchemy Core against the mapped tables: the ORM's per-object bookkeeping costs more than the
database work on these small, hot operations, and callers get frozen records either way.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from sqlalchemy import Connection, Row, or_, select, update

from lantern import validation
from lantern.dialect import insert_ignoring_conflicts
from lantern.errors import Conflict, NotFound
from lantern.ids import memory_id
from lantern.models import memory_records as table
from lantern.records import MemoryRecord, freeze_refs
from lantern.store import Store, now

Records = list[MemoryRecord]

# The documented list order: active first (status words sort alphabetically with `active`
# first), then higher priority, higher urgency, newer update, and the id to break ties.
LIST_ORDER = (
    table.c.status,
    table.c.priority.desc(),
    table.c.urgency.desc(),
    table.c.updated_at.desc(),
    table.c.id,
)


class MemoryRepository:
    """Adds, reads, lists and retires memory records in one store."""

    def __init__(self, store: Store) -> None:
        self._store = store

    def add(
        self,
        *,
        kind: str,
        content: str,
        scope: str = "global",
        priority: int = 50,
        confidence: float = 1.0,
        urgency: int = 0,
        expires_at: int | str | None = None,
        supersedes_id: str | None = None,
        source_refs: Sequence[Any] | None = None,
    ) -> MemoryRecord:
        """Write a record, or return the identical one already stored (see `get_or_add`)."""
        record, _created = self.get_or_add(
            kind=kind,
            content=content,
            scope=scope,
            priority=priority,
            confidence=confidence,
            urgency=urgency,
            expires_at=expires_at,
            supersedes_id=supersedes_id,
            source_refs=source_refs,
        )
        return record

    def get_or_add(
        self,
        *,
        kind: str,
        content: str,
        scope: str = "global",
        priority: int = 50,
        confidence: float = 1.0,
        urgency: int = 0,
        expires_at: int | str | None = None,
        supersedes_id: str | None = None,
        source_refs: Sequence[Any] | None = None,
    ) -> tuple[MemoryRecord, bool]:
        """Write a record; `(record, created)`.

        The id is derived from scope, kind and content, so adding the same memory twice creates
        nothing: the stored record comes back unchanged, whatever its status or other fields,
        and `created` is False. Changing those fields is an update; reviving it, a restore.
        """
        values: dict[str, Any] = {
            "kind": validation.kind(kind),
            "content": validation.content(content),
            "scope": validation.scope(scope),
            "priority": validation.percent("priority", priority),
            "urgency": validation.percent("urgency", urgency),
            "confidence": validation.confidence(confidence),
            "expires_at": None
            if expires_at is None
            else validation.timestamp("expires_at", expires_at),
            "supersedes_id": supersedes_id,
            "source_refs": validation.source_refs(source_refs),
        }
        values["id"] = memory_id(values["scope"], values["kind"], values["content"])
        at = now()
        with self._store.write() as conn:
            existing = _fetch(conn, values["id"])
            if existing is not None:
                return existing, False
            if supersedes_id is not None:
                _retire_superseded(conn, supersedes_id, at)
            values.update(status="active", created_at=at, updated_at=at)
            conn.execute(insert_ignoring_conflicts(conn, table).values(values))
            return _require(conn, values["id"]), True

    def get(self, record_id: str) -> MemoryRecord:
        with self._store.read() as conn:
            return _require(conn, record_id)

    def list(
        self,
        *,
        scope: str | Iterable[str] | None = None,
        kind: str | Iterable[str] | None = None,
        status: str = "active",
        limit: int = 50,
        offset: int = 0,
        include_expired: bool = False,
    ) -> Records:
        """Records in the documented order (see LIST_ORDER), filtered by visible fields only."""
        scopes = [validation.scope(s) for s in _as_list(scope)]
        kinds = [validation.kind(k) for k in _as_list(kind)]
        validation.status_filter(status)
        stmt = select(table).order_by(*LIST_ORDER)
        stmt = stmt.limit(validation.limit(limit)).offset(validation.offset(offset))
        if scopes:
            stmt = stmt.where(table.c.scope.in_(scopes))
        if kinds:
            stmt = stmt.where(table.c.kind.in_(kinds))
        if status != "all":
            stmt = stmt.where(table.c.status == status)
        if not include_expired:
            stmt = stmt.where(or_(table.c.expires_at.is_(None), table.c.expires_at > now()))
        with self._store.read() as conn:
            return [_record(row) for row in conn.execute(stmt)]

    def archive(self, record_id: str) -> MemoryRecord:
        """Retire a record without deleting it; archiving an archived record changes nothing."""
        at = now()
        with self._store.write() as conn:
            record = _require(conn, record_id, for_update=True)
            if record.status == "archived":
                return record
            if record.status == "superseded":
                raise Conflict(
                    f"memory {record_id} is superseded by {_successor_id(conn, record_id)}; "
                    "a superseded record cannot be archived"
                )
            conn.execute(
                update(table)
                .where(table.c.id == record_id)
                .values(status="archived", updated_at=at)
            )
            return _require(conn, record_id)


def _as_list(value: str | Iterable[str] | None) -> list[str]:
    if value is None:
        return []
    if isinstance(value, str):
        return [value]
    return list(value)


def _record(row: Row[Any]) -> MemoryRecord:
    return MemoryRecord(
        id=row.id,
        kind=row.kind,
        content=row.content,
        scope=row.scope,
        priority=row.priority,
        urgency=row.urgency,
        confidence=row.confidence,
        status=row.status,
        created_at=row.created_at,
        updated_at=row.updated_at,
        expires_at=row.expires_at,
        supersedes_id=row.supersedes_id,
        source_refs=freeze_refs(row.source_refs),
    )


def _fetch(conn: Connection, record_id: str, *, for_update: bool = False) -> MemoryRecord | None:
    stmt = select(table).where(table.c.id == record_id)
    if for_update:
        stmt = stmt.with_for_update()
    row = conn.execute(stmt).first()
    return None if row is None else _record(row)


def _require(conn: Connection, record_id: str, *, for_update: bool = False) -> MemoryRecord:
    if not isinstance(record_id, str) or not record_id.strip():
        raise NotFound("a memory id is required")
    record = _fetch(conn, record_id, for_update=for_update)
    if record is None:
        raise NotFound(f"no memory record with id {record_id!r}")
    return record


def _successor_id(conn: Connection, record_id: str) -> str:
    successor = conn.execute(
        select(table.c.id).where(table.c.supersedes_id == record_id)
    ).scalar_one_or_none()
    return successor or "a record that no longer exists"


def _retire_superseded(conn: Connection, record_id: str, at: int) -> None:
    """Mark the record being replaced; a record is replaced at most once."""
    old = _require(conn, record_id, for_update=True)
    if old.status == "superseded":
        raise Conflict(
            f"memory {record_id} is already superseded by {_successor_id(conn, record_id)}"
        )
    conn.execute(
        update(table).where(table.c.id == record_id).values(status="superseded", updated_at=at)
    )
