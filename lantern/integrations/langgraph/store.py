"""`LanternStore`: LangGraph's `BaseStore` over a Lantern store.

Every operation is a call on the facade: `put` is `memory.put_by_ref` (the item's record is
revised in place, with its history, or added), `delete` archives the record (or forgets it),
`get` is `memory.by_refs` (a look-up by key), `search` is `memory.list` or, with a query,
`memory.search`, and `list_namespaces` reads the scopes of the records. `mapping` says how an
item is a record; docs/langgraph.md says it for users.
"""

from __future__ import annotations

import asyncio
import math
import os
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from types import TracebackType
from typing import Any, Literal, Self

from lantern import validation
from lantern.api import Lantern
from lantern.errors import InvalidInput, MissingDependency, NotFound, install_hint

try:
    from langgraph.store.base import (
        BaseStore,
        GetOp,
        Item,
        ListNamespacesOp,
        Op,
        PutOp,
        Result,
        SearchItem,
        SearchOp,
        TTLConfig,
    )
except ModuleNotFoundError as exc:  # pragma: no cover - the extra is installed in the tests
    raise MissingDependency(
        f"LanternStore needs LangGraph, which is not installed: {install_hint('langgraph')}"
    ) from exc

from lantern.integrations.langgraph import filtering, mapping
from lantern.memory.records import MemoryRecord

DeleteMode = Literal["archive", "forget"]
_INDEX_KEYS = frozenset({"embed", "dims", "fields"})
_TTL_KEYS = frozenset({"default_ttl", "refresh_on_read", "omit_expired", "sweep_interval_minutes"})
_PAGE = 10_000
"""The most records a listing or a search reads at once (Lantern's own limit)."""
_REFS_AT_ONCE = 5_000
"""The most items one look-up asks for (a record may hold several of their paths)."""


