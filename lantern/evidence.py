"""The evidence repository: sources chunked in, found again by keyword, inspected and removed.

Every rule about evidence lives here once, for the CLI, the Python API and the MCP server.
Statements are SQLAlchemy Core against the legacy tables, written in batches (`executemany`),
because ingest is the hot path that benchmarks compare with raw `sqlite3`.

Transactions: `ingest_text`, `remove_source` and every read are one transaction each. An
`ingest_path` run commits in batches (at most `BATCH_FILES` files or `BATCH_CHARS` characters
each), so that a long run neither holds the write lock for minutes nor loses finished work when
it is interrupted; each source is all-or-nothing, and running the same ingest again picks up
where it stopped (what was stored is then unchanged and skipped). Every argument is checked, and
every path and pattern resolved, before the first batch is written.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import (
    ColumnElement,
    Connection,
    Row,
    Select,
    and_,
    bindparam,
    delete,
    func,
    insert,
    or_,
    select,
    text,
    update,
)

from lantern import validation
from lantern.chunking import DEFAULT_TARGET_SIZE, MIN_TARGET_SIZE, ChunkSpan, chunk_source
from lantern.chunkplan import assign_ordinals
from lantern.errors import InvalidInput, NotFound
from lantern.evidence_records import (
    Chunk,
    ChunkDetail,
    EmbeddingInfo,
    EntityRef,
    IngestResult,
    IngestSummary,
    SearchHit,
    SkippedPath,
    Source,
    freeze_metadata,
)
from lantern.ids import chunk_id, source_id
from lantern.ingest import (
    MAX_FILE_BYTES,
    FileText,
    directory_uri_prefix,
    path_of_uri,
    read_file,
    select_files,
)
from lantern.models import chunk_entities, chunks, embeddings, entities, sources
from lantern.prepared import Prepared
from lantern.query import ParsedQuery, parse_query
from lantern.search import SearchFilters, search_chunks
from lantern.sourcekinds import KNOWN_SOURCE_KINDS, detect_kind, language_for, parse_transcript
from lantern.store import Store, now
from lantern.validation import canonical_json

MAX_TARGET_SIZE = 100_000
MAX_URI_CHARS = 4_096
MAX_RAW_QUERY_CHARS = 10_000
MAX_CONTEXT = 100
DEFAULT_SOURCE_LIMIT = 100
DEFAULT_SEARCH_LIMIT = 20
BATCH_FILES = 256
BATCH_CHARS = 8_000_000
_ID_BATCH = 500  # ids per IN (...) list, far below every engine's parameter limit
_WRITER_LOCK = 7460771115  # PostgreSQL advisory lock: evidence writers take turns, as on SQLite
_KIND = re.compile(r"[a-z][a-z0-9_-]{0,63}")

Progress = Callable[[int, int], None]
"""Called with (files done, files in all) as an ingest reads its files."""


@dataclass(frozen=True, slots=True)
class _Document:
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
class _StoredChunk:
    id: str
    ordinal: int
    text: str
    start_offset: int | None
    end_offset: int | None
    metadata: Any


@dataclass(slots=True)
class _Writes:
    """The rows one batch writes, executed together so each table gets one `executemany`."""

    chunk_deletes: list[str] = field(default_factory=list)
    source_inserts: list[dict[str, Any]] = field(default_factory=list)
    source_updates: list[dict[str, Any]] = field(default_factory=list)
    chunk_updates: list[dict[str, Any]] = field(default_factory=list)
    chunk_inserts: list[dict[str, Any]] = field(default_factory=list)

    def execute(self, conn: Connection) -> None:
        # Deletes first: a new chunk may take the ordinal of a removed one.
        if self.chunk_deletes:
            doomed = [{"b_id": chunk} for chunk in self.chunk_deletes]
            for links in (chunk_entities, embeddings):
                conn.execute(delete(links).where(links.c.chunk_id == bindparam("b_id")), doomed)
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
                ),
                self.chunk_updates,
            )
        _INSERT_CHUNKS.execute_many(conn, self.chunk_inserts)


# Every column given: the rows of a batch go to the driver's executemany (see lantern.prepared).
_INSERT_SOURCES = Prepared(insert(sources))
_INSERT_CHUNKS = Prepared(insert(chunks))


class EvidenceRepository:
    """Ingests, searches, shows and removes the evidence in one store."""

    def __init__(self, store: Store) -> None:
        self._store = store

    # --- ingest ---------------------------------------------------------------------------

    def ingest_text(
        self,
        uri: str,
        text: str,
        *,
        kind: str | None = None,
        metadata: Mapping[str, Any] | str | None = None,
        title: str | None = None,
        target_size: int = DEFAULT_TARGET_SIZE,
    ) -> IngestResult:
        """Store `text` as the source `uri` (tool output, a piped log, a pasted transcript).

        The kind is detected from the URI's file name, then from the content, when not given.
        Re-ingesting the same URI follows the rules of `ingest_path`: unchanged text (and
        kind) is left as is; changed text replaces the chunks, keeping the ids of those whose
        text did not change where the format allows (see `lantern.chunkplan`).
        """
        checked_uri = _uri(uri)
        body = _text(text)
        size = len(body.encode("utf-8"))
        if size > MAX_FILE_BYTES:
            raise InvalidInput(
                f"text is too large: {size} bytes, the limit is {MAX_FILE_BYTES} (split it)"
            )
        document = _Document(
            uri=checked_uri,
            text=body,
            kind=_kind(kind) if kind is not None else _detect_kind(checked_uri, body),
            size=size,
            metadata={"size": size, **_metadata(metadata)},
            title=_title(title),
            hint=checked_uri,
        )
        target = _target_size(target_size)
        at = now()
        with self._store.write() as conn:
            return _write(conn, [document], target, at)[0]

    def ingest_path(
        self,
        paths: str | os.PathLike[str] | Sequence[str | os.PathLike[str]],
        *,
        include: Sequence[str] = (),
        exclude: Sequence[str] = (),
        kind: str | None = None,
        metadata: Mapping[str, Any] | str | None = None,
        target_size: int = DEFAULT_TARGET_SIZE,
        prune: bool = False,
        progress: Progress | None = None,
    ) -> IngestSummary:
        """Ingest files and directories (see `lantern.ingest` for what is read and skipped).

        `kind` forces one kind on every file (else it is detected per file); `metadata` is
        added to every source's. With `prune`, sources under the given directories whose files
        no longer exist are removed afterwards.
        """
        started = time.perf_counter()
        forced_kind = None if kind is None else _kind(kind)
        extra = _metadata(metadata)
        target = _target_size(target_size)
        roots = [paths] if isinstance(paths, str | os.PathLike) else list(paths)
        if not roots:
            raise InvalidInput("give at least one file or directory to ingest")
        selection = select_files(roots, include=include, exclude=exclude)
        at = now()
        skipped: list[SkippedPath] = list(selection.skipped)
        results: list[IngestResult] = []
        batch: list[_Document] = []
        batch_chars = 0
        for done, found in enumerate(selection.files, 1):
            read = read_file(found)
            if isinstance(read, SkippedPath):
                skipped.append(read)
            else:
                batch.append(_file_document(read, forced_kind, extra))
                batch_chars += len(read.text)
                if len(batch) >= BATCH_FILES or batch_chars >= BATCH_CHARS:
                    results += self._write_batch(batch, target, at)
                    batch, batch_chars = [], 0
            if progress is not None:
                progress(done, len(selection.files))
        if batch:
            results += self._write_batch(batch, target, at)
        removed = self._prune(selection.directories) if prune else 0
        return IngestSummary.from_results(
            results,
            seconds=time.perf_counter() - started,
            skipped_paths=skipped,
            removed=removed,
        )

    def _write_batch(self, batch: list[_Document], target: int, at: int) -> list[IngestResult]:
        with self._store.write() as conn:
            return _write(conn, batch, target, at)

    def _prune(self, directories: Sequence[str]) -> int:
        """Remove the sources under `directories` whose files are gone from the disk."""
        if not directories:
            return 0
        prefixes = [directory_uri_prefix(directory) for directory in directories]
        under = or_(*(_starts_with(sources.c.uri, prefix) for prefix in prefixes))
        with self._store.read() as conn:
            rows = conn.execute(select(sources.c.id, sources.c.uri).where(under)).all()
        gone = [
            row.id
            for row in rows
            if (path := path_of_uri(row.uri)) is not None and not os.path.lexists(path)
        ]
        if not gone:
            return 0
        with self._store.write() as conn:
            _serialize_writers(conn)
            return _delete_sources(conn, gone)

    # --- search ---------------------------------------------------------------------------

    def search(
        self,
        query: str,
        *,
        kind: str | Iterable[str] | None = None,
        source: str | Iterable[str] | None = None,
        since: int | str | None = None,
        until: int | str | None = None,
        limit: int = DEFAULT_SEARCH_LIMIT,
        raw: bool = False,
    ) -> list[SearchHit]:
        """The best chunks for `query`, best first (syntax: `lantern.query`; README "Search").

        `kind` and `source` (a source id or a URI prefix) take one value or several (any of
        them matches); `since`/`until` bound the time a chunk was ingested (`since` <=
        created_at < `until`). A query with nothing searchable returns no hits. With `raw`,
        the query goes to the engine as it is (FTS5 or `to_tsquery` syntax), and a malformed
        one raises `InvalidInput`.
        """
        filters = SearchFilters(
            kinds=tuple(_filter_values("kind", kind)),
            sources=tuple(_filter_values("source", source)),
            since=None if since is None else validation.timestamp("since", since),
            until=None if until is None else validation.timestamp("until", until),
        )
        checked_limit = validation.limit(limit)
        if not isinstance(query, str):
            raise InvalidInput(f"query must be text; got {type(query).__name__}")
        prepared: ParsedQuery | str
        if raw:
            if not query.strip():
                return []
            prepared = validation.text("query", query, max_chars=MAX_RAW_QUERY_CHARS)
        else:
            parsed = parse_query(query)
            if parsed is None:
                return []
            prepared = parsed
        return search_chunks(self._store, prepared, filters, checked_limit)

    # --- inspect and remove ---------------------------------------------------------------

    def get_source(self, ref: str, *, with_chunks: bool = True) -> Source:
        """A source by id or URI, with its chunks in order (unless `with_chunks` is False)."""
        with self._store.read() as conn:
            row = _find_source(conn, ref)
            found = None
            if with_chunks:
                found = tuple(_load_chunks(conn, chunks.c.source_id == row.id))
            return _source(row, found)

    def list_sources(
        self,
        *,
        kind: str | Iterable[str] | None = None,
        uri_prefix: str | None = None,
        limit: int = DEFAULT_SOURCE_LIMIT,
        offset: int = 0,
    ) -> list[Source]:
        """Sources in URI order, with their chunk counts."""
        kinds = _filter_values("kind", kind)
        stmt = _source_select().order_by(sources.c.uri, sources.c.id)
        stmt = stmt.limit(validation.limit(limit)).offset(validation.offset(offset))
        if kinds:
            stmt = stmt.where(sources.c.kind.in_(kinds))
        if uri_prefix is not None:
            prefix = _filter_values("uri prefix", uri_prefix)[0]
            stmt = stmt.where(_starts_with(sources.c.uri, prefix))
        with self._store.read() as conn:
            return [_source(row) for row in conn.execute(stmt)]

    def get_chunk(self, chunk_ref: str, *, context: int = 0) -> ChunkDetail:
        """A chunk, its source, and up to `context` chunks on each side of it."""
        count = _context(context)
        if not isinstance(chunk_ref, str) or not chunk_ref.strip():
            raise NotFound("a chunk id is required")
        with self._store.read() as conn:
            found = _load_chunks(conn, chunks.c.id == chunk_ref)
            if not found:
                raise NotFound(f"no chunk with id {chunk_ref!r}")
            chunk = found[0]
            row = conn.execute(_source_select().where(sources.c.id == chunk.source_id)).one()
            before: list[Chunk] = []
            after: list[Chunk] = []
            if count:
                same_source = chunks.c.source_id == chunk.source_id
                before = _load_chunks(
                    conn,
                    and_(same_source, chunks.c.ordinal < chunk.ordinal),
                    descending=True,
                    limit=count,
                )
                before.reverse()
                after = _load_chunks(
                    conn, and_(same_source, chunks.c.ordinal > chunk.ordinal), limit=count
                )
            return ChunkDetail(chunk, _source(row), tuple(before), tuple(after))

    def remove_source(self, ref: str) -> Source:
        """Delete a source, its chunks and their entity links and embeddings, in one go.

        Memory records that cite them keep their references. Returns the source as it was.
        """
        with self._store.write() as conn:
            _serialize_writers(conn)
            row = _find_source(conn, ref)
            _delete_sources(conn, [row.id])
            return _source(row)


# --- writing ---------------------------------------------------------------------------------


def _write(
    conn: Connection, documents: list[_Document], target: int, at: int
) -> list[IngestResult]:
    """Store a batch of documents in the caller's write transaction."""
    _serialize_writers(conn)
    stored = {
        uri: _StoredSource(*found[0])
        for uri in dict.fromkeys(document.uri for document in documents)
        if (found := _SOURCE_BY_URI.rows(conn, {"uri": uri}))
    }
    hashes = [_content_hash(document.text) for document in documents]
    changed_ids = [
        row.id
        for document, content_hash in zip(documents, hashes, strict=True)
        if (row := stored.get(document.uri)) is not None
        and not _unchanged(row, document, content_hash)
    ]
    old_chunks = _stored_chunks(conn, changed_ids)
    writes = _Writes()
    results: list[IngestResult] = []
    for document, content_hash in zip(documents, hashes, strict=True):
        row = stored.get(document.uri)
        if row is not None and _unchanged(row, document, content_hash):
            results.append(
                IngestResult("unchanged", _source(row), 0, row.chunk_count, document.size)
            )
            continue
        previous = [] if row is None else old_chunks.get(row.id, [])
        results.append(_plan(document, content_hash, row, previous, target, at, writes))
    writes.execute(conn)
    return results


