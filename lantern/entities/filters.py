""" "Linked to any of these entities", as a condition on chunks or on memory records.

Evidence search and memory listings add these to their own statements; the entity ids are
bound by name, so a statement compiled for one set of entities serves any other of the same
size (see `lantern.store.prepared`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import BindParameter, ColumnElement, exists

from lantern.store.models import chunk_entities, chunks, memory_entities, memory_records


def _any_of(column: Any, binds: Sequence[BindParameter[Any]]) -> ColumnElement[bool]:
    result: ColumnElement[bool] = column == binds[0] if len(binds) == 1 else column.in_(binds)
    return result


def chunk_clause(binds: Sequence[BindParameter[Any]]) -> ColumnElement[bool]:
    """The chunk (`chunks.id`) is linked to one of the entity ids bound in `binds`."""
    return exists().where(
        chunk_entities.c.chunk_id == chunks.c.id, _any_of(chunk_entities.c.entity_id, binds)
    )


def record_clause(binds: Sequence[BindParameter[Any]]) -> ColumnElement[bool]:
    """The record (`memory_records.id`) is linked to one of the entity ids bound in `binds`."""
    return exists().where(
        memory_entities.c.record_id == memory_records.c.id,
        _any_of(memory_entities.c.entity_id, binds),
    )
