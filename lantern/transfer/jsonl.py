"""Export and import: a whole store, or part of it, as JSON Lines (docs/json.md, "Export format").

The format is a contract, written so that exporting, importing into an empty store and exporting
again gives the same bytes, on either engine:

* UTF-8, one JSON object per line, each line ending in `\\n` (text keeps U+2028 and U+2029 as
  they are, so read lines by `\\n` only); compact separators, non-ASCII text unescaped.
* The first line is `{"type":"lantern_export","format":1}`.
* Then, when evidence is exported: every `source` (by id), `chunk` (by source id, then ordinal),
  `entity` (by id), `chunk_entity` (by chunk id, then entity id), `embedding` (by chunk id; the
  float32 vector as base64) and `entity_scan` (in the order of the chunks: which version of the
  entity extractor read the chunk). Then, when memories are exported: every `memory` (by id; the
  fields of `lantern memory show --json`), every `history` entry (by record id, then the order the
  entries were made; history entries carry no store-local id), and every `memory_entity` link (by
  record id, then entity id), preceded, when evidence is not exported, by the `entity` lines of the
  entities they link, and every `memory_embedding` (by record id, then model: a record's vector
  with its model, dimension and the hash of the text it was computed from). Object keys inside
  `metadata` and `changes` are in canonical order (PostgreSQL JSONB's), so exports of the same
  data from SQLite and PostgreSQL agree.

Import is one transaction (all or nothing) and idempotent by id: a source, chunk, entity,
embedding or memory record the store already has is left as it is (with, for a source, its
chunks, and for a record, its history, links and vectors), never merged. A record the import
adds takes the file's vectors that were computed from its content (the text hash says so), so
that the copy searches as the original; an export without them still imports, and the report
counts the records added without a vector. A record id the store knows only from a
`forgotten` history entry counts as known. Search rows (and the searchable text of transcript
chunks), reference rows and identities are derived, never exported; import derives them again.
Lines are imported in file order, so a chunk must follow its source, as exports write.

A record that says what another record says (same scope, kind and content, under another id)
is imported all the same, so that nothing in the file is lost: a store may hold such pairs from
before schema revision 0006. The one that holds the identity is the store's own record if it
had one, else the first of the file's by `lantern.memory.identity.claim_order`, as in a store
that revision upgraded; `lantern db check` lists the others.
"""

from __future__ import annotations

import base64
import binascii
import json
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import IO, Any

from sqlalchemy import Connection, String, Table, exists, select, update

from lantern import validation
from lantern.errors import InvalidInput
from lantern.evidence import searchindex
from lantern.evidence.said import TRANSCRIPT, said_range
from lantern.evidence.searchtext import search_text
from lantern.memory import fts as memory_fts
from lantern.memory import history, identity
from lantern.memory import refs as memory_refs
from lantern.memory.filters import scope_clause
from lantern.memory.rows import row_to_record
from lantern.semantic.sides import text_hash
from lantern.semantic.storage import chunk_vectors_changed, write_memory_vectors
from lantern.store.engine import Store
from lantern.store.ids import memory_identity
from lantern.store.models import (
    chunk_entities,
    chunks,
    embeddings,
    entities,
    entity_scans,
    memory_embeddings,
    memory_entities,
    memory_history,
    memory_records,
    sources,
)
from lantern.transfer.foreign import json_object
from lantern.validation import JSONObject

FORMAT = 1
HEADER_TYPE = "lantern_export"
TYPES = (
    "source",
    "chunk",
    "entity",
    "chunk_entity",
    "embedding",
    "memory",
    "history",
    "entity_scan",
    "memory_entity",
    "memory_embedding",
)
_BATCH = 500

# Each line type: its fields in output order, and what each one accepts.
_Check = Callable[[Any], bool]


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_str(value: Any) -> bool:
    return isinstance(value, str)


def _is_optional_int(value: Any) -> bool:
    return value is None or _is_int(value)


def _is_optional_str(value: Any) -> bool:
    return value is None or isinstance(value, str)


