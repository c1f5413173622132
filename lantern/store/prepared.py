"""Hot statements compiled once and run on the driver's own cursor: the fast path for SQLite.

Measured against raw `sqlite3` on the same file, SQLAlchemy's `Connection.execute` adds about
30-40 µs to every statement (cache-key generation, execution context, result wrapping), which
is more than the statement itself costs for a look-up by key, an insert or a top-50 listing.
A `Prepared` keeps the statement as Core (same models, same table objects, same SQL), compiles
it once for SQLite, and there hands the SQL string and its parameters straight to the
driver, applying the column types' own bind and result processors, so callers see exactly
the values `Connection.execute` would give them. Other engines take the ordinary
`Connection.execute` path, where the network round trip dwarfs this overhead.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, cast

from sqlalchemy import Connection, Dialect
from sqlalchemy.sql.base import Executable
from sqlalchemy.sql.compiler import SQLCompiler
from sqlalchemy.sql.elements import ClauseElement

Params = Mapping[str, Any]
Processor = Callable[[Any], Any]


@dataclass(frozen=True, slots=True)
class _Compiled:
    sql: str
    names: tuple[str, ...]
    """The bind parameter names, in the order of the `?` placeholders."""
    defaults: dict[str, Any]
    """Values bound in the statement itself (literals in Core expressions)."""
    bind_processors: tuple[tuple[int, Processor], ...]
    result_processors: tuple[tuple[int, Processor], ...]

    def positional(self, params: Params) -> list[Any]:
        values = [params[name] if name in params else self.defaults[name] for name in self.names]
        for index, process in self.bind_processors:
            values[index] = process(values[index])
        return values

    def processed(self, rows: list[Any]) -> list[Any]:
        if not self.result_processors:
            return rows
        done = []
        for row in rows:
            values = list(row)
            for index, process in self.result_processors:
                values[index] = process(values[index])
            done.append(values)
        return done


class Prepared:
    """One Core statement, compiled once, executed cheaply (see the module note)."""

    __slots__ = ("_compiled", "statement")

    def __init__(self, statement: Executable) -> None:
        self.statement = statement
        self._compiled: _Compiled | None = None

    def rows(self, conn: Connection, params: Params | None = None) -> list[Any]:
        """Run the statement in `conn`'s transaction; its rows (indexable by position)."""
        if conn.dialect.name != "sqlite":
            result = conn.execute(self.statement, params or {})
            return list(result.all()) if result.returns_rows else []
        return self.rows_on(driver_of(conn), conn.dialect, params)

    def rows_on(
        self, driver: sqlite3.Connection, dialect: Dialect, params: Params | None = None
    ) -> list[Any]:
        """Run the statement on a `sqlite3` connection directly."""
        compiled = self._compiled or self._compile(dialect)
        cursor = driver.execute(compiled.sql, compiled.positional(params or {}))
        return compiled.processed(cursor.fetchall())

    def explainable(self, dialect: Dialect, params: Params | None = None) -> tuple[str, list[Any]]:
        """The SQL and positional values `rows_on` would run, for `EXPLAIN QUERY PLAN`."""
        compiled = self._compiled or self._compile(dialect)
        return compiled.sql, compiled.positional(params or {})

    def execute_many(self, conn: Connection, params: Sequence[Params]) -> int:
        """Run the statement once per parameter set (a statement that returns no rows); the
        number of rows it changed."""
        if not params:
            return 0
        if conn.dialect.name != "sqlite":
            return int(conn.execute(self.statement, list(params)).rowcount)
        compiled = self._compiled or self._compile(conn.dialect)
        positional = [compiled.positional(p) for p in params]
        return int(driver_of(conn).executemany(compiled.sql, positional).rowcount)

    def _compile(self, dialect: Dialect) -> _Compiled:
        compiled = cast(ClauseElement, self.statement).compile(dialect=dialect)
        assert isinstance(compiled, SQLCompiler)
        # An IN over a Python list renders at execution time; hot statements bind each value.
        assert "POSTCOMPILE" not in compiled.string, "a Prepared statement cannot expand lists"
        names = tuple(compiled.positiontup or ())
        binds = [compiled.binds[name] for name in names]
        defaults = {
            name: bind.effective_value
            for name, bind in zip(names, binds, strict=True)
            if not bind.required
        }
        bind_processors = tuple(
            (index, process)
            for index, bind in enumerate(binds)
            if (process := bind.type.dialect_impl(dialect).bind_processor(dialect)) is not None
        )
        columns = getattr(self.statement, "exported_columns", ())
        result_processors = tuple(
            (index, process)
            for index, column in enumerate(columns)
            if (process := column.type.dialect_impl(dialect).result_processor(dialect, None))
            is not None
        )
        self._compiled = _Compiled(
            compiled.string, names, defaults, bind_processors, result_processors
        )
        return self._compiled


def driver_of(conn: Connection) -> sqlite3.Connection:
    """The `sqlite3` connection under a SQLAlchemy connection to a SQLite store."""
    return cast(sqlite3.Connection, conn.connection.driver_connection)
