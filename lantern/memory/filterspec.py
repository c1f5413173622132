"""The memory filters, each said once: what it is called, what it takes, what it means, and
where it is offered.

`memory list` and `memory search` take the same filters on four surfaces: the Python API
(`lt.memory.list(...)`, `lt.memory.search(...)`), the CLI, the MCP tools and the web view. Each
filter is one `Filter` entry in `FILTERS`, plain data that imports no surface and no SQL, and
each surface turns the table into its own form:

- Python: `MemoryReads.list` and `MemoryReads.search` keep explicit keyword parameters (IDEs and
  mypy read them); `MemoryFilter.build` takes those parameters by the table's names and reads
  each with its `Value`, so a value of the wrong type is an `InvalidInput` naming the parameter,
  never a `TypeError`. `MemoryReads.citing` takes the few filters named in `CITING`.
- CLI: `lantern.cli.memory` makes one Click option of each filter (its spelling, type, metavar,
  whether it repeats, its default), for `memory list`, `memory search` and `memory cites`.
- MCP: `lantern.mcpserver.memory_tools` makes one input-schema property of each filter (the
  value's JSON Schema, an array of them when it repeats).
- Web: `lantern.ui.fields` makes one form field of each filter (its label and hint).
- SQL: a filter fills one `MemoryFilter` field (`field`); a plain comparison says its column
  and operator here (`compare`), and `MemoryFilter.conditions` writes the others' SQL.

`help` is the filter's one wording: the CLI's option help (with "Repeatable." after it for a
repeatable filter), the MCP property's description and the web field's tooltip all say it.
`tests/test_memory_filterspec.py` checks that every filter appears on every surface it is
declared for, with those words, and that the Python methods' signatures name exactly the table's
filters, with its annotations and defaults. Adding a filter is one entry here, plus what no
table can say for it: the `MemoryFilter` field and its SQL when it is not a plain comparison,
and the keyword parameter on the methods (the test names a missing one).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from lantern.entities import names as entity_names
from lantern.entities.names import EntityName
from lantern.errors import InvalidInput, Param
from lantern.validation import (
    MAX_SCOPE_CHARS,
    MEMORY_KINDS,
    STATUS_FILTERS,
    SourceRefs,
    kind,
    optional_confidence,
    optional_percent,
    optional_timestamp,
    ref_key,
    scope_pattern,
    status_filter,
)

Surface = Literal["python", "cli", "mcp", "web"]
EVERYWHERE: frozenset[Surface] = frozenset(("python", "cli", "mcp", "web"))

Form = Literal["text", "choice", "int", "float", "time", "flag"]
"""How one value is entered: free text, one of `choices`, a whole number, a number, a time, or
a flag that is given or not (the CLI's type and the web form's input follow from it)."""

Schema = dict[str, Any]

Texts = str | Iterable[str] | None
Refs = SourceRefs | None
Entities = str | Sequence[str] | None
Time = int | float | str | None


@dataclass(frozen=True, slots=True)
class Value:
    """What a filter takes: its Python annotation, its JSON Schema (of one value: a repeatable
    filter is an array of them), how it is entered, and how the Python value is read into the
    `MemoryFilter` field (`read(name, value)`, raising `InvalidInput` that names `name`)."""

    python: Any
    schema: Schema
    form: Form
    read: Callable[[str, Any], Any]
    choices: tuple[str, ...] = ()
    metavar: str | None = None


@dataclass(frozen=True, slots=True)
class Filter:
    """One memory filter, for every surface that offers it."""

    name: str
    """The Python keyword, the MCP property and the web query parameter."""
    value: Value
    help: str
    """The one wording, said by every surface."""
    field: str
    """The `MemoryFilter` field it fills."""
    default: Any = None
    repeatable: bool = False
    """Takes several values, any of which matches (a list in Python and JSON)."""
    surfaces: frozenset[Surface] = EVERYWHERE
    """Where `list` and `search` offer it."""
    option: str = ""
    """The CLI's spelling; `--` and the name with dashes when not given."""
    label: str = ""
    """The web form's label."""
    hint: str = ""
    """The web form's reminder of the value's form, beside the label."""
    compare: tuple[str, Literal[">=", "<"]] | None = None
    """A plain comparison of a column with the value (`("priority", ">=")`), or None when
    `MemoryFilter.conditions` writes the filter's SQL itself."""

    @property
    def cli_option(self) -> str:
        return self.option or "--" + self.name.replace("_", "-")

    def read(self, value: Any) -> Any:
        """The `MemoryFilter` field's value for the Python argument `value`."""
        return self.value.read(self.name, value)


