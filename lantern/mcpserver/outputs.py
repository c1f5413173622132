"""The output schemas of the tools: what each structured result holds, as JSON Schema 2020-12.

They describe the JSON the CLI's `--json` prints for the same call (the records' `to_json`),
and a test checks every tool's results against them with a validator; the server itself does
not validate what it returns. Objects are left open (no `additionalProperties: false`): JSON
output may gain fields, never lose or rename them, so the schemas require the fields that exist
and let new ones through. Alternatives are `anyOf` branches, never a list of types, for the
clients that refuse those.

The records of a memory listing or search are described by the fields each must have, not by
the type of each (`_page`). Clients validate every result against its tool's schema, node by
node: the MCP SDK's Python client does it with `jsonschema` at each call, and typing each field
of the 50 records of a listing cost it about 900 nodes, ten times the rest of the round trip. A
lone record keeps every field typed (`RECORD`, what `lantern_memory_show` and
`lantern_memory_add` return), and the manual's JSON contract gives the type of every field.
"""

from __future__ import annotations

from lantern.mcpserver.spec import Schema
from lantern.validation import HISTORY_EVENTS, MEMORY_KINDS, STATUSES

_INT: Schema = {"type": "integer"}
_NUMBER: Schema = {"type": "number"}
_STR: Schema = {"type": "string"}
_OBJECT: Schema = {"type": "object"}


def _nullable(fragment: Schema) -> Schema:
    return {"anyOf": [fragment, {"type": "null"}]}


def _array(item: Schema) -> Schema:
    return {"type": "array", "items": item}


def _page(item: Schema, what: str) -> Schema:
    """The items of a page: objects with the fields `item` requires (see the module's
    docstring for why their types are left to `item` itself)."""
    return {
        "type": "array",
        "items": {"type": "object", "required": item["required"], "description": what},
    }


def _object(properties: dict[str, Schema], *optional: str) -> Schema:
    """An object that has every one of these properties but the optional ones."""
    return {
        "type": "object",
        "properties": properties,
        "required": [name for name in properties if name not in optional],
    }


_IDS = _array(_STR)

RECORD_FIELDS: dict[str, Schema] = {
    "id": _STR,
    "kind": {"type": "string", "enum": list(MEMORY_KINDS)},
    "content": _STR,
    "scope": _STR,
    "priority": _INT,
    "urgency": _INT,
    "confidence": _NUMBER,
    "status": {"type": "string", "enum": list(STATUSES)},
    "created_at": _INT,
    "updated_at": _INT,
    "expires_at": _nullable(_INT),
    "supersedes_id": _nullable(_STR),
    "source_refs": _array(_object({"type": _STR})),
}
RECORD = _object(RECORD_FIELDS)
"""A memory record, as `memory show --json` prints it."""

ENTITY_REF = _object({"id": _STR, "name": _STR, "kind": _STR})
"""An entity as a chunk or a record shows it."""

SHOWN_RECORD = _object(
    {**RECORD_FIELDS, "replaces": _IDS, "replaced_by": _IDS, "entities": _array(ENTITY_REF)},
    "replaces",
    "replaced_by",
)
"""A record with its entities, and its supersede chain when asked for."""

RECORD_PAGE = _object(
    {
        "records": _page(
            _object({**RECORD_FIELDS, "explain": _OBJECT, "score": _NUMBER}, "explain", "score"),
            "A record, as lantern_memory_show returns it.",
        ),
        "next_cursor": _nullable(_STR),
    }
)
"""A listing or a search: `memory list --json --with-cursor`."""

_SEARCH = _object({"mode": _STR, "model": _nullable(_STR), "without_vector": _INT})
_ORIGIN: dict[str, Schema] = {
    "mode": _STR,
    "keyword_rank": _nullable(_INT),
    "semantic_rank": _nullable(_INT),
    "similarity": _nullable(_NUMBER),
}

SEARCH_PAGE = _object(
    {
        "records": _page(
            _object({**RECORD_FIELDS, "explain": _OBJECT, "score": _NUMBER, **_ORIGIN}, "explain"),
            "A record, as lantern_memory_show returns it, with its score and how it was found.",
        ),
        "next_cursor": _nullable(_STR),
        "search": _SEARCH,
    }
)
"""A memory search, or records similar to one: each record with its score and origin, and
what the search did (`memory search --json --with-cursor`)."""

