"""The public facade: `Lantern.open(...)` and the repositories behind it.

The CLI and the MCP server call exactly these methods, so a Python caller gets the same
behaviour, validation and errors as a shell user.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from types import TracebackType
from typing import IO, TYPE_CHECKING, Any

from sqlalchemy import text

from lantern.boundary import checked
from lantern.errors import (
    Conflict,
    InvalidInput,
    NoStore,
    PolicyRefused,
    SchemaMismatch,
    StoreIOError,
)
from lantern.memory.entities import show_entity
from lantern.memory.records import EntityView
from lantern.memory.repository import MemoryRepository
from lantern.memory.scopes import UNRESTRICTED, ScopePolicy
from lantern.store import migrations
from lantern.store.engine import Store, create_store_engine, prepare_sqlite_file, system_clock
from lantern.store.engine import abandonable as _store_abandonable
from lantern.store.location import StoreLocation, resolve

if TYPE_CHECKING:
    # Imported where used: a command that lists memories should not pay for ingest, health
    # checks or export (see the architecture note on import time).
    from lantern.entities.records import LinkChange
    from lantern.entities.repository import EntityRepository
    from lantern.evidence.repository import EvidenceRepository
    from lantern.maintenance.backup import BackupReport
    from lantern.maintenance.health import HealthReport
    from lantern.maintenance.inspection import Inspection
    from lantern.maintenance.rebuild import RebuildReport
    from lantern.semantic.backfill import EmbedSummary
    from lantern.semantic.coverage import Coverage
    from lantern.store.settings import EmbeddingSettings
    from lantern.transfer.foreign import ForeignImport
    from lantern.transfer.jsonl import TransferReport

__all__ = ["CITED_BY_LIMIT", "EntityView", "Lantern", "StoreStatus", "abandonable"]
"""`EntityView` is defined beside the records it holds and named here too, as before."""

CITED_BY_LIMIT = 1_000
"""At most this many citing records are listed beside a source or chunk."""


@dataclass(frozen=True, slots=True)
class StoreStatus:
    """Where a store is and where its schema stands (`lantern db status`)."""

    url: str
    path: Path | None
    size_bytes: int | None
    """The store's size; None for a scope-restricted caller (it grows with every scope)."""
    revision: str | None
    head: str
    legacy_generation: int | None
    needs_upgrade: bool
    embeddings: Coverage | None = None
    """Embedding settings and coverage per model; None on a store that needs an upgrade."""
    word_index: dict[str, Any] | None = None
    """The derived word index beside the store (`lantern.indexes.words.status`); None on a
    store that needs an upgrade."""
    vector_indexes: list[dict[str, Any]] | None = None
    """The vector index of each model (`lantern.indexes.vectors.status`); None on a store that
    needs an upgrade."""

    def to_json(self) -> dict[str, Any]:
        """The status as `db status --json` prints it."""
        return {
            "url": self.url,
            "path": None if self.path is None else str(self.path),
            "size_bytes": self.size_bytes,
            "revision": self.revision,
            "head": self.head,
            "legacy_generation": self.legacy_generation,
            "needs_upgrade": self.needs_upgrade,
            "embeddings": None if self.embeddings is None else self.embeddings.to_json(),
            "word_index": self.word_index,
            "vector_indexes": self.vector_indexes,
        }


