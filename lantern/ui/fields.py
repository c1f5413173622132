"""The query parameters of the pages, each read once into an API argument and a CLI option.

A page's form, the call it makes on the facade and the CLI command it shows all come from the
same `Field` list, so they cannot disagree. Choices come from the vocabularies below the
surfaces (`lantern.validation`, `lantern.retrieval.modes`): a kind, status, event or search mode
added there appears in every form. The memory filters are made from their table
(`lantern.memory.filterspec`), as the CLI's options and the MCP tools' properties are, so a
filter added there appears here too, with the same help.

Values are checked for their form only (a number where a number goes); what they mean is the
repository's to judge, which raises the same one-line errors as for the CLI.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from lantern.errors import InvalidInput
from lantern.evidence.sourcekinds import KNOWN_SOURCE_KINDS
from lantern.memory.filterspec import SCOPE_HINT, TIME_HINT, Filter, offered
from lantern.retrieval.modes import DEFAULT_MODE, SEARCH_MODES
from lantern.validation import HISTORY_EVENTS, SEARCH_ORDERS

Form = Literal["text", "texts", "choice", "choices", "int", "float", "flag", "time"]

MAX_PARAM_CHARS = 10_000
"""A query parameter longer than this is refused before anything reads it."""


@dataclass(frozen=True, slots=True)
class Field:
    """One query parameter: its name (also the API keyword), the CLI option it stands for,
    how it is entered, and its default (a parameter at its default is left out of both)."""

    name: str
    option: str
    form: Form
    label: str
    choices: tuple[str, ...] = ()
    default: Any = None
    hint: str = ""
    suggestions: tuple[str, ...] = ()
    help: str = ""
    """What the field does, shown as its tooltip (a memory filter's words in every surface)."""

    @property
    def repeated(self) -> bool:
        return self.form in ("texts", "choices")


def _filter_field(spec: Filter) -> Field:
    """A memory filter's form field, from its entry in the table (its help as the tooltip)."""
    form: Form = spec.value.form
    if spec.repeatable and form in ("text", "choice"):
        form = "texts" if form == "text" else "choices"
    return Field(
        spec.name,
        spec.cli_option,
        form,
        spec.label,
        choices=spec.value.choices,
        default=spec.default,
        hint=spec.hint,
        help=spec.help,
    )


MEMORY_FILTERS: tuple[Field, ...] = tuple(_filter_field(spec) for spec in offered("web"))
"""The filters `memory list` and `memory search` share, in the CLI's order."""

MEMORY_SEARCH: tuple[Field, ...] = (
    Field("mode", "--mode", "choice", "Mode", choices=SEARCH_MODES, default=DEFAULT_MODE.value),
    Field("order", "--order", "choice", "Order", choices=SEARCH_ORDERS, default="relevance"),
)

CHANGES_FILTERS: tuple[Field, ...] = (
    Field("scope", "--scope", "texts", "Scope", hint=SCOPE_HINT),
    Field("event", "--event", "choices", "Event", choices=HISTORY_EVENTS),
    Field("since", "--since", "time", "Since", hint=TIME_HINT),
    Field("before", "--before", "time", "Before", hint=TIME_HINT),
)

SOURCE_FILTERS: tuple[Field, ...] = (
    Field("kind", "--kind", "texts", "Kind", suggestions=KNOWN_SOURCE_KINDS),
    Field("uri_prefix", "--uri-prefix", "text", "URI starts with"),
)

EVIDENCE_SEARCH: tuple[Field, ...] = (
    Field("kind", "--kind", "texts", "Source kind", suggestions=KNOWN_SOURCE_KINDS),
    Field("source", "--source", "texts", "Source", hint="a source id, or a URI prefix"),
    Field("since", "--since", "time", "Ingested since", hint=TIME_HINT),
    Field("until", "--until", "time", "Ingested before", hint=TIME_HINT),
    Field("entity", "--entity", "texts", "Entity", hint="KIND:NAME, e.g. url:https://example.org"),
    Field("mode", "--mode", "choice", "Mode", choices=SEARCH_MODES, default=DEFAULT_MODE.value),
    Field("raw", "--raw", "flag", "Raw engine syntax"),
)


Params = Mapping[str, Sequence[str]]
"""Query parameters: each name with every value it was given."""


def read(params: Params, fields: Sequence[Field]) -> dict[str, Any]:
    """The values the query gives, by field name; a field left empty or at its default is
    left out, so that the result is both the API's keywords and the CLI's options."""
    found: dict[str, Any] = {}
    for field in fields:
        given = [value.strip() for value in params.get(field.name, ()) if value.strip()]
        if not given:
            continue
        for value in given:
            if len(value) > MAX_PARAM_CHARS:
                raise InvalidInput(f"{field.name} is longer than {MAX_PARAM_CHARS} characters")
        if field.repeated:
            found[field.name] = list(dict.fromkeys(given))
            continue
        value = given[-1]
        if field.form == "flag":
            if value not in ("1", "on", "true", "yes"):
                continue
            found[field.name] = True
        elif field.form == "int":
            found[field.name] = _integer(field.name, value)
        elif field.form == "float":
            found[field.name] = _number(field.name, value)
        elif value != field.default:
            found[field.name] = value
    return found


def cli_words(values: Mapping[str, Any], fields: Sequence[Field]) -> list[str]:
    """The CLI options that give the same values, in the fields' order."""
    words: list[str] = []
    for field in fields:
        if field.name not in values:
            continue
        value = values[field.name]
        if field.form == "flag":
            words.append(field.option)
        elif field.repeated:
            for item in value:
                words += [field.option, str(item)]
        else:
            words += [field.option, _shown(value)]
    return words


def query_pairs(values: Mapping[str, Any], fields: Sequence[Field]) -> list[tuple[str, str]]:
    """The query parameters that give these values back (for links to other pages)."""
    pairs: list[tuple[str, str]] = []
    for field in fields:
        if field.name not in values:
            continue
        value = values[field.name]
        if field.form == "flag":
            pairs.append((field.name, "1"))
        elif field.repeated:
            pairs += [(field.name, str(item)) for item in value]
        else:
            pairs.append((field.name, _shown(value)))
    return pairs


def integer(params: Params, name: str, default: int) -> int:
    """A whole-number parameter outside the fields (limit, offset, context)."""
    given = [value.strip() for value in params.get(name, ()) if value.strip()]
    return default if not given else _integer(name, given[-1])


def text(params: Params, name: str) -> str | None:
    """A text parameter outside the fields (a query, a cursor)."""
    given = [value for value in params.get(name, ()) if value.strip()]
    if not given:
        return None
    if len(given[-1]) > MAX_PARAM_CHARS:
        raise InvalidInput(f"{name} is longer than {MAX_PARAM_CHARS} characters")
    return given[-1]


def _integer(name: str, value: str) -> int:
    if not (value.lstrip("-").isdecimal() and value.isascii()) or len(value) > 20:
        raise InvalidInput(f"{name} must be a whole number; got {value!r}")
    return int(value)


def _number(name: str, value: str) -> float:
    try:
        number = float(value)
    except ValueError:
        raise InvalidInput(f"{name} must be a number; got {value!r}") from None
    return number


def _shown(value: Any) -> str:
    return str(value)
