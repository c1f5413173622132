"""What a chunk says, as the search index reads it: its searchable text, per source kind.

A chunk's `text` is a verbatim slice of its source, so that it can be cited. For most kinds
that slice is also what should be searched. A transcript's slice is JSON source, though:
`{"role": "user", "content": "I moved to Z\\u00fcrich.\\nThen..."}`. Indexed as it is, every
chunk matches `role` and `content`, `\\nThen` reads as the word `nthen`, and `Zürich` written
with ASCII escapes is only found by `u00fcrich`. So a transcript chunk is searched through its
decoded turns instead: `user: I moved to Zürich.` and the next line `Then...`. The chunk's text
and offsets stay the exact slice; only the index and the snippets see the decoded text.

`search_text(kind, text)` is a pure function of the two, so the store can always recompute it:
the repository writes it beside each new chunk, `db rebuild-index` and the schema revision that
introduced it (0007) derive it again from the stored chunks, and an export leaves it out.

Decoding a transcript chunk is best-effort and never fails. A chunk holds whole turns (JSON
Lines, or elements of a `{"messages": [...]}` array), except that a turn longer than the chunk
size is cut at whitespace, so a chunk may start or end inside a string. The decoder reads the
chunk as a stream of JSON string literals and the structure between them, trying first that it
starts outside a string, then inside one. Of each turn it keeps the `role` (as a word followed by
a colon) and the `content`, with escapes decoded; keys and other values (`ts`, ids, metadata)
are left out; a string value the chunk starts with (in its middle, or whole with its key in the
chunk before) counts as content, which is what a turn cut in two mostly continues with. Text
that is not JSON of that shape under either reading (a transcript that an older tool stored as
plain text, say) is searched as it is.
"""

from __future__ import annotations

import json
import re

__all__ = ["KINDS_WITH_SEARCH_TEXT", "search_text", "transcript_search_text"]

KINDS_WITH_SEARCH_TEXT: tuple[str, ...] = ("transcript",)
"""Source kinds whose chunks may be searched through a text other than their own."""

_TURN_KEYS = frozenset({"role", "content"})

# A JSON string literal from its opening quote: the body, then the closing quote or the end of
# the chunk (a turn cut in two). The body is written as an unrolled loop, which the regex
# engine runs without backtracking.
_LITERAL = re.compile(r'"([^"\\]*(?:\\.[^"\\]*)*)("|\Z)', re.DOTALL)
# What may stand between string literals in JSON: whitespace, punctuation, numbers, literals.
# Possessive quantifiers: a long run of whitespace that fails must not be retried piecewise.
_STRUCTURE = re.compile(r"(?:[ \t\n\r{}\[\],:]|-?[0-9][0-9.eE+\-]*+|true|false|null)*+\Z", re.ASCII)
_COLON = re.compile(r"[ \t\n\r]*:")
_BRACKETS = re.compile(r"[{}\[\]]")
_LINE_BREAK_BETWEEN_OBJECTS = re.compile(r"\}[ \t\r]*\n[ \t\r\n]*\{")
_CONTROL = re.compile(r"[\x00-\x1f]")
_ESCAPE = re.compile(r"\\(u[0-9a-fA-F]{4}|.)", re.DOTALL)
_SURROGATE = re.compile("[\ud800-\udfff]")
_SIMPLE_ESCAPES = {
    '"': '"',
    "\\": "\\",
    "/": "/",
    "b": "\b",
    "f": "\f",
    "n": "\n",
    "r": "\r",
    "t": "\t",
}


def search_text(kind: str | None, text: str) -> str | None:
    """The text the index should hold for a chunk of `kind`, or None when it is `text` itself."""
    if kind != "transcript":
        return None
    decoded = transcript_search_text(text)
    return None if decoded is None or decoded == text else decoded


