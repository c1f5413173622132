"""Checking a store's health (`lantern db check`), without ever changing it.

`check` reads and never repairs: each check reports what it found, and the store is healthy
when none failed. A check fails on damage; findings that are not damage (references whose
evidence is gone, records that say the same) are warnings. What is checked, and why each one
matters:

* `integrity`: SQLite's `PRAGMA integrity_check` (every page, b-tree and index entry); on
  PostgreSQL, that no index of the store is left invalid, and `amcheck`'s b-tree checks when
  that extension is installed in the database.
* `foreign_keys`: `PRAGMA foreign_key_check` on SQLite, an anti-join per foreign key on
  PostgreSQL: no chunk without its source, no reference row without its record.
* `schema`: a revision this Lantern knows, with every table, full-text index and trigger that
  revision creates (a hand-edited store, or an old tool's, may lack one).
* `migration_leftovers`: no `_alembic_tmp_*` table, which an interrupted batch migration of
  another tool could leave behind.
* `chunk_index`, `memory_index`: the full-text indexes agree with their tables, row for row.
  On SQLite this is FTS5's own `integrity-check` (for `chunks_fts`, against its external content,
  the view `chunk_search`; for `memory_fts`, its internal consistency) plus a comparison of
  `memory_fts` with `memory_records`: a row for every record, keyed as the repository keys it,
  holding the record's content, and nothing extra. On PostgreSQL the generated `tsvector`
  columns are recomputed and compared. On both, the chunks' searchable texts
  (`chunk_search_text`) are derived again and compared with the stored rows.
* `memory_refs`: the reference rows agree with the records' `source_refs`.
* `references` (warnings): `source` and `chunk` references that no longer name anything
  (evidence removed or re-ingested since, or stored with `--allow-dangling`); `lantern memory
  check-refs` lists the same. They are what the caller stored, not damage.
* `memory_identity`: every record's `identity_hash` is what its scope, kind and content say,
  or NULL for a record that repeats one that holds it (`lantern.memory.identity`).
* `duplicate_memories` (warnings): those repeating records, kept from before schema revision
  0006 or from an import; which to keep is the caller's decision.
* `vectors` (warnings): stored vectors that semantic search cannot use as they are: a length
  that disagrees with the dimension recorded beside it, or a dimension other than most vectors
  of the same model have (both are left out of searches), and memory vectors computed from a
  text other than the record's content now (stale; `lantern embed` computes them again).
  Vectors are derived data: none of this loses anything the caller stored.

FTS5's `integrity-check` is written as an `INSERT`, so it runs in a write transaction that is
always rolled back (`Store.probe`): it waits for other writers like one, and never changes the
file. On a store that cannot be written at all, those two checks are reported as skipped.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from sqlalchemy import Connection, func, or_, select, text
from sqlalchemy.exc import DBAPIError

from lantern.errors import NotAStore, StoreIOError
from lantern.evidence import searchindex
from lantern.memory import fts as memory_fts
from lantern.memory import refs as memory_refs
from lantern.semantic.sides import text_hash
from lantern.store import migrations
from lantern.store.dialect import TEXT_SEARCH_REGCONFIG
from lantern.store.engine import Store, translate
from lantern.store.ids import memory_identity
from lantern.store.models import Base, embeddings, memory_embeddings, memory_records
from lantern.store.models import memory_refs as refs_table
from lantern.validation import JSONObject

CHECKS = (
    "integrity",
    "foreign_keys",
    "schema",
    "migration_leftovers",
    "chunk_index",
    "memory_index",
    "memory_refs",
    "references",
    "memory_identity",
    "duplicate_memories",
    "vectors",
    "word_index",
    "vector_index",
)
WARNING_CHECKS = frozenset({"references", "duplicate_memories", "vectors"})
"""Checks whose findings are warnings: what the caller stored, not damage."""
MAX_LISTED = 20
"""Problems listed per check; more are summed up in one last line."""

_LEFTOVER_PREFIX = "_alembic_tmp_"
_CHUNK_TRIGGERS = ("chunks_ai", "chunks_ad", "chunks_au")
_SEARCH_VIEW = "chunk_search"
_SQLITE_HISTORY_TRIGGERS = ("memory_history_no_update", "memory_history_no_delete")
_POSTGRES_HISTORY_TRIGGERS = ("memory_history_append_only", "memory_history_no_truncate")
_ROWID_FUNCTION = "lantern_fts_rowid"
_IDENTITY_REVISION = "0006"
_VECTORS_REVISION = "0008"
_IDENTITY_INDEX = "ix_memory_records_identity_hash"
_BATCH = 1_000


@dataclass(frozen=True, slots=True)
class CheckResult:
    """One check: `ok`, `warning` or `failed` (with what it found), or `skipped` (with the
    reason)."""

    name: str
    status: str
    problems: tuple[str, ...] = ()

    def to_json(self) -> JSONObject:
        """`{"name", "status", "problems"}`."""
        return {"name": self.name, "status": self.status, "problems": list(self.problems)}


@dataclass(frozen=True, slots=True)
class HealthReport:
    """What `lantern db check` found; `to_json` is its documented JSON shape."""

    url: str
    path: Path | None
    revision: str | None
    checks: tuple[CheckResult, ...]

    @property
    def healthy(self) -> bool:
        """True when no check failed (a skipped check does not make a store unhealthy)."""
        return all(check.status != "failed" for check in self.checks)

    @property
    def problems(self) -> list[str]:
        """What the failed checks found, each line prefixed with its check's name."""
        return self._found("failed")

    @property
    def warnings(self) -> list[str]:
        """What the checks with warnings found, each line prefixed with its check's name."""
        return self._found("warning")

    def _found(self, status: str) -> list[str]:
        return [
            f"{check.name}: {problem}"
            for check in self.checks
            if check.status == status
            for problem in check.problems
        ]

    def to_json(self) -> JSONObject:
        """The report as `db check --json` prints it."""
        return {
            "url": self.url,
            "path": None if self.path is None else str(self.path),
            "revision": self.revision,
            "healthy": self.healthy,
            "checks": [check.to_json() for check in self.checks],
        }


