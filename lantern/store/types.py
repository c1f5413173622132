"""Column types whose storage differs by engine, kept in this one place.

JSON lives in `TEXT` on SQLite (the legacy format, where old rows may hold `NULL` or `''`) and in
`JSONB` on PostgreSQL. Reading is lenient on purpose: `NULL` and `''` read as the empty value, so
code above never sees the legacy format's gaps.
"""

from __future__ import annotations

import json
from typing import Any

from sqlalchemy import BigInteger, Dialect, Integer, Text
from sqlalchemy.types import TypeDecorator, TypeEngine

# Unix seconds: SQLite's INTEGER is 64-bit already; PostgreSQL needs BIGINT past 2038.
UnixTime = Integer().with_variant(BigInteger(), "postgresql")


class JSONText(TypeDecorator[Any]):
    """A JSON object or array: TEXT on SQLite, JSONB on PostgreSQL."""

    impl = Text
    cache_ok = True

    def __init__(self, empty: str = "{}") -> None:
        super().__init__()
        self.empty = empty

    def load_dialect_impl(self, dialect: Dialect) -> TypeEngine[Any]:
        if dialect.name == "postgresql":
            # Imported here: the PostgreSQL dialect package costs every SQLite command ~20 ms.
            from sqlalchemy.dialects.postgresql import JSONB

            return dialect.type_descriptor(JSONB())
        return dialect.type_descriptor(Text())

    def process_bind_param(self, value: Any, dialect: Dialect) -> Any:
        if value is None:
            return None
        if dialect.name == "postgresql":
            return value
        if not value and isinstance(value, list | dict):
            return "[]" if isinstance(value, list) else "{}"  # most references are none
        return dumps(value)

    def process_result_value(self, value: Any, dialect: Dialect) -> Any:
        if value is None or value in ("", self.empty):
            # Most stored values are empty; a fresh one each time, as json.loads would give.
            return [] if self.empty == "[]" else {}
        if isinstance(value, str):
            return json.loads(value)
        return value


def dumps(value: Any) -> str:
    """Compact JSON with text kept readable, as stored on SQLite."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))
