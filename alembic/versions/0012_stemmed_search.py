"""Keyword search by English stems: the full-text indexes rebuilt with a stemmer.

`deadlocks`, `deadlocked` and `deadlock` were three words to the indexes, so a search for one
missed or ranked lower the text that used another. Each index now stores stems; the stored
texts are not touched, and every index is rebuilt from them (no text lives only in an index).

* SQLite: `memory_fts` and `chunks_fts` are recreated with FTS5's `porter` tokenizer around the
  `unicode61` tokenizer they used (its options as they were: diacritics removed), and filled
  from what they index: `memory_fts` from its own rows (a regular FTS5 table holding every
  record's content), `chunks_fts` by `rebuild` from the view `chunk_search`; the chunk triggers
  of revision 0007 are recreated around it unchanged. The old index is dropped with
  `secure_delete` on, so no page of it is left readable in the file.
* PostgreSQL: a text search configuration `lantern_english` (a copy of `simple` whose words go
  through a Snowball English stemmer without a stop-word list, `lantern_english_stem`): the
  built-in `english` configuration also drops stop words, which would make a query of common
  words match nothing and shift phrase positions, where `simple` matched them. The generated
  columns `chunks.text_tsv`, `chunk_search_text.text_tsv` and `memory_records.content_tsv`
  and their GIN indexes are recreated over it (a generated column's expression cannot be
  altered before PostgreSQL 17).

The downgrade puts back the unstemmed indexes the same way.

Revision ID: 0012
Revises: 0011
Create Date: 2026-12-02
"""

from collections.abc import Sequence

from alembic import op

revision: str = "0012"
down_revision: str | None = "0011"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

STEMMED = ", tokenize='porter unicode61 remove_diacritics 1'"
"""FTS5's `porter` around `unicode61` with its default options, spelled out."""
POSTGRES_CONFIG = "lantern_english"
POSTGRES_DICTIONARY = "lantern_english_stem"
_WORD_TOKENS = "asciiword, word, asciihword, hword, hword_asciipart, hword_part"
"""The parser's word token types: those `english` stems; numbers, URLs, paths and the other
types keep `simple`'s treatment."""
_POSTGRES_VECTORS = (
    ("chunks", "text", "text_tsv", "ix_chunks_text_tsv"),
    ("chunk_search_text", "text", "text_tsv", "ix_chunk_search_text_text_tsv"),
    ("memory_records", "content", "content_tsv", "ix_memory_records_content_tsv"),
)
_SEARCHABLE = "coalesce((SELECT text FROM chunk_search_text WHERE chunk_id = {row}.id), {row}.text)"
_CHUNK_TRIGGERS = (
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
"""Revision 0007's triggers, as they were."""


def upgrade() -> None:
    if op.get_bind().dialect.name == "sqlite":
        _sqlite_indexes(STEMMED)
        return
    op.execute(
        f"CREATE TEXT SEARCH DICTIONARY {POSTGRES_DICTIONARY} "
        "(TEMPLATE = pg_catalog.snowball, LANGUAGE = english)"
    )
    op.execute(f"CREATE TEXT SEARCH CONFIGURATION {POSTGRES_CONFIG} (COPY = pg_catalog.simple)")
    op.execute(
        f"ALTER TEXT SEARCH CONFIGURATION {POSTGRES_CONFIG} "
        f"ALTER MAPPING FOR {_WORD_TOKENS} WITH {POSTGRES_DICTIONARY}"
    )
    _postgres_vectors(POSTGRES_CONFIG)


def downgrade() -> None:
    if op.get_bind().dialect.name == "sqlite":
        _sqlite_indexes("")  # the DDL of revisions 0005 and 0007
        return
    _postgres_vectors("simple")
    op.execute(f"DROP TEXT SEARCH CONFIGURATION {POSTGRES_CONFIG}")
    op.execute(f"DROP TEXT SEARCH DICTIONARY {POSTGRES_DICTIONARY}")


def _sqlite_indexes(tokenize: str) -> None:
    """Both FTS5 indexes recreated with the `tokenize` option and filled from what they index.

    `memory_fts` is its own content: its rows wait in a temporary table while it is recreated
    under its own name (a renamed table's DDL would differ from a new store's)."""
    op.execute("PRAGMA secure_delete = ON")
    op.execute(
        "CREATE TEMP TABLE memory_fts_rows AS "
        "SELECT rowid AS fts_rowid, record_id, content FROM memory_fts"
    )
    op.execute("DROP TABLE memory_fts")
    op.execute(
        f"CREATE VIRTUAL TABLE memory_fts USING fts5(record_id UNINDEXED, content{tokenize})"
    )
    op.execute(
        "INSERT INTO memory_fts (rowid, record_id, content) "
        "SELECT fts_rowid, record_id, content FROM memory_fts_rows ORDER BY fts_rowid"
    )
    op.execute("DROP TABLE memory_fts_rows")
    for trigger in ("chunks_au", "chunks_ad", "chunks_ai"):
        op.execute(f"DROP TRIGGER {trigger}")
    op.execute("DROP TABLE chunks_fts")
    op.execute(
        "CREATE VIRTUAL TABLE chunks_fts USING fts5(text, content='chunk_search', "
        f"content_rowid='rowid'{tokenize})"
    )
    op.execute("INSERT INTO chunks_fts (chunks_fts) VALUES ('rebuild')")
    for statement in _CHUNK_TRIGGERS:
        op.execute(statement)


def _postgres_vectors(config: str) -> None:
    for table, source, column, index in _POSTGRES_VECTORS:
        op.execute(f"DROP INDEX {index}")
        op.execute(f"ALTER TABLE {table} DROP COLUMN {column}")
        op.execute(
            f"ALTER TABLE {table} ADD COLUMN {column} tsvector "
            f"GENERATED ALWAYS AS (to_tsvector('{config}', {source})) STORED"
        )
        op.execute(f"CREATE INDEX {index} ON {table} USING GIN ({column})")
