"""The steps every write to a record is made of, each keeping its companions in step.

Inserting a record also writes its identity (`lantern.memory.identity`), search row, reference
rows and `created` history entry; a change of fields or status appends its history entry.
Keeping them together here is what guarantees that the record, its history, its index and its
references never disagree.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from sqlalchemy import ColumnElement, Connection, bindparam, func, literal_column, select, update

from lantern.entities import links as entity_links
from lantern.entities.names import EntityName
from lantern.errors import Conflict
from lantern.memory import fts, history, identity, refs
from lantern.memory.records import MemoryRecord
from lantern.memory.scopes import ScopePolicy
from lantern.store.dialect import insert_ignoring_conflicts
from lantern.store.ids import memory_id
from lantern.store.models import memory_records as table
from lantern.store.prepared import Prepared

_SET_STATUS = Prepared(
    update(table)
    .where(table.c.id == bindparam("record_id"))
    .values(status=bindparam("new_status"), updated_at=bindparam("at"))
)
_INSERT: dict[tuple[str, bool], Prepared] = {}
_ROWID: ColumnElement[int] = literal_column("rowid")
_MAX_ROWID = Prepared(select(func.max(_ROWID)).select_from(table))
_IDS_AFTER = Prepared(select(table.c.id).where(bindparam("rowid") < _ROWID))


def _insert_statement(conn: Connection, *, returning: bool) -> Prepared:
    """The record insert that skips rows whose id or identity is taken; with RETURNING, which
    tells whether the row went in (psycopg reports no rowcount for this form)."""
    key = (conn.dialect.name, returning)
    statement = _INSERT.get(key)
    if statement is None:
        insert = insert_ignoring_conflicts(conn, table)
        statement = _INSERT[key] = Prepared(insert.returning(table.c.id) if returning else insert)
    return statement


def _row(record: MemoryRecord, says: str) -> dict[str, Any]:
    """The record's column values; `says` is its identity (`identity.of`), which the caller
    has at hand (a hash of the normalised content costs more than building the row)."""
    return {
        "id": record.id,
        "kind": record.kind,
        "content": record.content,
        "scope": record.scope,
        "priority": record.priority,
        "urgency": record.urgency,
        "confidence": record.confidence,
        "status": record.status,
        "created_at": record.created_at,
        "updated_at": record.updated_at,
        "expires_at": record.expires_at,
        "supersedes_id": record.supersedes_id,
        "source_refs": plain_refs(record.source_refs),
        "identity_hash": says,
    }


Named = Mapping[str, Sequence[EntityName]]
"""The entities of records being inserted, by record id."""


def _attach_entities(
    conn: Connection, written: list[MemoryRecord], named: Named
) -> dict[str, list[str]]:
    """Attach the written records' entities to them; each record's entities as `KIND:NAME`."""
    wanted = [entity for record in written for entity in named.get(record.id, ())]
    if not wanted:
        return {}
    ids = entity_links.ensure(conn, wanted)
    entity_links.attach_to_records(
        conn, [(record.id, ids[e]) for record in written for e in named.get(record.id, ())]
    )
    return {record.id: [str(e) for e in named.get(record.id, ())] for record in written}


def insert_records(
    conn: Connection, records: list[MemoryRecord], named: Named | None = None
) -> set[str]:
    """Store the records whose ids and identities are free (one statement per table); the ids
    that went in.

    A record whose id or identity is already stored is skipped, with nothing else written for
    it (`insert_new` tells the two apart).
    """
    if not records:
        return set()
    rows = [_row(record, identity.of(record)) for record in records]
    if conn.dialect.name == "sqlite":
        # executemany cannot return rows. The write lock is ours since BEGIN IMMEDIATE, so the
        # rows that went in are exactly those past the largest rowid before the insert, and
        # when every row went in (the usual case) there is nothing to look up at all.
        before = _MAX_ROWID.rows(conn)[0][0] or 0
        count = _insert_statement(conn, returning=False).execute_many(conn, rows)
        if count == len(rows):
            inserted = {record.id for record in records}
        else:
            inserted = {row[0] for row in _IDS_AFTER.rows(conn, {"rowid": before})}
    else:
        stmt = _insert_statement(conn, returning=True).statement
        inserted = {row[0] for row in conn.execute(stmt, rows)}
    written = [record for record in records if record.id in inserted]
    fts.index(conn, [(record.id, record.content) for record in written])
    refs.write(conn, [(record.id, record.source_refs) for record in written])
    linked = _attach_entities(conn, written, named or {})
    history.append(conn, [history.created(record, linked.get(record.id, ())) for record in written])
    return inserted


def insert_record(
    conn: Connection,
    record: MemoryRecord,
    entities: Sequence[EntityName] = (),
    *,
    says: str | None = None,
) -> bool:
    """Store a new record with its search row, reference rows and `created` entry; `says` is
    its identity when the caller has it.

    False when its id or identity is taken (the insert skips existing keys, so that concurrent
    writers of the same memory never collide); nothing else is written then.
    """
    row = _row(record, identity.of(record) if says is None else says)
    if not _insert_statement(conn, returning=True).rows(conn, row):
        return False
    fts.index(conn, [(record.id, record.content)])
    refs.write(conn, [(record.id, record.source_refs)])
    linked = _attach_entities(conn, [record], {record.id: entities})
    history.append(conn, [history.created(record, linked.get(record.id, ()))])
    return True


_MAX_ATTEMPTS = 1_000


def insert_new(
    conn: Connection,
    record: MemoryRecord,
    scopes: ScopePolicy,
    *,
    first_attempt: int = 0,
    entities: Sequence[EntityName] = (),
    says: str | None = None,
) -> tuple[MemoryRecord, bool]:
    """Store a new record under the first free id its text gives (`memory_id`); or, when a
    record already says the same, that record and False.

    The record's id is taken only when a record whose content changed since holds it; then the
    next id of the sequence is tried. `first_attempt` skips ids known to be taken. `says` is
    the record's identity when the caller has it.
    """
    if says is None:
        says = identity.of(record)
    for attempt in range(first_attempt, _MAX_ATTEMPTS):
        candidate = record
        if attempt:
            candidate = dataclasses.replace(
                record, id=memory_id(record.scope, record.kind, record.content, attempt)
            )
        if insert_record(conn, candidate, entities, says=says):
            return candidate, True
        stored = identity.holder(conn, says, scopes)
        if stored is not None:
            return stored, False
    raise Conflict(f"no free id is left for a memory of this text in scope {record.scope!r}")


def retire(conn: Connection, old: MemoryRecord, successor_id: str, at: int) -> None:
    _SET_STATUS.rows(conn, {"record_id": old.id, "new_status": "superseded", "at": at})
    history.append(
        conn,
        [history.status_change(old, "superseded", "superseded", at, superseded_by=successor_id)],
    )


_SET_FIELDS: dict[tuple[str, ...], Prepared] = {}


def set_fields(conn: Connection, record_id: str, values: Mapping[str, Any], at: int) -> None:
    """Change some fields of a record (and its `updated_at`): one statement per set of fields."""
    names = tuple(sorted(values))
    statement = _SET_FIELDS.get(names)
    if statement is None:
        # `new_` names: SQLAlchemy keeps a column's own name for its SET clause.
        assignments = {name: bindparam(f"new_{name}", type_=table.c[name].type) for name in names}
        statement = _SET_FIELDS[names] = Prepared(
            update(table)
            .where(table.c.id == bindparam("record_id"))
            .values(**assignments, updated_at=bindparam("at"))
        )
    params = {f"new_{name}": value for name, value in values.items()}
    statement.rows(conn, {**params, "record_id": record_id, "at": at})


def set_status(
    conn: Connection, record: MemoryRecord, event: str, status: str, at: int
) -> MemoryRecord:
    _SET_STATUS.rows(conn, {"record_id": record.id, "new_status": status, "at": at})
    history.append(conn, [history.status_change(record, event, status, at)])
    return dataclasses.replace(record, status=status, updated_at=at)


def plain_refs(refs: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    return [dict(ref) for ref in refs]
