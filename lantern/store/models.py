"""Declarative models: the schema as Python sees it.

Alembic revisions create the schema; these models describe the result, and a test checks that
the two agree on a new store and on an upgraded legacy one. The evidence tables keep the legacy
format exactly (see docs/upgrading.md), which is why their index name and nullable `metadata`
columns look older than the rest. Full-text index tables are kept outside the
models: they belong to each engine's search code (`lantern.evidence.search`, `lantern.memory.fts`).

Each class is named for its table and ends in `Row` (`MemoryRecordRow`, `SourceRow`,
`ChunkRow`), so that it is never taken for the frozen record of the same thing that callers
get (`lantern.memory.records.MemoryRecord`, `lantern.evidence.records.Source`): code above the
store reads and writes through the tables (`memory_records`, `sources`...), never through these
classes.
"""

from __future__ import annotations

from typing import Any, cast

from sqlalchemy import (
    CheckConstraint,
    Float,
    ForeignKey,
    Index,
    Integer,
    LargeBinary,
    MetaData,
    Table,
    Text,
    UniqueConstraint,
)
from sqlalchemy import (
    text as sql_text,
)
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

from lantern.store.types import JSONText, UnixTime
from lantern.validation import HISTORY_EVENTS, MEMORY_KINDS, STATUSES

