"""What schema a store has, and bringing it to the current one through Alembic.

A store is one of: empty (no tables yet), a legacy store made before Lantern used Alembic
(generation 1 or 2, told by `PRAGMA user_version` and its tables), or an Alembic-managed store at
some revision. Reading that takes one or two SELECTs and no Alembic import, so every command can
check it cheaply; Alembic is imported only when a migration actually runs.

`run_environment` is the body of `alembic/env.py`, so `alembic upgrade head` from a checkout and
`lantern db upgrade` do the same thing: recognise the store, take the write lock, back the file
up, adopt a legacy store by stamping its generation's revision, and run the remaining revisions,
all in one transaction.
"""

from __future__ import annotations

import errno
import os
import sqlite3
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sqlalchemy import Connection, Engine, text

from lantern.errors import NotAStore, SchemaMismatch, StoreIOError
from lantern.store.location import StoreLocation

if TYPE_CHECKING:
    from alembic.config import Config

# Revisions in order; HEAD is the last. A test checks these against the scripts.
REVISIONS = tuple(f"{number:04d}" for number in range(1, 14))  # "0001" to "0013"
HEAD = REVISIONS[-1]

# What each revision creates, to recognise legacy generations and refuse odd files.
TABLES_BY_REVISION = {
    "0001": frozenset({"sources", "chunks", "chunks_fts"}),
    "0002": frozenset({"entities", "chunk_entities", "embeddings"}),
    "0003": frozenset({"memory_records"}),
    "0004": frozenset(),
    "0005": frozenset({"memory_history", "memory_refs", "memory_fts"}),
    "0006": frozenset(),
    "0007": frozenset({"chunk_search_text"}),
    "0008": frozenset({"memory_embeddings", "store_settings"}),
    "0009": frozenset({"memory_entities", "entity_scans"}),
    "0010": frozenset({"index_feed"}),
    "0011": frozenset(),
    "0012": frozenset(),
    "0013": frozenset(),
}
LEGACY_GENERATIONS = {1: "0001", 2: "0002"}
LEGACY_TABLES = TABLES_BY_REVISION["0001"] | TABLES_BY_REVISION["0002"]

# Full-text index tables (and their shadow tables) and PostgreSQL's generated tsvector
# columns belong to each engine's search code, not to the models.
FTS_TABLE_PREFIXES = ("chunks_fts", "memory_fts")
FTS_COLUMNS = frozenset({"text_tsv", "content_tsv"})
# PostgreSQL's feed records each change's transaction (revision 0013) for the feed's reader
# (`lantern.indexes.feed`), which reads it in SQL of its own; SQLite's feed has no such column.
FEED_TRANSACTION_COLUMN = "xact"
FEED_TRANSACTION_INDEX = "ix_index_feed_xact"
# On SQLite, chunk_search_text has no foreign key to chunks (see revision 0007: the chunks_ad
# trigger must read a chunk's row before it goes, and SQLite would cascade before the trigger).
SQLITE_WITHOUT_FOREIGN_KEYS = frozenset({"chunk_search_text"})


@dataclass(frozen=True, slots=True)
class StoreState:
    """Where a store stands. `revision` is None for legacy and empty stores."""

    revision: str | None
    legacy_generation: int | None
    empty: bool

    @property
    def effective_revision(self) -> str | None:
        if self.legacy_generation is not None:
            return LEGACY_GENERATIONS[self.legacy_generation]
        return self.revision

    @property
    def needs_upgrade(self) -> bool:
        return not self.empty and self.effective_revision != HEAD


@dataclass(slots=True)
class UpgradeReport:
    """What an upgrade did, filled in by the migration environment."""

    from_revision: str | None = None
    to_revision: str | None = None
    legacy_generation: int | None = None
    backup_path: Path | None = None
    upgraded: bool = False


@dataclass(slots=True)
class _Options:
    location: StoreLocation
    backup: bool = True
    report: UpgradeReport = field(default_factory=UpgradeReport)


def read_state(conn: Connection, location: StoreLocation) -> StoreState:
    """Classify the store; raise `NotAStore` or `SchemaMismatch` for what Lantern cannot use."""
    where = str(location.path) if location.path else location.display_url
    tables = _table_names(conn)
    if "alembic_version" in tables:
        versions = [row[0] for row in conn.execute(text("SELECT version_num FROM alembic_version"))]
        if len(versions) > 1:
            raise NotAStore(f"{where} has a damaged alembic_version table ({len(versions)} rows)")
        if not versions:
            # Downgraded to base: no revision applied, so judge the store by its tables.
            return _unversioned_state(conn, tables - {"alembic_version"}, where)
        revision = versions[0]
        if revision not in REVISIONS:
            raise SchemaMismatch(
                f"{where} was written by a newer Lantern (schema revision {revision}; this "
                f"Lantern knows up to {HEAD}); upgrade Lantern to use it"
            )
        return StoreState(revision=revision, legacy_generation=None, empty=False)
    return _unversioned_state(conn, tables, where)


