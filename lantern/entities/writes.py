"""The entity repository's writes: entities attached to and detached from chunks, and the
links of stored chunks filled by the extractor.

A record's entities are attached by the memory repository (`lantern.memory.entities`), in the
record's transaction and history. `extract` commits every `EXTRACT_BATCH` chunks, so an
interrupted run keeps what it did and the next one goes on from there.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence

from sqlalchemy import Connection, func, select

from lantern.entities import links
from lantern.entities import names as entity_names
from lantern.entities.core import EntityCore
from lantern.entities.extraction import EXTRACTOR_VERSION, extract
from lantern.entities.reads import unscanned
from lantern.entities.records import ExtractReport, LinkChange
from lantern.errors import InvalidInput, NotFound
from lantern.store.dialect import serialize_writers
from lantern.store.models import chunk_entities, chunk_search_text, chunks, sources

Progress = Callable[[int, int], None]
Changes = list[LinkChange]

EXTRACT_BATCH = 500
"""Chunks read and linked per transaction by `extract`."""


class EntityWrites(EntityCore):
    """Attaches entities to chunks and detaches them, and extracts those of stored chunks."""

    def attach_entities(self, chunk_id: str, entities: str | Sequence[str]) -> Changes:
        """Attach entities (`KIND:NAME`, or a stored entity's id) to a chunk; one `LinkChange`
        per entity, `changed` False where the chunk already had it.

        Args:
            chunk_id: The chunk (`chk_...`).
            entities: One entity or a list of them (at most 1,000), each `KIND:NAME` or a stored
                entity's id; a `KIND:NAME` not stored yet is created.

        Raises:
            InvalidInput: No entity, or a malformed one.
            NotFound: No such chunk, or an entity id that names nothing.
        """
        keys = _named(entities)
        with self._store.write() as conn:
            serialize_writers(conn)
            _require_chunk(conn, chunk_id)
            wanted = links.resolve(conn, keys)
            ids = links.ensure(conn, wanted)
            had = set(
                conn.execute(
                    select(chunk_entities.c.entity_id).where(chunk_entities.c.chunk_id == chunk_id)
                ).scalars()
            )
            links.attach_to_chunks(conn, [(chunk_id, ids[name]) for name in wanted])
            stored = links.lookup(conn, list(ids.values()))
            return [
                LinkChange(stored[ids[name]], "chunk", chunk_id, ids[name] not in had)
                for name in wanted
            ]

    def detach_entities(self, chunk_id: str, entities: str | Sequence[str]) -> Changes:
        """Detach entities from a chunk (`changed` False where it did not have one); an entity
        that nothing links any more is removed with its last link.

        Args:
            chunk_id: The chunk (`chk_...`).
            entities: One entity or a list of them, each `KIND:NAME` or a stored entity's id.

        Raises:
            InvalidInput: No entity, or a malformed one.
            NotFound: No such chunk, or an entity that is not stored.
        """
        keys = _named(entities)
        with self._store.write() as conn:
            serialize_writers(conn)
            _require_chunk(conn, chunk_id)
            found = links.lookup(conn, keys)
            changes: Changes = []
            for key in keys:
                ref = found.get(key)
                if ref is None:
                    raise links.missing(key)
                changes.append(
                    LinkChange(
                        ref, "chunk", chunk_id, links.detach_from_chunk(conn, chunk_id, ref.id)
                    )
                )
            return changes

    def attach(self, chunk_id: str, entity: str | Sequence[str]) -> Changes:
        """`attach_entities` under its earlier name, which stays for the callers of Lantern
        0.1.0.

        Args:
            chunk_id: The chunk (`chk_...`).
            entity: One entity or a list of them, as `attach_entities` takes them.
        """
        return self.attach_entities(chunk_id, entity)

    def detach(self, chunk_id: str, entity: str | Sequence[str]) -> Changes:
        """`detach_entities` under its earlier name, which stays for the callers of Lantern
        0.1.0.

        Args:
            chunk_id: The chunk (`chk_...`).
            entity: One entity or a list of them, as `detach_entities` takes them.
        """
        return self.detach_entities(chunk_id, entity)

    def extract(self, *, progress: Progress | None = None) -> ExtractReport:
        """Read the stored chunks this version of the extractor has not read, link them to
        the entities they mention, and remember that they were read.

        It commits every `EXTRACT_BATCH` chunks, so an interrupted run keeps what it did and
        the next run goes on from there. Links are only added: those a chunk has (the
        caller's, an older version's, a legacy store's) stay.

        Args:
            progress: Called after each batch with the chunks read so far and the chunks to read;
                None reports nothing.
        """
        started = time.perf_counter()
        with self._store.read() as conn:
            total = int(conn.execute(select(func.count()).select_from(chunks)).scalar_one())
            todo = int(
                conn.execute(
                    select(func.count()).select_from(chunks).where(unscanned())
                ).scalar_one()
            )
        scanned = links_added = entities_added = 0
        after = ""
        searchable = func.coalesce(chunk_search_text.c.text, chunks.c.text)
        while True:
            with self._store.write() as conn:
                serialize_writers(conn)
                rows = conn.execute(
                    select(chunks.c.id, sources.c.kind, searchable)
                    .select_from(
                        chunks.join(sources, sources.c.id == chunks.c.source_id).outerjoin(
                            chunk_search_text, chunk_search_text.c.chunk_id == chunks.c.id
                        )
                    )
                    .where(chunks.c.id > after, unscanned())
                    .order_by(chunks.c.id)
                    .limit(EXTRACT_BATCH)
                ).all()
                if not rows:
                    break
                found = [(row[0], entity) for row in rows for entity in extract(row[2], row[1])]
                added, created = links.attach_found(
                    conn, found, [row[0] for row in rows], EXTRACTOR_VERSION
                )
            scanned += len(rows)
            links_added += added
            entities_added += created
            after = rows[-1][0]
            if progress is not None:
                progress(scanned, todo)
        return ExtractReport(
            scanned=scanned,
            skipped=total - scanned,
            links_added=links_added,
            entities_added=entities_added,
            extractor=EXTRACTOR_VERSION,
            seconds=time.perf_counter() - started,
        )


def _require_chunk(conn: Connection, chunk_id: str) -> None:
    if not isinstance(chunk_id, str) or not chunk_id.strip():
        raise NotFound("a chunk id is required")
    if conn.execute(select(chunks.c.id).where(chunks.c.id == chunk_id)).first() is None:
        raise NotFound(f"no chunk with id {chunk_id!r}")


def _named(entity: str | Sequence[str]) -> list[entity_names.EntityKey]:
    keys = entity_names.keys(entity)
    if not keys:
        raise InvalidInput("name at least one entity (KIND:NAME)")
    return keys
