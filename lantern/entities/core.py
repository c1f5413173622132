"""What the parts of the entity repository share: the store, and the caller's scopes.

Links to memory records are written by the memory repository (`lantern.memory.entities`),
where the scope fence and the record's history are; here a scope-restricted caller's policy
only narrows what is counted and shown of memory records. Evidence has no scope: an entity a
chunk mentions is visible to every caller, one that only memory records name only to callers
who may see one of them.

This package sits below memory, so it cannot import `lantern.memory.scopes.ScopePolicy`; it
names what it needs of one (`Scopes`), and the facade passes its policy, as it does to the
memory repository.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

from lantern.store.engine import Store

if TYPE_CHECKING:
    from sqlalchemy import ColumnElement


class Scopes(Protocol):
    """What the entity repository needs of a caller's scope policy."""

    @property
    def restricted(self) -> bool:
        """Whether the caller sees only some scopes."""
        ...

    def clauses(self, dialect: str) -> list[ColumnElement[bool]]:
        """The conditions on `memory_records` its scopes add (none when unrestricted)."""
        ...


class _Unrestricted:
    restricted = False

    def clauses(self, dialect: str) -> list[ColumnElement[bool]]:
        return []


_UNRESTRICTED = _Unrestricted()


class EntityCore:
    """The state every part of `EntityRepository` works with."""

    def __init__(self, store: Store, scopes: Scopes = _UNRESTRICTED) -> None:
        self._store = store
        self._scopes = scopes

    def _policy(self) -> list[ColumnElement[bool]]:
        return self._scopes.clauses(self._store.dialect)
