"""`lantern inspect`: the whole store at a glance, read in one transaction.

Everything here is a count or a maximum over visible fields, so an agent (or a person) can see
what a store holds and whether anything needs attention (expired records still active, references
that dangle) without reading it all.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sqlalchemy import Connection, func, select

from lantern.memory import refs as memory_refs
from lantern.store import migrations
from lantern.store.engine import Store
from lantern.store.models import chunks, memory_history, memory_records, sources
from lantern.validation import MEMORY_KINDS, STATUSES, JSONObject

TOP_SCOPES = 10


@dataclass(frozen=True, slots=True)
class Inspection:
    """What `lantern inspect` shows; `to_json` is its documented JSON shape."""

    url: str
    path: Path | None
    size_bytes: int
    revision: str | None
    journal_mode: str | None
    sources: int
    chunks: int
    memories: int
    memories_by_kind: Mapping[str, int]
    memories_by_status: Mapping[str, int]
    top_scopes: tuple[tuple[str, int], ...]
    expired_active: int
    dangling_refs: int
    history_entries: int
    last_write_at: int | None

    def to_json(self) -> JSONObject:
        """The summary as `inspect --json` prints it."""
        return {
            "url": self.url,
            "path": None if self.path is None else str(self.path),
            "size_bytes": self.size_bytes,
            "revision": self.revision,
            "journal_mode": self.journal_mode,
            "sources": self.sources,
            "chunks": self.chunks,
            "memories": {
                "total": self.memories,
                "by_kind": dict(self.memories_by_kind),
                "by_status": dict(self.memories_by_status),
                "top_scopes": [{"scope": s, "count": n} for s, n in self.top_scopes],
                "expired_active": self.expired_active,
            },
            "dangling_refs": self.dangling_refs,
            "history_entries": self.history_entries,
            "last_write_at": self.last_write_at,
        }


def inspect_store(store: Store, *, url: str, size_bytes: int) -> Inspection:
    """Count everything in one read transaction (one consistent snapshot)."""
    at = store.clock()
    with store.read() as conn:
        state = migrations.read_state(conn, store.location)
        by_kind = _grouped(conn, memory_records.c.kind)
        by_status = _grouped(conn, memory_records.c.status)
        scopes = conn.execute(
            select(memory_records.c.scope, func.count())
            .group_by(memory_records.c.scope)
            .order_by(func.count().desc(), memory_records.c.scope)
            .limit(TOP_SCOPES)
        ).all()
        last_history = conn.execute(
            select(memory_history.c.at).order_by(memory_history.c.id.desc()).limit(1)
        ).scalar_one_or_none()
        latest = [
            _scalar(conn, select(func.max(sources.c.updated_at))),
            _scalar(conn, select(func.max(memory_records.c.updated_at))),
            last_history,
        ]
        return Inspection(
            url=url,
            path=store.location.path,
            size_bytes=size_bytes,
            revision=state.effective_revision,
            journal_mode=_journal_mode(conn),
            sources=_count(conn, sources),
            chunks=_count(conn, chunks),
            memories=sum(by_status.values()),
            memories_by_kind={kind: by_kind.get(kind, 0) for kind in MEMORY_KINDS},
            memories_by_status={status: by_status.get(status, 0) for status in STATUSES},
            top_scopes=tuple((scope, count) for scope, count in scopes),
            expired_active=_scalar(
                conn,
                select(func.count()).where(
                    memory_records.c.status == "active", memory_records.c.expires_at <= at
                ),
            )
            or 0,
            dangling_refs=memory_refs.dangling_count(conn),
            history_entries=_count(conn, memory_history),
            last_write_at=max((value for value in latest if value is not None), default=None),
        )


def _grouped(conn: Connection, column: Any) -> dict[str, int]:
    rows = conn.execute(select(column, func.count()).group_by(column)).all()
    return {value: count for value, count in rows}


def _count(conn: Connection, table: Any) -> int:
    return _scalar(conn, select(func.count()).select_from(table)) or 0


def _scalar(conn: Connection, stmt: Any) -> Any:
    return conn.execute(stmt).scalar_one_or_none()


def _journal_mode(conn: Connection) -> str | None:
    if conn.dialect.name != "sqlite":
        return None
    mode: str = conn.exec_driver_sql("PRAGMA journal_mode").scalar_one()
    return mode