@dataclass(slots=True)
class _Findings:
    """Problems found by one check, capped at MAX_LISTED."""

    items: list[str] = field(default_factory=list)
    more: int = 0

    def add(self, problem: str) -> None:
        if len(self.items) < MAX_LISTED:
            self.items.append(" ".join(problem.split()))
        else:
            self.more += 1

    def result(self, name: str) -> CheckResult:
        listed = list(self.items)
        if self.more:
            listed.append(f"... and {self.more} more")
        found = "warning" if name in WARNING_CHECKS else "failed"
        return CheckResult(name, found if listed else "ok", tuple(listed))


def check(store: Store, *, url: str) -> HealthReport:
    """Run every check, reading only; see the module docstring for what each one proves."""
    sqlite = store.dialect == "sqlite"
    results: dict[str, CheckResult] = {}
    with store.read() as conn:
        state = migrations.read_state(conn, store.location)
        revision = state.effective_revision
        tables = _tables(conn)
        results["integrity"] = _integrity(conn, sqlite)
        results["foreign_keys"] = _foreign_keys(conn, sqlite)
        results["schema"] = _schema(conn, sqlite, revision, tables)
        results["migration_leftovers"] = _leftovers(tables)
        memory_ready = {"memory_records", "memory_refs"} <= tables
        if memory_ready:
            results["memory_refs"] = _memory_refs(conn)
            results["references"] = _references(conn)
        if _applied(revision, _IDENTITY_REVISION):
            results["memory_identity"], results["duplicate_memories"] = _identities(conn)
        if _applied(revision, _VECTORS_REVISION):
            results["vectors"] = _vectors(conn)
        if not sqlite:
            results["chunk_index"] = _postgres_chunk_index(conn, tables)
            results["memory_index"] = _tsvector(
                conn, "memory_records", "content", "content_tsv", tables
            )
    if sqlite:
        results.update(_sqlite_indexes(store, tables))
    for name in ("memory_refs", "references"):
        results.setdefault(
            name, CheckResult(name, "skipped", ("the store has no memory tables yet (upgrade it)",))
        )
    for name in ("memory_identity", "duplicate_memories"):
        reason = f"the store is older than revision {_IDENTITY_REVISION} (upgrade it)"
        results.setdefault(name, CheckResult(name, "skipped", (reason,)))
    reason = f"the store is older than revision {_VECTORS_REVISION} (upgrade it)"
    results.setdefault("vectors", CheckResult("vectors", "skipped", (reason,)))
    results["word_index"] = _word_index(store, revision)
    results["vector_index"] = _vector_index(store, revision)
    return HealthReport(
        url=url,
        path=store.location.path,
        revision=revision,
        checks=tuple(results[name] for name in CHECKS),
    )