# --- reading Python values ------------------------------------------------------------------


def _items(name: str, value: object, one: tuple[type, ...], what: str) -> list[Any]:
    """`value` as a list: None is none, a single value (of a type in `one`) is one, and any
    other iterable (not bytes, not a mapping) gives its items; `what` names what it may be."""
    if value is None:
        return []
    if isinstance(value, one):
        return [value]
    if isinstance(value, Iterable) and not isinstance(value, bytes | bytearray | Mapping):
        return list(value)
    raise InvalidInput(Param(name), f" must be {what}, not {_type(value)}")


_TEXTS = "a string or a list of strings"


def _type(value: object) -> str:
    return type(value).__name__


def _scopes(name: str, value: object) -> tuple[tuple[str, bool], ...]:
    return tuple(
        pair for item in _items(name, value, (str,), _TEXTS) for pair in scope_pattern(item)
    )


def _kinds(name: str, value: object) -> tuple[str, ...]:
    return tuple(kind(item) for item in _items(name, value, (str,), _TEXTS))


def _status(name: str, value: object) -> str:
    if not isinstance(value, str):
        # The message of a word outside the vocabulary, as for any other wrong value.
        raise InvalidInput(
            Param(name), f" must be one of {', '.join(STATUS_FILTERS)}; got {value!r}"
        )
    return status_filter(value)


def _percent(name: str, value: object) -> int | None:
    return optional_percent(name, value)


def _confidence(name: str, value: object) -> float | None:
    return optional_confidence(value, name)


def _time(name: str, value: object) -> int | None:
    return optional_timestamp(name, value)


def _refs(name: str, value: object) -> tuple[tuple[str, str], ...]:
    items = _items(name, value, (str, dict), "a string (TYPE:ID), a dict or a list of them")
    for item in items:
        if not isinstance(item, str | dict):
            raise InvalidInput(
                Param(name), f" must hold strings (TYPE:ID) or dicts, not {_type(item)}"
            )
    return tuple(ref_key(item) for item in items)


def _entities(name: str, value: object) -> tuple[str, ...]:
    items = _items(
        name, value, (str, EntityName, dict), "a string (KIND:NAME or ent_ id) or a list of them"
    )
    for item in items:
        if not isinstance(item, str | EntityName | dict):
            raise InvalidInput(
                Param(name), f" must hold strings (KIND:NAME or ent_ ids), not {_type(item)}"
            )
    return tuple(entity_names.id_of(key) for key in entity_names.keys(items))


def _flag(name: str, value: object) -> bool:
    if not isinstance(value, bool):
        raise InvalidInput(Param(name), f" must be True or False, not {_type(value)}")
    return value


# --- the values -------------------------------------------------------------------------------

TIME_WORDS = "unix seconds or ISO-8601 (a time without a zone is UTC)"
TIME_HINT = "unix seconds or ISO-8601, e.g. 2026-12-01"
SCOPE_HINT = "exact, user:ada* (with its sub-scopes) or user:*"
"""The web form's reminder beside a time (`lantern.ui.fields` uses it for every time)."""

SCOPES = Value(
    Texts, {"type": "string", "minLength": 1, "maxLength": MAX_SCOPE_CHARS}, "text", _scopes
)
KINDS = Value(
    Texts, {"type": "string", "enum": list(MEMORY_KINDS)}, "choice", _kinds, choices=MEMORY_KINDS
)
STATUS = Value(
    str,
    {"type": "string", "enum": list(STATUS_FILTERS)},
    "choice",
    _status,
    choices=STATUS_FILTERS,
)
PERCENT = Value(
    int | None, {"type": "integer", "minimum": 0, "maximum": 100}, "int", _percent, metavar="N"
)
CONFIDENCE = Value(
    float | None,
    {"type": "number", "minimum": 0, "maximum": 1},
    "float",
    _confidence,
    metavar="X",
)
TIME = Value(
    Time, {"anyOf": [{"type": "number"}, {"type": "string"}]}, "time", _time, metavar="TIME"
)
REFS = Value(
    Refs,
    {
        "anyOf": [
            {"type": "string", "minLength": 3},
            {
                "type": "object",
                "properties": {"type": {"type": "string", "minLength": 1}},
                "required": ["type"],
            },
        ],
        "description": "TYPE:ID, e.g. chunk:chk_...",
    },
    "text",
    _refs,
    metavar="REF",
)
ENTITIES = Value(
    Entities,
    {
        "type": "string",
        "minLength": 3,
        "maxLength": 2100,
        "description": "An entity: KIND:NAME (person:Ada Lovelace, url:https://example.org, "
        "issue:#12) or an entity id (ent_ and 16 hex digits).",
    },
    "text",
    _entities,
    metavar="KIND:NAME",
)
FLAG = Value(bool, {"type": "boolean"}, "flag", _flag)