def _is_object(value: Any) -> bool:
    return isinstance(value, dict)


def _is_any(_value: Any) -> bool:
    return True


FIELDS: dict[str, dict[str, _Check]] = {
    "source": {
        "id": _is_str,
        "uri": _is_str,
        "kind": _is_str,
        "title": _is_optional_str,
        "content_hash": _is_str,
        "metadata": _is_object,
        "created_at": _is_int,
        "updated_at": _is_int,
    },
    "chunk": {
        "id": _is_str,
        "source_id": _is_str,
        "ordinal": _is_int,
        "text": _is_str,
        "start_offset": _is_optional_int,
        "end_offset": _is_optional_int,
        "metadata": _is_object,
        "created_at": _is_int,
    },
    "entity": {"id": _is_str, "name": _is_str, "kind": _is_str},
    "chunk_entity": {"chunk_id": _is_str, "entity_id": _is_str},
    "embedding": {"chunk_id": _is_str, "model": _is_str, "dim": _is_int, "vector": _is_str},
    # Memory fields are checked by the same validation as `memory add`.
    "memory": {
        "id": _is_str,
        "kind": _is_any,
        "content": _is_any,
        "scope": _is_any,
        "priority": _is_any,
        "urgency": _is_any,
        "confidence": _is_any,
        "status": _is_any,
        "created_at": _is_int,
        "updated_at": _is_int,
        "expires_at": _is_optional_int,
        "supersedes_id": _is_optional_str,
        "source_refs": _is_any,
    },
    "history": {"record_id": _is_str, "event": _is_str, "at": _is_int, "changes": _is_object},
    "entity_scan": {"chunk_id": _is_str, "extractor": _is_int},
    "memory_entity": {"record_id": _is_str, "entity_id": _is_str},
    "memory_embedding": {
        "record_id": _is_str,
        "model": _is_str,
        "dim": _is_int,
        "text_hash": _is_str,
        "vector": _is_str,
    },
}


@dataclass(frozen=True, slots=True)
class TransferReport:
    """Lines per type written by an export (`added`), or added and skipped (already present)
    by an import; every type is present, in the order of the format."""

    added: Mapping[str, int]
    skipped: Mapping[str, int]
    dry_run: bool = False
    """An import that said what it would write, and wrote nothing."""
    ignored: Mapping[str, int] = field(default_factory=lambda: MappingProxyType({}))
    """Lines of the file an import read and did not take, by type: `memory_embedding`, a
    vector computed from another text than its record's content."""
    without_vector: int = 0
    """Memory records an import added with no vector (the file had none for them)."""

    @classmethod
    def of(
        cls,
        added: Mapping[str, int],
        skipped: Mapping[str, int],
        *,
        dry_run: bool = False,
        ignored: Mapping[str, int] | None = None,
        without_vector: int = 0,
    ) -> TransferReport:
        return cls(
            added=MappingProxyType({kind: added.get(kind, 0) for kind in TYPES}),
            skipped=MappingProxyType({kind: skipped.get(kind, 0) for kind in TYPES}),
            dry_run=dry_run,
            ignored=MappingProxyType({k: n for k, n in (ignored or {}).items() if n}),
            without_vector=without_vector,
        )

    @property
    def present(self) -> Mapping[str, int]:
        """What the store already had: the same counts as `skipped`, by the word the
        other importers and the command's text use."""
        return self.skipped

    def to_json(self) -> JSONObject:
        """The counts as `import --json` prints them, in the shape every import shares
        (docs/json.md, "The store"): `{"format", "dry_run", "read", "records": {"added",
        "present", "without_vector"}, "ignored", "added", "present", "skipped"}`, where
        `read`, `added`, `present` and `skipped` count lines by type."""
        ignored = dict(self.ignored)
        return {
            "format": "lantern",
            "dry_run": self.dry_run,
            "read": {
                kind: self.added[kind] + self.skipped[kind] + ignored.get(kind, 0) for kind in TYPES
            },
            "records": {
                "added": self.added["memory"],
                "present": self.skipped["memory"],
                "without_vector": self.without_vector,
            },
            "ignored": ignored,
            "added": dict(self.added),
            "present": dict(self.skipped),
            "skipped": dict(self.skipped),
        }


