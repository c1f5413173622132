"""Cursors: where a page of a listing or a search ends and the next one starts.

A listing's cursor (`c1_`) holds the list-order keys of the last record returned, and the next
page starts strictly after them. Records inserted or removed meanwhile shift an offset, never a
cursor; a page neither repeats nor skips a record that stayed put.

A search's cursor (`c2_`) also holds what makes the search: a fingerprint of its query, mode,
order and filters (a cursor continues only the search that made it), the order, the last hit's
relevance score (in relevance order, which ranks by score and then by the list order) and its
place in the keyword ranking, so that `keyword_rank` keeps counting on the next page. Scores
are relevance as computed when the next page is asked for: records added, changed or removed
in between change the statistics every score rests on (BM25 weighs a word by how many records
hold it), so in relevance order a record may then move across the boundary and be skipped or
repeated, and the ranks count from where the last page ended. A search in policy order pages
like a listing.

Both are a prefix and the base64url of JSON: opaque to use, readable when debugging. Every
field is checked when a cursor comes back (types, known statuses, integers a 64-bit column can
hold, finite scores), so a cursor Lantern did not make is refused with one line.
"""

from __future__ import annotations

import base64
import binascii
import dataclasses
import hashlib
import json
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from sqlalchemy import ColumnElement, and_, or_, tuple_

from lantern.errors import InvalidInput
from lantern.memory.filters import MemoryFilter, Part, Values, bound
from lantern.memory.records import MemoryMatch, MemoryRecord, Page
from lantern.store.models import memory_records as table
from lantern.validation import STATUSES

LIST_PREFIX = "c1_"
SEARCH_PREFIX = "c2_"
_INT64 = (-(2**63), 2**63 - 1)
_MAX_ID_CHARS = 1_024


@dataclass(frozen=True, slots=True)
class CursorKey:
    """The list-order keys of the last record of a page."""

    status: str
    priority: int
    urgency: int
    updated_at: int
    id: str


@dataclass(frozen=True, slots=True)
class SearchCursor:
    """Where a search's page ended: the list keys of its last hit, its score and rank."""

    key: CursorKey
    score: float | None
    """The last hit's score, in relevance order (None in policy order)."""
    rank: int | None
    """The last hit's place in the keyword ranking, in relevance order (None in policy order,
    where each hit's rank is computed among all the matches)."""


ListKey = tuple[str, int, int, int, str]


def list_key(record: MemoryRecord) -> ListKey:
    """A record's place in the list order, as a tuple that sorts the same way."""
    return (record.status, -record.priority, -record.urgency, -record.updated_at, record.id)


def relevance_start(
    position: SearchCursor | None, offset: int
) -> tuple[int, tuple[Any, ...] | None]:
    """Where a relevance page that is ranked outside the database starts: after `offset`
    hits, or after the cursor's hit, as a boundary `(-score, *list_key)` in that order."""
    if position is None or position.score is None:
        return offset, None
    key = position.key
    boundary = (-position.score, key.status, -key.priority, -key.urgency, -key.updated_at, key.id)
    return position.rank or 0, boundary


def cursor_for(record: MemoryRecord) -> str:
    """The cursor that continues a listing after `record`."""
    return LIST_PREFIX + _encode(_keys(record))


def search_cursor_for(
    fingerprint: str, order: str, record: MemoryRecord, score: float | None, rank: int | None
) -> str:
    """The cursor that continues the search `fingerprint` names after this hit."""
    body = {"q": fingerprint, "o": order, "k": _keys(record), "s": score, "r": rank}
    return SEARCH_PREFIX + _encode(body)


def search_fingerprint(query: str, mode: str, order: str, filters: MemoryFilter) -> str:
    """16 hex digits naming a search: its query, mode, order and filters."""
    described = json.dumps(
        [query, mode, order, dataclasses.astuple(filters)], ensure_ascii=True, default=str
    )
    return hashlib.sha256(described.encode("ascii")).hexdigest()[:16]


def parse_cursor(value: object) -> CursorKey:
    """A listing's cursor, checked field by field."""
    body = _decoded(value, LIST_PREFIX, "a search's cursor continues that search, not a listing")
    return _key(value, body)


def parse_search_cursor(value: object, fingerprint: str, order: str) -> SearchCursor:
    """A search's cursor, checked field by field and against the search it is given to."""
    body = _decoded(value, SEARCH_PREFIX, "a listing's cursor continues that listing, not a search")
    if not (
        isinstance(body, dict)
        and set(body) == {"q", "o", "k", "s", "r"}
        and isinstance(body["q"], str)
        and body["o"] in ("relevance", "policy")
    ):
        raise _refused(value)
    if body["q"] != fingerprint or body["o"] != order:
        raise InvalidInput(
            "this cursor continues another search (its query, mode, order or filters differ); "
            "give the same ones as the page it came from"
        )
    score, rank = body["s"], body["r"]
    if order == "relevance":
        score = _finite(score)
        if score is None or not _is_int(rank, 1, _INT64[1]):
            raise _refused(value)
    elif score is not None or rank is not None:
        raise _refused(value)
    return SearchCursor(_key(value, body["k"]), score, rank)


