"""What the parts of the evidence repository share: the store.

Evidence has no scope (a chunk is visible to every caller), so unlike the memory and entity
cores this one holds no scope policy; it exists so that every repository is built the same way
(docs/architecture.md, "One repository style").
"""

from __future__ import annotations

from lantern.store.engine import Store


class EvidenceCore:
    """The state every part of `EvidenceRepository` works with."""

    def __init__(self, store: Store) -> None:
        self._store = store