def _unversioned_state(conn: Connection, tables: set[str], where: str) -> StoreState:
    ours = set().union(*TABLES_BY_REVISION.values())
    if conn.dialect.name != "sqlite":
        if tables & ours:
            raise NotAStore(f"{where} holds Lantern tables but no alembic_version table")
        return StoreState(revision=None, legacy_generation=None, empty=True)
    user_version = conn.exec_driver_sql("PRAGMA user_version").scalar_one()
    if not tables and user_version == 0:
        return StoreState(revision=None, legacy_generation=None, empty=True)
    generation = _legacy_generation(user_version, tables)
    if generation is None:
        raise NotAStore(
            f"{where} is not a Lantern store (an SQLite file with user_version {user_version} "
            f"and tables {', '.join(sorted(tables)) or 'none'})"
        )
    return StoreState(revision=None, legacy_generation=generation, empty=False)


def _legacy_generation(user_version: int, tables: set[str]) -> int | None:
    if user_version not in LEGACY_GENERATIONS:
        return None
    revision = LEGACY_GENERATIONS[user_version]
    index = REVISIONS.index(revision)
    required = set().union(*(TABLES_BY_REVISION[r] for r in REVISIONS[: index + 1]))
    later = set().union(*(TABLES_BY_REVISION[r] for r in REVISIONS[index + 1 :]))
    if not required <= tables or tables & later:
        return None
    return user_version


def _table_names(conn: Connection) -> set[str]:
    if conn.dialect.name == "sqlite":
        rows = conn.exec_driver_sql(
            "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite\\_%' "
            "ESCAPE '\\'"
        )
        return {name for (name,) in rows if not _is_fts_shadow(name)}
    rows = conn.execute(
        text(
            "SELECT table_name FROM information_schema.tables WHERE table_schema = current_schema()"
        )
    )
    return {name for (name,) in rows}


def _is_fts_shadow(name: str) -> bool:
    return any(name.startswith(prefix + "_") and name != prefix for prefix in FTS_TABLE_PREFIXES)


def script_location() -> Path:
    """The revisions: shipped inside the package in a wheel, or the checkout's `alembic/`."""
    package = Path(__file__).parent.parent  # lantern/
    packaged = package / "_alembic"
    if packaged.is_dir():
        return packaged
    return package.parent / "alembic"


def alembic_config(options: _Options | None = None) -> Config:
    from alembic.config import Config

    config = Config()
    config.set_main_option("script_location", str(script_location()))
    if options is not None:
        config.attributes["lantern"] = options
    return config


def upgrade(location: StoreLocation, *, backup: bool = True) -> UpgradeReport:
    """Bring the store to HEAD (creating it when empty), with a backup of an existing file."""
    from alembic import command

    options = _Options(location=location, backup=backup)
    command.upgrade(alembic_config(options), "head")
    return options.report


def run_environment(context: Any) -> None:
    """The migration environment, for `alembic upgrade` and `lantern db upgrade` alike."""
    from lantern.store import location as locations
    from lantern.store.models import Base

    options: _Options | None = context.config.attributes.get("lantern")
    if options is None:
        store_arg = context.get_x_argument(as_dictionary=True).get("db")
        options = _Options(location=locations.resolve(store_arg), report=UpgradeReport())
        announce = True
    else:
        announce = False
    settings: dict[str, Any] = {
        "target_metadata": Base.metadata,
        "render_as_batch": True,
        "transactional_ddl": True,
    }
    if context.is_offline_mode():
        dialect = "sqlite" if options.location.is_sqlite else "postgresql"
        context.configure(
            url=options.location.url,
            literal_binds=True,
            include_object=schema_filter(dialect),
            **settings,
        )
        with context.begin_transaction():
            context.run_migrations()
        return
    _run_online(context, options, settings)
    report = options.report
    if announce and report.backup_path is not None:
        print(f"lantern: backed up the store to {report.backup_path}", file=sys.stderr)


def _run_online(context: Any, options: _Options, settings: dict[str, Any]) -> None:
    from lantern.store.engine import create_store_engine, prepare_sqlite_file, translate_errors

    provided: Connection | Engine | None = context.config.attributes.get("connection")
    if isinstance(provided, Engine):
        with provided.connect() as conn, conn.begin():
            _migrate(context, conn, options, settings)
        return
    if provided is not None:
        # A caller that shares its connection (Alembic's cookbook, pytest-alembic) owns the
        # transaction; the same recognition and stamping still apply.
        _migrate(context, provided, options, settings)
        return
    location = options.location
    if location.path is not None:
        prepare_sqlite_file(location.path)
    engine = create_store_engine(location)
    try:
        with (
            translate_errors(location),
            engine.execution_options(lantern_write=True).connect() as conn,
        ):
            with conn.begin():
                _migrate(context, conn, options, settings)
            if conn.dialect.name == "sqlite":
                # Outside any transaction: the journal mode cannot change inside one.
                raw = conn.connection.dbapi_connection
                assert raw is not None
                raw.execute("PRAGMA journal_mode = WAL")
    finally:
        engine.dispose()


