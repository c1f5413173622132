"""What a tool is: its name, schema, annotations and the repository call behind it.

Tools are data rather than decorated functions so that the schemas are written by hand (exact
enumerations, ranges, required fields, no extra keys) and can be tested without the SDK, and
so that `--read-only` is a filter over one table. Argument names follow the CLI: an option's
long name in snake_case (`--expires-at` is `expires_at`, a command's ID argument is `id`), and
a repeatable filter keeps its singular name as a list (`scope`, `kind`, `cites`); the
repeatable reference options are plural, as in the Python API and in a record
(`source_refs`, `add_refs`, `remove_refs`).

The fragments below are shared by several tools, so a range or an enumeration is written once.
A value of either of two types is an `anyOf` of two schemas rather than a `type` array, which
some clients' schema readers do not accept; every schema is valid JSON Schema 2020-12.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from lantern.errors import Operation, Param, Setting, Spelling, Term
from lantern.retrieval.modes import SEARCH_MODES
from lantern.validation import MAX_CONTENT_CHARS, MAX_SCOPE_CHARS, MEMORY_KINDS, STATUS_FILTERS

if TYPE_CHECKING:
    from lantern.api import Lantern

Args = dict[str, Any]
Schema = dict[str, Any]


@dataclass(frozen=True, slots=True)
class ToolOutput:
    """A tool's structured result (an object: MCP requires one), and what the CLI would have
    said on stderr beside it (`notes`), which goes to the client as extra text."""

    data: dict[str, Any]
    notes: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class ToolSpec:
    """One MCP tool: the schema it advertises and enforces, and the call it makes."""

    name: str
    title: str
    description: str
    input_schema: Schema
    run: Callable[[Lantern, Args], ToolOutput]
    output_schema: Schema
    """What the structured result holds (`outputs`); every result validates against it."""
    writes: bool = False
    """Changes the store: left out by `--read-only`."""
    destructive: bool = False
    """May change or remove what is stored, not only add (MCP's `destructiveHint`)."""
    idempotent: bool = True
    """Calling it again with the same arguments changes nothing more."""


API_NAMES: Mapping[str, str] = {
    "supersedes": "supersedes_id",
    "no_expiry": "clear_expiry",
    "chunk_size": "target_size",
}
"""The few arguments whose name in the Python API differs (the CLI's option names win)."""
_ARGUMENT_NAMES = {api: argument for argument, api in API_NAMES.items()}


def api_arguments(args: Args) -> Args:
    """A tool's arguments as the Python API's keyword arguments."""
    return {API_NAMES.get(name, name): value for name, value in args.items()}


def words(spec: ToolSpec) -> Spelling:
    """How a tool's error names the terms of a message: its arguments, as JSON sets them,
    and the tools. A term it has no word for stays as the Python API says it."""
    properties = spec.input_schema["properties"]

    def spell(term: Term) -> str | None:
        if isinstance(term, Operation):
            return "the tool lantern_" + term.path.replace(".", "_")
        if isinstance(term, Setting):
            name = _ARGUMENT_NAMES.get(term.name, term.name)
            return f"with {json.dumps(name)}: {json.dumps(term.value)}"
        if isinstance(term, Param):
            name = _ARGUMENT_NAMES.get(term.name, term.name)
            return name if name in properties else None
        return None

    return spell


def without_vector_note(summary: Any, items: str) -> str:
    """The note beside a search by meaning that could not compare some matching items."""
    count = summary.without_vector
    named, verb = (items, "have") if count != 1 else (items[:-1], "has")
    return (
        f"{count} matching {named} {verb} no vector of {summary.model}; semantic search "
        "could not compare them (lantern embed computes them)"
    )


def arguments(properties: Mapping[str, Schema], *required: str) -> Schema:
    """A tool's input schema: an object of exactly these properties."""
    schema: Schema = {"type": "object", "properties": dict(properties)}
    if required:
        schema["required"] = list(required)
    schema["additionalProperties"] = False
    return schema


def described(fragment: Schema, description: str, **extra: Any) -> Schema:
    return {**fragment, "description": description, **extra}


def listed(item: Schema, description: str) -> Schema:
    return {"type": "array", "items": item, "description": description}


RECORD_ID: Schema = {
    "type": "string",
    "minLength": 1,
    "description": "A memory record id: mem_ and 16 hex digits.",
}
CONTENT: Schema = {"type": "string", "minLength": 1, "maxLength": MAX_CONTENT_CHARS}
KIND: Schema = {"type": "string", "enum": list(MEMORY_KINDS)}
SCOPE: Schema = {"type": "string", "minLength": 1, "maxLength": MAX_SCOPE_CHARS}
PERCENT: Schema = {"type": "integer", "minimum": 0, "maximum": 100}
CONFIDENCE: Schema = {"type": "number", "minimum": 0, "maximum": 1}
TIME: Schema = {"anyOf": [{"type": "number"}, {"type": "string"}]}
TIME_HELP = "unix seconds (a fraction is dropped) or ISO-8601 (a time without a zone is UTC)"
FLAG: Schema = {"type": "boolean", "default": False}
REF: Schema = {
    "anyOf": [
        {"type": "string", "minLength": 3},
        {
            "type": "object",
            "properties": {"type": {"type": "string", "minLength": 1}},
            "required": ["type"],
        },
    ],
    "description": "TYPE:ID (chunk:chk_..., source:src_..., session:...), or an object with "
    "a string 'type'.",
}
STATUS_FILTER: Schema = {
    "type": "string",
    "enum": list(STATUS_FILTERS),
    "default": "active",
    "description": "Only records of this status; all for every status.",
}
MODE: Schema = {
    "type": "string",
    "enum": list(SEARCH_MODES),
    "description": "Leave it out for most searches: the default is hybrid (what shares the "
    "query's rarest words and what is nearest in meaning, fused; any where the store has no "
    "vectors). keyword: every word must appear (an exact identifier, an error message, a file "
    "name). any: any of the words, common words ignored. semantic: by meaning alone, for a "
    "paraphrase that shares no word with what it looks for.",
}
MODEL: Schema = {
    "type": "string",
    "minLength": 1,
    "description": "The embedding provider whose vectors semantic and hybrid compare "
    "(default: the server's LANTERN_EMBED_MODEL, else the store's default, else minilm).",
}
MIN_SIMILARITY: Schema = {
    "type": "number",
    "minimum": -1,
    "maximum": 1,
    "description": "The relevance floor of semantic and hybrid: a hit no keyword ranking found "
    "is returned only when its cosine similarity to the query is at least this (default: the "
    "model's measured floor, 0.18 for minilm; none for other models).",
}
FLOOR: Schema = {
    "type": "boolean",
    "default": True,
    "description": "false returns the nearest hits of semantic and hybrid however dissimilar.",
}
SEARCH_SUMMARY: Schema = {
    "type": "object",
    "description": "What the search did: mode (the ranking that ran), model (the vectors "
    "compared; null in keyword and any) and without_vector (matching items the semantic side "
    "could not compare for want of a vector; lantern embed computes them).",
}
MODE_HELP = (
    "Ask in plain words and leave mode out: the default, hybrid, finds both what shares the "
    "question's rarest words and what says the same in other words (it is any where the store "
    "has no vectors). Use mode keyword to require every word (an exact identifier, an error "
    "message, or to narrow a search down), semantic for meaning alone. "
)
"""When to use which mode, for the search tools' descriptions."""
MAX_LIMIT = 10_000


def limit(default: int) -> Schema:
    return {
        "type": "integer",
        "minimum": 1,
        "maximum": MAX_LIMIT,
        "default": default,
        "description": "At most this many results.",
    }


OFFSET: Schema = {
    "type": "integer",
    "minimum": 0,
    "default": 0,
    "description": "Skip this many first results.",
}


AFTER: Schema = {
    "type": "string",
    "minLength": 1,
    "description": "Continue after a page: its next_cursor.",
}
ENTITY: Schema = {
    "type": "string",
    "minLength": 3,
    "maxLength": 2100,
    "description": "An entity: KIND:NAME (person:Ada Lovelace, url:https://example.org, "
    "issue:#12) or an entity id (ent_ and 16 hex digits).",
}
ENTITY_FILTER: Schema = {
    "type": "array",
    "items": ENTITY,
    "description": "Only what is linked to one of these entities (KIND:NAME or ent_ ids).",
}
