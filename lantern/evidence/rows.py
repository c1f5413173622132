"""Sources and chunks as rows: read with their chunk counts, entities and embeddings, found
by id, URI or condition, and made frozen records."""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from sqlalchemy import ColumnElement, Connection, Row, Select, bindparam, func, select

from lantern.entities.records import EntityRef
from lantern.errors import NotFound
from lantern.evidence.records import Chunk, EmbeddingInfo, Source, freeze_metadata
from lantern.store.models import chunk_entities, chunks, embeddings, entities, sources
from lantern.store.prepared import Prepared

_ID_BATCH = 500  # ids per IN (...) list, far below every engine's parameter limit


def source_select() -> Select[Any]:
    count = (
        select(func.count())
        .where(chunks.c.source_id == sources.c.id)
        .scalar_subquery()
        .label("chunk_count")
    )
    return select(sources, count)


@dataclass(frozen=True, slots=True)
class StoredSource:
    """A `_source_select` row read on the cheap path (by position, see `lantern.store.prepared`)."""

    id: str
    uri: str
    kind: str
    title: str | None
    content_hash: str
    metadata: Any
    created_at: int
    updated_at: int
    chunk_count: int


# One look-up per document: cheaper than one `IN` through `Connection.execute`, even for a batch.
SOURCE_BY_URI = Prepared(source_select().where(sources.c.uri == bindparam("uri")))


def to_source(row: Row[Any] | StoredSource, found: tuple[Chunk, ...] | None = None) -> Source:
    return Source(
        id=row.id,
        uri=row.uri,
        kind=row.kind,
        title=row.title,
        content_hash=row.content_hash,
        metadata=freeze_metadata(row.metadata),
        created_at=row.created_at,
        updated_at=row.updated_at,
        chunk_count=row.chunk_count,
        chunks=found,
    )


def find_source(conn: Connection, ref: str) -> Row[Any]:
    if not isinstance(ref, str) or not ref.strip():
        raise NotFound("a source id or uri is required")
    for column in (sources.c.id, sources.c.uri):
        row = conn.execute(source_select().where(column == ref)).first()
        if row is not None:
            return row
    hint = ""
    if ref.startswith(("/", "./", "../", "~")):
        hint = f" (a file's source is named by its uri, file://{os.path.abspath(os.path.expanduser(ref))})"
    raise NotFound(f"no source with id or uri {ref!r}{hint}")


def load_chunks(
    conn: Connection,
    condition: ColumnElement[bool],
    *,
    descending: bool = False,
    limit: int | None = None,
) -> list[Chunk]:
    """Chunks matching `condition` in ordinal order, with their entities and embeddings."""
    order = chunks.c.ordinal.desc() if descending else chunks.c.ordinal
    ids = select(chunks.c.id).where(condition).order_by(order).limit(limit)
    rows = conn.execute(select(chunks).where(chunks.c.id.in_(ids)).order_by(order)).all()
    if not rows:
        return []
    named: dict[str, list[EntityRef]] = {}
    for link in conn.execute(
        select(chunk_entities.c.chunk_id, entities.c.id, entities.c.name, entities.c.kind)
        .join(entities, entities.c.id == chunk_entities.c.entity_id)
        .where(chunk_entities.c.chunk_id.in_(ids))
        .order_by(chunk_entities.c.chunk_id, entities.c.kind, entities.c.name, entities.c.id)
    ):
        named.setdefault(link.chunk_id, []).append(EntityRef(link.id, link.name, link.kind))
    vectors: dict[str, list[EmbeddingInfo]] = {}
    for vector in conn.execute(
        select(embeddings.c.chunk_id, embeddings.c.model, embeddings.c.dim)
        .where(embeddings.c.chunk_id.in_(ids))
        .order_by(embeddings.c.chunk_id, embeddings.c.model)
    ):
        vectors.setdefault(vector.chunk_id, []).append(EmbeddingInfo(vector.model, vector.dim))
    return [
        Chunk(
            id=row.id,
            source_id=row.source_id,
            ordinal=row.ordinal,
            text=row.text,
            start_offset=row.start_offset,
            end_offset=row.end_offset,
            metadata=freeze_metadata(row.metadata),
            created_at=row.created_at,
            entities=tuple(named.get(row.id, ())),
            embeddings=tuple(vectors.get(row.id, ())),
            said_from=row.said_from,
            said_until=row.said_until,
        )
        for row in rows
    ]


def starts_with(column: Any, prefix: str) -> ColumnElement[bool]:
    """A case-sensitive prefix test on both engines (SQLite's LIKE ignores ASCII case)."""
    result: ColumnElement[bool] = func.substr(column, 1, len(prefix)) == prefix
    return result


def batches(ids: list[str]) -> Iterable[list[str]]:
    return (ids[start : start + _ID_BATCH] for start in range(0, len(ids), _ID_BATCH))