class LanternStore(BaseStore):
    """A LangGraph store whose items are Lantern memory records.

    `LanternStore.open(db)` opens the store at a path or URL (default: `LANTERN_DB`, then the
    user store) and closes it with the store; `LanternStore(lantern)` works on a `Lantern`
    the caller opened (and closes). `batch` runs its reads first, then its writes, each write
    one transaction; `abatch` runs `batch` in a worker thread.

    Options:

    * `index`: `{"embed": PROVIDER}` with the name of a Lantern embedding provider (`minilm`,
      `hashing`, `openai-compatible`...): the store computes each record's vector as it is
      written with that provider (`lantern db settings --default-model PROVIDER
      --embed-on-write`), and a search with a query compares them. `fields` may only be
      `["$"]` (a record's vector is of its whole content), `dims` is not needed (each vector is
      stored with its dimension) and, given, must be a positive integer.
    * `ttl`: LangGraph's TTL configuration: `default_ttl` (minutes) and `refresh_on_read`. An
      item's TTL is its record's expiry; expired items are never returned (`omit_expired`
      cannot be turned off), and no sweep runs in the background: `lantern memory expire`
      archives expired records when you run it.
    * `kind`: the kind of the records made for new items (default `fact`).
    * `on_delete`: `archive` (default; the record and its history stay, `archived`) or
      `forget` (every record of the item is forgotten: its content leaves the store).
    """

    supports_ttl: bool = True

    def __init__(
        self,
        lantern: Lantern,
        *,
        index: Mapping[str, Any] | None = None,
        ttl: TTLConfig | None = None,
        kind: str = "fact",
        on_delete: DeleteMode = "archive",
    ) -> None:
        if on_delete not in ("archive", "forget"):
            raise InvalidInput(f"on_delete must be 'archive' or 'forget'; got {on_delete!r}")
        self.lantern = lantern
        self.kind = validation.kind(kind)
        self.on_delete: DeleteMode = on_delete
        self.ttl_config = _checked_ttl(ttl)
        self.model = None if index is None else _embedding_model(index)
        self._owned = False
        if self.model is not None:
            settings = lantern.embedding_settings()
            if settings.default_model != self.model or not settings.on_write:
                lantern.set_embedding_settings(default_model=self.model, on_write=True)

    @classmethod
    def open(
        cls,
        db: str | os.PathLike[str] | None = None,
        *,
        scopes: str | Iterable[str] | None = None,
        index: Mapping[str, Any] | None = None,
        ttl: TTLConfig | None = None,
        kind: str = "fact",
        on_delete: DeleteMode = "archive",
    ) -> LanternStore:
        """A store on the Lantern store at `db` (a path or URL; None: `LANTERN_DB`, then the
        user store), created if there is none, confined to `scopes` if given (patterns, as
        `Lantern.open` takes them), closed by `close()`."""
        lantern = Lantern.open(db, scopes=scopes)
        try:
            store = cls(lantern, index=index, ttl=ttl, kind=kind, on_delete=on_delete)
        except BaseException:
            lantern.close()
            raise
        store._owned = True
        return store

    def close(self) -> None:
        """Close the Lantern store if `open` opened it."""
        if self._owned:
            self.lantern.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    # --- the batch ---------------------------------------------------------------------------

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        """Run the operations: every get, search and listing first, on the store as it was
        before the batch, then the puts and deletes (the last one of an item wins). Every op
        is checked before any runs, so a bad one changes nothing."""
        ops = list(ops)
        writes: dict[tuple[tuple[str, ...], str], _Write] = {}
        for op in ops:
            if isinstance(op, PutOp):
                write = _write(op)
                writes.pop((op.namespace, op.key), None)  # the last one wins, and goes last
                writes[(op.namespace, op.key)] = write
            else:
                _check(op)
        results: list[Result] = [None] * len(ops)
        gets: list[tuple[int, GetOp]] = []
        for position, op in enumerate(ops):
            if isinstance(op, GetOp):
                gets.append((position, op))
            elif isinstance(op, SearchOp):
                results[position] = self._search(op)
            elif isinstance(op, ListNamespacesOp):
                results[position] = self._list_namespaces(op)
        for start in range(0, len(gets), _REFS_AT_ONCE):
            for position, item in self._get(gets[start : start + _REFS_AT_ONCE]):
                results[position] = item
        for write in writes.values():
            if write.content is None:
                self._delete(write)
            else:
                self._put(write)
        return results

    def get(
        self, namespace: tuple[str, ...], key: str, *, refresh_ttl: bool | None = None
    ) -> Item | None:
        """`batch([GetOp(...)])` without the batch: the call a graph makes most."""
        if refresh_ttl is None:
            refresh_ttl = (self.ttl_config or {}).get("refresh_on_read", True)
        op = GetOp(mapping.check_namespace(namespace, empty=True), str(key), refresh_ttl)
        for _position, item in self._get([(0, op)]):
            return item
        return None  # pragma: no cover - _get answers every op

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        """`batch`, in a worker thread (Lantern's calls block)."""
        return await asyncio.to_thread(self.batch, list(ops))

    # --- reads -------------------------------------------------------------------------------

    def _get(self, gets: list[tuple[int, GetOp]]) -> Iterator[tuple[int, Item | None]]:
        wanted = {}
        for position, op in gets:
            scope = mapping.scope_of(op.namespace)
            wanted[position] = (op, mapping.path_of(scope, op.key))
        paths = {path for _, path in wanted.values()}
        records = self.lantern.memory.by_refs([mapping.lookup(path) for path in paths], limit=_PAGE)
        found: dict[str, tuple[MemoryRecord, Item, float | None]] = {}
        for record in records:
            read = self._read(record)
            if read is None:
                continue
            namespace, stored, path = read
            if path in paths and path not in found:
                item = Item(
                    value=stored.value,
                    key=stored.key,
                    namespace=namespace,
                    created_at=_time(record.created_at),
                    updated_at=_time(record.updated_at),
                )
                found[path] = (record, item, stored.ttl)
        refreshed: set[str] = set()
        for position, (op, path) in wanted.items():
            if path not in found:
                yield position, None
                continue
            record, item, ttl = found[path]
            if ttl is not None and op.refresh_ttl and path not in refreshed:
                refreshed.add(path)
                self._refresh(record, ttl, item)
            yield position, item

    def _search(self, op: SearchOp) -> list[SearchItem]:
        wanted = filtering.check_filter(op.filter)
        patterns = mapping.scope_patterns(op.namespace_prefix)
        if op.limit == 0:
            return []
        enough = op.offset + op.limit
        size = max(1, min(_PAGE, enough))
        after: str | None = None
        items: list[SearchItem] = []
        while True:
            if op.query:
                page = self.lantern.memory.search(
                    op.query, scope=patterns, model=self.model, limit=size, after=after
                )
                found = [(match.record, match.score) for match in page]
            else:
                page = self.lantern.memory.list(scope=patterns, limit=size, after=after)
                found = [(record, None) for record in page]
            for record, score in found:
                read = self._read(record)
                if read is None:
                    continue
                namespace, stored, _path = read
                if wanted is not None and not filtering.matches(stored.value, wanted):
                    continue
                item = SearchItem(
                    namespace,
                    stored.key,
                    stored.value,
                    _time(record.created_at),
                    _time(record.updated_at),
                    score,
                )
                if op.refresh_ttl and stored.ttl is not None:
                    self._refresh(record, stored.ttl, item)
                items.append(item)
            if len(items) >= enough or page.next_cursor is None:
                return items[op.offset : enough]
            after = page.next_cursor
            size = min(_PAGE, size * 2)

    def _list_namespaces(self, op: ListNamespacesOp) -> list[tuple[str, ...]]:
        conditions = tuple(op.match_conditions or ())
        known: list[str] = []
        for condition in conditions:
            if condition.match_type == "prefix":
                for label in condition.path:
                    if label == "*":
                        break
                    known.append(label)
                break
        patterns = mapping.scope_patterns(tuple(known))
        scopes: set[str] = set()
        after: str | None = None
        while True:
            page = self.lantern.memory.list(scope=patterns, limit=_PAGE, after=after)
            for record in page:
                if record.scope not in scopes and self._read(record) is not None:
                    scopes.add(record.scope)
            if page.next_cursor is None:
                break
            after = page.next_cursor
        namespaces = [
            namespace
            for namespace in (mapping.namespace_of(scope) for scope in scopes)
            if namespace is not None
            and all(filtering.namespace_matches(c, namespace) for c in conditions)
        ]
        if op.max_depth is not None:
            namespaces = list({namespace[: op.max_depth] for namespace in namespaces})
        namespaces.sort()
        return namespaces[op.offset : op.offset + op.limit]

    def _read(self, record: MemoryRecord) -> tuple[tuple[str, ...], mapping.Stored, str] | None:
        """The namespace, the stored item and the path of the item a record holds; None for a
        record that is no item (another surface's, in a scope under a searched prefix)."""
        stored = mapping.parse(record.content)
        if stored is None:
            return None
        namespace = mapping.namespace_of(record.scope)
        if namespace is None:
            return None
        path = mapping.path_of(record.scope, stored.key)
        if not mapping.holds(record.source_refs, path):
            return None
        return namespace, stored, path

    def _refresh(self, record: MemoryRecord, ttl: float, item: Item) -> None:
        """Push the expiry of an item's record to `ttl` minutes from now (a TTL refreshed by a
        read); the item read takes the record's new `updated_at`."""
        expires_at = self.lantern.now() + _seconds(ttl)
        if record.expires_at == expires_at:
            return
        try:
            revised = self.lantern.memory.update(record.id, expires_at=expires_at)
        except NotFound:
            return  # forgotten since it was read: the read stands, before the forget
        item.updated_at = _time(revised.updated_at)

    # --- writes ------------------------------------------------------------------------------

    def _put(self, write: _Write) -> None:
        assert write.content is not None
        ttl = write.ttl
        self.lantern.memory.put_by_ref(
            mapping.reference(write.path),
            content=write.content,
            scope=write.scope,
            kind=self.kind,
            expires_at=None if ttl is None else self.lantern.now() + _seconds(ttl),
        )

    def _delete(self, write: _Write) -> None:
        forget = self.on_delete == "forget"
        records = self.lantern.memory.by_refs(
            mapping.lookup(write.path),
            status="all" if forget else "active",
            include_expired=True,
        )
        for record in records:
            if record.scope != write.scope:
                continue
            try:
                if forget:
                    self.lantern.memory.forget(record.id)
                else:
                    self.lantern.memory.archive(record.id)
            except NotFound:
                continue  # forgotten by another writer since it was read: deleted already


