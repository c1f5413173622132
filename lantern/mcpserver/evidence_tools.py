"""The evidence tools: search, show a source or a chunk, and ingest text from the agent.

Evidence has no scope: it is the raw material every agent on a store shares, so these tools
stay available under `--scope`. None of their results holds anything of a memory record (a
source, chunk or hit names no record), so a restriction cannot leak through them.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from lantern.evidence.records import IngestSummary
from lantern.mcpserver import outputs
from lantern.mcpserver.spec import (
    ENTITY_FILTER,
    FLAG,
    FLOOR,
    MIN_SIMILARITY,
    MODE,
    MODE_HELP,
    MODEL,
    TIME,
    TIME_HELP,
    Args,
    Schema,
    ToolOutput,
    ToolSpec,
    api_arguments,
    arguments,
    described,
    limit,
    listed,
    without_vector_note,
)

if TYPE_CHECKING:
    from lantern.api import Lantern

# The limits `lantern.evidence.inputs` checks, repeated because importing the evidence package
# (and SQLAlchemy) would delay the server's first answer; a test keeps them equal.
MAX_CONTEXT = 100
MIN_TARGET_SIZE = 100
MAX_TARGET_SIZE = 100_000
MAX_URI_CHARS = 4_096
MAX_TEXT_BYTES = 64 * 1024 * 1024
"""`lantern.evidence.files.MAX_FILE_BYTES`, the limit of the CLI's standard input too."""
MAX_CHUNK_PAGE = 1_000
CHUNK_PAGE = 100
"""Chunks `lantern_source_show` returns at once when not told otherwise; the repository's
`PAGE_CHARS` caps a page's text too."""


def _search(lt: Lantern, args: Args) -> ToolOutput:
    fields = dict(args)
    hits = lt.evidence.search(fields.pop("query"), **fields)
    data: dict[str, Any] = {"hits": [hit.to_json() for hit in hits]}
    notes: tuple[str, ...] = ()
    summary = hits.summary
    if summary is not None:
        data["search"] = summary.to_json()
        if summary.without_vector and summary.model is not None:
            notes = (without_vector_note(summary, "chunks"),)
    return ToolOutput(data, notes)


def _source_show(lt: Lantern, args: Args) -> ToolOutput:
    found = lt.evidence.get_source(
        args["id"],
        with_chunks=not args.get("no_chunks", False),
        limit=args.get("limit", CHUNK_PAGE),
        after=args.get("after"),
        said_since=args.get("said_since"),
        said_until=args.get("said_until"),
    )
    return ToolOutput(found.shown_json(lt.cited_by(f"source:{found.id}", through_chunks=True)))


def _chunk_show(lt: Lantern, args: Args) -> ToolOutput:
    detail = lt.evidence.get_chunk(args["id"], context=args.get("context", 0))
    return ToolOutput(detail.shown_json(lt.cited_by(f"chunk:{detail.chunk.id}")))


def _ingest_text(lt: Lantern, args: Args) -> ToolOutput:
    fields = api_arguments(args)
    started = time.perf_counter()
    result = lt.evidence.ingest_text(fields.pop("uri"), fields.pop("text"), **fields)
    summary = IngestSummary.from_results([result], seconds=time.perf_counter() - started)
    # The CLI's summary, and (a key added at the end) the source, whose id the agent cites.
    return ToolOutput({**summary.to_json(), "source": result.source.to_json()})


_SOURCE_KIND: Schema = {
    "type": "string",
    "pattern": "^[a-z][a-z0-9_-]{0,63}$",
    "description": "transcript, markdown, source_file, tool_output, log, document, or another "
    "lowercase word.",
}

