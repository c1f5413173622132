"""The entity repository's reads: entities listed and shown with their counts, the chunks
that mention one, and how many stored chunks the extractor has still to read.

What is counted and shown of memory records stays within the caller's scopes (`core`), and a
confined caller reads every name folded to lowercase and ordered so
(`lantern.entities.names.folded`): the stored spelling is the first writer's, who may have
written outside its scopes.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

from sqlalchemy import ColumnElement, Connection, and_, exists, func, or_, select, tuple_

from lantern import validation
from lantern.entities import cursor, links
from lantern.entities import names as entity_names
from lantern.entities.core import EntityCore
from lantern.entities.extraction import EXTRACTOR_VERSION
from lantern.entities.records import EntityChunk, EntitySummary
from lantern.store.models import (
    chunk_entities,
    chunks,
    entities,
    entity_scans,
    memory_entities,
    memory_records,
    sources,
)

ChunkPage = tuple[list[EntityChunk], str | None]

LIST_ORDERS = ("name", "count")
EXCERPT_BEFORE = 60
EXCERPT_AFTER = 120


class EntityReads(EntityCore):
    """Lists and shows entities and the chunks that mention them."""

    def list(
        self,
        *,
        kind: str | Sequence[str] | None = None,
        order: str = "name",
        limit: int = 100,
        offset: int = 0,
    ) -> list[EntitySummary]:
        """Entities with their counts: by kind, then name (`order="name"`), or the most linked
        first (`order="count"`: chunks and records together, then kind and name).

        Args:
            kind: Only entities of these kinds (`person`, `url`...), one or several; None, every
                kind.
            order: `name` or `count`.
            limit: At most this many entities (1 to 10,000).
            offset: Skip this many first.
        """
        kinds = [entity_names.kind(value) for value in _as_list(kind)]
        validation.choice("order", order, LIST_ORDERS)
        checked_limit = validation.limit(limit)
        checked_offset = validation.offset(offset)
        stmt = self._summaries()
        if kinds:
            stmt = stmt.where(entities.c.kind.in_(kinds))
        name = func.lower(entities.c.name) if self._scopes.restricted else entities.c.name
        if order == "count":
            total = stmt.selected_columns.chunk_count + stmt.selected_columns.memory_count
            stmt = stmt.order_by(total.desc(), entities.c.kind, name, entities.c.id)
        else:
            stmt = stmt.order_by(entities.c.kind, name, entities.c.id)
        stmt = stmt.limit(checked_limit).offset(checked_offset)
        with self._store.read() as conn:
            return [self._summary(row) for row in conn.execute(stmt)]

    def get(self, entity: str) -> EntitySummary:
        """One entity (`KIND:NAME` or its id) with its counts; `NotFound` if there is none, or
        none the caller may see.

        Args:
            entity: `KIND:NAME` (`person:Ada Lovelace`) or the entity's id (`ent_...`).
        """
        key = entity_names.key(entity)
        with self._store.read() as conn:
            return self._require(conn, key)

    def chunks(self, entity: str, *, limit: int = 20, after: str | None = None) -> ChunkPage:
        """The chunks that mention an entity, by source URI and then place in the source, one
        page at a time; the page and the cursor that continues it (None on the last page).

        Args:
            entity: `KIND:NAME` or the entity's id.
            limit: At most this many chunks (1 to 10,000).
            after: A previous page's cursor; None for the first page.

        Raises:
            NotFound: No such entity, or none the caller may see.
        """
        key = entity_names.key(entity)
        checked_limit = validation.limit(limit)
        position = None if after is None else cursor.chunk_position(after)
        with self._store.read() as conn:
            found = self._require(conn, key)
            stmt = (
                select(
                    chunks.c.id,
                    chunks.c.source_id,
                    sources.c.uri,
                    chunks.c.ordinal,
                    chunks.c.start_offset,
                    chunks.c.end_offset,
                    chunks.c.text,
                )
                .select_from(
                    chunk_entities.join(chunks, chunks.c.id == chunk_entities.c.chunk_id).join(
                        sources, sources.c.id == chunks.c.source_id
                    )
                )
                .where(chunk_entities.c.entity_id == found.id)
                .order_by(sources.c.uri, chunks.c.ordinal, chunks.c.id)
                .limit(checked_limit + 1)
            )
            if position is not None:
                stmt = stmt.where(
                    tuple_(sources.c.uri, chunks.c.ordinal, chunks.c.id) > tuple_(*position)
                )
            rows = conn.execute(stmt).all()
        page = [
            EntityChunk(
                row.id,
                row.source_id,
                row.uri,
                row.ordinal,
                row.start_offset,
                row.end_offset,
                excerpt(row.text, found),
            )
            for row in rows[:checked_limit]
        ]
        more = len(rows) > checked_limit
        last = page[-1] if page else None
        next_cursor = (
            cursor.encode(cursor.CHUNKS_PREFIX, [last.uri, last.ordinal, last.chunk_id])
            if more and last is not None
            else None
        )
        return page, next_cursor

    def _summaries(self) -> Any:
        chunk_count = (
            select(func.count())
            .where(chunk_entities.c.entity_id == entities.c.id)
            .scalar_subquery()
            .label("chunk_count")
        )
        fenced = self._policy()
        memory_count = (
            select(func.count())
            .select_from(
                memory_entities.join(
                    memory_records, memory_records.c.id == memory_entities.c.record_id
                )
            )
            .where(memory_entities.c.entity_id == entities.c.id, *fenced)
            .scalar_subquery()
            .label("memory_count")
        )
        stmt = select(entities.c.id, entities.c.name, entities.c.kind, chunk_count, memory_count)
        if self._scopes.restricted:
            visible_record = (
                select(memory_entities.c.record_id)
                .join(memory_records, memory_records.c.id == memory_entities.c.record_id)
                .where(memory_entities.c.entity_id == entities.c.id, *fenced)
                .exists()
            )
            stmt = stmt.where(
                or_(exists().where(chunk_entities.c.entity_id == entities.c.id), visible_record)
            )
        return stmt

    def _require(self, conn: Connection, key: entity_names.EntityKey) -> EntitySummary:
        if isinstance(key, str):
            condition = entities.c.id == key
        else:
            condition = or_(
                entities.c.id == key.id,
                and_(entities.c.kind == key.kind, entities.c.name == key.name),
            )
        row = conn.execute(self._summaries().where(condition).limit(1)).first()
        if row is None:
            raise links.missing(key)
        return self._summary(row)

    def _summary(self, row: Any) -> EntitySummary:
        found = EntitySummary(*row)
        if self._scopes.restricted:
            return dataclasses.replace(found, name=entity_names.folded(found.name))
        return found

    def pending(self) -> int:
        """How many stored chunks this version of the extractor has not read."""
        with self._store.read() as conn:
            return int(
                conn.execute(
                    select(func.count()).select_from(chunks).where(unscanned())
                ).scalar_one()
            )


def unscanned() -> ColumnElement[bool]:
    """The condition on `chunks` that this version of the extractor has not read the chunk."""
    return ~exists().where(
        entity_scans.c.chunk_id == chunks.c.id, entity_scans.c.extractor >= EXTRACTOR_VERSION
    )


def excerpt(text: str, entity: EntitySummary) -> str:
    """About a line of `text` around the first mention of the entity's name (its start when
    the name does not occur), with … where it was cut, whitespace made single spaces."""
    at = text.lower().find(entity.name.lower())
    if at < 0:
        start, end = 0, EXCERPT_BEFORE + EXCERPT_AFTER
    else:
        start = max(0, at - EXCERPT_BEFORE)
        end = at + len(entity.name) + EXCERPT_AFTER
    cut = " ".join(text[start:end].split())
    return ("…" if start > 0 else "") + cut + ("…" if end < len(text) else "")


def _as_list(value: str | Sequence[str] | None) -> list[str]:
    if value is None:
        return []
    return [value] if isinstance(value, str) else list(value)
