"""Builders and readers for pre-Alembic ("legacy") Lantern stores, for upgrade tests.

Users have generation 1 and generation 2 stores on disk: SQLite files created without Alembic,
whose generation is in ``PRAGMA user_version``. Upgrade tests need such files without access to the
original specification folder, so the exact DDL of both generations is reproduced here verbatim,
and :func:`build_legacy_store` fills it with realistic and deliberately awkward rows.

:func:`snapshot` and :func:`fts_answers` read a store without changing it, so that a test can
compare a store before and after an upgrade (every row, ID and byte; the same FTS answers).

WAL notes, learnt the hard way:

* Closing the last ordinary connection to a WAL database checkpoints it and deletes the ``-wal``
  file. Merely *looking* at a ``wal_pending`` store with ``sqlite3.connect(path)`` therefore moves
  the pending rows into the main file. The readers here use ``mode=ro`` connections (which never
  checkpoint) or read a throw-away copy.
* A ``mode=ro`` connection still needs a usable ``-shm``; when the directory is writable, SQLite
  creates missing (empty) ``-wal``/``-shm`` files beside the store. Never use ``immutable=1``: it
  ignores the ``-wal`` file and so silently misses the pending rows.
* ``with sqlite3.connect(...)`` only commits or rolls back; it does not close the connection.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import math
import shutil
import sqlite3
import struct
import tempfile
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Final

__all__ = [
    "BASE_TIME",
    "EMBEDDING_DIM",
    "FTS_PROBE_QUERIES",
    "GENERATION_1_DDL",
    "GENERATION_2_DDL",
    "LEGACY_COLUMNS",
    "PENDING_FTS_QUERY",
    "PENDING_SOURCE_URI",
    "TRANSCRIPT_URI",
    "build_legacy_store",
    "chunk_id",
    "ddl_for",
    "ddl_statements",
    "entity_id",
    "fts_answers",
    "snapshot",
    "source_id",
]

# --------------------------------------------------------------------------------------------
# The format: DDL copied verbatim from the legacy specification (schema-v1.sql, schema-v2.sql).
# Do not reformat these strings: tests compare them with sqlite_master.sql.
# --------------------------------------------------------------------------------------------

GENERATION_1_DDL: Final[str] = """\
-- Lantern evidence store, generation 1 (PRAGMA user_version = 1). Created without Alembic.
PRAGMA user_version = 1;

CREATE TABLE sources (
    id           TEXT PRIMARY KEY,
    uri          TEXT NOT NULL UNIQUE,
    kind         TEXT NOT NULL,
    title        TEXT,
    content_hash TEXT NOT NULL,
    metadata     TEXT DEFAULT '{}',
    created_at   INTEGER NOT NULL,
    updated_at   INTEGER NOT NULL
);

CREATE TABLE chunks (
    id           TEXT PRIMARY KEY,
    source_id    TEXT NOT NULL REFERENCES sources(id) ON DELETE CASCADE,
    ordinal      INTEGER NOT NULL,
    text         TEXT NOT NULL,
    start_offset INTEGER,
    end_offset   INTEGER,
    metadata     TEXT DEFAULT '{}',
    created_at   INTEGER NOT NULL,
    UNIQUE (source_id, ordinal)
);

CREATE INDEX idx_chunks_source ON chunks(source_id);

CREATE VIRTUAL TABLE chunks_fts USING fts5(text, content='chunks', content_rowid='rowid');

CREATE TRIGGER chunks_ai AFTER INSERT ON chunks BEGIN
    INSERT INTO chunks_fts(rowid, text) VALUES (new.rowid, new.text);
END;
CREATE TRIGGER chunks_ad AFTER DELETE ON chunks BEGIN
    INSERT INTO chunks_fts(chunks_fts, rowid, text) VALUES ('delete', old.rowid, old.text);
END;
CREATE TRIGGER chunks_au AFTER UPDATE ON chunks BEGIN
    INSERT INTO chunks_fts(chunks_fts, rowid, text) VALUES ('delete', old.rowid, old.text);
    INSERT INTO chunks_fts(rowid, text) VALUES (new.rowid, new.text);
