"""Plain immutable records returned by every public call, and their JSON shapes.

Callers never hold live ORM rows: no sessions to trip over, no lazy loads, and one place that
decides how a record looks in JSON. The key order of `to_json` is a published contract
(docs/json.md); fields may be added at the end, never renamed or removed.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from types import MappingProxyType
from typing import Any

from lantern.entities.records import EntityChunk, EntitySummary
from lantern.retrieval.modes import SearchSummary
from lantern.validation import JSONObject

OUTSIDE_SCOPES = "(outside the scopes)"
"""What a confined caller reads where the id of a record outside its scopes would be (a
`supersedes_id`, a history entry's `superseded_by`, a supersede chain): a record is there,
beyond the fence, without saying which (docs/json.md, "Records outside the scopes")."""


def freeze_refs(refs: list[dict[str, Any]]) -> tuple[Mapping[str, Any], ...]:
    """Source references as read-only mappings, for a frozen record."""
    return tuple(MappingProxyType(dict(ref)) for ref in refs)


@dataclass(frozen=True, slots=True)
class MemoryRecord:
    """A memory record as stored: explicit, durable state the agent decided to keep.

    `kind` is one of `fact`, `preference`, `goal`, `constraint`, `task_state`, `observation`
    and `hypothesis`; `status` one of `active`, `archived` and `superseded`. Times are unix
    seconds, UTC. `supersedes_id` names the record this one replaced; `source_refs` are its
    references to evidence, each a read-only mapping with a string `type` (`{"id", "type"}`
    for `TYPE:ID` references), keys in canonical order.
    """

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
        """Whether `expires_at` has passed at the unix time `at`."""
        return self.expires_at is not None and self.expires_at <= at

    def to_json(self) -> JSONObject:
        """The record as JSON: the keys of docs/json.md ("Memory records"), in that order."""
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


# --- Memory lifecycle, retrieval and visibility (docs/memory.md) -----------------------------

_STATUS_RANKS = {"active": 0, "archived": 1, "superseded": 2}


def order_keys(record: MemoryRecord, *, relevance: float | None = None) -> JSONObject:
    """The keys a record was ordered by, most significant first (`--explain`).

    The documented list order is status rank (active 0, archived 1, superseded 2), then higher
    priority, higher urgency, newer `updated_at`, and `id` ascending; a search by relevance puts
    its score (higher is better) before all of them.
    """
    keys: JSONObject = {} if relevance is None else {"relevance": relevance}
    keys.update(
        status_rank=_STATUS_RANKS.get(record.status, len(_STATUS_RANKS)),
        priority=record.priority,
        urgency=record.urgency,
        updated_at=record.updated_at,
        id=record.id,
    )
    return keys


def _deep_copy(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {key: _deep_copy(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_deep_copy(item) for item in value]
    return value


def _deep_freeze(value: Any) -> Any:
    if isinstance(value, Mapping):
        return MappingProxyType({key: _deep_freeze(item) for key, item in value.items()})
    if isinstance(value, list | tuple):
        return tuple(_deep_freeze(item) for item in value)
    return value


@dataclass(frozen=True, slots=True)
class HistoryEntry:
    """One change to a memory record (`lantern memory history`).

    `changes` holds `before` and `after`: the fields that changed, with their values before and
    after the change (`before` is null for `created`, whose `after` holds every field; `after`
    is null for `forgotten`, which keeps no content). A `superseded` entry also names the
    record that replaced this one in `superseded_by`.
    """

    id: int
    record_id: str
    event: str
    at: int
    changes: Mapping[str, Any]

    @classmethod
    def from_stored(
        cls, id: int, record_id: str, event: str, at: int, changes: Mapping[str, Any]
    ) -> HistoryEntry:
        """An entry from its stored columns, its `changes` made read-only."""
        return cls(id, record_id, event, at, _deep_freeze(changes))

    def to_json(self) -> JSONObject:
        """The entry as JSON: `id`, `record_id`, `event`, `at`, `changes` (docs/json.md)."""
        return {
            "id": self.id,
            "record_id": self.record_id,
            "event": self.event,
            "at": self.at,
            "changes": _deep_copy(self.changes),
        }


@dataclass(frozen=True, slots=True)
class MemoryMatch:
    """A memory record found by a search, with its relevance (higher is better) and where it
    came from: the ranking (`mode`), its 1-based place in the keyword ranking, and its place
    in the semantic ranking and its cosine similarity, each None where that ranking did not run
    or did not reach the record (see `lantern.retrieval.modes`)."""

    record: MemoryRecord
    score: float
    mode: str
    keyword_rank: int | None
    semantic_rank: int | None = None
    similarity: float | None = None

    def to_json(self, *, explain: bool = False, by_relevance: bool = True) -> JSONObject:
        """The record's keys, then `explain` when asked, then `score` and the hit's origin."""
        rendered = self.record.to_json()
        if explain:
            relevance = self.score if by_relevance else None
            rendered["explain"] = order_keys(self.record, relevance=relevance)
        rendered["score"] = self.score
        rendered["mode"] = self.mode
        rendered["keyword_rank"] = self.keyword_rank
        rendered["semantic_rank"] = self.semantic_rank
        rendered["similarity"] = self.similarity
        return rendered


class Page(list[Any]):
    """A list of results that knows where the next page starts (`--after CURSOR`).

    `next_cursor` is None when there is nothing after this page. A search's page also says what
    the search did (`summary`: the mode it ran in, the model it compared, the records it could
    not compare for want of a vector); a listing's is None. It is a plain list otherwise, so
    callers that do not page can ignore the difference.
    """

    __slots__ = ("next_cursor", "summary")

    def __init__(
        self,
        items: Sequence[Any] = (),
        next_cursor: str | None = None,
        summary: SearchSummary | None = None,
    ) -> None:
        super().__init__(items)
        self.next_cursor = next_cursor
        self.summary = summary


@dataclass(frozen=True, slots=True)
class MemoryChain:
    """A record and its supersede chain: what it replaced and what replaced it, nearest first."""

    record: MemoryRecord
    replaces: tuple[str, ...]
    replaced_by: tuple[str, ...]

    def to_json(self) -> JSONObject:
        """The record's keys, then `replaces` and `replaced_by` (`memory show --json --chain`)."""
        return {
            **self.record.to_json(),
            "replaces": list(self.replaces),
            "replaced_by": list(self.replaced_by),
        }


@dataclass(frozen=True, slots=True)
class ForgetReport:
    """What `memory forget` did. `wal_checkpointed` is None on PostgreSQL (no file to scrub)."""

    id: str
    forgotten_at: int
    wal_checkpointed: bool | None

    def to_json(self) -> JSONObject:
        """`{"id", "forgotten_at", "wal_checkpointed"}`, as `memory forget --json` prints it."""
        return {
            "id": self.id,
            "forgotten_at": self.forgotten_at,
            "wal_checkpointed": self.wal_checkpointed,
        }


@dataclass(frozen=True, slots=True)
class DanglingRef:
    """A `source` or `chunk` reference of a memory record that names nothing in the store."""

    record_id: str
    type: str
    id: str

    def to_json(self) -> JSONObject:
        """`{"record_id", "type", "id"}`, as `memory check-refs --json` prints it."""
        return {"record_id": self.record_id, "type": self.type, "id": self.id}


@dataclass(frozen=True, slots=True)
class DayCount:
    """The history entries of one UTC day, by event (`memory stats`, `changes_per_day`)."""

    start: int
    """The day's first second, unix time."""
    counts: Mapping[str, int]
    """Entries per event, every event of `lantern.validation.HISTORY_EVENTS` present."""

    def to_json(self) -> JSONObject:
        """`{"day", "start", "counts"}`: the day as `YYYY-MM-DD`, its first second, the counts."""
        day = datetime.fromtimestamp(self.start, UTC).strftime("%Y-%m-%d")
        return {"day": day, "start": self.start, "counts": dict(self.counts)}


@dataclass(frozen=True, slots=True)
class MemoryStats:
    """What the records a caller may see amount to (`lantern memory stats`).

    Counts over every record within the scopes, expired ones included; `top_scopes` holds the
    scopes with the most records (most first, then by scope), `scope_count` how many scopes
    there are in all, `expired_active` the active records whose expiry time has passed, and
    `changes_per_day` the history entries of each of the last days, oldest first.
    """

    total: int
    by_kind: Mapping[str, int]
    by_status: Mapping[str, int]
    top_scopes: tuple[tuple[str, int], ...]
    scope_count: int
    expired_active: int
    changes_per_day: tuple[DayCount, ...]

    def to_json(self) -> JSONObject:
        """The counts as `memory stats --json` prints them (docs/json.md, "Memory stats")."""
        return {
            "total": self.total,
            "by_kind": dict(self.by_kind),
            "by_status": dict(self.by_status),
            "top_scopes": [{"scope": scope, "count": count} for scope, count in self.top_scopes],
            "scope_count": self.scope_count,
            "expired_active": self.expired_active,
            "changes_per_day": [day.to_json() for day in self.changes_per_day],
        }


@dataclass(frozen=True, slots=True)
class EntityView:
    """An entity with a page of the chunks that mention it and of the memory records about it
    (`lantern entity show`); `next_cursor` continues both, None when both are done."""

    entity: EntitySummary
    chunks: tuple[EntityChunk, ...]
    memories: tuple[MemoryRecord, ...]
    next_cursor: str | None

    def to_json(self) -> dict[str, Any]:
        """The entity's keys, then `chunks`, `memories` and `next_cursor`."""
        return {
            **self.entity.to_json(),
            "chunks": [chunk.to_json() for chunk in self.chunks],
            "memories": [record.to_json() for record in self.memories],
            "next_cursor": self.next_cursor,
        }
