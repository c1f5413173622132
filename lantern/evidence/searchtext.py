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
Lines, elements of an array, nodes of a ChatGPT export's mapping), except that a turn longer
than the chunk size is cut at whitespace inside the strings of its words (`text_spans`), so a
chunk may start or end inside such a string; chunks stored by older versions were cut at any
whitespace of the turn, and read as well as they can be. The decoder reads the
chunk as a stream of JSON string literals and the structure between them, trying first that it
starts outside a string, then inside one. Of each turn it keeps the `role` (as a word followed by
a colon) and the words of its `content` (see the rules above `_render_element`), with escapes
decoded; keys and other values (`ts`, ids, metadata) are left out; a string value the chunk
starts with (in its middle, or whole with its key in the chunk before) counts as content, which
is what a turn cut in two continues with. Text
that is not JSON of that shape under either reading (a transcript that an older tool stored as
plain text, say) is searched as it is.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

__all__ = [
    "KINDS_WITH_SEARCH_TEXT",
    "content_text",
    "search_text",
    "text_spans",
    "transcript_search_text",
    "unescape",
]

KINDS_WITH_SEARCH_TEXT: tuple[str, ...] = ("transcript",)
"""Source kinds whose chunks may be searched through a text other than their own."""

# A JSON string literal from its opening quote: the body, then the closing quote or the end of
# the chunk (a turn cut in two). The body is written as an unrolled loop, which the regex
# engine runs without backtracking.
_LITERAL = re.compile(r'"([^"\\]*(?:\\.[^"\\]*)*)("|\Z)', re.DOTALL)
# What may stand between string literals in JSON: whitespace, punctuation, numbers, literals.
# Possessive quantifiers: a long run of whitespace that fails must not be retried piecewise.
_STRUCTURE = re.compile(r"(?:[ \t\n\r{}\[\],:]|-?[0-9][0-9.eE+\-]*+|true|false|null)*+\Z", re.ASCII)
_COLON = re.compile(r"[ \t\n\r]*:")
_BODY = re.compile(r'([^"\\]*(?:\\.[^"\\]*)*)("|\Z)', re.DOTALL)
_TOKEN = re.compile(r"[{}\[\]]|[^ \t\n\r{}\[\],:]+")
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
    of a turn, its time, as chunks written before turns were cut only inside their text could
    end) is not.
    """
    whole = _whole_turns(text)
    if whole is not None:
        return whole
    outside = _decode(text, starts_inside=False)
    if outside is not None and (outside or _BRACKETS.search(text)):
        return outside
    inside = _decode(text, starts_inside=True)
    return inside if inside is not None else outside


def content_text(value: object) -> str:
    """The words of a turn's `content`: a string as it is, text blocks' text, a ChatGPT
    message's parts, and `[type]` for a block that holds no text (an image, a tool call)."""
    if isinstance(value, str):
        return value
    parts: list[str] = []
    if isinstance(value, list):
        _render_list(value, parts)
    elif isinstance(value, dict):
        _render_content(value, parts)
    return _storable("".join(parts).strip())


def text_spans(text: str, start: int, end: int) -> list[tuple[int, int]]:
    """Where the strings that hold a turn's words lie in `text[start:end]` (one whole turn
    object): the `(start, end)` of each such string's body, escapes as written.

    A turn longer than a chunk is cut only inside these, so that every part of it is read as
    words of the turn, never as bare JSON.
    """
    found = _scan(text, start, end, starts_inside=False)
    return [] if found is None else [(a, b) for what, _v, a, b in found if what == "text"]


def unescape(body: str) -> str:
    """A JSON string body (or a whole-word slice of one) decoded, as the index reads it."""
    return _unescape(body)