def _applied(revision: str | None, wanted: str) -> bool:
    known = migrations.REVISIONS
    return revision is not None and known.index(revision) >= known.index(wanted)


def _tables(conn: Connection) -> set[str]:
    if conn.dialect.name == "sqlite":
        rows = conn.exec_driver_sql("SELECT name FROM sqlite_master WHERE type = 'table'")
    else:
        rows = conn.execute(
            text(
                "SELECT table_name FROM information_schema.tables "
                "WHERE table_schema = current_schema()"
            )
        )
    return {name for (name,) in rows}


def _integrity(conn: Connection, sqlite: bool) -> CheckResult:
    found = _Findings()
    if sqlite:
        for (line,) in conn.exec_driver_sql("PRAGMA integrity_check"):
            if line != "ok":
                found.add(str(line))
        return found.result("integrity")
    invalid = conn.execute(
        text(
            "SELECT c.relname FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid "
            "JOIN pg_namespace n ON n.oid = c.relnamespace "
            "WHERE n.nspname = current_schema() AND NOT (i.indisvalid AND i.indisready) "
            "ORDER BY c.relname"
        )
    ).scalars()
    for name in invalid:
        found.add(f"index {name} is not valid (an interrupted CREATE INDEX?); REINDEX it")
    if conn.execute(text("SELECT 1 FROM pg_extension WHERE extname = 'amcheck'")).first():
        btrees = conn.execute(
            text(
                "SELECT c.oid, c.relname FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid "
                "JOIN pg_namespace n ON n.oid = c.relnamespace JOIN pg_am a ON a.oid = c.relam "
                "WHERE n.nspname = current_schema() AND a.amname = 'btree' AND i.indisvalid"
            )
        ).all()
        for oid, name in btrees:
            try:
                with conn.begin_nested():
                    conn.execute(text("SELECT bt_index_check(:oid)"), {"oid": oid})
            except DBAPIError as exc:
                found.add(f"index {name}: {_first_line(exc)}")
    return found.result("integrity")


def _foreign_keys(conn: Connection, sqlite: bool) -> CheckResult:
    found = _Findings()
    if sqlite:
        for table, rowid, parent, _key in conn.exec_driver_sql("PRAGMA foreign_key_check"):
            found.add(f"{table} row {rowid} references a missing {parent} row")
        return found.result("foreign_keys")
    present = _tables(conn)
    for table in Base.metadata.sorted_tables:
        if table.name not in present:
            continue
        for key in table.foreign_key_constraints:
            # The parent side is always an alias: for a key that refers to its own table
            # (`memory_records.supersedes_id`) the unaliased table in the subquery would be
            # the subquery's own row, comparing a row's key with its own id, and every
            # superseding record would look like an orphan.
            parent = key.referred_table.alias("parent")
            child_cols = [element.parent for element in key.elements]
            parent_cols = [parent.c[element.column.name] for element in key.elements]
            row_key = list(table.primary_key.columns)
            orphans = (
                select(*row_key, *child_cols)
                .where(*(column.is_not(None) for column in child_cols))
                .where(
                    ~select(*parent_cols)
                    .where(*(p == c for p, c in zip(parent_cols, child_cols, strict=True)))
                    .exists()
                )
                .order_by(*row_key)
                .limit(MAX_LISTED + 1)
            )
            for row in conn.execute(orphans):
                found.add(
                    f"{table.name} row {_values(row[: len(row_key)])} references a missing "
                    f"{key.referred_table.name} row "
                    f"({_values(tuple(c.name for c in child_cols))} = "
                    f"{_values(row[len(row_key) :])})"
                )
    return found.result("foreign_keys")