END;
"""

GENERATION_2_DDL: Final[str] = """\
-- Lantern evidence store, generation 2 (PRAGMA user_version = 2). Created without Alembic.
-- Generation 1's DDL (schema-v1.sql) with metadata NOT NULL, plus entities and embeddings.
PRAGMA user_version = 2;

CREATE TABLE sources (
    id           TEXT PRIMARY KEY,
    uri          TEXT NOT NULL UNIQUE,
    kind         TEXT NOT NULL,
    title        TEXT,
    content_hash TEXT NOT NULL,
    metadata     TEXT NOT NULL DEFAULT '{}',
    created_at   INTEGER NOT NULL,
    updated_at   INTEGER NOT NULL
);

CREATE TABLE chunks (
    id           TEXT PRIMARY KEY,
    source_id    TEXT NOT NULL REFERENCES sources(id) ON DELETE CASCADE,
    ordinal      INTEGER NOT NULL,
    text         TEXT NOT NULL,
    start_offset INTEGER,
    end_offset   INTEGER,
    metadata     TEXT NOT NULL DEFAULT '{}',
    created_at   INTEGER NOT NULL,
    UNIQUE (source_id, ordinal)
);

CREATE INDEX idx_chunks_source ON chunks(source_id);

CREATE VIRTUAL TABLE chunks_fts USING fts5(text, content='chunks', content_rowid='rowid');

CREATE TRIGGER chunks_ai AFTER INSERT ON chunks BEGIN
    INSERT INTO chunks_fts(rowid, text) VALUES (new.rowid, new.text);
END;
CREATE TRIGGER chunks_ad AFTER DELETE ON chunks BEGIN
    INSERT INTO chunks_fts(chunks_fts, rowid, text) VALUES ('delete', old.rowid, old.text);
END;
CREATE TRIGGER chunks_au AFTER UPDATE ON chunks BEGIN
    INSERT INTO chunks_fts(chunks_fts, rowid, text) VALUES ('delete', old.rowid, old.text);
    INSERT INTO chunks_fts(rowid, text) VALUES (new.rowid, new.text);
END;

CREATE TABLE entities (
    id   TEXT PRIMARY KEY,
    name TEXT NOT NULL,
    kind TEXT NOT NULL,
    UNIQUE (name, kind)
);

CREATE TABLE chunk_entities (
    chunk_id  TEXT NOT NULL REFERENCES chunks(id) ON DELETE CASCADE,
    entity_id TEXT NOT NULL REFERENCES entities(id) ON DELETE CASCADE,
    PRIMARY KEY (chunk_id, entity_id)
);