@checked
class Lantern:
    """An open store. Use as a context manager, or call `close()`."""

    def __init__(self, store: Store, *, scopes: ScopePolicy = UNRESTRICTED) -> None:
        self.store = store
        self.scopes = scopes
        self.memory = MemoryRepository(store, scopes)
        """Memory records: add, revise, retire, forget, list, search (within `scopes`)."""

    @cached_property
    def evidence(self) -> EvidenceRepository:
        """Sources and chunks: ingest, search, show, remove."""
        from lantern.evidence.repository import EvidenceRepository

        return EvidenceRepository(self.store)

    @cached_property
    def entities(self) -> EntityRepository:
        """Entities: list, show, attach to chunks, extract from stored chunks. What they count
        and show of memory records stays within `scopes`."""
        from lantern.entities.repository import EntityRepository

        return EntityRepository(self.store, self.scopes)

    def entity_show(self, entity: str, *, limit: int = 20, after: str | None = None) -> EntityView:
        """An entity (`KIND:NAME` or its id) with a page of its chunks and of the memory records
        about it (every status, in list order, within `scopes`), `limit` of each.

        `after` is a page's `next_cursor`: the next page of each list that is not done.

        Args:
            entity: The entity, as `KIND:NAME` (`person:Ada Lovelace`) or its id (`ent_` and 16 hex
                digits).
            limit: At most this many chunks, and this many memory records, on the page (1 to
                10,000).
            after: A previous page's `next_cursor`, to continue both lists; None for the first page.

        Returns:
            The entity with its counts, a page of its chunks and of its records, and the cursor of
            the next page (None when both lists are done).

        Raises:
            NotFound: No such entity, or none the caller's scopes may see.
            InvalidInput: A malformed entity, limit or cursor.
        """
        return show_entity(self.entities, self.memory, entity, limit=limit, after=after)

    def attach_entities(
        self,
        entities: str | Sequence[str],
        *,
        chunk: str | None = None,
        memory: str | None = None,
    ) -> list[LinkChange]:
        """Attach entities (`KIND:NAME`, or stored entities' ids) to a chunk or to a memory
        record, whichever is given; one `LinkChange` per entity.

        Args:
            entities: One entity or a list of them (at most 1,000), each `KIND:NAME` or a stored
                entity's id; a `KIND:NAME` not stored yet is created.
            chunk: The id of the chunk (`chk_...`) to attach them to; give this or `memory`.
            memory: The id of the memory record (`mem_...`) to attach them to; give this or `chunk`.

        Returns:
            One `LinkChange` per entity, `changed` False where the link was already there.

        Raises:
            InvalidInput: Neither or both of `chunk` and `memory`, no entity, or a malformed one.
            NotFound: No such chunk or record (or a record outside the scopes), or an entity id that
                names nothing.
        """
        kind, target = _link_target(chunk, memory)
        if kind == "chunk":
            return self.entities.attach_entities(target, entities)
        return self.memory.attach_entities(target, entities)

    def detach_entities(
        self,
        entities: str | Sequence[str],
        *,
        chunk: str | None = None,
        memory: str | None = None,
    ) -> list[LinkChange]:
        """Detach entities from a chunk or a memory record, whichever is given; an entity that
        nothing links any more is removed.

        Args:
            entities: One entity or a list of them, each `KIND:NAME` or a stored entity's id.
            chunk: The id of the chunk (`chk_...`) to detach them from; give this or `memory`.
            memory: The id of the memory record (`mem_...`) to detach them from; give this or
                `chunk`.

        Returns:
            One `LinkChange` per entity, `changed` False where there was no such link.

        Raises:
            InvalidInput: Neither or both of `chunk` and `memory`, no entity, or a malformed one.
            NotFound: No such chunk or record, or an entity that is not stored.
        """
        kind, target = _link_target(chunk, memory)
        if kind == "chunk":
            return self.entities.detach_entities(target, entities)
        return self.memory.detach_entities(target, entities)

    @classmethod
    def open(
        cls,
        db: str | os.PathLike[str] | None = None,
        *,
        require_current: bool = True,
        create: bool = True,
        scopes: str | Iterable[str] | ScopePolicy | None = None,
        read_only: bool = False,
        clock: Callable[[], int] | None = None,
    ) -> Lantern:
        """Open the store at a path or URL (default: `LANTERN_DB`, then the user data directory).

        Where no store exists yet (no file, an empty file, a database without tables), one is
        created at the current schema, owner-only, unless `create` is False: then that is
        `NoStore`, and nothing is created, so that a mistyped path is reported instead of
        starting an empty store. The CLI creates a store only for commands that add something
        (`memory add`, `ingest`, `import`, `db upgrade`, a writable MCP server). An existing
        store that is behind (or ahead of) this Lantern is refused with `SchemaMismatch` unless
        `require_current` is False, which `db status` and `db upgrade` use.

        `scopes` confines `memory` to those scope patterns (see `lantern.memory.scopes`);
        `read_only` refuses every write (`PolicyRefused`), down to the database connections, and
        never creates a store. Operations on the whole store (`inspect`, export, import, upgrade,
        check, backup, rebuild-index) are refused on a scope-restricted Lantern.

        `clock` is where every operation takes its timestamp, once (integer unix seconds, UTC):
        created, updated and history times, and the "now" expiry is judged at. It defaults to
        the real time; a caller that replays or tests a timeline passes its own.

        Args:
            db: A SQLite file path, or a database URL (`sqlite:///path`,
                `postgresql+psycopg://host/db`); None uses `LANTERN_DB`, then the user data
                directory.
            require_current: Refuse a store whose schema is behind or ahead of this Lantern; False
                opens it anyway (to read its status, or upgrade it).
            create: Create the store where none exists yet; False raises `NoStore` instead.
            scopes: Scope patterns (`user:ada`, `user:ada*` for that scope and those under it,
                `user:*`) that confine `memory` to those scopes, or a `ScopePolicy`; None
                leaves the store unrestricted.
            read_only: Refuse every write; a read-only Lantern never creates a store.
            clock: A callable giving the current time in integer unix seconds (UTC), read once
                per operation; None, the real time.

        Returns:
            The open store; close it, or use it as a context manager.

        Raises:
            NoStore: Nothing is there and `create` is False (or `read_only` is set).
            SchemaMismatch: The schema is not this Lantern's and `require_current` is set.
            NotAStore: The file is not a Lantern store.
            StoreUnreachable: The database server cannot be reached.
            InvalidInput: The path is a directory, or a scope pattern is malformed.
        """
        policy = scopes if isinstance(scopes, ScopePolicy) else ScopePolicy.of(scopes)
        create = create and not read_only
        location = resolve(db)
        if location.path is not None:
            if create:
                prepare_sqlite_file(location.path)
            elif location.path.is_dir():
                raise InvalidInput(f"{location.path} is a directory; give the path of a store file")
            elif not location.path.exists():
                raise _no_store(location, "nothing is there")
        store = Store(
            location,
            create_store_engine(location, read_only=read_only),
            read_only=read_only,
            clock=clock or system_clock,
        )
        try:
            state = _state(store)
            if state.empty and not create:
                raise _no_store(location, "it is empty")
            if state.empty:
                migrations.upgrade(location, backup=False)
                state = _state(store)
            if require_current and state.needs_upgrade:
                raise _behind(location, state)
        except BaseException:
            store.close()
            raise
        return cls(store, scopes=policy)

    def restricted(self, *, scopes: ScopePolicy, read_only: bool) -> Lantern:
        """Another facade on this open store, confined to `scopes` and read-only if asked.

        It shares the store's engine (and, read-only, a second engine that refuses writes down
        to its connections, shared by every read-only facade), so a server can give each of
        its clients its own fence at no cost. Closing this Lantern closes them all. A Lantern
        that is itself restricted cannot hand out other scopes.

        Args:
            scopes: The scopes the new facade may see and write.
            read_only: Whether the new facade refuses every write.

        Raises:
            PolicyRefused: This Lantern is itself restricted, to other scopes.
        """
        if self.scopes.restricted and scopes != self.scopes:
            raise PolicyRefused("a scope-restricted store cannot hand out other scopes")
        store = self.store
        if read_only and not store.read_only:
            store = self._read_only_store
        return Lantern(store, scopes=scopes)

    @cached_property
    def _read_only_store(self) -> Store:
        location = self.store.location
        return Store(
            location,
            create_store_engine(location, read_only=True),
            read_only=True,
            clock=self.store.clock,
        )

    def close(self) -> None:
        """Close the store's connections; the object is not used afterwards."""
        if "_read_only_store" in self.__dict__:
            self._read_only_store.close()
        self.store.close()

    def __enter__(self) -> Lantern:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def now(self) -> int:
        """The time by this store's clock (`open`'s `clock`, else the real time): integer unix
        seconds, UTC, as every operation takes it; for a caller that computes an expiry."""
        return self.store.clock()

    @property
    def location(self) -> StoreLocation:
        """Where the store is: its URL, and its file path when it is SQLite."""
        return self.store.location

    def cited_by(self, ref: str, *, through_chunks: bool = False) -> list[str]:
        """Ids of the memory records that cite a source or chunk (`TYPE:ID`), in list order.

        It goes through the memory repository, so a scope-restricted Lantern never reveals a
        record outside its scopes through the evidence it cites.

        Args:
            ref: The evidence, as `TYPE:ID`: `source:src_...`, `chunk:chk_...`, `session:...`.
            through_chunks: With a `source:ID`, also find the records that cite any of its chunks.

        Returns:
            At most `CITED_BY_LIMIT` (1,000) record ids.
        """
        page = self.memory.citing(ref, through_chunks=through_chunks, limit=CITED_BY_LIMIT)
        return [record.id for record in page]

    def status(self) -> StoreStatus:
        """Where the store is and where its schema stands (`lantern db status`), and, on a
        current store, its embedding settings and how many records and chunks have vectors of
        each model. A scope-restricted Lantern leaves out what the whole store amounts to: the
        size and the embedding coverage (None), which count the records of every scope."""
        state = _state(self.store)
        found = word_index = vector_indexes = None
        if not state.needs_upgrade and not state.empty and not self.scopes.restricted:
            from lantern.indexes import vectors, words
            from lantern.semantic.coverage import coverage

            with self.store.read() as conn:
                found = coverage(conn)
            word_index = words.status(self.store)
            vector_indexes = vectors.status(self.store)
        return StoreStatus(
            url=self.location.display_url,
            path=self.location.path,
            size_bytes=None if self.scopes.restricted else _size_bytes(self.store),
            revision=state.revision,
            head=migrations.HEAD,
            legacy_generation=state.legacy_generation,
            needs_upgrade=state.needs_upgrade,
            embeddings=found,
            word_index=word_index,
            vector_indexes=vector_indexes,
        )

    def embed(
        self,
        *,
        memory: bool = True,
        sources: bool = True,
        model: str | None = None,
        progress: Callable[[str, int, int], None] | None = None,
    ) -> EmbedSummary:
        """Compute the missing and stale vectors of memory records and of chunks (both, unless
        one is turned off) with the provider `model` names (else LANTERN_EMBED_MODEL, else the
        store's default, else `minilm`): `lantern embed`.

        Each side runs in batches that commit one by one, so an interrupted run keeps what it
        finished and the next run resumes; readers are never blocked for long. `progress` is
        called after each batch with the side (`memory` or `sources`), the items looked at and
        the items to look at.

        Args:
            memory: Embed the memory records.
            sources: Embed the chunks of the evidence.
            model: A registered embedding provider's name (`minilm`, `hashing`...); None uses
                LANTERN_EMBED_MODEL, then the store's default, then `minilm`.
            progress: Called after each batch with the side (`"memory"` or `"sources"`), the items
                looked at so far and the items to look at; None reports nothing.

        Returns:
            The provider and model used, what each side did, and the seconds taken.

        Raises:
            InvalidInput: Both sides turned off, or an unknown provider.
            PolicyRefused: The store is open read-only or restricted to scopes.
            MissingDependency: The provider needs an extra that is not installed.
            EmbeddingFailed: The model or service could not give vectors.
        """
        self._whole_store("embed")
        if not (memory or sources):
            raise InvalidInput("nothing to embed: ask for memory records, sources, or both")
        if self.store.read_only:
            raise PolicyRefused(f"{self.location.display_url} is open read-only; nothing embedded")
        import time

        from lantern.semantic.backfill import EmbedSummary
        from lantern.semantic.plan import provider_for

        started = time.perf_counter()
        provider = provider_for(self.store, model)

        def reporter(side: str) -> Callable[[int, int], None] | None:
            if progress is None:
                return None
            return lambda done, total: progress(side, done, total)

        done_memory = self.memory.embed(provider, progress=reporter("memory")) if memory else None
        done_sources = (
            self.evidence.embed(provider, progress=reporter("sources")) if sources else None
        )
        return EmbedSummary(
            provider=provider.name,
            model=provider.model,
            memory=done_memory,
            sources=done_sources,
            seconds=time.perf_counter() - started,
        )

    def embedding_settings(self) -> EmbeddingSettings:
        """The store's default embedding provider and whether writes embed."""
        from lantern.store.settings import embedding_settings

        with self.store.read() as conn:
            return embedding_settings(conn)

    def set_embedding_settings(
        self,
        *,
        default_model: str | None = None,
        clear_default_model: bool = False,
        on_write: bool | None = None,
    ) -> EmbeddingSettings:
        """Record the store's default embedding provider (a registered name; or clear it) and
        whether adding and changing memory records and ingesting evidence also embed them.

        Turning embedding on write on checks that the provider it would use can run here, so
        that no later write fails for want of a module. Returns the settings now.

        Args:
            default_model: A registered embedding provider's name, to make the store's default; None
                leaves the default as it is.
            clear_default_model: Remove the store's default (LANTERN_EMBED_MODEL, then `minilm`,
                apply again); not together with `default_model`.
            on_write: True to embed every record added or changed and every source ingested, False
                to stop; None leaves it as it is.

        Returns:
            The settings now.

        Raises:
            InvalidInput: An unknown provider, or both a default and its removal.
            MissingDependency: `on_write` is set and the provider it would use cannot run here.
        """
        self._whole_store("settings")
        from lantern.semantic.plan import configure

        return configure(
            self.store,
            default_model=default_model,
            clear_default_model=clear_default_model,
            on_write=on_write,
        )

    def upgrade(self, *, backup: bool = True) -> migrations.UpgradeReport:
        """Bring the store to the current schema, backing up a SQLite file first.

        Args:
            backup: Copy a SQLite store's file beside it before migrating (a PostgreSQL store is
                never copied).

        Returns:
            The revisions the store went through, and where the backup is.

        Raises:
            PolicyRefused: The store is open read-only or restricted to scopes.
        """
        self._whole_store("upgrade")
        if self.store.read_only:
            raise PolicyRefused(f"{self.location.display_url} is open read-only; not upgraded")
        report = migrations.upgrade(self.location, backup=backup)
        from lantern.indexes import place

        directory = place.directory(self.location)
        if directory is not None:  # where the next searches build the indexes they use
            place.make(directory)
        return report

    def keep_indexes(self) -> None:
        """Keep the derived search indexes of a PostgreSQL store in this process from now on,
        built now in the background and caught up from the store's change feed before every
        search: for a long-lived server (`lantern mcp`, over stdio or HTTP, and `lantern
        ui`). A one-shot process should not call it: it would build an index to run
        one search. Nothing changes for a SQLite store, whose indexes live beside its file
        whoever opens it. See docs/search.md, "Search on PostgreSQL"."""
        self.memory.keep_index()

    def check(self) -> HealthReport:
        """Check the store's health without changing it (`lantern db check`)."""
        self._whole_store("check")
        from lantern.maintenance.health import check

        return check(self.store, url=self.location.display_url)

    def prepare_search(self) -> None:
        """Load what a first search by meaning needs beyond a keyword search (its code, and
        the memory vectors of the store's default model where they can be mapped or read
        quickly), so that a long-lived caller's first search costs what later ones cost. It
        loads no model and calls no embedding service; nothing it loads changes a result."""
        from lantern.semantic.plan import prepare
        from lantern.semantic.sides import MEMORY

        prepare(self.store, MEMORY)

    def rebuild_index(self) -> RebuildReport:
        """Rebuild the full-text indexes and reference rows from their tables."""
        self._whole_store("rebuild-index")
        from lantern.maintenance.rebuild import rebuild_indexes

        return rebuild_indexes(self.store)

    def backup(self, target: str | os.PathLike[str], *, force: bool = False) -> BackupReport:
        """A consistent copy of a live SQLite store at `target` (`lantern db backup`).

        Args:
            target: The path of the copy.
            force: Replace a file that is already at `target`; without it, that is refused.

        Returns:
            Where the copy is and how large it is.

        Raises:
            InvalidInput: `target` exists and `force` is not set, or the store is not SQLite.
            PolicyRefused: The store is restricted to scopes.
        """
        self._whole_store("backup")
        from lantern.maintenance.backup import backup

        return backup(self.store, target, force=force)

    def inspect(self) -> Inspection:
        """The store at a glance: where, how big, what schema, what it holds (`lantern inspect`)."""
        self._whole_store("inspect")
        from lantern.maintenance.inspection import inspect_store

        return inspect_store(
            self.store, url=self.location.display_url, size_bytes=_size_bytes(self.store)
        )

    def export_jsonl(
        self,
        out: IO[bytes],
        *,
        scope: str | Iterable[str] | None = None,
        memories: bool = True,
        evidence: bool = True,
    ) -> TransferReport:
        """Write the store, or part of it, as JSON Lines (docs/json.md, "Export format").

        Args:
            out: A binary file object the lines are written to (`open(path, "wb")`,
                `sys.stdout.buffer`).
            scope: Only the memory records (and their history) of these scope patterns (as for
                `memory.list`); None writes every record. Evidence has no scope.
            memories: Write the memory records, their history and vectors.
            evidence: Write the sources, chunks, entities and their vectors.

        Returns:
            How many lines of each type were written.
        """
        self._whole_store("export")
        from lantern.transfer.jsonl import export_jsonl

        return export_jsonl(self.store, out, scope=scope, memories=memories, evidence=evidence)

    def import_jsonl(self, source: IO[bytes], *, dry_run: bool = False) -> TransferReport:
        """Add what an export holds and the store does not: idempotent, all or nothing; with
        `dry_run`, say what would be added and write nothing.

        Args:
            source: A binary file object holding an export (`open(path, "rb")`).
            dry_run: Do the whole import and roll it back: the report says what would be added.

        Returns:
            How many rows of each type were added, and how many were already there.

        Raises:
            InvalidInput: A line that is not a valid export line; its `line` says which.
        """
        self._whole_store("import")
        from lantern.transfer.jsonl import import_jsonl

        return import_jsonl(self.store, source, dry_run=dry_run)

    def import_mcp_memory(
        self, source: IO[bytes], *, scope: str = "global", dry_run: bool = False
    ) -> ForeignImport:
        """Import the MCP reference memory server's `memory.jsonl` (its knowledge graph) as
        entities and memory records of `scope`: all or nothing, idempotent
        (`lantern.transfer.mcpmemory` has the mapping).

        Args:
            source: A binary file object holding the `memory.jsonl` (`open(path, "rb")`).
            scope: The scope of every record made.
            dry_run: Check and count everything, and write nothing.

        Returns:
            What was read, added and already present.

        Raises:
            InvalidInput: A line that is not an entity or relation of the format; its `line` says
                which.
        """
        self._whole_store("import")
        from lantern.transfer.mcpmemory import import_graph

        return import_graph(self.store, self.memory, source, scope=scope, dry_run=dry_run)

    def export_mcp_memory(self, out: IO[bytes], *, scope: str | Iterable[str] | None = None) -> int:
        """Write the active memory records' graph as a `memory.jsonl` of the MCP reference
        memory server; the number of lines.

        Args:
            out: A binary file object the lines are written to.
            scope: Only the records of these scope patterns (as for `memory.list`); None writes
                every active record.

        Returns:
            The number of lines written.
        """
        self._whole_store("export")
        from lantern.transfer.mcpmemory import export_graph

        return export_graph(self.store, out, scope=scope)

    def import_mem0(
        self, source: IO[bytes], *, scope: str = "global", dry_run: bool = False
    ) -> ForeignImport:
        """Import what mem0's `get_all()` returned, as memory records of the user, agent or
        run they belong to: all or nothing, idempotent (`lantern.transfer.mem0`).

        Args:
            source: A binary file object holding the JSON that `get_all()` returned.
            scope: The scope of the memories that name no user, agent or run.
            dry_run: Check and count everything, and write nothing.

        Returns:
            What was read, added and already present (and what was ignored).

        Raises:
            InvalidInput: A memory that cannot be a record; its `line` says where it is.
        """
        self._whole_store("import")
        from lantern.transfer.mem0 import import_memories

        return import_memories(self.store, self.memory, source, scope=scope, dry_run=dry_run)

    @classmethod
    @contextmanager
    def for_import(
        cls, db: str | os.PathLike[str] | None = None, *, dry_run: bool = False
    ) -> Iterator[Lantern]:
        """The store an import writes to, closed afterwards; where none exists yet, a new one
        that takes its place only if the import succeeds.

        An import on a path where no store is must neither refuse (a dry run previews what it
        would add to an empty store) nor leave anything behind when it fails. So the import runs
        on a new store in a temporary directory; when the block ends without an error and it
        was no dry run, that store is copied to the path (`copy_sqlite`: never over a store that
        appeared meanwhile), and the temporary one is removed in any case. An empty database
        on a server is set up as `open` does (a dry run there previews on a temporary SQLite
        store).

        Args:
            db: The store's path or URL, as for `open`; None uses `LANTERN_DB`, then the user data
                directory.
            dry_run: The import only previews: a new store is never kept.
        """
        location = resolve(db)
        try:
            lantern = cls.open(db, create=False)
        except NoStore:
            if location.path is None and not dry_run:
                lantern = cls.open(db, create=True)
            else:
                with _new_store(location.path, keep=not dry_run) as scratch:
                    yield scratch
                return
        with lantern:
            yield lantern

    def _whole_store(self, operation: str) -> None:
        """Refuse, on a scope-restricted Lantern, what would read or write every scope."""
        if self.scopes.restricted:
            raise PolicyRefused(
                f"{operation} works on the whole store, and this one is restricted to the "
                f"scopes {self.scopes.describe()}"
            )