def _line(kind: str, values: Mapping[str, Any]) -> bytes:
    rendered = {"type": kind, **values}
    text = json.dumps(rendered, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    return text.encode("utf-8") + b"\n"


# --- export ----------------------------------------------------------------------------------


def export_jsonl(
    store: Store,
    out: IO[bytes],
    *,
    scope: str | Iterable[str] | None = None,
    memories: bool = True,
    evidence: bool = True,
) -> TransferReport:
    """Write the store (evidence, memories, or both; memories of some scopes) to `out`.

    `scope` filters memory records and their history as `memory list --scope` does (exact, or
    a pattern ending in `*`); evidence has no scope and is written whole when asked for.
    """
    scopes = [pair for value in _as_list(scope) for pair in validation.scope_pattern(value)]
    written: Counter[str] = Counter()
    with store.read() as conn:
        streaming = conn.execution_options(stream_results=True, yield_per=1_000)
        out.write(_line(HEADER_TYPE, {"format": FORMAT}))
        if evidence:
            for kind, rows in _evidence_rows(streaming):
                for values in rows:
                    out.write(_line(kind, values))
                    written[kind] += 1
        if memories:
            for kind, rows in _memory_rows(streaming, scopes, with_entities=not evidence):
                for values in rows:
                    out.write(_line(kind, values))
                    written[kind] += 1
    return TransferReport.of(written, {})


def _by(conn: Connection, *columns: Any) -> list[Any]:
    """Sort keys in code point order on both engines (PostgreSQL would use its collation)."""
    if conn.dialect.name != "postgresql":
        return list(columns)
    return [
        column.collate("C") if isinstance(column.type, String) else column for column in columns
    ]


def _evidence_rows(conn: Connection) -> Iterator[tuple[str, Iterable[JSONObject]]]:
    yield (
        "source",
        (
            {
                **_plain(row, "id", "uri", "kind", "title", "content_hash"),
                **_meta(row),
                **_plain(row, "created_at", "updated_at"),
            }
            for row in conn.execute(select(sources).order_by(*_by(conn, sources.c.id)))
        ),
    )
    yield (
        "chunk",
        (
            {
                **_plain(row, "id", "source_id", "ordinal", "text", "start_offset", "end_offset"),
                **_meta(row),
                "created_at": row.created_at,
            }
            for row in conn.execute(
                select(chunks).order_by(*_by(conn, chunks.c.source_id, chunks.c.ordinal))
            )
        ),
    )
    yield (
        "entity",
        (
            _plain(row, "id", "name", "kind")
            for row in conn.execute(select(entities).order_by(*_by(conn, entities.c.id)))
        ),
    )
    yield (
        "chunk_entity",
        (
            _plain(row, "chunk_id", "entity_id")
            for row in conn.execute(
                select(chunk_entities).order_by(
                    *_by(conn, chunk_entities.c.chunk_id, chunk_entities.c.entity_id)
                )
            )
        ),
    )
    yield (
        "embedding",
        (
            {
                **_plain(row, "chunk_id", "model", "dim"),
                "vector": base64.b64encode(bytes(row.vector)).decode("ascii"),
            }
            for row in conn.execute(select(embeddings).order_by(*_by(conn, embeddings.c.chunk_id)))
        ),
    )
    yield (
        "entity_scan",
        (
            _plain(row, "chunk_id", "extractor")
            for row in conn.execute(
                select(entity_scans)
                .join(chunks, chunks.c.id == entity_scans.c.chunk_id)
                .order_by(*_by(conn, chunks.c.source_id, chunks.c.ordinal))
            )
        ),
    )


def _memory_rows(
    conn: Connection, scopes: list[tuple[str, bool]], *, with_entities: bool
) -> Iterator[tuple[str, Iterable[JSONObject]]]:
    records = select(memory_records).order_by(*_by(conn, memory_records.c.id))
    entries = select(memory_history).order_by(
        *_by(conn, memory_history.c.record_id, memory_history.c.id)
    )
    links = select(memory_entities).order_by(
        *_by(conn, memory_entities.c.record_id, memory_entities.c.entity_id)
    )
    vectors = select(memory_embeddings).order_by(
        *_by(conn, memory_embeddings.c.memory_id, memory_embeddings.c.model)
    )
    if scopes:
        in_scope = scope_clause(conn.dialect.name, scopes)
        records = records.where(in_scope)
        exported = select(memory_records.c.id).where(in_scope)
        entries = entries.where(memory_history.c.record_id.in_(exported))
        links = links.where(memory_entities.c.record_id.in_(exported))
        vectors = vectors.where(memory_embeddings.c.memory_id.in_(exported))
    yield "memory", (row_to_record(row).to_json() for row in conn.execute(records))
    yield (
        "history",
        (
            {
                "record_id": row.record_id,
                "event": row.event,
                "at": row.at,
                "changes": validation.canonical_json(row.changes),
            }
            for row in conn.execute(entries)
        ),
    )
    if with_entities:
        linked = select(links.subquery().c.entity_id)
        yield (
            "entity",
            (
                _plain(row, "id", "name", "kind")
                for row in conn.execute(
                    select(entities)
                    .where(entities.c.id.in_(linked))
                    .order_by(*_by(conn, entities.c.id))
                )
            ),
        )
    yield (
        "memory_entity",
        (_plain(row, "record_id", "entity_id") for row in conn.execute(links)),
    )
    yield (
        "memory_embedding",
        (
            {
                "record_id": row.memory_id,
                **_plain(row, "model", "dim", "text_hash"),
                "vector": base64.b64encode(bytes(row.vector)).decode("ascii"),
            }
            for row in conn.execute(vectors)
        ),
    )


def _plain(row: Any, *names: str) -> JSONObject:
    return {name: getattr(row, name) for name in names}


def _meta(row: Any) -> JSONObject:
    value = row.metadata
    return {"metadata": validation.canonical_json(value if isinstance(value, dict) else {})}


def _as_list(value: str | Iterable[str] | None) -> list[str]:
    if value is None:
        return []
    return [value] if isinstance(value, str) else list(value)


# --- import ----------------------------------------------------------------------------------


class _DryRun(Exception):
    """Raised inside the transaction of a dry run, so that it rolls back, with its report."""

    def __init__(self, report: TransferReport) -> None:
        self.report = report


def import_jsonl(store: Store, source: IO[bytes], *, dry_run: bool = False) -> TransferReport:
    """Add what `source` holds and the store does not, in one transaction.

    Every line is checked as it is read, so an error names its line; rows are then inserted in
    batches of one type. Any error leaves the store as it was; so does a dry run, which does the
    whole import and rolls it back, to say what it would write.
    """
    try:
        with store.write() as conn:
            importer = _Importer(conn, store.clock())
            for number, raw in enumerate(source, start=1):
                try:
                    importer.read_line(number, raw)
                except InvalidInput as exc:
                    raise exc.at(f"line {number}: ", line=number) from exc
            if not importer.header_seen:
                raise InvalidInput("the file is empty: a Lantern export starts with a header line")
            importer.finish()
            report = TransferReport.of(
                importer.added,
                importer.skipped,
                dry_run=dry_run,
                ignored=importer.ignored,
                without_vector=len(importer.added_contents) - len(importer.with_vector),
            )
            if dry_run:
                raise _DryRun(report)
            return report
    except _DryRun as rolled_back:
        return rolled_back.report


Batch = list[tuple[int, JSONObject]]


class _Importer:
    """Checks lines in order and inserts them in batches of one type at a time."""

    def __init__(self, conn: Connection, at: int) -> None:
        self.conn = conn
        self.at = at
        """The import's timestamp, taken once from the store's clock: the time of the vectors
        it stores (everything else keeps the times the file gives)."""
        self.added: Counter[str] = Counter()
        self.skipped: Counter[str] = Counter()
        self.header_seen = False
        self.batch_type: str | None = None
        self.batch: Batch = []
        self.skipped_sources: set[str] = set()
        self.source_kinds: dict[str, str] = {}
        """The kinds of the sources this import adds: their chunks' searchable text needs it."""
        self.source_dates: dict[str, tuple[int | None, int | None]] = {}
        """When the words of the non-transcript sources this import adds were said (their
        `mtime`, `lantern.evidence.said`): their chunks take it."""
        self.skipped_chunks: set[str] = set()
        self.memory_lines: set[str] = set()
        self.ignored: Counter[str] = Counter()
        self.added_contents: dict[str, str] = {}
        """The text hash of the content of each record this import adds."""
        self.with_vector: set[str] = set()
        """The records this import adds that the file gave a vector."""
        # Memory ids decided so far: True when this import adds the record and its history.
        self.record_added: dict[str, bool] = {}
        self.links: list[tuple[int, str, str]] = []
        # Identities this import's records took, with their claim order, and the others of
        # this import that say the same (stored without an identity for now).
        self.claimed: dict[str, tuple[object, ...]] = {}
        self.contested: dict[str, list[tuple[object, ...]]] = {}

    def read_line(self, number: int, raw: bytes) -> None:
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise InvalidInput("not UTF-8 text") from exc
        if not text.strip():
            return
        value = json_object(text)
        kind = value.pop("type", None)
        if not self.header_seen:
            self._header(kind, value)
            return
        if kind not in FIELDS:
            raise InvalidInput(f"unknown line type {kind!r}; expected one of {', '.join(TYPES)}")
        _check_fields(kind, value)
        value = self._checked(kind, value)
        if kind != self.batch_type or len(self.batch) >= _BATCH:
            self._flush()
            self.batch_type = kind
        self.batch.append((number, value))

    def _header(self, kind: Any, value: JSONObject) -> None:
        if kind != HEADER_TYPE:
            raise InvalidInput(
                f'not a Lantern export: the first line must be {{"type":"{HEADER_TYPE}",...}}'
            )
        found = value.get("format")
        if found != FORMAT:
            raise InvalidInput(
                f"export format {found!r} is not one this Lantern reads (format {FORMAT})"
            )
        self.header_seen = True

    def _checked(self, kind: str, values: JSONObject) -> JSONObject:
        """Field values as they will be stored, checked by the rules `memory add` uses."""
        if kind in ("source", "chunk"):
            return {**values, "metadata": validation.canonical_json(values["metadata"])}
        if kind == "embedding":
            try:
                vector = base64.b64decode(values["vector"], validate=True)
            except (binascii.Error, ValueError) as exc:
                raise InvalidInput("embedding vector is not base64") from exc
            return {**values, "vector": vector}
        if kind == "memory_embedding":
            return _memory_vector(values)
        if kind == "memory":
            record = _memory_values(values)
            if record["id"] in self.memory_lines:
                raise InvalidInput(f"memory {record['id']} appears twice in the file")
            self.memory_lines.add(record["id"])
            return record
        if kind == "history":
            validation.memory_record_id(values["record_id"])
            validation.choice("event", values["event"], validation.HISTORY_EVENTS)
            validation.timestamp("at", values["at"])
            return {**values, "changes": validation.canonical_json(values["changes"])}
        return values

    def finish(self) -> None:
        self._flush()
        self._settle_identities()
        self._link_supersedes()

    def _flush(self) -> None:
        batch, self.batch = self.batch, []
        if batch:
            {
                "source": self._add_sources,
                "chunk": self._add_chunks,
                "entity": self._add_entities,
                "chunk_entity": self._add_chunk_entities,
                "embedding": self._add_embeddings,
                "memory": self._add_memories,
                "history": self._add_history,
                "entity_scan": self._add_entity_scans,
                "memory_entity": self._add_memory_entities,
                "memory_embedding": self._add_memory_vectors,
            }[str(self.batch_type)](batch)

    def _count(self, kind: str, added: int, total: int) -> None:
        self.added[kind] += added
        self.skipped[kind] += total - added

    def _present(self, column: Any, keys: Iterable[str]) -> set[str]:
        keys = list(keys)
        found: set[str] = set()
        for start in range(0, len(keys), _BATCH):
            chunk_of_keys = keys[start : start + _BATCH]
            found.update(
                self.conn.execute(select(column).where(column.in_(chunk_of_keys))).scalars()
            )
        return found

    def _insert(self, table: Table, rows: list[JSONObject]) -> None:
        if rows:
            self.conn.execute(table.insert(), rows)

    def _add_sources(self, batch: Batch) -> None:
        present = self._present(sources.c.id, (values["id"] for _n, values in batch))
        new = [values for _n, values in batch if values["id"] not in present]
        self.skipped_sources |= present
        self.source_kinds.update((values["id"], values["kind"]) for values in new)
        self.source_dates.update(
            (values["id"], said)
            for values in new
            if (said := said_range(values["kind"], None, values.get("metadata"))) != (None, None)
        )
        self._insert(sources, new)
        self._count("source", len(new), len(batch))

    def _add_chunks(self, batch: Batch) -> None:
        # A source the store had keeps its own chunks: none of the file's are added to it.
        candidates = [v for _n, v in batch if v["source_id"] not in self.skipped_sources]
        present = self._present(chunks.c.id, (values["id"] for values in candidates))
        new = [values for values in candidates if values["id"] not in present]
        self.skipped_chunks |= {values["id"] for _n, values in batch} - {v["id"] for v in new}
        kinds = self.source_kinds
        searchable = [
            {"chunk_id": values["id"], "text": found}
            for values in new
            if (found := search_text(kinds.get(values["source_id"]), values["text"])) is not None
        ]
        searchindex.write(self.conn, searchable)
        for values in new:
            kind = kinds.get(values["source_id"])
            if kind == TRANSCRIPT:
                said = said_range(kind, values.get("metadata"), None)
            else:
                said = self.source_dates.get(values["source_id"], (None, None))
            values["said_from"], values["said_until"] = said
        self._insert(chunks, new)
        self._count("chunk", len(new), len(batch))

    def _add_entities(self, batch: Batch) -> None:
        present = self._present(entities.c.id, (values["id"] for _n, values in batch))
        new = [values for _n, values in batch if values["id"] not in present]
        self._insert(entities, new)
        self._count("entity", len(new), len(batch))

    def _add_chunk_entities(self, batch: Batch) -> None:
        candidates = [v for _n, v in batch if v["chunk_id"] not in self.skipped_chunks]
        linked = {
            (row.chunk_id, row.entity_id)
            for start in range(0, len(candidates), _BATCH)
            for row in self.conn.execute(
                select(chunk_entities).where(
                    chunk_entities.c.chunk_id.in_(
                        [v["chunk_id"] for v in candidates[start : start + _BATCH]]
                    )
                )
            )
        }
        new = [v for v in candidates if (v["chunk_id"], v["entity_id"]) not in linked]
        self._insert(chunk_entities, new)
        self._count("chunk_entity", len(new), len(batch))

    def _add_embeddings(self, batch: Batch) -> None:
        candidates = [v for _n, v in batch if v["chunk_id"] not in self.skipped_chunks]
        present = self._present(embeddings.c.chunk_id, (v["chunk_id"] for v in candidates))
        new = [values for values in candidates if values["chunk_id"] not in present]
        self._insert(embeddings, new)
        chunk_vectors_changed(self.conn, len(new))
        self._count("embedding", len(new), len(batch))

    def _add_entity_scans(self, batch: Batch) -> None:
        candidates = [v for _n, v in batch if v["chunk_id"] not in self.skipped_chunks]
        present = self._present(entity_scans.c.chunk_id, (v["chunk_id"] for v in candidates))
        new = [values for values in candidates if values["chunk_id"] not in present]
        self._insert(entity_scans, new)
        self._count("entity_scan", len(new), len(batch))

    def _add_memory_entities(self, batch: Batch) -> None:
        # A record the store had keeps its own links, as it keeps its own history.
        candidates = [(n, v) for n, v in batch if self.record_added.get(v["record_id"])]
        stored = self._present(entities.c.id, {v["entity_id"] for _n, v in candidates})
        for number, values in candidates:
            if values["entity_id"] not in stored:
                raise InvalidInput(
                    f"line {number}: memory {values['record_id']} is linked to entity "
                    f"{values['entity_id']}, which is neither in the file nor in the store"
                )
        new = list({(v["record_id"], v["entity_id"]): v for _n, v in candidates}.values())
        self._insert(memory_entities, new)
        self._count("memory_entity", len(new), len(batch))

    def _add_memory_vectors(self, batch: Batch) -> None:
        """A record the store had keeps its own vectors, as it keeps its own history; one this
        import adds takes the file's vector when it was computed from the record's content
        (its text hash says so), and leaves out one computed from another text."""
        for number, values in batch:
            record_id = values["record_id"]
            if record_id not in self.record_added:
                if not self._known(record_id):
                    raise InvalidInput(
                        f"line {number}: memory {record_id} has a vector but is neither in "
                        "the file nor in the store"
                    )
                self.record_added[record_id] = False
        by_model: dict[tuple[str, int], list[tuple[str, bytes, str]]] = {}
        stale = 0
        for _number, values in batch:
            record_id = values["record_id"]
            if not self.record_added[record_id]:
                continue
            if values["text_hash"] != self.added_contents.get(record_id):
                stale += 1
                continue
            rows = by_model.setdefault((values["model"], values["dim"]), [])
            rows.append((record_id, values["vector"], values["text_hash"]))
            self.with_vector.add(record_id)
        for (model, dim), rows in by_model.items():
            write_memory_vectors(self.conn, model, dim, rows, self.at)
        added = sum(len(rows) for rows in by_model.values())
        self.ignored["memory_embedding"] += stale
        self._count("memory_embedding", added, len(batch) - stale)

    def _known(self, record_id: str) -> bool:
        """Whether the store had this memory id before the import: as a record, or in history
        only (a forgotten record)."""
        for condition in (
            memory_records.c.id == record_id,
            memory_history.c.record_id == record_id,
        ):
            if self.conn.execute(select(exists().where(condition))).scalar():
                return True
        return False

    def _add_memories(self, batch: Batch) -> None:
        new: list[JSONObject] = []
        for number, record in batch:
            added = not self._known(record["id"])
            self.record_added[record["id"]] = added
            if not added:
                continue
            if record["supersedes_id"] is not None:
                self.links.append((number, record["id"], record["supersedes_id"]))
            new.append({**record, "supersedes_id": None})
        says = {r["id"]: memory_identity(r["scope"], r["kind"], r["content"]) for r in new}
        held = self._present(memory_records.c.identity_hash, set(says.values()))
        for record in new:
            key = says[record["id"]]
            rank = identity.claim_order(record["id"], key, record["status"], record["created_at"])
            if key in self.claimed:
                self.contested.setdefault(key, []).append(rank)
            elif key not in held:
                self.claimed[key] = rank
                record["identity_hash"] = key
        self.added_contents.update((r["id"], text_hash(r["content"])) for r in new)
        self._insert(memory_records, [{"identity_hash": None, **r} for r in new])
        memory_fts.index(self.conn, [(r["id"], r["content"]) for r in new])
        memory_refs.write(self.conn, [(r["id"], r["source_refs"]) for r in new])
        self._count("memory", len(new), len(batch))

    def _add_history(self, batch: Batch) -> None:
        new: list[JSONObject] = []
        for _number, values in batch:
            record_id = values["record_id"]
            if record_id not in self.record_added:
                self.record_added[record_id] = not self._known(record_id)
            if self.record_added[record_id]:
                new.append(values)
        history.append(self.conn, new)
        self._count("history", len(new), len(batch))

    def _settle_identities(self) -> None:
        """Where several records of the file say the same and the store had none of them, the
        first by claim order holds the identity, whichever line came first."""
        for key, ranks in self.contested.items():
            claimant, first = self.claimed[key], min(ranks)
            if first < claimant:
                for rank, value in ((claimant, None), (first, key)):
                    self.conn.execute(
                        update(memory_records)
                        .where(memory_records.c.id == rank[-1])
                        .values(identity_hash=value)
                    )

    def _link_supersedes(self) -> None:
        """Set `supersedes_id` once every record is in, so the order of records does not
        matter (the foreign key is checked at once on SQLite)."""
        for number, record_id, target in self.links:
            if not self.conn.execute(
                select(exists().where(memory_records.c.id == target))
            ).scalar():
                raise InvalidInput(
                    f"line {number}: memory {record_id} supersedes {target}, which is neither "
                    "in the file nor in the store"
                )
            successor = self.conn.execute(
                select(memory_records.c.id).where(memory_records.c.supersedes_id == target)
            ).scalar_one_or_none()
            if successor is not None:
                raise InvalidInput(
                    f"line {number}: memory {record_id} supersedes {target}, which "
                    f"{successor} already supersedes"
                )
            self.conn.execute(
                update(memory_records)
                .where(memory_records.c.id == record_id)
                .values(supersedes_id=target)
            )


def _check_fields(kind: str, values: JSONObject) -> None:
    expected = FIELDS[kind]
    missing = [name for name in expected if name not in values]
    unknown = [name for name in values if name not in expected]
    if missing or unknown:
        problems = []
        if missing:
            problems.append(f"missing {', '.join(missing)}")
        if unknown:
            problems.append(f"unknown {', '.join(unknown)}")
        raise InvalidInput(f"{kind} line: {'; '.join(problems)}")
    for name, check in expected.items():
        if not check(values[name]):
            raise InvalidInput(f"{kind} line: {name} has the wrong type ({values[name]!r})")


def _memory_vector(values: JSONObject) -> JSONObject:
    """A memory record's vector line, checked: a model named, and as many float32 values as
    its dimension says."""
    validation.memory_record_id(values["record_id"])
    if not values["model"].strip():
        raise InvalidInput("memory_embedding line: model must name the model of the vector")
    dim = values["dim"]
    if dim <= 0:
        raise InvalidInput(f"memory_embedding line: dim must be positive; got {dim}")
    try:
        vector = base64.b64decode(values["vector"], validate=True)
    except (binascii.Error, ValueError) as exc:
        raise InvalidInput("memory_embedding vector is not base64") from exc
    if len(vector) != 4 * dim:
        raise InvalidInput(
            f"memory_embedding vector has {len(vector)} bytes; {dim} float32 values take {4 * dim}"
        )
    return {**values, "vector": vector}


def _memory_values(values: JSONObject) -> JSONObject:
    return {
        "id": validation.memory_record_id(values["id"]),
        "kind": validation.kind(values["kind"]),
        "content": validation.content(values["content"]),
        "scope": validation.scope(values["scope"]),
        "priority": validation.percent("priority", values["priority"]),
        "urgency": validation.percent("urgency", values["urgency"]),
        "confidence": validation.confidence(values["confidence"]),
        "status": validation.choice("status", values["status"], validation.STATUSES),
        "created_at": validation.timestamp("created_at", values["created_at"]),
        "updated_at": validation.timestamp("updated_at", values["updated_at"]),
        "expires_at": validation.optional_timestamp("expires_at", values["expires_at"]),
        "supersedes_id": None
        if values["supersedes_id"] is None
        else validation.memory_record_id(values["supersedes_id"]),
        "source_refs": validation.source_refs(values["source_refs"]),
    }
