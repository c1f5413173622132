"""Plain immutable records returned by every public call, and their JSON shapes.

Callers never hold live ORM rows: no sessions to trip over, no lazy loads, and one place that
decides how a record looks in JSON. The key order of `to_json` is a published contract (README,
"JSON output"); fields may be added at the end, never renamed or removed.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

JSONObject = dict[str, Any]


def freeze_refs(refs: list[dict[str, Any]]) -> tuple[Mapping[str, Any], ...]:
    return tuple(MappingProxyType(dict(ref)) for ref in refs)


@dataclass(frozen=True, slots=True)
class MemoryRecord:
    id: str
    kind: str
    content: str
    scope: str
    priority: int
    urgency: int
    confidence: float
    status: str
    created_at: int
    updated_at: int
    expires_at: int | None
    supersedes_id: str | None
    source_refs: tuple[Mapping[str, Any], ...]

    def is_expired(self, at: int) -> bool:
        return self.expires_at is not None and self.expires_at <= at

    def to_json(self) -> JSONObject:
        return {
            "id": self.id,
            "kind": self.kind,
            "content": self.content,
            "scope": self.scope,
            "priority": self.priority,
            "urgency": self.urgency,
            "confidence": self.confidence,
            "status": self.status,
            "created_at": self.created_at,
            "updated_at": self.updated_at,
            "expires_at": self.expires_at,
            "supersedes_id": self.supersedes_id,
            "source_refs": [dict(ref) for ref in self.source_refs],
        }
