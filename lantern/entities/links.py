"""Writing links between entities and chunks or memory records, in the caller's transaction.

Every function takes the connection of a write that is under way (an ingest, a memory write,
an attach), so a link is written or removed together with what it links. An entity row is
created with its first link and removed with its last (`prune`), so that no entity outlives
everything that named it; entities of legacy stores that were never linked stay as they were.

Entity rows are inserted skipping existing keys. A legacy store may hold the same kind and
name under an id computed otherwise; that row's id is then used (`ensure`).

One verb from the command line down: an entity is attached to, and detached from, a chunk or a
record (`lantern entity attach`, `Lantern.attach_entities`, `attach_to_chunks` here); a link
is what attaching makes.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

from sqlalchemy import Connection, bindparam, delete, exists, or_, select, tuple_

from lantern.entities.names import EntityName
from lantern.entities.records import EntityRef
from lantern.errors import NotFound
from lantern.store.dialect import insert_ignoring_conflicts
from lantern.store.models import (
    chunk_entities,
    entities,
    entity_scans,
    memory_entities,
    memory_records,
)
from lantern.store.prepared import Prepared

if TYPE_CHECKING:
    from sqlalchemy import ColumnElement

Fence = Sequence["ColumnElement[bool]"]
"""The conditions on `memory_records` of a confined caller's scopes."""

_BATCH = 500
_INSERTS: dict[tuple[str, str], Prepared] = {}


def _insert_new(conn: Connection, table: Any, rows: list[dict[str, Any]]) -> int:
    """Insert the rows whose keys are free; how many went in (psycopg reports no row count
    for a skipping insert, so PostgreSQL counts the rows it returns)."""
    if not rows:
        return 0
    if conn.dialect.name != "sqlite":
        statement = insert_ignoring_conflicts(conn, table).returning(table.primary_key.columns[0])
        return len(conn.execute(statement, rows).all())
    key = (conn.dialect.name, table.name)
    prepared = _INSERTS.get(key)
    if prepared is None:
        prepared = _INSERTS[key] = Prepared(insert_ignoring_conflicts(conn, table))
    return prepared.execute_many(conn, rows)


def ensure(conn: Connection, wanted: Iterable[EntityName]) -> dict[EntityName, str]:
    """Store the entities that are not stored yet; the stored id of each."""
    return ensure_counted(conn, wanted)[0]


def ensure_counted(
    conn: Connection, wanted: Iterable[EntityName]
) -> tuple[dict[EntityName, str], int]:
    """`ensure`, and how many entity rows it added."""
    distinct = list(dict.fromkeys(wanted))
    if not distinct:
        return {}, 0
    rows = [{"id": e.id, "name": e.name, "kind": e.kind} for e in distinct]
    added = _insert_new(conn, entities, rows)
    ids = {entity: entity.id for entity in distinct}
    present: set[str] = set()
    for start in range(0, len(distinct), _BATCH):
        batch = [e.id for e in distinct[start : start + _BATCH]]
        present.update(
            conn.execute(select(entities.c.id).where(entities.c.id.in_(batch))).scalars()
        )
    for entity in distinct:
        if entity.id not in present:
            # Same kind and name under an id of another making (a legacy row).
            ids[entity] = conn.execute(
                select(entities.c.id).where(
                    entities.c.kind == entity.kind, entities.c.name == entity.name
                )
            ).scalar_one()
    return ids, added


def attach_to_chunks(conn: Connection, links: Sequence[tuple[str, str]]) -> int:
    """Add `(chunk_id, entity_id)` links, skipping those that exist; how many were added."""
    rows = [{"chunk_id": chunk, "entity_id": entity} for chunk, entity in dict.fromkeys(links)]
    return _insert_new(conn, chunk_entities, rows)


def attach_to_records(conn: Connection, links: Sequence[tuple[str, str]]) -> int:
    """Add `(record_id, entity_id)` links, skipping those that exist; how many were added."""
    rows = [{"record_id": record, "entity_id": entity} for record, entity in dict.fromkeys(links)]
    return _insert_new(conn, memory_entities, rows)


