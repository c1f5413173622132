"""What the importers share: reading the file, a line's JSON object, the report."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import IO, Any

from lantern.errors import InvalidInput
from lantern.validation import JSONObject

MAX_FILE_BYTES = 256 * 1024 * 1024


def read_text(source: IO[bytes], what: str) -> str:
    """The whole file as UTF-8 text (these formats are read whole, then written at once)."""
    data = source.read(MAX_FILE_BYTES + 1)
    if len(data) > MAX_FILE_BYTES:
        raise InvalidInput(f"the {what} file is larger than {MAX_FILE_BYTES} bytes")
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise InvalidInput(f"line {line}: not UTF-8 text") from exc


def json_object(line: str) -> dict[str, Any]:
    """One line of a JSON-lines file, which must hold an object."""
    try:
        value = json.loads(line)
    except json.JSONDecodeError as exc:
        raise InvalidInput(f"not a JSON object ({exc.msg})") from exc
    if not isinstance(value, dict):
        raise InvalidInput("not a JSON object")
    return value


@dataclass(frozen=True, slots=True)
class ForeignImport:
    """What an import from another memory system wrote (or, dry, would write)."""

    format: str
    dry_run: bool
    read: Mapping[str, int]
    """What the file held, by kind of item (entities, observations, relations, memories)."""
    added: int
    """Memory records written."""
    present: int
    """Memory records the store already had (the same scope, kind and content)."""
    ignored: Mapping[str, int] = field(default_factory=dict)
    """Items of the file that Lantern does not import, by kind."""

    def to_json(self) -> JSONObject:
        """`{"format", "dry_run", "read", "records": {"added", "present"}, "ignored"}`."""
        return {
            "format": self.format,
            "dry_run": self.dry_run,
            "read": dict(self.read),
            "records": {"added": self.added, "present": self.present},
            "ignored": dict(self.ignored),
        }
