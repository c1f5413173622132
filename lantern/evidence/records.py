"""Plain immutable evidence records (sources, chunks, search hits, ingest summaries) and their
JSON shapes, with the same contract as `lantern.memory.records` (docs/json.md): keys may be
added at the end, never renamed or removed.

Apart from the memory records so that a memory command does not build these classes at all.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, TypeVar

from lantern.entities.records import EntityRef
from lantern.retrieval.modes import SearchSummary
from lantern.validation import JSONObject

T = TypeVar("T")


def freeze_metadata(value: object) -> Mapping[str, Any]:
    """A read-only view of stored metadata; anything but a JSON object (legacy NULL, '') is {}."""
    return MappingProxyType(dict(value) if isinstance(value, Mapping) else {})


@dataclass(frozen=True, slots=True)
class EmbeddingInfo:
    """That a chunk has a stored vector, and of what; the float32 values stay in the store."""

    model: str
    dim: int

    def to_json(self) -> JSONObject:
        """`{"model", "dim"}`: the vector itself is not rendered."""
        return {"model": self.model, "dim": self.dim}


@dataclass(frozen=True, slots=True)
class Chunk:
    """A verbatim slice of a source's text: `text == source_text[start_offset:end_offset]`."""

    id: str
    source_id: str
    ordinal: int
    text: str
    start_offset: int | None
    end_offset: int | None
    metadata: Mapping[str, Any]
    created_at: int
    entities: tuple[EntityRef, ...] = ()
    embeddings: tuple[EmbeddingInfo, ...] = ()
    said_from: int | None = None
    """When its words were said, from (unix seconds; `lantern.evidence.said`); None if unknown."""
    said_until: int | None = None
    """When its words were said, until (the same as `said_from` for a point in time)."""

    def to_json(self) -> JSONObject:
        """The chunk as JSON: the keys of docs/json.md ("Sources and chunks"), in that order."""
        return {
            "id": self.id,
            "source_id": self.source_id,
            "ordinal": self.ordinal,
            "text": self.text,
            "start_offset": self.start_offset,
            "end_offset": self.end_offset,
            "metadata": dict(self.metadata),
            "created_at": self.created_at,
            "entities": [entity.to_json() for entity in self.entities],
            "embeddings": [embedding.to_json() for embedding in self.embeddings],
            "said_from": self.said_from,
            "said_until": self.said_until,
        }


@dataclass(frozen=True, slots=True)
class Source:
    """Where evidence came from. `chunks` is filled by `get_source`, None in listings."""

    id: str
    uri: str
    kind: str
    title: str | None
    content_hash: str
    metadata: Mapping[str, Any]
    created_at: int
    updated_at: int
    chunk_count: int
    chunks: tuple[Chunk, ...] | None = None
    next_cursor: int | None = None
    """With a page of `chunks`: the ordinal to continue after, None on the last page."""

    def to_json(self) -> JSONObject:
        """The source as JSON (docs/json.md, "Sources and chunks"); `chunks` only when loaded."""
        rendered: JSONObject = {
            "id": self.id,
            "uri": self.uri,
            "kind": self.kind,
            "title": self.title,
            "content_hash": self.content_hash,
            "metadata": dict(self.metadata),
            "created_at": self.created_at,
            "updated_at": self.updated_at,
            "chunk_count": self.chunk_count,
        }
        if self.chunks is not None:
            rendered["chunks"] = [chunk.to_json() for chunk in self.chunks]
        return rendered

    def shown_json(self, cited_by: list[str]) -> JSONObject:
        """`source show --json`: the source, the records citing it, and with a page of chunks
        the cursor that continues them (keys added last, so the older keys keep their order)."""
        rendered = {**self.to_json(), "cited_by": cited_by}
        if self.chunks is not None:
            rendered["next_cursor"] = self.next_cursor
        return rendered


@dataclass(frozen=True, slots=True)
class ChunkDetail:
    """A chunk with its source and, when asked for, its neighbours (`lantern chunk show`)."""

    chunk: Chunk
    source: Source
    before: tuple[Chunk, ...] = ()
    after: tuple[Chunk, ...] = ()

    def to_json(self) -> JSONObject:
        """The chunk's keys, then `source`, `before` and `after` (`chunk show --json`); the
        chunk's keys added since (`said_from`, `said_until`) come last, so that the older keys
        keep their order."""
        return self._rendered({})

    def shown_json(self, cited_by: list[str]) -> JSONObject:
        """`chunk show --json`: `to_json` with the records citing the chunk (`cited_by`) after
        `after`, where it has always been."""
        return self._rendered({"cited_by": cited_by})

    def _rendered(self, extra: JSONObject) -> JSONObject:
        rendered = self.chunk.to_json()
        later = {key: rendered.pop(key) for key in _CHUNK_KEYS_ADDED}
        return {
            **rendered,
            "source": self.source.to_json(),
            "before": [chunk.to_json() for chunk in self.before],
            "after": [chunk.to_json() for chunk in self.after],
            **extra,
            **later,
        }


_CHUNK_KEYS_ADDED = ("said_from", "said_until")
"""The keys a chunk's JSON gained after `chunk show --json` had added its own after them."""


