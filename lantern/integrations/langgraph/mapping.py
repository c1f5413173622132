"""How a LangGraph item is a memory record: its namespace is the scope, its key a reference, its
value the content.

* **Namespace → scope.** The labels are joined with `/`: `("user:ada", "notes")` is the scope
  `user:ada/notes`. Inside a label, `%`, `/` and `*`, every character that is not printable
  (line breaks, tabs, other spacing than the plain space, control and format characters, lone
  surrogates) and a space that begins or ends the label are written as `%XX`, the bytes of their
  UTF-8 (surrogates as their "surrogatepass" bytes). So every tuple of labels gives one scope,
  the scope gives the tuple back, a scope a label-writer would not produce (`%41`, a bare `*`)
  is no namespace, and the namespaces under a prefix are exactly the scopes of the patterns
  `PREFIX` and `PREFIX/*`, which `user:ada*` or `user:ada/*` on the command line select too.
* **Key → reference.** A record holds the reference `{"type": "langgraph", "id": PATH}`, where
  PATH is the scope, `/` and the key escaped as a label is: the item's path, one record per path
  and scope (`MemoryRepository.put_by_ref`). `lantern memory list --cites 'langgraph:PATH'`
  finds it; the record's id, made from its first content, never changes as the value does.
* **Value → content.** The content is the JSON object `{"key": KEY, "value": VALUE}` (and
  `"ttl": MINUTES` for an item put with a time to live), the value as `json` writes it, key order
  and number types kept, so it reads back unchanged. Whitespace in the key, but for single
  spaces between other characters, is written as `\\uXXXX` escapes: two keys that differ only
  in their spacing would otherwise say the same thing to Lantern's duplicate detection, which
  reads every run of whitespace as one space.
"""

from __future__ import annotations

import functools
import json
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from langgraph.store.base import InvalidNamespaceError

from lantern.errors import InvalidInput
from lantern.validation import MAX_CONTENT_CHARS, MAX_REF_CHARS, MAX_SCOPE_CHARS

REF_TYPE = "langgraph"
"""The type of the reference that holds an item's path."""
SEPARATOR = "/"
_ESCAPED = re.compile(r"(?:%[0-9A-F]{2})+")
_SURROGATE = re.compile("[\ud800-\udfff]")


def escape(label: str) -> str:
    """A label as it is written in a scope or a path (see the module note)."""
    if _plain(label):
        return label
    last = len(label) - 1
    written = []
    for position, char in enumerate(label):
        plain = char.isprintable() and char not in "%/*"
        if char == " " and position in (0, last):
            plain = False
        written.append(char if plain else _bytes(char))
    return "".join(written)


def _plain(label: str) -> bool:
    """Whether `escape` leaves the label as it is (most labels and keys): a test in C."""
    return (
        label.isprintable()
        and "%" not in label
        and "/" not in label
        and "*" not in label
        and not label.startswith(" ")
        and not label.endswith(" ")
    )


def _bytes(char: str) -> str:
    return "".join(f"%{byte:02X}" for byte in char.encode("utf-8", "surrogatepass"))


def unescape(text: str) -> str | None:
    """The label `escape` wrote as `text`, or None when `escape` would not have written it."""
    if _plain(text):
        return text
    try:
        label = _ESCAPED.sub(
            lambda run: bytes.fromhex(run.group().replace("%", "")).decode(
                "utf-8", "surrogatepass"
            ),
            text,
        )
    except UnicodeDecodeError:
        return None
    return label if escape(label) == text else None


def check_namespace(namespace: object, *, empty: bool = False) -> tuple[str, ...]:
    """A namespace as LangGraph's own stores take it: a tuple of non-empty strings without a
    period or NUL (or the empty tuple, where `empty` allows it)."""
    if not isinstance(namespace, tuple):
        raise InvalidNamespaceError(f"A namespace is a tuple of strings; got {namespace!r}")
    if not namespace and not empty:
        raise InvalidNamespaceError("Namespace cannot be empty.")
    for label in namespace:
        if not isinstance(label, str):
            raise InvalidNamespaceError(
                f"Invalid namespace label {label!r} found in {namespace}: labels must be "
                f"strings, not {type(label).__name__}."
            )
        if not label or "." in label or "\x00" in label:
            raise InvalidNamespaceError(
                f"Invalid namespace label {label!r} found in {namespace}: labels are non-empty "
                "and contain no period ('.') and no NUL."
            )
    return namespace


@functools.lru_cache(maxsize=4096)
def scope_of(namespace: tuple[str, ...]) -> str:
    """The scope of a (checked, non-empty) namespace."""
    scope = SEPARATOR.join(escape(label) for label in namespace)
    if len(scope) > MAX_SCOPE_CHARS:
        raise InvalidNamespaceError(
            f"The namespace {namespace} is {len(scope)} characters as a Lantern scope; the limit "
            f"is {MAX_SCOPE_CHARS}."
        )
    return scope


