"""The memory repository: every rule about memory records, once, for the CLI, API and MCP.

Its parts live beside it by what they do: `writes` (add, update, supersede), `lifecycle`
(archive, restore, expire, forget), `entities` (attach, detach), `reads` (get, chain, history,
entities, list, search) and `activity` (stats, and the changes of every record). Each public
method is one operation in one transaction, timed once. The statements are SQLAlchemy Core
against the mapped tables: the ORM's per-object bookkeeping costs more than the database work
on these small, hot operations, and callers get frozen records either way.

Every change a method makes to a record is also appended to its history, its search row and its
reference rows in the same transaction (`lantern.memory.changes`), so that they can never
disagree with the record. A confined repository shows no id of a record outside its scopes in
what it returns (`lantern.memory.outside`).
"""

from __future__ import annotations

from lantern.boundary import checked
from lantern.memory.activity import MemoryActivity
from lantern.memory.entities import MemoryEntities
from lantern.memory.lifecycle import MemoryLifecycle
from lantern.memory.outside import hiding
from lantern.memory.reads import MemoryReads
from lantern.memory.writes import MemoryWrites

__all__ = ["MemoryRepository"]


@hiding
@checked
class MemoryRepository(MemoryWrites, MemoryEntities, MemoryLifecycle, MemoryReads, MemoryActivity):
    """Adds, revises, retires, forgets, finds, explains and sums up memory records in one store."""

    def keep_index(self) -> None:
        """Keep the word index of a database store in this process from now on: for a
        long-lived server serving many clients (`lantern.memory.topk.keep`). Nothing changes
        for a SQLite store, whose index lives beside its file whoever opens it."""
        from lantern.memory import topk

        topk.keep(self)
