"""Memory records: explicit, durable state with lifecycle, priority, scope and references.

Only adds a table, so upgrading a store with a million chunks takes milliseconds.

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-30
"""

from collections.abc import Sequence

import sqlalchemy as sa
from sqlalchemy.dialects import postgresql

from alembic import op

revision: str = "0003"
down_revision: str | None = "0002"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

ORDER = ("priority DESC", "urgency DESC", "updated_at DESC", "id")


def upgrade() -> None:
    sqlite = op.get_bind().dialect.name == "sqlite"
    json_type = sa.Text() if sqlite else postgresql.JSONB()
    time_type = sa.Integer() if sqlite else sa.BigInteger()  # unix seconds past 2038
    op.create_table(
        "memory_records",
        sa.Column("id", sa.Text(), nullable=False),
        sa.Column("kind", sa.Text(), nullable=False),
        sa.Column("content", sa.Text(), nullable=False),
        sa.Column("scope", sa.Text(), nullable=False, server_default=sa.text("'global'")),
        sa.Column("priority", sa.Integer(), nullable=False, server_default=sa.text("50")),
        sa.Column("urgency", sa.Integer(), nullable=False, server_default=sa.text("0")),
        sa.Column("confidence", sa.Float(), nullable=False, server_default=sa.text("1.0")),
        sa.Column("status", sa.Text(), nullable=False, server_default=sa.text("'active'")),
        sa.Column("created_at", time_type, nullable=False),
        sa.Column("updated_at", time_type, nullable=False),
        sa.Column("expires_at", time_type, nullable=True),
        sa.Column("supersedes_id", sa.Text(), nullable=True),
        sa.Column("source_refs", json_type, nullable=False, server_default=sa.text("'[]'")),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_memory_records")),
        sa.ForeignKeyConstraint(
            ["supersedes_id"],
            ["memory_records.id"],
            name=op.f("fk_memory_records_supersedes_id_memory_records"),
            ondelete="SET NULL",
        ),
        sa.CheckConstraint(
            "kind IN ('fact', 'preference', 'goal', 'constraint', 'task_state', "
            "'observation', 'hypothesis')",
            name=op.f("ck_memory_records_kind"),
        ),
        sa.CheckConstraint(
            "status IN ('active', 'archived', 'superseded')", name=op.f("ck_memory_records_status")
        ),
        sa.CheckConstraint(
            "priority BETWEEN 0 AND 100", name=op.f("ck_memory_records_priority_range")
        ),
        sa.CheckConstraint(
            "urgency BETWEEN 0 AND 100", name=op.f("ck_memory_records_urgency_range")
        ),
        sa.CheckConstraint(
            "confidence >= 0.0 AND confidence <= 1.0",
            name=op.f("ck_memory_records_confidence_range"),
        ),
    )
    op.create_index(
        op.f("ix_memory_records_scope_order"),
        "memory_records",
        ["scope", "status", *(sa.text(column) for column in ORDER)],
    )
    op.create_index(
        op.f("ix_memory_records_status_order"),
        "memory_records",
        ["status", *(sa.text(column) for column in ORDER)],
    )
    op.create_index(
        op.f("ix_memory_records_supersedes_id"), "memory_records", ["supersedes_id"], unique=True
    )


def downgrade() -> None:
    op.drop_index("ix_memory_records_supersedes_id", table_name="memory_records")
    op.drop_index("ix_memory_records_status_order", table_name="memory_records")
    op.drop_index("ix_memory_records_scope_order", table_name="memory_records")
    op.drop_table("memory_records")
