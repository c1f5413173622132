"""What the importers share: reading the file, a line's JSON object, the report."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import IO, Any

from sqlalchemy import select

from lantern.errors import InvalidInput
from lantern.store import settings
from lantern.store.engine import Store
from lantern.store.models import memory_embeddings
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
    without_vector: int = 0
    """Memory records added (or, dry, to be added) with no vector."""

    def to_json(self) -> JSONObject:
        """The shape every import shares (docs/json.md, "The store"): `{"format", "dry_run",
        "read", "records": {"added", "present", "without_vector"}, "ignored", "added",
        "present", "skipped"}`; the last three count by line type of Lantern's export format,
        here the memory records (`memory`)."""
        return {
            "format": self.format,
            "dry_run": self.dry_run,
            "read": dict(self.read),
            "records": {
                "added": self.added,
                "present": self.present,
                "without_vector": self.without_vector,
            },
            "ignored": dict(self.ignored),
            "added": {"memory": self.added},
            "present": {"memory": self.present},
            "skipped": {"memory": self.present},
        }


def without_vector(store: Store, added: Sequence[str], *, dry_run: bool) -> int:
    """How many of the records an import added have no vector: all of them, unless the store
    embeds on write (then a dry run, which computes none, counts what the write would)."""
    if not added:
        return 0
    with store.read() as conn:
        if dry_run:
            return 0 if settings.embedding_settings(conn).on_write else len(added)
        found: set[str] = set()
        wanted = list(added)
        for start in range(0, len(wanted), 500):
            found.update(
                conn.execute(
                    select(memory_embeddings.c.memory_id).where(
                        memory_embeddings.c.memory_id.in_(wanted[start : start + 500])
                    )
                ).scalars()
            )
    return len(wanted) - len(found)