def _values(values: Sequence[object]) -> str:
    """One value as itself, several as a parenthesised list: how a row or a key is named."""
    if len(values) == 1:
        return str(values[0])
    return "(" + ", ".join(str(value) for value in values) + ")"


def _schema(conn: Connection, sqlite: bool, revision: str | None, tables: set[str]) -> CheckResult:
    found = _Findings()
    if revision is None:
        return found.result("schema")  # an empty store: nothing to hold yet
    applied = migrations.REVISIONS[: migrations.REVISIONS.index(revision) + 1]
    expected = set().union(*(migrations.TABLES_BY_REVISION[r] for r in applied))
    if not sqlite:
        # PostgreSQL searches generated tsvector columns instead of FTS5 tables.
        expected = {t for t in expected if not t.startswith(migrations.FTS_TABLE_PREFIXES)}
    for table in sorted(expected - tables):
        found.add(f"table {table}, which revision {revision} has, is missing")
    if sqlite:
        declared = {
            name: (kind, sql or "")
            for kind, name, sql in conn.exec_driver_sql("SELECT type, name, sql FROM sqlite_master")
        }
        triggers = {name for name, (kind, _) in declared.items() if kind == "trigger"}
        wanted = list(_CHUNK_TRIGGERS)
        if "0005" in applied:
            wanted += _SQLITE_HISTORY_TRIGGERS
        if "0007" in applied:
            _search_text_schema(declared, found)
    else:
        triggers = set(
            conn.execute(
                text(
                    "SELECT t.tgname FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid "
                    "JOIN pg_namespace n ON n.oid = c.relnamespace "
                    "WHERE n.nspname = current_schema() AND NOT t.tgisinternal"
                )
            ).scalars()
        )
        wanted = list(_POSTGRES_HISTORY_TRIGGERS) if "0005" in applied else []
        columns = {
            (table, column)
            for table, column in conn.execute(
                text(
                    "SELECT table_name, column_name FROM information_schema.columns "
                    "WHERE table_schema = current_schema()"
                )
            )
        }
        generated = [
            ("chunks", "text_tsv", "0004"),
            ("memory_records", "content_tsv", "0005"),
            ("chunk_search_text", "text_tsv", "0007"),
        ]
        for table, column, since in generated:
            if since in applied and (table, column) not in columns:
                found.add(f"column {table}.{column}, which revision {since} adds, is missing")
    for trigger in wanted:
        if trigger not in triggers:
            found.add(f"trigger {trigger} is missing")
    if _IDENTITY_REVISION in applied and _IDENTITY_INDEX not in _indexes(conn, sqlite):
        found.add(
            f"index {_IDENTITY_INDEX}, which revision {_IDENTITY_REVISION} creates, is missing"
        )
    return found.result("schema")


def _search_text_schema(declared: dict[str, tuple[str, str]], found: _Findings) -> None:
    """SQLite, revision 0007: the index reads the view of searchable texts, and the chunk
    triggers index them (an older tool could have put back the generation-1 ones)."""
    if declared.get(_SEARCH_VIEW, ("", ""))[0] != "view":
        found.add(f"view {_SEARCH_VIEW}, which revision 0007 creates, is missing")
    index = declared.get("chunks_fts")
    if index is not None and f"content='{_SEARCH_VIEW}'" not in index[1]:
        found.add(f"chunks_fts does not index the view {_SEARCH_VIEW} (revision 0007)")
    for trigger in _CHUNK_TRIGGERS:
        sql = declared.get(trigger, ("", ""))[1]
        if sql and "chunk_search_text" not in sql:
            found.add(f"trigger {trigger} indexes chunk text, not its searchable text")


def _indexes(conn: Connection, sqlite: bool) -> set[str]:
    if sqlite:
        query = "SELECT name FROM sqlite_master WHERE type = 'index'"
    else:
        query = "SELECT indexname FROM pg_indexes WHERE schemaname = current_schema()"
    return set(conn.exec_driver_sql(query).scalars())


