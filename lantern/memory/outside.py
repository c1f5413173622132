"""What a confined caller is shown of the records outside its scopes: that one is there, never
which one.

A record inside the scopes may be linked to one outside: it superseded it, or was superseded by
it, across the fence. Its `supersedes_id`, the `superseded_by` and `supersedes_id` of its history
entries and the ids of its supersede chain would then name the record outside, and an id is
derived from its record's scope, kind and content (`lantern.store.ids.memory_id`), so a caller
who names the id could confirm a guess of what another scope holds. A confined caller reads
`OUTSIDE_SCOPES` in each such place instead: the field keeps its name and its type (a string
where a record is, null where none is), and says that a record lies beyond the fence without
saying which. The placeholder is no id (ids are `mem_` and 16 hex digits), so a call that is
given it answers as for any id that names nothing.

An id counts as outside when it names a stored record of a scope the policy does not admit, or
a forgotten record whose `forgotten` entry keeps such a scope. An id that names nothing at all
(neither) is shown as it is: it says nothing of any scope.

The ids of history entries number the whole log of every scope, so the gaps between a
record's entries would count the changes made outside. A confined caller reads instead each
entry's place among its record's entries (1, 2, 3...; `lantern.memory.history.ordinals`),
and the changes feed gives it a cursor made of the record and that place
(`lantern.memory.activity`).

Entity names are folded to lowercase in what a confined caller reads (`EntityRef`s, the
`entities` of history entries): an entity keeps the spelling it was first stored with, which
may be another scope's (`lantern.entities.names.folded`).

`hiding` applies this to every public method of the memory repository, below the CLI, the MCP
tools, the web view and the Python API, so that no caller (and no method added later) can
forget it. An unrestricted repository returns its results untouched, at no cost.
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
from collections.abc import Callable, Iterable, Mapping
from typing import Any, TypeVar

from sqlalchemy import Connection, select

from lantern.entities.names import folded
from lantern.entities.records import EntityRef, LinkChange
from lantern.memory.history import forgotten_scope, ordinals
from lantern.memory.records import (
    OUTSIDE_SCOPES,
    HistoryEntry,
    MemoryChain,
    MemoryMatch,
    MemoryRecord,
    Page,
)
from lantern.memory.scopes import ScopePolicy
from lantern.store.models import memory_history
from lantern.store.models import memory_records as table

_C = TypeVar("_C", bound=type)
_BATCH = 500
_LINKS = ("superseded_by", "supersedes_id")
"""The keys of a history entry's changes (and of their `before` and `after`) that hold the id of
another record."""


def hiding(cls: _C) -> _C:
    """Pass the results of every public method of `cls` through `hide` when the repository is
    confined (`self._scopes.restricted`, `self._store`)."""
    for name in dir(cls):
        if name.startswith("_"):
            continue
        attr = inspect.getattr_static(cls, name)
        if inspect.isfunction(attr):
            setattr(cls, name, _hiding(attr))
    return cls


def _hiding(func: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(func)
    def wrapper(self: Any, *args: Any, **kwargs: Any) -> Any:
        result = func(self, *args, **kwargs)
        scopes: ScopePolicy = self._scopes
        if not scopes.restricted:
            return result
        return hide(self._store, scopes, result)

    return wrapper


def hide(store: Any, scopes: ScopePolicy, result: Any) -> Any:
    """`result` with every id of a record outside `scopes` replaced by `OUTSIDE_SCOPES`: in
    records, matches, chains and history entries, alone or in lists, tuples and pages; and
    every history entry numbered by its place in its record's history."""
    named: set[str] = set()
    shown: set[str] = set()
    entries: dict[int, str] = {}
    _collect(result, named, shown, entries)
    candidates = named - shown - {OUTSIDE_SCOPES}
    if not candidates and not entries and not _names_entities(result):
        return result
    hidden: set[str] = set()
    places: dict[int, int] = {}
    if candidates or entries:
        with store.read() as conn:
            hidden = outside(conn, scopes, candidates) if candidates else set()
            places = ordinals(conn, entries) if entries else {}
    return _rebuild(result, hidden, places)


def outside(conn: Connection, scopes: ScopePolicy, ids: Iterable[str]) -> set[str]:
    """The ids among `ids` of records (stored, or forgotten) of scopes `scopes` does not admit."""
    wanted = sorted(set(ids))
    found: set[str] = set()
    hidden: set[str] = set()
    for start in range(0, len(wanted), _BATCH):
        batch = wanted[start : start + _BATCH]
        rows = conn.execute(select(table.c.id, table.c.scope).where(table.c.id.in_(batch)))
        for record_id, scope in rows:
            found.add(record_id)
            if not scopes.allows(scope):
                hidden.add(record_id)
    gone = [record_id for record_id in wanted if record_id not in found]
    for start in range(0, len(gone), _BATCH):
        rows = conn.execute(
            select(memory_history.c.record_id, memory_history.c.changes).where(
                memory_history.c.event == "forgotten",
                memory_history.c.record_id.in_(gone[start : start + _BATCH]),
            )
        )
        for record_id, changes in rows:
            scope = forgotten_scope(changes)
            if scope is not None and not scopes.allows(scope):
                hidden.add(record_id)
    return hidden


