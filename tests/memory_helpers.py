"""Helpers for the memory tests: evidence rows and raw SQL on the test store."""

from __future__ import annotations

from typing import Any

from sqlalchemy import text

from lantern.api import Lantern
from lantern.store.ids import chunk_id, source_id
from lantern.store.models import chunk_entities, chunks, embeddings, entities, sources
from tests.helpers import BASE_TIME


def add_source(
    lt: Lantern,
    uri: str,
    texts: list[str],
    *,
    title: str | None = None,
    metadata: dict[str, Any] | None = None,
    at: int = BASE_TIME,
) -> tuple[str, list[str]]:
    """Store a source and its chunks as evidence ingest would; `(source id, chunk ids)`.

    Written straight into the tables so that these tests do not depend on the ingest code.
    """
    sid = source_id(uri)
    ids = [chunk_id(sid, ordinal, body) for ordinal, body in enumerate(texts)]
    with lt.store.write() as conn:
        conn.execute(
            sources.insert().values(
                id=sid,
                uri=uri,
                kind="markdown",
                title=title,
                content_hash="0" * 64,
                **{"metadata": metadata or {}},
                created_at=at,
                updated_at=at,
            )
        )
        offset = 0
        for ordinal, (cid, body) in enumerate(zip(ids, texts, strict=True)):
            conn.execute(
                chunks.insert().values(
                    id=cid,
                    source_id=sid,
                    ordinal=ordinal,
                    text=body,
                    start_offset=offset,
                    end_offset=offset + len(body),
                    **{"metadata": {"ordinal": ordinal}},
                    created_at=at,
                )
            )
            offset += len(body) + 2
    return sid, ids


def add_entity_links(lt: Lantern, chunk: str, vector: bytes) -> None:
    """An entity linked to a chunk and an embedding of it (legacy generation-2 rows)."""
    with lt.store.write() as conn:
        conn.execute(entities.insert().values(id="ent_0000000000000001", name="Zoë", kind="person"))
        conn.execute(
            chunk_entities.insert().values(chunk_id=chunk, entity_id="ent_0000000000000001")
        )
        conn.execute(
            embeddings.insert().values(
                chunk_id=chunk, model="m", dim=len(vector) // 4, vector=vector
            )
        )


def remove_source(lt: Lantern, sid: str) -> None:
    with lt.store.write() as conn:
        conn.execute(chunks.delete().where(chunks.c.source_id == sid))
        conn.execute(sources.delete().where(sources.c.id == sid))


def sql(lt: Lantern, statement: str, **params: Any) -> list[Any]:
    """Run raw SQL in a write transaction; the rows it returns, if any."""
    with lt.store.write() as conn:
        result = conn.execute(text(statement), params)
        return list(result) if result.returns_rows else []


def table_rows(lt: Lantern, table: str, order: str) -> list[Any]:
    with lt.store.read() as conn:
        return list(conn.execute(text(f"SELECT * FROM {table} ORDER BY {order}")))
