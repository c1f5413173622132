"""Which memory records a listing or search returns, and in what order.

`memory list` and `memory search` share these filters, so a filter means the same in both, on
every surface; what each filter is called and takes is said once, in `lantern.memory.filterspec`,
and `MemoryFilter.build` reads a call's arguments with that table. Every filter is a condition
on visible fields; none of them needs anything but the record row, except `cites`, which looks
at `memory_refs` (and `entity`, at the entity links). Where a page ends is
`lantern.memory.cursor`'s business.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from sqlalchemy import BigInteger, BindParameter, ColumnElement, and_, bindparam, or_, true

from lantern.entities.filters import record_clause
from lantern.memory.filterspec import FILTERS, Filter
from lantern.memory.refs import cites_clause
from lantern.store.models import memory_records as table


def list_order(columns: Any = table.c) -> tuple[Any, ...]:
    """The documented list order on `columns` (the table's, or a subquery's with the same
    names): active first (status words sort alphabetically with `active` first, so ordering by
    the column keeps the index walk that a CASE expression would prevent), then higher
    priority, higher urgency, newer update, and the id to break ties."""
    return (
        columns.status,
        columns.priority.desc(),
        columns.urgency.desc(),
        columns.updated_at.desc(),
        columns.id,
    )


LIST_ORDER = list_order()
EARLIEST = -62_135_596_800
"""The earliest time Lantern stores (the year 1, as `lantern.validation` bounds times)."""


@dataclass(frozen=True, slots=True)
class MemoryFilter:
    """Validated filters; build one with `MemoryFilter.build(...)`."""

    scopes: tuple[tuple[str, bool], ...] = ()
    """`(text, is_prefix)` pairs: a record matches any of them."""
    kinds: tuple[str, ...] = ()
    status: str = "active"
    min_priority: int | None = None
    min_urgency: int | None = None
    min_confidence: float | None = None
    updated_since: int | None = None
    """Inclusive: `updated_at >= updated_since`."""
    updated_before: int | None = None
    """Exclusive: `updated_at < updated_before`."""
    said_since: int | None = None
    """Inclusive: `created_at >= said_since`. A record was said when it was created (a revision
    is a new record, created when it was said); the evidence's said filters read the same way
    (`lantern.evidence.search.SearchFilters`)."""
    said_until: int | None = None
    """Exclusive: `created_at < said_until`."""
    expires_before: int | None = None
    """Exclusive: records with an `expires_at`, earlier than this (what expires soon)."""
    cites: tuple[tuple[str, str], ...] = ()
    """`(type, id)` pairs: a record matches when it cites any of them."""
    include_expired: bool = False
    through_chunks: bool = False
    """A cited `source:ID` also matches records citing that source's chunks."""
    entities: tuple[str, ...] = ()
    """Entity ids: a record matches when it is linked to any of them."""

    @classmethod
    def build(cls, arguments: Mapping[str, Any] | None = None, /, **given: Any) -> MemoryFilter:
        """The filters a call gives, checked: `arguments` (a method's own parameters, its
        `locals()`, of which the names in `FILTERS` are read) and `given`; a filter given
        neither way takes its default in the table. A value of the wrong type or form raises
        `InvalidInput` naming the parameter."""
        values = {**arguments, **given} if arguments is not None else given
        fields: dict[str, Any] = {}
        for field, name, default, read, unfiltered in _READERS:
            value = values.get(name, default)
            # A filter left at its default (None, False, the default status) reads as it
            # always does: a listing is a hot path, and most filters are left out.
            fields[field] = unfiltered if value is default else read(name, value)
        return cls(**fields)

    def conditions(self, dialect: str, at: int) -> Conditions:
        """The WHERE conditions, evaluated at time `at` (for expiry), as named parameters."""
        parts: list[Part] = []
        if self.scopes:
            parts.extend(scope_parts(dialect, self.scopes, "scope"))
        if self.kinds:
            parts.append(_any_of(table.c.kind, "kind", self.kinds))
        if self.status != "all":
            parts.append(({"status": self.status}, lambda v: table.c.status == bound(v, "status")))
        for spec in _COMPARED:
            value = getattr(self, spec.field)
            if value is not None:
                parts.append(({spec.name: value}, _comparison(spec)))
        if self.expires_before is not None:
            # Both ends of the range, so that the planner walks the expiry index (one bound is
            # read as a quarter of the rows, too many to beat the list order's index).
            earliest = EARLIEST if self.include_expired else at + 1
            values = {"expires_from": earliest, "expires_before": self.expires_before}
            parts.append((values, _expires_before))
        if self.cites:
            parts.append(_cites_part(self.cites, self.through_chunks))
        if self.entities:
            linked = {f"entity_{i}": entity for i, entity in enumerate(self.entities)}
            parts.append((linked, lambda v: record_clause([bound(v, key) for key in v])))
        if not self.include_expired:
            parts.append(({"at": at}, _unexpired))
        return Conditions.of(parts, extra=(dialect, self._source_cites()))

    def _source_cites(self) -> tuple[bool, ...]:
        # Which cited references are sources changes the SQL when they reach through chunks.
        if not self.through_chunks:
            return ()
        return tuple(ref_type == "source" for ref_type, _ in self.cites)


