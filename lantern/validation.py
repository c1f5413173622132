"""Field rules for memory records, checked in one place for the CLI, the API and the MCP server.

The database enforces the same enumerations and ranges with named CHECK constraints; checking
here first turns a bad value into a message that names the field and the accepted values.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from lantern.errors import InvalidInput, Param, Setting

MEMORY_KINDS = (
    "fact",
    "preference",
    "goal",
    "constraint",
    "task_state",
    "observation",
    "hypothesis",
)
STATUSES = ("active", "archived", "superseded")
STATUS_FILTERS = (*STATUSES, "all")
# What happened to a record, as the history table records it (docs/memory.md, "History").
HISTORY_EVENTS = (
    "created",
    "updated",
    "archived",
    "restored",
    "superseded",
    "expired",
    "forgotten",
)
SEARCH_ORDERS = ("relevance", "policy")

JSONObject = dict[str, Any]
"""A JSON object as Lantern stores and returns it (metadata, references, every `to_json()`)."""

SourceRef = str | Mapping[str, object]
"""A reference to evidence: `TYPE:ID` (`chunk:chk_0123456789abcdef`), or a JSON object with a
string `type` (and whatever else names the evidence), as a mapping or its JSON text."""
SourceRefs = SourceRef | Sequence[SourceRef]
"""One reference to evidence, or a list of them."""

MAX_CONTENT_CHARS = 100_000
MAX_SCOPE_CHARS = 512
MAX_REF_CHARS = 4_096
_WHITESPACE = re.compile(r"\s+")


def choice(field: str, value: str, allowed: tuple[str, ...]) -> str:
    if value not in allowed:
        raise InvalidInput(Param(field), f" must be one of {', '.join(allowed)}; got {value!r}")
    return value


def kind(value: str) -> str:
    return choice("kind", value, MEMORY_KINDS)


def status_filter(value: str) -> str:
    return choice("status", value, STATUS_FILTERS)


def percent(field: str, value: object) -> int:
    """An integer 0-100 (priority, urgency); bools are not integers here."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidInput(Param(field), f" must be an integer from 0 to 100; got {_shown(value)}")
    if not 0 <= value <= 100:
        raise InvalidInput(Param(field), f" must be an integer from 0 to 100; got {_shown(value)}")
    return value


def confidence(value: object, field: str = "confidence") -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise _not_a_confidence(field, value)
    if isinstance(value, int) and not 0 <= value <= 1:
        # Compared as an integer: float() overflows past 1e308.
        raise _not_a_confidence(field, value)
    number = float(value)
    if math.isnan(number) or not 0.0 <= number <= 1.0:
        raise _not_a_confidence(field, value)
    return number


def _not_a_confidence(field: str, value: object) -> InvalidInput:
    # Made only when refusing: building the message costs more than the checks (every add
    # checks a confidence).
    return InvalidInput(Param(field), f" must be a number from 0.0 to 1.0; got {_shown(value)}")


def min_similarity(value: object, floor: object) -> float | None:
    """A search's relevance floor as given (`lantern.retrieval.floor`): a cosine similarity from
    -1 to 1, or None; never together with `floor=False`."""
    if not isinstance(floor, bool):
        raise InvalidInput(Param("floor"), f" must be true or false; got {floor!r}")
    if value is None:
        return None
    if (
        isinstance(value, bool)
        or not isinstance(value, int | float)
        or not math.isfinite(value)
        or not -1.0 <= value <= 1.0
    ):
        raise InvalidInput(
            Param("min_similarity"), f" must be a cosine similarity from -1 to 1; got {value!r}"
        )
    if not floor:
        raise InvalidInput(Param("min_similarity"), " cannot be given ", Setting("floor", False))
    return float(value)


