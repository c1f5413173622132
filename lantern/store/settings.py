"""The store's own settings, and the tokens that say whether vectors held in memory are current.

`store_settings` (revision 0008) is a key/value table:

* `embed.model`: the embedding provider a store uses when neither the caller nor
  `LANTERN_EMBED_MODEL` names one (a provider name, `minilm`, `hashing`...); absent, Lantern's
  default.
* `embed.on_write`: `true` when adding or changing memory records and ingesting evidence also
  computes their vectors; absent or anything else, writes embed nothing.
* `vectors.memory`, `vectors.chunks`: a random token that every write of memory or chunk
  vectors replaces in its own transaction. A process that keeps vectors in memory (the MCP
  server) reads the token before a search, one look-up by key, and reloads only when it
  changed. Tokens are random rather than counters so that a store replaced by another at the
  same path is never taken for it.

Reading and writing these takes one statement; nothing here imports more than SQLAlchemy, so
that a write checking whether it must embed pays one look-up and no import.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass

from sqlalchemy import Connection, bindparam, delete, or_, select

from lantern.store.dialect import upsert
from lantern.store.models import store_settings as table
from lantern.store.prepared import Prepared
from lantern.validation import JSONObject

EMBED_MODEL = "embed.model"
EMBED_ON_WRITE = "embed.on_write"
MEMORY_VECTORS = "vectors.memory"
CHUNK_VECTORS = "vectors.chunks"

_TRUE = "true"
_EMBEDDING = Prepared(
    select(table.c.key, table.c.value).where(
        or_(table.c.key == bindparam("model_key"), table.c.key == bindparam("on_write_key"))
    )
)
_VALUE = Prepared(select(table.c.value).where(table.c.key == bindparam("key")))
_PUT: dict[str, Prepared] = {}


@dataclass(frozen=True, slots=True)
class EmbeddingSettings:
    """What a store says about embeddings: its default provider, and whether writes embed."""

    default_model: str | None
    on_write: bool

    def to_json(self) -> JSONObject:
        """`{"default_model", "on_write"}`, as `db settings --json` prints them."""
        return {"default_model": self.default_model, "on_write": self.on_write}


def embedding_settings(conn: Connection) -> EmbeddingSettings:
    """The store's embedding settings (both keys in one statement)."""
    found = dict(_EMBEDDING.rows(conn, {"model_key": EMBED_MODEL, "on_write_key": EMBED_ON_WRITE}))
    model = found.get(EMBED_MODEL)
    return EmbeddingSettings(
        default_model=model if model else None, on_write=found.get(EMBED_ON_WRITE) == _TRUE
    )


def embeds_on_write(conn: Connection) -> bool:
    """Whether writes embed (`embed.on_write`): one look-up by key, in the caller's
    transaction, so that a write asks it inside its own transaction at no other cost."""
    rows = _VALUE.rows(conn, {"key": EMBED_ON_WRITE})
    return bool(rows) and rows[0][0] == _TRUE


def set_embedding_settings(
    conn: Connection,
    *,
    default_model: str | None = None,
    clear_model: bool = False,
    on_write: bool | None = None,
) -> None:
    """Record a default provider (or clear it) and whether writes embed, in the caller's
    write transaction; what is not given stays as it is."""
    if clear_model:
        conn.execute(delete(table).where(table.c.key == EMBED_MODEL))
    elif default_model is not None:
        put(conn, EMBED_MODEL, default_model)
    if on_write is not None:
        put(conn, EMBED_ON_WRITE, _TRUE if on_write else "false")


def put(conn: Connection, key: str, value: str) -> None:
    """Set `key` to `value`, adding the row when there is none."""
    dialect = conn.dialect.name
    statement = _PUT.get(dialect)
    if statement is None:
        statement = _PUT[dialect] = Prepared(upsert(dialect, table, ["key"], ["value"]))
    statement.execute_many(conn, [{"key": key, "value": value}])


def token(conn: Connection, key: str) -> str | None:
    """The current token of `key` (`MEMORY_VECTORS` or `CHUNK_VECTORS`); None when the row is
    missing, which no cached vectors are ever taken to match."""
    rows = _VALUE.rows(conn, {"key": key})
    return str(rows[0][0]) if rows else None


def bump(conn: Connection, key: str) -> None:
    """Give `key` a new token, in the caller's write transaction: vectors of that kind changed."""
    put(conn, key, secrets.token_hex(8))
