"""Semantic recall: vectors of memory records, the store's embedding settings, and the lookups
both need.

* `memory_embeddings`: one vector per record and model (primary key `(memory_id, model)`), as
  little-endian float32 bytes with its dimension, the sha256 of the text it was computed from
  (so that a vector whose record changed since is known to be stale) and when it was made. It
  goes with its record (`ON DELETE CASCADE`); Lantern also deletes it explicitly when a record
  is forgotten or its content changes.
* `store_settings`: a small key/value table. It holds the store's default embedding provider
  (`embed.model`), whether writes embed (`embed.on_write`), and one token per kind of vector
  (`vectors.memory`, `vectors.chunks`) that every write of such vectors replaces in its own
  transaction, so that a process holding vectors in memory knows with one look-up whether they
  are still current. The tokens start random, so that two stores never share one.
* `ix_embeddings_model` and `ix_memory_embeddings_model`: the vectors of one model are loaded,
  counted and looked for without reading every vector of every model. Creating an index does
  not rebuild the legacy `embeddings` table, whose vectors stay exactly as they were: older
  stores' vectors are used as they are.

Revision ID: 0008
Revises: 0007
Create Date: 2026-12-14
"""

import secrets
from collections.abc import Sequence

import sqlalchemy as sa

from alembic import op

revision: str = "0008"
down_revision: str | None = "0007"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

TOKENS = ("vectors.memory", "vectors.chunks")


def upgrade() -> None:
    time_type = sa.Integer().with_variant(sa.BigInteger(), "postgresql")
    op.create_table(
        "memory_embeddings",
        sa.Column("memory_id", sa.Text(), nullable=False),
        sa.Column("model", sa.Text(), nullable=False),
        sa.Column("dim", sa.Integer(), nullable=False),
        sa.Column("vector", sa.LargeBinary(), nullable=False),
        sa.Column("text_hash", sa.Text(), nullable=False),
        sa.Column("created_at", time_type, nullable=False),
        sa.PrimaryKeyConstraint("memory_id", "model", name=op.f("pk_memory_embeddings")),
        sa.ForeignKeyConstraint(
            ["memory_id"],
            ["memory_records.id"],
            name=op.f("fk_memory_embeddings_memory_id_memory_records"),
            ondelete="CASCADE",
        ),
    )
    op.create_index("ix_memory_embeddings_model", "memory_embeddings", ["model"])
    op.create_index("ix_embeddings_model", "embeddings", ["model"])
    settings = op.create_table(
        "store_settings",
        sa.Column("key", sa.Text(), nullable=False),
        sa.Column("value", sa.Text(), nullable=False),
        sa.PrimaryKeyConstraint("key", name=op.f("pk_store_settings")),
    )
    op.bulk_insert(settings, [{"key": key, "value": secrets.token_hex(8)} for key in TOKENS])


def downgrade() -> None:
    op.drop_table("store_settings")
    op.drop_index("ix_embeddings_model", table_name="embeddings")
    op.drop_index("ix_memory_embeddings_model", table_name="memory_embeddings")
    op.drop_table("memory_embeddings")