def _leftovers(tables: set[str]) -> CheckResult:
    found = _Findings()
    for table in sorted(tables):
        if table.startswith(_LEFTOVER_PREFIX):
            found.add(f"table {table} was left by an interrupted migration")
    return found.result("migration_leftovers")


def _memory_refs(conn: Connection) -> CheckResult:
    """Every record's `(type, id)` references, as `memory_refs` must hold them."""
    found = _Findings()
    stored: dict[str, set[tuple[str, str]]] = {}
    for record_id, ref_type, ref_id in conn.execute(
        select(refs_table.c.record_id, refs_table.c.ref_type, refs_table.c.ref_id)
    ):
        stored.setdefault(record_id, set()).add((ref_type, ref_id))
    records = conn.execute(
        select(memory_records.c.id, memory_records.c.source_refs).execution_options(
            yield_per=_BATCH
        )
    )
    for record_id, refs in records:
        expected = set(memory_refs.ref_keys(refs or []))
        actual = stored.pop(record_id, set())
        for ref_type, ref_id in sorted(expected - actual):
            found.add(f"{record_id} cites {ref_type}:{ref_id} but has no reference row for it")
        for ref_type, ref_id in sorted(actual - expected):
            found.add(f"{record_id} has a reference row for {ref_type}:{ref_id} it does not cite")
    for record_id in sorted(stored):
        found.add(f"reference rows for {record_id}, which is not stored")
    return found.result("memory_refs")


def _references(conn: Connection) -> CheckResult:
    found = _Findings()
    for ref in memory_refs.dangling(conn):
        found.add(
            f"{ref.record_id} cites {ref.type}:{ref.id}, which is not in the store "
            "(removed or re-ingested since; see memory check-refs)"
        )
    return found.result("references")


def _identities(conn: Connection) -> tuple[CheckResult, CheckResult]:
    """Every record's `identity_hash` is what it says, or NULL for a record that repeats one
    that holds it; those repeats are the warnings of `duplicate_memories`."""
    damaged, repeated = _Findings(), _Findings()
    unclaimed: list[tuple[str, str]] = []
    rows = conn.execute(
        select(
            memory_records.c.id,
            memory_records.c.scope,
            memory_records.c.kind,
            memory_records.c.content,
            memory_records.c.identity_hash,
        ).execution_options(yield_per=_BATCH)
    )
    for record_id, scope, kind, content, stored in rows:
        says = memory_identity(scope, kind, content)
        if stored is None:
            unclaimed.append((record_id, says))
        elif stored != says:
            damaged.add(
                f"{record_id} has identity_hash {stored}, but its scope, kind and content give "
                f"{says} (rebuild it with db rebuild-index)"
            )
    holders = {
        held: record_id
        for start in range(0, len(unclaimed), _BATCH)
        for record_id, held in conn.execute(
            select(memory_records.c.id, memory_records.c.identity_hash).where(
                memory_records.c.identity_hash.in_(
                    [says for _id, says in unclaimed[start : start + _BATCH]]
                )
            )
        )
    }
    for record_id, says in sorted(unclaimed):
        holder = holders.get(says)
        if holder is None:
            damaged.add(
                f"{record_id} has no identity_hash, and no other record says what it says "
                "(rebuild it with db rebuild-index)"
            )
        else:
            repeated.add(
                f"{record_id} says what {holder} says (same scope, kind and content); "
                "archive, supersede or forget one of them"
            )
    return damaged.result("memory_identity"), repeated.result("duplicate_memories")


