"""What the parts of the memory repository share: the store, the scope policy, compiled
statements, and the write transaction.

On SQLite every write runs with `secure_delete` on: text that a write removes or replaces
(an updated content, a merged-away search segment, a forgotten record) is overwritten with zeros
at once, instead of lingering in free pages until `forget` would have to find it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager

from sqlalchemy import ColumnElement, Connection
from sqlalchemy.sql.base import Executable

from lantern.memory.scopes import UNRESTRICTED, ScopePolicy
from lantern.store.engine import Store
from lantern.store.prepared import Prepared, driver_of

_MAX_SHAPES = 256


class MemoryCore:
    """The state every part of `MemoryRepository` works with.

    `scopes` confines every read and write to those scopes (`lantern.memory.scopes`): each
    statement that reads records, and each helper that fetches one by id, takes the policy, so
    a record outside it is never returned, changed or named.
    """

    def __init__(self, store: Store, scopes: ScopePolicy = UNRESTRICTED) -> None:
        self._store = store
        self._scopes = scopes
        self._statements: dict[tuple[object, ...], Prepared] = {}

    def _policy(self) -> list[ColumnElement[bool]]:
        return self._scopes.clauses(self._store.dialect)

    def _fence(self) -> list[ColumnElement[bool]] | None:
        """The scope conditions of a confined caller, for what must read as absent outside
        them (an entity only records outside have); None when unconfined."""
        return self._policy() if self._scopes.restricted else None

    def _prepared(self, shape: tuple[object, ...], build: Callable[[], Executable]) -> Prepared:
        """The compiled statement for this shape of query, built on first use.

        Listings and searches vary in their values far more than in their shape, and building
        and compiling a statement costs more than running it; the shapes seen are few.
        """
        statement = self._statements.get(shape)
        if statement is None:
            if len(self._statements) >= _MAX_SHAPES:
                self._statements.clear()
            statement = self._statements[shape] = Prepared(build())
        return statement

    @contextmanager
    def _write(self, *, index_after: bool = True) -> Iterator[Connection]:
        """A write transaction; once it commits, the word index is brought up to date in the
        background (`topk.after_write`), unless the caller does it itself (`index_after`)."""
        with self._store.write() as conn:
            if conn.dialect.name == "sqlite":
                driver_of(conn).execute("PRAGMA secure_delete = ON")
            yield conn
        if index_after:
            from lantern.memory import topk

            topk.after_write(self)