def text(field: str, value: object, *, max_chars: int) -> str:
    """Non-blank text that can be stored and printed (no lone surrogates, no NUL)."""
    if not isinstance(value, str):
        raise InvalidInput(Param(field), f" must be text; got {type(value).__name__}")
    if not value.strip():
        raise InvalidInput(Param(field), " must not be empty")
    if len(value) > max_chars:
        raise InvalidInput(
            Param(field), f" is too long: {len(value)} characters, the limit is {max_chars}"
        )
    if "\x00" in value:
        raise InvalidInput(Param(field), " must not contain NUL characters")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise InvalidInput(Param(field), " is not valid UTF-8 text") from exc
    return value


def content(value: object) -> str:
    return text("content", value, max_chars=MAX_CONTENT_CHARS)


def scope(value: object) -> str:
    checked = text("scope", value, max_chars=MAX_SCOPE_CHARS)
    if checked != checked.strip() or any(ch in checked for ch in "\n\r\t"):
        raise InvalidInput(
            Param("scope"), f" must not have surrounding whitespace or line breaks; got {checked!r}"
        )
    return checked


def normalized_content(value: str) -> str:
    """Content as it enters the id: every run of whitespace one space, the ends stripped."""
    return _WHITESPACE.sub(" ", value).strip()


def timestamp(field: str, value: object) -> int:
    """Unix seconds (a number, or its digits as text) or ISO-8601 text (naive times are UTC).

    Times are whole seconds: a fraction (`1796029200.5`, what `time.time()` and `date +%s.%N`
    give) is dropped, rounding down, as it is from an ISO-8601 time with a fraction.
    """
    if isinstance(value, bool):
        raise _not_a_time(field, value)
    if isinstance(value, int):
        return _in_range(field, value)
    if isinstance(value, float) and math.isfinite(value):
        return _in_range(field, math.floor(value))
    if isinstance(value, str):
        stripped = value.strip()
        if re.fullmatch(r"-?(?:\d+(?:\.\d*)?|\.\d+)", stripped):
            return _in_range(field, _whole_seconds(field, stripped))
        try:
            parsed = datetime.fromisoformat(stripped.replace("z", "Z"))
        except ValueError:
            pass
        else:
            if parsed.tzinfo is None:
                parsed = parsed.replace(tzinfo=UTC)
            return _in_range(field, math.floor(parsed.timestamp()))
    raise _not_a_time(field, value)


def _whole_seconds(field: str, text: str) -> int:
    """The whole seconds of a decimal number, rounded down."""
    negative = text.startswith("-")
    whole, _, fraction = text.lstrip("-").partition(".")
    # Without leading zeros, and no longer than a time can be: int() refuses a string of more
    # than 4,300 digits, leading zeros included.
    digits = whole.lstrip("0") or "0"
    if len(digits) > _MAX_DIGITS:
        raise InvalidInput(Param(field), f" is out of range: {text[:_MAX_DIGITS]}...")
    seconds = int(digits)
    if not negative:
        return seconds
    return -seconds - (1 if fraction.strip("0") else 0)


def _not_a_time(field: str, value: object) -> InvalidInput:
    return InvalidInput(Param(field), f" must be unix seconds or an ISO-8601 time; got {value!r}")


_MAX_DIGITS = 30


def _shown(value: object) -> str:
    """A value for a message: its repr, except an integer too long to print in full (Python
    refuses to turn one of more than 4,300 digits into text at all)."""
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) >= 10**_MAX_DIGITS:
        return f"an integer of {value.bit_length()} bits"
    return repr(value)


def _in_range(field: str, seconds: int) -> int:
    # Keep times within what every engine and datetime can represent (years 1-9999).
    if not -62_135_596_800 <= seconds <= 253_402_300_799:
        raise InvalidInput(Param(field), f" is out of range: {_shown(seconds)}")
    return seconds


