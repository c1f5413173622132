"""The `filter` of a LangGraph search and the match conditions of a namespace listing, as
LangGraph's own `InMemoryStore` reads them.

A filter maps fields of an item's value to what they must be: a value (equal, a dict or list
compared field by field and item by item, as JSONB containment compares them), or a dict of
operators, `$eq`, `$ne`, `$gt`, `$gte`, `$lt`, `$lte`, all of which must hold. The four
comparisons compare numbers (`float()` of both sides, as `InMemoryStore` does); where a side is
no number (a field missing, a text that is not one), the item does not match, where
`InMemoryStore` would fail the whole search. An unknown operator is refused before anything is
read.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Mapping
from typing import Any

from langgraph.store.base import MatchCondition

from lantern.errors import InvalidInput

_COMPARISONS: dict[str, Callable[[float, float], bool]] = {
    "$gt": operator.gt,
    "$gte": operator.ge,
    "$lt": operator.lt,
    "$lte": operator.le,
}
OPERATORS = ("$eq", "$ne", *_COMPARISONS)


def check_filter(given: object) -> dict[str, Any] | None:
    """The filter of a search, its operators checked; None for none."""
    if given is None:
        return None
    if not isinstance(given, Mapping):
        raise InvalidInput(f"a search's filter is a dict of fields; got {type(given).__name__}")
    for wanted in given.values():
        _check_operators(wanted)
    return dict(given)


def _check_operators(wanted: object) -> None:
    if isinstance(wanted, Mapping):
        if any(isinstance(name, str) and name.startswith("$") for name in wanted):
            unknown = [name for name in wanted if name not in OPERATORS]
            if unknown:
                raise InvalidInput(
                    f"unknown filter operator {unknown[0]!r}; the operators are "
                    f"{', '.join(OPERATORS)}"
                )
            return
        for item in wanted.values():
            _check_operators(item)
    elif isinstance(wanted, list | tuple):
        for item in wanted:
            _check_operators(item)


def matches(value: Mapping[str, Any], wanted: Mapping[str, Any]) -> bool:
    """Whether an item's value passes a (checked) filter."""
    return all(_compare(value.get(name), expected) for name, expected in wanted.items())


def _compare(found: Any, expected: Any) -> bool:
    if isinstance(expected, Mapping):
        if any(isinstance(name, str) and name.startswith("$") for name in expected):
            return all(_apply(found, name, operand) for name, operand in expected.items())
        if not isinstance(found, Mapping):
            return False
        return all(_compare(found.get(name), item) for name, item in expected.items())
    if isinstance(expected, list | tuple):
        return (
            isinstance(found, list | tuple)
            and len(found) == len(expected)
            and all(_compare(a, b) for a, b in zip(found, expected, strict=True))
        )
    return bool(found == expected)


def _apply(found: Any, name: str, operand: Any) -> bool:
    if name == "$eq":
        return bool(found == operand)
    if name == "$ne":
        return bool(found != operand)
    try:
        return _COMPARISONS[name](float(found), float(operand))
    except (TypeError, ValueError, OverflowError):
        return False


def namespace_matches(condition: MatchCondition, namespace: tuple[str, ...]) -> bool:
    """Whether a namespace meets a listing's condition: its first (prefix) or last (suffix)
    labels are the condition's, `*` standing for any one label."""
    path = tuple(condition.path)
    if len(namespace) < len(path):
        return False
    if condition.match_type == "prefix":
        pairs = zip(namespace, path, strict=False)
    elif condition.match_type == "suffix":
        pairs = zip(reversed(namespace), reversed(path), strict=False)
    else:
        raise InvalidInput(
            f"a namespace condition matches a prefix or a suffix; got {condition.match_type!r}"
        )
    return all(wanted in ("*", label) for label, wanted in pairs)