def _whole_turns(text: str) -> str | None:
    """The text of a chunk made of whole turn objects (messages separated by commas, JSON
    Lines, or nodes of a ChatGPT export's `mapping`), rendered as `_decode` renders them;
    None for any other chunk."""
    if not text.startswith("{"):
        return None
    if _LINE_BREAK_BETWEEN_OBJECTS.search(text):  # JSON Lines: one turn a line, no commas
        lines = ",".join(line for line in text.split("\n") if line.strip())
    else:
        lines = text
    try:
        turns = json.loads("[" + lines + "]")
    except (ValueError, RecursionError):
        try:  # nodes of a mapping: `{...}, "node-id": {...}`
            turns = list(json.loads('{"":' + text + "}").values())
        except (ValueError, RecursionError):
            return None
    if not all(isinstance(turn, dict) for turn in turns):
        return None
    parts: list[str] = []
    for turn in turns:
        _render_element(turn, parts, block=False)
    return _storable("".join(parts).strip())


# --- what of a turn is searched ------------------------------------------------------------
# Both readers (`_whole_turns` over parsed values, `_scan` over a slice of JSON text) follow the
# same rules, by the kind of object or array a value sits in:
#   element (a turn, a ChatGPT message or node): `role` is the role, `content` (a string) and
#     `text` are words, a `content` array holds blocks, a `content` object is a ChatGPT
#     message's content, `author` holds the role, `message` is an element; other keys are not
#     searched, nor anything under them;
#   block (an object in a content array or in a ChatGPT `parts` array): as an element, and a
#     block that gave no words is searched as `[type]` (its `type` or `content_type`);
#   list (a `content` or `parts` array): strings are words, objects are blocks;
#   ChatGPT content: `parts` is a list, `text` words.

_ELEMENT, _BLOCK, _LIST, _CONTENT, _AUTHOR, _OTHER, _START = range(7)
_TYPE_KEYS = frozenset({"type", "content_type"})


def _add_role(parts: list[str], role: str) -> None:
    parts.append(("\n" if parts else "") + role + ": ")


def _add_text(parts: list[str], value: str) -> None:
    parts.append(value if not parts or parts[-1].endswith(" ") else " " + value)


def _render_element(value: dict[str, object], parts: list[str], block: bool) -> None:
    mark = len(parts)
    type_name: str | None = None
    for key, item in value.items():
        if isinstance(item, str):
            if key == "role":
                _add_role(parts, item)
            elif key in ("content", "text"):
                _add_text(parts, item)
            elif key in _TYPE_KEYS:
                type_name = item
        elif isinstance(item, list):
            if key == "content":
                _render_list(item, parts)
        elif isinstance(item, dict):
            if key == "content":
                _render_content(item, parts)
            elif key == "author":
                for author_key, role in item.items():
                    if author_key == "role" and isinstance(role, str):
                        _add_role(parts, role)
            elif key == "message":
                _render_element(item, parts, block=False)
    if block and type_name is not None and len(parts) == mark:
        _add_text(parts, f"[{type_name}]")


def _render_list(value: list[object], parts: list[str]) -> None:
    for item in value:
        if isinstance(item, str):
            _add_text(parts, item)
        elif isinstance(item, dict):
            _render_element(item, parts, block=True)


def _render_content(value: dict[str, object], parts: list[str]) -> None:
    for key, item in value.items():
        if key == "parts" and isinstance(item, list):
            _render_list(item, parts)
        elif key == "text" and isinstance(item, str):
            _add_text(parts, item)


def _child(frame: int, key: str | None, bracket: str) -> int:
    """The kind of the container opened by `bracket` in a container of kind `frame`, under
    `key` (None: an array's element); `_START` stands for a container the chunk did not open."""
    if frame in (_LIST, _START):
        return _BLOCK if key is None and bracket == "{" else _OTHER
    if frame in (_ELEMENT, _BLOCK):
        if key is None:  # an element of an array the chunk did not open: a turn or a block
            return _BLOCK if bracket == "{" else _OTHER
        if key == "content":
            return _LIST if bracket == "[" else _CONTENT
        if key == "author" and bracket == "{":
            return _AUTHOR
        if key == "message" and bracket == "{":
            return _ELEMENT
        return _OTHER
    if frame == _CONTENT and key == "parts" and bracket == "[":
        return _LIST
    return _OTHER


