"""Memory records' vectors: computed at write time when the store says so, and in batches.

A record's vector is computed from its content and stored with the content's sha256
(`memory_embeddings`), so that one whose record says something else now is known to be stale.
Vectors are derived data and follow their record in the same transaction: a record forgotten
or whose content changes loses its vectors (`lantern.semantic.storage`).

When the store's `embed.on_write` setting is on, a write computes the vector of the content it
stores before the transaction that writes it (so that the write lock is never held while a
model runs, and a failure to embed changes nothing), then stores it with the record. A write
asks the setting inside its own transaction (`lantern.memory.writes`): when it is off, as it
usually is, that one look-up by key is all it costs, with nothing more read or imported.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from sqlalchemy import Connection, bindparam, func, select

from lantern.memory.records import MemoryRecord
from lantern.store import settings
from lantern.store.engine import Store
from lantern.store.models import memory_embeddings
from lantern.store.models import memory_records as table

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import NDArray

    from lantern.embeddings.provider import EmbeddingProvider
    from lantern.semantic.backfill import EmbedReport, Item, Progress

BATCH = 128
"""Records embedded per batch of `lantern embed`."""


@dataclass(frozen=True, slots=True)
class PendingVectors:
    """Vectors computed before a write, by content, to store with the records written."""

    model: str
    dim: int
    by_content: dict[str, tuple[bytes, str]] = field(default_factory=dict)
    """A content's vector bytes and text hash."""

    def rows(self, records: Iterable[MemoryRecord]) -> list[tuple[str, bytes, str]]:
        return [
            (record.id, *self.by_content[record.content])
            for record in records
            if record.content in self.by_content
        ]


def wanted(conn: Connection) -> bool:
    """Whether this write must store vectors (the store embeds on write), asked in the write's
    own transaction before it writes anything."""
    return settings.embeds_on_write(conn)


Contents = Sequence[str] | Callable[[Connection], Sequence[str]]
"""The contents a write stores, or a function that reads them in a transaction."""


def on_write(store: Store, contents: Contents) -> PendingVectors | None:
    """The vectors of `contents` (or of what the function reads, in the same transaction) when
    the store embeds on write; None, with nothing read or loaded, when it does not."""
    with store.read() as conn:
        if not settings.embedding_settings(conn).on_write:
            return None
        if callable(contents):
            contents = contents(conn)
    from lantern.embeddings.provider import embed_checked
    from lantern.embeddings.vectors import to_blob
    from lantern.semantic.plan import provider_for
    from lantern.semantic.sides import text_hash

    provider = provider_for(store, None)
    distinct = list(dict.fromkeys(contents))
    vectors = embed_checked(provider, distinct) if distinct else None
    pending = PendingVectors(provider.model, provider.dimension)
    for position, content in enumerate(distinct):
        assert vectors is not None
        pending.by_content[content] = (to_blob(vectors[position]), text_hash(content))
    return pending


def store_pending(
    conn: Connection, pending: PendingVectors | None, records: Iterable[MemoryRecord], at: int
) -> None:
    """Store the vectors computed for these records' contents, in the write's transaction,
    with the write's timestamp `at`."""
    if pending is None:
        return
    from lantern.semantic.storage import write_memory_vectors

    write_memory_vectors(conn, pending.model, pending.dim, pending.rows(records), at)


def invalidate(conn: Connection, record_id: str) -> None:
    """Remove a record's vectors (forgotten, or its content changed), in the same transaction."""
    from lantern.semantic.storage import delete_memory_vectors

    delete_memory_vectors(conn, record_id)


def embed_missing(
    store: Store, provider: EmbeddingProvider, *, batch: int = BATCH, progress: Progress | None
) -> EmbedReport:
    """Compute the vectors of `provider`'s model that records lack or hold stale, in batches
    (`lantern.semantic.backfill`); records of every status, since searches can ask for any."""
    from lantern.semantic.backfill import backfill

    with store.read() as conn:
        total = int(conn.execute(select(func.count()).select_from(table)).scalar_one())
    dim = provider.dimension

    def scan(conn: Connection, after: str | None, size: int) -> list[Item]:
        return _scan(conn, provider.model, dim, after, size)

    def write(conn: Connection, items: list[Item], vectors: NDArray[np.float32]) -> int:
        return _write(conn, provider.model, dim, items, vectors, store.clock())

    return backfill(
        store,
        provider,
        side="memory",
        scan=scan,
        write=write,
        total=total,
        batch=batch,
        progress=progress,
    )


def _scan(conn: Connection, model: str, dim: int, after: str | None, size: int) -> list[Item]:
    from lantern.semantic.backfill import Item
    from lantern.semantic.sides import text_hash

    vector = memory_embeddings
    statement = (
        select(
            table.c.id,
            table.c.content,
            vector.c.text_hash,
            vector.c.dim,
            func.length(vector.c.vector),
        )
        .select_from(
            table.outerjoin(
                vector, (vector.c.memory_id == table.c.id) & (vector.c.model == bindparam("model"))
            )
        )
        .order_by(table.c.id)
        .limit(bindparam("size"))
    )
    params: dict[str, object] = {"model": model, "size": size}
    if after is not None:
        statement = statement.where(table.c.id > bindparam("after"))
        params["after"] = after
    items = []
    for record_id, content, hashed, stored_dim, length in conn.execute(statement, params):
        current = hashed == text_hash(content) and stored_dim == dim and length == 4 * dim
        items.append(Item(record_id, None if current else content))
    return items


def _write(
    conn: Connection,
    model: str,
    dim: int,
    items: list[Item],
    vectors: NDArray[np.float32],
    at: int,
) -> int:
    """Store the vectors of the records whose content is still the one embedded, stamped `at`
    (the batch's time, from the store's clock)."""
    from lantern.embeddings.vectors import to_blob
    from lantern.semantic.sides import text_hash
    from lantern.semantic.storage import write_memory_vectors
    from lantern.store.dialect import id_list_value, in_id_list

    dialect = conn.dialect.name
    now_content = dict(
        conn.execute(
            select(table.c.id, table.c.content).where(in_id_list(dialect, table.c.id, "ids")),
            {"ids": id_list_value(dialect, [item.id for item in items])},
        ).all()
    )
    rows = [
        (item.id, to_blob(vectors[position]), text_hash(item.text))
        for position, item in enumerate(items)
        if item.text is not None and now_content.get(item.id) == item.text
    ]
    write_memory_vectors(conn, model, dim, rows, at)
    return len(rows)