CREATE TABLE embeddings (
    chunk_id TEXT PRIMARY KEY REFERENCES chunks(id) ON DELETE CASCADE,
    model    TEXT NOT NULL,
    dim      INTEGER NOT NULL,
    vector   BLOB NOT NULL
);
"""

#: Columns of each legacy table, in DDL order; ``chunks`` also has its ``rowid`` because the FTS
#: index (``content_rowid='rowid'``) refers to chunks by rowid, so an upgrade must keep it.
LEGACY_COLUMNS: Final[dict[str, tuple[str, ...]]] = {
    "sources": (
        "id",
        "uri",
        "kind",
        "title",
        "content_hash",
        "metadata",
        "created_at",
        "updated_at",
    ),
    "chunks": (
        "rowid",
        "id",
        "source_id",
        "ordinal",
        "text",
        "start_offset",
        "end_offset",
        "metadata",
        "created_at",
    ),
    "entities": ("id", "name", "kind"),
    "chunk_entities": ("chunk_id", "entity_id"),
    "embeddings": ("chunk_id", "model", "dim", "vector"),
}

_ORDER_BY: Final[dict[str, str]] = {
    "sources": "id",
    "chunks": "rowid",
    "entities": "id",
    "chunk_entities": "chunk_id, entity_id",
    "embeddings": "chunk_id",
}

#: Unix seconds (2023-11-14T22:13:20Z); every time in a built store is derived from it.
BASE_TIME: Final[int] = 1_700_000_000
EMBEDDING_DIM: Final[int] = 8

#: URI of the source written only to the ``-wal`` file by ``wal_pending=True``.
PENDING_SOURCE_URI: Final[str] = "file:///home/ada/.lantern/sessions/pending-session.jsonl"
#: An FTS query answered only by the pending chunks (empty unless ``wal_pending=True``).
PENDING_FTS_QUERY: Final[str] = "walrus"

#: FTS5 queries aimed at the awkward data. With ``awkward=True`` each has at least one answer,
#: whatever ``n_sources`` is; the answers must be the same before and after an upgrade.
FTS_PROBE_QUERIES: Final[tuple[str, ...]] = (
    '"quoted"',  # a text containing the literal "quoted", double quotes included
    '"AND OR NOT NEAR"',  # operator keywords as plain words in a text
    '"col:value" AND "C++"',  # column-filter and "++" syntax in a text
    '"don\'t" AND caret AND "^x"',  # apostrophe and initial-token syntax in a text
    "NEAR(alpha omega, 2)",  # a real NEAR group
    "quot*",  # a real prefix query
    "^she",  # a real initial-token query
    "text:foxfire",  # a real column filter; the word sits next to emoji
    "東京",  # CJK bareword
    '"שלום עולם"',  # RTL phrase
    "cafe",  # combining acute accent (and the precomposed form)
    "ringer AND zero",  # words separated by control and zero-width characters
    "needlework",  # a word in the middle of the ~1 MB chunk
    "zanzibar",  # a word at the very end of the ~1 MB chunk
)

#: URI of the JSON Lines transcript written by ``transcripts=True``.
TRANSCRIPT_URI: Final[str] = "file:///home/ada/.lantern/sessions/zurich.jsonl"

# --------------------------------------------------------------------------------------------
# IDs, as the legacy code computed them.
# --------------------------------------------------------------------------------------------


def _sha256_hex(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def source_id(uri: str) -> str:
    """Return the legacy ID of a source: IDs are derived from content, never random."""
    return "src_" + _sha256_hex(uri)[:16]


def chunk_id(source_id: str, ordinal: int, text: str) -> str:
    """Return the legacy ID of a chunk, which pins its source, position and exact text."""
    return "chk_" + _sha256_hex(f"{source_id}:{ordinal}:{_sha256_hex(text)}")[:16]


def entity_id(kind: str, name: str) -> str:
    """Return the legacy ID of an entity; names differing only in case share it."""
    return "ent_" + _sha256_hex(kind + ":" + name.lower())[:16]


def ddl_for(generation: int) -> str:
    """Return the verbatim DDL of a legacy generation (1 or 2)."""
    if generation == 1:
        return GENERATION_1_DDL
    if generation == 2:
        return GENERATION_2_DDL
    raise ValueError(f"unknown legacy generation {generation!r}; expected 1 or 2")


def ddl_statements(ddl: str) -> list[str]:
    """Split a DDL script into statements, without comments or the trailing ';'.

    Triggers contain ';' inside BEGIN ... END, so this relies on sqlite3.complete_statement.
    The CREATE statements come out exactly as sqlite_master.sql stores them.
    """
    statements: list[str] = []
    buffer = ""
    for line in ddl.splitlines(keepends=True):
        if not buffer and (not line.strip() or line.lstrip().startswith("--")):
            continue
        buffer += line
        if sqlite3.complete_statement(buffer):
            statements.append(buffer.strip().removesuffix(";").rstrip())
            buffer = ""
    if buffer.strip():
        raise ValueError(f"incomplete statement at end of DDL: {buffer!r}")
    return statements


# --------------------------------------------------------------------------------------------
# Building stores.
# --------------------------------------------------------------------------------------------


class _Default:
    """Marker: leave the metadata column out of the INSERT, so the DDL's DEFAULT applies."""


