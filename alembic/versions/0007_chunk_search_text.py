"""Chunks searched by what they say: a searchable text per chunk where it differs from the text.

A transcript chunk is a slice of JSON (`{"role": "user", "content": "caf\\u00e9..."}`) and was
indexed as such: every chunk matched `role`, `\\n` made words like `nthen`, and text written
with ASCII escapes was found only by its escapes. `chunk_search_text` now holds, for the chunks
whose searchable text differs from their text (the decoded turns of a transcript chunk, see
`lantern.evidence.searchtext`), that text; other chunks are searched by their own text. The
`chunks` and `sources` tables are not touched.

* SQLite: a view `chunk_search` gives each chunk's rowid and searchable text
  (`coalesce(chunk_search_text.text, chunks.text)`); `chunks_fts` is recreated as an
  external-content index of that view and rebuilt once; the legacy triggers `chunks_ai`,
  `chunks_ad` and `chunks_au` are recreated to index the searchable text, looked up by chunk id,
  so that a tool that inserts plain chunks still keeps the index current, and `chunks_ad` also
  removes the chunk's row. Lantern writes a chunk's row before the chunk, so that the insert
  trigger finds it. The table has no foreign key here: SQLite runs a cascade before `AFTER`
  triggers, and `chunks_ad` must read the row to remove the chunk's index entry.
* PostgreSQL: the same table, with a foreign key to `chunks` (cascading deletes; checked at
  commit, since rows are written before their chunks), a generated `text_tsv` column and a GIN
  index on it; the search statement matches `chunks.text_tsv` for chunks without a row and the
  row's vector for chunks with one.

The rows are derived with `lantern.evidence.searchtext.search_text`, imported rather than
copied (revision 0005 copies its small rules): the decoder is the larger part, and a derived
index should hold what the running Lantern derives, which is also what `db rebuild-index`
recomputes. A test runs this revision on every run of the suite, so a change that breaks the
import shows at once. The SQL here is this revision's own.

Revision ID: 0007
Revises: 0006
Create Date: 2026-12-07
"""

from collections.abc import Sequence

import sqlalchemy as sa
from sqlalchemy.dialects import postgresql

from alembic import op
from lantern.evidence.searchtext import KINDS_WITH_SEARCH_TEXT, search_text

revision: str = "0007"
down_revision: str | None = "0006"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_SEARCHABLE = "coalesce((SELECT text FROM chunk_search_text WHERE chunk_id = {row}.id), {row}.text)"

SQLITE_DDL = (
    """CREATE VIEW chunk_search AS
SELECT chunks.rowid AS rowid, coalesce(chunk_search_text.text, chunks.text) AS text
FROM chunks LEFT JOIN chunk_search_text ON chunk_search_text.chunk_id = chunks.id""",
    "CREATE VIRTUAL TABLE chunks_fts USING fts5(text, content='chunk_search', "
    "content_rowid='rowid')",
    "INSERT INTO chunks_fts (chunks_fts) VALUES ('rebuild')",
    f"""CREATE TRIGGER chunks_ai AFTER INSERT ON chunks BEGIN
    INSERT INTO chunks_fts(rowid, text) VALUES (new.rowid, {_SEARCHABLE.format(row="new")});
END""",
    f"""CREATE TRIGGER chunks_ad AFTER DELETE ON chunks BEGIN
    INSERT INTO chunks_fts(chunks_fts, rowid, text)
        VALUES ('delete', old.rowid, {_SEARCHABLE.format(row="old")});
    DELETE FROM chunk_search_text WHERE chunk_id = old.id;
END""",
    f"""CREATE TRIGGER chunks_au AFTER UPDATE ON chunks BEGIN
    INSERT INTO chunks_fts(chunks_fts, rowid, text)
        VALUES ('delete', old.rowid, {_SEARCHABLE.format(row="old")});
    DELETE FROM chunk_search_text
        WHERE chunk_id = old.id AND (new.id IS NOT old.id OR new.text IS NOT old.text);
    INSERT INTO chunks_fts(rowid, text) VALUES (new.rowid, {_SEARCHABLE.format(row="new")});
END""",
)
"""After the table is filled: the view, the index over it, and the triggers that keep it."""

