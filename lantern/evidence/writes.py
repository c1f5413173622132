"""The evidence repository's writes: sources ingested from text and files, removed, and their
chunks' vectors computed.

The rows themselves are written by `lantern.evidence.documents`, in the caller's transaction.
Transactions: `ingest_text` and `remove_source` are one transaction each. An `ingest_path` run
commits in batches (at most `BATCH_FILES` files or `BATCH_CHARS` characters each), so that a
long run neither holds the write lock for minutes nor loses finished work when it is
interrupted; each source is all-or-nothing, and running the same ingest again picks up where it
stopped (what was stored is then unchanged and skipped). Every argument is checked, and every
path and pattern resolved, before the first batch is written.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING

from sqlalchemy import or_, select

from lantern.boundary import checks_itself
from lantern.errors import InvalidInput
from lantern.evidence import inputs
from lantern.evidence.chunking import DEFAULT_TARGET_SIZE
from lantern.evidence.chunkvectors import embed_after_ingest
from lantern.evidence.core import EvidenceCore
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
from lantern.evidence.records import IngestResult, IngestSummary, SkippedPath, Source
from lantern.evidence.rows import find_source, starts_with, to_source
from lantern.store.dialect import serialize_writers
from lantern.store.models import sources

if TYPE_CHECKING:
    from lantern.embeddings.provider import EmbeddingProvider
    from lantern.semantic.backfill import EmbedReport
    from lantern.semantic.backfill import Progress as EmbedProgress

BATCH_FILES = 256
BATCH_CHARS = 8_000_000

Progress = Callable[[int, int], None]


class EvidenceWrites(EvidenceCore):
    """Ingests and removes sources, and computes their chunks' vectors."""

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