@dataclass(frozen=True, slots=True)
class _Write:
    """A put or a delete, checked: the item's scope and path, and the content of a put (None
    for a delete)."""

    scope: str
    path: str
    content: str | None
    ttl: float | None


def _write(op: PutOp) -> _Write:
    """A put or delete checked as LangGraph's own stores check it, and its content made."""
    _check(op)
    scope = mapping.scope_of(op.namespace)
    path = mapping.path_of(scope, op.key)
    if op.value is None:
        return _Write(scope, path, None, None)
    mapping.check_path(path, op.key)
    ttl = op.ttl
    if ttl is not None and (isinstance(ttl, bool) or not isinstance(ttl, int | float)):
        raise InvalidInput(f"an item's ttl is a number of minutes; got {ttl!r}")
    return _Write(scope, path, mapping.content_of(op.key, op.value, ttl), ttl)


def _check(op: object) -> None:
    """Refuse an operation LangGraph's own stores refuse, before any runs."""
    if isinstance(op, GetOp | PutOp):
        # An empty namespace holds nothing: a get of one finds nothing, a put is refused.
        mapping.check_namespace(op.namespace, empty=isinstance(op, GetOp))
        if not isinstance(op.key, str):
            raise InvalidInput(f"an item's key is a string; got {type(op.key).__name__}")
    elif isinstance(op, SearchOp):
        mapping.check_namespace(op.namespace_prefix, empty=True)
        filtering.check_filter(op.filter)
        _check_page(op.limit, op.offset)
    elif isinstance(op, ListNamespacesOp):
        for condition in op.match_conditions or ():
            mapping.check_namespace(tuple(condition.path), empty=True)
        _check_page(op.limit, op.offset)
        if op.max_depth is not None and (not _is_int(op.max_depth) or op.max_depth < 0):
            raise InvalidInput(f"max_depth is a whole number, or None; got {op.max_depth!r}")
    else:
        raise InvalidInput(f"not an operation of a LangGraph store: {type(op).__name__}")


