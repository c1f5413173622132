"""When a chunk's words were said: `chunks.said_from` and `chunks.said_until`, in columns.

A search limited to last January must find what was said last January, however long ago it
was ingested: the ingest time (`chunks.created_at`) says nothing about that. A transcript's
turns carry their times, and each transcript chunk's metadata has held the first and last of
them (`first_ts`, `last_ts`) since the first generation; a file's source records the file's
modification time (`mtime`). Filtering by values inside JSON would parse every chunk's metadata
at query time, so the range goes into two nullable integer columns (unix seconds), each the
first column of an index that a time filter walks on SQLite and PostgreSQL alike.

The rule, the same one `lantern.evidence.said` applies at ingest (copied here so that this
revision keeps meaning what it meant when it was written):

* a transcript chunk: from the earlier to the later of its `first_ts` and `last_ts`, either
  alone when the other is missing; no time when neither is an integer;
* a chunk of any other source: its source's `mtime` (a point, from = until) when that is an
  integer; no time otherwise (text piped in, a store written by another tool).

Nothing is rewritten: the columns are added (SQLite's `ADD COLUMN` copies no row), and filled.
On SQLite, filling them would fire the legacy `chunks_au` trigger for every chunk, which
deletes and re-inserts the chunk's full-text entry although its text is unchanged; the trigger
is set aside while the columns are filled and recreated, from its own stored SQL, right after,
in the same transaction.

Revision ID: 0011
Revises: 0010
Create Date: 2026-12-02
"""

import json
from collections.abc import Iterable, Sequence
from typing import Any

import sqlalchemy as sa

from alembic import op

revision: str = "0011"
down_revision: str | None = "0010"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_INDEXES = {
    "ix_chunks_said_from": ["said_from", "said_until"],
    "ix_chunks_said_until": ["said_until"],
}
_BATCH_SOURCES = 500


def upgrade() -> None:
    bind = op.get_bind()
    sqlite = bind.dialect.name == "sqlite"
    time_type = sa.Integer() if sqlite else sa.BigInteger()
    op.add_column("chunks", sa.Column("said_from", time_type, nullable=True))
    op.add_column("chunks", sa.Column("said_until", time_type, nullable=True))
    trigger = None
    if sqlite:
        trigger = bind.exec_driver_sql(
            "SELECT sql FROM sqlite_master WHERE type = 'trigger' AND name = 'chunks_au'"
        ).scalar()
        if trigger is not None:
            op.execute("DROP TRIGGER chunks_au")
    _fill(bind)
    if trigger is not None:
        op.execute(trigger)
    for name, columns in _INDEXES.items():
        op.create_index(name, "chunks", columns)


def downgrade() -> None:
    for name in _INDEXES:
        op.drop_index(name, table_name="chunks")
    if op.get_bind().dialect.name == "sqlite":
        # DROP COLUMN rebuilds nothing either (SQLite 3.35 and later), and no trigger, view or
        # index other than this revision's names these columns.
        op.execute("ALTER TABLE chunks DROP COLUMN said_until")
        op.execute("ALTER TABLE chunks DROP COLUMN said_from")
        return
    op.drop_column("chunks", "said_until")
    op.drop_column("chunks", "said_from")


def _stamp(value: object) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return None


def _object(value: object) -> dict[str, Any]:
    if isinstance(value, str) and value:
        try:
            value = json.loads(value)
        except ValueError:
            return {}
    return value if isinstance(value, dict) else {}


def _transcript_range(metadata: object) -> tuple[int, int] | None:
    found = _object(metadata)
    stamps = [
        s for s in (_stamp(found.get("first_ts")), _stamp(found.get("last_ts"))) if s is not None
    ]
    if not stamps:
        return None
    return min(stamps), max(stamps)


def _batches(ids: list[str]) -> Iterable[list[str]]:
    return (ids[start : start + _BATCH_SOURCES] for start in range(0, len(ids), _BATCH_SOURCES))


def _fill(bind: sa.Connection) -> None:
    """Every chunk's range, a few hundred sources at a time (a store may hold millions)."""
    rows = bind.execute(sa.text("SELECT id, kind, metadata FROM sources ORDER BY id")).all()
    transcripts = [source for source, kind, _metadata in rows if kind == "transcript"]
    dated = [
        {"b_source": source, "b_at": at}
        for source, kind, metadata in rows
        if kind != "transcript" and (at := _stamp(_object(metadata).get("mtime"))) is not None
    ]
    if dated:
        bind.execute(
            sa.text(
                "UPDATE chunks SET said_from = :b_at, said_until = :b_at "
                "WHERE source_id = :b_source"
            ),
            dated,
        )
    chunks_of = sa.text("SELECT id, metadata FROM chunks WHERE source_id IN :ids").bindparams(
        sa.bindparam("ids", expanding=True)
    )
    update = sa.text(
        "UPDATE chunks SET said_from = :b_from, said_until = :b_until WHERE id = :b_id"
    )
    for batch in _batches(transcripts):
        ranges = [
            {"b_id": chunk, "b_from": found[0], "b_until": found[1]}
            for chunk, metadata in bind.execute(chunks_of, {"ids": batch})
            if (found := _transcript_range(metadata)) is not None
        ]
        if ranges:
            bind.execute(update, ranges)