LEGACY_CHUNK_INDEX = (
    "CREATE VIRTUAL TABLE chunks_fts USING fts5(text, content='chunks', content_rowid='rowid')",
    "INSERT INTO chunks_fts (chunks_fts) VALUES ('rebuild')",
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
"""Generation 1's index and triggers (revision 0001), for the downgrade."""

_BATCH_SOURCES = 500


def upgrade() -> None:
    bind = op.get_bind()
    sqlite = bind.dialect.name == "sqlite"
    columns = [
        sa.Column("chunk_id", sa.Text(), nullable=False),
        sa.Column("text", sa.Text(), nullable=False),
        sa.PrimaryKeyConstraint("chunk_id", name=op.f("pk_chunk_search_text")),
    ]
    if not sqlite:
        columns += [
            sa.Column(
                "text_tsv",
                postgresql.TSVECTOR(),
                sa.Computed("to_tsvector('simple', text)", persisted=True),
            ),
            sa.ForeignKeyConstraint(
                ["chunk_id"],
                ["chunks.id"],
                name=op.f("fk_chunk_search_text_chunk_id_chunks"),
                ondelete="CASCADE",
                deferrable=True,
                initially="DEFERRED",
            ),
        ]
    op.create_table("chunk_search_text", *columns)
    _fill(bind)
    if sqlite:
        for trigger in ("chunks_au", "chunks_ad", "chunks_ai"):
            op.execute(f"DROP TRIGGER {trigger}")
        op.execute("DROP TABLE chunks_fts")
        for statement in SQLITE_DDL:
            op.execute(statement)
        return
    # The rows' deferred foreign key checks are pending; an index cannot be built over a table
    # with pending checks, so they run now (every row has its chunk).
    op.execute("SET CONSTRAINTS fk_chunk_search_text_chunk_id_chunks IMMEDIATE")
    op.execute(
        "CREATE INDEX ix_chunk_search_text_text_tsv ON chunk_search_text USING GIN (text_tsv)"
    )


def downgrade() -> None:
    if op.get_bind().dialect.name == "sqlite":
        for trigger in ("chunks_au", "chunks_ad", "chunks_ai"):
            op.execute(f"DROP TRIGGER {trigger}")
        op.execute("DROP TABLE chunks_fts")
        op.execute("DROP VIEW chunk_search")
        op.drop_table("chunk_search_text")
        for statement in LEGACY_CHUNK_INDEX:
            op.execute(statement)
        return
    op.drop_table("chunk_search_text")


def _fill(bind: sa.Connection) -> None:
    """A row for every stored chunk whose searchable text differs from its text, a few hundred
    sources at a time (a store may hold gigabytes of text)."""
    kinds = sa.bindparam("kinds", expanding=True)
    source_ids = list(
        bind.execute(
            sa.text("SELECT id FROM sources WHERE kind IN :kinds ORDER BY id").bindparams(kinds),
            {"kinds": list(KINDS_WITH_SEARCH_TEXT)},
        ).scalars()
    )
    chunks_of = sa.text(
        "SELECT chunks.id, sources.kind, chunks.text FROM chunks "
        "JOIN sources ON sources.id = chunks.source_id WHERE chunks.source_id IN :ids"
    ).bindparams(sa.bindparam("ids", expanding=True))
    insert = sa.text("INSERT INTO chunk_search_text (chunk_id, text) VALUES (:chunk_id, :text)")
    for start in range(0, len(source_ids), _BATCH_SOURCES):
        rows = bind.execute(chunks_of, {"ids": source_ids[start : start + _BATCH_SOURCES]})
        derived = [
            {"chunk_id": chunk_id, "text": searchable}
            for chunk_id, kind, text in rows
            if (searchable := search_text(kind, text)) is not None
        ]
        if derived:
            bind.execute(insert, derived)
