"""The entity repository: entities listed and shown, attached to chunks, and extracted from the
chunks already stored.

Its parts: `reads` (list, get, chunks, pending) and `writes` (attach and detach entities,
extract), over `core`, which holds the store and the caller's scopes.
"""

from __future__ import annotations

from lantern.boundary import checked
from lantern.entities.reads import EntityReads
from lantern.entities.writes import EntityWrites

__all__ = ["EntityRepository"]


@checked
class EntityRepository(EntityWrites, EntityReads):
    """Lists and shows entities, attaches them to chunks, and fills the links of stored chunks."""