def abandonable(abandoned: Callable[[], bool]) -> AbstractContextManager[None]:
    """Writes made inside roll back instead of committing once `abandoned()` is true.

    For a server that may give up on a call it runs in a worker thread (a client cancelling
    it, a shutdown): every write transaction of every `Lantern` in that thread asks just
    before its commit, so a write is either committed whole, with the call still wanted, or
    rolled back whole (`WriteAbandoned`). The commit itself is never interrupted.
    """
    return _store_abandonable(abandoned)


@contextmanager
def _new_store(target: Path | None, *, keep: bool) -> Iterator[Lantern]:
    """A new store in a temporary directory, copied to `target` when the block succeeds and
    `keep` is set (its missing directories made then), removed in any case."""
    import tempfile

    with tempfile.TemporaryDirectory(prefix="lantern-import-") as directory:
        scratch = Path(directory) / "store.db"
        with Lantern.open(scratch, create=True) as lantern:
            yield lantern
        if not keep or target is None:
            return
        made: list[Path] = []
        parent = target.parent
        while not parent.exists():
            made.append(parent)
            parent = parent.parent
        try:
            for folder in reversed(made):
                folder.mkdir(mode=0o700)
            # An empty file there is no store: the new one replaces it, as `open` would fill
            # it; anything else that appeared meanwhile is never replaced.
            empty = target.is_file() and target.stat().st_size == 0
            if target.exists() and not empty:
                raise Conflict(
                    f"a store appeared at {target} during the import; nothing was written "
                    "there: run the import again"
                )
            migrations.copy_sqlite(scratch, target, replace=empty)
        except OSError as exc:
            raise StoreIOError(f"cannot create the store at {target}: {exc.strerror}") from exc
        except StoreIOError as exc:
            detail = exc.message.rpartition(f"{target}: ")[2]
            raise StoreIOError(f"cannot create the store at {target}: {detail}") from exc
        finally:
            if not target.exists():
                for folder in made:
                    try:
                        folder.rmdir()
                    except OSError:
                        break