# --- the table --------------------------------------------------------------------------------

FILTERS: tuple[Filter, ...] = (
    Filter(
        "scope",
        SCOPES,
        "Only records of these scopes (any of them): exact (user:ada), a name and * for that "
        "scope and those under it (user:ada* admits user:ada/notes, never user:adam), or a "
        "separator and * for every scope under it (user:*); \\* is a literal star.",
        field="scopes",
        repeatable=True,
        label="Scope",
        hint=SCOPE_HINT,
    ),
    Filter(
        "kind",
        KINDS,
        "Only records of these kinds (any of them).",
        field="kinds",
        repeatable=True,
        label="Kind",
    ),
    Filter(
        "status",
        STATUS,
        "Only records of this status; all for every status.",
        field="status",
        default="active",
        label="Status",
    ),
    Filter(
        "min_priority",
        PERCENT,
        "Priority at least this (0-100).",
        field="min_priority",
        label="Priority at least",
        compare=("priority", ">="),
    ),
    Filter(
        "min_urgency",
        PERCENT,
        "Urgency at least this (0-100).",
        field="min_urgency",
        label="Urgency at least",
        compare=("urgency", ">="),
    ),
    Filter(
        "min_confidence",
        CONFIDENCE,
        "Confidence at least this (0.0-1.0).",
        field="min_confidence",
        label="Confidence at least",
        compare=("confidence", ">="),
    ),
    Filter(
        "updated_since",
        TIME,
        f"Updated at or after this time: {TIME_WORDS}.",
        field="updated_since",
        label="Updated since",
        hint=TIME_HINT,
        compare=("updated_at", ">="),
    ),
    Filter(
        "updated_before",
        TIME,
        f"Updated before this time: {TIME_WORDS}.",
        field="updated_before",
        label="Updated before",
        hint=TIME_HINT,
        compare=("updated_at", "<"),
    ),
    Filter(
        "said_since",
        TIME,
        f"Said (created) at or after this time: {TIME_WORDS}.",
        field="said_since",
        label="Said since",
        hint=TIME_HINT,
        compare=("created_at", ">="),
    ),
    Filter(
        "said_until",
        TIME,
        f"Said (created) before this time: {TIME_WORDS}.",
        field="said_until",
        label="Said until",
        hint=TIME_HINT,
        compare=("created_at", "<"),
    ),
    Filter(
        "expires_before",
        TIME,
        f"Only records with an expiry time earlier than this (what expires soon): {TIME_WORDS}.",
        field="expires_before",
        label="Expires before",
        hint=TIME_HINT,
    ),
    Filter(
        "cites",
        REFS,
        "Only records citing one of these references (TYPE:ID, e.g. chunk:chk_...).",
        field="cites",
        repeatable=True,
        label="Cites",
        hint="TYPE:ID, e.g. chunk:chk_...",
    ),
    Filter(
        "entity",
        ENTITIES,
        "Only records linked to one of these entities (KIND:NAME or ent_ id).",
        field="entities",
        repeatable=True,
        label="Entity",
        hint="KIND:NAME, e.g. person:Ada Lovelace",
    ),
    Filter(
        "include_expired",
        FLAG,
        "Also records whose expires_at has passed.",
        field="include_expired",
        default=False,
        label="Include expired",
    ),
    Filter(
        "through_chunks",
        FLAG,
        "For source:ID, also records citing any chunk of that source.",
        field="through_chunks",
        default=False,
        surfaces=frozenset(),
        option="--with-chunks",
    ),
)
"""Every memory filter, in the order the surfaces show them."""

BY_NAME: Mapping[str, Filter] = {spec.name: spec for spec in FILTERS}


def offered(surface: Surface) -> tuple[Filter, ...]:
    """The filters `list` and `search` offer on `surface`, in the table's order."""
    return tuple(spec for spec in FILTERS if surface in spec.surfaces)


CITING: Mapping[str, Any] = {"through_chunks": False, "status": "all", "include_expired": True}
"""The filters `MemoryReads.citing` takes besides the reference it looks for, with its own
defaults: it answers "what depends on this evidence", so every status and expired records too."""