HISTORY = _object(
    {
        "entries": _array(
            _object(
                {
                    "id": _INT,
                    "record_id": _STR,
                    "event": {"type": "string", "enum": list(HISTORY_EVENTS)},
                    "at": _INT,
                    "changes": _object({"before": _nullable(_OBJECT), "after": _nullable(_OBJECT)}),
                }
            )
        )
    }
)

_OFFSET = _nullable(_INT)
_SAID: dict[str, Schema] = {"said_from": _nullable(_INT), "said_until": _nullable(_INT)}
"""When a chunk's words were said (unix seconds), null when unknown."""
_CHUNK_FIELDS: dict[str, Schema] = {
    "id": _STR,
    "source_id": _STR,
    "ordinal": _INT,
    "text": _STR,
    "start_offset": _OFFSET,
    "end_offset": _OFFSET,
    "metadata": _OBJECT,
    "created_at": _INT,
    "entities": _array(_object({"id": _STR, "name": _STR, "kind": _STR})),
    "embeddings": _array(_object({"model": _STR, "dim": _INT})),
    **_SAID,
}
_CHUNK = _object(_CHUNK_FIELDS)
_SOURCE_FIELDS: dict[str, Schema] = {
    "id": _STR,
    "uri": _STR,
    "kind": _STR,
    "title": _nullable(_STR),
    "content_hash": _STR,
    "metadata": _OBJECT,
    "created_at": _INT,
    "updated_at": _INT,
    "chunk_count": _INT,
}
_SOURCE = _object(_SOURCE_FIELDS)

HITS = _object(
    {
        "hits": _array(
            _object(
                {
                    "chunk_id": _STR,
                    "source_id": _STR,
                    "uri": _STR,
                    "kind": _STR,
                    "ordinal": _INT,
                    "start_offset": _OFFSET,
                    "end_offset": _OFFSET,
                    "score": _NUMBER,
                    "snippet": _STR,
                    **_ORIGIN,
                    **_SAID,
                }
            )
        ),
        "search": _SEARCH,
    }
)

SHOWN_SOURCE = _object(
    {
        **_SOURCE_FIELDS,
        "chunks": _array(_CHUNK),
        "next_cursor": _nullable(_INT),
        "cited_by": _IDS,
    },
    "chunks",
    "next_cursor",
)
"""A source, with a page of its chunks unless they were left out, and the records citing it."""

SHOWN_CHUNK = _object(
    {
        **_CHUNK_FIELDS,
        "source": _SOURCE,
        "before": _array(_CHUNK),
        "after": _array(_CHUNK),
        "cited_by": _IDS,
    }
)

INGESTED = _object(
    {
        "added": _INT,
        "updated": _INT,
        "unchanged": _INT,
        "skipped": _INT,
        "removed": _INT,
        "chunks": _INT,
        "bytes": _INT,
        "seconds": _NUMBER,
        "skipped_paths": _array(
            _object({"path": _STR, "reason": _STR, "named": {"type": "boolean"}}, "named")
        ),
        "source": _SOURCE,
    }
)
"""The counts of `ingest --json`, and the source that was stored."""

_ENTITY_FIELDS: dict[str, Schema] = {
    "id": _STR,
    "name": _STR,
    "kind": _STR,
    "chunk_count": _INT,
    "memory_count": _INT,
}

ENTITIES = _object({"entities": _array(_object(_ENTITY_FIELDS))})
"""`entity list --json`, wrapped in an object."""

SHOWN_ENTITY = _object(
    {
        **_ENTITY_FIELDS,
        "chunks": _array(
            _object(
                {
                    "chunk_id": _STR,
                    "source_id": _STR,
                    "uri": _STR,
                    "ordinal": _INT,
                    "start_offset": _OFFSET,
                    "end_offset": _OFFSET,
                    "excerpt": _STR,
                }
            )
        ),
        "memories": _array(RECORD),
        "next_cursor": _nullable(_STR),
    }
)
"""`entity show --json`: the entity, a page of its chunks and of its records."""

LINK_CHANGES = _object(
    {
        "changes": _array(
            {
                "type": "object",
                "properties": {
                    "entity": ENTITY_REF,
                    "chunk_id": _STR,
                    "record_id": _STR,
                    "changed": {"type": "boolean"},
                },
                "required": ["entity", "changed"],
            }
        )
    }
)
"""What an attach or a detach did, one change per entity."""