def _string_is(frame: int, key: str | None) -> str | None:
    """What a string value is in a container of kind `frame`: "role", "text", "type" or None."""
    if frame in (_ELEMENT, _BLOCK):
        if key == "role":
            return "role"
        if key in ("content", "text"):
            return "text"
        if key in _TYPE_KEYS:
            return "type"
        return None
    if frame in (_LIST, _START):
        return "text" if key is None else None
    if frame == _CONTENT:
        return "text" if key == "text" else None
    if frame == _AUTHOR:
        return "role" if key == "role" else None
    return None


def _decode(text: str, starts_inside: bool) -> str | None:
    """The turns' words, reading `text` as starting outside or inside a string; None when the
    text is not JSON under that reading."""
    found = _scan(text, 0, len(text), starts_inside)
    if found is None:
        return None
    parts: list[str] = []
    for what, value, _start, _end in found:
        if what == "role":
            _add_role(parts, value)
        else:
            _add_text(parts, value)
    return _storable("".join(parts).strip())


_Found = tuple[str, str, int, int]
"""What a string is ("role" or "text"), its decoded value, and where its body lies."""


@dataclass(slots=True)
class _Frame:
    """An object or array being read: its kind, the key whose value comes next, how many
    strings had been found when it opened, and its `type` (for a block's placeholder)."""

    kind: int
    key: str | None = None
    mark: int = 0
    type: str | None = None


def _scan(text: str, start: int, end: int, starts_inside: bool) -> list[_Found] | None:
    """The roles and words of `text[start:end]` in order, each with where its string's body
    lies; None when the slice is not JSON.

    The slice may begin or end inside a turn: containers it closes without having opened them
    are read as elements (a turn, or a block of one), and a string it starts with, or starts
    inside, holds words (the key before it is most likely `content` or `text`).
    """
    found: list[_Found] = []
    stack: list[_Frame] = []
    base = _Frame(_ELEMENT)  # the containers the slice did not open
    position = start
    first = True
    if starts_inside:
        opening = _BODY.match(text, start, end)
        if opening is None or _CONTROL.search(opening.group(1)):
            return None
        found.append(("text", _unescape(opening.group(1)), start, opening.end(1)))
        stack.append(_Frame(_START))
        position = opening.end()
        first = False
    while True:
        literal = _LITERAL.search(text, position, end)
        structure_end = end if literal is None else literal.start()
        if not _STRUCTURE.match(text, position, structure_end):
            return None
        if _structure(text, position, structure_end, stack, base, found):
            first = False
        if literal is None:
            break
        body = literal.group(1)
        if _CONTROL.search(body):
            return None  # raw control characters: not a JSON string
        frame = stack[-1] if stack else base
        colon = _COLON.match(text, literal.end(), end)
        if colon is not None:
            frame.key = _unescape(body)
            position = colon.end()
            first = False
            continue
        position = literal.end()
        what = "text" if first else _string_is(frame.kind, frame.key)
        frame.key = None
        first = False
        if what == "type":
            frame.type = _unescape(body)
        elif what is not None:
            found.append((what, _unescape(body), literal.start(1), literal.end(1)))
    return found


def _structure(
    text: str, start: int, end: int, stack: list[_Frame], base: _Frame, found: list[_Found]
) -> bool:
    """Follow the brackets and scalars of `text[start:end]` (the JSON between two strings);
    whether there was any. A block closed without words gives its placeholder."""
    any_token = False
    for match in _TOKEN.finditer(text, start, end):
        any_token = True
        token = match.group()
        frame = stack[-1] if stack else base
        if token in ("{", "["):
            stack.append(_Frame(_child(frame.kind, frame.key, token), mark=len(found)))
            frame.key = None
        elif token in ("}", "]"):
            if not stack:
                base.key = None
                continue
            closed = stack.pop()
            if closed.kind == _BLOCK and closed.type is not None and len(found) == closed.mark:
                found.append(("text", f"[{closed.type}]", match.start(), match.start()))
        else:  # a number, true, false or null: the pending key's value
            frame.key = None
    return any_token


def _storable(decoded: str) -> str:
    if _SURROGATE.search(decoded):
        decoded = decoded.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")
    return decoded


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