def attach_found(
    conn: Connection, found: Sequence[tuple[str, EntityName]], scanned: Sequence[str], version: int
) -> tuple[int, int]:
    """Attach to chunks the entities found in them, and mark `scanned` as read by this version
    of the extractor; `(links added, entities added)`."""
    ids, entities_added = ensure_counted(conn, (entity for _chunk, entity in found))
    added = attach_to_chunks(conn, [(chunk, ids[entity]) for chunk, entity in found])
    mark_scanned(conn, scanned, version)
    return added, entities_added


def mark_scanned(conn: Connection, chunk_ids: Sequence[str], extractor: int) -> None:
    """Record that this version of the rules has read these chunks."""
    if not chunk_ids:
        return
    ids = list(dict.fromkeys(chunk_ids))
    for start in range(0, len(ids), _BATCH):
        conn.execute(
            delete(entity_scans).where(entity_scans.c.chunk_id.in_(ids[start : start + _BATCH]))
        )
    conn.execute(
        entity_scans.insert(), [{"chunk_id": chunk, "extractor": extractor} for chunk in ids]
    )


def detach_from_chunk(conn: Connection, chunk_id: str, entity_id: str) -> bool:
    removed = conn.execute(
        delete(chunk_entities).where(
            chunk_entities.c.chunk_id == chunk_id, chunk_entities.c.entity_id == entity_id
        )
    ).rowcount
    prune(conn, [entity_id])
    return bool(removed)


def detach_from_record(conn: Connection, record_id: str, entity_id: str) -> bool:
    removed = conn.execute(
        delete(memory_entities).where(
            memory_entities.c.record_id == record_id, memory_entities.c.entity_id == entity_id
        )
    ).rowcount
    prune(conn, [entity_id])
    return bool(removed)


def of_chunks(conn: Connection, chunk_ids: Sequence[str]) -> set[str]:
    """The entity ids linked to any of these chunks (before they are removed: see `prune`)."""
    found: set[str] = set()
    for start in range(0, len(chunk_ids), _BATCH):
        batch = list(chunk_ids[start : start + _BATCH])
        found.update(
            conn.execute(
                select(chunk_entities.c.entity_id)
                .where(chunk_entities.c.chunk_id.in_(batch))
                .distinct()
            ).scalars()
        )
    return found


def forget_record(conn: Connection, record_id: str) -> None:
    """Remove a record's links, and the entities no one else names (a forgotten record's
    entities must not stay behind, their names may be what was to be forgotten)."""
    linked = list(
        conn.execute(
            select(memory_entities.c.entity_id).where(memory_entities.c.record_id == record_id)
        ).scalars()
    )
    conn.execute(delete(memory_entities).where(memory_entities.c.record_id == record_id))
    prune(conn, linked)


def prune(conn: Connection, entity_ids: Iterable[str]) -> int:
    """Remove those of these entities that nothing links any more; how many were removed."""
    ids = list(dict.fromkeys(entity_ids))
    removed = 0
    for start in range(0, len(ids), _BATCH):
        batch = ids[start : start + _BATCH]
        removed += conn.execute(
            delete(entities).where(
                entities.c.id.in_(batch),
                ~exists().where(chunk_entities.c.entity_id == entities.c.id),
                ~exists().where(memory_entities.c.entity_id == entities.c.id),
            )
        ).rowcount
    return removed


_OF_RECORD = Prepared(
    select(entities.c.id, entities.c.name, entities.c.kind)
    .join(memory_entities, memory_entities.c.entity_id == entities.c.id)
    .where(memory_entities.c.record_id == bindparam("record_id"))
    .order_by(entities.c.kind, entities.c.name, entities.c.id)
)


def of_record(conn: Connection, record_id: str) -> list[EntityRef]:
    """A record's entities, by kind, then name."""
    return [EntityRef(*row) for row in _OF_RECORD.rows(conn, {"record_id": record_id})]


