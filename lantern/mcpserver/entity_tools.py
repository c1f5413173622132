"""The entity tools: list and show entities, attach and detach them.

What they show of memory records stays within the client's scopes (the facade's entity
repository is fenced, and records come from the memory repository); evidence has no scope, so
an entity a chunk mentions is visible to every client. Attaching to a record is a write on
that record, refused outside the client's scopes like any other.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from lantern.errors import InvalidInput
from lantern.mcpserver import outputs
from lantern.mcpserver.spec import (
    AFTER,
    ENTITY,
    OFFSET,
    Args,
    Schema,
    ToolOutput,
    ToolSpec,
    arguments,
    limit,
    listed,
)

if TYPE_CHECKING:
    from lantern.api import Lantern
    from lantern.entities.records import LinkChange


def _list(lt: Lantern, args: Args) -> ToolOutput:
    found = lt.entities.list(**args)
    return ToolOutput({"entities": [summary.to_json() for summary in found]})


def _show(lt: Lantern, args: Args) -> ToolOutput:
    fields = dict(args)
    return ToolOutput(lt.entity_show(fields.pop("entity"), **fields).to_json())


def _attach(lt: Lantern, args: Args) -> ToolOutput:
    return _changes(lt.attach_entities(**_targets(args)))


def _detach(lt: Lantern, args: Args) -> ToolOutput:
    return _changes(lt.detach_entities(**_targets(args)))


def _targets(args: Args) -> Args:
    """Refused in the tool's words: an entity link is about exactly one of its targets."""
    if ("chunk" in args) == ("memory" in args):
        raise InvalidInput("invalid arguments: give exactly one of 'chunk' and 'memory'")
    return args


def _changes(changes: list[LinkChange]) -> ToolOutput:
    return ToolOutput({"changes": [change.to_json() for change in changes]})


_KIND: Schema = {"type": "string", "pattern": "^[A-Za-z][A-Za-z0-9_-]{0,63}$"}
_TARGETS: dict[str, Schema] = {
    "entities": {**listed(ENTITY, "The entities, KIND:NAME or ent_ ids."), "minItems": 1},
    "chunk": {"type": "string", "minLength": 1, "description": "A chunk id (chk_...)."},
    "memory": {"type": "string", "minLength": 1, "description": "A memory record id (mem_...)."},
}
_LINK_SHAPE = (
    'Give entities and exactly one of chunk and memory. Returns {"changes": [{"entity": '
    '{"id", "name", "kind"}, "chunk_id" or "record_id", "changed"}]}.'
)

ENTITY_TOOLS = (
    ToolSpec(
        name="lantern_entity_list",
        title="List entities",
        description=(
            "List entities (URLs, file paths, @mentions, #tags, issues, commits, wiki links, "
            "CVEs found in evidence, and the people, projects or places attached by callers) "
            "with chunk_count (chunks that mention it) and memory_count (memory records about "
            'it). Returns {"entities": [{"id", "name", "kind", "chunk_count", '
            '"memory_count"}]}, by kind then name, or the most linked first with order=count.'
        ),
        input_schema=arguments(
            {
                "kind": listed(_KIND, "Only entities of these kinds."),
                "order": {
                    "type": "string",
                    "enum": ["name", "count"],
                    "default": "name",
                    "description": "name: by kind, then name; count: the most linked first.",
                },
                "limit": limit(100),
                "offset": OFFSET,
            }
        ),
        run=_list,
        output_schema=outputs.ENTITIES,
    ),
    ToolSpec(
        name="lantern_entity_show",
        title="Show an entity",
        description=(
            "Show an entity with a page of the chunks that mention it (chunk_id, source_id, "
            "uri, ordinal, offsets, an excerpt) and of the memory records about it (every "
            "status, in list order). next_cursor, when not null, continues both lists when "
            "given as after."
        ),
        input_schema=arguments(
            {
                "entity": ENTITY,
                "limit": {
                    **limit(20),
                    "maximum": 1000,
                    "description": "At most this many chunks, and this many records.",
                },
                "after": AFTER,
            },
            "entity",
        ),
        run=_show,
        output_schema=outputs.SHOWN_ENTITY,
    ),
    ToolSpec(
        name="lantern_entity_attach",
        title="Attach entities",
        description=(
            "Link entities to an evidence chunk or to a memory record: what your own model "
            "found (person:Ada Lovelace, project:lantern, place:Lisbon). Attaching one that "
            "is already attached changes nothing. " + _LINK_SHAPE
        ),
        input_schema=arguments(_TARGETS, "entities"),
        run=_attach,
        output_schema=outputs.LINK_CHANGES,
        writes=True,
    ),
    ToolSpec(
        name="lantern_entity_detach",
        title="Detach entities",
        description=(
            "Unlink entities from an evidence chunk or a memory record; an entity nothing "
            "links any more is removed. " + _LINK_SHAPE
        ),
        input_schema=arguments(_TARGETS, "entities"),
        run=_detach,
        output_schema=outputs.LINK_CHANGES,
        writes=True,
        destructive=True,
    ),
)
"""The entity tools, after the memory and evidence tools."""