def _collect(value: Any, named: set[str], shown: set[str], entries: dict[int, str]) -> None:
    """The ids `value` names (`named`), those of the records it shows (`shown`, visible by
    definition: the repository read them within the scopes), and its history entries'
    (`entries`, their records by entry id)."""
    if isinstance(value, MemoryRecord):
        shown.add(value.id)
        if value.supersedes_id is not None:
            named.add(value.supersedes_id)
    elif isinstance(value, MemoryMatch):
        _collect(value.record, named, shown, entries)
    elif isinstance(value, MemoryChain):
        _collect(value.record, named, shown, entries)
        named.update(value.replaces, value.replaced_by)
    elif isinstance(value, HistoryEntry):
        _links(value.changes, named)
        entries[value.id] = value.record_id
    elif isinstance(value, list | tuple):
        for item in value:
            _collect(item, named, shown, entries)


def _names_entities(value: Any) -> bool:
    """Whether `value` holds entity references, whose names a confined caller reads folded."""
    if isinstance(value, EntityRef | LinkChange):
        return True
    return isinstance(value, list | tuple) and any(_names_entities(item) for item in value)


def _links(changes: Mapping[str, Any], named: set[str]) -> None:
    for part in (changes, changes.get("before"), changes.get("after")):
        if isinstance(part, Mapping):
            named.update(v for k, v in part.items() if k in _LINKS and isinstance(v, str))


def _rebuild(value: Any, hidden: set[str], places: dict[int, int]) -> Any:
    if isinstance(value, MemoryRecord):
        if value.supersedes_id in hidden:
            return dataclasses.replace(value, supersedes_id=OUTSIDE_SCOPES)
        return value
    if isinstance(value, MemoryMatch):
        record = _rebuild(value.record, hidden, places)
        return value if record is value.record else dataclasses.replace(value, record=record)
    if isinstance(value, MemoryChain):
        return MemoryChain(
            record=_rebuild(value.record, hidden, places),
            replaces=_ids(value.replaces, hidden),
            replaced_by=_ids(value.replaced_by, hidden),
        )
    if isinstance(value, HistoryEntry):
        changes = _hidden_links(value.changes, hidden)
        # 0: an entry a concurrent `forget` removed meanwhile, whose place is gone.
        place = places.get(value.id, 0)
        if changes is None:
            return dataclasses.replace(value, id=place)
        return HistoryEntry.from_stored(place, value.record_id, value.event, value.at, changes)
    if isinstance(value, EntityRef):
        return dataclasses.replace(value, name=folded(value.name))
    if isinstance(value, LinkChange):
        return dataclasses.replace(value, entity=_rebuild(value.entity, hidden, places))
    if isinstance(value, Page):
        return Page(
            [_rebuild(item, hidden, places) for item in value], value.next_cursor, value.summary
        )
    if isinstance(value, list):
        return [_rebuild(item, hidden, places) for item in value]
    if isinstance(value, tuple):
        return tuple(_rebuild(item, hidden, places) for item in value)
    return value


def _ids(ids: tuple[str, ...], hidden: set[str]) -> tuple[str, ...]:
    return tuple(OUTSIDE_SCOPES if record_id in hidden else record_id for record_id in ids)


def _hidden_links(changes: Mapping[str, Any], hidden: set[str]) -> dict[str, Any] | None:
    """A copy of `changes` with the hidden ids replaced; None when it names none."""

    def replaced(part: Any) -> Any:
        if not isinstance(part, Mapping):
            return part
        return {
            key: OUTSIDE_SCOPES
            if key in _LINKS and value in hidden
            else _folded_texts(value)
            if key == "entities"
            else _plain(value)
            for key, value in part.items()
        }

    named: set[str] = set()
    _links(changes, named)
    if not named & hidden and not any(
        isinstance(part, Mapping) and "entities" in part
        for part in (changes.get("before"), changes.get("after"))
    ):
        return None
    copied: dict[str, Any] = replaced(changes)
    for side in ("before", "after"):
        if side in copied:
            copied[side] = replaced(changes[side])
    return copied


def _folded_texts(value: Any) -> Any:
    """A history entry's `entities` (`KIND:NAME` texts) with their names folded as a confined
    caller reads every entity name (`lantern.entities.names.folded`): an attach writes the
    stored spellings, which may be another scope's."""
    if not isinstance(value, list | tuple):
        return _plain(value)
    return [
        f"{kind}:{folded(name)}" if isinstance(text, str) and sep else _plain(text)
        for text in value
        for kind, sep, name in [text.partition(":") if isinstance(text, str) else ("", "", "")]
    ]


def _plain(value: Any) -> Any:
    """A frozen JSON value (read-only mappings, tuples) as plain dicts and lists."""
    if isinstance(value, Mapping):
        return {key: _plain(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(item) for item in value]
    return value