_DEFAULT: Final = _Default()
_Metadata = str | None | _Default


@dataclass(frozen=True)
class _ChunkSpec:
    text: str
    metadata: _Metadata = _DEFAULT
    offsets: bool = True


def _json(value: object, *, compact: bool = False, ascii_only: bool = False) -> str:
    """Serialise metadata in the varied spellings old writers used (an upgrade must keep bytes)."""
    separators = (",", ":") if compact else (", ", ": ")
    return json.dumps(value, separators=separators, ensure_ascii=ascii_only)


def _insert_source(
    conn: sqlite3.Connection,
    *,
    uri: str,
    kind: str,
    title: str | None,
    metadata: _Metadata,
    created_at: int,
    chunks: Sequence[_ChunkSpec],
) -> list[str]:
    """Insert a source and its chunks as the legacy writer did; return the chunk IDs."""
    sid = source_id(uri)
    content = "\n\n".join(spec.text for spec in chunks)
    columns = ["id", "uri", "kind", "title", "content_hash", "created_at", "updated_at"]
    values: list[object] = [
        sid,
        uri,
        kind,
        title,
        _sha256_hex(content),
        created_at,
        created_at + 90,
    ]
    if not isinstance(metadata, _Default):
        columns.append("metadata")
        values.append(metadata)
    _insert(conn, "sources", columns, values)

    ids: list[str] = []
    start = 0  # offsets count characters of the source's content, chunks joined by "\n\n"
    for ordinal, spec in enumerate(chunks):
        end = start + len(spec.text)
        cid = chunk_id(sid, ordinal, spec.text)
        columns = ["id", "source_id", "ordinal", "text", "start_offset", "end_offset", "created_at"]
        offsets = (start, end) if spec.offsets else (None, None)
        values = [cid, sid, ordinal, spec.text, *offsets, created_at + ordinal]
        start = end + 2
        if not isinstance(spec.metadata, _Default):
            columns.append("metadata")
            values.append(spec.metadata)
        _insert(conn, "chunks", columns, values)
        ids.append(cid)
    return ids


def _insert(
    conn: sqlite3.Connection, table: str, columns: Sequence[str], values: Sequence[object]
) -> None:
    placeholders = ", ".join("?" for _ in columns)
    conn.execute(f"INSERT INTO {table} ({', '.join(columns)}) VALUES ({placeholders})", values)


def _vector(seed: int) -> bytes:
    """Return a deterministic little-endian float32 vector, as the legacy embedder stored it."""
    values = [math.sin(seed * EMBEDDING_DIM + j) for j in range(EMBEDDING_DIM)]
    return struct.pack("<" + "f" * EMBEDDING_DIM, *values)


#: Floats that a careless float64 round trip or a text conversion would damage.
_AWKWARD_VECTOR: Final[bytes] = struct.pack(
    "<" + "f" * EMBEDDING_DIM, -0.0, 1e-45, 3.4028234663852886e38, -1.0, 0.1, 0.0, 1.0, -2.5
)


def _huge_text() -> str:
    """Return ~1 MB of log lines, with one marker word mid-way and one at the very end."""
    lines: list[str] = []
    size = 0
    n = 0
    while size < 1_000_000:
        line = f"{n:06d} INFO worker-{n % 7} served request {n * 7919 % 100_003} in {n % 250} ms\n"
        if n == 9_000:
            line = f"{n:06d} WARN worker-{n % 7} needlework: slow disk, retrying\n"
        lines.append(line)
        size += len(line)
        n += 1
    lines.append("final line mentions zanzibar")
    return "".join(lines)


_KINDS: Final[tuple[str, ...]] = (
    "transcript",
    "markdown",
    "source_file",
    "tool_output",
    "log",
    "document",
    "email",
)

_REGULAR_ENTITIES: Final[tuple[tuple[str, str], ...]] = (
    ("person", "Ada Lovelace"),
    ("project", "Lantern"),
)
_AWKWARD_ENTITIES: Final[tuple[tuple[str, str], ...]] = (
    ("place", "東京"),
    ("person", "Zoë Ñúñez"),
    ("language", "C++"),
    ("person", "O'Brien"),
    ("topic", "FTS5 NEAR("),  # linked to no chunk
)


