"""How much of a store has vectors, per model (`lantern db status`)."""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import Connection, func, select

from lantern.store.models import chunks, embeddings, memory_embeddings, memory_records
from lantern.store.settings import EmbeddingSettings, embedding_settings
from lantern.validation import JSONObject


@dataclass(frozen=True, slots=True)
class ModelCoverage:
    """The records and chunks that have a vector of one model, and those that have none."""

    model: str
    dim: int | None
    records: int
    records_without: int
    chunks: int
    chunks_without: int

    def to_json(self) -> JSONObject:
        return {
            "model": self.model,
            "dim": self.dim,
            "records": self.records,
            "records_without": self.records_without,
            "chunks": self.chunks,
            "chunks_without": self.chunks_without,
        }


@dataclass(frozen=True, slots=True)
class Coverage:
    """The store's embedding settings, its counts of records and chunks, and per model (by
    name) how many of them have a vector of it."""

    settings: EmbeddingSettings
    records: int
    chunks: int
    models: tuple[ModelCoverage, ...]

    def to_json(self) -> JSONObject:
        """`{"default_model", "on_write", "records", "chunks", "models": [...]}`."""
        return {
            **self.settings.to_json(),
            "records": self.records,
            "chunks": self.chunks,
            "models": [model.to_json() for model in self.models],
        }


def coverage(conn: Connection) -> Coverage:
    """Counted with the indexes on `model`: one grouped count per table."""
    records = int(conn.execute(select(func.count()).select_from(memory_records)).scalar_one())
    chunk_count = int(conn.execute(select(func.count()).select_from(chunks)).scalar_one())
    found: dict[str, dict[str, int]] = {}
    dims: dict[str, int] = {}
    for name, table in (("records", memory_embeddings), ("chunks", embeddings)):
        grouped = conn.execute(
            select(table.c.model, func.max(table.c.dim), func.count()).group_by(table.c.model)
        )
        for model, dim, count in grouped:
            found.setdefault(model, {})[name] = int(count)
            dims.setdefault(model, int(dim))
    models = tuple(
        ModelCoverage(
            model=model,
            dim=dims.get(model),
            records=counts.get("records", 0),
            records_without=records - counts.get("records", 0),
            chunks=counts.get("chunks", 0),
            chunks_without=chunk_count - counts.get("chunks", 0),
        )
        for model, counts in sorted(found.items())
    )
    return Coverage(embedding_settings(conn), records, chunk_count, models)
