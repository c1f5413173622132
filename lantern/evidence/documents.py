"""Documents stored as evidence: a batch of them planned into source and chunk rows and written.

Statements are SQLAlchemy Core against the legacy tables, written in batches (`executemany`),
because ingest is the hot path that benchmarks compare with raw `sqlite3`. A changed source
keeps the rows of its unchanged chunks (see `lantern.evidence.chunkplan`), and with them their
entity links. A chunk whose searchable text differs from its text (a transcript's) gets its row
in `chunk_search_text` just before the chunk is inserted (see `lantern.evidence.searchindex`).
The entities a new chunk mentions are extracted from its searchable text and linked just after
it (`lantern.entities`), in the same transaction; the entities that only removed chunks
named go with them.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import Connection, bindparam, delete, insert, select, update

from lantern.entities import links as entity_links
from lantern.entities.extraction import EXTRACTOR_VERSION, extract
from lantern.entities.names import EntityName
from lantern.evidence import searchindex
from lantern.evidence.chunking import ChunkSpan, chunk_source
from lantern.evidence.chunkplan import appended_at, assign_ordinals, following_ordinals
from lantern.evidence.files import FileText
from lantern.evidence.records import IngestResult, Source, freeze_metadata
from lantern.evidence.rows import SOURCE_BY_URI, StoredSource, batches, to_source
from lantern.evidence.said import TRANSCRIPT, said_range
from lantern.evidence.searchtext import search_text
from lantern.evidence.sourcekinds import detect_kind, language_for, parse_transcript
from lantern.semantic.storage import chunk_vectors_changed, delete_chunk_vectors
from lantern.store.dialect import serialize_writers
from lantern.store.ids import chunk_id, source_id
from lantern.store.models import chunk_entities, chunks, embeddings, entity_scans, sources
from lantern.store.prepared import Prepared
from lantern.validation import canonical_json


@dataclass(frozen=True, slots=True)
class Document:
    """A text to store as a source, with what is known about it before it is chunked."""

    uri: str
    text: str
    kind: str
    size: int
    metadata: dict[str, Any]
    """File facts (path, size, mtime) and the caller's metadata, which wins."""
    title: str | None = None
    name: str | None = None
    """The file name, the title of a source that has no heading to take it from."""
    hint: str | None = None
    """A path or URI whose extension tells the language of code."""


@dataclass(frozen=True, slots=True)
class StoredChunk:
    id: str
    ordinal: int
    text: str
    start_offset: int | None
    end_offset: int | None
    metadata: Any
    said: tuple[int | None, int | None] = (None, None)
    """`(said_from, said_until)` as stored (`lantern.evidence.said`)."""