def _unchanged(row: _StoredSource, document: _Document, content_hash: str) -> bool:
    return bool(row.content_hash == content_hash and row.kind == document.kind)


def _plan(
    document: _Document,
    content_hash: str,
    row: _StoredSource | None,
    previous: list[_StoredChunk],
    target: int,
    at: int,
    writes: _Writes,
) -> IngestResult:
    """Add the rows that store `document` to `writes`, keeping unchanged chunks' rows."""
    spans = chunk_source(document.text, document.kind, target_size=target, path=document.hint)
    source = source_id(document.uri) if row is None else str(row.id)
    ordinals = assign_ordinals(
        [(chunk.ordinal, chunk.text) for chunk in previous], [span.text for span in spans]
    )
    stored_by_id = {chunk.id: chunk for chunk in previous}
    kept: set[str] = set()
    inserted = 0
    for span, ordinal in zip(spans, ordinals, strict=True):
        new_id = chunk_id(source, ordinal, span.text)
        metadata = canonical_json(span.metadata)
        old = stored_by_id.get(new_id)
        if old is not None and old.ordinal == ordinal and old.text == span.text:
            kept.add(new_id)
            if (old.start_offset, old.end_offset, old.metadata) != (span.start, span.end, metadata):
                writes.chunk_updates.append(
                    {
                        "b_id": new_id,
                        "b_start": span.start,
                        "b_end": span.end,
                        "b_metadata": metadata,
                    }
                )
            continue
        inserted += 1
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
            }
        )
    writes.chunk_deletes.extend(chunk.id for chunk in previous if chunk.id not in kept)
    metadata = canonical_json({**_kind_facts(document), **document.metadata})
    title = document.title if document.title is not None else _derived_title(document, spans)
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
        chunk_count=len(spans),
    )
    status = "added" if row is None else "updated"
    return IngestResult(status, record, inserted, len(kept), document.size)


