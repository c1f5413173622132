"""The entity repository: entities listed and shown, attached to chunks, and extracted from the
chunks already stored.

Links to memory records are written by the memory repository (`lantern.memory.entities`),
where the scope fence and the record's history are; here a scope-restricted caller's fence
only narrows what is counted and shown. Evidence has no scope: an entity a chunk mentions is
visible to every caller, one that only memory records name only to callers who may see one of
them.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any

from sqlalchemy import ColumnElement, Connection, and_, exists, func, or_, select, tuple_

from lantern import validation
from lantern.boundary import checked
from lantern.entities import cursor, links
from lantern.entities import names as entity_names
from lantern.entities.extraction import EXTRACTOR_VERSION, extract
from lantern.entities.records import (
    EntityChunk,
    EntitySummary,
    ExtractReport,
    LinkChange,
)
from lantern.errors import InvalidInput, NotFound
from lantern.store.dialect import serialize_writers
from lantern.store.engine import Store
from lantern.store.models import (
    chunk_entities,
    chunk_search_text,
    chunks,
    entities,
    entity_scans,
    memory_entities,
    memory_records,
    sources,
)

Fence = Callable[[str], list[ColumnElement[bool]]]
"""The conditions on `memory_records` a caller's scopes add (none when unrestricted)."""
Progress = Callable[[int, int], None]
Changes = list[LinkChange]
ChunkPage = tuple[list[EntityChunk], str | None]

LIST_ORDERS = ("name", "count")
EXTRACT_BATCH = 500
"""Chunks read and linked per transaction by `extract`."""
EXCERPT_BEFORE = 60
EXCERPT_AFTER = 120


def _unfenced(_dialect: str) -> list[ColumnElement[bool]]:
    return []