def _check_page(limit: object, offset: object) -> None:
    for name, value in (("limit", limit), ("offset", offset)):
        if not _is_int(value) or value < 0:  # type: ignore[operator]
            raise InvalidInput(f"{name} is a whole number; got {value!r}")


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _time(seconds: int) -> datetime:
    return datetime.fromtimestamp(seconds, UTC)


def _seconds(ttl: float) -> int:
    """A TTL in minutes as whole seconds, rounded up."""
    return math.ceil(ttl * 60)


def _embedding_model(index: Mapping[str, Any]) -> str:
    """The embedding provider an `index` configuration names (see `LanternStore`)."""
    if not isinstance(index, Mapping):
        raise InvalidInput(f"index is a dict like {{'embed': 'minilm'}}; got {index!r}")
    unknown = set(index) - _INDEX_KEYS
    if unknown:
        raise InvalidInput(
            f"index has no {', '.join(sorted(map(repr, unknown)))}; it takes embed, dims, fields"
        )
    embed = index.get("embed")
    if not isinstance(embed, str) or not embed.strip():
        raise InvalidInput(
            "LanternStore computes vectors with Lantern's embedding providers: index['embed'] "
            f"names one ('minilm', 'hashing', 'openai-compatible'...); got {embed!r}"
        )
    fields = index.get("fields")
    if fields is not None and list(fields) != ["$"]:
        raise InvalidInput(
            "a record's vector is of its whole content: index['fields'] can only be ['$']; "
            f"got {fields!r}"
        )
    dims = index.get("dims")
    if dims is not None and (isinstance(dims, bool) or not isinstance(dims, int) or dims < 1):
        raise InvalidInput(f"index['dims'] is a positive integer; got {dims!r}")
    return embed.strip()


def _checked_ttl(ttl: object) -> TTLConfig | None:
    """LangGraph's TTL configuration, as far as Lantern keeps it (see `LanternStore`)."""
    if ttl is None:
        return None
    if not isinstance(ttl, Mapping):
        raise InvalidInput(f"ttl is a dict like {{'default_ttl': 60}}; got {ttl!r}")
    unknown = set(ttl) - _TTL_KEYS
    if unknown:
        raise InvalidInput(f"ttl has no {', '.join(sorted(map(repr, unknown)))}")
    default = ttl.get("default_ttl")
    if default is not None and (isinstance(default, bool) or not isinstance(default, int | float)):
        raise InvalidInput(f"ttl['default_ttl'] is a number of minutes; got {default!r}")
    if ttl.get("sweep_interval_minutes") is not None:
        raise InvalidInput(
            "Lantern runs no sweep in the background: expired items are never returned, and "
            "`lantern memory expire` archives them when you run it (leave out "
            "sweep_interval_minutes)"
        )
    if ttl.get("omit_expired", True) is not True:
        raise InvalidInput("expired items are never returned: omit_expired cannot be False")
    refresh = ttl.get("refresh_on_read", True)
    if not isinstance(refresh, bool):
        raise InvalidInput(f"ttl['refresh_on_read'] is True or False; got {refresh!r}")
    return TTLConfig(**ttl)  # type: ignore[typeddict-item]