def _stored_chunks(conn: Connection, source_ids: list[str]) -> dict[str, list[_StoredChunk]]:
    found: dict[str, list[_StoredChunk]] = {}
    for batch in _batches(source_ids):
        rows = conn.execute(
            select(
                chunks.c.source_id,
                chunks.c.id,
                chunks.c.ordinal,
                chunks.c.text,
                chunks.c.start_offset,
                chunks.c.end_offset,
                chunks.c.metadata,
            ).where(chunks.c.source_id.in_(batch))
        )
        for row in rows:
            found.setdefault(row.source_id, []).append(
                _StoredChunk(
                    row.id, row.ordinal, row.text, row.start_offset, row.end_offset, row.metadata
                )
            )
    return found


def _delete_sources(conn: Connection, ids: list[str]) -> int:
    """Delete sources with their chunks, entity links and embeddings; the count deleted.

    The foreign keys cascade too, but saying it here keeps the rule visible and independent of
    whether a connection has foreign keys switched on.
    """
    removed = 0
    for batch in _batches(ids):
        of_sources = select(chunks.c.id).where(chunks.c.source_id.in_(batch))
        for links in (chunk_entities, embeddings):
            conn.execute(delete(links).where(links.c.chunk_id.in_(of_sources)))
        conn.execute(delete(chunks).where(chunks.c.source_id.in_(batch)))
        removed += conn.execute(delete(sources).where(sources.c.id.in_(batch))).rowcount
    return removed