def _fill(conn: sqlite3.Connection, generation: int, *, awkward: bool, n_sources: int) -> None:
    """Write the first (checkpointed) batch of rows."""
    regular: list[list[str]] = []
    awkward_ids: dict[str, list[str]] = {}
    for i in range(n_sources):
        if awkward and i == 1:
            awkward_ids = _fill_awkward(conn, generation)  # interleave rowids with regular rows
        chunks = [
            _ChunkSpec(f"Meeting notes {i}: the Lantern evidence store keeps every chunk it saw."),
            _ChunkSpec(
                f"Action items {i}: review the quarterly budget, then archive the draft.",
                metadata=_json({"speaker": "Ada", "turn": i}),
            ),
            _ChunkSpec(
                f"Follow-up {i}: Ada Lovelace asked about the embedding model.",
                metadata=_json({"speaker": "Ada", "turn": i + 1}, compact=True),
            ),
        ]
        metadata: _Metadata = _json({"lang": "en", "tags": ["notes", "q3"], "n": i})
        if i % 3 == 2:
            metadata = _DEFAULT
        regular.append(
            _insert_source(
                conn,
                uri=f"file:///home/ada/notes/meeting-{i:03d}.md",
                kind=_KINDS[i % len(_KINDS)],
                title=f"Meeting {i}",
                metadata=metadata,
                created_at=BASE_TIME + i * 3_600,
                chunks=chunks,
            )
        )
    if awkward and not awkward_ids:
        awkward_ids = _fill_awkward(conn, generation)

    if generation != 2:
        return
    entities = _REGULAR_ENTITIES + (_AWKWARD_ENTITIES if awkward else ())
    for kind, name in entities:
        conn.execute(
            "INSERT INTO entities (id, name, kind) VALUES (?, ?, ?)",
            (entity_id(kind, name), name, kind),
        )
    ada, lantern = (entity_id(kind, name) for kind, name in _REGULAR_ENTITIES)
    links: list[tuple[str, str]] = []
    embeddings: list[tuple[str, str, bytes]] = []
    for i, ids in enumerate(regular):
        links += [(ids[0], lantern), (ids[2], ada), (ids[2], lantern)]
        if i == 0:  # a chunk whose source has several chunks
            embeddings.append((ids[1], "lantern-embed-small", _vector(1)))
        embeddings.append((ids[2], "lantern-embed-small", _vector(100 + i)))
    if awkward:
        syntax, unicode, huge = awkward_ids["syntax"], awkward_ids["unicode"], awkward_ids["huge"]
        tokyo, zoe, cpp, obrien = (entity_id(k, n) for k, n in _AWKWARD_ENTITIES[:4])
        links += [
            (syntax[1], cpp),
            (syntax[0], obrien),
            (syntax[0], ada),
            (unicode[1], tokyo),
            (unicode[0], zoe),
        ]
        embeddings += [
            (syntax[0], "lantern-embed-small", _vector(7)),
            (unicode[1], "all-MiniLM-L6-v2@8", _vector(8)),
            (unicode[3], "all-MiniLM-L6-v2@8", _AWKWARD_VECTOR),
            (huge[0], "lantern-embed-small", _vector(9)),
        ]
    conn.executemany("INSERT INTO chunk_entities (chunk_id, entity_id) VALUES (?, ?)", links)
    conn.executemany(
        "INSERT INTO embeddings (chunk_id, model, dim, vector) VALUES (?, ?, ?, ?)",
        [(cid, model, EMBEDDING_DIM, vector) for cid, model, vector in embeddings],
    )