@dataclass(frozen=True, slots=True)
class SearchHit:
    """One search result; `score` is higher for better matches (docs/search.md, "Ranking").

    `mode`, `keyword_rank`, `semantic_rank` and `similarity` explain where the hit came from
    (`lantern.retrieval.modes`): the ranking, its 1-based place in the keyword ranking, and its
    place in the semantic ranking and its cosine similarity, each None where that ranking did
    not run or did not reach the chunk. `said_from` and `said_until` say when the chunk's words
    were said (`lantern.evidence.said`), None when unknown.
    """

    chunk_id: str
    source_id: str
    uri: str
    kind: str
    ordinal: int
    start_offset: int | None
    end_offset: int | None
    score: float
    snippet: str
    mode: str
    keyword_rank: int | None
    semantic_rank: int | None = None
    similarity: float | None = None
    said_from: int | None = None
    said_until: int | None = None

    def to_json(self) -> JSONObject:
        """The hit as JSON: the keys of docs/json.md ("Search hits"), in that order."""
        return {
            "chunk_id": self.chunk_id,
            "source_id": self.source_id,
            "uri": self.uri,
            "kind": self.kind,
            "ordinal": self.ordinal,
            "start_offset": self.start_offset,
            "end_offset": self.end_offset,
            "score": self.score,
            "snippet": self.snippet,
            "mode": self.mode,
            "keyword_rank": self.keyword_rank,
            "semantic_rank": self.semantic_rank,
            "similarity": self.similarity,
            "said_from": self.said_from,
            "said_until": self.said_until,
        }


class Results(list[T]):
    """Search hits or sources, the first `limit` of them: a plain list that also knows whether
    `more` matched past the limit (for a caller to say so, or to ask for the next page)."""

    __slots__ = ("more",)

    def __init__(self, items: Sequence[T] = (), *, more: bool = False) -> None:
        super().__init__(items)
        self.more = more


class SearchResults(Results[SearchHit]):
    """The hits of a search, best first, and what the search did (`summary`: the mode it ran
    in, the model it compared, the chunks it could not compare for want of a vector). A plain
    list otherwise."""

    __slots__ = ("summary",)

    def __init__(
        self,
        hits: Sequence[SearchHit] = (),
        summary: SearchSummary | None = None,
        *,
        more: bool = False,
    ) -> None:
        super().__init__(hits, more=more)
        self.summary = summary


@dataclass(frozen=True, slots=True)
class SkippedPath:
    """A path an ingest left out on its own accord, and why (binary, .gitignore, symlink...).

    `named` is true for a file the caller named itself (rather than one a walk found): it was
    asked for and could not be taken, which the CLI reports with a non-zero exit code.
    """

    path: str
    reason: str
    named: bool = False

    def to_json(self) -> JSONObject:
        """`{"path", "reason", "named"}`."""
        return {"path": self.path, "reason": self.reason, "named": self.named}


@dataclass(frozen=True, slots=True)
class IngestResult:
    """What ingesting one source did: `status` is added, updated or unchanged."""

    status: str
    source: Source
    chunks_written: int
    chunks_kept: int
    bytes: int

    def to_json(self) -> JSONObject:
        """`status`, `chunks_written`, `chunks_kept`, `bytes`, then `source`."""
        return {
            "status": self.status,
            "chunks_written": self.chunks_written,
            "chunks_kept": self.chunks_kept,
            "bytes": self.bytes,
            "source": self.source.to_json(),
        }


@dataclass(frozen=True, slots=True)
class IngestSummary:
    """The totals of an ingest run (`lantern ingest --json`).

    `sources` holds each source's `IngestResult` for Python callers; the JSON summary leaves it
    out so that the output of a run over a million files stays small.
    """

    added: int
    updated: int
    unchanged: int
    skipped: int
    removed: int
    chunks: int
    bytes: int
    seconds: float
    skipped_paths: tuple[SkippedPath, ...] = ()
    sources: tuple[IngestResult, ...] = ()

    @classmethod
    def from_results(
        cls,
        results: Sequence[IngestResult],
        *,
        seconds: float,
        skipped_paths: Sequence[SkippedPath] = (),
        removed: int = 0,
    ) -> IngestSummary:
        statuses = [result.status for result in results]
        return cls(
            added=statuses.count("added"),
            updated=statuses.count("updated"),
            unchanged=statuses.count("unchanged"),
            skipped=len(skipped_paths),
            removed=removed,
            chunks=sum(result.chunks_written for result in results),
            bytes=sum(result.bytes for result in results),
            seconds=seconds,
            skipped_paths=tuple(skipped_paths),
            sources=tuple(results),
        )

    def to_json(self) -> JSONObject:
        """The summary as `ingest --json` prints it (docs/json.md, "Ingest summaries")."""
        return {
            "added": self.added,
            "updated": self.updated,
            "unchanged": self.unchanged,
            "skipped": self.skipped,
            "removed": self.removed,
            "chunks": self.chunks,
            "bytes": self.bytes,
            "seconds": round(self.seconds, 3),
            "skipped_paths": [skipped.to_json() for skipped in self.skipped_paths],
        }