Values = dict[str, Any]
Part = tuple[Values, Callable[[Values], ColumnElement[bool]]]
"""The values one condition binds, and how to build it from them."""


@dataclass(frozen=True, slots=True)
class Conditions:
    """WHERE conditions as named parameters and a way to build them.

    `key` names the shape of the SQL (which conditions, how many values each), so that a
    statement compiled for one set of values serves any other set of the same shape: only
    `values` change from call to call, and building the clauses is needed once per shape.
    """

    key: tuple[object, ...]
    values: Values
    parts: tuple[Part, ...]

    @classmethod
    def of(cls, parts: Iterable[Part], *, extra: tuple[object, ...] = ()) -> Conditions:
        parts = tuple(parts)
        values: Values = {}
        for bound, _build in parts:
            values.update(bound)
        return cls((*extra, *values), values, parts)

    def clauses(self) -> list[ColumnElement[bool]]:
        return [build(bound) for bound, build in self.parts]


_READERS = tuple(
    (spec.field, spec.name, spec.default, spec.value.read, spec.read(spec.default))
    for spec in FILTERS
)
"""For each filter: its field, name and default, how it is read, and its default's reading."""

_COMPARED = tuple(spec for spec in FILTERS if spec.compare is not None)
"""The filters that are a plain comparison of a column with their value (`Filter.compare`)."""


def _comparison(spec: Filter) -> Callable[[Values], ColumnElement[bool]]:
    assert spec.compare is not None
    column_name, operator = spec.compare
    column = table.c[column_name]
    name = spec.name
    if operator == ">=":
        return lambda values: column >= bound(values, name)
    return lambda values: column < bound(values, name)


def _expires_before(values: Values) -> ColumnElement[bool]:
    # A comparison with NULL is never true, so records that never expire are left out.
    return and_(
        table.c.expires_at >= bound(values, "expires_from"),
        table.c.expires_at < bound(values, "expires_before"),
    )


def _unexpired(values: Values) -> ColumnElement[bool]:
    return or_(table.c.expires_at.is_(None), table.c.expires_at > bound(values, "at"))


def bound(values: Values, name: str) -> BindParameter[Any]:
    """A named parameter. Whole numbers are bound as 64-bit: a statement is compiled once per
    shape, and a time past 2038 must fit where an earlier call's small number did."""
    value = values[name]
    if isinstance(value, int) and not isinstance(value, bool):
        return bindparam(name, value, type_=BigInteger())
    return bindparam(name, value)