def _fill_awkward(conn: sqlite3.Connection, generation: int) -> dict[str, list[str]]:
    """Write the rows that tend to break upgrades; return chunk IDs by source nickname."""
    null_or_empty = None if generation == 1 else ""  # generation 2's DDL forbids NULL
    syntax = _insert_source(
        conn,
        uri="mailto:ada@example.org?subject=Re%3A%20FTS%20syntax",
        kind="email",  # not one of the usual kinds
        title=None,
        metadata=null_or_empty,
        created_at=2_200_000_000,  # past 2038: does not fit a signed 32-bit integer
        chunks=[
            _ChunkSpec(
                'She said "quoted" twice; then AND OR NOT NEAR( appeared in the log.',
                metadata=null_or_empty,
                offsets=False,
            ),
            _ChunkSpec(
                "Filter col:value, prefix a* and caret ^x (nested (parens)) in C++, don't panic.",
                metadata="",
                offsets=False,
            ),
            _ChunkSpec(
                'NEAR(alpha omega, 2) was typed literally; also "unbalanced quote and ) stray',
                offsets=False,
            ),
            _ChunkSpec(
                "- leading hyphen, +plus, {braces}, [brackets], :colon, *star, text:literal",
                metadata="{}",
                offsets=False,
            ),
        ],
    )
    unicode = _insert_source(
        conn,
        uri="file:///home/ada/Документы/日本語 notes/résumé.md",
        kind="markdown",
        title="Résumé — 日本語 ✨",
        metadata="",
        created_at=BASE_TIME + 86_400,
        chunks=[
            _ChunkSpec(
                "Emoji 🦊🔥foxfire and 👩‍👩‍👧 family; flags 🇯🇵 and skin tones 👍🏽.",
                metadata=_json({"lang": "mul", "note": "絵文字 ✨"}),
            ),
            _ChunkSpec(
                "会議 東京 資料 — 中文 测试 한국어 텍스트",
                metadata=_json({"lang": "ja", "note": "会議"}, ascii_only=True),
            ),
            _ChunkSpec("RTL: שלום עולם and مرحبا بالعالم mixed with \u202eLTR\u202c words."),
            _ChunkSpec(
                "Combining: cafe\u0301 vs café, n\u0303, Z\u0335a\u0336l\u0337g\u0338o.",
                offsets=False,
            ),
            _ChunkSpec(
                "bell\x07ringer tab\there cr\rlf\nform\x0cfeed esc\x1b[31mred\x1b[0m del\x7f "
                "zero\u200bwidth bom\ufeffmark line\u2028sep \x01\x02\x1f",
                metadata="",
            ),
        ],
    )
    huge = _insert_source(
        conn,
        uri="file:///var/log/lantern/huge.log",
        kind="log",
        title="huge.log",
        metadata=_json({"rotated": False, "bytes": 1_000_000}, compact=True),
        created_at=BASE_TIME + 2 * 86_400,
        chunks=[
            _ChunkSpec(_huge_text()),
            _ChunkSpec("superseded draft, deleted below"),
            _ChunkSpec("tail after the huge chunk", offsets=False),
        ],
    )
    # Exercise the delete and update triggers, and leave gaps in ordinals and rowids (the deleted
    # chunk is not the last one inserted, so its rowid is never reused): an upgrade must keep
    # rowids as they are, since the FTS index refers to them.
    conn.execute("DELETE FROM chunks WHERE id = ?", (huge[1],))
    conn.execute(
        "UPDATE chunks SET metadata = ? WHERE id = ?",
        (_json({"edited": True}), unicode[2]),
    )
    return {"syntax": syntax, "unicode": unicode, "huge": [huge[0], huge[2]]}


def _fill_pending(conn: sqlite3.Connection, generation: int) -> None:
    """Write the batch that stays in the -wal file when wal_pending=True."""
    ids = _insert_source(
        conn,
        uri=PENDING_SOURCE_URI,
        kind="transcript",
        title="Session in progress",
        metadata=_json({"live": True}),
        created_at=BASE_TIME + 7 * 86_400,
        chunks=[
            _ChunkSpec("Written while another process held the store open: walrus ledger."),
            _ChunkSpec("Second pending chunk, also only in the write-ahead log."),
        ],
    )
    if generation == 2:
        ada = entity_id(*_REGULAR_ENTITIES[0])
        conn.execute(
            "INSERT INTO chunk_entities (chunk_id, entity_id) VALUES (?, ?)", (ids[0], ada)
        )
        conn.execute(
            "INSERT INTO embeddings (chunk_id, model, dim, vector) VALUES (?, ?, ?, ?)",
            (ids[1], "lantern-embed-small", EMBEDDING_DIM, _vector(42)),
        )