def _vectors(conn: Connection) -> CheckResult:
    """Vectors whose size or dimension disagrees with their model's, and memory vectors
    computed from another text than their record says now."""
    found = _Findings()
    sides = (
        ("memory vector of", memory_embeddings, memory_embeddings.c.memory_id),
        ("chunk vector of", embeddings, embeddings.c.chunk_id),
    )
    for label, table, key in sides:
        usual: dict[str, tuple[int, int]] = {}
        grouped = conn.execute(
            select(table.c.model, table.c.dim, func.count()).group_by(table.c.model, table.c.dim)
        )
        for model, dim, count in grouped:
            best = usual.get(model)
            if best is None or (count, -dim) > (best[1], -best[0]):
                usual[model] = (int(dim), int(count))
        for model, (dim, _count) in sorted(usual.items()):
            odd = conn.execute(
                select(key, table.c.dim, func.length(table.c.vector))
                .where(
                    table.c.model == model,
                    or_(table.c.dim != dim, func.length(table.c.vector) != 4 * table.c.dim),
                )
                .order_by(key)
            )
            for item, stored_dim, length in odd:
                if length != 4 * stored_dim:
                    found.add(
                        f"{label} {item} ({model}) holds {length} bytes, not the {4 * stored_dim} "
                        f"of {stored_dim} float32 values; searches leave it out "
                        "(lantern embed computes it again)"
                    )
                else:
                    found.add(
                        f"{label} {item} ({model}) has {stored_dim} dimensions where that "
                        f"model's vectors have {dim}; searches leave it out"
                    )
    stored = conn.execute(
        select(
            memory_embeddings.c.memory_id,
            memory_embeddings.c.model,
            memory_embeddings.c.text_hash,
            memory_records.c.content,
        )
        .select_from(
            memory_embeddings.join(
                memory_records, memory_records.c.id == memory_embeddings.c.memory_id
            )
        )
        .order_by(memory_embeddings.c.memory_id, memory_embeddings.c.model)
        .execution_options(yield_per=_BATCH)
    )
    for record_id, model, hashed, content in stored:
        if hashed != text_hash(content):
            found.add(
                f"memory vector of {record_id} ({model}) was computed from another text than "
                "the record's content now: stale (lantern embed computes it again)"
            )
    return found.result("vectors")


def _tsvector(
    conn: Connection, table: str, source: str, generated: str, tables: set[str]
) -> CheckResult:
    """PostgreSQL: the stored `tsvector` of every row is the one its text gives now."""
    name = "chunk_index" if table == "chunks" else "memory_index"
    if table not in tables:
        return CheckResult(name, "skipped", (f"the store has no {table} table",))
    found = _Findings()
    _compare_tsvector(conn, table, source, generated, found)
    return found.result(name)


def _postgres_chunk_index(conn: Connection, tables: set[str]) -> CheckResult:
    """PostgreSQL: both tables' vectors, and the searchable texts against their chunks."""
    if "chunks" not in tables:
        return CheckResult("chunk_index", "skipped", ("the store has no chunks table",))
    found = _Findings()
    _compare_tsvector(conn, "chunks", "text", "text_tsv", found)
    if "chunk_search_text" in tables:
        _compare_tsvector(conn, "chunk_search_text", "text", "text_tsv", found)
        for problem in searchindex.differences(conn):
            found.add(problem)
    return found.result("chunk_index")


def _compare_tsvector(
    conn: Connection, table: str, source: str, generated: str, found: _Findings
) -> None:
    key = "chunk_id" if table == "chunk_search_text" else "id"
    try:
        with conn.begin_nested():
            rows = conn.execute(
                text(
                    f"SELECT {key} FROM {table} WHERE {generated} IS DISTINCT FROM "
                    f"to_tsvector({TEXT_SEARCH_REGCONFIG}, {source}) "
                    f"ORDER BY {key} LIMIT {MAX_LISTED + 1}"
                )
            ).scalars()
            for row_id in rows:
                found.add(f"{table} row {row_id}: {generated} does not match its {source}")
    except DBAPIError as exc:
        found.add(f"{table}.{generated} could not be checked: {_first_line(exc)}")