@dataclass(slots=True)
class Writes:
    """The rows one batch writes, executed together so each table gets one `executemany`."""

    chunk_deletes: list[str] = field(default_factory=list)
    source_inserts: list[dict[str, Any]] = field(default_factory=list)
    source_updates: list[dict[str, Any]] = field(default_factory=list)
    chunk_updates: list[dict[str, Any]] = field(default_factory=list)
    chunk_inserts: list[dict[str, Any]] = field(default_factory=list)
    search_inserts: list[dict[str, Any]] = field(default_factory=list)
    """`chunk_search_text` rows of inserted chunks, written before them."""
    search_changes: list[tuple[str, str | None]] = field(default_factory=list)
    """Kept chunks whose searchable text changes with their source's kind."""
    mentions: list[tuple[str, EntityName]] = field(default_factory=list)
    """`(chunk id, entity)` of the inserted chunks, linked after them."""

    def execute(self, conn: Connection) -> None:
        # Deletes first: a new chunk may take the ordinal of a removed one.
        named: set[str] = set()
        if self.chunk_deletes:
            named = entity_links.of_chunks(conn, self.chunk_deletes)
            doomed = [{"b_id": chunk} for chunk in self.chunk_deletes]
            for links in (chunk_entities, entity_scans):
                conn.execute(delete(links).where(links.c.chunk_id == bindparam("b_id")), doomed)
            delete_chunk_vectors(conn, self.chunk_deletes)
            conn.execute(delete(chunks).where(chunks.c.id == bindparam("b_id")), doomed)
        _INSERT_SOURCES.execute_many(conn, self.source_inserts)
        if self.source_updates:
            conn.execute(
                update(sources)
                .where(sources.c.id == bindparam("b_id"))
                .values(
                    kind=bindparam("b_kind"),
                    title=bindparam("b_title"),
                    content_hash=bindparam("b_content_hash"),
                    metadata=bindparam("b_metadata", type_=sources.c.metadata.type),
                    updated_at=bindparam("b_updated_at"),
                ),
                self.source_updates,
            )
        if self.chunk_updates:
            conn.execute(
                update(chunks)
                .where(chunks.c.id == bindparam("b_id"))
                .values(
                    start_offset=bindparam("b_start"),
                    end_offset=bindparam("b_end"),
                    metadata=bindparam("b_metadata", type_=chunks.c.metadata.type),
                    said_from=bindparam("b_said_from", type_=chunks.c.said_from.type),
                    said_until=bindparam("b_said_until", type_=chunks.c.said_until.type),
                ),
                self.chunk_updates,
            )
        searchindex.replace(conn, self.search_changes)
        # Their vectors were computed from the text they were searched by before.
        delete_chunk_vectors(conn, [chunk for chunk, _text in self.search_changes])
        searchindex.write(conn, self.search_inserts)
        _INSERT_CHUNKS.execute_many(conn, self.chunk_inserts)
        inserted = [row["id"] for row in self.chunk_inserts]
        entity_links.attach_found(conn, self.mentions, inserted, EXTRACTOR_VERSION)
        entity_links.prune(conn, named)


# Every column given: the rows of a batch go to the driver's executemany
# (see lantern.store.prepared).
_INSERT_SOURCES = Prepared(insert(sources))
_INSERT_CHUNKS = Prepared(insert(chunks))


def write_documents(
    conn: Connection, documents: list[Document], target: int, at: int
) -> list[IngestResult]:
    """Store a batch of documents in the caller's write transaction."""
    serialize_writers(conn)
    stored = {
        uri: StoredSource(*found[0])
        for uri in dict.fromkeys(document.uri for document in documents)
        if (found := SOURCE_BY_URI.rows(conn, {"uri": uri}))
    }
    hashes = [_content_hash(document.text) for document in documents]
    changed_ids = [
        row.id
        for document, content_hash in zip(documents, hashes, strict=True)
        if (row := stored.get(document.uri)) is not None
        and not _unchanged(row, document, content_hash)
    ]
    old_chunks = _stored_chunks(conn, changed_ids)
    writes = Writes()
    results: list[IngestResult] = []
    for document, content_hash in zip(documents, hashes, strict=True):
        row = stored.get(document.uri)
        if row is not None and _unchanged(row, document, content_hash):
            results.append(
                IngestResult("unchanged", to_source(row), 0, row.chunk_count, document.size)
            )
            continue
        previous = [] if row is None else old_chunks.get(row.id, [])
        results.append(_plan(document, content_hash, row, previous, target, at, writes))
    writes.execute(conn)
    return results


def _unchanged(row: StoredSource, document: Document, content_hash: str) -> bool:
    return bool(row.content_hash == content_hash and row.kind == document.kind)


