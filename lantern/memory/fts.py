"""Keyword search over memory content: the one place that differs between SQLite and PostgreSQL.

SQLite: a regular FTS5 table, `memory_fts(record_id UNINDEXED, content)` (FTS5's `porter`
stemmer around `unicode61`, revision 0012), kept current by the repository in the same
transaction as the record (measured: filling FTS5 from Python per write costs what a trigger
costs, and bulk loads can insert in rowid order, which triggers cannot).
It is a regular table, not an external-content one, because it must be able to delete a row
by rowid alone: `forget` removes a secret from the index without trusting any other copy of the
text. Its rowid is derived from the record id (the 64 bits of a `mem_` id's hex digits), so it
can never be renumbered by VACUUM the way the implicit rowids of `memory_records` can.

PostgreSQL: a generated `content_tsv` column (`to_tsvector('lantern_english', content)`,
`simple` with English stems, revision 0012) with a GIN index; the database keeps it current,
so the maintenance functions below do nothing there.

Ranking is the same as for chunks (`lantern.evidence.search`): BM25 negated on SQLite, `ts_rank_cd`
with length normalisation on PostgreSQL; higher is better, and scores compare only within one
result list.
"""

from __future__ import annotations

from collections.abc import Iterable
from hashlib import sha256
from typing import Any

from sqlalchemy import (
    ColumnElement,
    Connection,
    Float,
    FromClause,
    Text,
    bindparam,
    cast,
    column,
    func,
    literal_column,
    table,
    text,
)
from sqlalchemy.sql.elements import ColumnClause

from lantern.retrieval.query import ParsedQuery
from lantern.store.dialect import TEXT_SEARCH_REGCONFIG
from lantern.store.models import memory_records
from lantern.store.prepared import Prepared

FTS_TABLE = "memory_fts"
_FTS = table(FTS_TABLE, column("rowid"), column("record_id"), column("content"))
_FTS_NAME: ColumnClause[Any] = literal_column(FTS_TABLE)
_TSVECTOR: ColumnClause[Any] = literal_column("memory_records.content_tsv")
_CONFIG: ColumnClause[Any] = literal_column(TEXT_SEARCH_REGCONFIG)
_HEX = frozenset("0123456789abcdef")


def fts_rowid(record_id: str) -> int:
    """The FTS5 rowid of a record: the signed 64-bit number in its 16 hex digits.

    Record ids are already 64 bits of a hash, so this maps ids to rowids one to one. An id of
    another form (none is made by Lantern) falls back to 64 bits of its sha256.
    """
    digits = record_id[4:]
    if not (record_id.startswith("mem_") and len(digits) == 16 and set(digits) <= _HEX):
        digits = sha256(record_id.encode("utf-8")).hexdigest()[:16]
    number = int(digits, 16)
    return number - (1 << 64) if number >= 1 << 63 else number


def index(conn: Connection, rows: Iterable[tuple[str, str]]) -> None:
    """Add `(record_id, content)` rows to the index, in rowid order (FTS5 flushes its buffer
    whenever a rowid goes backwards, which made random-order bulk loads 3.5x slower)."""
    if conn.dialect.name != "sqlite":
        return
    ordered = sorted((fts_rowid(record_id), record_id, content) for record_id, content in rows)
    _INDEX.execute_many(
        conn,
        [
            {"rowid": rowid, "record_id": record_id, "content": content}
            for rowid, record_id, content in ordered
        ],
    )


def reindex(conn: Connection, record_id: str, content: str) -> None:
    if conn.dialect.name != "sqlite":
        return
    _REINDEX.rows(conn, {"content": content, "rowid": fts_rowid(record_id)})


def unindex(conn: Connection, record_id: str) -> None:
    if conn.dialect.name != "sqlite":
        return
    _UNINDEX.rows(conn, {"rowid": fts_rowid(record_id)})


_INDEX = Prepared(
    text("INSERT INTO memory_fts (rowid, record_id, content) VALUES (:rowid, :record_id, :content)")
)
_REINDEX = Prepared(text("UPDATE memory_fts SET content = :content WHERE rowid = :rowid"))
_UNINDEX = Prepared(text("DELETE FROM memory_fts WHERE rowid = :rowid"))


