"""Engines, connections and transactions, and the translation of driver errors.

Every operation runs in exactly one transaction, opened here: `Store.read()` for reading and
`Store.write()` for writing. On SQLite the driver's own transaction handling is switched off
(SQLAlchemy's documented pysqlite recipe) so that `BEGIN` is explicit: writes start with
`BEGIN IMMEDIATE`, which makes concurrent writers queue on the busy timeout instead of failing
half-way with "database is locked", DDL is transactional, and reads never take a write lock.
"""

from __future__ import annotations

import os
import sqlite3
import time
import weakref
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from pathlib import Path
from typing import Any

from sqlalchemy import Connection, Engine, create_engine, event
from sqlalchemy.exc import DBAPIError, NoSuchModuleError

from lantern.errors import (
    Conflict,
    InvalidInput,
    LanternError,
    MissingDependency,
    NotAStore,
    PolicyRefused,
    StoreBusy,
    StoreIOError,
    StoreUnreachable,
    WriteAbandoned,
    install_hint,
)
from lantern.store.location import StoreLocation
from lantern.store.prepared import Params, Prepared, driver_of

BUSY_TIMEOUT_SECONDS = 15.0
BUSY_TIMEOUT_ENV = "LANTERN_BUSY_TIMEOUT"
_WRITE_OPTION = "lantern_write"
_UNCHANGED = "lantern_unchanged_rows"
"""Key of `Store.fetch_unchanged`'s rows in a connection's `info`."""


def busy_timeout() -> float:
    """Seconds a writer waits for another to finish: LANTERN_BUSY_TIMEOUT, else 15."""
    raw = os.environ.get(BUSY_TIMEOUT_ENV)
    if raw is None or not raw.strip():
        return BUSY_TIMEOUT_SECONDS
    try:
        seconds = float(raw)
    except ValueError:
        seconds = -1.0
    if not 0 < seconds <= 86_400:
        raise InvalidInput(
            f"{BUSY_TIMEOUT_ENV} must be a number of seconds from 0 to 86400; got {raw!r}"
        )
    return seconds


_ABANDONED: ContextVar[Callable[[], bool] | None] = ContextVar("lantern_abandoned", default=None)


@contextmanager
def abandonable(abandoned: Callable[[], bool]) -> Iterator[None]:
    """Writes made inside roll back instead of committing once `abandoned()` is true.

    A caller that may give up on a call (an MCP client cancelling it, a server shutting down)
    runs the call inside this: every write transaction asks just before its commit, so that a
    write is either committed whole, with the call still wanted, or rolled back whole. The
    commit itself is never interrupted.
    """
    token = _ABANDONED.set(abandoned)
    try:
        yield
    finally:
        _ABANDONED.reset(token)


Clock = Callable[[], int]
"""Where an operation takes its timestamp: integer unix seconds, UTC."""


def system_clock() -> int:
    """The real time: integer unix seconds, UTC (the clock of every store not given one)."""
    return int(time.time())