def _plan(
    document: Document,
    content_hash: str,
    row: StoredSource | None,
    previous: list[StoredChunk],
    target: int,
    at: int,
    writes: Writes,
) -> IngestResult:
    """Add the rows that store `document` to `writes`, keeping unchanged chunks' rows."""
    as_is, spans, ordinals = _layout(document, row, previous, target)
    source = source_id(document.uri) if row is None else str(row.id)
    stored_by_id = {chunk.id: chunk for chunk in previous}
    stored_kind = document.kind if row is None else row.kind
    # Kept as they are only when the kind is the same (`_layout`): their search text stays.
    kept = {chunk.id for chunk in as_is}
    source_metadata = canonical_json({**_kind_facts(document), **document.metadata})
    inserted = 0
    for span, ordinal in zip(spans, ordinals, strict=True):
        new_id = chunk_id(source, ordinal, span.text)
        metadata = canonical_json(span.metadata)
        old = stored_by_id.get(new_id)
        searchable = search_text(document.kind, span.text)
        if old is not None and old.ordinal == ordinal and old.text == span.text:
            kept.add(new_id)
            if stored_kind != document.kind and search_text(stored_kind, span.text) != searchable:
                writes.search_changes.append((new_id, searchable))
            # A kept chunk's words were said when they were: only a transcript's turn times,
            # read from its metadata, or a new kind can tell otherwise.
            said = old.said
            if document.kind == TRANSCRIPT or stored_kind != document.kind:
                said = said_range(document.kind, metadata, source_metadata)
            if (old.start_offset, old.end_offset, old.metadata, old.said) != (
                span.start,
                span.end,
                metadata,
                said,
            ):
                writes.chunk_updates.append(
                    {
                        "b_id": new_id,
                        "b_start": span.start,
                        "b_end": span.end,
                        "b_metadata": metadata,
                        "b_said_from": said[0],
                        "b_said_until": said[1],
                    }
                )
            continue
        inserted += 1
        if searchable is not None:
            writes.search_inserts.append({"chunk_id": new_id, "text": searchable})
        found = extract(span.text if searchable is None else searchable, document.kind)
        writes.mentions.extend((new_id, entity) for entity in found)
        said_from, said_until = said_range(document.kind, metadata, source_metadata)
        writes.chunk_inserts.append(
            {
                "id": new_id,
                "source_id": source,
                "ordinal": ordinal,
                "text": span.text,
                "start_offset": span.start,
                "end_offset": span.end,
                "metadata": metadata,
                "created_at": at,
                "said_from": said_from,
                "said_until": said_until,
            }
        )
    writes.chunk_deletes.extend(chunk.id for chunk in previous if chunk.id not in kept)
    metadata = source_metadata
    title = document.title
    if title is None:
        title = _derived_title(document, [c.metadata for c in as_is] + [s.metadata for s in spans])
    values = {
        "kind": document.kind,
        "title": title,
        "content_hash": content_hash,
        "metadata": metadata,
        "updated_at": at,
    }
    if row is None:
        writes.source_inserts.append(
            {"id": source, "uri": document.uri, "created_at": at, **values}
        )
    else:
        writes.source_updates.append({"b_id": source, **{f"b_{k}": v for k, v in values.items()}})
    record = Source(
        id=source,
        uri=document.uri,
        kind=document.kind,
        title=title,
        content_hash=content_hash,
        metadata=freeze_metadata(metadata),
        created_at=at if row is None else row.created_at,
        updated_at=at,
        chunk_count=len(as_is) + len(spans),
    )
    status = "added" if row is None else "updated"
    return IngestResult(status, record, inserted, len(kept), document.size)


def _layout(
    document: Document, row: StoredSource | None, previous: list[StoredChunk], target: int
) -> tuple[list[StoredChunk], list[ChunkSpan], list[int]]:
    """The stored chunks that stay exactly as they are, and the spans to write with their
    ordinals (see `lantern.evidence.chunkplan`).

    When the new text starts with the stored one (a transcript or log that grew), every stored
    chunk stays, and only what was appended is chunked; otherwise the whole text is chunked
    and matched with the stored chunks.
    """
    text = document.text
    grown = None
    if row is not None and row.kind == document.kind:
        offsets = [(chunk.start_offset, chunk.end_offset, chunk.text) for chunk in previous]
        grown = appended_at(text, row.content_hash, offsets)
    if grown is not None:
        as_is = sorted(previous, key=lambda chunk: chunk.ordinal)
        last = as_is[-1]
        if last.end_offset == grown and not text[grown].isspace():
            # The old text ended inside a word that goes on: its chunk is chunked again.
            as_is.pop()
            assert last.start_offset is not None
            grown = last.start_offset
        spans = chunk_source(
            text, document.kind, target_size=target, path=document.hint, begin=grown
        )
        ordinals = following_ordinals(as_is[-1].ordinal if as_is else None, len(spans))
        if ordinals is not None:
            return as_is, spans, ordinals
    spans = chunk_source(text, document.kind, target_size=target, path=document.hint)
    ordinals = assign_ordinals(
        [(chunk.ordinal, chunk.text) for chunk in previous], [span.text for span in spans]
    )
    return [], spans, ordinals


