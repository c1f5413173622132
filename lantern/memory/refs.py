"""References from memory records to evidence: checking them, finding them, finding what dangles.

A record's `source_refs` (JSON) is what callers read; `memory_refs` repeats the `(type, id)` of
each reference that has an id, written by the repository in the same transaction, so that
"which memories cite this chunk" and "which references no longer resolve" are index lookups.
Only `source` and `chunk` references can be checked: they name rows of this store. Sessions,
URLs, files and free-form objects are stored as given.

A reference can also be a caller's own key for a record (a mem0 id, a LangGraph item's path):
`holding` finds the records that hold such references starting from the references' index,
which stays a look-up by key however many records a scope or the store holds.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from sqlalchemy import (
    ColumnElement,
    Connection,
    Select,
    Table,
    and_,
    bindparam,
    delete,
    exists,
    func,
    insert,
    or_,
    select,
)

from lantern.errors import InvalidInput, Setting
from lantern.memory.identity import STATUS_RANK
from lantern.memory.records import DanglingRef, MemoryRecord
from lantern.memory.rows import row_to_record
from lantern.store.dialect import FixedJoin, from_id_list, id_list_value
from lantern.store.models import chunks, memory_records, memory_refs, sources
from lantern.store.prepared import Prepared

# The reference types that name rows of this store, and the table each one names.
RESOLVABLE: dict[str, Table] = {"source": sources, "chunk": chunks}
_BATCH = 500


def ref_keys(refs: Iterable[Mapping[str, Any]]) -> list[tuple[str, str]]:
    """The distinct `(type, id)` of the references that carry a non-empty string id."""
    found: list[tuple[str, str]] = []
    for ref in refs:
        ref_type, ref_id = ref.get("type"), ref.get("id")
        named = isinstance(ref_type, str) and ref_type and isinstance(ref_id, str) and ref_id
        if named and (ref_type, ref_id) not in found:
            found.append((str(ref_type), str(ref_id)))
    return found


def write(conn: Connection, rows: Iterable[tuple[str, Iterable[Mapping[str, Any]]]]) -> None:
    """Add the reference rows of newly written records: `(record_id, refs)` pairs."""
    values = [
        {"record_id": record_id, "ref_type": ref_type, "ref_id": ref_id}
        for record_id, refs in rows
        for ref_type, ref_id in ref_keys(refs)
    ]
    _WRITE.execute_many(conn, values)


_WRITE = Prepared(
    insert(memory_refs).values(
        record_id=bindparam("record_id"), ref_type=bindparam("ref_type"), ref_id=bindparam("ref_id")
    )
)


_DELETE = Prepared(delete(memory_refs).where(memory_refs.c.record_id == bindparam("record_id")))


def replace(conn: Connection, record_id: str, refs: Iterable[Mapping[str, Any]]) -> None:
    """Make a record's reference rows match its new `source_refs`."""
    _DELETE.rows(conn, {"record_id": record_id})
    write(conn, [(record_id, refs)])


def require_resolvable(conn: Connection, refs: Iterable[Mapping[str, Any]]) -> None:
    """Refuse `source` and `chunk` references that name nothing in this store."""
    wanted: dict[str, list[str]] = {}
    for ref in refs:
        ref_type = ref.get("type")
        if ref_type not in RESOLVABLE:
            continue
        ref_id = ref.get("id")
        if not isinstance(ref_id, str) or not ref_id:
            raise InvalidInput(
                f"a {ref_type} reference needs a string id to be checked; got {dict(ref)!r} "
                "(store it anyway ",
                Setting("allow_dangling", True),
                ")",
            )
        wanted.setdefault(str(ref_type), []).append(ref_id)
    for ref_type, ids in wanted.items():
        table = RESOLVABLE[ref_type]
        present: set[str] = set()
        for start in range(0, len(ids), _BATCH):
            batch = ids[start : start + _BATCH]
            present.update(conn.execute(select(table.c.id).where(table.c.id.in_(batch))).scalars())
        for ref_id in ids:
            if ref_id not in present:
                raise InvalidInput(
                    f"reference {ref_type}:{ref_id} names no {ref_type} in this store "
                    "(store it anyway ",
                    Setting("allow_dangling", True),
                    ")",
                )