def _sqlite_indexes(store: Store, tables: set[str]) -> dict[str, CheckResult]:
    """FTS5 `integrity-check` of both indexes, and `memory_fts` compared with its table."""
    results: dict[str, CheckResult] = {}
    wanted = {"chunk_index": "chunks_fts", "memory_index": "memory_fts"}
    for name, fts in wanted.items():
        if fts not in tables:
            reason = "the store has no memory_fts table yet (upgrade it)"
            results[name] = CheckResult(name, "skipped", (reason,))
    todo = {name: fts for name, fts in wanted.items() if name not in results}
    if not todo:
        return results
    found = {name: _Findings() for name in todo}
    try:
        with store.probe() as conn:
            for name, fts in todo.items():
                # rank=1: also compare an external-content index with its content table.
                statement = f"INSERT INTO {fts} ({fts}, rank) VALUES ('integrity-check', 1)"
                try:
                    with conn.begin_nested():
                        conn.exec_driver_sql(statement)
                except DBAPIError as exc:
                    error = translate(exc, store.location)
                    if isinstance(error, StoreIOError):
                        raise error from exc
                    found[name].add(f"{fts} does not match its table: {_first_line(exc)}")
    except StoreIOError as exc:
        skipped = f"FTS5 integrity-check needs a writable store ({exc.message})"
        for name in todo:
            results[name] = CheckResult(name, "skipped", (skipped,))
        return results
    if "memory_index" in todo:
        try:
            with store.read() as conn:
                _compare_memory_fts(conn, found["memory_index"])
        except NotAStore:
            found["memory_index"].add("memory_fts cannot be read; rebuild it")
    if "chunk_index" in todo and "chunk_search_text" in tables:
        with store.read() as conn:
            for problem in searchindex.differences(conn):
                found["chunk_index"].add(problem)
    for name in todo:
        results[name] = found[name].result(name)
    return results


def _compare_memory_fts(conn: Connection, found: _Findings) -> None:
    """A `memory_fts` row per record, at the rowid the repository derives, with its content."""
    raw = conn.connection.dbapi_connection
    assert isinstance(raw, sqlite3.Connection)
    raw.create_function(_ROWID_FUNCTION, 1, memory_fts.fts_rowid, deterministic=True)
    missing = conn.exec_driver_sql(
        f"SELECT r.id, f.rowid IS NULL FROM memory_records AS r "
        f"LEFT JOIN memory_fts AS f ON f.rowid = {_ROWID_FUNCTION}(r.id) "
        "WHERE f.rowid IS NULL OR f.record_id IS NOT r.id OR f.content IS NOT r.content"
    )
    for record_id, absent in missing:
        what = "has no search row" if absent else "has a search row that differs from it"
        found.add(f"{record_id} {what}")
    extra = conn.exec_driver_sql(
        f"SELECT f.rowid, f.record_id FROM memory_fts AS f "
        f"LEFT JOIN memory_records AS r ON r.id = f.record_id "
        f"WHERE r.id IS NULL OR {_ROWID_FUNCTION}(r.id) IS NOT f.rowid"
    )
    for rowid, record_id in extra:
        found.add(f"search row {rowid} ({record_id!r}) belongs to no record")


def _word_index(store: Store, revision: str | None) -> CheckResult:
    """The derived word index beside the store against the records (`lantern.indexes.words`)."""
    from lantern.indexes import words

    if not _applied(revision, migrations.HEAD):
        return CheckResult("word_index", "skipped", ("the store needs an upgrade first",))
    problems = words.verify(store)
    if problems is None:
        reason = "no word index beside this store: its searches run in the database"
        return CheckResult("word_index", "skipped", (reason,))
    found = _Findings()
    for problem in problems:
        found.add(problem)
    return found.result("word_index")


def _vector_index(store: Store, revision: str | None) -> CheckResult:
    """The vector indexes beside the store against the vectors (`lantern.indexes.vectors`)."""
    from lantern.indexes import vectors

    if not _applied(revision, migrations.HEAD):
        return CheckResult("vector_index", "skipped", ("the store needs an upgrade first",))
    if vectors.directory_of(store, looking=True) is None or not any(
        found["built"] for found in vectors.status(store)
    ):
        reason = "no vector index beside this store: semantic searches read the vectors"
        return CheckResult("vector_index", "skipped", (reason,))
    found = _Findings()
    for problem in vectors.check(store):
        found.add(problem)
    return found.result("vector_index")


def _first_line(exc: DBAPIError) -> str:
    detail = str(exc.orig if exc.orig is not None else exc).strip()
    return detail.splitlines()[0] if detail else type(exc).__name__