def of_records(conn: Connection, record_ids: Sequence[str]) -> dict[str, list[EntityRef]]:
    """The entities of several records, by record id (each list by kind, then name)."""
    found: dict[str, list[EntityRef]] = {}
    for start in range(0, len(record_ids), _BATCH):
        batch = list(record_ids[start : start + _BATCH])
        rows = conn.execute(
            select(memory_entities.c.record_id, entities.c.id, entities.c.name, entities.c.kind)
            .join(entities, entities.c.id == memory_entities.c.entity_id)
            .where(memory_entities.c.record_id.in_(batch))
            .order_by(memory_entities.c.record_id, entities.c.kind, entities.c.name, entities.c.id)
        )
        for row in rows:
            found.setdefault(row.record_id, []).append(EntityRef(row.id, row.name, row.kind))
    return found


def lookup(conn: Connection, keys: Sequence[EntityName | str]) -> dict[EntityName | str, EntityRef]:
    """The stored entities these keys name (by id, or by kind and name), by key."""
    by_id = {key if isinstance(key, str) else key.id: key for key in keys}
    found: dict[EntityName | str, EntityRef] = {}
    names = [key for key in keys if isinstance(key, EntityName)]
    conditions: list[Any] = [entities.c.id.in_(list(by_id))]
    if names:
        conditions.append(
            tuple_(entities.c.kind, entities.c.name).in_([(n.kind, n.name) for n in names])
        )
    rows = conn.execute(
        select(entities.c.id, entities.c.name, entities.c.kind).where(or_(*conditions))
    )
    for row in rows:
        ref = EntityRef(row.id, row.name, row.kind)
        if row.id in by_id:
            found[by_id[row.id]] = ref
        for name in names:
            if (name.kind, name.name) == (row.kind, row.name):
                found.setdefault(name, ref)
    return found


def visible(conn: Connection, entity_ids: Iterable[str], fence: Fence) -> set[str]:
    """The entities among `entity_ids` a caller confined by `fence` may know of: those a chunk
    mentions (evidence has no scope) or a record within the fence has."""
    wanted = sorted(set(entity_ids))
    found: set[str] = set()
    for start in range(0, len(wanted), _BATCH):
        batch = wanted[start : start + _BATCH]
        found.update(
            conn.execute(
                select(chunk_entities.c.entity_id).where(chunk_entities.c.entity_id.in_(batch))
            ).scalars()
        )
        found.update(
            conn.execute(
                select(memory_entities.c.entity_id)
                .join(memory_records, memory_records.c.id == memory_entities.c.record_id)
                .where(memory_entities.c.entity_id.in_(batch), *fence)
            ).scalars()
        )
    return found


def lookup_visible(
    conn: Connection, keys: Sequence[EntityName | str], fence: Fence | None
) -> dict[EntityName | str, EntityRef]:
    """`lookup`, and with a confined caller's `fence`, only the entities it may know of: one
    that only records outside hold reads as one that does not exist."""
    found = lookup(conn, keys)
    if fence is None or not found:
        return found
    seen = visible(conn, (ref.id for ref in found.values()), fence)
    return {key: ref for key, ref in found.items() if ref.id in seen}


def resolve(
    conn: Connection, keys: Sequence[EntityName | str], fence: Fence | None = None
) -> list[EntityName]:
    """Entities to link: names as given, ids as the stored entities they name (`NotFound`
    for an id that names none, or none a caller confined by `fence` may know of), repeats
    dropped."""
    ids = [key for key in keys if isinstance(key, str)]
    found = lookup_visible(conn, ids, fence) if ids else {}
    resolved: list[EntityName] = []
    for key in keys:
        if isinstance(key, str):
            ref = found.get(key)
            if ref is None:
                raise NotFound(f"no entity with id {key!r}")
            resolved.append(EntityName(ref.kind, ref.name))
        else:
            resolved.append(key)
    return list(dict.fromkeys(resolved))


def missing(key: EntityName | str) -> NotFound:
    """The error for an entity that is not stored."""
    return NotFound(f"no entity with id {key!r}" if isinstance(key, str) else f"no entity {key}")