def _stored_chunks(conn: Connection, source_ids: list[str]) -> dict[str, list[StoredChunk]]:
    found: dict[str, list[StoredChunk]] = {}
    for batch in batches(source_ids):
        rows = conn.execute(
            select(
                chunks.c.source_id,
                chunks.c.id,
                chunks.c.ordinal,
                chunks.c.text,
                chunks.c.start_offset,
                chunks.c.end_offset,
                chunks.c.metadata,
                chunks.c.said_from,
                chunks.c.said_until,
            ).where(chunks.c.source_id.in_(batch))
        )
        for row in rows:
            found.setdefault(row.source_id, []).append(
                StoredChunk(
                    row.id,
                    row.ordinal,
                    row.text,
                    row.start_offset,
                    row.end_offset,
                    row.metadata,
                    (row.said_from, row.said_until),
                )
            )
    return found


def delete_sources(conn: Connection, ids: list[str]) -> int:
    """Delete sources with their chunks, entity links, scans and embeddings, and the entities
    that only they named; the count deleted.

    The foreign keys cascade too, but saying it here keeps the rule visible and independent of
    whether a connection has foreign keys switched on.
    """
    removed = 0
    for batch in batches(ids):
        of_sources = select(chunks.c.id).where(chunks.c.source_id.in_(batch))
        named = set(
            conn.execute(
                select(chunk_entities.c.entity_id)
                .where(chunk_entities.c.chunk_id.in_(of_sources))
                .distinct()
            ).scalars()
        )
        for links in (chunk_entities, entity_scans):
            conn.execute(delete(links).where(links.c.chunk_id.in_(of_sources)))
        vectors = conn.execute(delete(embeddings).where(embeddings.c.chunk_id.in_(of_sources)))
        chunk_vectors_changed(conn, vectors.rowcount)
        conn.execute(delete(chunks).where(chunks.c.source_id.in_(batch)))
        removed += conn.execute(delete(sources).where(sources.c.id.in_(batch))).rowcount
        entity_links.prune(conn, named)
    return removed


def file_document(read: FileText, kind: str | None, extra: dict[str, Any]) -> Document:
    return Document(
        uri=read.uri,
        text=read.text,
        kind=kind or detect_kind(read.path, read.text),
        size=read.size,
        metadata={"path": read.path, "size": read.size, "mtime": read.mtime, **extra},
        name=os.path.basename(read.path),
        hint=read.path,
    )


def detect_text_kind(uri: str, body: str) -> str:
    """By the URI's file name first; a nameless text can still be recognised as a transcript."""
    detected = detect_kind(uri, body)
    return detect_kind(None, body) if detected == "document" else detected


def _content_hash(body: str) -> str:
    """sha256 of the UTF-8 text, hex: the legacy format's `content_hash`."""
    return hashlib.sha256(body.encode("utf-8")).hexdigest()


def _kind_facts(document: Document) -> dict[str, Any]:
    """Source metadata a kind adds: the language of code, the turns of a transcript..."""
    if document.kind == "source_file":
        language = language_for(document.hint)
        return {} if language is None else {"language": language}
    if document.kind == "transcript":
        turns = parse_transcript(document.text)
        if not turns:
            return {}
        stamps = [turn.ts for turn in turns if turn.ts is not None]
        return {
            "roles": sorted({turn.role for turn in turns}),
            "turns": len(turns),
            "first_ts": stamps[0] if stamps else None,
            "last_ts": stamps[-1] if stamps else None,
        }
    if document.kind == "log":
        body = document.text
        return {"lines": body.count("\n") + (1 if body and not body.endswith("\n") else 0)}
    return {}


def _derived_title(document: Document, chunks: list[Any]) -> str | None:
    """A markdown source's first heading (from its chunks' metadata, in order), else the file
    name (None for a nameless text)."""
    if document.kind == "markdown":
        for metadata in chunks:
            heading_path = metadata.get("heading_path")
            if isinstance(heading_path, list) and heading_path:
                return str(heading_path[0])
    return document.name
