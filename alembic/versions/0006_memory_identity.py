"""Memory identity: what each record says now, indexed, so that duplicates are found by it.

A record's id is made from the scope, kind and content it was created with, and stays when its
content is updated; until this revision, duplicates were detected by id, so after an update
adding the new text stored a second record and adding the old text found a record that no
longer said it. This revision adds `memory_records.identity_hash` (16 hex digits of
sha256(scope, kind and whitespace-normalised content), kept current by every write) with a
unique index, without touching the evidence tables.

Existing stores may hold records that say the same (a record updated to the text of another,
or added again after such an update). Nothing is merged, changed or lost: one record of each
group holds the identity, the record whose id was made from that very text if there is one,
else active before archived before superseded, then the oldest, then the smallest id; the
others keep `identity_hash` NULL, and `lantern db check` lists them as warnings.

The hash and the choice repeat small rules of `lantern.store.ids` and
`lantern.memory.identity` on purpose, so that this revision keeps working whatever later code
does; a test checks that they agree. Identities are computed in batches by id, so memory stays
bounded on a large store.

Revision ID: 0006
Revises: 0005
Create Date: 2026-12-01
"""

import re
from collections.abc import Sequence
from hashlib import sha256

import sqlalchemy as sa

from alembic import op

revision: str = "0006"
down_revision: str | None = "0005"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

INDEX = "ix_memory_records_identity_hash"
STATUS_RANK = {"active": 0, "archived": 1, "superseded": 2}
BATCH = 2_000
_WHITESPACE = re.compile(r"\s+")


def upgrade() -> None:
    bind = op.get_bind()
    op.add_column("memory_records", sa.Column("identity_hash", sa.Text(), nullable=True))
    _fill(bind)
    _unclaim_duplicates(bind)
    op.create_index(INDEX, "memory_records", ["identity_hash"], unique=True)


def downgrade() -> None:
    op.drop_index(INDEX, table_name="memory_records")
    # SQLite (3.35 and later) and PostgreSQL both drop a column in place.
    op.execute("ALTER TABLE memory_records DROP COLUMN identity_hash")


def _identity(scope: str, kind: str, content: str) -> str:
    normalized = _WHITESPACE.sub(" ", content).strip()
    return sha256(f"{scope}\n{kind}\n{normalized}".encode()).hexdigest()[:16]


def _fill(bind: sa.Connection) -> None:
    """Every record's identity, a batch of ids at a time."""
    select = sa.text(
        "SELECT id, scope, kind, content FROM memory_records WHERE id > :after "
        "ORDER BY id LIMIT :batch"
    )
    fill = sa.text("UPDATE memory_records SET identity_hash = :identity WHERE id = :id")
    after = ""
    while True:
        rows = bind.execute(select, {"after": after, "batch": BATCH}).all()
        if not rows:
            return
        bind.execute(
            fill,
            [
                {"id": record_id, "identity": _identity(scope, kind, content)}
                for record_id, scope, kind, content in rows
            ],
        )
        after = rows[-1][0]


def _unclaim_duplicates(bind: sa.Connection) -> None:
    """In each group of records that say the same, all but one give the identity up."""
    rows = bind.execute(
        sa.text(
            "SELECT identity_hash, id, status, created_at FROM memory_records "
            "WHERE identity_hash IN (SELECT identity_hash FROM memory_records "
            "GROUP BY identity_hash HAVING count(*) > 1)"
        )
    ).all()
    groups: dict[str, list[tuple[object, ...]]] = {}
    for identity, record_id, status, created_at in rows:
        groups.setdefault(identity, []).append(
            _claim_order(record_id, identity, status, created_at)
        )
    unclaimed = [{"id": rank[-1]} for ranks in groups.values() for rank in sorted(ranks)[1:]]
    if unclaimed:
        bind.execute(
            sa.text("UPDATE memory_records SET identity_hash = NULL WHERE id = :id"), unclaimed
        )


def _claim_order(record_id: str, identity: str, status: str, created_at: int) -> tuple[object, ...]:
    """Which of the records that say the same holds the identity: the smallest."""
    return (record_id != "mem_" + identity, STATUS_RANK.get(status, 3), created_at, record_id)
