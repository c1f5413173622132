"""The two kinds of stored vectors and where each lives.

* Memory records: `memory_embeddings`, one vector per record and model, with the hash of the
  text it was computed from (revision 0008).
* Chunks: the legacy `embeddings` table, one vector per chunk (its primary key is the chunk
  id), of whichever model made it. A chunk's id changes with its text, and its vector goes with
  it, so no text hash is needed; a chunk whose searchable text changes while its id stays (its
  source's kind changed) loses its vector in the same transaction.
"""

from __future__ import annotations

from dataclasses import dataclass
from hashlib import sha256
from typing import Any

from sqlalchemy import Column, Table

from lantern.store.models import embeddings, memory_embeddings
from lantern.store.settings import CHUNK_VECTORS, MEMORY_VECTORS


@dataclass(frozen=True, slots=True)
class Side:
    """One kind of vector: its table, the column naming what a vector belongs to, the token
    its writes replace, and what a user calls the items (`records`, `chunks`)."""

    name: str
    table: Table
    key: Column[Any]
    token: str
    items: str


MEMORY = Side("memory", memory_embeddings, memory_embeddings.c.memory_id, MEMORY_VECTORS, "records")
CHUNKS = Side("chunks", embeddings, embeddings.c.chunk_id, CHUNK_VECTORS, "chunks")


def text_hash(text: str) -> str:
    """What a memory vector records of the text it was computed from: sha256, hex."""
    return sha256(text.encode("utf-8", "surrogatepass")).hexdigest()