class Store:
    """An open store: one engine, the transactions every repository call runs in, and the
    clock every stored timestamp and expiry check comes from."""

    def __init__(
        self,
        location: StoreLocation,
        engine: Engine,
        *,
        read_only: bool = False,
        clock: Clock = system_clock,
    ) -> None:
        self.location = location
        self.engine = engine
        # Read-only (`lantern mcp --read-only`): `write()` refuses to open a transaction.
        self.read_only = read_only
        # Each operation calls it once and uses that one value for everything it writes or
        # judges (created/updated times, history, expiry), so a caller or a test that passes
        # its own clock (`Lantern.open(clock=...)`) sets the time of every module at once.
        self.clock = clock
        self._write_engine = engine.execution_options(**{_WRITE_OPTION: True})
        self._kept = _KeptConnections(engine, self._write_engine)
        # Work that runs beside the store's callers (a derived index catching up after a
        # write) and must end before its connections do.
        self._before_close: list[Callable[[], None]] = []
        weakref.finalize(self, self._kept.close)

    @property
    def dialect(self) -> str:
        return self.engine.dialect.name

    @contextmanager
    def read(self) -> Iterator[Connection]:
        """A read transaction: a consistent snapshot that never blocks writers."""
        with translate_errors(self.location), self._transaction(write=False) as conn:
            yield conn

    def fetch(self, statement: Prepared, params: Params | None = None) -> list[Any]:
        """The rows of one read statement, which is its own consistent snapshot.

        On SQLite a lone SELECT needs no explicit transaction: it runs on a kept connection
        in autocommit mode, which saves the `BEGIN`/`COMMIT` round trips a listing would
        otherwise pay. Elsewhere it runs in an ordinary read transaction.
        """
        if self.dialect != "sqlite":
            with self.read() as conn:
                return statement.rows(conn, params)
        with translate_errors(self.location), self._kept.lent(write=False) as conn:
            return statement.rows_on(driver_of(conn), self.engine.dialect, params)

    def fetch_unchanged(self, statement: Prepared) -> list[Any]:
        """`fetch` of a statement without parameters, whose rows are kept and given again
        while nothing has been committed to the store since: for counts that a search reports
        beside every page, which SQLite could otherwise only answer by reading a whole index.

        On SQLite the rows are kept with the connection that read them, beside its
        `PRAGMA data_version`, which changes whenever another connection (of this process or
        any other) commits. A read connection never writes, so every commit is another's and
        is seen. Other engines run the statement every time.
        """
        if self.dialect != "sqlite":
            return self.fetch(statement)
        with translate_errors(self.location), self._kept.lent(write=False) as conn:
            driver = driver_of(conn)
            # Read before the statement: a commit in between makes the kept rows newer than
            # their version says, so they are read again next time, never given stale.
            version = driver.execute("PRAGMA data_version").fetchone()[0]
            kept: dict[int, tuple[Prepared, int, list[Any]]] = conn.info.setdefault(_UNCHANGED, {})
            hit = kept.get(id(statement))
            if hit is not None and hit[0] is statement and hit[1] == version:
                return hit[2]
            rows = statement.rows_on(driver, self.engine.dialect)
            kept[id(statement)] = (statement, version, rows)
            return rows

    @contextmanager
    def write(self) -> Iterator[Connection]:
        """A write transaction: all of it commits or none of it does.

        A read-only store refuses here, below every repository, so that no write can happen
        whichever call asks for one.
        """
        if self.read_only:
            where = self.location.path or self.location.display_url
            raise PolicyRefused(f"the store at {where} is open read-only; nothing was written")
        with translate_errors(self.location), self._transaction(write=True) as conn:
            yield conn
            abandoned = _ABANDONED.get()
            if abandoned is not None and abandoned():
                raise WriteAbandoned("the call was cancelled before its write committed")

    @contextmanager
    def probe(self) -> Iterator[Connection]:
        """A write transaction that is always rolled back, whatever happens inside it.

        For checks that SQLite words as writes (FTS5's `integrity-check` is an `INSERT`): they
        take the write lock like a writer, and the rollback guarantees the file is not changed.
        """
        with translate_errors(self.location), self._write_engine.connect() as conn:
            transaction = conn.begin()
            try:
                yield conn
            finally:
                transaction.rollback()

    def before_close(self, finish: Callable[[], None]) -> None:
        """Have `close` call `finish` first (once), to end work that uses the store."""
        if finish not in self._before_close:
            self._before_close.append(finish)

    def close(self) -> None:
        while self._before_close:
            self._before_close.pop()()
        self._kept.close()
        self.engine.dispose()

    @contextmanager
    def _transaction(self, *, write: bool) -> Iterator[Connection]:
        if self.dialect != "sqlite":
            # A fresh checkout each time: the pool's pre-ping finds a server that went away.
            with (self._write_engine if write else self.engine).begin() as conn:
                yield conn
            return
        with self._kept.lent(write=write) as conn, conn.begin():
            yield conn


