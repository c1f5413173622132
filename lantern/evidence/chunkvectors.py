"""Chunks' vectors: computed in batches, and after an ingest when the store says so.

A chunk's vector is computed from what the chunk is searched by (`lantern.evidence.searchtext`:
a transcript chunk's decoded turns, any other chunk's text), and stored in the legacy
`embeddings` table, one vector per chunk, of the model that made it. A chunk whose text changes
gets a new id, and its old row goes with the old chunk; a chunk kept by a re-ingest whose
searchable text changes (its source's kind changed) loses its vector in the same transaction
(`lantern.evidence.documents`). A chunk with a vector of another model is re-embedded when asked
for this one: the table holds one vector per chunk.

When the store's `embed.on_write` setting is on, an ingest embeds the chunks of the sources it
wrote once their batch has committed, in batches of their own, so that a model never runs
while the write lock is held; an interrupted run leaves the rest to `lantern embed`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from sqlalchemy import Connection, bindparam, func, select

from lantern.store import settings
from lantern.store.dialect import id_list_value, in_id_list
from lantern.store.engine import Store
from lantern.store.models import chunk_search_text, chunks, embeddings

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import NDArray

    from lantern.embeddings.provider import EmbeddingProvider
    from lantern.semantic.backfill import EmbedReport, Item, Progress

BATCH = 32
"""Chunks embedded per batch (about a second or two of the default model's work)."""

SEARCHABLE = func.coalesce(chunk_search_text.c.text, chunks.c.text)
"""What a chunk is searched by, and embedded from."""


def embeds_on_write(store: Store) -> bool:
    """Whether the store asks writes to embed (one look-up)."""
    with store.read() as conn:
        return settings.embedding_settings(conn).on_write


def embed_after_ingest(store: Store, source_ids: Sequence[str]) -> EmbedReport | None:
    """The vectors of the chunks of these sources that lack a current one, when the store
    embeds on write; None, with nothing loaded, when it does not."""
    if not source_ids or not embeds_on_write(store):
        return None
    from lantern.semantic.plan import provider_for

    return embed_missing(store, provider_for(store, None), progress=None, source_ids=source_ids)


def embed_missing(
    store: Store,
    provider: EmbeddingProvider,
    *,
    batch: int = BATCH,
    progress: Progress | None,
    source_ids: Sequence[str] | None = None,
) -> EmbedReport:
    """Compute the vectors of `provider`'s model that chunks lack (or hold of another model,
    or of a wrong size), in batches (`lantern.semantic.backfill`); only the chunks of
    `source_ids` when given."""
    from lantern.semantic.backfill import backfill

    dialect = store.dialect
    restrict: dict[str, Any] = {}
    if source_ids is not None:
        restrict["sources"] = id_list_value(dialect, source_ids)
    count = select(func.count()).select_from(chunks)
    if source_ids is not None:
        count = count.where(in_id_list(dialect, chunks.c.source_id, "sources"))
    with store.read() as conn:
        total = int(conn.execute(count, restrict).scalar_one())
    dim = provider.dimension

    def scan(conn: Connection, after: str | None, size: int) -> list[Item]:
        return _scan(conn, provider.model, dim, after, size, restrict)

    def write(conn: Connection, items: list[Item], vectors: NDArray[np.float32]) -> int:
        return _write(conn, provider.model, dim, items, vectors)

    return backfill(
        store,
        provider,
        side="sources",
        scan=scan,
        write=write,
        total=total,
        batch=batch,
        progress=progress,
    )


def _scan(
    conn: Connection,
    model: str,
    dim: int,
    after: str | None,
    size: int,
    restrict: dict[str, Any],
) -> list[Item]:
    """The next chunks, and the searchable text of those whose vector is not current."""
    from lantern.semantic.backfill import Item

    dialect = conn.dialect.name
    statement = (
        select(chunks.c.id, embeddings.c.model, embeddings.c.dim, func.length(embeddings.c.vector))
        .select_from(chunks.outerjoin(embeddings, embeddings.c.chunk_id == chunks.c.id))
        .order_by(chunks.c.id)
        .limit(bindparam("size"))
    )
    params: dict[str, Any] = {"size": size, **restrict}
    if after is not None:
        statement = statement.where(chunks.c.id > bindparam("after"))
        params["after"] = after
    if restrict:
        statement = statement.where(in_id_list(dialect, chunks.c.source_id, "sources"))
    rows = conn.execute(statement, params).all()
    stale = [
        chunk_id
        for chunk_id, stored_model, stored_dim, length in rows
        if not (stored_model == model and stored_dim == dim and length == 4 * dim)
    ]
    texts = _texts(conn, stale)
    return [Item(row[0], texts.get(row[0]) if row[0] in texts else None) for row in rows]


def _texts(conn: Connection, ids: list[str]) -> dict[str, str]:
    """The searchable text of these chunks (those that still exist)."""
    if not ids:
        return {}
    dialect = conn.dialect.name
    statement = (
        select(chunks.c.id, SEARCHABLE)
        .select_from(
            chunks.outerjoin(chunk_search_text, chunk_search_text.c.chunk_id == chunks.c.id)
        )
        .where(in_id_list(dialect, chunks.c.id, "ids"))
    )
    return dict(conn.execute(statement, {"ids": id_list_value(dialect, ids)}).all())


def _write(
    conn: Connection, model: str, dim: int, items: list[Item], vectors: NDArray[np.float32]
) -> int:
    """Store the vectors of the chunks still searched by the text embedded."""
    from lantern.embeddings.vectors import to_blob
    from lantern.semantic.storage import write_chunk_vectors

    now_text = _texts(conn, [item.id for item in items])
    rows = [
        (item.id, to_blob(vectors[position]))
        for position, item in enumerate(items)
        if item.text is not None and now_text.get(item.id) == item.text
    ]
    write_chunk_vectors(conn, model, dim, rows)
    return len(rows)