def source_ref(value: object) -> dict[str, Any]:
    """A reference to evidence: a JSON object with a string `type`, or the short `TYPE:ID`."""
    if isinstance(value, dict):
        ref = value
    elif isinstance(value, str):
        raw = value.strip()
        if len(raw) > MAX_REF_CHARS:
            raise InvalidInput(f"source reference is too long (limit {MAX_REF_CHARS} characters)")
        if raw.startswith("{"):
            try:
                ref = json.loads(raw)
            except json.JSONDecodeError as exc:
                raise InvalidInput(f"source reference is not valid JSON: {raw!r}") from exc
            if not isinstance(ref, dict):
                raise InvalidInput(f"source reference must be a JSON object; got {raw!r}")
        else:
            ref_type, sep, ref_id = raw.partition(":")
            if not sep or not ref_type.strip() or not ref_id.strip():
                raise InvalidInput(
                    f"source reference must be TYPE:ID (e.g. chunk:chk_0123456789abcdef) "
                    f"or a JSON object with a type; got {raw!r}"
                )
            ref = {"type": ref_type.strip(), "id": ref_id.strip()}
    else:
        raise InvalidInput(f"source reference must be TYPE:ID or a JSON object; got {value!r}")
    ref_type_value = ref.get("type")
    if not isinstance(ref_type_value, str) or not ref_type_value.strip():
        raise InvalidInput(f"source reference needs a non-empty string 'type'; got {ref!r}")
    try:
        encoded = json.dumps(ref, ensure_ascii=False, allow_nan=False)
        encoded.encode("utf-8")
    except (TypeError, ValueError, UnicodeEncodeError) as exc:
        raise InvalidInput(f"source reference is not storable JSON: {ref!r}") from exc
    if len(encoded) > MAX_REF_CHARS:
        raise InvalidInput(f"source reference is too long (limit {MAX_REF_CHARS} characters)")
    canonical: dict[str, Any] = _canonical(ref)
    return canonical


def _canonical(value: Any) -> Any:
    """Object keys in PostgreSQL JSONB's order (shorter first, then bytewise), recursively.

    JSONB reorders keys on its own; storing them in that order everywhere makes a record read
    back identically from SQLite and PostgreSQL, so exports compare byte for byte.
    """
    if isinstance(value, dict):
        items = [(str(key).encode("utf-8"), item) for key, item in value.items()]
        items.sort(key=lambda pair: (len(pair[0]), pair[0]))
        return {key.decode("utf-8"): _canonical(item) for key, item in items}
    if isinstance(value, list):
        return [_canonical(item) for item in value]
    return value


def source_refs(values: object) -> list[dict[str, Any]]:
    if values is None:
        return []
    if isinstance(values, str | dict):
        values = [values]
    if not isinstance(values, list | tuple):
        raise InvalidInput(Param("source_refs"), " must be a list of references")
    refs: list[dict[str, Any]] = []
    for value in values:
        ref = source_ref(value)
        if ref not in refs:
            refs.append(ref)
    return refs


def limit(value: object, *, field: str = "limit", maximum: int = 10_000) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= maximum:
        raise InvalidInput(
            Param(field), f" must be an integer from 1 to {maximum}; got {_shown(value)}"
        )
    return value


