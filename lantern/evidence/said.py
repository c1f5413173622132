"""When a chunk's words were said, as the `chunks.said_from` and `chunks.said_until` columns
hold it (revision 0011), so that a search can be limited to what was said in a time range.

The ingest time (`created_at`) says when Lantern stored a chunk; a session of last January
ingested today was still said last January. What is known of that, by kind of source:

* a transcript chunk: its turns' times, from the earlier to the later of the first and last
  stamped turns (`first_ts`, `last_ts` in its metadata); no time when no turn has one;
* a chunk of any other source: its source's `mtime` when the source has one (a file's
  modification time at the ingest that wrote the chunk; a caller's `--metadata` `mtime` wins,
  as every caller key does), a point in time; no time otherwise (text piped in).

The values are unix seconds. Revision 0011 fills the columns of chunks stored before it by the
same rule; a chunk kept by a re-ingest keeps its range (its words were said when they were),
and an import derives the range of the chunks it adds, as an ingest does.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

TRANSCRIPT = "transcript"


def _stamp(value: object) -> int | None:
    """A unix time stored in metadata, or None for anything else (text, a boolean, null)."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return None


def said_range(
    kind: str | None, chunk_metadata: object, source_metadata: object
) -> tuple[int | None, int | None]:
    """`(said_from, said_until)` of a chunk of a source of `kind`: both None when unknown."""
    if kind == TRANSCRIPT:
        found = chunk_metadata if isinstance(chunk_metadata, Mapping) else {}
        stamps = [
            stamp
            for stamp in (_stamp(found.get("first_ts")), _stamp(found.get("last_ts")))
            if stamp is not None
        ]
        if not stamps:
            return None, None
        return min(stamps), max(stamps)
    facts: Mapping[str, Any] = source_metadata if isinstance(source_metadata, Mapping) else {}
    at = _stamp(facts.get("mtime"))
    return at, at
