"""Frozen entity results and their JSON shapes (docs/json.md, "Entities"): keys may be added
at the end, never renamed or removed."""

from __future__ import annotations

from dataclasses import dataclass

from lantern.validation import JSONObject


@dataclass(frozen=True, slots=True)
class EntityRef:
    """An entity as a chunk or a memory record shows it."""

    id: str
    name: str
    kind: str

    def to_json(self) -> JSONObject:
        """`{"id", "name", "kind"}`."""
        return {"id": self.id, "name": self.name, "kind": self.kind}


@dataclass(frozen=True, slots=True)
class EntitySummary:
    """An entity with how many chunks mention it and how many memory records are about it
    (of those the caller may see)."""

    id: str
    name: str
    kind: str
    chunk_count: int
    memory_count: int

    def to_json(self) -> JSONObject:
        """`{"id", "name", "kind", "chunk_count", "memory_count"}` (`entity list --json`)."""
        return {
            "id": self.id,
            "name": self.name,
            "kind": self.kind,
            "chunk_count": self.chunk_count,
            "memory_count": self.memory_count,
        }


@dataclass(frozen=True, slots=True)
class EntityChunk:
    """A chunk that mentions an entity, with where it is and a short excerpt around the
    mention (the chunk's start when the name does not occur in it)."""

    chunk_id: str
    source_id: str
    uri: str
    ordinal: int
    start_offset: int | None
    end_offset: int | None
    excerpt: str

    def to_json(self) -> JSONObject:
        """The chunk's place and excerpt, as `entity show --json` lists them."""
        return {
            "chunk_id": self.chunk_id,
            "source_id": self.source_id,
            "uri": self.uri,
            "ordinal": self.ordinal,
            "start_offset": self.start_offset,
            "end_offset": self.end_offset,
            "excerpt": self.excerpt,
        }


@dataclass(frozen=True, slots=True)
class LinkChange:
    """What an attach or detach did: the entity, the chunk or record, and whether a link was
    added or removed (False: it was already so)."""

    entity: EntityRef
    target_type: str
    target_id: str
    changed: bool

    def to_json(self) -> JSONObject:
        """`{"entity", "chunk_id" or "record_id", "changed"}`."""
        return {
            "entity": self.entity.to_json(),
            f"{self.target_type}_id": self.target_id,
            "changed": self.changed,
        }


@dataclass(frozen=True, slots=True)
class ExtractReport:
    """What `lantern entity extract` did (`--json`)."""

    scanned: int
    """Chunks read by this run."""
    skipped: int
    """Chunks already read by this version of the rules."""
    links_added: int
    entities_added: int
    extractor: int
    seconds: float

    def to_json(self) -> JSONObject:
        """`{"scanned", "skipped", "links_added", "entities_added", "extractor", "seconds"}`."""
        return {
            "scanned": self.scanned,
            "skipped": self.skipped,
            "links_added": self.links_added,
            "entities_added": self.entities_added,
            "extractor": self.extractor,
            "seconds": round(self.seconds, 3),
        }
