"""Evidence tables of legacy generation 1: sources, chunks and their full-text index.

Stores made before Lantern used Alembic are at this revision already (PRAGMA user_version 1);
they are adopted by stamping, never by running this script. On SQLite a new store gets the exact
generation-1 DDL, so that stores old and new are alike for every tool that reads them.

Revision ID: 0001
Revises:
Create Date: 2026-11-30
"""

from collections.abc import Sequence

import sqlalchemy as sa
from sqlalchemy.dialects import postgresql

from alembic import op

revision: str = "0001"
down_revision: str | None = None
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

SQLITE_DDL = (
    """CREATE TABLE sources (
    id           TEXT PRIMARY KEY,
    uri          TEXT NOT NULL UNIQUE,
    kind         TEXT NOT NULL,
    title        TEXT,
    content_hash TEXT NOT NULL,
    metadata     TEXT DEFAULT '{}',
    created_at   INTEGER NOT NULL,
    updated_at   INTEGER NOT NULL
)""",
    """CREATE TABLE chunks (
    id           TEXT PRIMARY KEY,
    source_id    TEXT NOT NULL REFERENCES sources(id) ON DELETE CASCADE,
    ordinal      INTEGER NOT NULL,
    text         TEXT NOT NULL,
    start_offset INTEGER,
    end_offset   INTEGER,
    metadata     TEXT DEFAULT '{}',
    created_at   INTEGER NOT NULL,
    UNIQUE (source_id, ordinal)
)""",
    "CREATE INDEX idx_chunks_source ON chunks(source_id)",
    "CREATE VIRTUAL TABLE chunks_fts USING fts5(text, content='chunks', content_rowid='rowid')",
    """CREATE TRIGGER chunks_ai AFTER INSERT ON chunks BEGIN
    INSERT INTO chunks_fts(rowid, text) VALUES (new.rowid, new.text);
END""",
    """CREATE TRIGGER chunks_ad AFTER DELETE ON chunks BEGIN
    INSERT INTO chunks_fts(chunks_fts, rowid, text) VALUES ('delete', old.rowid, old.text);
END""",
    """CREATE TRIGGER chunks_au AFTER UPDATE ON chunks BEGIN
    INSERT INTO chunks_fts(chunks_fts, rowid, text) VALUES ('delete', old.rowid, old.text);
    INSERT INTO chunks_fts(rowid, text) VALUES (new.rowid, new.text);
END""",
)


def upgrade() -> None:
    if op.get_bind().dialect.name == "sqlite":
        for statement in SQLITE_DDL:
            op.execute(statement)
        return
    time_type = sa.BigInteger()  # unix seconds past 2038
    op.create_table(
        "sources",
        sa.Column("id", sa.Text(), nullable=False),
        sa.Column("uri", sa.Text(), nullable=False),
        sa.Column("kind", sa.Text(), nullable=False),
        sa.Column("title", sa.Text(), nullable=True),
        sa.Column("content_hash", sa.Text(), nullable=False),
        sa.Column("metadata", postgresql.JSONB(), nullable=True, server_default=sa.text("'{}'")),
        sa.Column("created_at", time_type, nullable=False),
        sa.Column("updated_at", time_type, nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_sources")),
        sa.UniqueConstraint("uri", name=op.f("uq_sources_uri")),
    )
    op.create_table(
        "chunks",
        sa.Column("id", sa.Text(), nullable=False),
        sa.Column("source_id", sa.Text(), nullable=False),
        sa.Column("ordinal", sa.Integer(), nullable=False),
        sa.Column("text", sa.Text(), nullable=False),
        sa.Column("start_offset", sa.Integer(), nullable=True),
        sa.Column("end_offset", sa.Integer(), nullable=True),
        sa.Column("metadata", postgresql.JSONB(), nullable=True, server_default=sa.text("'{}'")),
        sa.Column("created_at", time_type, nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_chunks")),
        sa.ForeignKeyConstraint(
            ["source_id"],
            ["sources.id"],
            name=op.f("fk_chunks_source_id_sources"),
            ondelete="CASCADE",
        ),
        sa.UniqueConstraint("source_id", "ordinal", name=op.f("uq_chunks_source_id_ordinal")),
    )
    op.create_index(op.f("idx_chunks_source"), "chunks", ["source_id"])


def downgrade() -> None:
    if op.get_bind().dialect.name == "sqlite":
        for trigger in ("chunks_au", "chunks_ad", "chunks_ai"):
            op.execute(f"DROP TRIGGER {trigger}")
        op.execute("DROP TABLE chunks_fts")
    op.drop_index("idx_chunks_source", table_name="chunks")
    op.drop_table("chunks")
    op.drop_table("sources")
