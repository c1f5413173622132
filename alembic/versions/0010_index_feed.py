"""A feed of what changed, for the indexes derived beside the store.

Top-k indexes for words and vectors live outside the database (`lantern.indexes`) and must
learn of every committed change, whichever code wrote it: the repositories, an import, a
migration, or a tool of the user's own. Triggers append one row to `index_feed` per change
that such an index reads, in the writing transaction, so the feed is complete by construction:

* `memory` for a record inserted, deleted, or changed in its content, scope, kind or status;
* `memory_vector` for a record's vector of one model (`model`) written, replaced or removed.

An index remembers the last `seq` it has applied and catches up from there. Nothing existing
is rewritten: the table starts empty, and an index is first built from the tables themselves.

Revision ID: 0010
Revises: 0009
Create Date: 2026-12-02
"""

from collections.abc import Sequence

import sqlalchemy as sa

from alembic import op

revision: str = "0010"
down_revision: str | None = "0009"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_FEED = "INSERT INTO index_feed (side, item_id, model) VALUES"
_SQLITE_TRIGGERS = {
    "memory_records_feed_insert": f"""CREATE TRIGGER memory_records_feed_insert
        AFTER INSERT ON memory_records
        BEGIN {_FEED} ('memory', NEW.id, NULL); END""",
    "memory_records_feed_update": f"""CREATE TRIGGER memory_records_feed_update
        AFTER UPDATE OF content, scope, kind, status ON memory_records
        WHEN NEW.content IS NOT OLD.content OR NEW.scope IS NOT OLD.scope
            OR NEW.kind IS NOT OLD.kind OR NEW.status IS NOT OLD.status
        BEGIN {_FEED} ('memory', NEW.id, NULL); END""",
    "memory_records_feed_delete": f"""CREATE TRIGGER memory_records_feed_delete
        AFTER DELETE ON memory_records
        BEGIN {_FEED} ('memory', OLD.id, NULL); END""",
    "memory_embeddings_feed_insert": f"""CREATE TRIGGER memory_embeddings_feed_insert
        AFTER INSERT ON memory_embeddings
        BEGIN {_FEED} ('memory_vector', NEW.memory_id, NEW.model); END""",
    "memory_embeddings_feed_update": f"""CREATE TRIGGER memory_embeddings_feed_update
        AFTER UPDATE ON memory_embeddings
        BEGIN {_FEED} ('memory_vector', NEW.memory_id, NEW.model); END""",
    "memory_embeddings_feed_delete": f"""CREATE TRIGGER memory_embeddings_feed_delete
        AFTER DELETE ON memory_embeddings
        BEGIN {_FEED} ('memory_vector', OLD.memory_id, OLD.model); END""",
}
_POSTGRES_FUNCTIONS = {
    "memory_records_feed": f"""CREATE FUNCTION memory_records_feed() RETURNS trigger
        LANGUAGE plpgsql AS $$
        BEGIN
            IF TG_OP = 'DELETE' THEN
                {_FEED} ('memory', OLD.id, NULL);
            ELSIF TG_OP = 'INSERT' OR NEW.content IS DISTINCT FROM OLD.content
                    OR NEW.scope IS DISTINCT FROM OLD.scope OR NEW.kind IS DISTINCT FROM OLD.kind
                    OR NEW.status IS DISTINCT FROM OLD.status THEN
                {_FEED} ('memory', NEW.id, NULL);
            END IF;
            RETURN NULL;
        END $$""",
    "memory_embeddings_feed": f"""CREATE FUNCTION memory_embeddings_feed() RETURNS trigger
        LANGUAGE plpgsql AS $$
        BEGIN
            IF TG_OP = 'DELETE' THEN
                {_FEED} ('memory_vector', OLD.memory_id, OLD.model);
            ELSE
                {_FEED} ('memory_vector', NEW.memory_id, NEW.model);
            END IF;
            RETURN NULL;
        END $$""",
}
_POSTGRES_TRIGGERS = {
    "memory_records_feed": "memory_records",
    "memory_embeddings_feed": "memory_embeddings",
}


def upgrade() -> None:
    op.create_table(
        "index_feed",
        sa.Column("seq", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("side", sa.Text(), nullable=False),
        sa.Column("item_id", sa.Text(), nullable=False),
        sa.Column("model", sa.Text(), nullable=True),
        sa.PrimaryKeyConstraint("seq", name=op.f("pk_index_feed")),
        sqlite_autoincrement=True,
    )
    op.create_index("ix_index_feed_side", "index_feed", ["side", "seq"])
    if op.get_bind().dialect.name == "sqlite":
        for statement in _SQLITE_TRIGGERS.values():
            op.execute(statement)
        return
    for statement in _POSTGRES_FUNCTIONS.values():
        op.execute(statement)
    for name, table in _POSTGRES_TRIGGERS.items():
        op.execute(
            f"CREATE TRIGGER {name} AFTER INSERT OR UPDATE OR DELETE ON {table} "
            f"FOR EACH ROW EXECUTE FUNCTION {name}()"
        )


def downgrade() -> None:
    if op.get_bind().dialect.name == "sqlite":
        for name in _SQLITE_TRIGGERS:
            op.execute(f"DROP TRIGGER {name}")
    else:
        for name, table in _POSTGRES_TRIGGERS.items():
            op.execute(f"DROP TRIGGER {name} ON {table}")
            op.execute(f"DROP FUNCTION {name}()")
    op.drop_index("ix_index_feed_side", table_name="index_feed")
    op.drop_table("index_feed")