def _serialize_writers(conn: Connection) -> None:
    """Make evidence writers take turns on PostgreSQL, as `BEGIN IMMEDIATE` does on SQLite.

    Two ingests of the same new file would otherwise both insert it and one would fail.
    """
    if conn.dialect.name == "postgresql":
        conn.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": _WRITER_LOCK})


# --- reading ---------------------------------------------------------------------------------


def _source_select() -> Select[Any]:
    count = (
        select(func.count())
        .where(chunks.c.source_id == sources.c.id)
        .scalar_subquery()
        .label("chunk_count")
    )
    return select(sources, count)


@dataclass(frozen=True, slots=True)
class _StoredSource:
    """A `_source_select` row read on the cheap path (by position, see `lantern.prepared`)."""

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
_SOURCE_BY_URI = Prepared(_source_select().where(sources.c.uri == bindparam("uri")))


def _source(row: Row[Any] | _StoredSource, found: tuple[Chunk, ...] | None = None) -> Source:
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


def _find_source(conn: Connection, ref: str) -> Row[Any]:
    if not isinstance(ref, str) or not ref.strip():
        raise NotFound("a source id or uri is required")
    for column in (sources.c.id, sources.c.uri):
        row = conn.execute(_source_select().where(column == ref)).first()
        if row is not None:
            return row
    hint = ""
    if ref.startswith(("/", "./", "../", "~")):
        hint = f" (a file's source is named by its uri, file://{os.path.abspath(os.path.expanduser(ref))})"
    raise NotFound(f"no source with id or uri {ref!r}{hint}")