def transcript_search_text(text: str) -> str | None:
    """The decoded turns of a transcript chunk, or None when it does not read as JSON turns.

    A chunk of whole turns (most of them) is parsed by `json` at C speed; the scan below gives
    the same text for it, and reads the chunks a turn was cut across. Read as starting outside
    a string, text that gives no words and holds no bracket (`42, 7`) is JSON too; it is then
    taken as the middle of a turn's content if that reading holds, while `1708417860}` (the end
    of a turn, its time) is not.
    """
    whole = _whole_turns(text)
    if whole is not None:
        return whole
    outside = _decode(text, starts_inside=False)
    if outside is not None and (outside or _BRACKETS.search(text)):
        return outside
    inside = _decode(text, starts_inside=True)
    return inside if inside is not None else outside


def _whole_turns(text: str) -> str | None:
    """The text of a chunk made of whole turn objects (messages separated by commas, or JSON
    Lines), rendered as `_decode` renders them; None for any other chunk."""
    if not text.startswith("{"):
        return None
    if _LINE_BREAK_BETWEEN_OBJECTS.search(text):  # JSON Lines: one turn a line, no commas
        text = ",".join(line for line in text.split("\n") if line.strip())
    try:
        turns = json.loads("[" + text + "]")
    except (ValueError, RecursionError):
        return None
    if not all(isinstance(turn, dict) for turn in turns):
        return None
    parts: list[str] = []
    for turn in turns:
        for key, value in turn.items():
            if key == "role" and isinstance(value, str):
                parts.append(("\n" if parts else "") + value + ": ")
            elif key == "content":
                for found in _strings(value):
                    parts.append(found if not parts or parts[-1].endswith(" ") else " " + found)
    decoded = "".join(parts).strip()
    if _SURROGATE.search(decoded):
        decoded = decoded.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")
    return decoded


def _strings(value: object) -> list[str]:
    """The strings in a JSON value, values only (not keys), in order."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, list):
        return [found for item in value for found in _strings(item)]
    if isinstance(value, dict):
        return [found for item in value.values() for found in _strings(item)]
    return []


def _decode(text: str, starts_inside: bool) -> str | None:
    """The turns' words, reading `text` as starting outside or inside a string; None when the
    text is not JSON under that reading.

    Turn keys sit at the shallowest depth the chunk reaches (a chunk may start inside a turn);
    values nested under `content` (a list of parts) count as content too.
    """
    source = '"' + text if starts_inside else text
    parts: list[str] = []
    depth = 0
    turn_depth: int | None = None
    key: str | None = None
    turn_key: str | None = None
    position = 0
    continued = True  # a first value's key is in the chunk before: most likely `content`
    while True:
        literal = _LITERAL.search(source, position)
        structure = source[position : len(source) if literal is None else literal.start()]
        if not _STRUCTURE.match(structure):
            return None
        depth += _nesting(structure)
        if literal is None:
            break
        body = literal.group(1)
        if _CONTROL.search(body):
            return None  # raw control characters: not a JSON string
        position = literal.end()
        if turn_depth is None or depth < turn_depth:
            turn_depth = depth
        if _COLON.match(source, position):
            key = _unescape(body)
            if depth == turn_depth:
                turn_key = key
        elif (
            continued
            or (depth == turn_depth and key in _TURN_KEYS)
            or (depth > turn_depth and turn_key == "content")
        ):
            value = _unescape(body)
            if depth == turn_depth and key == "role" and not continued:
                parts.append(("\n" if parts else "") + value + ": ")
            else:
                parts.append(value if not parts or parts[-1].endswith(" ") else " " + value)
        continued = False
    return "".join(parts).strip()


def _nesting(structure: str) -> int:
    opened = structure.count("{") + structure.count("[")
    return opened - structure.count("}") - structure.count("]")


def _unescape(body: str) -> str:
    """A JSON string body decoded; an escape JSON does not know is kept as written, and an
    unpaired surrogate becomes U+FFFD, so any body gives storable text."""
    if "\\" not in body:
        return body
    try:
        decoded = json.loads('"' + body + '"')
    except ValueError:
        decoded = _ESCAPE.sub(_lenient_escape, body)
    if _SURROGATE.search(decoded):
        decoded = decoded.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")
    assert isinstance(decoded, str)
    return decoded


def _lenient_escape(match: re.Match[str]) -> str:
    escape = match.group(1)
    if escape[0] == "u" and len(escape) == 5:
        return chr(int(escape[1:], 16))
    return _SIMPLE_ESCAPES.get(escape, match.group(0))
