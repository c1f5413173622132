"""How stored text is shown: it is untrusted, and must neither run nor mislead.

Jinja2 escapes everything a template prints; these helpers add what escaping does not: control
and format characters (zero-width spaces, bidirectional overrides, escape codes) are shown as
visible marks, so `user:ada` and `user:ada` followed by a zero-width space never look the same;
long texts are cut for listings; and search snippets have their match marks turned into
`<mark>` only after everything else is escaped.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from markupsafe import Markup, escape

INVISIBLE_RANGES = (
    (0x0000, 0x0008), (0x000B, 0x001F), (0x007F, 0x009F), (0x00AD, 0x00AD),
    (0x0600, 0x0605), (0x061C, 0x061C), (0x06DD, 0x06DD), (0x070F, 0x070F),
    (0x0890, 0x0891), (0x08E2, 0x08E2), (0x180E, 0x180E), (0x200B, 0x200F),
    (0x202A, 0x202E), (0x2060, 0x2064), (0x2066, 0x206F), (0xFEFF, 0xFEFF),
    (0xFFF9, 0xFFFB), (0x110BD, 0x110BD), (0x110CD, 0x110CD), (0x13430, 0x13438),
    (0x1BCA0, 0x1BCA3), (0x1D173, 0x1D17A), (0xE0001, 0xE0001), (0xE0020, 0xE007F),
)  # fmt: skip
"""The control (Cc) and format (Cf) characters but tab and line feed, as Unicode 14 lists them
(zero-width spaces and joiners, bidirectional marks, embeddings, overrides and isolates, the
byte order mark, tags); a test keeps them in step with the interpreter's `unicodedata`."""


def _invisible_characters() -> str:
    return "[" + "".join(f"\\U{low:08x}-\\U{high:08x}" for low, high in INVISIBLE_RANGES) + "]"


_INVISIBLE = re.compile(_invisible_characters())


def visible(value: object) -> Markup:
    """The text escaped, each invisible character shown as a mark naming its code point."""
    text = "" if value is None else str(value)
    parts: list[str] = []
    last = 0
    for match in _INVISIBLE.finditer(text):
        parts.append(str(escape(text[last : match.start()])))
        code = f"U+{ord(match.group()):04X}"
        parts.append(f'<span class="invisible" title="{code}">{code}</span>')
        last = match.end()
    parts.append(str(escape(text[last:])))
    return Markup("".join(parts))


def preview(value: object, width: int = 240) -> str:
    """A one-line preview: whitespace runs as one space, cut at `width` characters."""
    flat = " ".join(str(value).split())
    return flat if len(flat) <= width else flat[: width - 1] + "…"


def when(seconds: object) -> str:
    """A unix time as UTC (`2026-12-01 16:55:45Z`), or '-' for none."""
    if not isinstance(seconds, int) or isinstance(seconds, bool):
        return "-"
    try:
        return datetime.fromtimestamp(seconds, UTC).strftime("%Y-%m-%d %H:%M:%SZ")
    except (OverflowError, OSError, ValueError):
        return str(seconds)


def day(seconds: int) -> str:
    return datetime.fromtimestamp(seconds, UTC).strftime("%Y-%m-%d")


@dataclass(frozen=True, slots=True)
class Segment:
    text: str
    marked: bool


def marked_segments(snippet: str, start: str = "«", end: str = "»") -> list[Segment]:
    """A snippet cut where the engine marked matches. Stored text may hold the marks itself;
    the segments are still plain text, and each renders escaped."""
    segments: list[Segment] = []
    marked = False
    for piece in re.split(f"({re.escape(start)}|{re.escape(end)})", snippet):
        if piece == start:
            marked = True
        elif piece == end:
            marked = False
        elif piece:
            segments.append(Segment(piece, marked))
    return segments


def json_value(value: Any) -> str:
    """A JSON value as compact text, for a table cell."""
    return json.dumps(value, ensure_ascii=False, sort_keys=False, default=str)


def ref_label(ref: Mapping[str, Any]) -> str:
    """`TYPE:ID` for a plain reference, the JSON object otherwise."""
    if set(ref) == {"type", "id"}:
        return f"{ref['type']}:{ref['id']}"
    return json_value(dict(ref))


@dataclass(frozen=True, slots=True)
class FieldChange:
    name: str
    before: Any
    after: Any
    has_before: bool
    has_after: bool


def field_changes(changes: Mapping[str, Any]) -> list[FieldChange]:
    """The fields a history entry changed, each with its value before and after."""
    before = changes.get("before")
    after = changes.get("after")
    before = before if isinstance(before, Mapping) else {}
    after = after if isinstance(after, Mapping) else {}
    names = list(dict.fromkeys([*before, *after]))
    return [
        FieldChange(
            name,
            before.get(name),
            after.get(name),
            name in before,
            name in after,
        )
        for name in names
    ]


SAFE_LINK_SCHEMES = ("http://", "https://")


def followable(uri: str) -> bool:
    """Whether a stored URI is shown as a link: web addresses only. `file://` and every other
    scheme (`javascript:` among them) are shown as text, never followed."""
    return uri.lower().startswith(SAFE_LINK_SCHEMES) and not _INVISIBLE.search(uri)
