"""Memory history, references and keyword search.

Adds, without touching the evidence tables:

* `memory_history`: one row per change to a memory record, appended and never rewritten.
  Triggers refuse UPDATE, TRUNCATE and DELETE, except the DELETE `memory forget` needs: the
  earlier entries of a record that no longer exists and has a `forgotten` entry (which itself can
  never be removed), so that a secret stored by mistake can leave the store for good.
* `memory_refs`: the `(type, id)` of every reference a record holds, for "which memories cite
  this chunk" and "which references dangle" as index lookups.
* keyword search over memory content: on SQLite a regular FTS5 table `memory_fts` (it keeps
  its own copy of the text, so a row can be deleted by rowid alone) whose rowid is derived from
  the record id, which VACUUM cannot renumber; on PostgreSQL a generated `content_tsv` column
  with a GIN index.
* an index on `(status, expires_at)` for `memory expire`.

Records that exist before this revision get their references and search rows here; their
history starts empty (what they looked like when created is not known, and inventing a
`created` entry from today's values would misreport it).

The backfill repeats two small rules of `lantern.memory.fts` and `lantern.memory.refs` on
purpose, so that this revision keeps working whatever later code does; a test checks that they
agree.

Revision ID: 0005
Revises: 0004
Create Date: 2026-11-30
"""

import json
from collections.abc import Sequence
from hashlib import sha256
from typing import Any

import sqlalchemy as sa
from sqlalchemy.dialects import postgresql

from alembic import op

revision: str = "0005"
down_revision: str | None = "0004"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

EVENTS = ("created", "updated", "archived", "restored", "superseded", "expired", "forgotten")
APPEND_ONLY = "memory_history is append-only: its entries cannot be changed or removed"

SQLITE_GUARDS = (
    f"""CREATE TRIGGER memory_history_no_update BEFORE UPDATE ON memory_history
BEGIN
    SELECT RAISE(ABORT, '{APPEND_ONLY}');
END""",
    f"""CREATE TRIGGER memory_history_no_delete BEFORE DELETE ON memory_history
WHEN old.event = 'forgotten'
    OR EXISTS (SELECT 1 FROM memory_records WHERE id = old.record_id)
    OR NOT EXISTS (
        SELECT 1 FROM memory_history WHERE record_id = old.record_id AND event = 'forgotten'
    )
BEGIN
    SELECT RAISE(ABORT, '{APPEND_ONLY}');
END""",
)

POSTGRES_GUARDS = (
    f"""CREATE FUNCTION memory_history_guard() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'DELETE' THEN
        IF OLD.event <> 'forgotten'
            AND NOT EXISTS (SELECT 1 FROM memory_records WHERE id = OLD.record_id)
            AND EXISTS (
                SELECT 1 FROM memory_history
                WHERE record_id = OLD.record_id AND event = 'forgotten'
            )
        THEN
            RETURN OLD;
        END IF;
    END IF;
    RAISE EXCEPTION '{APPEND_ONLY}';
END
$$""",
    "CREATE TRIGGER memory_history_append_only BEFORE UPDATE OR DELETE ON memory_history "
    "FOR EACH ROW EXECUTE FUNCTION memory_history_guard()",
    "CREATE TRIGGER memory_history_no_truncate BEFORE TRUNCATE ON memory_history "
    "FOR EACH STATEMENT EXECUTE FUNCTION memory_history_guard()",
)