def _load_chunks(
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
        )
        for row in rows
    ]


def _starts_with(column: Any, prefix: str) -> ColumnElement[bool]:
    """A case-sensitive prefix test on both engines (SQLite's LIKE ignores ASCII case)."""
    result: ColumnElement[bool] = func.substr(column, 1, len(prefix)) == prefix
    return result


def _batches(ids: list[str]) -> Iterable[list[str]]:
    return (ids[start : start + _ID_BATCH] for start in range(0, len(ids), _ID_BATCH))


# --- documents -------------------------------------------------------------------------------


def _file_document(read: FileText, kind: str | None, extra: dict[str, Any]) -> _Document:
    return _Document(
        uri=read.uri,
        text=read.text,
        kind=kind or detect_kind(read.path, read.text),
        size=read.size,
        metadata={"path": read.path, "size": read.size, "mtime": read.mtime, **extra},
        name=os.path.basename(read.path),
        hint=read.path,
    )


def _detect_kind(uri: str, body: str) -> str:
    """By the URI's file name first; a nameless text can still be recognised as a transcript."""
    detected = detect_kind(uri, body)
    return detect_kind(None, body) if detected == "document" else detected


def _content_hash(body: str) -> str:
    """sha256 of the UTF-8 text, hex: the legacy format's `content_hash`."""
    return hashlib.sha256(body.encode("utf-8")).hexdigest()