def cites_clause(
    keys: Iterable[tuple[Any, Any]], *, source_ids: Sequence[Any] = ()
) -> ColumnElement[bool]:
    """Records holding any of these `(type, id)` references (values or bound parameters), or,
    for `source_ids`, a reference to any chunk of those sources."""
    citing = exists().where(
        memory_refs.c.record_id == memory_records.c.id,
        or_(
            *(
                and_(memory_refs.c.ref_type == ref_type, memory_refs.c.ref_id == ref_id)
                for ref_type, ref_id in keys
            )
        ),
    )
    if not source_ids:
        return citing
    of_sources = select(chunks.c.id).where(chunks.c.source_id.in_(source_ids))
    via_chunks = exists().where(
        memory_refs.c.record_id == memory_records.c.id,
        memory_refs.c.ref_type == "chunk",
        memory_refs.c.ref_id.in_(of_sources),
    )
    return or_(citing, via_chunks)


def _dangling_select() -> Select[Any]:
    unresolved = [
        (memory_refs.c.ref_type == ref_type) & ~exists().where(table.c.id == memory_refs.c.ref_id)
        for ref_type, table in RESOLVABLE.items()
    ]
    return select(memory_refs.c.record_id, memory_refs.c.ref_type, memory_refs.c.ref_id).where(
        or_(*unresolved)
    )


def dangling(conn: Connection, records: Sequence[ColumnElement[bool]] = ()) -> list[DanglingRef]:
    """Every `source`/`chunk` reference whose target is gone, by record, type and id.

    `records` (conditions on `memory_records`) keeps only the references of those records,
    which is how a scope restriction applies here.
    """
    stmt = _dangling_select().order_by(
        memory_refs.c.record_id, memory_refs.c.ref_type, memory_refs.c.ref_id
    )
    if records:
        stmt = stmt.where(memory_refs.c.record_id.in_(select(memory_records.c.id).where(*records)))
    return [DanglingRef(record_id=row[0], type=row[1], id=row[2]) for row in conn.execute(stmt)]


def dangling_count(conn: Connection) -> int:
    count: int = conn.execute(
        select(func.count()).select_from(_dangling_select().subquery())
    ).scalar_one()
    return count


def holding(dialect: str, *, one: bool = False) -> Select[Any]:
    """The records holding a reference of the type bound as `ref_type` whose id is one of the
    ids bound as `ref_ids` (`ref_ids_value`), or with `one`, the id bound as `ref_id`, in no
    particular order: the references' index is read first, then each record by its key
    (`FixedJoin`: SQLite's planner would otherwise walk a listing index and test every record
    of it)."""
    if one:
        on = memory_records.c.id == memory_refs.c.record_id
        found = FixedJoin(memory_refs, memory_records, on)
        by_id = [memory_refs.c.ref_id == bindparam("ref_id")]
    else:
        listed, by_id = from_id_list(dialect, memory_refs, memory_refs.c.ref_id, "ref_ids")
        found = FixedJoin(listed, memory_records, memory_records.c.id == memory_refs.c.record_id)
    return (
        select(memory_records)
        .select_from(found)
        .where(memory_refs.c.ref_type == bindparam("ref_type"), *by_id)
    )


def ref_ids_value(dialect: str, ids: Sequence[str]) -> Any:
    """The value to bind as `ref_ids` in `holding`."""
    return id_list_value(dialect, ids)


_HELD: dict[str, Prepared] = {}


def held_in_scope(conn: Connection, ref_type: str, ref_id: str, scope: str) -> list[MemoryRecord]:
    """The records of `scope` that hold the reference `(ref_type, ref_id)`, the superseded ones
    left out, in list order; on PostgreSQL locked until the transaction ends."""
    dialect = conn.dialect.name
    statement = _HELD.get(dialect)
    if statement is None:
        statement = _HELD[dialect] = Prepared(
            holding(dialect, one=True)
            .where(
                memory_records.c.scope == bindparam("scope"),
                memory_records.c.status != "superseded",
            )
            .with_for_update(of=memory_records)
        )
    values = {"ref_type": ref_type, "ref_id": ref_id, "scope": scope}
    records = [row_to_record(row) for row in statement.rows(conn, values)]
    return sorted(records, key=list_rank)


def list_rank(record: MemoryRecord) -> tuple[object, ...]:
    """Where a record sorts in the documented list order (`lantern.memory.filters.LIST_ORDER`),
    for sorting a few records in Python."""
    return (
        STATUS_RANK.get(record.status, len(STATUS_RANK)),
        -record.priority,
        -record.urgency,
        -record.updated_at,
        record.id,
    )