EVIDENCE_TOOLS = (
    ToolSpec(
        name="lantern_search",
        title="Search evidence",
        description=(
            "Find evidence chunks (what transcripts, notes, files and tool outputs say), best "
            "first. "
            + MODE_HELP
            + '"quoted words" match together, word* a prefix; anything else is literal text. '
            'Returns {"hits": [{"chunk_id", "source_id", "uri", "kind", "ordinal", '
            '"start_offset", "end_offset", "score", "snippet", "mode", "keyword_rank", '
            '"semantic_rank", "similarity", "said_from", "said_until"}], "search": {"mode", '
            '"model", "without_vector"}}: '
            "score higher for better matches (the fused score in hybrid, the cosine in "
            "semantic), snippets mark word matches with « and », mode the ranking the hit came "
            "from, keyword_rank, semantic_rank and similarity its places in the rankings (null "
            "where a ranking did not place it), said_from and said_until when the chunk's words "
            "were said (unix seconds: a transcript chunk's first and last turn times, a file's "
            "modification time; null when unknown)."
        ),
        input_schema=arguments(
            {
                "query": {"type": "string", "description": "Words, or a question."},
                "mode": MODE,
                "model": MODEL,
                "min_similarity": MIN_SIMILARITY,
                "floor": FLOOR,
                "kind": listed(_SOURCE_KIND, "Only sources of these kinds."),
                "source": listed(
                    {"type": "string", "minLength": 1},
                    "Only these source ids, or sources whose URI starts with one of these.",
                ),
                "since": described(TIME, f"Chunks ingested at or after this time: {TIME_HELP}."),
                "until": described(TIME, f"Chunks ingested before this time: {TIME_HELP}."),
                "said_since": described(
                    TIME,
                    "Chunks whose words were said at or after this time (a chunk said over a "
                    "range matches when the range overlaps; one of unknown time never): "
                    f"{TIME_HELP}.",
                ),
                "said_until": described(
                    TIME, f"Chunks whose words were said before this time: {TIME_HELP}."
                ),
                "entity": ENTITY_FILTER,
                "limit": limit(20),
                "raw": described(
                    FLAG,
                    "Pass the query to the engine as it is (FTS5 or to_tsquery syntax); its "
                    "mode is keyword.",
                ),
            },
            "query",
        ),
        run=_search,
        output_schema=outputs.HITS,
    ),
    ToolSpec(
        name="lantern_source_show",
        title="Show an evidence source",
        description=(
            "Show an evidence source with a page of its chunks in order: id, uri, kind, title, "
            "content_hash, metadata, created_at, updated_at, chunk_count, chunks (each with "
            "id, ordinal, text and its offsets in the source), next_cursor and cited_by. A page "
            f"holds at most limit chunks ({CHUNK_PAGE} by default) and about 1,000,000 "
            "characters; next_cursor, when not null, continues the chunks when given as after."
        ),
        input_schema=arguments(
            {
                "id": {
                    "type": "string",
                    "minLength": 1,
                    "description": "A source id (src_...) or the source's URI.",
                },
                "no_chunks": described(FLAG, "Leave the chunks out: the source alone."),
                "limit": {
                    "type": "integer",
                    "minimum": 1,
                    "maximum": MAX_CHUNK_PAGE,
                    "default": CHUNK_PAGE,
                    "description": "At most this many chunks.",
                },
                "after": {
                    "type": "integer",
                    "minimum": 0,
                    "description": "Continue after the chunk of this ordinal: a next_cursor.",
                },
                "said_since": described(
                    TIME,
                    "Only the chunks whose words were said at or after this time (a chunk said "
                    f"over a range matches when the range overlaps): {TIME_HELP}.",
                ),
                "said_until": described(
                    TIME, f"Only the chunks whose words were said before this time: {TIME_HELP}."
                ),
            },
            "id",
        ),
        run=_source_show,
        output_schema=outputs.SHOWN_SOURCE,
    ),
    ToolSpec(
        name="lantern_chunk_show",
        title="Show an evidence chunk",
        description=(
            "Show an evidence chunk (id, source_id, ordinal, text, offsets, metadata) with its "
            "source, and with context, up to that many neighbouring chunks on each side in "
            "'before' and 'after'."
        ),
        input_schema=arguments(
            {
                "id": {
                    "type": "string",
                    "minLength": 1,
                    "description": "A chunk id: chk_ and 16 hex digits.",
                },
                "context": {
                    "type": "integer",
                    "minimum": 0,
                    "maximum": MAX_CONTEXT,
                    "default": 0,
                    "description": "Neighbouring chunks to add on each side.",
                },
            },
            "id",
        ),
        run=_chunk_show,
        output_schema=outputs.SHOWN_CHUNK,
    ),
    ToolSpec(
        name="lantern_ingest_text",
        title="Ingest text as evidence",
        description=(
            "Store a text (a tool output, a note, a log) as the evidence source uri, split into "
            "chunks. Ingesting the same uri again leaves unchanged text as it is and replaces "
            "the chunks of changed text. Returns the counts of the ingest "
            "(added, updated, unchanged, skipped, removed, chunks, bytes, seconds, "
            "skipped_paths) and the source (id, uri, kind, title, content_hash, metadata, "
            "created_at, updated_at, chunk_count)."
        ),
        input_schema=arguments(
            {
                "uri": {
                    "type": "string",
                    "minLength": 1,
                    "maxLength": MAX_URI_CHARS,
                    "description": "The source's URI, e.g. tool://pytest/run-42.",
                },
                "text": {
                    "type": "string",
                    # Characters; the repository also refuses more than this many UTF-8 bytes.
                    "maxLength": MAX_TEXT_BYTES,
                    "description": "The text to store: at most 64 MiB of UTF-8.",
                },
                "kind": described(_SOURCE_KIND, "The source's kind; detected when not given."),
                "metadata": {
                    "type": "object",
                    "description": "A JSON object added to the source's metadata.",
                },
                "chunk_size": {
                    "type": "integer",
                    "minimum": MIN_TARGET_SIZE,
                    "maximum": MAX_TARGET_SIZE,
                    "description": "Target chunk size in characters (default 1000).",
                },
            },
            "uri",
            "text",
        ),
        run=_ingest_text,
        output_schema=outputs.INGESTED,
        writes=True,
        destructive=True,
    ),
)
