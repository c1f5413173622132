"""The writing transaction of each change in the feed, on PostgreSQL.

On PostgreSQL a feed row's `seq` is drawn from a sequence when the row is inserted, but
transactions commit in their own order: a reader that has applied everything up to the
greatest `seq` it sees can still be missing a row with a lower `seq` whose transaction was in
flight and commits later. Each row now records its transaction (`xact`, `pg_current_xact_id()`),
so that a reader knows which rows may still appear below its mark: those of transactions at or
above the oldest one in flight when it read (`pg_snapshot_xmin`), see `lantern.indexes.feed`.

Rows written before this revision keep `xact` NULL: their transactions ended before the
upgrade committed. The column is added without a value and given its default afterwards, so
the table is not rewritten. SQLite serialises its writers, so its feed is read in `seq` order
as it is and nothing changes there.

Revision ID: 0013
Revises: 0012
Create Date: 2026-12-02
"""

from collections.abc import Sequence

from alembic import op

revision: str = "0013"
down_revision: str | None = "0012"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    if op.get_bind().dialect.name != "postgresql":
        return
    op.execute("ALTER TABLE index_feed ADD COLUMN xact xid8")
    op.execute("ALTER TABLE index_feed ALTER COLUMN xact SET DEFAULT pg_current_xact_id()")
    op.execute("CREATE INDEX ix_index_feed_xact ON index_feed (xact)")


def downgrade() -> None:
    if op.get_bind().dialect.name != "postgresql":
        return
    op.execute("DROP INDEX ix_index_feed_xact")
    op.execute("ALTER TABLE index_feed DROP COLUMN xact")
