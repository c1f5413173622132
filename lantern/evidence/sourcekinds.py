"""Source kinds: detecting what a piece of evidence is, and reading chat transcripts.

The kind decides how a source is chunked, so detection prefers cheap, predictable
signals (the file name) and only looks at content where the name cannot tell
(a ``.json`` file may be a chat export or a config file).

Transcript format
-----------------
A transcript is recognised by its structure (docs/evidence.md, "Transcript format"):

* JSON Lines: one turn per line, each line a JSON object with a ``role`` string and a
  ``content``, and optionally ``ts``, the time of the turn, given either as a number of unix
  seconds or as an ISO-8601 string (a timestamp without a zone is taken as UTC). Blank lines
  are allowed and other keys are ignored.
* ``{"messages": [...]}``: one object whose ``messages`` array holds such turns.
* A bare array of such turns.
* A ChatGPT export (``conversations.json``): an array of conversations (or one), each with a
  ``mapping`` of nodes; a node's ``message`` (``author.role``, ``content``, ``create_time``)
  is a turn, a node without one is not.

``content`` is a string, or a list of typed blocks (``{"type": "text", "text": ...}``, as the
chat APIs write messages); its words are `lantern.evidence.searchtext.content_text`. A document
with no turns, or with any line or element that is not a turn of its shape, is not a
transcript. An unreadable time does not disqualify a turn; its time is just unknown.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from datetime import UTC, datetime

from lantern.evidence.searchtext import content_text

KNOWN_SOURCE_KINDS: tuple[str, ...] = (
    "transcript",
    "markdown",
    "source_file",
    "tool_output",
    "log",
    "document",
)

_MARKDOWN_EXTENSIONS = frozenset({".md", ".markdown", ".mdx"})
_TRANSCRIPT_EXTENSIONS = frozenset({".jsonl", ".ndjson", ".json"})
_LINE_RECORD_EXTENSIONS = frozenset({".jsonl", ".ndjson"})

# Config formats count as source files: they are edited like code, and chunking
# them along top-level keys works as it does for definitions.
_LANGUAGE_BY_EXTENSION: dict[str, str] = {
    ".py": "python",
    ".pyi": "python",
    ".js": "javascript",
    ".mjs": "javascript",
    ".cjs": "javascript",
    ".jsx": "javascript",
    ".ts": "typescript",
    ".tsx": "typescript",
    ".go": "go",
    ".rs": "rust",
    ".java": "java",
    ".c": "c",
    ".h": "c",
    ".cpp": "cpp",
    ".cc": "cpp",
    ".cxx": "cpp",
    ".hpp": "cpp",
    ".hh": "cpp",
    ".rb": "ruby",
    ".php": "php",
    ".cs": "csharp",
    ".swift": "swift",
    ".kt": "kotlin",
    ".kts": "kotlin",
    ".scala": "scala",
    ".sh": "shell",
    ".bash": "shell",
    ".zsh": "shell",
    ".sql": "sql",
    ".lua": "lua",
    ".r": "r",
    ".m": "objective-c",
    ".hs": "haskell",
    ".ml": "ocaml",
    ".ex": "elixir",
    ".exs": "elixir",
    ".erl": "erlang",
    ".clj": "clojure",
    ".dart": "dart",
    ".pl": "perl",
    ".toml": "toml",
    ".yaml": "yaml",
    ".yml": "yaml",
    ".json": "json",
}

# Build files are code, but carry no extension to recognise them by.
_LANGUAGE_BY_NAME: dict[str, str] = {
    "makefile": "make",
    "dockerfile": "dockerfile",
    "cmakelists.txt": "cmake",
    "gemfile": "ruby",
    "rakefile": "ruby",
    ".bashrc": "shell",
    ".zshrc": "shell",
    ".profile": "shell",
}

# Rotated logs keep their kind: app.log, app.log.1, app.log.2.3.
_LOG_NAME = re.compile(r"\.log(?:\.\d+)*\Z")
_PATH_SEPARATORS = re.compile(r"[\\/]")
_JSON_WHITESPACE = re.compile(r"[ \t\n\r]*")
_BYTE_ORDER_MARK = "\ufeff"


@dataclass(frozen=True, slots=True)
class Turn:
    """One turn of a transcript, with where it sits in the original text.

    The offsets let chunks point back at the exact bytes a turn came from,
    which is what makes a chunk citable as evidence.
    """

    role: str
    content: str
    ts: int | None
    start: int
    end: int
    conversation: int = 0
    """Which conversation of a document holding several (a ChatGPT export) the turn is in:
    chunks do not join turns of different conversations."""


def _file_name(path: str) -> str:
    """Take the last path component by hand so Windows paths work on any OS."""
    return _PATH_SEPARATORS.split(path)[-1].lower()


def _extension(name: str) -> str:
    dot = name.rfind(".")
    return name[dot:] if dot > 0 else ""


def language_for(path: str | None) -> str | None:
    """Name the programming or config language of a file, or None if it is not code."""
    if not path:
        return None
    name = _file_name(path)
    return _LANGUAGE_BY_NAME.get(name) or _LANGUAGE_BY_EXTENSION.get(_extension(name))


def detect_kind(path: str | None, text: str) -> str:
    """Pick the source kind, trusting the file name first and content only where needed.

    Without a path the text is sniffed for a transcript, since pasted chat exports
    are the one kind content reveals reliably. JSON Lines files that are not
    transcripts are treated as logs, because their records are line-oriented.
    """
    if not path:
        return "transcript" if parse_transcript(text) is not None else "document"
    name = _file_name(path)
    extension = _extension(name)
    if _LOG_NAME.search(name):
        return "log"
    if extension in _MARKDOWN_EXTENSIONS:
        return "markdown"
    if extension in _TRANSCRIPT_EXTENSIONS and parse_transcript(text) is not None:
        return "transcript"
    if extension in _LINE_RECORD_EXTENSIONS:
        return "log"
    if language_for(path) is not None:
        return "source_file"
    return "document"


def parse_transcript(text: str) -> list[Turn] | None:
    """Read a transcript in any accepted shape, or return None if it is not one.

    None rather than an exception, because callers use this to decide the kind and
    fall back to plain text.
    """
    position = _skip_json_whitespace(text, 1 if text.startswith(_BYTE_ORDER_MARK) else 0)
    opening = text[position : position + 1]
    turns: list[Turn] | None = None
    if opening in ("{", "["):
        try:
            turns = _walk_document(text, position)
        except (ValueError, RecursionError):
            turns = None
    if turns is None and opening != "[":
        turns = _parse_json_lines(text)
    return turns or None


def _parse_json_lines(text: str) -> list[Turn] | None:
    turns: list[Turn] = []
    position = 1 if text.startswith(_BYTE_ORDER_MARK) else 0
    while position <= len(text):
        newline = text.find("\n", position)
        line_end = len(text) if newline == -1 else newline
        end = line_end - 1 if text.endswith("\r", position, line_end) else line_end
        if text[position:end].strip():
            turn = _turn_from_line(text, position, end)
            if turn is None:
                return None
            turns.append(turn)
        position = line_end + 1
    return turns


def _turn_from_line(text: str, start: int, end: int) -> Turn | None:
    try:
        value = json.loads(text[start:end])
    except (ValueError, RecursionError):
        return None
    return _turn_from_value(value, start, end)


def _skip_json_whitespace(text: str, position: int) -> int:
    match = _JSON_WHITESPACE.match(text, position)
    return position if match is None else match.end()


_Element = tuple[object, int, int]
"""A JSON value with where it starts and ends in the text."""


def _walk_document(text: str, position: int) -> list[Turn] | None:
    """Read a whole-document transcript (an object or an array) while keeping each turn's
    offsets, or None when the document is not one.

    ``json.loads`` would lose positions, so containers are walked with ``raw_decode``,
    which reports where each value ends; only the containers that lead to turns are
    walked, every other value is decoded whole at C speed.
    """
    decoder = json.JSONDecoder()
    if text[position] == "[":
        elements, end = _array_elements(text, position, decoder)
        turns = _turns_of_array(text, elements, decoder)
    else:
        turns, end = _document_object(text, position, decoder)
    if turns is None or _skip_json_whitespace(text, end) != len(text):
        return None
    return turns


def _document_object(
    text: str, position: int, decoder: json.JSONDecoder
) -> tuple[list[Turn] | None, int]:
    """A ``{"messages": [...]}`` document or one ChatGPT conversation (``mapping``)."""
    found: dict[str, list[_Element]] = {}
    members, end = _object_members(text, position, decoder, want=("messages", "mapping"))
    for key, elements in members:
        found[key] = elements
    if "messages" in found:
        messages = found["messages"]
        return _turns_of_elements(messages) if messages else None, end
    if "mapping" in found:
        return _turns_of_mapping(found["mapping"]), end
    return None, end


def _object_members(
    text: str, position: int, decoder: json.JSONDecoder, want: tuple[str, ...]
) -> tuple[list[tuple[str, list[_Element]]], int]:
    """Walk the object at ``position``: for each key in ``want``, the elements of its value
    (an array's elements, or an object's members' values); and where the object ends.

    A wanted value of another type gives no elements. Raises ValueError on malformed JSON.
    """
    if text[position : position + 1] != "{":
        raise ValueError("not an object")
    members: list[tuple[str, list[_Element]]] = []
    position = _skip_json_whitespace(text, position + 1)
    if text[position : position + 1] == "}":
        return members, position + 1
    while True:
        if text[position : position + 1] != '"':
            raise ValueError("malformed object")
        key, position = decoder.raw_decode(text, position)
        position = _skip_json_whitespace(text, position)
        if text[position : position + 1] != ":":
            raise ValueError("malformed object")
        position = _skip_json_whitespace(text, position + 1)
        opening = text[position : position + 1]
        if key in want and opening == "[":
            elements, position = _array_elements(text, position, decoder)
            members.append((key, elements))
        elif key in want and opening == "{":
            values, position = _object_members(text, position, decoder, want=("*",))
            members.append((key, [element for _key, found in values for element in found]))
        elif "*" in want:
            start = position
            value, position = decoder.raw_decode(text, position)
            members.append((key, [(value, start, position)]))
        else:
            value, position = decoder.raw_decode(text, position)
            if key in want:
                members.append((key, []))
        position = _skip_json_whitespace(text, position)
        separator = text[position : position + 1]
        if separator == "}":
            return members, position + 1
        if separator != ",":
            raise ValueError("malformed object")
        position = _skip_json_whitespace(text, position + 1)


def _array_elements(
    text: str, position: int, decoder: json.JSONDecoder
) -> tuple[list[_Element], int]:
    """Decode an array element by element, recording each element's span."""
    elements: list[_Element] = []
    position = _skip_json_whitespace(text, position + 1)
    if text[position : position + 1] == "]":
        return elements, position + 1
    while True:
        start = position
        value, position = decoder.raw_decode(text, position)
        elements.append((value, start, position))
        position = _skip_json_whitespace(text, position)
        separator = text[position : position + 1]
        if separator == "]":
            return elements, position + 1
        if separator != ",":
            raise ValueError("malformed array")
        position = _skip_json_whitespace(text, position + 1)


def _turns_of_array(
    text: str, elements: list[_Element], decoder: json.JSONDecoder
) -> list[Turn] | None:
    """A bare array of turns, or of ChatGPT conversations (an export's conversations.json)."""
    if not elements:
        return None
    if all(_is_conversation(value) for value, _start, _end in elements):
        turns: list[Turn] = []
        for index, (_value, start, _end) in enumerate(elements):
            members, _end = _object_members(text, start, decoder, want=("mapping",))
            [(_key, nodes)] = members
            found = _turns_of_mapping(nodes, conversation=index)
            if found is None:
                return None
            turns += found
        return turns
    return _turns_of_elements(elements)


def _is_conversation(value: object) -> bool:
    return isinstance(value, dict) and isinstance(value.get("mapping"), dict)


def _turns_of_elements(elements: list[_Element]) -> list[Turn] | None:
    turns: list[Turn] = []
    for value, start, end in elements:
        turn = _turn_from_value(value, start, end)
        if turn is None:
            return None
        turns.append(turn)
    return turns


def _turn_from_value(value: object, start: int, end: int) -> Turn | None:
    """A chat turn: ``role`` and ``content``, a string or a list of typed blocks."""
    if not isinstance(value, dict):
        return None
    role = value.get("role")
    content = value.get("content")
    if not isinstance(role, str) or not _is_content(content):
        return None
    return Turn(role, content_text(content), _normalise_ts(value.get("ts")), start, end)


def _is_content(content: object) -> bool:
    if isinstance(content, str):
        return True
    return isinstance(content, list) and all(
        isinstance(block, dict) and isinstance(block.get("type"), str) for block in content
    )


def _turns_of_mapping(nodes: list[_Element], conversation: int = 0) -> list[Turn] | None:
    """The messages of a ChatGPT conversation's ``mapping``, in the order they are written.

    Every node counts, branches (edited or regenerated messages) included: each is what
    someone wrote. A node without a message (the root) is no turn.
    """
    turns: list[Turn] = []
    for node, start, end in nodes:
        if not isinstance(node, dict) or "message" not in node:
            return None
        message = node["message"]
        if message is None:
            continue
        if not isinstance(message, dict):
            return None
        author = message.get("author")
        content = message.get("content")
        role = author.get("role") if isinstance(author, dict) else None
        if not isinstance(role, str) or not isinstance(content, dict):
            return None
        ts = _normalise_ts(message.get("create_time"))
        turns.append(Turn(role, content_text(content), ts, start, end, conversation))
    return turns


def _normalise_ts(value: object) -> int | None:
    """Turn a number or ISO-8601 string into whole unix seconds (UTC), or None."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float):
        return math.floor(value) if math.isfinite(value) else None
    if isinstance(value, str):
        return _iso_to_unix(value.strip())
    return None


def _iso_to_unix(value: str) -> int | None:
    try:
        moment = datetime.fromisoformat(value)
        if moment.tzinfo is None:
            moment = moment.replace(tzinfo=UTC)
        return math.floor(moment.timestamp())
    except (ValueError, OverflowError):
        return None
