"""Computing the missing and stale vectors of one side, a batch at a time (`lantern embed`).

The side's items are read in id order, a batch per read transaction; those without a current
vector of the model are embedded outside any transaction, and their vectors written in one
short write transaction per batch, which first reads the items again and keeps only those
whose text is still the one embedded. So a long run never holds the write lock for more than a
batch's insert, readers are never blocked, an interruption loses at most the batch under way,
and running it again picks up where it stopped (what was written is current, so unchanged).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from sqlalchemy import Connection

from lantern.store.engine import Store
from lantern.validation import JSONObject

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import NDArray

    from lantern.embeddings.provider import EmbeddingProvider

Progress = Callable[[int, int], None]
"""Called after each batch with the items looked at so far and the items to look at."""


@dataclass(frozen=True, slots=True)
class Item:
    """An item looked at: its id, and the text to embed when its vector is missing or stale
    (None when it has a current vector)."""

    id: str
    text: str | None


@dataclass(frozen=True, slots=True)
class EmbedReport:
    """What one side's run did: vectors computed and written, items whose vector was already
    current, and the time it took."""

    side: str
    model: str
    embedded: int
    unchanged: int
    seconds: float

    def to_json(self) -> JSONObject:
        """`{"embedded", "unchanged", "seconds"}`."""
        return {"embedded": self.embedded, "unchanged": self.unchanged, "seconds": self.seconds}


Scan = Callable[[Connection, str | None, int], list[Item]]
"""The next items after an id (None: from the first), at most so many, in id order."""
Write = Callable[[Connection, list[Item], "NDArray[np.float32]"], int]
"""Store the vectors of these items (re-reading them first); how many were written."""


def backfill(
    store: Store,
    provider: EmbeddingProvider,
    *,
    side: str,
    scan: Scan,
    write: Write,
    total: int,
    batch: int,
    progress: Progress | None = None,
) -> EmbedReport:
    """Embed what `scan` says is missing or stale, `batch` items at a time."""
    from lantern.embeddings.provider import embed_checked

    started = time.perf_counter()
    after: str | None = None
    embedded = unchanged = done = 0
    while True:
        with store.read() as conn:
            items = scan(conn, after, batch)
        if not items:
            break
        after = items[-1].id
        stale = [item for item in items if item.text is not None]
        unchanged += len(items) - len(stale)
        if stale:
            vectors = embed_checked(provider, [item.text or "" for item in stale])
            with store.write() as conn:
                embedded += write(conn, stale, vectors)
        done += len(items)
        if progress is not None:
            progress(done, max(total, done))
    return EmbedReport(side, provider.model, embedded, unchanged, time.perf_counter() - started)


@dataclass(frozen=True, slots=True)
class EmbedSummary:
    """What `lantern embed` did: the provider and model, each side's report (None for a side
    not asked for), and the whole run's time."""

    provider: str
    model: str
    memory: EmbedReport | None
    sources: EmbedReport | None
    seconds: float

    def to_json(self) -> JSONObject:
        """`{"provider", "model", "memory", "sources", "seconds"}` (docs/json.md)."""
        return {
            "provider": self.provider,
            "model": self.model,
            "memory": None if self.memory is None else self.memory.to_json(),
            "sources": None if self.sources is None else self.sources.to_json(),
            "seconds": self.seconds,
        }