class _KeptConnections:
    """Idle SQLAlchemy connections to a SQLite store, kept open between transactions.

    Checking a connection out of the pool and wrapping it in a new `Connection` costs about
    12 µs, more than a look-up by key costs SQLite; reusing the `Connection` leaves only the
    BEGIN and COMMIT. Reads and writes keep separate connections because the "begin" hook
    tells them apart by their execution options. A few are kept per kind (as many as threads
    usually run transactions at once); the pool holds the rest. Only a connection whose
    transaction ended cleanly comes back.
    """

    _KEPT_PER_KIND = 4

    def __init__(self, engine: Engine, write_engine: Engine) -> None:
        self._engines = {False: engine, True: write_engine}
        self._idle: dict[bool, list[Connection]] = {False: [], True: []}
        self._closed = False

    @contextmanager
    def lent(self, *, write: bool) -> Iterator[Connection]:
        """An idle connection (or a new one), kept again afterwards if all went well."""
        idle = self._idle[write]
        try:
            conn = idle.pop()  # atomic: two threads never get the same one
        except IndexError:
            conn = self._engines[write].connect()
        try:
            yield conn
        except BaseException:
            conn.close()  # whatever state a failure left it in, the pool resets it
            raise
        if self._closed or len(idle) >= self._KEPT_PER_KIND:
            conn.close()
        else:
            idle.append(conn)

    def close(self) -> None:
        self._closed = True
        for idle in self._idle.values():
            while idle:
                idle.pop().close()


def create_store_engine(location: StoreLocation, *, read_only: bool = False) -> Engine:
    """An engine configured for Lantern's durability and concurrency rules.

    `read_only` also makes the database refuse writes on every connection (SQLite's
    `query_only`, PostgreSQL's read-only transactions): a second guard behind `Store.write`.
    """
    if location.path is not None:
        return _sqlite_engine(location, read_only=read_only)
    options = {"postgresql_readonly": True} if read_only else {}
    try:
        engine = create_engine(location.url, pool_pre_ping=True, execution_options=options)
    except NoSuchModuleError as exc:
        raise MissingDependency(
            f"PostgreSQL support needs the psycopg driver: {install_hint('postgres')}"
        ) from exc
    except ModuleNotFoundError as exc:
        raise MissingDependency(
            f"PostgreSQL support needs the psycopg driver: {install_hint('postgres')}"
        ) from exc
    return engine


def _sqlite_engine(location: StoreLocation, *, read_only: bool = False) -> Engine:
    engine = create_engine(location.url, connect_args={"timeout": busy_timeout()})

    @event.listens_for(engine, "connect")
    def _configure(dbapi_connection: sqlite3.Connection, _record: Any) -> None:
        # Hand transaction control to the "begin" hook below (the pysqlite recipe).
        dbapi_connection.isolation_level = None
        dbapi_connection.execute("PRAGMA foreign_keys = ON")
        dbapi_connection.execute("PRAGMA synchronous = NORMAL")
        if read_only:
            dbapi_connection.execute("PRAGMA query_only = ON")

    @event.listens_for(engine, "begin")
    def _begin(conn: Connection) -> None:
        # On the driver itself: the statement needs none of SQLAlchemy's execution machinery,
        # which would cost more than the BEGIN.
        write = conn.get_execution_options().get(_WRITE_OPTION, False)
        driver_of(conn).execute("BEGIN IMMEDIATE" if write else "BEGIN")

    return engine


def prepare_sqlite_file(path: Path) -> bool:
    """Create the store file (owner-only) and its missing parent directories; True if created.

    SQLite gives the `-wal` and `-shm` companions the mode of the main file, so creating the
    file ourselves with 0600 keeps all three private whatever the umask.
    """
    if path.is_dir():
        raise InvalidInput(f"{path} is a directory; give the path of a store file")
    try:
        missing: list[Path] = []
        parent = path.parent
        while not parent.exists():
            missing.append(parent)
            parent = parent.parent
        for directory in reversed(missing):
            directory.mkdir(mode=0o700)
        fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600)
    except FileExistsError:
        return False
    except OSError as exc:
        raise StoreIOError(f"cannot create the store at {path}: {exc.strerror}") from exc
    os.close(fd)
    return True


def make_owner_only(path: Path) -> None:
    """Make a file that is about to become a store readable by its owner only (0600).

    For a file that was already there, empty, when a store is created in it: whatever mode it
    had, a store (and the `-wal` and `-shm` files, which take its mode) is private.
    """
    try:
        os.chmod(path, 0o600)
    except OSError as exc:
        raise StoreIOError(
            f"cannot make {path} readable by its owner only: {exc.strerror}"
        ) from exc


