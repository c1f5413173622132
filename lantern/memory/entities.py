"""A memory record's entities: attached by the caller, kept in the record's history; and an
entity shown with the records about it.

Linking an entity to a record is a change to the record like a change of its references: it
is written in the record's transaction, moves `updated_at`, and is appended to the history as
an `updated` entry whose `before` and `after` hold `entities`, the record's entities as
`KIND:NAME` texts in order (a record created with entities has them in its `created` entry).
Attaching an entity the record has, or detaching one it does not have, changes nothing.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import TYPE_CHECKING

from sqlalchemy import Connection

from lantern.entities import cursor, links
from lantern.entities import names as entity_names
from lantern.entities.records import EntityChunk, EntityRef, LinkChange
from lantern.errors import InvalidInput
from lantern.memory import history
from lantern.memory.changes import set_fields
from lantern.memory.core import MemoryCore
from lantern.memory.records import EntityView, MemoryRecord
from lantern.memory.rows import require

if TYPE_CHECKING:
    from lantern.entities.repository import EntityRepository
    from lantern.memory.reads import MemoryReads


def texts(refs: Sequence[EntityRef]) -> list[str]:
    """Entities as the history shows them: `KIND:NAME`, sorted."""
    return sorted(f"{ref.kind}:{ref.name}" for ref in refs)


def attach(
    conn: Connection, record: MemoryRecord, wanted: Sequence[entity_names.EntityName], at: int
) -> tuple[MemoryRecord, list[LinkChange]]:
    """Link `wanted` to a stored record (in the caller's transaction); the record as it is
    then, and what changed for each entity."""
    if not wanted:
        return record, []
    before = links.of_record(conn, record.id)
    ids = links.ensure(conn, wanted)
    linked = {ref.id for ref in before}
    new = [(record.id, ids[name]) for name in wanted if ids[name] not in linked]
    links.attach_to_records(conn, new)
    stored = links.lookup(conn, list(ids.values()))
    changes = [
        LinkChange(stored[ids[name]], "record", record.id, ids[name] not in linked)
        for name in wanted
    ]
    if new:
        record = _changed(conn, record, before, at)
    return record, changes


def detach(
    conn: Connection,
    record: MemoryRecord,
    keys: Sequence[entity_names.EntityKey],
    at: int,
    fence: links.Fence | None = None,
) -> tuple[MemoryRecord, list[LinkChange]]:
    """Unlink entities (by `KIND:NAME` or id) from a stored record; removing one it does not
    have changes nothing. An entity that does not exist at all, or none a caller confined by
    `fence` may know of, is `NotFound`."""
    before = links.of_record(conn, record.id)
    found = links.lookup_visible(conn, keys, fence)
    linked = {ref.id for ref in before}
    changes: list[LinkChange] = []
    for key in keys:
        ref = found.get(key)
        if ref is None:
            raise links.missing(key)
        removed = ref.id in linked and links.detach_from_record(conn, record.id, ref.id)
        changes.append(LinkChange(ref, "record", record.id, removed))
    if any(change.changed for change in changes):
        record = _changed(conn, record, before, at)
    return record, changes


def _changed(
    conn: Connection, record: MemoryRecord, before: Sequence[EntityRef], at: int
) -> MemoryRecord:
    after = links.of_record(conn, record.id)
    set_fields(conn, record.id, {}, at)
    history.append(
        conn,
        [
            history.entry(
                record.id,
                "updated",
                at,
                before={"entities": texts(before)},
                after={"entities": texts(after)},
            )
        ],
    )
    return dataclasses.replace(record, updated_at=at)


class MemoryEntities(MemoryCore):
    """Attaches entities to records and removes them."""

    def attach_entities(self, record_id: str, entities: str | Sequence[str]) -> list[LinkChange]:
        """Attach entities (`KIND:NAME`, or the id of a stored entity) to a record; one
        `LinkChange` per entity, `changed` False where the record already had it.

        Args:
            record_id: The record (`mem_...`).
            entities: One entity or a list of them (at most 1,000), each `KIND:NAME` or a stored
                entity's id.

        Raises:
            InvalidInput: No entity, or a malformed one.
            NotFound: No such record within the scopes, or an entity id that names nothing.
        """
        wanted = self._names(entities)
        with self._write() as conn:
            record = require(conn, record_id, self._scopes, for_update=True)
            resolved = links.resolve(conn, wanted, self._fence())
            return attach(conn, record, resolved, self._store.clock())[1]

    def detach_entities(self, record_id: str, entities: str | Sequence[str]) -> list[LinkChange]:
        """Detach entities from a record; `changed` False where it did not have one.

        Args:
            record_id: The record (`mem_...`).
            entities: One entity or a list of them, each `KIND:NAME` or a stored entity's id.

        Raises:
            InvalidInput: No entity, or a malformed one.
            NotFound: No such record within the scopes.
        """
        keys = entity_names.keys(entities)
        if not keys:
            raise _none_given()
        with self._write() as conn:
            record = require(conn, record_id, self._scopes, for_update=True)
            return detach(conn, record, keys, self._store.clock(), self._fence())[1]

    def _names(self, entities: str | Sequence[str]) -> list[entity_names.EntityKey]:
        keys = entity_names.keys(entities)
        if not keys:
            raise _none_given()
        return keys


def _none_given() -> InvalidInput:
    return InvalidInput("name at least one entity (KIND:NAME)")


def show_entity(
    entities: EntityRepository, records: MemoryReads, entity: str, *, limit: int, after: str | None
) -> EntityView:
    """An entity with a page of the chunks that mention it and of the records about it (every
    status, in list order, within the scopes of `records`), `limit` of each; `after`, a page's
    `next_cursor`, continues whichever of the two lists is not done.

    Here rather than in `lantern.entities` because the records half is this package's listing,
    which that one sits below; the cursor's format is `lantern.entities.cursor`'s.
    """
    found = entities.get(entity)
    chunks_at, chunks_done, memories_at, memories_done = None, False, None, False
    if after is not None:
        chunks_at, chunks_done, memories_at, memories_done = cursor.show_position(after)
    chunk_page: list[EntityChunk] = []
    next_chunks = None
    if not chunks_done:
        chunk_page, next_chunks = entities.chunks(found.id, limit=limit, after=chunks_at)
    memory_page: list[MemoryRecord] = []
    next_memories = None
    if not memories_done:
        page = records.list(
            entity=found.id, status="all", include_expired=True, limit=limit, after=memories_at
        )
        memory_page, next_memories = list(page), page.next_cursor
    more = next_chunks is not None or next_memories is not None
    return EntityView(
        entity=found,
        chunks=tuple(chunk_page),
        memories=tuple(memory_page),
        next_cursor=cursor.show_cursor(
            next_chunks, next_chunks is None, next_memories, next_memories is None
        )
        if more
        else None,
    )
