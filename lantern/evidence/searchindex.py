"""The stored searchable texts of chunks (`chunk_search_text`, revision 0007), kept with them.

The rule that derives a chunk's searchable text is `lantern.evidence.searchtext`; this module
writes its rows where chunks are written, derives them again for the whole store
(`db rebuild-index`) and compares them with the rule (`db check`).

A row is written before its chunk, in the same transaction: on SQLite the chunk's insert trigger
reads it to index the chunk (the index is external content over the view `chunk_search`, which
prefers a chunk's row to its text), and on PostgreSQL the foreign key is checked at commit.
Deleting a chunk removes its row (the `chunks_ad` trigger on SQLite, the foreign key's cascade on
PostgreSQL).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from sqlalchemy import Connection, delete, insert, or_, select, text

from lantern.evidence.searchtext import KINDS_WITH_SEARCH_TEXT, search_text
from lantern.store.models import chunk_search_text, chunks, sources
from lantern.store.prepared import Prepared

_INSERT = Prepared(insert(chunk_search_text))
_BATCH_SOURCES = 500

# SQLite: an index entry must be removed with the text it was made from, which the view gives.
_UNINDEX = text(
    "INSERT INTO chunks_fts (chunks_fts, rowid, text) SELECT 'delete', rowid, text "
    "FROM chunk_search WHERE rowid = (SELECT rowid FROM chunks WHERE id = :chunk_id)"
)
_INDEX = text(
    "INSERT INTO chunks_fts (rowid, text) SELECT rowid, text "
    "FROM chunk_search WHERE rowid = (SELECT rowid FROM chunks WHERE id = :chunk_id)"
)


def write(conn: Connection, rows: list[dict[str, Any]]) -> None:
    """Store `{"chunk_id", "text"}` rows of chunks about to be inserted."""
    _INSERT.execute_many(conn, rows)


def replace(conn: Connection, changes: list[tuple[str, str | None]]) -> None:
    """New searchable texts (None: the chunk's own) for stored chunks, index entries included.

    Needed when a source is stored again under another kind and keeps chunks of the same text.
    """
    sqlite = conn.dialect.name == "sqlite"
    for chunk_id, searchable in changes:
        if sqlite:
            conn.execute(_UNINDEX, {"chunk_id": chunk_id})
        conn.execute(delete(chunk_search_text).where(chunk_search_text.c.chunk_id == chunk_id))
        if searchable is not None:
            conn.execute(insert(chunk_search_text), {"chunk_id": chunk_id, "text": searchable})
        if sqlite:
            conn.execute(_INDEX, {"chunk_id": chunk_id})


def derive_all(conn: Connection) -> int:
    """Replace every row with what the rule derives now; the number of rows.

    The full-text index must then be rebuilt from the view (SQLite); PostgreSQL's vectors are
    generated columns and follow the rows.
    """
    conn.execute(delete(chunk_search_text))
    count = 0
    for batch in _chunks_with_search_text(conn):
        rows = [
            {"chunk_id": chunk_id, "text": searchable}
            for chunk_id, kind, chunk_text, _stored in batch
            if (searchable := search_text(kind, chunk_text)) is not None
        ]
        write(conn, rows)
        count += len(rows)
    return count


def differences(conn: Connection) -> Iterator[str]:
    """How the stored rows differ from what the rule derives from the stored chunks."""
    for batch in _chunks_with_search_text(conn):
        for chunk_id, kind, chunk_text, stored in batch:
            derived = search_text(kind, chunk_text)
            if derived == stored:
                continue
            if stored is None:
                yield f"chunk {chunk_id} has no searchable text row"
            elif derived is None:
                yield f"chunk {chunk_id} has a searchable text row but needs none"
            else:
                yield f"chunk {chunk_id} has a searchable text that its text does not give"
    others = conn.execute(
        select(chunk_search_text.c.chunk_id, chunks.c.id)
        .outerjoin(chunks, chunks.c.id == chunk_search_text.c.chunk_id)
        .outerjoin(sources, sources.c.id == chunks.c.source_id)
        .where(or_(sources.c.kind.is_(None), sources.c.kind.not_in(KINDS_WITH_SEARCH_TEXT)))
        .order_by(chunk_search_text.c.chunk_id)
    )
    for row_id, chunk_id in others:
        if chunk_id is None:
            yield f"searchable text row {row_id} belongs to no chunk"
        else:
            yield f"chunk {chunk_id} has a searchable text row but needs none"


def _chunks_with_search_text(conn: Connection) -> Iterator[list[Any]]:
    """`(chunk id, kind, text, stored searchable text or None)` of the chunks of every source
    of a kind that may have searchable text, a few hundred sources at a time."""
    source_ids = list(
        conn.execute(
            select(sources.c.id)
            .where(sources.c.kind.in_(KINDS_WITH_SEARCH_TEXT))
            .order_by(sources.c.id)
        ).scalars()
    )
    for start in range(0, len(source_ids), _BATCH_SOURCES):
        batch = source_ids[start : start + _BATCH_SOURCES]
        yield list(
            conn.execute(
                select(chunks.c.id, sources.c.kind, chunks.c.text, chunk_search_text.c.text)
                .join_from(chunks, sources, sources.c.id == chunks.c.source_id)
                .outerjoin(chunk_search_text, chunk_search_text.c.chunk_id == chunks.c.id)
                .where(chunks.c.source_id.in_(batch))
                .order_by(chunks.c.id)
            )
        )
