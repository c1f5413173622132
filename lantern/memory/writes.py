"""Writing memory records: add, add many, update in place, supersede.

Each method is one operation in one transaction, timed once. Whether a memory is already stored
is decided by what each record says now, its identity (`lantern.memory.identity`), never by
its id: adding the same memory twice stores it once, and no write makes two records say the
same.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

from sqlalchemy import Connection

from lantern import validation
from lantern.boundary import check_fields
from lantern.entities import links as entity_links
from lantern.entities import names as entity_names
from lantern.entities.names import EntityName
from lantern.errors import (
    Conflict,
    InvalidInput,
    LanternError,
    Operation,
    Param,
)
from lantern.memory import fts, history, identity, recordvectors, refs
from lantern.memory.chains import check_supersedable, successor_id
from lantern.memory.changes import (
    insert_new,
    insert_records,
    plain_refs,
    retire,
    set_fields,
    set_status,
)
from lantern.memory.core import MemoryCore
from lantern.memory.entities import attach
from lantern.memory.records import MemoryRecord, freeze_refs
from lantern.memory.rows import require
from lantern.memory.scopes import ScopePolicy
from lantern.store.dialect import serialize_writers_of
from lantern.store.ids import memory_id, memory_identity
from lantern.validation import SourceRefs

if TYPE_CHECKING:
    from lantern.embeddings.provider import EmbeddingProvider
    from lantern.semantic.backfill import EmbedReport
    from lantern.semantic.backfill import Progress as EmbedProgress

_T = TypeVar("_T")


class MemoryWrites(MemoryCore):
    """Adds and revises records."""

    def add(
        self,
        *,
        kind: str,
        content: str,
        scope: str = "global",
        priority: int = 50,
        confidence: float = 1.0,
        urgency: int = 0,
        expires_at: int | float | str | None = None,
        supersedes_id: str | None = None,
        source_refs: str
        | Mapping[str, object]
        | Sequence[str | Mapping[str, object]]
        | None = None,
        allow_dangling: bool = False,
        entities: str | Sequence[str] | None = None,
    ) -> MemoryRecord:
        """Write a record, or return the identical one already stored (see `get_or_add`).

        Args:
            kind: One of `fact`, `preference`, `goal`, `constraint`, `task_state`, `observation`,
                `hypothesis`.
            content: What the record says: non-blank text of at most 100,000 characters.
            scope: Whose or what the record is about (`global`, `user:ada`, `project:lantern`): text
                of at most 512 characters, without surrounding whitespace or line breaks.
            priority: How much it matters, 0 to 100 (higher ranks first in listings).
            confidence: How sure the caller is, 0.0 to 1.0.
            urgency: How soon it matters, 0 to 100 (ranks after priority).
            expires_at: When it stops applying: unix seconds (a fraction is dropped) or ISO-8601
                text (a time without a zone is UTC); None never expires. An expired record is
                archived by `expire`, and left out of listings until then.
            supersedes_id: The id of a record this one replaces, which becomes `superseded` in the
                same transaction; None replaces nothing.
            source_refs: The evidence it came from: `TYPE:ID` (`chunk:chk_...`, `source:src_...`,
                `session:...`) or a JSON object with a string `type`, one or a list.
            allow_dangling: Store `source` and `chunk` references that name nothing stored (they are
                refused otherwise).
            entities: Entities to link it to, one or a list, each `KIND:NAME` or a stored entity's
                id; None links none.

        Returns:
            The record stored, or the identical one that was already there.

        Raises:
            InvalidInput: A value out of its range or of the wrong type, or an unresolvable
                reference.
            NotFound: `supersedes_id`, or an entity id, names nothing.
            Conflict: `supersedes_id` names a superseded record.
            PolicyRefused: The scope is outside this Lantern's scopes, or the store is read-only.
        """
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
            entities=entities,
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
        expires_at: int | float | str | None = None,
        supersedes_id: str | None = None,
        source_refs: str
        | Mapping[str, object]
        | Sequence[str | Mapping[str, object]]
        | None = None,
        allow_dangling: bool = False,
        entities: str | Sequence[str] | None = None,
    ) -> tuple[MemoryRecord, bool]:
        """Write a record; `(record, created)`.

        When a stored record says the same (same scope, kind and content, as it reads now),
        nothing is created: that record comes back unchanged, whatever its status or other
        fields, and `created` is False. Changing those fields is an update; reviving it, a
        restore. `source` and `chunk` references must name stored evidence unless
        `allow_dangling`.

        With `supersedes_id`, the record of that id (which must exist) becomes `superseded` in
        the same transaction. If a stored record already says the same, that is refused, as
        `supersede` refuses it, unless that record is the one that superseded it: then the
        call is a repeat, and changes nothing.

        `entities` (`KIND:NAME` each, or a stored entity's id) are linked to the record, new
        or already stored (see `lantern.memory.entities`).

        Args:
            kind: One of `fact`, `preference`, `goal`, `constraint`, `task_state`, `observation`,
                `hypothesis`.
            content: What the record says: non-blank text of at most 100,000 characters.
            scope: Whose or what the record is about (`global`, `user:ada`, `project:lantern`): text
                of at most 512 characters, without surrounding whitespace or line breaks.
            priority: How much it matters, 0 to 100 (higher ranks first in listings).
            confidence: How sure the caller is, 0.0 to 1.0.
            urgency: How soon it matters, 0 to 100 (ranks after priority).
            expires_at: When it stops applying: unix seconds (a fraction is dropped) or ISO-8601
                text (a time without a zone is UTC); None never expires. An expired record is
                archived by `expire`, and left out of listings until then.
            supersedes_id: The id of a record this one replaces, which becomes `superseded` in the
                same transaction; None replaces nothing.
            source_refs: The evidence it came from: `TYPE:ID` (`chunk:chk_...`, `source:src_...`,
                `session:...`) or a JSON object with a string `type`, one or a list.
            allow_dangling: Store `source` and `chunk` references that name nothing stored (they are
                refused otherwise).
            entities: Entities to link it to, one or a list, each `KIND:NAME` or a stored entity's
                id; None links none.

        Returns:
            The record, and whether this call created it.

        Raises:
            InvalidInput: A value out of its range or of the wrong type, or an unresolvable
                reference.
            NotFound: `supersedes_id`, or an entity id, names nothing.
            Conflict: `supersedes_id` names a superseded record.
            PolicyRefused: The scope is outside this Lantern's scopes, or the store is read-only.
        """
        at = self._store.clock()
        wanted = entity_names.keys(entities)
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
        says = record.id.removeprefix("mem_")  # a new record's first id is its identity's

        def write(
            conn: Connection, pending: recordvectors.PendingVectors | None
        ) -> tuple[MemoryRecord, bool]:
            named = entity_links.resolve(conn, wanted, self._fence())
            old = None
            if supersedes_id is not None:
                old = require(conn, supersedes_id, self._scopes, for_update=True)
            existing = identity.holder(conn, says, self._scopes)
            if existing is not None:
                if old is None or existing.supersedes_id == old.id:
                    return attach(conn, existing, named, at)[0], False
                raise _identical(existing, old)
            if old is not None:
                check_supersedable(conn, old, self._scopes)
            if not allow_dangling:
                refs.require_resolvable(conn, record.source_refs)
            stored, created = insert_new(conn, record, self._scopes, entities=named, says=says)
            if not created:
                # Another writer stored the same memory between our look and our insert.
                if old is not None and stored.supersedes_id != old.id:
                    raise _identical(stored, old)
                return attach(conn, stored, named, at)[0], False
            if old is not None:
                retire(conn, old, stored.id, at)
            recordvectors.store_pending(conn, pending, [stored], at)
            return stored, True

        return self._write_with_vectors([record.content], write)

    def add_many(
        self,
        records: Iterable[Mapping[str, object]],
        *,
        allow_dangling: bool = False,
        dry_run: bool = False,
    ) -> list[tuple[MemoryRecord, bool]]:
        """Write many records in one transaction; `(record, created)` for each, in order.

        Each mapping takes `add`'s keyword arguments except `supersedes_id` (a supersede is one
        explicit operation), `entities` included. Every record is validated before anything is
        written, so a bad one leaves the store unchanged. Records already stored, or repeated in
        the input, come back unchanged with `created` False, exactly as `get_or_add` does.

        Args:
            records: Mappings of `add`'s keyword arguments (`kind` and `content` required), read
                once, in order.
            allow_dangling: Store `source` and `chunk` references that name nothing stored.
            dry_run: Check and resolve everything, then roll back: the results say what would be
                created.

        Returns:
            `(record, created)` for each mapping, in order.

        Raises:
            InvalidInput: A record that `add` would refuse, told as `record N: ...` with its `index`
                (and the `argument` at fault) set; nothing is written.
            PolicyRefused: A record's scope is outside this Lantern's scopes.
        """
        at = self._store.clock()
        built: list[MemoryRecord] = []
        wanted: list[list[entity_names.EntityKey]] = []
        for position, fields in enumerate(records):
            try:
                record, keys = _batch_record(at, fields)
                self._scopes.check_write(record.scope)
            except LanternError as exc:
                raise exc.at(f"record {position}: ", index=position) from exc
            built.append(record)
            wanted.append(keys)

        def write(
            conn: Connection, pending: recordvectors.PendingVectors | None
        ) -> list[tuple[MemoryRecord, bool]]:
            results = self._store_many(conn, built, wanted, at, allow_dangling=allow_dangling)
            if dry_run:
                raise _RolledBack(results)
            recordvectors.store_pending(
                conn, pending, [stored for stored, made in results if made], at
            )
            return results

        try:
            if dry_run:
                with self._write() as conn:
                    return write(conn, None)
            return self._write_with_vectors([r.content for r in built], write)
        except _RolledBack as rolled_back:
            return rolled_back.results

    def _store_many(
        self,
        conn: Connection,
        built: list[MemoryRecord],
        wanted: list[list[entity_names.EntityKey]],
        at: int,
        *,
        allow_dangling: bool,
    ) -> list[tuple[MemoryRecord, bool]]:
        if not allow_dangling:
            refs.require_resolvable(conn, [ref for record in built for ref in record.source_refs])
        named: dict[str, list[entity_names.EntityName]] = {}
        for record, keys in zip(built, wanted, strict=True):
            entities = named.setdefault(record.id, [])
            entities += [
                e for e in entity_links.resolve(conn, keys, self._fence()) if e not in entities
            ]
        # A new record's id is its identity's (`memory_id`): one per text.
        distinct = list({record.id: record for record in built}.values())
        inserted = insert_records(conn, distinct, named)
        stored = {r.id: r for r in distinct if r.id in inserted}
        skipped = [r for r in distinct if r.id not in inserted]
        # Already stored (by an earlier add or another writer): read what is there. A
        # record of that text that is not stored found its id taken by one whose content
        # changed since; it takes the next free id.
        held = identity.holders(conn, (identity.of(r) for r in skipped))
        for record in skipped:
            found = held.get(identity.of(record))
            if found is None:
                found, created = insert_new(
                    conn, record, self._scopes, first_attempt=1, entities=named[record.id]
                )
                if created:
                    inserted.add(record.id)
                else:
                    found = attach(conn, found, named[record.id], at)[0]
            else:
                found = attach(conn, found, named[record.id], at)[0]
            stored[record.id] = found
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
        expires_at: int | float | str | None = None,
        clear_expiry: bool = False,
        add_refs: SourceRefs | None = None,
        remove_refs: str
        | Mapping[str, object]
        | Sequence[str | Mapping[str, object]]
        | None = None,
        allow_dangling: bool = False,
    ) -> MemoryRecord:
        """Revise fields in place: same id, `updated_at` bumped, the change in the history.

        Scope and kind never change in place (that is a supersede). Values equal to the stored
        ones change nothing, and an update that changes nothing writes nothing. A content that
        another stored record already says is refused. The record's identity follows its new
        content; its id does not change.

        Args:
            record_id: The record to revise (`mem_...`).
            content: The new content; None keeps it.
            priority: The new priority, 0 to 100; None keeps it.
            urgency: The new urgency, 0 to 100; None keeps it.
            confidence: The new confidence, 0.0 to 1.0; None keeps it.
            expires_at: The new expiry (unix seconds or ISO-8601); None keeps it.
            clear_expiry: Remove the expiry (not together with `expires_at`).
            add_refs: References to add (`TYPE:ID` or a JSON object with a string `type`, one or a
                list); those already there are kept once.
            remove_refs: References to remove; a `TYPE:ID` removes every stored reference of that
                type and id.
            allow_dangling: Add `source` and `chunk` references that name nothing stored.

        Returns:
            The record as it is now (unchanged when nothing differed).

        Raises:
            InvalidInput: Nothing to update, a value out of range, or a reference to remove that the
                record does not have.
            NotFound: No such record within the scopes.
            Conflict: The record is superseded, or another record already says the new content.
        """
        changes = _field_changes(content, priority, urgency, confidence, expires_at, clear_expiry)
        adding = validation.source_refs(add_refs)
        removing = validation.source_refs(remove_refs)
        if not changes and not adding and not removing:
            raise InvalidInput(
                "nothing to update: give a content, priority, urgency, confidence, expiry, "
                "or references to add or remove"
            )
        at = self._store.clock()

        def write(conn: Connection, pending: recordvectors.PendingVectors | None) -> MemoryRecord:
            record = require(conn, record_id, self._scopes, for_update=True)
            if record.status == "superseded":
                raise Conflict(
                    f"memory {record_id} is superseded by "
                    f"{successor_id(conn, record_id, self._scopes)}; update its successor instead"
                )
            if adding or removing:
                changes["source_refs"] = _edited_refs(record, adding, removing)
                new_refs = [ref for ref in adding if ref not in plain_refs(record.source_refs)]
                if new_refs and not allow_dangling:
                    refs.require_resolvable(conn, new_refs)
            return _revise(conn, record, changes, at, pending, self._scopes)

        if "content" in changes:
            # A new content has new vectors, when the store embeds on write.
            return self._write_with_vectors([changes["content"]], write)
        with self._write() as conn:
            return write(conn, None)

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
        expires_at: int | float | str | None = None,
        clear_expiry: bool = False,
        source_refs: str
        | Mapping[str, object]
        | Sequence[str | Mapping[str, object]]
        | None = None,
        allow_dangling: bool = False,
        entities: str | Sequence[str] | None = None,
    ) -> MemoryRecord:
        """Replace a record: the new one (fields not given are the old one's) gets
        `supersedes_id`, the old one becomes `superseded`, both in one transaction.

        The replacement is linked to the old record's entities, or to `entities` when given.

        Superseding a superseded record is an error that names its successor. The replacement
        must differ from the old record in scope, kind or content, and no other stored record
        may say the same.

        Args:
            old_id: The record to replace (`mem_...`).
            content: The replacement's content; None keeps the old one's.
            kind: The replacement's kind; None keeps the old one's.
            scope: The replacement's scope; None keeps the old one's.
            priority: The replacement's priority, 0 to 100; None keeps the old one's.
            urgency: The replacement's urgency, 0 to 100; None keeps the old one's.
            confidence: The replacement's confidence, 0.0 to 1.0; None keeps the old one's.
            expires_at: The replacement's expiry (unix seconds or ISO-8601); None keeps the old
                one's.
            clear_expiry: The replacement never expires (not together with `expires_at`).
            source_refs: The replacement's references (`TYPE:ID` or a JSON object with a string
                `type`, one or a list); None keeps the old one's.
            allow_dangling: Store `source` and `chunk` references that name nothing stored.
            entities: The replacement's entities (`KIND:NAME` or ids, one or a list); None links the
                old record's.

        Returns:
            The replacement, as stored.

        Raises:
            InvalidInput: A value out of range, or a replacement identical to the old record.
            NotFound: No such record within the scopes.
            Conflict: The record is already superseded, or another record says the same.
            PolicyRefused: The new scope is outside this Lantern's scopes.
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
            raise InvalidInput(
                "give either ", Param("expires_at"), " or ", Param("clear_expiry"), ", not both"
            )
        new_expiry = validation.optional_timestamp("expires_at", expires_at)
        new_refs = None if source_refs is None else validation.source_refs(source_refs)
        new_entities = None if entities is None else entity_names.keys(entities)
        if given["scope"] is not None:
            self._scopes.check_write(given["scope"])
        at = self._store.clock()
        new_content = given["content"]

        def contents(conn: Connection) -> list[str]:
            if new_content is not None:
                return [new_content]
            return [require(conn, old_id, self._scopes).content]

        def write(conn: Connection, pending: recordvectors.PendingVectors | None) -> MemoryRecord:
            old = require(conn, old_id, self._scopes, for_update=True)
            check_supersedable(conn, old, self._scopes)
            fields = {
                name: getattr(old, name) if value is None else value
                for name, value in given.items()
            }
            says = memory_identity(fields["scope"], fields["kind"], fields["content"])
            if says == identity.of(old):
                raise _identical(old, old)
            twin = identity.holder(conn, says, self._scopes)
            if twin is not None:
                raise _identical(twin, old)
            if new_refs is not None and not allow_dangling:
                refs.require_resolvable(conn, new_refs)
            expiry = old.expires_at if new_expiry is None else new_expiry
            record = MemoryRecord(
                id=memory_id(fields["scope"], fields["kind"], fields["content"]),
                status="active",
                created_at=at,
                updated_at=at,
                expires_at=None if clear_expiry else expiry,
                supersedes_id=old_id,
                source_refs=old.source_refs if new_refs is None else freeze_refs(new_refs),
                **fields,
            )
            if new_entities is None:
                named = [
                    EntityName(ref.kind, ref.name) for ref in entity_links.of_record(conn, old.id)
                ]
            else:
                named = entity_links.resolve(conn, new_entities, self._fence())
            stored, created = insert_new(conn, record, self._scopes, entities=named, says=says)
            if not created:
                raise _identical(stored, old)
            retire(conn, old, stored.id, at)
            recordvectors.store_pending(conn, pending, [stored], at)
            return stored

        return self._write_with_vectors(contents, write)

    def put_by_ref(
        self,
        ref: str | Mapping[str, object],
        *,
        content: str,
        scope: str = "global",
        kind: str = "fact",
        priority: int = 50,
        confidence: float = 1.0,
        urgency: int = 0,
        expires_at: int | float | str | None = None,
        allow_dangling: bool = False,
    ) -> tuple[MemoryRecord, bool]:
        """Make the record of `scope` that holds the reference `ref` say `content`, with the
        expiry `expires_at`: `(record, created)`.

        `ref` is the caller's key for one record of the scope (a `TYPE:ID`, or an object with a
        string `type` and `id`, as `mem0` or LangGraph items are kept). The record of the scope
        that holds it, other than a superseded one, is revised in place (restored first when
        archived; the first in list order, should several hold it); its kind, priority, urgency
        and confidence stay as they are, a content and expiry equal to the stored ones change
        nothing, and each change goes into its history as `update` and `restore` record it.
        With no such record, a new one holding `ref` is added, as `add` adds it. One
        transaction; calls with the same scope and reference take turns, also on PostgreSQL,
        so a reference written only this way names one record of its scope.

        Args:
            ref: The key: `TYPE:ID`, or a JSON object with a string `type` and a string `id` (and
                whatever else it should keep), stored among the record's references.
            content: What the record says afterwards: non-blank text of at most 100,000
                characters.
            scope: The scope of the record (`global`, `user:ada`...).
            kind: The kind of a new record (`fact`, `preference`...); a stored record keeps its own.
            priority: The priority of a new record, 0 to 100.
            confidence: The confidence of a new record, 0.0 to 1.0.
            urgency: The urgency of a new record, 0 to 100.
            expires_at: The record's expiry afterwards (unix seconds or ISO-8601); None, it never
                expires.
            allow_dangling: Let a `source` or `chunk` key name nothing stored.

        Returns:
            The record as it is now, and whether this call created it.

        Raises:
            InvalidInput: A value out of its range, or a reference without a string id.
            Conflict: Another record already says `content` (same scope, kind and content).
            PolicyRefused: The scope is outside this Lantern's scopes, or the store is read-only.
        """
        if not isinstance(ref, str):
            ref = dict(ref)
        ref_type, ref_id = validation.ref_key(ref)
        at = self._store.clock()
        record = _new_record(
            at,
            kind=kind,
            content=content,
            scope=scope,
            priority=priority,
            confidence=confidence,
            urgency=urgency,
            expires_at=expires_at,
            source_refs=ref,
        )
        self._scopes.check_write(record.scope)
        says = identity.of(record)
        changes = {"content": record.content, "expires_at": record.expires_at}

        def write(
            conn: Connection, pending: recordvectors.PendingVectors | None
        ) -> tuple[MemoryRecord, bool]:
            serialize_writers_of(conn, f"ref\x00{record.scope}\x00{ref_type}\x00{ref_id}")
            held = refs.held_in_scope(conn, ref_type, ref_id, record.scope)
            if held:
                current = held[0]
                if current.status == "archived":
                    current = set_status(conn, current, "restored", "active", at)
                return _revise(conn, current, changes, at, pending, self._scopes), False
            if not allow_dangling:
                refs.require_resolvable(conn, record.source_refs)
            stored, created = insert_new(conn, record, self._scopes, says=says)
            if not created:
                raise Conflict(
                    f"an identical memory is already stored as {stored.id}, without the "
                    f"reference {ref_type}:{ref_id}"
                )
            recordvectors.store_pending(conn, pending, [stored], at)
            return stored, True

        return self._write_with_vectors([record.content], write)

    def _write_with_vectors(
        self,
        contents: recordvectors.Contents,
        body: Callable[[Connection, recordvectors.PendingVectors | None], _T],
    ) -> _T:
        """Run `body` in a write transaction, with the vectors of `contents` when the store
        embeds on write.

        Whether it does is asked inside the write itself: a store that does not embed (the
        usual case) pays one look-up by key and no transaction of its own. One that does says
        so before anything is written; that transaction ends unchanged, the vectors are
        computed with no lock held (a model may take seconds, and a failure to embed changes
        nothing), and `body` runs in a new transaction with them.
        """
        with self._write() as conn:
            if not recordvectors.wanted(conn):
                return body(conn, None)
        pending = recordvectors.on_write(self._store, contents)
        with self._write() as conn:
            return body(conn, pending)

    def embed(
        self, provider: EmbeddingProvider, *, progress: EmbedProgress | None = None
    ) -> EmbedReport:
        """Compute the vectors of `provider`'s model that records lack or hold stale (their
        content changed since), in batches that each commit (`lantern.memory.recordvectors`):
        interrupted, it resumes where it stopped when run again.

        Args:
            provider: The embedding provider whose model makes the vectors.
            progress: Called after each batch with the records looked at so far and the records to
                look at; None reports nothing.

        Returns:
            How many vectors were computed and written, how many were already current, and
            the time it took.
        """
        return recordvectors.embed_missing(self._store, provider, progress=progress)