def _link_target(chunk: str | None, memory: str | None) -> tuple[str, str]:
    """Which of a chunk and a memory record an entity link is about: exactly one is given."""
    if chunk is not None and memory is None:
        return "chunk", chunk
    if memory is not None and chunk is None:
        return "memory", memory
    raise InvalidInput("give exactly one of chunk and memory")


def _state(store: Store) -> migrations.StoreState:
    with store.read() as conn:
        return migrations.read_state(conn, store.location)


def _no_store(location: StoreLocation, why: str) -> NoStore:
    where = location.path or location.display_url
    return NoStore(
        f"no Lantern store at {where} ({why}); only commands that add something (memory add, "
        "ingest, import, db upgrade) create one"
    )


def _behind(location: StoreLocation, state: migrations.StoreState) -> SchemaMismatch:
    where = location.path or location.display_url
    if state.legacy_generation is not None:
        found = f"a legacy generation-{state.legacy_generation} store"
    else:
        found = f"at schema revision {state.revision}, behind {migrations.HEAD}"
    return SchemaMismatch(
        f"{where} is {found}; upgrade it with: lantern {location.cli_flag} db upgrade"
    )


def _size_bytes(store: Store) -> int:
    path = store.location.path
    if path is None:
        with store.read() as conn:
            size: int = conn.execute(
                text("SELECT pg_database_size(current_database())")
            ).scalar_one()
            return size
    return sum(
        candidate.stat().st_size
        for candidate in (path, path.with_name(path.name + "-wal"))
        if candidate.exists()
    )
