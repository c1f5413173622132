"""Writing and removing vectors, each change telling cached copies in the same transaction.

Every function here runs in the caller's write transaction and, when it changed any vector,
replaces its side's token (`lantern.store.settings.bump`), so that a process holding that
side's vectors in memory reloads them before its next search, and never sooner. The bytes are
`lantern.embeddings.vectors.to_blob`'s: little-endian float32, the legacy format.
"""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy import Connection, bindparam, delete

from lantern.semantic.sides import CHUNKS, MEMORY
from lantern.store import settings
from lantern.store.dialect import id_list_value, in_id_list, upsert
from lantern.store.models import embeddings, memory_embeddings
from lantern.store.prepared import Prepared

_UPSERTS: dict[tuple[str, str], Prepared] = {}
_DELETE_RECORD = Prepared(
    delete(memory_embeddings).where(memory_embeddings.c.memory_id == bindparam("memory_id"))
)


def _upsert(dialect: str, side: str) -> Prepared:
    statement = _UPSERTS.get((dialect, side))
    if statement is None:
        if side == MEMORY.name:
            built = upsert(
                dialect,
                memory_embeddings,
                ["memory_id", "model"],
                ["dim", "vector", "text_hash", "created_at"],
            )
        else:
            built = upsert(dialect, embeddings, ["chunk_id"], ["model", "dim", "vector"])
        statement = _UPSERTS[(dialect, side)] = Prepared(built)
    return statement


def write_memory_vectors(
    conn: Connection, model: str, dim: int, rows: Sequence[tuple[str, bytes, str]], at: int
) -> None:
    """Store `(memory_id, vector bytes, text hash)` rows of one model, replacing that model's
    vector of each record."""
    if not rows:
        return
    values = [
        {
            "memory_id": memory_id,
            "model": model,
            "dim": dim,
            "vector": blob,
            "text_hash": hashed,
            "created_at": at,
        }
        for memory_id, blob, hashed in rows
    ]
    _upsert(conn.dialect.name, MEMORY.name).execute_many(conn, values)
    settings.bump(conn, MEMORY.token)


def delete_memory_vectors(conn: Connection, memory_id: str) -> int:
    """Remove every vector of a record (forgotten, or its content changed); how many."""
    removed = conn.execute(_DELETE_RECORD.statement, {"memory_id": memory_id}).rowcount
    if removed:
        settings.bump(conn, MEMORY.token)
    return int(removed)


def write_chunk_vectors(
    conn: Connection, model: str, dim: int, rows: Sequence[tuple[str, bytes]]
) -> None:
    """Store `(chunk_id, vector bytes)` rows of one model, replacing each chunk's vector."""
    if not rows:
        return
    values = [
        {"chunk_id": chunk_id, "model": model, "dim": dim, "vector": blob}
        for chunk_id, blob in rows
    ]
    _upsert(conn.dialect.name, CHUNKS.name).execute_many(conn, values)
    settings.bump(conn, CHUNKS.token)


def delete_chunk_vectors(conn: Connection, chunk_ids: Sequence[str]) -> int:
    """Remove the vectors of these chunks (removed, or searched by another text now)."""
    if not chunk_ids:
        return 0
    dialect = conn.dialect.name
    statement = delete(embeddings).where(in_id_list(dialect, embeddings.c.chunk_id, "ids"))
    removed = int(conn.execute(statement, {"ids": id_list_value(dialect, chunk_ids)}).rowcount)
    if removed:
        settings.bump(conn, CHUNKS.token)
    return removed


def chunk_vectors_changed(conn: Connection, changed: int) -> None:
    """Tell cached copies that `changed` chunk vectors were written or removed by a statement
    of the caller's (a removal with their chunks, an import)."""
    if changed:
        settings.bump(conn, CHUNKS.token)