def _transcript_lines() -> list[str]:
    """Turns as an older writer stored them: JSON Lines with ASCII escapes (`ensure_ascii`)."""
    turns = [
        {"role": "user", "content": "We met at the café near Zürich HB.\nThen we walked."},
        {"role": "assistant", "content": 'Noted: the café \u2014 and "the walk".'},
        {"role": "user", "content": "The rest " + "of a very long turn " * 6 + "ends here."},
    ]
    return [json.dumps(turn) for turn in turns]


def _fill_transcripts(conn: sqlite3.Connection) -> None:
    """A transcript source whose chunks are JSON: two whole turns, then a long turn cut in two
    at whitespace, as the chunker cuts a turn longer than the chunk size."""
    lines = _transcript_lines()
    long_turn = lines[2]
    cut = long_turn.index(" of a very long turn ", 60)
    _insert_source(
        conn,
        uri=TRANSCRIPT_URI,
        kind="transcript",
        title="zurich.jsonl",
        metadata=_json({"turns": 3}),
        created_at=BASE_TIME + 3 * 86_400,
        chunks=[
            _ChunkSpec("\n".join(lines[:2]), metadata=_json({"roles": ["assistant", "user"]})),
            _ChunkSpec(long_turn[:cut], offsets=False),
            _ChunkSpec(long_turn[cut + 1 :], offsets=False),
        ],
    )


def _copy_store_files(source: Path, target: Path) -> None:
    """Copy a store and whichever of its -wal and -shm exist (caller ensures no write is due)."""
    for suffix in ("", "-wal", "-shm"):
        origin = source.with_name(source.name + suffix)
        if origin.exists():
            shutil.copyfile(origin, target.with_name(target.name + suffix))


def build_legacy_store(
    path: Path,
    generation: int,
    *,
    awkward: bool = True,
    wal_pending: bool = False,
    n_sources: int = 3,
    transcripts: bool = False,
) -> None:
    """Create a legacy store of ``generation`` (1 or 2) at ``path``, as the old code would have.

    ``n_sources`` ordinary sources of three chunks each are written; ``awkward`` adds rows that
    tend to break upgrades (NULL/'' metadata, unicode and control characters, FTS syntax in
    texts, a ~1 MB chunk, NULL titles and offsets, a rowid gap, odd floats in a vector).
    ``transcripts`` adds :data:`TRANSCRIPT_URI`, whose chunks are JSON with ASCII escapes.

    With ``wal_pending`` the store is in WAL mode and the source :data:`PENDING_SOURCE_URI` with
    its chunks lives only in ``path``-wal, as when another process has the store open. An open
    connection cannot outlive this function, and closing it would checkpoint, so the store is
    built elsewhere and its three files are copied while the writer is still open and idle.
    """
    ddl = ddl_for(generation)
    if n_sources < 0:
        raise ValueError(f"n_sources must be >= 0, not {n_sources}")
    for suffix in ("", "-wal", "-shm", "-journal"):
        existing = path.with_name(path.name + suffix)
        if existing.exists():
            raise FileExistsError(f"refusing to build a legacy store over {existing}")

    with tempfile.TemporaryDirectory(prefix="lantern-legacy-") as tmp:
        staging = Path(tmp) / "store.db"
        conn = sqlite3.connect(staging, isolation_level=None)  # autocommit: explicit BEGINs
        try:
            if wal_pending:
                (mode,) = conn.execute("PRAGMA journal_mode = WAL").fetchone()
                if mode != "wal":
                    raise RuntimeError(f"could not put {staging} in WAL mode (got {mode!r})")
            conn.executescript(ddl)
            conn.execute("BEGIN")
            _fill(conn, generation, awkward=awkward, n_sources=n_sources)
            if transcripts:
                _fill_transcripts(conn)
            conn.execute("COMMIT")
            if wal_pending:
                # Move the first batch into the main file, then stop SQLite from ever doing so.
                busy, _, _ = conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
                if busy:
                    raise RuntimeError("checkpoint of the first batch did not complete")
                conn.execute("PRAGMA wal_autocheckpoint = 0")
                conn.execute("BEGIN")
                _fill_pending(conn, generation)
                conn.execute("COMMIT")
                # Committed and idle, so the three files are consistent; copy them before close()
                # checkpoints the WAL into the main file and deletes it.
                _copy_store_files(staging, path)
        finally:
            conn.close()
        if not wal_pending:
            shutil.copyfile(staging, path)