@functools.lru_cache(maxsize=4096)
def namespace_of(scope: str) -> tuple[str, ...] | None:
    """The namespace whose scope is `scope`, or None for a scope no namespace gives."""
    labels = []
    for text in scope.split(SEPARATOR):
        label = unescape(text)
        if not label:
            return None
        labels.append(label)
    return tuple(labels)


def scope_patterns(prefix: tuple[str, ...]) -> list[str] | None:
    """The scope patterns of every namespace that starts with `prefix`; None (every scope) for
    the empty prefix."""
    if not prefix:
        return None
    scope = scope_of(prefix)
    return [scope, scope + SEPARATOR + "*"]


def path_of(scope: str, key: str) -> str:
    """An item's path: its scope and its key, escaped as a label is."""
    return scope + SEPARATOR + escape(key)


def check_path(path: str, key: str) -> None:
    """Refuse a path too long to be stored in a reference (a JSON object of at most
    `MAX_REF_CHARS` characters, its type and its keys' names included)."""
    if len(json.dumps(reference(path), ensure_ascii=False)) > MAX_REF_CHARS:
        raise InvalidInput(
            f"the key {key[:40]!r}... is too long: its path is {len(path)} characters, and a "
            f"reference holds at most {MAX_REF_CHARS}"
        )


def reference(path: str) -> dict[str, str]:
    """The reference a record of the item at `path` holds."""
    return {"type": REF_TYPE, "id": path}


def lookup(path: str) -> str:
    """The reference of the item at `path` as `TYPE:ID`, to look it up by."""
    return f"{REF_TYPE}:{path}"


def holds(refs: Sequence[Mapping[str, Any]], path: str) -> bool:
    """Whether references hold the item's path."""
    return any(ref.get("type") == REF_TYPE and ref.get("id") == path for ref in refs)


@dataclass(frozen=True, slots=True)
class Stored:
    """What a record's content says of its item."""

    key: str
    value: dict[str, Any]
    ttl: float | None


def content_of(key: str, value: Mapping[str, Any], ttl: float | None) -> str:
    """The content of the record of an item (see the module note). A value that JSON cannot
    hold exactly is refused: it could not be given back unchanged."""
    if not isinstance(value, Mapping):
        raise InvalidInput(f"an item's value is a dict; got {type(value).__name__}")
    checked = dict(value)
    _check_json(checked, "value")
    key_text = _spaced(json.dumps(key, ensure_ascii=False))
    parts = ['{"key": ', key_text, ', "value": ', json.dumps(checked, ensure_ascii=False)]
    if ttl is not None:
        parts += [', "ttl": ', json.dumps(ttl)]
    parts.append("}")
    content = _SURROGATE.sub(_escaped_char, "".join(parts))
    if len(content) > MAX_CONTENT_CHARS:
        raise InvalidInput(
            f"the item {key[:40]!r} is too long: its record's content would be {len(content)} "
            f"characters, the limit is {MAX_CONTENT_CHARS}"
        )
    return content


def _escaped_char(found: re.Match[str]) -> str:
    return f"\\u{ord(found.group()):04x}"


def _spaced(text: str) -> str:
    """A JSON string with its whitespace written as `\\uXXXX`, but for single spaces between
    other characters, which duplicate detection reads as they are."""
    last = len(text) - 1
    return "".join(
        f"\\u{ord(char):04x}"
        if char.isspace()
        and not (
            char == " "
            and 0 < position < last
            and not text[position - 1].isspace()
            and not text[position + 1].isspace()
        )
        else char
        for position, char in enumerate(text)
    )


def parse(content: str) -> Stored | None:
    """What `content_of` wrote, or None for any other content."""
    if not content.startswith('{"key": '):
        return None
    try:
        said = json.loads(content)
    except ValueError:
        return None
    if not isinstance(said, dict) or not {"key", "value"} <= set(said) <= {"key", "value", "ttl"}:
        return None
    key, value, ttl = said["key"], said["value"], said.get("ttl")
    if not isinstance(key, str) or not isinstance(value, dict):
        return None
    if ttl is not None and (isinstance(ttl, bool) or not isinstance(ttl, int | float)):
        return None
    return Stored(key, value, None if ttl is None else float(ttl))


def _check_json(value: object, where: str) -> None:
    """Refuse what JSON cannot hold as it is: a tuple would come back a list, a key 1 the key
    "1", NaN would not be JSON at all."""
    if value is None or isinstance(value, str | int):
        return
    if isinstance(value, float):
        if not math.isfinite(value):
            raise InvalidInput(f"{where} is {value!r}, which JSON has no number for")
        return
    if isinstance(value, dict):
        for name, item in value.items():
            if not isinstance(name, str):
                raise InvalidInput(
                    f"{where} has the key {name!r}: the keys of a JSON object are strings"
                )
            _check_json(item, f"{where}[{name!r}]")
        return
    if isinstance(value, list):
        for index, item in enumerate(value):
            _check_json(item, f"{where}[{index}]")
        return
    raise InvalidInput(
        f"{where} is a {type(value).__name__}, which JSON cannot hold as it is (an item's value "
        "holds dicts, lists, strings, numbers, booleans and None)"
    )
