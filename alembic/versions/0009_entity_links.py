"""Entities found by extraction and given by the caller: links to memory records, scans.

Generation-2 stores already hold `entities` and `chunk_entities`; Lantern now fills them. This
revision adds what that needs, without touching a row of the legacy tables:

* `memory_entities`: which entities a memory record is about (the caller's links), removed
  with the record or the entity;
* `entity_scans`: which chunks the extractor has read, and which version of its rules did,
  so that `lantern entity extract` fills the links of stored chunks incrementally and can
  resume; removed with the chunk;
* two indexes on the legacy tables, built once (an index is not a rebuild of its table):
  `chunk_entities (entity_id, chunk_id)`, for the chunks of an entity, and
  `entities (kind, name)`, for listings by kind.

Revision ID: 0009
Revises: 0007
Create Date: 2026-12-14
"""

from collections.abc import Sequence

import sqlalchemy as sa

from alembic import op

revision: str = "0009"
down_revision: str | None = "0007"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "memory_entities",
        sa.Column("record_id", sa.Text(), nullable=False),
        sa.Column("entity_id", sa.Text(), nullable=False),
        sa.PrimaryKeyConstraint("record_id", "entity_id", name=op.f("pk_memory_entities")),
        sa.ForeignKeyConstraint(
            ["record_id"],
            ["memory_records.id"],
            name=op.f("fk_memory_entities_record_id_memory_records"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["entity_id"],
            ["entities.id"],
            name=op.f("fk_memory_entities_entity_id_entities"),
            ondelete="CASCADE",
        ),
    )
    op.create_index("ix_memory_entities_entity_id", "memory_entities", ["entity_id", "record_id"])
    op.create_table(
        "entity_scans",
        sa.Column("chunk_id", sa.Text(), nullable=False),
        sa.Column("extractor", sa.Integer(), nullable=False),
        sa.PrimaryKeyConstraint("chunk_id", name=op.f("pk_entity_scans")),
        sa.ForeignKeyConstraint(
            ["chunk_id"],
            ["chunks.id"],
            name=op.f("fk_entity_scans_chunk_id_chunks"),
            ondelete="CASCADE",
        ),
    )
    op.create_index("ix_chunk_entities_entity_id", "chunk_entities", ["entity_id", "chunk_id"])
    op.create_index("ix_entities_kind", "entities", ["kind", "name"])


def downgrade() -> None:
    op.drop_index("ix_entities_kind", table_name="entities")
    op.drop_index("ix_chunk_entities_entity_id", table_name="chunk_entities")
    op.drop_table("entity_scans")
    op.drop_index("ix_memory_entities_entity_id", table_name="memory_entities")
    op.drop_table("memory_entities")