@contextmanager
def translate_errors(location: StoreLocation) -> Iterator[None]:
    """Turn driver errors a user can cause into `LanternError`s with one-line messages.

    Raw `sqlite3` errors are translated too: a few statements (checkpoints, the journal mode)
    run on the driver connection itself, outside SQLAlchemy's wrapping.
    """
    try:
        yield
    except (DBAPIError, sqlite3.Error) as exc:
        raise translate(exc, location) from exc
    except UnicodeEncodeError as exc:
        # A value bound to a statement that cannot be UTF-8 (a lone surrogate, as a command
        # line that is not valid UTF-8 gives): the drivers refuse it before the database sees it.
        raise InvalidInput(
            f"a value given is not valid UTF-8 text: {exc.object[exc.start : exc.end]!r} "
            "cannot be encoded"
        ) from exc


def translate(exc: DBAPIError | sqlite3.Error, location: StoreLocation) -> LanternError:
    where = str(location.path) if location.path else location.display_url
    orig = exc.orig if isinstance(exc, DBAPIError) else exc
    detail = (str(orig).strip() or type(orig).__name__).splitlines()[0]
    lowered = detail.lower()
    if "locked" in lowered or "could not obtain lock" in lowered or "lock timeout" in lowered:
        return StoreBusy(
            f"the store at {where} stayed busy (locked by another writer) past the "
            f"{busy_timeout():g} s timeout; try again"
        )
    if "disk is full" in lowered or "no space left" in lowered:
        return StoreIOError(f"the disk holding {where} is full; free some space and retry")
    if "readonly" in lowered or "read-only" in lowered:
        return StoreIOError(f"the store at {where} is read-only: {detail}")
    if "disk i/o error" in lowered:
        name = getattr(orig, "sqlite_errorname", None)
        detail = f"{detail}, {name}" if name else detail
        if location.path is not None and _nearly_full(location.path):
            # A full disk often shows as an I/O error: growing the -shm file, say, fails so.
            return StoreIOError(
                f"the disk holding {where} is full; free some space and retry ({detail})"
            )
        return StoreIOError(f"I/O error on the store at {where}: {detail}")
    if "vtable constructor failed" in lowered:
        # FTS5 cannot read its own index (see lantern.memory.fts.merge_all); the rows are intact.
        return NotAStore(
            f"a full-text index of {where} is damaged ({detail}); "
            "repair it with: lantern db rebuild-index"
        )
    if "not a database" in lowered or "malformed" in lowered or "corrupt" in lowered:
        return NotAStore(f"{where} is not a Lantern store, or it is corrupt ({detail})")
    if "unable to open" in lowered:
        if location.path is not None and _cannot_write_beside(location.path):
            # SQLite must create the -wal and -shm files beside a WAL store, even to read it.
            return StoreIOError(
                f"the store at {where} is on a read-only file system or in a directory that "
                f"cannot be written ({detail})"
            )
        return NotAStore(f"cannot open the store at {where} ({detail})")
    if location.path is None and any(sign in lowered for sign in _UNREACHABLE):
        return StoreUnreachable(f"cannot connect to the store at {where} ({detail})")
    if "identity_hash" in lowered and ("unique" in lowered or "duplicate key" in lowered):
        # Two writers stored the same memory at once (PostgreSQL; SQLite writers take turns).
        return Conflict(
            "an identical memory was stored at the same moment by another writer; "
            "nothing was changed"
        )
    if "check constraint" in lowered or "violates check" in lowered:
        return InvalidInput(f"the store refused a value: {detail}")
    return LanternError(f"database error on {where}: {detail}")


# How the PostgreSQL driver says that it could not connect, or lost its connection.
_UNREACHABLE = (
    "connection failed",
    "connection refused",
    "failed to resolve host",
    "could not translate host name",
    "could not connect",
    "timeout expired",
    "no route to host",
    "server closed the connection",
    "connection is lost",
    "the connection is closed",
)


def _nearly_full(path: Path) -> bool:
    """True when the file system holding the store has less than 1 MiB left for us."""
    try:
        stats = os.statvfs(path.parent)
    except OSError:
        return False
    return stats.f_bavail * stats.f_frsize < 1024 * 1024


def _cannot_write_beside(path: Path) -> bool:
    """True when the store file exists but it or its directory cannot be written."""
    return path.exists() and not (
        os.access(path, os.W_OK) and os.access(path.parent, os.W_OK | os.X_OK)
    )