def upgrade() -> None:
    bind = op.get_bind()
    sqlite = bind.dialect.name == "sqlite"
    json_type = sa.Text() if sqlite else postgresql.JSONB()
    time_type = sa.Integer() if sqlite else sa.BigInteger()  # unix seconds past 2038
    op.create_table(
        "memory_history",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("record_id", sa.Text(), nullable=False),
        sa.Column("event", sa.Text(), nullable=False),
        sa.Column("at", time_type, nullable=False),
        sa.Column("changes", json_type, nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_memory_history")),
        sa.CheckConstraint(
            "event IN (" + ", ".join(f"'{event}'" for event in EVENTS) + ")",
            name=op.f("ck_memory_history_event"),
        ),
        sqlite_autoincrement=True,
    )
    op.create_index(op.f("ix_memory_history_record_id"), "memory_history", ["record_id", "id"])
    op.create_table(
        "memory_refs",
        sa.Column("record_id", sa.Text(), nullable=False),
        sa.Column("ref_type", sa.Text(), nullable=False),
        sa.Column("ref_id", sa.Text(), nullable=False),
        sa.PrimaryKeyConstraint("record_id", "ref_type", "ref_id", name=op.f("pk_memory_refs")),
        sa.ForeignKeyConstraint(
            ["record_id"],
            ["memory_records.id"],
            name=op.f("fk_memory_refs_record_id_memory_records"),
            ondelete="CASCADE",
        ),
    )
    op.create_index(
        op.f("ix_memory_refs_ref_type"), "memory_refs", ["ref_type", "ref_id", "record_id"]
    )
    op.create_index(
        op.f("ix_memory_records_status_expires_at"), "memory_records", ["status", "expires_at"]
    )
    for statement in SQLITE_GUARDS if sqlite else POSTGRES_GUARDS:
        op.execute(statement)
    if sqlite:
        op.execute("CREATE VIRTUAL TABLE memory_fts USING fts5(record_id UNINDEXED, content)")
    else:
        op.execute(
            "ALTER TABLE memory_records ADD COLUMN content_tsv tsvector "
            "GENERATED ALWAYS AS (to_tsvector('simple', content)) STORED"
        )
        op.execute(
            "CREATE INDEX ix_memory_records_content_tsv ON memory_records USING GIN (content_tsv)"
        )
    _backfill(bind, sqlite)


def downgrade() -> None:
    sqlite = op.get_bind().dialect.name == "sqlite"
    if sqlite:
        op.execute("DROP TABLE memory_fts")
        op.execute("DROP TRIGGER memory_history_no_delete")
        op.execute("DROP TRIGGER memory_history_no_update")
    else:
        op.execute("DROP INDEX ix_memory_records_content_tsv")
        op.execute("ALTER TABLE memory_records DROP COLUMN content_tsv")
        op.execute("DROP TRIGGER memory_history_no_truncate ON memory_history")
        op.execute("DROP TRIGGER memory_history_append_only ON memory_history")
        op.execute("DROP FUNCTION memory_history_guard()")
    op.drop_index("ix_memory_records_status_expires_at", table_name="memory_records")
    op.drop_index("ix_memory_refs_ref_type", table_name="memory_refs")
    op.drop_table("memory_refs")
    op.drop_index("ix_memory_history_record_id", table_name="memory_history")
    op.drop_table("memory_history")


def _backfill(bind: sa.Connection, sqlite: bool) -> None:
    """References (both engines) and search rows (SQLite) for the records stored so far."""
    rows = bind.execute(sa.text("SELECT id, content, source_refs FROM memory_records")).all()
    refs = {
        (record_id, ref["type"], ref["id"])
        for record_id, _content, stored in rows
        for ref in _loaded(stored)
        if isinstance(ref, dict)
        and isinstance(ref.get("type"), str)
        and isinstance(ref.get("id"), str)
        and ref["type"]
        and ref["id"]
    }
    if refs:
        bind.execute(
            sa.text(
                "INSERT INTO memory_refs (record_id, ref_type, ref_id) "
                "VALUES (:record_id, :ref_type, :ref_id)"
            ),
            [
                {"record_id": record_id, "ref_type": ref_type, "ref_id": ref_id}
                for record_id, ref_type, ref_id in sorted(refs)
            ],
        )
    if sqlite and rows:
        # In rowid order: FTS5 flushes its buffer whenever a rowid goes backwards.
        search_rows = sorted(
            (
                {"rowid": _fts_rowid(record_id), "record_id": record_id, "content": content}
                for record_id, content, _stored in rows
            ),
            key=lambda row: row["rowid"],
        )
        bind.execute(
            sa.text(
                "INSERT INTO memory_fts (rowid, record_id, content) "
                "VALUES (:rowid, :record_id, :content)"
            ),
            search_rows,
        )


def _loaded(stored: Any) -> list[Any]:
    if stored is None or stored == "":
        return []
    value = json.loads(stored) if isinstance(stored, str) else stored
    return value if isinstance(value, list) else []


def _fts_rowid(record_id: str) -> int:
    """The signed 64-bit number in a `mem_` id's 16 hex digits (sha256 for any other id)."""
    digits = record_id[4:]
    if not (record_id.startswith("mem_") and len(digits) == 16 and _is_hex(digits)):
        digits = sha256(record_id.encode("utf-8")).hexdigest()[:16]
    number = int(digits, 16)
    return number - (1 << 64) if number >= 1 << 63 else number


def _is_hex(text: str) -> bool:
    return all(char in "0123456789abcdef" for char in text)