def after_branches(key: CursorKey, *, all_statuses: bool) -> Part:
    """Conditions whose union is "after `key` in the list order", each one index-seekable.

    The order mixes directions (status and id ascending, the rest descending), so no single
    row-value comparison expresses it, and the equivalent OR of ANDs makes SQLite scan from the
    start of the scope (measured: 53 ms at 300k records against 0.07 ms). Each branch is an
    equality prefix plus one range the composite index can seek to; the caller runs them as a
    UNION ALL of small ordered queries (or ORs them, inside a search). The values are named
    `after_*`; the part builds the OR of the branches, `branches` builds them one by one.
    """
    values: Values = {
        "after_status": key.status,
        "after_priority": key.priority,
        "after_urgency": key.urgency,
        "after_updated_at": key.updated_at,
        "after_id": key.id,
    }
    return values, lambda v: or_(*branches(v, all_statuses=all_statuses))


def branches(
    values: Values, *, all_statuses: bool, columns: Any = table.c
) -> list[ColumnElement[bool]]:
    """The branches of `after_branches`, one condition each, on `columns` (the table's, or a
    subquery's with the same names)."""
    same = columns.status == bound(values, "after_status")
    found: list[ColumnElement[bool]] = [
        and_(
            same,
            columns.priority == bound(values, "after_priority"),
            columns.urgency == bound(values, "after_urgency"),
            columns.updated_at == bound(values, "after_updated_at"),
            columns.id > bound(values, "after_id"),
        ),
        and_(
            same,
            tuple_(columns.priority, columns.urgency, columns.updated_at)
            < tuple_(
                bound(values, "after_priority"),
                bound(values, "after_urgency"),
                bound(values, "after_updated_at"),
            ),
        ),
    ]
    if all_statuses:
        found.append(columns.status > bound(values, "after_status"))
    return found


def after_score(
    score: ColumnElement[float], *, all_statuses: bool
) -> Callable[[Values], ColumnElement[bool]]:
    """ "After the cursor" in relevance order: a lower score, or the same score and after the
    cursor's keys in the list order. The score is bound as `after_score`."""

    def build(values: Values) -> ColumnElement[bool]:
        same = score == bound(values, "after_score")
        later = or_(*branches(values, all_statuses=all_statuses))
        return or_(score < bound(values, "after_score"), and_(same, later))

    return build


def _keys(record: MemoryRecord) -> list[Any]:
    return [record.status, record.priority, record.urgency, record.updated_at, record.id]


def _encode(value: Any) -> str:
    encoded = base64.urlsafe_b64encode(json.dumps(value, separators=(",", ":")).encode())
    return encoded.decode("ascii").rstrip("=")


def _decoded(value: object, prefix: str, other_kind: str) -> Any:
    """The JSON a cursor carries, or InvalidInput: not a cursor, or one of the other kind."""
    if not isinstance(value, str):
        raise _refused(value)
    other = SEARCH_PREFIX if prefix == LIST_PREFIX else LIST_PREFIX
    if value.startswith(other):
        raise InvalidInput(f"{other_kind}: {_shown(value)}")
    if not value.startswith(prefix):
        raise _refused(value)
    body = value[len(prefix) :]
    try:
        raw = base64.urlsafe_b64decode(body + "=" * (-len(body) % 4))
        return json.loads(raw.decode("utf-8"))
    except (binascii.Error, ValueError, RecursionError) as exc:
        raise _refused(value) from exc


def _key(value: object, keys: Any) -> CursorKey:
    if not (
        isinstance(keys, list)
        and len(keys) == 5
        and keys[0] in STATUSES
        and _is_int(keys[1], 0, 100)
        and _is_int(keys[2], 0, 100)
        and _is_int(keys[3], *_INT64)
        and isinstance(keys[4], str)
        and 0 < len(keys[4]) <= _MAX_ID_CHARS
        and keys[4].isprintable()
    ):
        raise _refused(value)
    return CursorKey(*keys)


def _is_int(value: object, low: int, high: int) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and low <= value <= high


def _finite(value: object) -> float | None:
    """A JSON number as a finite float, or None (an integer too large for a float included)."""
    if isinstance(value, int) and _is_int(value, *_INT64):
        return float(value)
    if isinstance(value, float) and math.isfinite(value):
        return value
    return None


def _refused(value: object) -> InvalidInput:
    return InvalidInput(f"not a cursor from a previous page: {_shown(value)}")


def _shown(value: object) -> str:
    shown = repr(value)
    return shown if len(shown) <= 80 else shown[:79] + "…"


def policy_page(
    matches: list[MemoryMatch],
    limit: int,
    offset: int,
    position: SearchCursor | None,
    fingerprint: str,
) -> Page:
    """A page of matches in the list order, after `offset` or after the cursor's record."""
    ordered = sorted(matches, key=lambda match: list_key(match.record))
    if position is not None:
        key = position.key
        after = (key.status, -key.priority, -key.urgency, -key.updated_at, key.id)
        ordered = [match for match in ordered if list_key(match.record) > after]
    else:
        ordered = ordered[offset:]
    page = ordered[: limit + 1]
    more = len(page) > limit
    page = page[:limit]
    if not (more and page):
        return Page(page)
    return Page(page, search_cursor_for(fingerprint, "policy", page[-1].record, None, None))