@checked
class EntityRepository:
    """Lists and shows entities, attaches them to chunks, and fills the links of stored chunks."""

    def __init__(self, store: Store, fence: Fence = _unfenced, *, restricted: bool = False) -> None:
        self._store = store
        self._fence = fence
        self._restricted = restricted

    # --- reading ----------------------------------------------------------------------------

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
        if order == "count":
            total = stmt.selected_columns.chunk_count + stmt.selected_columns.memory_count
            stmt = stmt.order_by(total.desc(), entities.c.kind, entities.c.name, entities.c.id)
        else:
            stmt = stmt.order_by(entities.c.kind, entities.c.name, entities.c.id)
        stmt = stmt.limit(checked_limit).offset(checked_offset)
        with self._store.read() as conn:
            return [EntitySummary(*row) for row in conn.execute(stmt)]

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
        fenced = self._fence(self._store.dialect)
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
        if self._restricted:
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
        return EntitySummary(*row)

    # --- chunk links ------------------------------------------------------------------------

    def attach_entities(self, chunk_id: str, entities: str | Sequence[str]) -> Changes:
        """Attach entities (`KIND:NAME`, or a stored entity's id) to a chunk; one `LinkChange`
        per entity, `changed` False where the chunk already had it.

        Args:
            chunk_id: The chunk (`chk_...`).
            entities: One entity or a list of them (at most 1,000), each `KIND:NAME` or a stored
                entity's id; a `KIND:NAME` not stored yet is created.

        Raises:
            InvalidInput: No entity, or a malformed one.
            NotFound: No such chunk, or an entity id that names nothing.
        """
        keys = _named(entities)
        with self._store.write() as conn:
            serialize_writers(conn)
            _require_chunk(conn, chunk_id)
            wanted = links.resolve(conn, keys)
            ids = links.ensure(conn, wanted)
            had = set(
                conn.execute(
                    select(chunk_entities.c.entity_id).where(chunk_entities.c.chunk_id == chunk_id)
                ).scalars()
            )
            links.attach_to_chunks(conn, [(chunk_id, ids[name]) for name in wanted])
            stored = links.lookup(conn, list(ids.values()))
            return [
                LinkChange(stored[ids[name]], "chunk", chunk_id, ids[name] not in had)
                for name in wanted
            ]

    def detach_entities(self, chunk_id: str, entities: str | Sequence[str]) -> Changes:
        """Detach entities from a chunk (`changed` False where it did not have one); an entity
        that nothing links any more is removed with its last link.

        Args:
            chunk_id: The chunk (`chk_...`).
            entities: One entity or a list of them, each `KIND:NAME` or a stored entity's id.

        Raises:
            InvalidInput: No entity, or a malformed one.
            NotFound: No such chunk, or an entity that is not stored.
        """
        keys = _named(entities)
        with self._store.write() as conn:
            serialize_writers(conn)
            _require_chunk(conn, chunk_id)
            found = links.lookup(conn, keys)
            changes: Changes = []
            for key in keys:
                ref = found.get(key)
                if ref is None:
                    raise links.missing(key)
                changes.append(
                    LinkChange(
                        ref, "chunk", chunk_id, links.detach_from_chunk(conn, chunk_id, ref.id)
                    )
                )
            return changes

    def attach(self, chunk_id: str, entity: str | Sequence[str]) -> Changes:
        """`attach_entities` under its earlier name, which stays for the callers of Lantern
        0.1.0.

        Args:
            chunk_id: The chunk (`chk_...`).
            entity: One entity or a list of them, as `attach_entities` takes them.
        """
        return self.attach_entities(chunk_id, entity)

    def detach(self, chunk_id: str, entity: str | Sequence[str]) -> Changes:
        """`detach_entities` under its earlier name, which stays for the callers of Lantern
        0.1.0.

        Args:
            chunk_id: The chunk (`chk_...`).
            entity: One entity or a list of them, as `detach_entities` takes them.
        """
        return self.detach_entities(chunk_id, entity)

    # --- extraction -------------------------------------------------------------------------

    def pending(self) -> int:
        """How many stored chunks this version of the extractor has not read."""
        with self._store.read() as conn:
            return int(
                conn.execute(
                    select(func.count()).select_from(chunks).where(_unscanned())
                ).scalar_one()
            )

    def extract(self, *, progress: Progress | None = None) -> ExtractReport:
        """Read the stored chunks this version of the extractor has not read, link them to
        the entities they mention, and remember that they were read.

        It commits every `EXTRACT_BATCH` chunks, so an interrupted run keeps what it did and
        the next run goes on from there. Links are only added: those a chunk has (the
        caller's, an older version's, a legacy store's) stay.

        Args:
            progress: Called after each batch with the chunks read so far and the chunks to read;
                None reports nothing.
        """
        started = time.perf_counter()
        with self._store.read() as conn:
            total = int(conn.execute(select(func.count()).select_from(chunks)).scalar_one())
            todo = int(
                conn.execute(
                    select(func.count()).select_from(chunks).where(_unscanned())
                ).scalar_one()
            )
        scanned = links_added = entities_added = 0
        after = ""
        searchable = func.coalesce(chunk_search_text.c.text, chunks.c.text)
        while True:
            with self._store.write() as conn:
                serialize_writers(conn)
                rows = conn.execute(
                    select(chunks.c.id, sources.c.kind, searchable)
                    .select_from(
                        chunks.join(sources, sources.c.id == chunks.c.source_id).outerjoin(
                            chunk_search_text, chunk_search_text.c.chunk_id == chunks.c.id
                        )
                    )
                    .where(chunks.c.id > after, _unscanned())
                    .order_by(chunks.c.id)
                    .limit(EXTRACT_BATCH)
                ).all()
                if not rows:
                    break
                found = [(row[0], entity) for row in rows for entity in extract(row[2], row[1])]
                added, created = links.attach_found(
                    conn, found, [row[0] for row in rows], EXTRACTOR_VERSION
                )
            scanned += len(rows)
            links_added += added
            entities_added += created
            after = rows[-1][0]
            if progress is not None:
                progress(scanned, todo)
        return ExtractReport(
            scanned=scanned,
            skipped=total - scanned,
            links_added=links_added,
            entities_added=entities_added,
            extractor=EXTRACTOR_VERSION,
            seconds=time.perf_counter() - started,
        )


def _unscanned() -> ColumnElement[bool]:
    return ~exists().where(
        entity_scans.c.chunk_id == chunks.c.id, entity_scans.c.extractor >= EXTRACTOR_VERSION
    )


def _require_chunk(conn: Connection, chunk_id: str) -> None:
    if not isinstance(chunk_id, str) or not chunk_id.strip():
        raise NotFound("a chunk id is required")
    if conn.execute(select(chunks.c.id).where(chunks.c.id == chunk_id)).first() is None:
        raise NotFound(f"no chunk with id {chunk_id!r}")


def _named(entity: str | Sequence[str]) -> list[entity_names.EntityKey]:
    keys = entity_names.keys(entity)
    if not keys:
        raise InvalidInput("name at least one entity (KIND:NAME)")
    return keys


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