def merge_all(conn: Connection) -> None:
    """Rewrite the FTS5 index as one segment, dropping deleted entries for good.

    A deletion only adds a tombstone; the tokens of the deleted text stay in older segments
    until they are merged. `optimize` merges them all, and with `secure_delete` on, the pages
    the old segments occupied are zeroed. It rewrites the whole index, which `forget` accepts.

    SQLite before 3.42 adds an empty level to the index's structure record at each `optimize`
    that follows a write, and past 2,000 levels FTS5 declares the index corrupt: every later
    write to the table fails ("database disk image is malformed") after about 1,000 forgets.
    Later versions cap the levels at 64. Here, once the structure holds more than
    `REBUILD_ABOVE_LEVELS`, the index is rebuilt from the table's own stored text instead,
    which removes the deleted text just as well and starts again with one level.
    """
    if conn.dialect.name != "sqlite":
        return
    levels = structure_levels(conn)
    command = "rebuild" if levels is not None and levels > REBUILD_ABOVE_LEVELS else "optimize"
    conn.execute(text(f"INSERT INTO memory_fts (memory_fts) VALUES ('{command}')"))


FTS5_MAX_LEVELS = 2000
"""FTS5 refuses a structure record with more levels than this (its FTS5_MAX_SEGMENT)."""
REBUILD_ABOVE_LEVELS = 100
"""Well below FTS5's limit, and above the 64 (plus one) that SQLite 3.42 and later keep."""
_STRUCTURE_V2 = b"\xff\x00\x00\x01"


def structure_levels(conn: Connection) -> int | None:
    """The number of levels in `memory_fts`'s structure record (None when there is none).

    The record (row 10 of the `memory_fts_data` shadow table) is a 4-byte cookie, an optional
    4-byte version 2 marker, then the level count as an SQLite varint.
    """
    block = conn.execute(text("SELECT block FROM memory_fts_data WHERE id = 10")).scalar()
    if not isinstance(block, bytes) or len(block) < 5:
        return None
    position = 8 if block[4:8] == _STRUCTURE_V2 else 4
    levels = 0
    for byte in block[position : position + 9]:
        levels = (levels << 7) | (byte & 0x7F)
        if byte < 0x80:
            break
    return levels


def repair_structure(conn: Connection) -> bool:
    """Make an index that FTS5 refuses for too many levels usable again; True if it was.

    The structure record is replaced by an empty one (the cookie kept) and the index rebuilt
    from the stored text: what FTS5 itself would hold after a `rebuild`. Nothing else reads
    or writes FTS5's shadow tables.
    """
    levels = structure_levels(conn)
    if levels is None or levels <= FTS5_MAX_LEVELS:
        return False
    conn.execute(
        text("UPDATE memory_fts_data SET block = substr(block, 1, 4) || X'000000' WHERE id = 10")
    )
    conn.execute(text("INSERT INTO memory_fts (memory_fts) VALUES ('rebuild')"))
    return True


def matching(dialect: str) -> tuple[FromClause, ColumnElement[bool], ColumnElement[float]]:
    """What to select from, the match condition, and the score (higher is better).

    The query is the bound parameter `match`, whose value `match_value` gives.
    """
    if dialect == "postgresql":
        tsquery = func.to_tsquery(_CONFIG, bindparam("match", type_=Text))
        score: ColumnElement[float] = cast(func.ts_rank_cd(_TSVECTOR, tsquery, 1), Float)
        return memory_records, _TSVECTOR.op("@@")(tsquery), score
    source = _FTS.join(memory_records, memory_records.c.id == _FTS.c.record_id)
    return source, _FTS_NAME.match(bindparam("match", type_=Text)), -func.bm25(_FTS_NAME)


def match_value(dialect: str, query: ParsedQuery) -> str:
    return query.to_tsquery() if dialect == "postgresql" else query.to_fts5()