class _RolledBack(Exception):
    """Ends a dry run's transaction, carrying what it would have written."""

    def __init__(self, results: list[tuple[MemoryRecord, bool]]) -> None:
        super().__init__("dry run")
        self.results = results


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
        "entities",
    }
)


def _field_changes(
    content: str | None,
    priority: int | None,
    urgency: int | None,
    confidence: float | None,
    expires_at: int | float | str | None,
    clear_expiry: bool,
) -> dict[str, Any]:
    """The fields an update asks for, validated."""
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
        raise InvalidInput(
            "give either ", Param("expires_at"), " or ", Param("clear_expiry"), ", not both"
        )
    if expires_at is not None:
        changes["expires_at"] = validation.timestamp("expires_at", expires_at)
    if clear_expiry:
        changes["expires_at"] = None
    return changes


def _identical(stored: MemoryRecord, old: MemoryRecord) -> LanternError:
    """The refusal of a replacement of `old` that says what `stored` already says."""
    if stored.id == old.id:
        return InvalidInput(
            f"the replacement would be identical to {old.id} (same scope, kind and content); "
            "change one of them, or use ",
            Operation("memory.update"),
            " for the other fields",
        )
    return Conflict(
        f"an identical memory is already stored as {stored.id}; {old.id} was not superseded "
        f"(supersede it with other content, or archive it)"
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
    expires_at: int | float | str | None = None,
    supersedes_id: str | None = None,
    source_refs: SourceRefs | None = None,
) -> MemoryRecord:
    """A validated, not yet stored record, with the first id its text gives."""
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


