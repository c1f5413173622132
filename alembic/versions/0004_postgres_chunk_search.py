"""Keyword search over chunks on PostgreSQL: a tsvector kept current by the database.

SQLite stores have had their FTS5 index (`chunks_fts`) since generation 1, so this revision does
nothing there. On PostgreSQL a generated column holds each chunk's `to_tsvector('simple', text)`
and a GIN index serves matching; ranking reads the stored vector instead of recomputing it.

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-30
"""

from collections.abc import Sequence

from alembic import op

revision: str = "0004"
down_revision: str | None = "0003"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    if op.get_bind().dialect.name != "postgresql":
        return
    op.execute(
        "ALTER TABLE chunks ADD COLUMN text_tsv tsvector "
        "GENERATED ALWAYS AS (to_tsvector('simple', text)) STORED"
    )
    op.execute("CREATE INDEX ix_chunks_text_tsv ON chunks USING GIN (text_tsv)")


def downgrade() -> None:
    if op.get_bind().dialect.name != "postgresql":
        return
    op.execute("DROP INDEX ix_chunks_text_tsv")
    op.execute("ALTER TABLE chunks DROP COLUMN text_tsv")
