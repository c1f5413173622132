"""The memory repository: every rule about memory records, once, for the CLI, API and MCP.

Each public method is one operation in one transaction, timed once. The statements are
SQLAlchemy Core against the mapped tables: the ORM's per-object bookkeeping costs more than the
database work on these small, hot operations, and callers get frozen records either way.

Every change a method makes to a record is also appended to its history, its search row and its
reference rows in the same transaction, so that they can never disagree with the record.

On SQLite every write runs with `secure_delete` on: text that a write removes or replaces
(an updated content, a merged-away search segment, a forgotten record) is overwritten with zeros
at once, instead of lingering in free pages until `forget` would have to find it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from operator import itemgetter
from typing import Any

from sqlalchemy import (
    ColumnElement,
    Connection,
    Row,
    Select,
    bindparam,
    delete,
    func,
    literal_column,
    select,
    union_all,
    update,
)
from sqlalchemy.sql.base import Executable

from lantern import history, memory_refs, memory_search, validation
from lantern.dialect import insert_ignoring_conflicts
from lantern.errors import Conflict, InvalidInput, NotFound, PolicyRefused
from lantern.ids import memory_id
from lantern.memory_filters import (
    LIST_ORDER,
    MemoryFilter,
    after_branches,
    branches,
    cursor_for,
    parse_cursor,
)
from lantern.models import memory_history
from lantern.models import memory_records as table
from lantern.models import memory_refs as refs_table
from lantern.prepared import Prepared, driver_of
from lantern.query import parse_query
from lantern.records import (
    DanglingRef,
    ForgetReport,
    HistoryEntry,
    MemoryChain,
    MemoryMatch,
    MemoryRecord,
    Page,
    freeze_refs,
)
from lantern.scopes import UNRESTRICTED, ScopePolicy
from lantern.store import Store, now, translate_errors

__all__ = ["LIST_ORDER", "MemoryRepository"]

# Aliases: inside the repository, `list` names its method.
Records = list[MemoryRecord]
DanglingRefs = list[DanglingRef]

_BATCH = 500
_MAX_SHAPES = 256
_MAX_CHAIN = 10_000  # a supersede chain longer than this is not a chain Lantern made


class MemoryRepository:
    """Adds, revises, retires, forgets, finds and explains memory records in one store.

    `scopes` confines every read and write to those scopes (`lantern.scopes`): each statement
    that reads records, and each helper that fetches one by id, takes the policy, so a record
    outside it is never returned, changed or named.
    """

    def __init__(self, store: Store, scopes: ScopePolicy = UNRESTRICTED) -> None:
        self._store = store
        self._scopes = scopes
        self._statements: dict[tuple[object, ...], Prepared] = {}

    def _policy(self) -> list[ColumnElement[bool]]:
        return self._scopes.clauses(self._store.dialect)

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
    def _write(self) -> Iterator[Connection]:
        with self._store.write() as conn:
            if conn.dialect.name == "sqlite":
                driver_of(conn).execute("PRAGMA secure_delete = ON")
            yield conn

    # --- writing ------------------------------------------------------------------------------

    def add(
        self,
        *,
        kind: str,
        content: str,
        scope: str = "global",
        priority: int = 50,
        confidence: float = 1.0,
        urgency: int = 0,
        expires_at: int | str | None = None,
        supersedes_id: str | None = None,
        source_refs: Sequence[Any] | None = None,
        allow_dangling: bool = False,
    ) -> MemoryRecord:
        """Write a record, or return the identical one already stored (see `get_or_add`)."""
        record, _created = self.get_or_add(
            kind=kind,
            content=content,
            scope=scope,
            priority=priority,
            confidence=confidence,
            urgency=urgency,
            expires_at=expires_at,
            supersedes_id=supersedes_id,
            source_refs=source_refs,
            allow_dangling=allow_dangling,
        )
        return record

    def get_or_add(
        self,
        *,
        kind: str,
        content: str,
        scope: str = "global",
        priority: int = 50,
        confidence: float = 1.0,
        urgency: int = 0,
        expires_at: int | str | None = None,
        supersedes_id: str | None = None,
        source_refs: Sequence[Any] | None = None,
        allow_dangling: bool = False,
    ) -> tuple[MemoryRecord, bool]:
        """Write a record; `(record, created)`.

        The id is derived from scope, kind and content, so adding the same memory twice creates
        nothing: the stored record comes back unchanged, whatever its status or other fields,
        and `created` is False. Changing those fields is an update; reviving it, a restore.
        `source` and `chunk` references must name stored evidence unless `allow_dangling`.
        """
        at = now()
        record = _new_record(
            at,
            kind=kind,
            content=content,
            scope=scope,
            priority=priority,
            confidence=confidence,
            urgency=urgency,
            expires_at=expires_at,
            supersedes_id=supersedes_id,
            source_refs=source_refs,
        )
        self._scopes.check_write(record.scope)
        record_id = record.id
        refs = record.source_refs
        with self._write() as conn:
            existing = _fetch(conn, record_id, self._scopes)
            if existing is not None:
                return existing, False
            old = None
            if supersedes_id is not None:
                old = _require(conn, supersedes_id, self._scopes, for_update=True)
                _check_supersedable(conn, old, self._scopes)
            if not allow_dangling:
                memory_refs.require_resolvable(conn, refs)
            if not _insert(conn, record):
                # Another writer stored the same memory between our look and our insert.
                return _require(conn, record_id, self._scopes), False
            if old is not None:
                _retire(conn, old, record_id, at)
            return record, True

    def add_many(
        self, records: Iterable[Mapping[str, Any]], *, allow_dangling: bool = False
    ) -> list[tuple[MemoryRecord, bool]]:
        """Write many records in one transaction; `(record, created)` for each, in order.

        Each mapping takes `add`'s keyword arguments except `supersedes_id` (a supersede is one
        explicit operation). Every record is validated before anything is written, so a bad
        one leaves the store unchanged. Records already stored, or repeated in the input, come
        back unchanged with `created` False, exactly as `get_or_add` does.
        """
        at = now()
        built: list[MemoryRecord] = []
        for position, fields in enumerate(records):
            if not isinstance(fields, Mapping):
                raise InvalidInput(f"record {position}: must be a mapping of add's arguments")
            if fields.get("supersedes_id") is not None:
                raise InvalidInput(
                    f"record {position}: add_many does not supersede; use supersede() for that"
                )
            unknown = set(fields) - _ADD_FIELDS
            if unknown:
                raise InvalidInput(
                    f"record {position}: unknown field(s) {', '.join(sorted(unknown))}"
                )
            try:
                built.append(_new_record(at, **fields))
            except TypeError as exc:
                raise InvalidInput(f"record {position}: kind and content are required") from exc
            except InvalidInput as exc:
                raise InvalidInput(f"record {position}: {exc.message}") from exc
            try:
                self._scopes.check_write(built[-1].scope)
            except PolicyRefused as exc:
                raise PolicyRefused(f"record {position}: {exc.message}") from exc
        with self._write() as conn:
            if not allow_dangling:
                memory_refs.require_resolvable(
                    conn, [ref for record in built for ref in record.source_refs]
                )
            distinct = list({record.id: record for record in built}.values())
            inserted = _insert_many(conn, distinct)
            stored = {r.id: r for r in distinct if r.id in inserted}
            # Already stored (by an earlier add or another writer): read what is there.
            stored.update(_fetch_many(conn, {r.id for r in distinct if r.id not in inserted}))
            results: list[tuple[MemoryRecord, bool]] = []
            for record in built:
                created = record.id in inserted
                inserted.discard(record.id)  # a repeat within the input is not created twice
                results.append((stored[record.id], created))
            return results

    def update(
        self,
        record_id: str,
        *,
        content: str | None = None,
        priority: int | None = None,
        urgency: int | None = None,
        confidence: float | None = None,
        expires_at: int | str | None = None,
        clear_expiry: bool = False,
        add_refs: Sequence[Any] | None = None,
        remove_refs: Sequence[Any] | None = None,
        allow_dangling: bool = False,
    ) -> MemoryRecord:
        """Revise fields in place: same id, `updated_at` bumped, the change in the history.

        Scope and kind never change in place (that is a supersede). Values equal to the stored
        ones change nothing, and an update that changes nothing writes nothing. A content that
        would make the record identical to another stored one is refused.
        """
        changes: dict[str, Any] = {}
        if content is not None:
            changes["content"] = validation.content(content)
        if priority is not None:
            changes["priority"] = validation.percent("priority", priority)
        if urgency is not None:
            changes["urgency"] = validation.percent("urgency", urgency)
        if confidence is not None:
            changes["confidence"] = validation.confidence(confidence)
        if expires_at is not None and clear_expiry:
            raise InvalidInput("give either an expiry time or no expiry, not both")
        if expires_at is not None:
            changes["expires_at"] = validation.timestamp("expires_at", expires_at)
        if clear_expiry:
            changes["expires_at"] = None
        adding = validation.source_refs(add_refs)
        removing = validation.source_refs(remove_refs)
        if not changes and not adding and not removing:
            raise InvalidInput(
                "nothing to update: give a content, priority, urgency, confidence, expiry, "
                "or references to add or remove"
            )
        at = now()
        with self._write() as conn:
            record = _require(conn, record_id, self._scopes, for_update=True)
            if record.status == "superseded":
                raise Conflict(
                    f"memory {record_id} is superseded by "
                    f"{_successor_id(conn, record_id, self._scopes)}; update its successor instead"
                )
            if adding or removing:
                changes["source_refs"] = _edited_refs(record, adding, removing)
                new_refs = [ref for ref in adding if ref not in _plain(record.source_refs)]
                if new_refs and not allow_dangling:
                    memory_refs.require_resolvable(conn, new_refs)
            if changes.get("content", record.content) != record.content:
                twin = memory_id(record.scope, record.kind, changes["content"])
                if twin != record_id and _fetch(conn, twin, self._scopes) is not None:
                    raise Conflict(f"an identical memory is already stored as {twin}")
            revised = _revised(record, changes, at)
            before, after = history.diff(record, revised)
            if not after:
                return record
            _set_fields(conn, record_id, {name: changes[name] for name in after}, at)
            if "content" in after:
                memory_search.reindex(conn, record_id, revised.content)
            if "source_refs" in after:
                memory_refs.replace(conn, record_id, revised.source_refs)
            history.append(
                conn, [history.entry(record_id, "updated", at, before=before, after=after)]
            )
            return revised

    def supersede(
        self,
        old_id: str,
        *,
        content: str | None = None,
        kind: str | None = None,
        scope: str | None = None,
        priority: int | None = None,
        urgency: int | None = None,
        confidence: float | None = None,
        expires_at: int | str | None = None,
        clear_expiry: bool = False,
        source_refs: Sequence[Any] | None = None,
        allow_dangling: bool = False,
    ) -> MemoryRecord:
        """Replace a record: the new one (fields not given are the old one's) gets
        `supersedes_id`, the old one becomes `superseded`, both in one transaction.

        Superseding a superseded record is an error that names its successor. The replacement
        must differ from the old record in scope, kind or content, since those make the id.
        """
        given: dict[str, Any] = {
            "content": None if content is None else validation.content(content),
            "kind": None if kind is None else validation.kind(kind),
            "scope": None if scope is None else validation.scope(scope),
            "priority": validation.optional_percent("priority", priority),
            "urgency": validation.optional_percent("urgency", urgency),
            "confidence": validation.optional_confidence(confidence),
        }
        if expires_at is not None and clear_expiry:
            raise InvalidInput("give either an expiry time or no expiry, not both")
        new_expiry = validation.optional_timestamp("expires_at", expires_at)
        refs = None if source_refs is None else validation.source_refs(source_refs)
        if given["scope"] is not None:
            self._scopes.check_write(given["scope"])
        at = now()
        with self._write() as conn:
            old = _require(conn, old_id, self._scopes, for_update=True)
            _check_supersedable(conn, old, self._scopes)
            fields = {
                name: getattr(old, name) if value is None else value
                for name, value in given.items()
            }
            new_id = memory_id(fields["scope"], fields["kind"], fields["content"])
            if new_id == old_id:
                raise InvalidInput(
                    f"the replacement would be identical to {old_id} (same scope, kind and "
                    "content); change one of them, or use memory update for the other fields"
                )
            if _fetch(conn, new_id, self._scopes) is not None:
                raise Conflict(f"an identical memory is already stored as {new_id}")
            if refs is not None and not allow_dangling:
                memory_refs.require_resolvable(conn, refs)
            expiry = old.expires_at if new_expiry is None else new_expiry
            record = MemoryRecord(
                id=new_id,
                status="active",
                created_at=at,
                updated_at=at,
                expires_at=None if clear_expiry else expiry,
                supersedes_id=old_id,
                source_refs=old.source_refs if refs is None else freeze_refs(refs),
                **fields,
            )
            if not _insert(conn, record):
                raise Conflict(f"an identical memory is already stored as {new_id}")
            _retire(conn, old, new_id, at)
            return record

    def archive(self, record_id: str) -> MemoryRecord:
        """Retire a record without deleting it; archiving an archived record changes nothing."""
        return self._move(
            record_id,
            event="archived",
            status="archived",
            refusal="a superseded record cannot be archived",
        )

    def restore(self, record_id: str) -> MemoryRecord:
        """Make an archived record active again; restoring an active record changes nothing."""
        return self._move(
            record_id,
            event="restored",
            status="active",
            refusal="only an archived record can be restored",
        )

    def _move(self, record_id: str, *, event: str, status: str, refusal: str) -> MemoryRecord:
        """Set a record's status, recorded as `event`; a record already there is returned as is.

        A superseded record stays superseded: its successor is what archive and restore act on.
        """
        at = now()
        with self._write() as conn:
            record = _require(conn, record_id, self._scopes, for_update=True)
            if record.status == status:
                return record
            if record.status == "superseded":
                raise Conflict(
                    f"memory {record_id} is superseded by "
                    f"{_successor_id(conn, record_id, self._scopes)}; {refusal}"
                )
            return _set_status(conn, record, event, status, at)

    def expire(self, *, dry_run: bool = False) -> Records:
        """Archive the active records whose `expires_at` has passed; return them (archived).

        Lantern never does this on its own: the caller decides when. With `dry_run`, nothing
        changes and the records come back as they are.
        """
        at = now()
        due = (
            select(table)
            .where(
                table.c.status == "active",
                table.c.expires_at <= at,
                *self._scopes.clauses(self._store.dialect),
            )
            .order_by(*LIST_ORDER)
        )
        if dry_run:
            with self._store.read() as conn:
                return [row_to_record(row) for row in conn.execute(due)]
        with self._write() as conn:
            records = [row_to_record(row) for row in conn.execute(due.with_for_update())]
            ids = [record.id for record in records]
            for start in range(0, len(ids), _BATCH):
                conn.execute(
                    update(table)
                    .where(table.c.id.in_(ids[start : start + _BATCH]))
                    .values(status="archived", updated_at=at)
                )
            history.append(
                conn, [history.status_change(r, "expired", "archived", at) for r in records]
            )
        return [dataclasses.replace(r, status="archived", updated_at=at) for r in records]

    def forget(self, record_id: str) -> ForgetReport:
        """Delete a record for good, its content included, leaving a `forgotten` history entry.

        On SQLite the content also leaves the file: the write runs with `secure_delete` (deleted
        rows and freed pages are zeroed), the search index is merged so that no old segment
        keeps the words, the record's earlier history entries (which hold its content) are
        removed, and afterwards the write-ahead log is checkpointed and truncated.
        `wal_checkpointed` is False when another connection kept the log in use; the old pages
        then stay in it until the next full checkpoint. A record that superseded this one keeps
        its place, with `supersedes_id` cleared (recorded in its history).
        """
        at = now()
        with self._write() as conn:
            if _fetch(conn, record_id, self._scopes) is None and _was_forgotten(
                conn, record_id, self._scopes
            ):
                raise NotFound(f"memory record {record_id!r} was already forgotten")
            record = _require(conn, record_id, self._scopes, for_update=True)
            successor_row = conn.execute(
                select(table).where(table.c.supersedes_id == record_id).with_for_update()
            ).first()
            if successor_row is not None:
                successor = row_to_record(successor_row)
                if not self._scopes.allows(successor.scope):
                    # Forgetting would rewrite the successor's link, a write outside the scopes.
                    raise PolicyRefused(
                        f"memory {record_id} cannot be forgotten under a scope restriction: "
                        "the record that superseded it is outside the allowed scopes"
                    )
                conn.execute(
                    update(table).where(table.c.id == successor.id).values(supersedes_id=None)
                )
                history.append(
                    conn,
                    [
                        history.entry(
                            successor.id,
                            "updated",
                            at,
                            before={"supersedes_id": record_id},
                            after={"supersedes_id": None},
                        )
                    ],
                )
            memory_search.unindex(conn, record_id)
            conn.execute(delete(refs_table).where(refs_table.c.record_id == record_id))
            conn.execute(delete(table).where(table.c.id == record_id))
            history.forget(conn, record, at)
            memory_search.merge_all(conn)
        checkpointed = self._truncate_wal() if self._store.dialect == "sqlite" else None
        return ForgetReport(id=record_id, forgotten_at=at, wal_checkpointed=checkpointed)

    def _truncate_wal(self) -> bool:
        """Copy the write-ahead log into the file and cut it to zero bytes; True if it was."""
        with translate_errors(self._store.location), self._store.engine.connect() as conn:
            raw = conn.connection.dbapi_connection
            assert raw is not None
            # On the driver connection: outside any transaction, which a checkpoint needs.
            busy, _frames, _done = raw.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
            return bool(busy == 0)

    # --- reading ------------------------------------------------------------------------------

    def get(self, record_id: str) -> MemoryRecord:
        with self._store.read() as conn:
            return _require(conn, record_id, self._scopes)

    def chain(self, record_id: str) -> MemoryChain:
        """A record with the records it replaced and those that replaced it, nearest first."""
        with self._store.read() as conn:
            record = _require(conn, record_id, self._scopes)
            replaces = _walk(
                conn, record.supersedes_id, table.c.id, table.c.supersedes_id, self._scopes
            )
            replaced_by = _walk(
                conn,
                _successor(conn, record_id, self._scopes),
                table.c.supersedes_id,
                table.c.id,
                self._scopes,
            )
        return MemoryChain(record=record, replaces=replaces, replaced_by=replaced_by)

    def history(self, record_id: str) -> list[HistoryEntry]:
        """Every recorded change to a record, oldest first.

        Records stored before schema revision 0005 (which added history) start with none.
        """
        with self._store.read() as conn:
            entries = history.read(conn, record_id)
            if self._scopes.restricted and _fetch(conn, record_id, self._scopes) is None:
                # No visible record: only what a forget left of one in the scopes remains.
                entries = [e for e in entries if _forgotten_in(e, self._scopes)]
            if not entries:
                _require(conn, record_id, self._scopes)
            return entries

    def list(
        self,
        *,
        scope: str | Iterable[str] | None = None,
        kind: str | Iterable[str] | None = None,
        status: str = "active",
        limit: int = 50,
        offset: int = 0,
        include_expired: bool = False,
        min_priority: int | None = None,
        min_urgency: int | None = None,
        min_confidence: float | None = None,
        updated_since: int | str | None = None,
        updated_before: int | str | None = None,
        cites: Any = None,
        after: str | None = None,
    ) -> Page:
        """Records in the documented order (see LIST_ORDER), filtered by visible fields only.

        `scope` entries ending in `*` match by prefix. `cites` takes references (`TYPE:ID`) and
        keeps records citing any of them. `after` continues from a page's `next_cursor`.
        """
        filters = MemoryFilter.build(
            scope=scope,
            kind=kind,
            status=status,
            min_priority=min_priority,
            min_urgency=min_urgency,
            min_confidence=min_confidence,
            updated_since=updated_since,
            updated_before=updated_before,
            cites=cites,
            include_expired=include_expired,
        )
        return self._page(filters, limit=limit, offset=offset, after=after)

    def citing(
        self,
        ref: Any,
        *,
        through_chunks: bool = False,
        status: str = "all",
        include_expired: bool = True,
        limit: int = 50,
        after: str | None = None,
    ) -> Page:
        """The records that cite a source, chunk or session (`TYPE:ID`), in list order.

        Every status and expired records too, by default: this answers "what depends on this
        evidence". With `through_chunks`, a `source:ID` also finds records citing its chunks.
        """
        filters = dataclasses.replace(
            MemoryFilter.build(status=status, include_expired=include_expired, cites=[ref]),
            through_chunks=through_chunks,
        )
        return self._page(filters, limit=limit, offset=0, after=after)

    def _page(self, filters: MemoryFilter, *, limit: int, offset: int, after: str | None) -> Page:
        limit = validation.limit(limit)
        offset = validation.offset(offset)
        if after is not None and offset:
            raise InvalidInput("give either an offset or a cursor (after), not both")
        key = None if after is None else parse_cursor(after)
        conditions = filters.conditions(self._store.dialect, now())
        values = {**conditions.values, "limit": limit + 1, "offset": offset}
        if key is None:

            def listing() -> Select[Any]:
                return (
                    select(table)
                    .where(*conditions.clauses(), *self._policy())
                    .order_by(*LIST_ORDER)
                    .limit(bindparam("limit"))
                    .offset(bindparam("offset"))
                )

            statement = self._prepared(("list", conditions.key), listing)
        else:
            after_values, _ = after_branches(key, all_statuses=filters.status == "all")
            values.update(after_values)

            def paging() -> Select[Any]:
                # One small ordered query per seekable branch, merged (see after_branches).
                where = [*conditions.clauses(), *self._policy()]
                parts = [
                    select(table)
                    .where(*where, branch)
                    .order_by(*LIST_ORDER)
                    .limit(bindparam("limit"))
                    for branch in branches(after_values, all_statuses=filters.status == "all")
                ]
                merged = union_all(*(select(part.subquery()) for part in parts)).subquery()
                return (
                    select(merged)
                    .order_by(
                        merged.c.status,
                        merged.c.priority.desc(),
                        merged.c.urgency.desc(),
                        merged.c.updated_at.desc(),
                        merged.c.id,
                    )
                    .limit(bindparam("limit"))
                )

            statement = self._prepared(("page", conditions.key, filters.status == "all"), paging)
        records = [row_to_record(row) for row in self._store.fetch(statement, values)]
        more = len(records) > limit
        records = records[:limit]
        return Page(records, cursor_for(records[-1]) if more and records else None)

    def search(
        self,
        query: str,
        *,
        order: str = "relevance",
        scope: str | Iterable[str] | None = None,
        kind: str | Iterable[str] | None = None,
        status: str = "active",
        limit: int = 20,
        offset: int = 0,
        include_expired: bool = False,
        min_priority: int | None = None,
        min_urgency: int | None = None,
        min_confidence: float | None = None,
        updated_since: int | str | None = None,
        updated_before: int | str | None = None,
        cites: Any = None,
        after: str | None = None,
    ) -> Page:
        """Keyword search over content: `MemoryMatch`es (record and score, higher is better).

        The query syntax is `lantern.query`'s (words AND-ed, "phrases", prefix*; nothing in it is
        an operator); a query without a letter or digit finds nothing. `order="relevance"` ranks
        by score, then the list order; `order="policy"` uses the list order among the matches
        and is the order a cursor (`after`) can page, since scores move as records are added.
        """
        validation.choice("order", order, validation.SEARCH_ORDERS)
        if not isinstance(query, str):
            raise InvalidInput(f"query must be text; got {type(query).__name__}")
        filters = MemoryFilter.build(
            scope=scope,
            kind=kind,
            status=status,
            min_priority=min_priority,
            min_urgency=min_urgency,
            min_confidence=min_confidence,
            updated_since=updated_since,
            updated_before=updated_before,
            cites=cites,
            include_expired=include_expired,
        )
        limit = validation.limit(limit)
        offset = validation.offset(offset)
        if after is not None and order == "relevance":
            raise InvalidInput(
                "a cursor (after) pages only order=policy: relevance scores move as records "
                "are added, so a cursor could skip or repeat results"
            )
        if after is not None and offset:
            raise InvalidInput("give either an offset or a cursor (after), not both")
        key = None if after is None else parse_cursor(after)
        parsed = parse_query(query)
        if parsed is None:
            return Page([])
        dialect = self._store.dialect
        conditions = filters.conditions(dialect, now())
        values = {
            **conditions.values,
            "match": memory_search.match_value(dialect, parsed),
            "limit": limit + 1,
            "offset": offset,
        }
        all_statuses = filters.status == "all"
        paged = after_branches(key, all_statuses=all_statuses) if key is not None else None
        if paged is not None:
            values.update(paged[0])

        def searching() -> Select[Any]:
            source, match, score = memory_search.matching(dialect)
            where = [match, *conditions.clauses(), *self._policy()]
            if paged is not None:
                where.append(paged[1](paged[0]))
            ordering = [*LIST_ORDER] if order == "policy" else [score.desc(), *LIST_ORDER]
            return (
                select(table, score.label("score"))
                .select_from(source)
                .where(*where)
                .order_by(*ordering)
                .limit(bindparam("limit"))
                .offset(bindparam("offset"))
            )

        shape = ("search", conditions.key, order, paged is not None, all_statuses)
        rows = self._store.fetch(self._prepared(shape, searching), values)
        matches = [MemoryMatch(record=row_to_record(row), score=float(row[_SCORE])) for row in rows]
        more = len(matches) > limit
        matches = matches[:limit]
        cursor = cursor_for(matches[-1].record) if more and order == "policy" else None
        return Page(matches, cursor)

    def check_refs(self) -> DanglingRefs:
        """`source` and `chunk` references that name nothing in the store any more."""
        with self._store.read() as conn:
            return memory_refs.dangling(conn, self._scopes.clauses(conn.dialect.name))


# --- helpers ----------------------------------------------------------------------------------


# Where each record field sits in a `select(memory_records)` row (the table's column order,
# which search and the paging union keep, extra columns after): reading rows by position is
# several times faster than by attribute name, and this is the hottest loop of a listing.
_FIELDS = itemgetter(
    *(list(table.c.keys()).index(field.name) for field in dataclasses.fields(MemoryRecord))
)
_SCORE = len(table.c)  # a search row: the record's columns, then its score


def row_to_record(row: Row[Any]) -> MemoryRecord:
    """A frozen record from a `memory_records` row (also used by export)."""
    (
        record_id,
        kind,
        content,
        scope,
        priority,
        urgency,
        confidence,
        status,
        created_at,
        updated_at,
        expires_at,
        supersedes_id,
        source_refs,
    ) = _FIELDS(row)
    record: MemoryRecord = _NEW(MemoryRecord)
    _SLOT_ID(record, record_id)
    _SLOT_KIND(record, kind)
    _SLOT_CONTENT(record, content)
    _SLOT_SCOPE(record, scope)
    _SLOT_PRIORITY(record, priority)
    _SLOT_URGENCY(record, urgency)
    _SLOT_CONFIDENCE(record, confidence)
    _SLOT_STATUS(record, status)
    _SLOT_CREATED_AT(record, created_at)
    _SLOT_UPDATED_AT(record, updated_at)
    _SLOT_EXPIRES_AT(record, expires_at)
    _SLOT_SUPERSEDES_ID(record, supersedes_id)
    _SLOT_SOURCE_REFS(record, freeze_refs(source_refs))
    return record


# A frozen dataclass's __init__ sets each field through object.__setattr__, which costs twice
# what the slots' own descriptors do, and a listing builds its records by the thousand: a
# stored row fills the slots directly (the record is as frozen as any other afterwards).
_NEW = object.__new__
(
    _SLOT_ID,
    _SLOT_KIND,
    _SLOT_CONTENT,
    _SLOT_SCOPE,
    _SLOT_PRIORITY,
    _SLOT_URGENCY,
    _SLOT_CONFIDENCE,
    _SLOT_STATUS,
    _SLOT_CREATED_AT,
    _SLOT_UPDATED_AT,
    _SLOT_EXPIRES_AT,
    _SLOT_SUPERSEDES_ID,
    _SLOT_SOURCE_REFS,
) = (MemoryRecord.__dict__[field.name].__set__ for field in dataclasses.fields(MemoryRecord))


# Hot statements built once, with bound parameters: building a statement per call (and its
# cache key) cost more than running it.
_BY_ID = select(table).where(table.c.id == bindparam("record_id"))
_FETCH = Prepared(_BY_ID)
_FETCH_FOR_UPDATE = Prepared(_BY_ID.with_for_update())
_SET_STATUS = Prepared(
    update(table)
    .where(table.c.id == bindparam("record_id"))
    .values(status=bindparam("new_status"), updated_at=bindparam("at"))
)
_INSERT: dict[tuple[str, bool], Prepared] = {}
_ROWID: ColumnElement[int] = literal_column("rowid")
_MAX_ROWID = Prepared(select(func.max(_ROWID)).select_from(table))
_IDS_AFTER = Prepared(select(table.c.id).where(bindparam("rowid") < _ROWID))


def _insert_statement(conn: Connection, *, returning: bool) -> Prepared:
    """The record insert that skips existing ids; with RETURNING, which tells whether the row
    went in (psycopg reports no rowcount for this form)."""
    key = (conn.dialect.name, returning)
    statement = _INSERT.get(key)
    if statement is None:
        insert = insert_ignoring_conflicts(conn, table)
        statement = _INSERT[key] = Prepared(insert.returning(table.c.id) if returning else insert)
    return statement


def _fetch(
    conn: Connection, record_id: str, scopes: ScopePolicy, *, for_update: bool = False
) -> MemoryRecord | None:
    """The record with this id, or None when there is none or it is outside `scopes`."""
    statement = _FETCH_FOR_UPDATE if for_update else _FETCH
    rows = statement.rows(conn, {"record_id": record_id})
    if not rows:
        return None
    record = row_to_record(rows[0])
    return record if scopes.allows(record.scope) else None


def _require(
    conn: Connection, record_id: str, scopes: ScopePolicy, *, for_update: bool = False
) -> MemoryRecord:
    if not isinstance(record_id, str) or not record_id.strip():
        raise NotFound("a memory id is required")
    record = _fetch(conn, record_id, scopes, for_update=for_update)
    if record is None:
        raise NotFound(f"no memory record with id {record_id!r}")
    return record


def _was_forgotten(conn: Connection, record_id: str, scopes: ScopePolicy) -> bool:
    stmt = select(memory_history.c.changes).where(
        memory_history.c.record_id == record_id, memory_history.c.event == "forgotten"
    )
    if not scopes.restricted:
        return conn.execute(stmt.limit(1)).first() is not None
    # A forgotten entry keeps the record's scope (in `before`), and nothing else does.
    return any(
        (scope := _forgotten_scope(changes)) is not None and scopes.allows(scope)
        for changes in conn.execute(stmt).scalars()
    )


def _forgotten_scope(changes: Any) -> str | None:
    before = changes.get("before") if isinstance(changes, Mapping) else None
    scope = before.get("scope") if isinstance(before, Mapping) else None
    return scope if isinstance(scope, str) else None


def _forgotten_in(entry: HistoryEntry, scopes: ScopePolicy) -> bool:
    """A `forgotten` entry of a record whose scope `scopes` admits."""
    scope = _forgotten_scope(entry.changes)
    return entry.event == "forgotten" and scope is not None and scopes.allows(scope)


def _successor(conn: Connection, record_id: str, scopes: ScopePolicy) -> str | None:
    """The id of the record that superseded this one, if there is one inside `scopes`."""
    row = conn.execute(
        select(table.c.id, table.c.scope).where(table.c.supersedes_id == record_id)
    ).one_or_none()
    return row.id if row is not None and scopes.allows(row.scope) else None


def _successor_id(conn: Connection, record_id: str, scopes: ScopePolicy) -> str:
    return _successor(conn, record_id, scopes) or "a record that no longer exists"


def _check_supersedable(conn: Connection, old: MemoryRecord, scopes: ScopePolicy) -> None:
    """A record is replaced at most once."""
    if old.status == "superseded":
        raise Conflict(
            f"memory {old.id} is already superseded by {_successor_id(conn, old.id, scopes)}"
        )


_ADD_FIELDS = frozenset(
    {
        "kind",
        "content",
        "scope",
        "priority",
        "confidence",
        "urgency",
        "expires_at",
        "supersedes_id",
        "source_refs",
    }
)


def _new_record(
    at: int,
    *,
    kind: str,
    content: str,
    scope: str = "global",
    priority: int = 50,
    confidence: float = 1.0,
    urgency: int = 0,
    expires_at: int | str | None = None,
    supersedes_id: str | None = None,
    source_refs: Sequence[Any] | None = None,
) -> MemoryRecord:
    """A validated, not yet stored record, with its deterministic id."""
    checked_kind = validation.kind(kind)
    checked_content = validation.content(content)
    checked_scope = validation.scope(scope)
    return MemoryRecord(
        id=memory_id(checked_scope, checked_kind, checked_content),
        kind=checked_kind,
        content=checked_content,
        scope=checked_scope,
        priority=validation.percent("priority", priority),
        urgency=validation.percent("urgency", urgency),
        confidence=validation.confidence(confidence),
        status="active",
        created_at=at,
        updated_at=at,
        expires_at=validation.optional_timestamp("expires_at", expires_at),
        supersedes_id=supersedes_id,
        source_refs=freeze_refs(validation.source_refs(source_refs)),
    )


def _row(record: MemoryRecord) -> dict[str, Any]:
    return {
        "id": record.id,
        "kind": record.kind,
        "content": record.content,
        "scope": record.scope,
        "priority": record.priority,
        "urgency": record.urgency,
        "confidence": record.confidence,
        "status": record.status,
        "created_at": record.created_at,
        "updated_at": record.updated_at,
        "expires_at": record.expires_at,
        "supersedes_id": record.supersedes_id,
        "source_refs": _plain(record.source_refs),
    }


def _fetch_many(conn: Connection, record_ids: set[str]) -> dict[str, MemoryRecord]:
    found: dict[str, MemoryRecord] = {}
    ordered = sorted(record_ids)
    for start in range(0, len(ordered), _BATCH):
        batch = ordered[start : start + _BATCH]
        for row in conn.execute(select(table).where(table.c.id.in_(batch))):
            record = row_to_record(row)
            found[record.id] = record
    return found


def _insert_many(conn: Connection, records: list[MemoryRecord]) -> set[str]:
    """Store the records whose ids are free (one statement per table); the ids that went in.

    Ids already stored are skipped, with nothing else written for them.
    """
    if not records:
        return set()
    rows = [_row(record) for record in records]
    if conn.dialect.name == "sqlite":
        # executemany cannot return rows. The write lock is ours since BEGIN IMMEDIATE, so the
        # rows that went in are exactly those past the largest rowid before the insert, and
        # when every row went in (the usual case) there is nothing to look up at all.
        before = _MAX_ROWID.rows(conn)[0][0] or 0
        count = _insert_statement(conn, returning=False).execute_many(conn, rows)
        if count == len(rows):
            inserted = {record.id for record in records}
        else:
            inserted = {row[0] for row in _IDS_AFTER.rows(conn, {"rowid": before})}
    else:
        stmt = _insert_statement(conn, returning=True).statement
        inserted = {row[0] for row in conn.execute(stmt, rows)}
    written = [record for record in records if record.id in inserted]
    memory_search.index(conn, [(record.id, record.content) for record in written])
    memory_refs.write(conn, [(record.id, record.source_refs) for record in written])
    history.append(conn, [history.created(record) for record in written])
    return inserted


def _insert(conn: Connection, record: MemoryRecord) -> bool:
    """Store a new record with its search row, reference rows and `created` entry.

    False when the id was taken meanwhile (the insert skips existing keys, so that concurrent
    writers of the same memory never collide); nothing else is written then.
    """
    if not _insert_statement(conn, returning=True).rows(conn, _row(record)):
        return False
    memory_search.index(conn, [(record.id, record.content)])
    memory_refs.write(conn, [(record.id, record.source_refs)])
    history.append(conn, [history.created(record)])
    return True


def _retire(conn: Connection, old: MemoryRecord, successor_id: str, at: int) -> None:
    _SET_STATUS.rows(conn, {"record_id": old.id, "new_status": "superseded", "at": at})
    history.append(
        conn,
        [history.status_change(old, "superseded", "superseded", at, superseded_by=successor_id)],
    )


_SET_FIELDS: dict[tuple[str, ...], Prepared] = {}


def _set_fields(conn: Connection, record_id: str, values: Mapping[str, Any], at: int) -> None:
    """Change some fields of a record (and its `updated_at`): one statement per set of fields."""
    names = tuple(sorted(values))
    statement = _SET_FIELDS.get(names)
    if statement is None:
        # `new_` names: SQLAlchemy keeps a column's own name for its SET clause.
        assignments = {name: bindparam(f"new_{name}", type_=table.c[name].type) for name in names}
        statement = _SET_FIELDS[names] = Prepared(
            update(table)
            .where(table.c.id == bindparam("record_id"))
            .values(**assignments, updated_at=bindparam("at"))
        )
    params = {f"new_{name}": value for name, value in values.items()}
    statement.rows(conn, {**params, "record_id": record_id, "at": at})


def _set_status(
    conn: Connection, record: MemoryRecord, event: str, status: str, at: int
) -> MemoryRecord:
    _SET_STATUS.rows(conn, {"record_id": record.id, "new_status": status, "at": at})
    history.append(conn, [history.status_change(record, event, status, at)])
    return dataclasses.replace(record, status=status, updated_at=at)


def _plain(refs: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    return [dict(ref) for ref in refs]


def _edited_refs(
    record: MemoryRecord, adding: list[dict[str, Any]], removing: list[dict[str, Any]]
) -> list[dict[str, Any]]:
    """The record's references with some removed and some added, in a stable order.

    A reference to remove matches a stored one that is equal to it, or, given as `TYPE:ID`,
    any stored one with that type and id (which may carry more keys).
    """
    refs = _plain(record.source_refs)
    for gone in removing:
        matching = [
            ref
            for ref in refs
            if ref == gone
            or (
                set(gone) == {"type", "id"}
                and (ref.get("type"), ref.get("id"))
                == (
                    gone["type"],
                    gone["id"],
                )
            )
        ]
        if not matching:
            raise InvalidInput(f"memory {record.id} has no reference {_ref_text(gone)} to remove")
        refs = [ref for ref in refs if ref not in matching]
    return refs + [ref for ref in adding if ref not in refs]


def _ref_text(ref: Mapping[str, Any]) -> str:
    if set(ref) == {"type", "id"}:
        return f"{ref['type']}:{ref['id']}"
    return repr(dict(ref))


def _revised(record: MemoryRecord, changes: Mapping[str, Any], at: int) -> MemoryRecord:
    """The record with `changes` made at `at` (`history.diff` tells whether any field moved)."""
    values = dict(changes)
    if "source_refs" in values:
        values["source_refs"] = freeze_refs(values["source_refs"])
    return dataclasses.replace(record, **values, updated_at=at)


def _walk(
    conn: Connection, start: str | None, match: Any, follow: Any, scopes: ScopePolicy
) -> tuple[str, ...]:
    """Follow supersede links from `start`: each step reads `follow` where `match` is the
    previous id. Stops at the end of the chain (or at a loop, which only a hand-edited store
    could hold), and at a row outside `scopes`, exactly as at a row that does not exist."""
    found: list[str] = []
    current = start
    while current is not None and current not in found and len(found) < _MAX_CHAIN:
        found.append(current)
        row = conn.execute(select(follow, table.c.scope).where(match == current)).one_or_none()
        current = row[0] if row is not None and scopes.allows(row.scope) else None
    return tuple(found)