def offset(value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise InvalidInput(Param("offset"), f" must be a non-negative integer; got {_shown(value)}")
    return value


def canonical_json(value: Any) -> Any:
    """A JSON value with its object keys in PostgreSQL JSONB's order (see `_canonical`)."""
    return _canonical(value)


_MEMORY_ID = re.compile(r"mem_[0-9a-f]{16}")


def memory_record_id(value: object) -> str:
    """A memory id in the form Lantern gives them (`mem_` and 16 lower-case hex digits)."""
    if not isinstance(value, str) or not _MEMORY_ID.fullmatch(value):
        raise InvalidInput(f"a memory id is mem_ followed by 16 hex digits; got {value!r}")
    return value


SCOPE_SEPARATORS = (":", "/")
"""Where one name in a scope ends and what lies under it begins (`user:ada/notes`)."""

ScopePattern = tuple[tuple[str, bool], ...]
"""A scope pattern as the database and `ScopePolicy.allows` read it: `(text, is_prefix)`
pairs, any of which admits a scope (an exact scope, or every scope that starts with a text)."""


def scope_pattern(value: object) -> ScopePattern:
    """A scope pattern, read (docs/memory.md, "Scope patterns").

    - `user:ada` is that scope only;
    - `user:*` (a star after a separator, `:` or `/`, or alone) is every scope that starts
      with what precedes it;
    - `user:ada*` (a star after a letter or a digit) is `user:ada` and the scopes under it,
      `user:ada:...` and `user:ada/...`: never `user:adam` nor `user:ada2`, which only start
      the same way;
    - `log:2024-*` (a star after any other character) is every scope that starts with
      `log:2024-`: the writer ended the prefix on purpose;
    - `\\*` is a literal star, anywhere (`odd\\*` is the scope `odd*`); a star anywhere but at
      the end is refused as ambiguous. `%`, `_`, `.` and every other character are literal.
    """
    if not isinstance(value, str):
        return ((scope(value), False),)
    body, wildcard = (value[:-1], True) if _ends_in_wildcard(value) else (value, False)
    if "*" in body.replace("\\*", ""):
        raise InvalidInput(
            Param("scope"),
            f" pattern {value!r} has a * before its end: a * matches only at the end of a "
            "pattern (write \\* for a literal star)",
        )
    text = body.replace("\\*", "*")
    if not wildcard:
        return ((scope(text), False),)
    if text != text.lstrip() or any(ch in text for ch in "\n\r\t"):
        raise InvalidInput(
            Param("scope"), f" must not have surrounding whitespace or line breaks; got {value!r}"
        )
    if len(text) > MAX_SCOPE_CHARS:
        raise InvalidInput(Param("scope"), f" is too long (limit {MAX_SCOPE_CHARS} characters)")
    if not text or not text[-1].isalnum():
        return ((text, True),)
    # A name: itself, and what lies under it, never a longer name that starts the same way.
    return ((scope(text), False), *((text + sep, True) for sep in SCOPE_SEPARATORS))


def _ends_in_wildcard(value: str) -> bool:
    """Whether the last character is a star that is not escaped."""
    return value.endswith("*") and not value.endswith("\\*")


def ref_key(value: object) -> tuple[str, str]:
    """The `(type, id)` a reference names, for lookups: `TYPE:ID` or an object with both."""
    ref = source_ref(value)
    ref_id = ref.get("id")
    if not isinstance(ref_id, str) or not ref_id.strip():
        raise InvalidInput(
            f"a reference to look up needs an id, as in chunk:chk_...; got {value!r}"
        )
    return ref["type"], ref_id


def optional_percent(field: str, value: object) -> int | None:
    return None if value is None else percent(field, value)


def optional_confidence(value: object, field: str = "confidence") -> float | None:
    return None if value is None else confidence(value, field)


def optional_timestamp(field: str, value: object) -> int | None:
    return None if value is None else timestamp(field, value)


# --- the names an HTTP request gives its server -----------------------------------------------

_HOST_HEADER = re.compile(
    r"(?:\[(?P<v6>[0-9A-Fa-f:.]+)\]|(?P<name>[A-Za-z0-9](?:[A-Za-z0-9.-]*[A-Za-z0-9])?))"
    r"(?::(?P<port>[0-9]{1,5}))?"
)
_ORIGIN = re.compile(r"(?P<scheme>https?)://(?P<host>[^/?#]*)")


def http_host(value: str | None) -> str | None:
    """The host name of a `Host` header in its exact form, `NAME` or `NAME:PORT` (an IPv6
    address in brackets), lowercased (an IPv6 address without its brackets); None for anything
    else (`localhost:8765@evil.example`, `localhost:evil`, a user part, a path, a second
    port), which names no server at all."""
    if value is None:
        return None
    found = _HOST_HEADER.fullmatch(value)
    if found is None or (found["port"] is not None and int(found["port"]) > 65_535):
        return None
    return (found["v6"] or found["name"]).lower()


def http_origin(value: str | None) -> str | None:
    """The host name of an `Origin` header, `http://` or `https://` and an exact `http_host`
    form (nothing after it); None for anything else (`http://localhost:8765.evil.example`,
    whose port is no number, is refused, never read as `localhost`)."""
    if value is None:
        return None
    found = _ORIGIN.fullmatch(value)
    return None if found is None else http_host(found["host"])
