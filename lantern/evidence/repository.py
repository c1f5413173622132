"""The evidence repository: sources chunked in, found again by keyword, inspected and removed.

Every rule about evidence lives here once, for the CLI, the Python API and the MCP server; the
write path is `lantern.evidence.documents`, row reading `lantern.evidence.rows`, argument
checks `lantern.evidence.inputs`.

Transactions: `ingest_text`, `remove_source` and every read are one transaction each. An
`ingest_path` run commits in batches (at most `BATCH_FILES` files or `BATCH_CHARS` characters
each), so that a long run neither holds the write lock for minutes nor loses finished work when
it is interrupted; each source is all-or-nothing, and running the same ingest again picks up
where it stopped (what was stored is then unchanged and skipped). Every argument is checked, and
every path and pattern resolved, before the first batch is written.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING

from sqlalchemy import and_, or_, select

from lantern import validation
from lantern.boundary import checked, checks_itself
from lantern.entities import names as entity_names
from lantern.errors import InvalidInput, NotFound, Param
from lantern.evidence import inputs
from lantern.evidence.chunking import DEFAULT_TARGET_SIZE
from lantern.evidence.chunkvectors import embed_after_ingest
from lantern.evidence.documents import (
    Document,
    delete_sources,
    detect_text_kind,
    file_document,
    write_documents,
)
from lantern.evidence.files import (
    MAX_FILE_BYTES,
    directory_uri_prefix,
    path_of_uri,
    read_file,
    select_files,
)
from lantern.evidence.records import (
    Chunk,
    ChunkDetail,
    IngestResult,
    IngestSummary,
    Results,
    SearchResults,
    SkippedPath,
    Source,
)
from lantern.evidence.rows import find_source, load_chunks, source_select, starts_with, to_source
from lantern.evidence.search import SearchFilters, search_chunks
from lantern.retrieval.modes import KEYWORD_MODES, SEARCH_MODES, SearchMode, SearchSummary
from lantern.retrieval.query import ParsedQuery, parse_query
from lantern.store.dialect import serialize_writers
from lantern.store.engine import Store
from lantern.store.models import chunks, sources

if TYPE_CHECKING:
    from lantern.embeddings.provider import EmbeddingProvider
    from lantern.semantic.backfill import EmbedReport
    from lantern.semantic.backfill import Progress as EmbedProgress

DEFAULT_SOURCE_LIMIT = 100
DEFAULT_SEARCH_LIMIT = 20
MAX_CHUNK_PAGE = 1_000
PAGE_CHARS = 1_000_000
"""A page of a source's chunks holds at most this many characters of text (one chunk more
than that when a single chunk is larger)."""
BATCH_FILES = 256
BATCH_CHARS = 8_000_000

Progress = Callable[[int, int], None]


@checked
class EvidenceRepository:
    """Ingests, searches, shows and removes the evidence in one store."""

    def __init__(self, store: Store) -> None:
        self._store = store

    # --- ingest ---------------------------------------------------------------------------

    @checks_itself("text")
    def ingest_text(
        self,
        uri: str,
        text: str,
        *,
        kind: str | None = None,
        metadata: Mapping[str, object] | str | None = None,
        title: str | None = None,
        target_size: int = DEFAULT_TARGET_SIZE,
    ) -> IngestResult:
        """Store `text` as the source `uri` (tool output, a piped log, a pasted transcript).

        The kind is detected from the URI's file name, then from the content, when not given.
        Re-ingesting the same URI follows the rules of `ingest_path`: unchanged text (and
        kind) is left as is; changed text replaces the chunks, keeping the ids of those whose
        text did not change where the format allows (see `lantern.evidence.chunkplan`).

        Args:
            uri: Where the text comes from (`file:///notes/a.md`, `tool:grep/run-42`); a source is
                known by it.
            text: The text itself, at most `MAX_FILE_BYTES` bytes as UTF-8.
            kind: The source kind (`markdown`, `transcript`, `code`...); None detects it.
            metadata: A JSON object (a mapping, or its JSON text) stored with the source, beside
                the `size` Lantern records.
            title: A title to show for the source; None, none.
            target_size: The size of a chunk to aim at, in characters (100 to 100,000).

        Returns:
            The source, its chunks, and whether it was `added`, `updated` or `unchanged`.

        Raises:
            InvalidInput: An empty or malformed URI, text too large, an unknown kind, metadata that
                is not a JSON object, a chunk size out of range.
        """
        checked_uri = inputs.uri(uri)
        body = inputs.text(text)
        size = len(body.encode("utf-8"))
        if size > MAX_FILE_BYTES:
            raise InvalidInput(
                f"text is too large: {size} bytes, the limit is {MAX_FILE_BYTES} (split it)"
            )
        document = Document(
            uri=checked_uri,
            text=body,
            kind=inputs.kind(kind) if kind is not None else detect_text_kind(checked_uri, body),
            size=size,
            metadata={"size": size, **inputs.metadata(metadata)},
            title=inputs.title(title),
            hint=checked_uri,
        )
        target = inputs.target_size(target_size)
        at = self._store.clock()
        with self._store.write() as conn:
            result = write_documents(conn, [document], target, at)[0]
        if result.status != "unchanged":
            embed_after_ingest(self._store, [result.source.id])
        return result

    def ingest_path(
        self,
        paths: str | os.PathLike[str] | Sequence[str | os.PathLike[str]],
        *,
        include: Sequence[str] = (),
        exclude: Sequence[str] = (),
        kind: str | None = None,
        metadata: Mapping[str, object] | str | None = None,
        target_size: int = DEFAULT_TARGET_SIZE,
        prune: bool = False,
        progress: Progress | None = None,
    ) -> IngestSummary:
        """Ingest files and directories (see `lantern.evidence.files` for what is read and skipped).

        `kind` forces one kind on every file (else it is detected per file); `metadata` is
        added to every source's. With `prune`, sources under the given directories whose files
        no longer exist are removed afterwards.

        Args:
            paths: A file or directory, or a list of them; directories are read recursively.
            include: Gitignore-style patterns, matched against the path relative to the directory
                given: a file is read when it matches any of them (every file, when there is none).
            exclude: Gitignore-style patterns of files and directories to leave out (an excluded
                directory is not entered).
            kind: The kind of every source; None detects it per file.
            metadata: A JSON object (a mapping, or its JSON text) added to every source's metadata.
            target_size: The size of a chunk to aim at, in characters (100 to 100,000).
            prune: Afterwards, remove the sources under the given directories whose files are gone.
            progress: Called after each file with the files looked at so far and the files to look
                at; None reports nothing.

        Returns:
            What was added, updated, unchanged, skipped (and why) and removed, and the time it took.

        Raises:
            InvalidInput: No path, a path that does not exist, or a bad kind, metadata or pattern.
        """
        started = time.perf_counter()
        forced_kind = None if kind is None else inputs.kind(kind)
        extra = inputs.metadata(metadata)
        target = inputs.target_size(target_size)
        roots = [paths] if isinstance(paths, str | os.PathLike) else list(paths)
        if not roots:
            raise InvalidInput("give at least one file or directory to ingest")
        selection = select_files(roots, include=include, exclude=exclude)
        at = self._store.clock()
        skipped: list[SkippedPath] = list(selection.skipped)
        results: list[IngestResult] = []
        batch: list[Document] = []
        batch_chars = 0
        for done, found in enumerate(selection.files, 1):
            read = read_file(found)
            if isinstance(read, SkippedPath):
                skipped.append(read)
            else:
                batch.append(file_document(read, forced_kind, extra))
                batch_chars += len(read.text)
                if len(batch) >= BATCH_FILES or batch_chars >= BATCH_CHARS:
                    results += self._write_batch(batch, target, at)
                    batch, batch_chars = [], 0
            if progress is not None:
                progress(done, len(selection.files))
        if batch:
            results += self._write_batch(batch, target, at)
        embed_after_ingest(
            self._store, [result.source.id for result in results if result.status != "unchanged"]
        )
        removed = self._prune(selection.directories) if prune else 0
        return IngestSummary.from_results(
            results,
            seconds=time.perf_counter() - started,
            skipped_paths=skipped,
            removed=removed,
        )

    def _write_batch(self, batch: list[Document], target: int, at: int) -> list[IngestResult]:
        with self._store.write() as conn:
            return write_documents(conn, batch, target, at)

    def _prune(self, directories: Sequence[str]) -> int:
        """Remove the sources under `directories` whose files are gone from the disk."""
        if not directories:
            return 0
        prefixes = [directory_uri_prefix(directory) for directory in directories]
        under = or_(*(starts_with(sources.c.uri, prefix) for prefix in prefixes))
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
            serialize_writers(conn)
            return delete_sources(conn, gone)

    # --- search ---------------------------------------------------------------------------

    def search(
        self,
        query: str,
        *,
        kind: str | Iterable[str] | None = None,
        source: str | Iterable[str] | None = None,
        since: int | float | str | None = None,
        until: int | float | str | None = None,
        limit: int = DEFAULT_SEARCH_LIMIT,
        raw: bool = False,
        mode: str | None = None,
        model: str | None = None,
        entity: str | Sequence[str] | None = None,
    ) -> SearchResults:
        """The best chunks for `query`, best first (syntax: `lantern.retrieval.query`): a list
        of `SearchHit`s whose `more` says whether other chunks matched past `limit`.

        `mode` is `keyword` (every word required), `any` (any word but the common ones),
        `semantic` (nearest by the embeddings of one model: `model`, else LANTERN_EMBED_MODEL,
        else the store's default, else `minilm`) or `hybrid` (`any` and `semantic` fused);
        None, the default, is `hybrid` where semantic search can run and `any` where it cannot
        (`lantern.retrieval.modes`). `kind` and `source` (a source id or a URI prefix) take one
        value or several (any of them matches); `since`/`until` bound the time a chunk was
        ingested (`since` <= created_at < `until`); `entity` keeps the chunks linked to any of these
        entities (`KIND:NAME` or ids). A query with nothing searchable returns no
        hits. With `raw`, the query goes to the engine as it is (FTS5 or `to_tsquery` syntax;
        the mode is then `keyword`, the engine's own), and a malformed one raises
        `InvalidInput`. The result's `summary` says which mode ran, with which model, and how
        many chunks it could not compare for want of a vector.

        Args:
            query: The words to look for (or, with `raw`, the engine's own query).
            kind: Only chunks of sources of these kinds, one or several; None, every kind.
            source: Only chunks of these sources, each a source id or a URI prefix; None, every
                source.
            since: Only chunks ingested at or after this time (unix seconds or ISO-8601); None, no
                bound.
            until: Only chunks ingested before this time; None, no bound.
            limit: At most this many hits (1 to 10,000).
            raw: Pass the query to the engine as written (FTS5 or `to_tsquery` syntax).
            mode: `keyword`, `any`, `semantic` or `hybrid`; None picks `hybrid` or `any` (see
                above).
            model: The embedding provider of a semantic or hybrid search; None uses
                LANTERN_EMBED_MODEL, then the store's default, then `minilm`.
            entity: Only chunks linked to any of these entities (`KIND:NAME` or an entity id), one
                or a list; None, no such filter.

        Returns:
            The hits, best first, with `more` and the search's `summary`.

        Raises:
            InvalidInput: An unknown mode, a mode with `raw`, a malformed raw query, a filter out of
                range.
        """
        requested = None
        if mode is not None:
            requested = SearchMode(validation.choice("mode", mode, SEARCH_MODES))
        if raw:
            if requested is not None and requested is not SearchMode.KEYWORD:
                raise InvalidInput(
                    "a raw query goes to the engine as written, so its mode is keyword; ",
                    Param("mode"),
                    f" {mode} does not apply (write OR in the query instead)",
                )
            requested = SearchMode.KEYWORD
        filters = SearchFilters(
            kinds=tuple(inputs.filter_values("kind", kind)),
            sources=tuple(inputs.filter_values("source", source)),
            since=None if since is None else validation.timestamp("since", since),
            until=None if until is None else validation.timestamp("until", until),
            entities=tuple(entity_names.id_of(key) for key in entity_names.keys(entity)),
        )
        checked_limit = validation.limit(limit)
        if not isinstance(query, str):
            raise InvalidInput(Param("query"), f" must be text; got {type(query).__name__}")
        if requested in KEYWORD_MODES:
            if model is not None:
                from lantern.semantic.plan import check_model

                check_model(model)
            return self._keyword_search(query, raw, requested, filters, checked_limit)
        from lantern.evidence.semantic import search_by_meaning
        from lantern.semantic.plan import plan_mode
        from lantern.semantic.sides import CHUNKS

        plan = plan_mode(self._store, CHUNKS, requested, model)
        if plan.mode in KEYWORD_MODES:
            return self._keyword_search(query, raw, plan.mode, filters, checked_limit)
        summary = SearchSummary(plan.mode.value, plan.model)
        parsed = parse_query(query)
        if parsed is None:
            return SearchResults([], summary)
        # One more than asked for, to know whether more matched.
        hits, missing = search_by_meaning(
            self._store, plan, query, parsed, filters, checked_limit + 1
        )
        return SearchResults(
            hits[:checked_limit],
            SearchSummary(plan.mode.value, plan.model, missing),
            more=len(hits) > checked_limit,
        )

    def _keyword_search(
        self, query: str, raw: bool, mode: SearchMode, filters: SearchFilters, limit: int
    ) -> SearchResults:
        summary = SearchSummary(mode.value)
        prepared: ParsedQuery | str
        if raw:
            if not query.strip():
                return SearchResults([], summary)
            prepared = validation.text("query", query, max_chars=inputs.MAX_RAW_QUERY_CHARS)
        else:
            parsed = parse_query(query)
            if parsed is None:
                return SearchResults([], summary)
            prepared = parsed
        # One more than asked for, to know whether more matched.
        hits = search_chunks(self._store, prepared, filters, limit + 1, mode)
        return SearchResults(hits[:limit], summary, more=len(hits) > limit)

    def embed(
        self, provider: EmbeddingProvider, *, progress: EmbedProgress | None = None
    ) -> EmbedReport:
        """Compute the vectors of `provider`'s model that chunks lack or hold stale, in batches
        that each commit (`lantern.evidence.chunkvectors`): interrupted, it resumes where it stopped
        when run again.

        Args:
            provider: The embedding provider whose model makes the vectors.
            progress: Called after each batch with the chunks looked at so far and the chunks to
                look at; None reports nothing.

        Returns:
            How many vectors were computed and written, how many were already current, and the time
            it took.
        """
        from lantern.evidence.chunkvectors import embed_missing

        return embed_missing(self._store, provider, progress=progress)

    # --- inspect and remove ---------------------------------------------------------------

    def get_source(
        self,
        ref: str,
        *,
        with_chunks: bool = True,
        limit: int | None = None,
        after: int | None = None,
    ) -> Source:
        """A source by id or URI, with its chunks in order (unless `with_chunks` is False).

        `limit` returns one page of chunks rather than all of them: at most that many, and no
        more than `PAGE_CHARS` characters of text (at least one chunk, whatever its size), so
        that a page of a large source stays small. `after` continues after the chunk of that
        ordinal: the page's `next_cursor`, which is None when no chunk follows.

        Args:
            ref: The source's id (`src_...`) or its URI.
            with_chunks: Include the chunks (False gives the source's fields and counts only).
            limit: At most this many chunks on the page (1 to 1,000); None gives every chunk.
            after: The ordinal of the last chunk seen (a page's `next_cursor`); None starts at the
                first chunk.

        Raises:
            NotFound: No source with that id or URI.
        """
        size = None if limit is None else validation.limit(limit, maximum=MAX_CHUNK_PAGE)
        start = None if after is None else inputs.ordinal_cursor(after)
        with self._store.read() as conn:
            row = find_source(conn, ref)
            if not with_chunks:
                return to_source(row)
            condition = chunks.c.source_id == row.id
            if start is not None:
                condition = and_(condition, chunks.c.ordinal > start)
            found = load_chunks(conn, condition, limit=None if size is None else size + 1)
        page, more = _page(found, size)
        next_cursor = page[-1].ordinal if more else None
        return replace(to_source(row, tuple(page)), next_cursor=next_cursor)

    def list_sources(
        self,
        *,
        kind: str | Iterable[str] | None = None,
        uri_prefix: str | None = None,
        limit: int = DEFAULT_SOURCE_LIMIT,
        offset: int = 0,
    ) -> Results[Source]:
        """Sources in URI order, with their chunk counts: a list of `Source`s whose `more` says
        whether others follow past `limit`.

        Args:
            kind: Only sources of these kinds, one or several; None, every kind.
            uri_prefix: Only sources whose URI starts with this text; None, every source.
            limit: At most this many sources (1 to 10,000).
            offset: Skip this many first.
        """
        kinds = inputs.filter_values("kind", kind)
        checked_limit = validation.limit(limit)
        stmt = source_select().order_by(sources.c.uri, sources.c.id)
        stmt = stmt.limit(checked_limit + 1).offset(validation.offset(offset))
        if kinds:
            stmt = stmt.where(sources.c.kind.in_(kinds))
        if uri_prefix is not None:
            prefix = inputs.filter_values("uri_prefix", uri_prefix)[0]
            stmt = stmt.where(starts_with(sources.c.uri, prefix))
        with self._store.read() as conn:
            found = [to_source(row) for row in conn.execute(stmt)]
        return Results(found[:checked_limit], more=len(found) > checked_limit)

    def get_chunk(self, chunk_ref: str, *, context: int = 0) -> ChunkDetail:
        """A chunk, its source, and up to `context` chunks on each side of it.

        Args:
            chunk_ref: The chunk's id (`chk_...`).
            context: How many chunks before and after it to include (0 for none).

        Raises:
            NotFound: No chunk with that id.
        """
        count = inputs.context(context)
        if not isinstance(chunk_ref, str) or not chunk_ref.strip():
            raise NotFound("a chunk id is required")
        with self._store.read() as conn:
            found = load_chunks(conn, chunks.c.id == chunk_ref)
            if not found:
                raise NotFound(f"no chunk with id {chunk_ref!r}")
            chunk = found[0]
            row = conn.execute(source_select().where(sources.c.id == chunk.source_id)).one()
            before: list[Chunk] = []
            after: list[Chunk] = []
            if count:
                same_source = chunks.c.source_id == chunk.source_id
                before = load_chunks(
                    conn,
                    and_(same_source, chunks.c.ordinal < chunk.ordinal),
                    descending=True,
                    limit=count,
                )
                before.reverse()
                after = load_chunks(
                    conn, and_(same_source, chunks.c.ordinal > chunk.ordinal), limit=count
                )
            return ChunkDetail(chunk, to_source(row), tuple(before), tuple(after))

    def remove_source(self, ref: str) -> Source:
        """Delete a source, its chunks and their entity links and embeddings, in one go.

        Memory records that cite them keep their references. Returns the source as it was.

        Args:
            ref: The source's id (`src_...`) or its URI.

        Raises:
            NotFound: No source with that id or URI.
        """
        with self._store.write() as conn:
            serialize_writers(conn)
            row = find_source(conn, ref)
            delete_sources(conn, [row.id])
            return to_source(row)


def _page(found: list[Chunk], size: int | None) -> tuple[list[Chunk], bool]:
    """The chunks of one page, and whether any follow it."""
    if size is None:
        return found, False
    page: list[Chunk] = []
    chars = 0
    for chunk in found[:size]:
        if page and chars + len(chunk.text) > PAGE_CHARS:
            break
        page.append(chunk)
        chars += len(chunk.text)
    return page, len(page) < len(found)
