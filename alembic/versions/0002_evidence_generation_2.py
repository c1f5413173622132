"""Legacy generation 2: entities, their links to chunks, and stored embeddings.

Generation-2 stores (PRAGMA user_version 2) are adopted at this revision by stamping. Generation 2
also declared `metadata` NOT NULL; this revision does not rebuild `sources` or `chunks` to match
(that would copy every row), so stores keep the nullability they were created with.

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-30
"""

from collections.abc import Sequence

import sqlalchemy as sa

from alembic import op

revision: str = "0002"
down_revision: str | None = "0001"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

SQLITE_DDL = (
    """CREATE TABLE entities (
    id   TEXT PRIMARY KEY,
    name TEXT NOT NULL,
    kind TEXT NOT NULL,
    UNIQUE (name, kind)
)""",
    """CREATE TABLE chunk_entities (
    chunk_id  TEXT NOT NULL REFERENCES chunks(id) ON DELETE CASCADE,
    entity_id TEXT NOT NULL REFERENCES entities(id) ON DELETE CASCADE,
    PRIMARY KEY (chunk_id, entity_id)
)""",
    """CREATE TABLE embeddings (
    chunk_id TEXT PRIMARY KEY REFERENCES chunks(id) ON DELETE CASCADE,
    model    TEXT NOT NULL,
    dim      INTEGER NOT NULL,
    vector   BLOB NOT NULL
)""",
)


def upgrade() -> None:
    if op.get_bind().dialect.name == "sqlite":
        for statement in SQLITE_DDL:
            op.execute(statement)
        return
    op.create_table(
        "entities",
        sa.Column("id", sa.Text(), nullable=False),
        sa.Column("name", sa.Text(), nullable=False),
        sa.Column("kind", sa.Text(), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_entities")),
        sa.UniqueConstraint("name", "kind", name=op.f("uq_entities_name_kind")),
    )
    op.create_table(
        "chunk_entities",
        sa.Column("chunk_id", sa.Text(), nullable=False),
        sa.Column("entity_id", sa.Text(), nullable=False),
        sa.PrimaryKeyConstraint("chunk_id", "entity_id", name=op.f("pk_chunk_entities")),
        sa.ForeignKeyConstraint(
            ["chunk_id"],
            ["chunks.id"],
            name=op.f("fk_chunk_entities_chunk_id_chunks"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["entity_id"],
            ["entities.id"],
            name=op.f("fk_chunk_entities_entity_id_entities"),
            ondelete="CASCADE",
        ),
    )
    op.create_table(
        "embeddings",
        sa.Column("chunk_id", sa.Text(), nullable=False),
        sa.Column("model", sa.Text(), nullable=False),
        sa.Column("dim", sa.Integer(), nullable=False),
        sa.Column("vector", sa.LargeBinary(), nullable=False),
        sa.PrimaryKeyConstraint("chunk_id", name=op.f("pk_embeddings")),
        sa.ForeignKeyConstraint(
            ["chunk_id"],
            ["chunks.id"],
            name=op.f("fk_embeddings_chunk_id_chunks"),
            ondelete="CASCADE",
        ),
    )


def downgrade() -> None:
    op.drop_table("embeddings")
    op.drop_table("chunk_entities")
    op.drop_table("entities")
