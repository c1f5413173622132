"""Argument checks for evidence operations: each bad value becomes a one-line `InvalidInput`."""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from typing import Any

from lantern import validation
from lantern.errors import InvalidInput, Param
from lantern.evidence.chunking import MIN_TARGET_SIZE
from lantern.evidence.sourcekinds import KNOWN_SOURCE_KINDS
from lantern.validation import canonical_json

MAX_TARGET_SIZE = 100_000
MAX_URI_CHARS = 4_096
MAX_RAW_QUERY_CHARS = 10_000
MAX_CONTEXT = 100
_KIND = re.compile(r"[a-z][a-z0-9_-]{0,63}")


def uri(value: object) -> str:
    checked = validation.text("uri", value, max_chars=MAX_URI_CHARS)
    if checked != checked.strip() or any(ch in checked for ch in "\n\r\t"):
        raise InvalidInput(
            Param("uri"), f" must not have surrounding whitespace or line breaks; got {checked!r}"
        )
    return checked


def text(value: object) -> str:
    if not isinstance(value, str):
        raise InvalidInput(Param("text"), f" must be a str; got {type(value).__name__}")
    if "\x00" in value:
        raise InvalidInput(
            Param("text"), " must not contain NUL characters (binary data is not evidence)"
        )
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise InvalidInput(
            Param("text"), " is not valid UTF-8 (it holds a lone surrogate)"
        ) from exc
    return value


def kind(value: object) -> str:
    if not isinstance(value, str) or not _KIND.fullmatch(value):
        raise InvalidInput(
            Param("kind"),
            f" must be one of {', '.join(KNOWN_SOURCE_KINDS)} or another lowercase word "
            f"(letters, digits, _ and -, at most 64); got {value!r}",
        )
    return value


def title(value: object) -> str | None:
    if value is None:
        return None
    return validation.text("title", value, max_chars=MAX_URI_CHARS)


def metadata(value: object) -> dict[str, Any]:
    """The caller's metadata: a JSON object (or its text), stored with canonical key order."""
    if value is None:
        return {}
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except json.JSONDecodeError as exc:
            raise InvalidInput(Param("metadata"), f" is not valid JSON: {exc.msg}") from exc
    if not isinstance(value, Mapping):
        raise InvalidInput(Param("metadata"), f" must be a JSON object; got {type(value).__name__}")
    try:
        json.dumps(dict(value), ensure_ascii=False, allow_nan=False).encode("utf-8")
    except (TypeError, ValueError, UnicodeEncodeError) as exc:
        raise InvalidInput(Param("metadata"), f" is not storable JSON: {exc}") from exc
    if _contains_nul(value):
        raise InvalidInput(Param("metadata"), " must not contain NUL characters")
    result: dict[str, Any] = canonical_json(dict(value))
    return result


def _contains_nul(value: object) -> bool:
    """NUL cannot be stored in PostgreSQL text or JSONB, so it is refused on every engine."""
    if isinstance(value, str):
        return "\x00" in value
    if isinstance(value, Mapping):
        return any(_contains_nul(key) or _contains_nul(item) for key, item in value.items())
    if isinstance(value, list | tuple):
        return any(_contains_nul(item) for item in value)
    return False


def target_size(value: object) -> int:
    if (
        isinstance(value, bool)
        or not isinstance(value, int)
        or not MIN_TARGET_SIZE <= value <= MAX_TARGET_SIZE
    ):
        raise InvalidInput(
            Param("target_size"),
            f" must be an integer from {MIN_TARGET_SIZE} to {MAX_TARGET_SIZE}; got {value!r}",
        )
    return value


def ordinal_cursor(value: object) -> int:
    """Where a page of a source's chunks continues: the ordinal of the last chunk shown."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise InvalidInput(
            Param("after"), f" must be a chunk ordinal (an integer from 0); got {value!r}"
        )
    return value


def context(value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_CONTEXT:
        raise InvalidInput(
            Param("context"), f" must be an integer from 0 to {MAX_CONTEXT}; got {value!r}"
        )
    return value


def filter_values(field_name: str, value: str | Iterable[str] | None) -> list[str]:
    values = [] if value is None else [value] if isinstance(value, str) else list(value)
    for item in values:
        if not isinstance(item, str) or not item.strip():
            raise InvalidInput(Param(field_name), f" filter must be non-empty text; got {item!r}")
    return values