# --------------------------------------------------------------------------------------------
# Reading stores without changing them.
# --------------------------------------------------------------------------------------------

_FALLBACK_ERRORS: Final[tuple[str, ...]] = ("SQLITE_CANTOPEN", "SQLITE_READONLY")


@contextlib.contextmanager
def _reading_connection(path: Path, *, copy: bool = False) -> Iterator[sqlite3.Connection]:
    """Yield a connection that cannot change the store at ``path``, and close it afterwards.

    A ``mode=ro`` connection never writes the database nor checkpoints a WAL, but on a WAL store
    it needs a ``-shm`` file: an existing one, even read-only, will do, yet a missing one must be
    created, so in a read-only directory it fails with SQLITE_CANTOPEN (SQLite 3.40; some builds
    say SQLITE_READONLY_*). Then (or with ``copy=True``) the store and its ``-wal``/``-shm`` are
    copied to a temporary folder and the copy is read with an ordinary connection, whose
    checkpoint on close harms only the copy.
    """
    if not path.is_file():
        raise FileNotFoundError(f"no store at {path}")
    if not copy:
        conn = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)
        try:
            conn.execute("SELECT count(*) FROM sqlite_master").fetchone()  # opening is lazy
        except sqlite3.OperationalError as error:
            conn.close()
            name = getattr(error, "sqlite_errorname", "")
            if not name.startswith(_FALLBACK_ERRORS):
                raise
        else:
            try:
                yield conn
            finally:
                conn.close()
            return
    with tempfile.TemporaryDirectory(prefix="lantern-legacy-read-") as tmp:
        copy_path = Path(tmp) / path.name
        _copy_store_files(path, copy_path)
        conn = sqlite3.connect(copy_path)
        try:
            yield conn
        finally:
            conn.close()


def _tables(conn: sqlite3.Connection) -> set[str]:
    return {name for (name,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}


def snapshot(path: Path) -> dict[str, list[tuple[object, ...]]]:
    """Return every row of every legacy table present, exactly as stored, in a fixed order.

    Only the legacy columns are read (an upgrade may add columns), ``chunks`` with its rowid.
    TEXT comes back as str, BLOB as bytes, NULL as None, so '' and NULL stay distinct.
    """
    with _reading_connection(path) as conn:
        present = _tables(conn)
        return {
            table: conn.execute(
                f"SELECT {', '.join(columns)} FROM {table} ORDER BY {_ORDER_BY[table]}"
            ).fetchall()
            for table, columns in LEGACY_COLUMNS.items()
            if table in present
        }


def fts_answers(path: Path, queries: Sequence[str]) -> dict[str, list[str]]:
    """Return, per FTS5 query, the sorted IDs of the chunks it matches (to compare upgrades)."""
    with _reading_connection(path) as conn:
        return {
            query: [
                cid
                for (cid,) in conn.execute(
                    "SELECT c.id FROM chunks_fts f JOIN chunks c ON c.rowid = f.rowid "
                    "WHERE chunks_fts MATCH ? ORDER BY c.id",
                    (query,),
                )
            ]
            for query in queries
        }
