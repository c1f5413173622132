"""Source kinds: detecting what a piece of evidence is, and reading chat transcripts.

The kind decides how a source is chunked, so detection prefers cheap, predictable
signals (the file name) and only looks at content where the name cannot tell
(a ``.json`` file may be a chat export or a config file).

Transcript format
-----------------
A transcript is JSON Lines: one turn per line, each line a JSON object with a
``role`` string and a ``content`` string, and optionally ``ts``, the time of the
turn, given either as a number of unix seconds or as an ISO-8601 string (a
timestamp without a zone is taken as UTC). Blank lines are allowed and other keys
are ignored. The common chat-export shape is accepted too: a single JSON object
whose ``messages`` key holds an array of such objects, e.g.
``{"messages": [{"role": "user", "content": "hi"}, ...]}``. A document with no
turns, or with any line or message that lacks a string ``role`` and ``content``,
is not a transcript. An unreadable ``ts`` does not disqualify a turn; its time is
just unknown.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from datetime import UTC, datetime

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
    """Read a transcript in either accepted shape, or return None if it is not one.

    None rather than an exception, because callers use this to decide the kind and
    fall back to plain text.
    """
    turns = _parse_messages_document(text)
    if turns is None:
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
    except ValueError:
        return None
    return _turn_from_value(value, start, end)


def _parse_messages_document(text: str) -> list[Turn] | None:
    """Read ``{"messages": [...]}`` while keeping each message's offsets.

    ``json.loads`` would lose positions, so the top-level object is walked with
    ``raw_decode``, which reports where each value ends.
    """
    try:
        return _walk_messages_document(text)
    except (ValueError, RecursionError):
        return None


def _skip_json_whitespace(text: str, position: int) -> int:
    match = _JSON_WHITESPACE.match(text, position)
    return position if match is None else match.end()


def _walk_messages_document(text: str) -> list[Turn] | None:
    decoder = json.JSONDecoder()
    position = _skip_json_whitespace(text, 1 if text.startswith(_BYTE_ORDER_MARK) else 0)
    if text[position : position + 1] != "{":
        return None
    position = _skip_json_whitespace(text, position + 1)
    if text[position : position + 1] == "}":
        return None
    turns: list[Turn] | None = None
    while True:
        if text[position : position + 1] != '"':
            return None
        key, position = decoder.raw_decode(text, position)
        position = _skip_json_whitespace(text, position)
        if text[position : position + 1] != ":":
            return None
        position = _skip_json_whitespace(text, position + 1)
        if key == "messages":
            turns, position = _walk_messages_array(text, position, decoder)
        else:
            _, position = decoder.raw_decode(text, position)
        position = _skip_json_whitespace(text, position)
        separator = text[position : position + 1]
        if separator == "}":
            break
        if separator != ",":
            return None
        position = _skip_json_whitespace(text, position + 1)
    if _skip_json_whitespace(text, position + 1) != len(text):
        return None
    return turns


def _walk_messages_array(
    text: str, position: int, decoder: json.JSONDecoder
) -> tuple[list[Turn] | None, int]:
    """Decode the messages array element by element, recording each element's span.

    The turns are None when the value is not an array of turns; where the value
    ends is returned regardless, so the caller can finish validating the document.
    """
    if text[position : position + 1] != "[":
        _, end = decoder.raw_decode(text, position)
        return None, end
    elements: list[tuple[object, int, int]] = []
    position = _skip_json_whitespace(text, position + 1)
    if text[position : position + 1] == "]":
        return [], position + 1
    while True:
        start = position
        value, position = decoder.raw_decode(text, position)
        elements.append((value, start, position))
        position = _skip_json_whitespace(text, position)
        separator = text[position : position + 1]
        if separator == "]":
            return _turns_from_elements(elements), position + 1
        if separator != ",":
            raise ValueError("malformed messages array")
        position = _skip_json_whitespace(text, position + 1)


def _turns_from_elements(elements: list[tuple[object, int, int]]) -> list[Turn] | None:
    turns: list[Turn] = []
    for value, start, end in elements:
        turn = _turn_from_value(value, start, end)
        if turn is None:
            return None
        turns.append(turn)
    return turns


def _turn_from_value(value: object, start: int, end: int) -> Turn | None:
    if not isinstance(value, dict):
        return None
    role = value.get("role")
    content = value.get("content")
    if not isinstance(role, str) or not isinstance(content, str):
        return None
    return Turn(role=role, content=content, ts=_normalise_ts(value.get("ts")), start=start, end=end)


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