NAMING_CONVENTION = {
    "ix": "ix_%(column_0_label)s",
    "uq": "uq_%(table_name)s_%(column_0_N_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}


class Base(DeclarativeBase):
    metadata = MetaData(naming_convention=NAMING_CONVENTION)


def _in(values: tuple[str, ...]) -> str:
    return ", ".join(f"'{value}'" for value in values)


class SourceRow(Base):
    """Where evidence came from: a file, a transcript, a piped tool output."""

    __tablename__ = "sources"

    id: Mapped[str] = mapped_column(Text, primary_key=True)
    uri: Mapped[str] = mapped_column(Text, unique=True)
    kind: Mapped[str] = mapped_column(Text)
    title: Mapped[str | None] = mapped_column(Text)
    content_hash: Mapped[str] = mapped_column(Text)
    metadata_: Mapped[dict[str, Any] | None] = mapped_column(
        "metadata", JSONText(), server_default=sql_text("'{}'")
    )
    created_at: Mapped[int] = mapped_column(UnixTime)
    updated_at: Mapped[int] = mapped_column(UnixTime)


class ChunkRow(Base):
    """A slice of a source's text, with its character offsets in the original."""

    __tablename__ = "chunks"
    __table_args__ = (
        UniqueConstraint("source_id", "ordinal"),
        Index("idx_chunks_source", "source_id"),
        # Said-time filters (`lantern.evidence.search.SearchFilters`) walk these indexes.
        Index("ix_chunks_said_from", "said_from", "said_until"),
        Index("ix_chunks_said_until", "said_until"),
    )

    id: Mapped[str] = mapped_column(Text, primary_key=True)
    source_id: Mapped[str] = mapped_column(ForeignKey("sources.id", ondelete="CASCADE"))
    ordinal: Mapped[int] = mapped_column(Integer)
    text: Mapped[str] = mapped_column(Text)
    start_offset: Mapped[int | None] = mapped_column(Integer)
    end_offset: Mapped[int | None] = mapped_column(Integer)
    metadata_: Mapped[dict[str, Any] | None] = mapped_column(
        "metadata", JSONText(), server_default=sql_text("'{}'")
    )
    created_at: Mapped[int] = mapped_column(UnixTime)
    # When the chunk's words were said (revision 0011, `lantern.evidence.said`): the first and
    # last turn times of a transcript chunk, a file's modification time; NULL when unknown.
    said_from: Mapped[int | None] = mapped_column(UnixTime)
    said_until: Mapped[int | None] = mapped_column(UnixTime)


class ChunkSearchTextRow(Base):
    """What a chunk is searched by, where that differs from its text (revision 0007).

    Derived from the chunk's text and its source's kind (`lantern.evidence.searchtext`): the
    decoded turns of a transcript chunk. Written before the chunk in the same transaction (the
    SQLite insert trigger indexes it), removed with it, never exported. The foreign key exists
    on PostgreSQL only, checked at commit; on SQLite the `chunks_ad` trigger removes the row.
    """

    __tablename__ = "chunk_search_text"

    chunk_id: Mapped[str] = mapped_column(
        ForeignKey("chunks.id", ondelete="CASCADE", deferrable=True, initially="DEFERRED"),
        primary_key=True,
    )
    text: Mapped[str] = mapped_column(Text)


class EntityRow(Base):
    """A named thing: mentioned in evidence, or about which a memory record is (legacy
    generation 2; filled by `lantern.entities` since revision 0009). The id is derived from the
    kind and the name (`lantern.store.ids.entity_id`)."""

    __tablename__ = "entities"
    __table_args__ = (
        UniqueConstraint("name", "kind"),
        Index("ix_entities_kind", "kind", "name"),
    )

    id: Mapped[str] = mapped_column(Text, primary_key=True)
    name: Mapped[str] = mapped_column(Text)
    kind: Mapped[str] = mapped_column(Text)


class ChunkEntityRow(Base):
    """Which entities a chunk mentions (legacy generation 2): extracted at ingest, or attached
    by the caller. Removed with the chunk."""

    __tablename__ = "chunk_entities"
    __table_args__ = (Index("ix_chunk_entities_entity_id", "entity_id", "chunk_id"),)

    chunk_id: Mapped[str] = mapped_column(
        ForeignKey("chunks.id", ondelete="CASCADE"), primary_key=True
    )
    entity_id: Mapped[str] = mapped_column(
        ForeignKey("entities.id", ondelete="CASCADE"), primary_key=True
    )


class EntityScanRow(Base):
    """That the extractor has read a chunk, and which version of its rules did (revision 0009).

    Written with the chunk at ingest, and by `lantern entity extract` for chunks stored before;
    a chunk without a row, or with an older version, is what that command still has to read.
    """

    __tablename__ = "entity_scans"

    chunk_id: Mapped[str] = mapped_column(
        ForeignKey("chunks.id", ondelete="CASCADE"), primary_key=True
    )
    extractor: Mapped[int] = mapped_column(Integer)


class EmbeddingRow(Base):
    """A chunk's vector as little-endian float32 (legacy generation 2): one per chunk, of the
    model that made it. Vectors of older stores are used as they are (revision 0008 only adds
    the index on `model`); `lantern embed` computes the missing ones."""

    __tablename__ = "embeddings"
    __table_args__ = (Index("ix_embeddings_model", "model"),)

    chunk_id: Mapped[str] = mapped_column(
        ForeignKey("chunks.id", ondelete="CASCADE"), primary_key=True
    )
    model: Mapped[str] = mapped_column(Text)
    dim: Mapped[int] = mapped_column(Integer)
    vector: Mapped[bytes] = mapped_column(LargeBinary)


class MemoryRecordRow(Base):
    """An explicit, durable piece of state the agent runtime decided to keep."""

    __tablename__ = "memory_records"
    __table_args__ = (
        CheckConstraint(f"kind IN ({_in(MEMORY_KINDS)})", name="kind"),
        CheckConstraint(f"status IN ({_in(STATUSES)})", name="status"),
        CheckConstraint("priority BETWEEN 0 AND 100", name="priority_range"),
        CheckConstraint("urgency BETWEEN 0 AND 100", name="urgency_range"),
        CheckConstraint("confidence >= 0.0 AND confidence <= 1.0", name="confidence_range"),
        # A record is replaced at most once: its successor is unique.
        Index("ix_memory_records_supersedes_id", "supersedes_id", unique=True),
    )

    id: Mapped[str] = mapped_column(Text, primary_key=True)
    kind: Mapped[str] = mapped_column(Text)
    content: Mapped[str] = mapped_column(Text)
    scope: Mapped[str] = mapped_column(Text, server_default=sql_text("'global'"))
    priority: Mapped[int] = mapped_column(Integer, server_default=sql_text("50"))
    urgency: Mapped[int] = mapped_column(Integer, server_default=sql_text("0"))
    confidence: Mapped[float] = mapped_column(Float, server_default=sql_text("1.0"))
    status: Mapped[str] = mapped_column(Text, server_default=sql_text("'active'"))
    created_at: Mapped[int] = mapped_column(UnixTime)
    updated_at: Mapped[int] = mapped_column(UnixTime)
    expires_at: Mapped[int | None] = mapped_column(UnixTime)
    supersedes_id: Mapped[str | None] = mapped_column(
        ForeignKey("memory_records.id", ondelete="SET NULL")
    )
    source_refs: Mapped[list[dict[str, Any]]] = mapped_column(
        JSONText(empty="[]"), server_default=sql_text("'[]'")
    )
    # What the record says now (`lantern.memory.identity`): unique, so that one text is stored
    # once; NULL only for a record that repeats another's, kept from before revision 0006.
    identity_hash: Mapped[str | None] = mapped_column(Text, index=True, unique=True)


# The default listing order, so `memory list` walks an index instead of sorting. Status words
# sort alphabetically with `active` first, which is the order we want.
_LIST_ORDER = (
    MemoryRecordRow.priority.desc(),
    MemoryRecordRow.urgency.desc(),
    MemoryRecordRow.updated_at.desc(),
    MemoryRecordRow.id,
)
Index("ix_memory_records_scope_order", MemoryRecordRow.scope, MemoryRecordRow.status, *_LIST_ORDER)
Index("ix_memory_records_status_order", MemoryRecordRow.status, *_LIST_ORDER)
# `memory expire` and `inspect` find active records past their expiry without a full scan.
Index("ix_memory_records_status_expires_at", MemoryRecordRow.status, MemoryRecordRow.expires_at)


class MemoryHistoryRow(Base):
    """One change to a memory record, appended and never rewritten.

    Triggers (revision 0005) refuse every UPDATE, and every DELETE except of the earlier
    entries of a record that has been forgotten, whose content must leave the store. `id`
    never repeats (AUTOINCREMENT), so it orders the whole log. There is no foreign key to the
    record on purpose: the `forgotten` entry outlives it.
    """

    __tablename__ = "memory_history"
    __table_args__ = (
        CheckConstraint(f"event IN ({_in(HISTORY_EVENTS)})", name="event"),
        Index("ix_memory_history_record_id", "record_id", "id"),
        {"sqlite_autoincrement": True},
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    record_id: Mapped[str] = mapped_column(Text)
    event: Mapped[str] = mapped_column(Text)
    at: Mapped[int] = mapped_column(UnixTime)
    changes: Mapped[dict[str, Any]] = mapped_column(JSONText())


class MemoryRefRow(Base):
    """The `(type, id)` of each reference a memory record holds, for reverse lookups.

    Derived from `memory_records.source_refs` by the repository in the same transaction, so
    that "which memories cite this chunk" and "which references dangle" are index lookups
    rather than a scan of every record's JSON.
    """

    __tablename__ = "memory_refs"
    __table_args__ = (Index("ix_memory_refs_ref_type", "ref_type", "ref_id", "record_id"),)

    record_id: Mapped[str] = mapped_column(
        ForeignKey("memory_records.id", ondelete="CASCADE"), primary_key=True
    )
    ref_type: Mapped[str] = mapped_column(Text, primary_key=True)
    ref_id: Mapped[str] = mapped_column(Text, primary_key=True)


class MemoryEmbeddingRow(Base):
    """A memory record's vector of one model (revision 0008), as little-endian float32.

    `text_hash` is the sha256 of the text it was computed from (the record's content): a vector
    whose record says something else now is stale. Derived data: removed with its record, and
    when the record's content changes, in the same transaction.
    """

    __tablename__ = "memory_embeddings"
    __table_args__ = (Index("ix_memory_embeddings_model", "model"),)

    memory_id: Mapped[str] = mapped_column(
        ForeignKey("memory_records.id", ondelete="CASCADE"), primary_key=True
    )
    model: Mapped[str] = mapped_column(Text, primary_key=True)
    dim: Mapped[int] = mapped_column(Integer)
    vector: Mapped[bytes] = mapped_column(LargeBinary)
    text_hash: Mapped[str] = mapped_column(Text)
    created_at: Mapped[int] = mapped_column(UnixTime)


class StoreSettingRow(Base):
    """A setting of the store (revision 0008): its default embedding provider, whether writes
    embed, and the tokens that tell a process whether the vectors it holds are current
    (`lantern.store.settings`)."""

    __tablename__ = "store_settings"

    key: Mapped[str] = mapped_column(Text, primary_key=True)
    value: Mapped[str] = mapped_column(Text)


class MemoryEntityRow(Base):
    """Which entities a memory record is about, as the caller said (revision 0009)."""

    __tablename__ = "memory_entities"
    __table_args__ = (Index("ix_memory_entities_entity_id", "entity_id", "record_id"),)

    record_id: Mapped[str] = mapped_column(
        ForeignKey("memory_records.id", ondelete="CASCADE"), primary_key=True
    )
    entity_id: Mapped[str] = mapped_column(
        ForeignKey("entities.id", ondelete="CASCADE"), primary_key=True
    )


class IndexFeedRow(Base):
    """One change that an index derived beside the store must apply (revision 0010).

    Written by triggers in the writing transaction, never by Python, so no code path can
    change a record or a vector without the feed saying so (`lantern.indexes.feed`). `seq`
    never repeats (AUTOINCREMENT) and orders the feed; `model` names the vector's model on
    the `memory_vector` side.
    """

    __tablename__ = "index_feed"
    __table_args__ = (
        Index("ix_index_feed_side", "side", "seq"),
        {"sqlite_autoincrement": True},
    )

    seq: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    side: Mapped[str] = mapped_column(Text)
    item_id: Mapped[str] = mapped_column(Text)
    model: Mapped[str | None] = mapped_column(Text)


def _table(model: type[Base]) -> Table:
    return cast(Table, model.__table__)


sources = _table(SourceRow)
chunks = _table(ChunkRow)
chunk_search_text = _table(ChunkSearchTextRow)
entities = _table(EntityRow)
chunk_entities = _table(ChunkEntityRow)
entity_scans = _table(EntityScanRow)
memory_entities = _table(MemoryEntityRow)
embeddings = _table(EmbeddingRow)
memory_records = _table(MemoryRecordRow)
memory_history = _table(MemoryHistoryRow)
memory_refs = _table(MemoryRefRow)
memory_embeddings = _table(MemoryEmbeddingRow)
store_settings = _table(StoreSettingRow)
index_feed = _table(IndexFeedRow)