def _batch_record(at: int, fields: object) -> tuple[MemoryRecord, list[entity_names.EntityKey]]:
    """One record of `add_many` checked as `add` checks its arguments, and the entities it
    names."""
    if not isinstance(fields, Mapping):
        raise InvalidInput("must be a mapping of add's arguments")
    if fields.get("supersedes_id") is not None:
        raise InvalidInput("add_many does not supersede; use supersede() for that")
    unknown = set(fields) - _ADD_FIELDS
    if unknown:
        raise InvalidInput(f"unknown field(s) {', '.join(sorted(map(str, unknown)))}")
    if "kind" not in fields or "content" not in fields:
        raise InvalidInput("kind and content are required")
    check_fields(MemoryWrites.add, fields)
    given = dict(fields)
    keys = entity_names.keys(given.pop("entities", None))
    return _new_record(at, **given), keys


def _edited_refs(
    record: MemoryRecord, adding: list[dict[str, Any]], removing: list[dict[str, Any]]
) -> list[dict[str, Any]]:
    """The record's references with some removed and some added, in a stable order.

    A reference to remove matches a stored one that is equal to it, or, given as `TYPE:ID`,
    any stored one with that type and id (which may carry more keys).
    """
    refs = plain_refs(record.source_refs)
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


def _revise(
    conn: Connection,
    record: MemoryRecord,
    changes: Mapping[str, Any],
    at: int,
    pending: recordvectors.PendingVectors | None,
    scopes: ScopePolicy,
) -> MemoryRecord:
    """Change fields of a stored record in place (`update`'s work, in the caller's
    transaction): its identity, search row, vectors and reference rows follow, and the change
    is appended to its history. A content that another record says is refused; values equal
    to the stored ones change nothing, and nothing at all is written when none differs."""
    said, says = identity.of(record), None
    if changes.get("content", record.content) != record.content:
        says = memory_identity(record.scope, record.kind, changes["content"])
        twin = identity.holder(conn, says, scopes) if says != said else None
        if twin is not None:
            raise Conflict(f"an identical memory is already stored as {twin.id}")
    revised = _revised(record, changes, at)
    before, after = history.diff(record, revised)
    if not after:
        return record
    fields = {name: changes[name] for name in after}
    if says is not None and says != said:
        fields["identity_hash"] = says
    set_fields(conn, record.id, fields, at)
    if "identity_hash" in fields:
        identity.release(conn, said)
    if "content" in after:
        fts.reindex(conn, record.id, revised.content)
        # Its vectors were of the old text: removed, and computed again if the store embeds on
        # write.
        recordvectors.invalidate(conn, record.id)
        recordvectors.store_pending(conn, pending, [revised], at)
    if "source_refs" in after:
        refs.replace(conn, record.id, revised.source_refs)
    history.append(conn, [history.entry(record.id, "updated", at, before=before, after=after)])
    return revised


def _revised(record: MemoryRecord, changes: Mapping[str, Any], at: int) -> MemoryRecord:
    """The record with `changes` made at `at` (`history.diff` tells whether any field moved)."""
    values = dict(changes)
    if "source_refs" in values:
        values["source_refs"] = freeze_refs(values["source_refs"])
    return dataclasses.replace(record, **values, updated_at=at)