def _any_of(column: Any, name: str, choices: Iterable[str]) -> Part:
    values = {f"{name}_{i}": choice for i, choice in enumerate(choices)}

    def build(v: Values) -> ColumnElement[bool]:
        # A single value as `=`, which every planner reads as an index equality.
        binds = [bound(v, key) for key in v]
        result: ColumnElement[bool] = column == binds[0] if len(binds) == 1 else column.in_(binds)
        return result

    return values, build


def _cites_part(cites: tuple[tuple[str, str], ...], through_chunks: bool) -> Part:
    values: Values = {}
    for i, (ref_type, ref_id) in enumerate(cites):
        values[f"cite_type_{i}"] = ref_type
        values[f"cite_id_{i}"] = ref_id

    def build(v: Values) -> ColumnElement[bool]:
        keys = [(bound(v, f"cite_type_{i}"), bound(v, f"cite_id_{i}")) for i in range(len(cites))]
        sources = [
            key[1]
            for key, (ref_type, _) in zip(keys, cites, strict=True)
            if through_chunks and ref_type == "source"
        ]
        return cites_clause(keys, source_ids=sources)

    return values, build


def scope_parts(dialect: str, patterns: Iterable[tuple[str, bool]], name: str) -> list[Part]:
    """Exact scopes and scope prefixes, any of them, as a condition with named parameters.

    No pattern language reaches the database: an exact scope is compared with `=`; a prefix
    becomes a range on SQLite (`scope >= prefix AND scope < next`, in the BINARY order of
    UTF-8, which the index serves; LIKE would ignore ASCII case there) and an escaped LIKE on
    PostgreSQL (whose collation may not order strings bytewise). So `%`, `_`, `/` and `*` in a
    scope are ordinary characters. An empty prefix (`*`) admits every scope: no condition.
    """
    patterns = list(patterns)
    if any(prefix and not text for text, prefix in patterns):
        return []
    values: Values = {}
    for i, (text, prefix) in enumerate(patterns):
        if not prefix:
            values[f"{name}_{i}"] = text
        elif dialect == "postgresql":
            escaped = text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
            values[f"{name}_like_{i}"] = escaped + "%"
        else:
            values[f"{name}_from_{i}"] = text
            upper = next_string(text)
            if upper is not None:
                values[f"{name}_to_{i}"] = upper

    def build(v: Values) -> ColumnElement[bool]:
        column = table.c.scope
        exact = [bound(v, f"{name}_{i}") for i in range(len(patterns)) if f"{name}_{i}" in v]
        conditions: list[ColumnElement[bool]] = []
        if exact:
            conditions.append(column == exact[0] if len(exact) == 1 else column.in_(exact))
        for i in range(len(patterns)):
            if f"{name}_like_{i}" in v:
                conditions.append(column.like(bound(v, f"{name}_like_{i}"), escape="\\"))
            elif f"{name}_from_{i}" in v:
                lower = column >= bound(v, f"{name}_from_{i}")
                upper_name = f"{name}_to_{i}"
                conditions.append(
                    and_(lower, column < bound(v, upper_name)) if upper_name in v else lower
                )
        return conditions[0] if len(conditions) == 1 else or_(*conditions)

    return [(values, build)]


def scope_clause(
    dialect: str, patterns: Iterable[tuple[str, bool]], name: str = "scope"
) -> ColumnElement[bool]:
    """`scope_parts` as one condition with its values bound (true when any scope is admitted)."""
    parts = scope_parts(dialect, patterns, name)
    return parts[0][1](parts[0][0]) if parts else true()


def next_string(prefix: str) -> str | None:
    """The least string greater than every string that starts with `prefix`, in code point
    order (which is UTF-8's byte order); None when there is none (`prefix` is all U+10FFFF).

    Surrogates cannot be stored, so the character after U+D7FF is U+E000.
    """
    chars = list(prefix)
    while chars:
        last = ord(chars.pop())
        if last < 0x10FFFF:
            following = 0xE000 if last == 0xD7FF else last + 1
            return "".join(chars) + chr(following)
    return None
