"""Rebuilding a store's derived indexes from their tables (`lantern db rebuild-index`)."""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import delete, func, select

from lantern.evidence import searchindex
from lantern.memory import fts as memory_fts
from lantern.memory import identity as memory_identity
from lantern.memory import refs as memory_refs
from lantern.store.engine import Store
from lantern.store.models import memory_records
from lantern.store.models import memory_refs as refs_table
from lantern.validation import JSONObject


@dataclass(frozen=True, slots=True)
class RebuildReport:
    """What `lantern db rebuild-index` rebuilt, and from how many rows."""

    indexes: tuple[str, ...]
    chunks: int
    memories: int
    references: int
    search_texts: int
    """Chunks searched by a text other than their own (transcripts' decoded turns)."""

    def to_json(self) -> JSONObject:
        """The report as `db rebuild-index --json` prints it."""
        return {
            "indexes": list(self.indexes),
            "chunks": self.chunks,
            "memories": self.memories,
            "references": self.references,
            "search_texts": self.search_texts,
        }


def rebuild_indexes(store: Store) -> RebuildReport:
    """Rebuild the derived indexes from their tables, in one write transaction.

    Both: the searchable texts of chunks (`chunk_search_text`) are derived again from the chunks
    with this Lantern's rules (`lantern.evidence.searchtext`), first.
    SQLite: FTS5 `rebuild` for `chunks_fts` (it re-reads the view `chunk_search`), and
    `memory_fts` emptied and refilled from `memory_records` as the repository writes it, then
    merged into one segment with `secure_delete` on, so no text of a forgotten record survives
    in a dropped segment. A `memory_fts` that FTS5 refuses for too many structure levels (see
    `memory_fts.merge_all`) is made readable first.
    PostgreSQL: `REINDEX` of the three tables' indexes (their `tsvector` columns are generated).
    Both: the reference rows are rewritten from the records' `source_refs`, and every record's
    `identity_hash` is made what its scope, kind and content say (`memory_identity.repair`).
    Every record's id, content and references are read into memory once, as the rows are
    rebuilt from them. Then, beside a SQLite store with the `index` extra, the derived word
    index is built anew from the records (`lantern.indexes.words`), whatever its state, and
    the vector index of each model from the vectors (`lantern.indexes.vectors`).
    """
    with store.write() as conn:
        sqlite = conn.dialect.name == "sqlite"
        chunk_count = conn.exec_driver_sql("SELECT count(*) FROM chunks").scalar_one()
        rows = [
            (record_id, content, refs)
            for record_id, content, refs in conn.execute(
                select(memory_records.c.id, memory_records.c.content, memory_records.c.source_refs)
            )
        ]
        if sqlite:
            conn.exec_driver_sql("PRAGMA secure_delete = ON")
        search_texts = searchindex.derive_all(conn)
        if sqlite:
            memory_fts.repair_structure(conn)
            conn.exec_driver_sql("INSERT INTO chunks_fts (chunks_fts) VALUES ('rebuild')")
            conn.exec_driver_sql("DELETE FROM memory_fts")
            memory_fts.index(conn, [(record_id, content) for record_id, content, _ in rows])
            memory_fts.merge_all(conn)
            indexes: tuple[str, ...] = (
                "chunk_search_text",
                "chunks_fts",
                "memory_fts",
                "memory_refs",
                "identity_hash",
            )
        else:
            conn.exec_driver_sql("REINDEX TABLE chunks")
            conn.exec_driver_sql("REINDEX TABLE chunk_search_text")
            conn.exec_driver_sql("REINDEX TABLE memory_records")
            indexes = (
                "chunk_search_text",
                "chunks",
                "memory_records",
                "memory_refs",
                "identity_hash",
            )
        conn.execute(delete(refs_table))
        memory_refs.write(conn, [(record_id, refs or []) for record_id, _, refs in rows])
        memory_identity.repair(conn)
        references = conn.execute(select(func.count()).select_from(refs_table)).scalar_one()
    if _word_index(store):
        indexes = (*indexes, "word_index")
    if _vector_indexes(store):
        indexes = (*indexes, "vector_index")
    return RebuildReport(
        indexes=indexes,
        chunks=chunk_count,
        memories=len(rows),
        references=references,
        search_texts=search_texts,
    )


def _word_index(store: Store) -> bool:
    """Build the derived word index beside a SQLite store anew; False where there is none to
    build (PostgreSQL, or tantivy not installed)."""
    from lantern.indexes import place, words

    directory = place.directory(store.location)
    if directory is None or not words.available():
        return False
    words.build(store, directory)
    return True


def _vector_indexes(store: Store) -> bool:
    """Build the vector index of each model the store holds memory vectors of anew; False
    where there is none to build (PostgreSQL, numpy not installed, no vectors)."""
    from lantern.indexes import vectors

    directory = vectors.directory_of(store)
    if directory is None:
        return False
    built = vectors.models(store)
    for model in built:
        vectors.build(store, directory, model)
    return bool(built)
