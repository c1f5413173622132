"""A record's life after it is written: archive, restore, expire, forget."""

from __future__ import annotations

import dataclasses

from sqlalchemy import delete, select, update

from lantern.entities import links as entity_links
from lantern.errors import Conflict, NotFound, PolicyRefused
from lantern.memory import fts, history, identity, recordvectors, topk
from lantern.memory.chains import successor_id
from lantern.memory.changes import set_status
from lantern.memory.core import MemoryCore
from lantern.memory.filters import LIST_ORDER
from lantern.memory.records import ForgetReport, MemoryRecord
from lantern.memory.rows import fetch, require, row_to_record
from lantern.store.engine import translate_errors
from lantern.store.models import memory_records as table
from lantern.store.models import memory_refs as refs_table

_BATCH = 500


class MemoryLifecycle(MemoryCore):
    """Moves records between statuses, and removes them for good."""

    def archive(self, record_id: str) -> MemoryRecord:
        """Retire a record without deleting it; archiving an archived record changes nothing.

        Args:
            record_id: The record (`mem_...`).

        Raises:
            NotFound: No such record within the scopes.
            Conflict: The record is superseded.
        """
        return self._move(
            record_id,
            event="archived",
            status="archived",
            refusal="a superseded record cannot be archived",
        )

    def restore(self, record_id: str) -> MemoryRecord:
        """Make an archived record active again; restoring an active record changes nothing.

        Args:
            record_id: The record (`mem_...`).

        Raises:
            NotFound: No such record within the scopes.
            Conflict: The record is superseded.
        """
        return self._move(
            record_id,
            event="restored",
            status="active",
            refusal="only an archived record can be restored",
        )

    def _move(self, record_id: str, *, event: str, status: str, refusal: str) -> MemoryRecord:
        """Set a record's status, recorded as `event`; a record already there is returned as is.

        A superseded record stays superseded: its successor is what archive and restore act on.
        """
        at = self._store.clock()
        with self._write() as conn:
            record = require(conn, record_id, self._scopes, for_update=True)
            if record.status == status:
                return record
            if record.status == "superseded":
                raise Conflict(
                    f"memory {record_id} is superseded by "
                    f"{successor_id(conn, record_id, self._scopes)}; {refusal}"
                )
            return set_status(conn, record, event, status, at)

    def expire(self, *, dry_run: bool = False) -> list[MemoryRecord]:
        """Archive the active records whose `expires_at` has passed; return them (archived).

        Lantern never does this on its own: the caller decides when. With `dry_run`, nothing
        changes and the records come back as they are.

        Args:
            dry_run: Change nothing; return the records that would be archived, as they are.
        """
        at = self._store.clock()
        due = (
            select(table)
            .where(
                table.c.status == "active",
                table.c.expires_at <= at,
                *self._scopes.clauses(self._store.dialect),
            )
            .order_by(*LIST_ORDER)
        )
        if dry_run:
            with self._store.read() as conn:
                return [row_to_record(row) for row in conn.execute(due)]
        with self._write() as conn:
            records = [row_to_record(row) for row in conn.execute(due.with_for_update())]
            ids = [record.id for record in records]
            for start in range(0, len(ids), _BATCH):
                conn.execute(
                    update(table)
                    .where(table.c.id.in_(ids[start : start + _BATCH]))
                    .values(status="archived", updated_at=at)
                )
            history.append(
                conn, [history.status_change(r, "expired", "archived", at) for r in records]
            )
        return [dataclasses.replace(r, status="archived", updated_at=at) for r in records]

    def forget(self, record_id: str) -> ForgetReport:
        """Delete a record for good, its content included, leaving a `forgotten` history entry.

        Its entity links go with it, and so do the entities that nothing else names (their
        names may be part of what is forgotten).

        On SQLite the content also leaves the file: the write runs with `secure_delete` (deleted
        rows and freed pages are zeroed), the search index is merged so that no old segment
        keeps the words, the record's earlier history entries (which hold its content) are
        removed, and afterwards the write-ahead log is checkpointed and truncated.
        `wal_checkpointed` is False when another connection kept the log in use; the old pages
        then stay in it until the next full checkpoint. A record that superseded this one keeps
        its place, with `supersedes_id` cleared (recorded in its history).

        Args:
            record_id: The record (`mem_...`).

        Returns:
            What was removed, and whether the write-ahead log could be truncated.

        Raises:
            NotFound: No such record within the scopes (or it was forgotten already).
        """
        at = self._store.clock()
        with self._write(index_after=False) as conn:
            if fetch(conn, record_id, self._scopes) is None and history.was_forgotten(
                conn, record_id, self._scopes
            ):
                raise NotFound(f"memory record {record_id!r} was already forgotten")
            record = require(conn, record_id, self._scopes, for_update=True)
            successor_row = conn.execute(
                select(table).where(table.c.supersedes_id == record_id).with_for_update()
            ).first()
            if successor_row is not None:
                successor = row_to_record(successor_row)
                if not self._scopes.allows(successor.scope):
                    # Forgetting would rewrite the successor's link, a write outside the scopes.
                    raise PolicyRefused(
                        f"memory {record_id} cannot be forgotten under a scope restriction: "
                        "the record that superseded it is outside the allowed scopes"
                    )
                conn.execute(
                    update(table).where(table.c.id == successor.id).values(supersedes_id=None)
                )
                history.append(
                    conn,
                    [
                        history.entry(
                            successor.id,
                            "updated",
                            at,
                            before={"supersedes_id": record_id},
                            after={"supersedes_id": None},
                        )
                    ],
                )
            fts.unindex(conn, record_id)
            recordvectors.invalidate(conn, record_id)  # a vector says something of the content too
            conn.execute(delete(refs_table).where(refs_table.c.record_id == record_id))
            entity_links.forget_record(conn, record_id)
            conn.execute(delete(table).where(table.c.id == record_id))
            identity.release(conn, identity.of(record))
            history.forget(conn, record, at)
            fts.merge_all(conn)
        topk.rebuild_after_forget(self, record_id)
        from lantern.semantic import index as vector_index

        vector_index.after_forget(self._store)
        checkpointed = self._truncate_wal() if self._store.dialect == "sqlite" else None
        return ForgetReport(id=record_id, forgotten_at=at, wal_checkpointed=checkpointed)

    def _truncate_wal(self) -> bool:
        """Copy the write-ahead log into the file and cut it to zero bytes; True if it was."""
        with translate_errors(self._store.location), self._store.engine.connect() as conn:
            raw = conn.connection.dbapi_connection
            assert raw is not None
            # On the driver connection: outside any transaction, which a checkpoint needs.
            busy, _frames, _done = raw.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
            return bool(busy == 0)