def _kind_facts(document: _Document) -> dict[str, Any]:
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


def _derived_title(document: _Document, spans: list[ChunkSpan]) -> str | None:
    """A markdown source's first heading, else the file name (None for a nameless text)."""
    if document.kind == "markdown":
        for span in spans:
            heading_path = span.metadata.get("heading_path")
            if isinstance(heading_path, list) and heading_path:
                return str(heading_path[0])
    return document.name


# --- argument checks -------------------------------------------------------------------------


def _uri(value: object) -> str:
    checked = validation.text("uri", value, max_chars=MAX_URI_CHARS)
    if checked != checked.strip() or any(ch in checked for ch in "\n\r\t"):
        raise InvalidInput(
            f"uri must not have surrounding whitespace or line breaks; got {checked!r}"
        )
    return checked


def _text(value: object) -> str:
    if not isinstance(value, str):
        raise InvalidInput(f"text must be a str; got {type(value).__name__}")
    if "\x00" in value:
        raise InvalidInput("text must not contain NUL characters (binary data is not evidence)")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise InvalidInput("text is not valid UTF-8 (it holds a lone surrogate)") from exc
    return value


def _kind(value: object) -> str:
    if not isinstance(value, str) or not _KIND.fullmatch(value):
        raise InvalidInput(
            f"kind must be one of {', '.join(KNOWN_SOURCE_KINDS)} or another lowercase word "
            f"(letters, digits, _ and -, at most 64); got {value!r}"
        )
    return value


def _title(value: object) -> str | None:
    if value is None:
        return None
    return validation.text("title", value, max_chars=MAX_URI_CHARS)


def _metadata(value: object) -> dict[str, Any]:
    """The caller's metadata: a JSON object (or its text), stored with canonical key order."""
    if value is None:
        return {}
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except json.JSONDecodeError as exc:
            raise InvalidInput(f"metadata is not valid JSON: {exc.msg}") from exc
    if not isinstance(value, Mapping):
        raise InvalidInput(f"metadata must be a JSON object; got {type(value).__name__}")
    try:
        json.dumps(dict(value), ensure_ascii=False, allow_nan=False).encode("utf-8")
    except (TypeError, ValueError, UnicodeEncodeError) as exc:
        raise InvalidInput(f"metadata is not storable JSON: {exc}") from exc
    if _contains_nul(value):
        raise InvalidInput("metadata must not contain NUL characters")
    result: dict[str, Any] = canonical_json(dict(value))
    return result


def _contains_nul(value: object) -> bool:
    """NUL cannot be stored in PostgreSQL text or JSONB, so it is refused on every engine."""
    if isinstance(value, str):
        return "\x00" in value
    if isinstance(value, Mapping):
        return any(_contains_nul(key) or _contains_nul(item) for key, item in value.items())
    if isinstance(value, list | tuple):
        return any(_contains_nul(item) for item in value)
    return False


def _target_size(value: object) -> int:
    if (
        isinstance(value, bool)
        or not isinstance(value, int)
        or not MIN_TARGET_SIZE <= value <= MAX_TARGET_SIZE
    ):
        raise InvalidInput(
            f"chunk size must be an integer from {MIN_TARGET_SIZE} to {MAX_TARGET_SIZE}; "
            f"got {value!r}"
        )
    return value


def _context(value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_CONTEXT:
        raise InvalidInput(f"context must be an integer from 0 to {MAX_CONTEXT}; got {value!r}")
    return value


def _filter_values(field_name: str, value: str | Iterable[str] | None) -> list[str]:
    values = [] if value is None else [value] if isinstance(value, str) else list(value)
    for item in values:
        if not isinstance(item, str) or not item.strip():
            raise InvalidInput(f"{field_name} filter must be non-empty text; got {item!r}")
    return values
