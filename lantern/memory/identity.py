"""What a record says, as one indexed value: the identity that duplicate detection follows.

A record's id is made from the scope, kind and content it was created with, and never changes
(history, supersede links, references and callers hold it). Its content may change later, by
`update`, so the id cannot tell whether two records say the same. `identity_hash` can: 16 hex
digits of sha256(scope, kind and whitespace-normalised content), rewritten by every write that
changes the content, under a unique index. Adding a memory looks it up by identity, and the
insert that skips taken keys (`ON CONFLICT DO NOTHING`, on the id and on the identity alike)
keeps two writers adding the same text at once from storing it twice.

Stores may hold records that say the same from before the identity existed (revision 0006), or
from an import of such a store: they are kept, nothing is merged. One of each group holds the
identity (`claim_order`: the record whose id was made from that very text, else active before
archived before superseded, then the oldest, then the smallest id) and the others keep
`identity_hash` NULL; `db check` lists them as warnings. When the holder stops saying it (its
content changes, or it is forgotten), the next of them in that order takes the identity over,
so that `add` keeps finding the text.
"""

from __future__ import annotations

from collections.abc import Iterable

from sqlalchemy import Connection, bindparam, select, update

from lantern.memory.records import MemoryRecord
from lantern.memory.rows import row_to_record
from lantern.memory.scopes import ScopePolicy
from lantern.store.ids import memory_identity
from lantern.store.models import memory_records as table
from lantern.store.prepared import Prepared

STATUS_RANK = {"active": 0, "archived": 1, "superseded": 2}
_BATCH = 500

_HOLDER = Prepared(select(table).where(table.c.identity_hash == bindparam("identity")))
_UNCLAIMED = Prepared(select(table).where(table.c.identity_hash.is_(None)))
_CLAIM = Prepared(
    update(table)
    .where(table.c.id == bindparam("record_id"))
    .values(identity_hash=bindparam("identity"))
)


def of(record: MemoryRecord) -> str:
    return memory_identity(record.scope, record.kind, record.content)


def claim_order(record_id: str, identity: str, status: str, created_at: int) -> tuple[object, ...]:
    """Which of several records that say the same holds the identity: the smallest."""
    return (record_id != "mem_" + identity, STATUS_RANK.get(status, 3), created_at, record_id)


def holder(conn: Connection, identity: str, scopes: ScopePolicy) -> MemoryRecord | None:
    """The record that says this now, if any (within `scopes`)."""
    rows = _HOLDER.rows(conn, {"identity": identity})
    if not rows:
        return None
    record = row_to_record(rows[0])
    return record if scopes.allows(record.scope) else None


def holders(conn: Connection, identities: Iterable[str]) -> dict[str, MemoryRecord]:
    """The records that say these now, by identity."""
    found: dict[str, MemoryRecord] = {}
    ordered = sorted(set(identities))
    for start in range(0, len(ordered), _BATCH):
        batch = ordered[start : start + _BATCH]
        for row in conn.execute(select(table).where(table.c.identity_hash.in_(batch))):
            found[row.identity_hash] = row_to_record(row)
    return found


def release(conn: Connection, identity: str) -> None:
    """Hand `identity` over, if a record no longer says it, to a record that says it too.

    Such records exist only in stores that held duplicates before revision 0006 (or imported
    them), so the first look, at the records without an identity, finds none almost always.
    """
    waiting = [
        record
        for record in (row_to_record(row) for row in _UNCLAIMED.rows(conn))
        if of(record) == identity
    ]
    if not waiting or _HOLDER.rows(conn, {"identity": identity}):
        return
    heir = min(waiting, key=lambda r: claim_order(r.id, identity, r.status, r.created_at))
    _CLAIM.rows(conn, {"record_id": heir.id, "identity": identity})


def repair(conn: Connection) -> None:
    """Make every record's `identity_hash` what its scope, kind and content say
    (`db rebuild-index`).

    A record whose stored identity is right keeps it. The others are cleared first (the index
    is unique), then each identity that nobody holds goes to the first of its records in
    `claim_order`.
    """
    rows = conn.execute(
        select(
            table.c.id,
            table.c.scope,
            table.c.kind,
            table.c.content,
            table.c.status,
            table.c.created_at,
            table.c.identity_hash,
        )
    ).all()
    held: set[str] = set()
    wrong: list[tuple[tuple[object, ...], str, str, str | None]] = []
    for record_id, scope, kind, content, status, created_at, stored in rows:
        identity = memory_identity(scope, kind, content)
        if stored == identity:
            held.add(identity)
        else:
            rank = claim_order(record_id, identity, status, created_at)
            wrong.append((rank, record_id, identity, stored))
    wrong.sort()
    for _rank, record_id, _identity, stored in wrong:
        if stored is not None:
            _CLAIM.rows(conn, {"record_id": record_id, "identity": None})
    for _rank, record_id, identity, _stored in wrong:
        if identity not in held:
            held.add(identity)
            _CLAIM.rows(conn, {"record_id": record_id, "identity": identity})
