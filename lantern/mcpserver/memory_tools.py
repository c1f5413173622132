"""The memory tools: one `lt.memory` call each, rendered as the CLI's `--json` renders it.

Lists come wrapped in an object (MCP's structured content must be one): `{"records": [...],
"next_cursor": ...}`, which is what `memory list --json --with-cursor` prints.
"""

from __future__ import annotations

import copy
from typing import TYPE_CHECKING, Any

from lantern.mcpserver import outputs
from lantern.mcpserver.spec import (
    AFTER,
    CONFIDENCE,
    CONTENT,
    ENTITY,
    FLAG,
    FLOOR,
    KIND,
    MIN_SIMILARITY,
    MODE,
    MODE_HELP,
    MODEL,
    OFFSET,
    PERCENT,
    RECORD_ID,
    REF,
    SCOPE,
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
from lantern.memory.filterspec import Filter, offered
from lantern.memory.records import MemoryRecord, Page, order_keys
from lantern.validation import SEARCH_ORDERS

if TYPE_CHECKING:
    from lantern.api import Lantern


def _record(record: MemoryRecord) -> ToolOutput:
    return ToolOutput(record.to_json())


def _records(page: Page, rendered: list[dict[str, Any]]) -> ToolOutput:
    return ToolOutput({"records": rendered, "next_cursor": page.next_cursor})


# --- writing -----------------------------------------------------------------------------------


def _add(lt: Lantern, args: Args) -> ToolOutput:
    record, created = lt.memory.get_or_add(**api_arguments(args))
    if created:
        return _record(record)
    note = (
        f"an identical memory is already stored as {record.id} (status {record.status}); "
        "nothing was changed"
    )
    return ToolOutput(record.to_json(), (note,))


def _update(lt: Lantern, args: Args) -> ToolOutput:
    fields = api_arguments(args)
    return _record(lt.memory.update(fields.pop("id"), **fields))


def _supersede(lt: Lantern, args: Args) -> ToolOutput:
    fields = api_arguments(args)
    return _record(lt.memory.supersede(fields.pop("old_id"), **fields))


def _archive(lt: Lantern, args: Args) -> ToolOutput:
    return _record(lt.memory.archive(args["id"]))


def _restore(lt: Lantern, args: Args) -> ToolOutput:
    return _record(lt.memory.restore(args["id"]))


# --- reading -----------------------------------------------------------------------------------


def _show(lt: Lantern, args: Args) -> ToolOutput:
    if args.get("chain", False):
        shown = lt.memory.chain(args["id"]).to_json()
    else:
        shown = lt.memory.get(args["id"]).to_json()
    entities = lt.memory.entities(shown["id"])
    return ToolOutput({**shown, "entities": [entity.to_json() for entity in entities]})


def _history(lt: Lantern, args: Args) -> ToolOutput:
    entries = lt.memory.history(args["id"])
    return ToolOutput({"entries": [entry.to_json() for entry in entries]})


def _list(lt: Lantern, args: Args) -> ToolOutput:
    fields = dict(args)
    explain = fields.pop("explain", False)
    page = lt.memory.list(**fields)
    rendered = []
    for record in page:
        item = record.to_json()
        if explain:
            item["explain"] = order_keys(record)
        rendered.append(item)
    return _records(page, rendered)


def _search(lt: Lantern, args: Args) -> ToolOutput:
    fields = dict(args)
    explain = fields.pop("explain", False)
    by_relevance = fields.get("order", "relevance") == "relevance"
    page = lt.memory.search(fields.pop("query"), **fields)
    rendered = [match.to_json(explain=explain, by_relevance=by_relevance) for match in page]
    return _searched(page, rendered)


def _similar(lt: Lantern, args: Args) -> ToolOutput:
    fields = dict(args)
    page = lt.memory.similar(fields.pop("id"), **fields)
    return _searched(page, [match.to_json() for match in page])


def _searched(page: Page, rendered: list[dict[str, Any]]) -> ToolOutput:
    """A search's page, with what the search did, and the CLI's note when some records could
    not be compared for want of a vector."""
    data: dict[str, Any] = {"records": rendered, "next_cursor": page.next_cursor}
    notes: tuple[str, ...] = ()
    summary = page.summary
    if summary is not None:
        data["search"] = summary.to_json()
        if summary.without_vector and summary.model is not None:
            notes = (without_vector_note(summary, "records"),)
    return ToolOutput(data, notes)


# --- schemas -----------------------------------------------------------------------------------

_ID = {"id": RECORD_ID}
_ALLOW_DANGLING = described(
    FLAG, "Store source: and chunk: references even when they name nothing in this store."
)
_NO_EXPIRY = described(FLAG, "Remove the expiry time.")
_EXPIRES_AT = described(TIME, f"When the record expires: {TIME_HELP}.")


def _filter_property(spec: Filter) -> Schema:
    """A memory filter's property, from its entry in the table: its value's schema (an array
    of them when it repeats) described by the table's help, with its default if it has one."""
    value = copy.deepcopy(spec.value.schema)  # the table's data stays out of reach
    if spec.repeatable:
        return listed(value, spec.help)
    schema = described(value, spec.help)
    return schema if spec.default is None else {**schema, "default": spec.default}


_FILTERS: dict[str, Schema] = {
    **{spec.name: _filter_property(spec) for spec in offered("mcp")},
    "offset": OFFSET,
    "after": AFTER,
    "explain": described(
        FLAG, "Add to each record an 'explain' object: the keys it was ordered by."
    ),
}

_RECORD_SHAPE = (
    "the record's fields: id, kind, content, scope, priority, urgency, confidence, status, "
    "created_at, updated_at, expires_at, supersedes_id, source_refs"
)

MEMORY_TOOLS = (
    ToolSpec(
        name="lantern_memory_add",
        title="Add a memory record",
        description=(
            "Store a memory record. Its id is derived from scope, kind and content, so adding "
            "a record identical in those three to a stored one changes nothing and returns the "
            f"stored one. With supersedes, the named record becomes superseded. Returns "
            f"{_RECORD_SHAPE}."
        ),
        input_schema=arguments(
            {
                "content": described(CONTENT, "The text of the memory."),
                "kind": KIND,
                "scope": described(SCOPE, "Namespace, e.g. user:ada or project:lantern.")
                | {"default": "global"},
                "priority": described(PERCENT, "0-100.", default=50),
                "urgency": described(PERCENT, "0-100.", default=0),
                "confidence": described(CONFIDENCE, "0.0-1.0.", default=1.0),
                "expires_at": _EXPIRES_AT,
                "supersedes": described(RECORD_ID, "The id of a record this one replaces."),
                "source_refs": listed(REF, "References to the evidence behind this memory."),
                "entities": listed(
                    ENTITY,
                    "Entities the record is about, KIND:NAME (person:Ada Lovelace); linked to "
                    "the stored record too when an identical one exists.",
                ),
                "allow_dangling": _ALLOW_DANGLING,
            },
            "content",
            "kind",
        ),
        run=_add,
        output_schema=outputs.RECORD,
        writes=True,
    ),
    ToolSpec(
        name="lantern_memory_list",
        title="List memory records",
        description=(
            "List memory records, filtered by visible fields, in a fixed order: active first, "
            "then higher priority, higher urgency, newer updated_at, and id. Returns "
            '{"records": [...], "next_cursor": ...}; next_cursor is null on the last page and '
            "continues the listing when given as after."
        ),
        input_schema=arguments({**_FILTERS, "limit": limit(50)}),
        run=_list,
        output_schema=outputs.RECORD_PAGE,
    ),
    ToolSpec(
        name="lantern_memory_search",
        title="Search memory records",
        description=(
            "Find memory records by their content. "
            + MODE_HELP
            + '"quoted words" match together, word* a prefix; nothing else is an operator. '
            "Takes the filters of lantern_memory_list. Returns "
            '{"records": [...], "next_cursor": ..., "search": {"mode", "model", '
            '"without_vector"}}, each record followed by score (higher is better; the fused '
            "score in hybrid, the cosine in semantic), mode (the ranking it came from), "
            "keyword_rank, semantic_rank and similarity (null where that ranking did not "
            "place it). order=policy returns the matches in the list order instead of by "
            "score. Every order pages: give next_cursor as after, with the same query, mode, "
            "model, order and filters; null means the last page."
        ),
        input_schema=arguments(
            {
                "query": {"type": "string", "description": "Words, or a question."},
                "mode": MODE,
                "model": MODEL,
                "min_similarity": MIN_SIMILARITY,
                "floor": FLOOR,
                "order": {
                    "type": "string",
                    "enum": list(SEARCH_ORDERS),
                    "default": "relevance",
                    "description": "relevance: best score first; policy: the list order.",
                },
                **_FILTERS,
                "limit": limit(20),
            },
            "query",
        ),
        run=_search,
        output_schema=outputs.SEARCH_PAGE,
    ),
    ToolSpec(
        name="lantern_memory_similar",
        title="Find memory records similar to one",
        description=(
            "The active memory records nearest in meaning to a record (itself left out), "
            "nearest first: candidates for duplicates or contradictions, which you decide "
            "about. Compares the embeddings of one model (lantern embed computes them). "
            'Returns {"records": [...], "next_cursor": null, "search": {"mode", "model", '
            '"without_vector"}}, each record followed by score and similarity (the cosine, '
            "1 for the same meaning), mode semantic and semantic_rank."
        ),
        input_schema=arguments(
            {**_ID, "limit": limit(10), "model": MODEL},
            "id",
        ),
        run=_similar,
        output_schema=outputs.SEARCH_PAGE,
    ),
    ToolSpec(
        name="lantern_memory_show",
        title="Show a memory record",
        description=(
            f"Show one memory record: {_RECORD_SHAPE}, then entities (each id, name, kind). "
            "With chain, also 'replaces' and 'replaced_by': the ids of the records it replaced "
            "and that replaced it, nearest first."
        ),
        input_schema=arguments({**_ID, "chain": described(FLAG, "Add the supersede chain.")}, "id"),
        run=_show,
        output_schema=outputs.SHOWN_RECORD,
    ),
    ToolSpec(
        name="lantern_memory_history",
        title="Show a memory record's history",
        description=(
            'Every recorded change to a memory record, oldest first: {"entries": [{"id", '
            '"record_id", "event", "at", "changes": {"before", "after"}}]}. Events: created, '
            "updated, archived, restored, superseded, expired, forgotten."
        ),
        input_schema=arguments(_ID, "id"),
        run=_history,
        output_schema=outputs.HISTORY,
    ),
    ToolSpec(
        name="lantern_memory_update",
        title="Update a memory record",
        description=(
            "Revise a memory record in place: same id, updated_at moves, the change is kept in "
            "its history. Scope and kind never change in place (that is a supersede); values "
            "equal to the stored ones change nothing. Returns the record."
        ),
        input_schema=arguments(
            {
                **_ID,
                "content": described(CONTENT, "The new text."),
                "priority": described(PERCENT, "0-100."),
                "urgency": described(PERCENT, "0-100."),
                "confidence": described(CONFIDENCE, "0.0-1.0."),
                "expires_at": _EXPIRES_AT,
                "no_expiry": _NO_EXPIRY,
                "add_refs": listed(REF, "References to add."),
                "remove_refs": listed(
                    REF, "References to remove; TYPE:ID removes every one with that type and id."
                ),
                "allow_dangling": _ALLOW_DANGLING,
            },
            "id",
        ),
        run=_update,
        output_schema=outputs.RECORD,
        writes=True,
        destructive=True,
    ),
    ToolSpec(
        name="lantern_memory_supersede",
        title="Supersede a memory record",
        description=(
            "Replace a memory record: a new record takes every field not given from the old "
            "one and records supersedes_id, and the old one becomes superseded, in one "
            "transaction. The replacement must differ in scope, kind or content. source_refs, "
            "when given, replace the old references. Returns the new record."
        ),
        input_schema=arguments(
            {
                "old_id": described(RECORD_ID, "The id of the record to replace."),
                "content": described(CONTENT, "The new text."),
                "kind": KIND,
                "scope": described(SCOPE, "Namespace, e.g. user:ada or project:lantern."),
                "priority": described(PERCENT, "0-100."),
                "urgency": described(PERCENT, "0-100."),
                "confidence": described(CONFIDENCE, "0.0-1.0."),
                "expires_at": _EXPIRES_AT,
                "no_expiry": _NO_EXPIRY,
                "source_refs": listed(REF, "References to the evidence behind the replacement."),
                "allow_dangling": _ALLOW_DANGLING,
            },
            "old_id",
        ),
        run=_supersede,
        output_schema=outputs.RECORD,
        writes=True,
        destructive=True,
        idempotent=False,
    ),
    ToolSpec(
        name="lantern_memory_archive",
        title="Archive a memory record",
        description=(
            "Archive a memory record: it stays stored, with its history, and leaves the "
            "default listing. Archiving an archived record changes nothing; a superseded one "
            "cannot be archived. Returns the record."
        ),
        input_schema=arguments(_ID, "id"),
        run=_archive,
        output_schema=outputs.RECORD,
        writes=True,
        destructive=True,
    ),
    ToolSpec(
        name="lantern_memory_restore",
        title="Restore a memory record",
        description=(
            "Make an archived memory record active again; an active one is left as it is. "
            "Returns the record."
        ),
        input_schema=arguments(_ID, "id"),
        run=_restore,
        output_schema=outputs.RECORD,
        writes=True,
        destructive=True,
    ),
)
