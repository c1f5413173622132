"""Where a page of an entity's chunks, or of `entity show`, continues.

Cursors are opaque to callers: base64url of a small JSON value with a prefix that says what it
continues, checked field by field when it comes back, so a damaged or foreign cursor is a
one-line error rather than a wrong page.
"""

from __future__ import annotations

import base64
import binascii
import json
from typing import Any

from lantern.errors import InvalidInput

CHUNKS_PREFIX = "ec1."
SHOW_PREFIX = "es1."


def encode(prefix: str, value: Any) -> str:
    body = json.dumps(value, ensure_ascii=True, separators=(",", ":")).encode("ascii")
    return prefix + base64.urlsafe_b64encode(body).decode("ascii").rstrip("=")


def decode(prefix: str, value: object, what: str) -> Any:
    if not isinstance(value, str) or not value.startswith(prefix):
        raise _refused(value, what)
    body = value[len(prefix) :]
    try:
        raw = base64.urlsafe_b64decode(body + "=" * (-len(body) % 4))
        return json.loads(raw.decode("ascii"))
    except (binascii.Error, ValueError, UnicodeDecodeError) as exc:
        raise _refused(value, what) from exc


def chunk_position(value: object) -> tuple[str, int, str]:
    """A chunks cursor: the `(uri, ordinal, chunk id)` of the last chunk shown."""
    found = decode(CHUNKS_PREFIX, value, "an entity's chunks")
    if (
        isinstance(found, list)
        and len(found) == 3
        and isinstance(found[0], str)
        and isinstance(found[1], int)
        and not isinstance(found[1], bool)
        and isinstance(found[2], str)
    ):
        return found[0], found[1], found[2]
    raise _refused(value, "an entity's chunks")


def show_position(value: object) -> tuple[str | None, bool, str | None, bool]:
    """An `entity show` cursor: where the chunks and the records continue, and whether each
    list is done."""
    found = decode(SHOW_PREFIX, value, "entity show")
    if (
        isinstance(found, dict)
        and set(found) == {"c", "cd", "m", "md"}
        and (found["c"] is None or isinstance(found["c"], str))
        and (found["m"] is None or isinstance(found["m"], str))
        and isinstance(found["cd"], bool)
        and isinstance(found["md"], bool)
    ):
        return found["c"], found["cd"], found["m"], found["md"]
    raise _refused(value, "entity show")


def show_cursor(
    chunks: str | None, chunks_done: bool, memories: str | None, memories_done: bool
) -> str:
    return encode(SHOW_PREFIX, {"c": chunks, "cd": chunks_done, "m": memories, "md": memories_done})


def _refused(value: object, what: str) -> InvalidInput:
    shown = repr(value) if len(repr(value)) <= 60 else repr(value)[:59] + "…"
    return InvalidInput(f"{shown} is not a cursor of {what}; give the next_cursor of a page of it")