def _migrate(context: Any, conn: Connection, options: _Options, settings: dict[str, Any]) -> None:
    """Recognise, back up, adopt and upgrade, inside the caller's transaction."""
    location = options.location
    report = options.report
    if conn.dialect.name == "postgresql":
        # Two processes upgrading at once take turns instead of interleaving.
        conn.execute(text("SELECT pg_advisory_xact_lock(7460771114)"))
    state = read_state(conn, location)
    if state.empty and location.path is not None:
        from lantern.store.engine import make_owner_only

        make_owner_only(location.path)  # a file that was there, empty, becomes a private store
    report.from_revision = state.effective_revision
    report.legacy_generation = state.legacy_generation
    if state.needs_upgrade and options.backup and location.path is not None:
        report.backup_path = backup_sqlite(location.path)
    context.configure(connection=conn, include_object=schema_filter(conn.dialect.name), **settings)
    if state.legacy_generation is not None:
        context.get_context().stamp(context.script, state.effective_revision)
    with context.begin_transaction():
        context.run_migrations()
    report.to_revision = HEAD
    report.upgraded = state.effective_revision != HEAD


def schema_filter(dialect: str) -> Callable[..., bool]:
    """What schema comparisons (autogenerate, models-match-DDL) look at on this engine.

    Full-text index tables are not in the models. On SQLite, the legacy evidence tables keep
    their generation-1 DDL verbatim (a test pins it), whose inline `REFERENCES ... ON DELETE`
    and `UNIQUE` clauses and nullable TEXT primary keys SQLite cannot reflect faithfully, so
    their constraints and key columns are left to that exact comparison instead; and
    `chunk_search_text` has its foreign key on PostgreSQL only.
    """

    def include(obj: Any, name: str | None, type_: str, reflected: bool, compare_to: Any) -> bool:
        if type_ == "table":
            return not (name or "").startswith(FTS_TABLE_PREFIXES)
        if type_ == "column" and name in FTS_COLUMNS:
            return False
        if type_ == "index" and name is not None and name.endswith("_tsv"):
            return False
        if type_ == "column" and name == FEED_TRANSACTION_COLUMN:
            return getattr(getattr(obj, "table", None), "name", None) != "index_feed"
        if type_ == "index" and name == FEED_TRANSACTION_INDEX:
            return False
        if dialect != "sqlite":
            return True
        table = getattr(obj, "table", None)
        if table is None:
            return True
        if type_ == "foreign_key_constraint" and table.name in SQLITE_WITHOUT_FOREIGN_KEYS:
            return False
        if table.name not in LEGACY_TABLES:
            return True
        if type_ in ("foreign_key_constraint", "unique_constraint"):
            return False
        return not (type_ == "column" and obj.primary_key)

    return include


def backup_sqlite(path: Path) -> Path:
    """A complete, consistent copy beside the store (WAL content included), named by the time."""
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    target = path.with_name(f"{path.name}.backup-{stamp}")
    counter = 1
    while target.exists():
        counter += 1
        target = path.with_name(f"{path.name}.backup-{stamp}-{counter}")
    copy_sqlite(path, target)
    return target


def copy_sqlite(source: Path, target: Path, *, replace: bool = False) -> None:
    """Copy a live SQLite database, its write-ahead log included, to `target` (mode 0600).

    The online-backup API copies one consistent snapshot in one step under a read lock, which
    never blocks writers, through a read-only connection, which never checkpoints the source.
    The copy is written under a temporary name beside `target`, checked with `quick_check`,
    flushed to disk and only then renamed, so that a crash or a full disk never leaves a partial
    file under the final name. An existing `target` is replaced only when `replace` is set.
    """
    partial = target.with_name(f".{target.name}.partial-{os.getpid()}")
    try:
        fd = os.open(partial, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600)
        os.close(fd)
        reader = sqlite3.connect(f"{source.as_uri()}?mode=ro", uri=True)
        try:
            copy = sqlite3.connect(partial)
            try:
                reader.backup(copy)
                verdict = copy.execute("PRAGMA quick_check").fetchone()[0]
            finally:
                copy.close()
        finally:
            reader.close()
        if verdict != "ok":
            raise sqlite3.DatabaseError(f"the copy failed its check: {verdict}")
        _fsync(partial)
        if replace:
            os.replace(partial, target)
        else:
            os.link(partial, target)  # fails, rather than replaces, when target exists
            partial.unlink()
        _fsync(target.parent)
    except (OSError, sqlite3.Error) as exc:
        for leftover in (partial, *(partial.with_name(partial.name + s) for s in ("-wal", "-shm"))):
            leftover.unlink(missing_ok=True)
        detail = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        if (isinstance(exc, OSError) and exc.errno == errno.ENOSPC) or "disk is full" in detail:
            detail = "the disk is full; free some space and retry"
        raise StoreIOError(f"could not back up {source} to {target}: {detail}") from exc


def _fsync(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
