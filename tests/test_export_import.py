"""Export and import: the documented JSON Lines format, byte-identical round trips, idempotence,
all-or-nothing imports, and what a bad file says."""

from __future__ import annotations

import base64
import io
import json
import struct
from pathlib import Path
from typing import Any

import pytest

from lantern.api import Lantern
from lantern.entities.extraction import EXTRACTOR_VERSION
from lantern.errors import InvalidInput
from lantern.store.ids import memory_id
from tests.helpers import CliRun, Clock, ProcessRun, lantern_process
from tests.legacy_stores import FTS_PROBE_QUERIES, build_legacy_store, fts_answers
from tests.memory_helpers import add_entity_links, add_source

VECTOR = struct.pack("<4f", -0.0, 1e-45, 3.4028234663852886e38, 0.1)


@pytest.fixture
def other_url(store_url: str, tmp_path: Path, request: pytest.FixtureRequest) -> str:
    """A second, empty store on the same engine."""
    if "://" in store_url:
        url: str = request.getfixturevalue("postgres_url")
        return url
    return str(tmp_path / "other" / "lantern.db")


def _export(lt: Lantern, **options: Any) -> bytes:
    out = io.BytesIO()
    lt.export_jsonl(out, **options)
    return out.getvalue()


def _import(lt: Lantern, data: bytes) -> dict[str, Any]:
    report: dict[str, Any] = lt.import_jsonl(io.BytesIO(data)).to_json()
    return report


def _successor_sorting_first(lt: Lantern, old_id: str) -> str:
    """Supersede until the new id sorts before the old one, so the import meets it first."""
    n = 0
    while True:
        candidate = memory_id("global", "fact", f"replacement {n}")
        if candidate < old_id:
            return lt.memory.supersede(old_id, content=f"replacement {n}").id
        n += 1


def _fill(lt: Lantern, clock: Clock) -> tuple[str, str]:
    """Evidence with awkward text and metadata, and memories with every kind of history;
    returns a chunk id and the id of a record citing it."""
    sid, chunk_ids = add_source(
        lt,
        "file:///home/zoë/notes/日本語 résumé.md",
        [
            "Plain chunk about lanterns.",
            "Line\u2028separator, paragraph\u2029separator, tab\there, bell\x07, emoji 🦊.",
            'Quotes "and" backslashes \\ and NEAR( ) AND OR',
        ],
        title=None,
        metadata={"z": 1, "a": {"y": [1, 2.5, None], "b": "ü"}, "long key": True},
    )
    add_source(lt, "file:///b.md", ["second source"], title="B", metadata={})
    add_entity_links(lt, chunk_ids[1], VECTOR)
    # Ingested: links found by extraction, and the scan that found them.
    lt.evidence.ingest_text("note://links", "Ask @zoe about https://example.org/a.")
    clock.advance()
    kept = lt.memory.add(
        kind="preference",
        scope="user:zoë",
        content="Zoë prefers tea\u2028and silence.",
        priority=90,
        confidence=0.3,
        source_refs=[f"chunk:{chunk_ids[0]}", f"source:{sid}", {"type": "url", "id": "x", "n": 1}],
        entities=["person:Zoë", "mention:zoe"],
    )
    clock.advance()
    lt.memory.update(kept.id, urgency=7, expires_at=4102444800)
    old = lt.memory.add(kind="fact", content="v1 of a fact")
    clock.advance()
    _successor_sorting_first(lt, old.id)
    gone = lt.memory.add(kind="fact", scope="secret", content="forget me")
    lt.memory.forget(gone.id)
    archived = lt.memory.add(kind="goal", scope="project:lantern/core", content="ship it")
    lt.memory.archive(archived.id)
    lt.memory.add(kind="task_state", scope="project:lantern", content="old", expires_at=5)
    lt.memory.add(
        kind="observation",
        content="dangles",
        source_refs=["chunk:chk_0000000000000000"],
        allow_dangling=True,
    )
    return chunk_ids[0], kept.id


def test_export_import_export_is_byte_identical(lt: Lantern, other_url: str, clock: Clock) -> None:
    chunk, citing = _fill(lt, clock)
    first = _export(lt)
    with Lantern.open(other_url, clock=clock) as other:
        report = _import(other, first)
        assert report["added"] == {
            "source": 3,
            "chunk": 5,
            # person:Zoë is the legacy row of that kind and name, whose id is its own.
            "entity": 3,
            "chunk_entity": 3,
            "embedding": 1,
            "memory": 6,
            "history": report["added"]["history"],
            "entity_scan": 1,
            "memory_entity": 2,
            "memory_embedding": 0,
        }
        assert set(report["skipped"].values()) == {0}
        assert _export(other) == first
        # Everything derived was rebuilt: search, references, history reads.
        assert [m.record.scope for m in other.memory.search("tea")] == ["user:zoë"]
        assert other.memory.check_refs() == lt.memory.check_refs()
        assert len(other.memory.check_refs()) == 1
        assert [r.id for r in other.memory.citing(f"chunk:{chunk}")] == [citing]
        assert other.memory.list(status="all", include_expired=True, limit=100) == (
            lt.memory.list(status="all", include_expired=True, limit=100)
        )
        # Idempotent: importing again adds nothing and changes nothing.
        again = _import(other, first)
        assert set(again["added"].values()) == {0}
        assert sum(again["skipped"].values()) == sum(report["added"].values())
        assert _export(other) == first


def test_the_format_is_json_lines_in_the_documented_order(lt: Lantern, clock: Clock) -> None:
    _fill(lt, clock)
    data = _export(lt)
    assert data.endswith(b"\n") and b"\r" not in data
    lines = data.split(b"\n")[:-1]
    objects = [json.loads(line) for line in lines]
    assert objects[0] == {"type": "lantern_export", "format": 1}
    assert lines[0] == b'{"type":"lantern_export","format":1}'
    types = [obj["type"] for obj in objects[1:]]
    order = [
        "source",
        "chunk",
        "entity",
        "chunk_entity",
        "embedding",
        "entity_scan",
        "memory",
        "history",
        "memory_entity",
    ]
    assert types == sorted(types, key=order.index)
    assert "\u2028" in data.decode("utf-8")  # kept as is, not escaped
    by_type: dict[str, list[dict[str, Any]]] = {}
    for obj in objects[1:]:
        by_type.setdefault(obj.pop("type"), []).append(obj)
    assert list(by_type["source"][0]) == [
        "id",
        "uri",
        "kind",
        "title",
        "content_hash",
        "metadata",
        "created_at",
        "updated_at",
    ]
    assert [s["id"] for s in by_type["source"]] == sorted(s["id"] for s in by_type["source"])
    meta = next(s["metadata"] for s in by_type["source"] if s["metadata"])
    assert list(meta) == ["a", "z", "long key"] and list(meta["a"]) == ["b", "y"]
    assert list(by_type["chunk"][0]) == [
        "id",
        "source_id",
        "ordinal",
        "text",
        "start_offset",
        "end_offset",
        "metadata",
        "created_at",
    ]
    assert [(c["source_id"], c["ordinal"]) for c in by_type["chunk"]] == sorted(
        (c["source_id"], c["ordinal"]) for c in by_type["chunk"]
    )
    [embedding] = by_type["embedding"]
    assert list(embedding) == ["chunk_id", "model", "dim", "vector"]
    assert base64.b64decode(embedding["vector"]) == VECTOR
    assert {"id": "ent_0000000000000001", "name": "Zoë", "kind": "person"} in by_type["entity"]
    assert [e["id"] for e in by_type["entity"]] == sorted(e["id"] for e in by_type["entity"])
    assert all(list(e) == ["id", "name", "kind"] for e in by_type["entity"])
    [scan] = by_type["entity_scan"]
    assert list(scan) == ["chunk_id", "extractor"] and scan["extractor"] == EXTRACTOR_VERSION
    assert all(list(link) == ["record_id", "entity_id"] for link in by_type["memory_entity"])
    assert len(by_type["memory_entity"]) == 2
    memories = by_type["memory"]
    assert [m["id"] for m in memories] == sorted(m["id"] for m in memories)
    assert memories == [lt.memory.get(m["id"]).to_json() for m in memories]  # as `show --json`
    entries = by_type["history"]
    assert all(list(e) == ["record_id", "event", "at", "changes"] for e in entries)
    assert [e["record_id"] for e in entries] == sorted(e["record_id"] for e in entries)
    forgotten = [e for e in entries if e["event"] == "forgotten"]
    assert len(forgotten) == 1 and "forget me" not in json.dumps(entries)


def test_parts_and_scopes(lt: Lantern, clock: Clock) -> None:
    _fill(lt, clock)
    memories_only = [json.loads(line)["type"] for line in _export(lt, evidence=False).splitlines()]
    # Without the evidence, the entities of the records come just before their links.
    assert list(dict.fromkeys(memories_only)) == [
        "lantern_export",
        "memory",
        "history",
        "entity",
        "memory_entity",
    ]
    evidence_only = [json.loads(line)["type"] for line in _export(lt, memories=False).splitlines()]
    assert set(evidence_only) == {"lantern_export", "source", "chunk", "entity"} | {
        "chunk_entity",
        "embedding",
        "entity_scan",
    }
    scoped = [
        json.loads(line) for line in _export(lt, scope="project:*", evidence=False).splitlines()
    ]
    assert {obj["scope"] for obj in scoped if obj["type"] == "memory"} == {
        "project:lantern",
        "project:lantern/core",
    }
    scoped_ids = {obj["id"] for obj in scoped if obj["type"] == "memory"}
    assert {obj["record_id"] for obj in scoped if obj["type"] == "history"} == scoped_ids


def test_an_import_that_fails_changes_nothing(lt: Lantern, other_url: str, clock: Clock) -> None:
    _fill(lt, clock)
    good = _export(lt)
    with Lantern.open(other_url, clock=clock) as other:
        other.memory.add(kind="fact", content="already here")
        before = _export(other)
        broken = good + b'{"type":"memory","id":"mem_zz"}\n'
        last_line = len(good.splitlines()) + 1
        with pytest.raises(InvalidInput, match=rf"^line {last_line}: memory line"):
            _import(other, broken)
        assert _export(other) == before


def _record_line(**changes: Any) -> str:
    record = {
        "type": "memory",
        "id": "mem_00000000000000aa",
        "kind": "fact",
        "content": "x",
        "scope": "global",
        "priority": 50,
        "urgency": 0,
        "confidence": 1.0,
        "status": "active",
        "created_at": 1,
        "updated_at": 1,
        "expires_at": None,
        "supersedes_id": None,
        "source_refs": [],
    }
    record.update(changes)
    return json.dumps(record)


HEADER = '{"type":"lantern_export","format":1}'


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "the file is empty"),
        ('{"type":"memory"}', "line 1: not a Lantern export"),
        ('{"type":"lantern_export","format":2}', "line 1: export format 2 is not one"),
        ("not json", "line 1: not a JSON object"),
        ("[1, 2]", "line 1: not a JSON object"),
        (f"{HEADER}\n" + '{"type":"planet"}', "line 2: unknown line type 'planet'"),
        (f"{HEADER}\n" + '{"type":"entity","id":"e"}', "line 2: entity line: missing name, kind"),
        (
            f"{HEADER}\n" + '{"type":"entity","id":"e","name":"n","kind":"k","x":1}',
            "unknown x",
        ),
        (
            f"{HEADER}\n" + '{"type":"chunk_entity","chunk_id":1,"entity_id":"e"}',
            "chunk_id has the wrong type",
        ),
        (
            f"{HEADER}\n" + '{"type":"embedding","chunk_id":"c","model":"m","dim":1,"vector":"!"}',
            "line 2: embedding vector is not base64",
        ),
        (f"{HEADER}\n" + _record_line(priority=101), "line 2: priority must be an integer"),
        (f"{HEADER}\n" + _record_line(id="mem_X"), "a memory id is mem_ followed by 16 hex"),
        (f"{HEADER}\n" + _record_line(status="deleted"), "status must be one of"),
        (f"{HEADER}\n" + _record_line(created_at="1"), "created_at has the wrong type"),
        (
            f"{HEADER}\n" + _record_line() + "\n" + _record_line(),
            "line 3: memory mem_00000000000000aa appears twice",
        ),
        (
            f"{HEADER}\n" + _record_line(supersedes_id="mem_00000000000000bb"),
            "line 2: memory mem_00000000000000aa supersedes mem_00000000000000bb, which is neither",
        ),
        (
            f"{HEADER}\n"
            + '{"type":"history","record_id":"mem_00000000000000aa","event":"renamed",'
            + '"at":1,"changes":{}}',
            "line 2: event must be one of",
        ),
    ],
)
def test_bad_files_say_which_line_and_change_nothing(lt: Lantern, text: str, message: str) -> None:
    lt.memory.add(kind="fact", content="present")
    before = _export(lt)
    with pytest.raises(InvalidInput, match=message.replace("(", r"\(")):
        _import(lt, text.encode("utf-8"))
    assert _export(lt) == before


def test_non_utf8_lines_are_refused(lt: Lantern) -> None:
    with pytest.raises(InvalidInput, match="line 2: not UTF-8 text"):
        _import(lt, HEADER.encode() + b"\n\xff\xfe\n")


def test_an_existing_record_is_never_merged(lt: Lantern, other_url: str) -> None:
    record = lt.memory.add(kind="fact", content="shared", priority=10)
    data = _export(lt)
    with Lantern.open(other_url) as other:
        mine = other.memory.add(kind="fact", content="shared", priority=99)
        assert mine.id == record.id
        report = _import(other, data)
        assert report["skipped"]["memory"] == 1 and report["skipped"]["history"] == 1
        assert other.memory.get(record.id) == mine
        assert [e.event for e in other.memory.history(record.id)] == ["created"]
        # A record the store only knows as forgotten is not brought back either.
        other.memory.forget(record.id)
        assert _import(other, data)["added"]["memory"] == 0


def test_records_that_say_the_same_are_imported_and_listed(lt: Lantern, other_url: str) -> None:
    """A store may hold records that say the same (from before schema revision 0006): an
    import keeps them all; the one holding the identity is chosen as the upgrade chose it,
    whatever the order of the lines, and a record the store had keeps holding it."""
    header = '{"type":"lantern_export","format":1}'
    later = memory_id("global", "fact", "x")  # the id the text gives: it holds the identity
    lines = [
        header,
        _record_line(id="mem_00000000000000aa", created_at=1, updated_at=1),
        _record_line(id=later, created_at=5, updated_at=5),
    ]
    data = ("\n".join(lines) + "\n").encode()
    report = _import(lt, data)
    assert report["added"]["memory"] == 2
    assert lt.memory.get_or_add(kind="fact", content="x")[0].id == later
    assert lt.check().warnings == [
        f"duplicate_memories: mem_00000000000000aa says what {later} says (same scope, kind and "
        "content); archive, supersede or forget one of them"
    ]
    exported = _export(lt)
    with Lantern.open(other_url) as other:
        _import(other, exported)
        assert _export(other) == exported  # the round trip gives the same bytes
        # One more that says it, into a store whose own record holds it: imported, listed.
        line = _record_line(id="mem_00000000000000bb")
        assert _import(other, f"{header}\n{line}\n".encode())["added"]["memory"] == 1
        assert other.memory.get_or_add(kind="fact", content="x")[0].id == later
        assert other.check().healthy and len(other.check().warnings) == 2


def test_sqlite_to_postgres_and_back_gives_the_same_bytes(
    tmp_path: Path, postgres_url: str, clock: Clock
) -> None:
    with Lantern.open(tmp_path / "a.db", clock=clock) as sqlite_store:
        _fill(sqlite_store, clock)
        exported = _export(sqlite_store)
    with Lantern.open(postgres_url, clock=clock) as postgres_store:
        _import(postgres_store, exported)
        assert _export(postgres_store) == exported
        from_postgres = _export(postgres_store)
    with Lantern.open(tmp_path / "b.db", clock=clock) as back:
        _import(back, from_postgres)
        assert _export(back) == exported


def test_a_legacy_store_round_trips_with_its_search_index(tmp_path: Path) -> None:
    legacy = tmp_path / "legacy.db"
    build_legacy_store(legacy, 2)
    upgraded = lantern_process("--db", str(legacy), "db", "upgrade", "--no-backup")
    assert upgraded.returncode == 0, upgraded.stderr
    copy = tmp_path / "copy.db"
    with Lantern.open(legacy) as lt:
        lt.memory.add(kind="fact", content="cites the legacy store")
        data = _export(lt)
    with Lantern.open(copy) as fresh:
        _import(fresh, data)
        assert _export(fresh) == data
    assert fts_answers(copy, FTS_PROBE_QUERIES) == fts_answers(legacy, FTS_PROBE_QUERIES)


def test_export_and_import_commands(run_cli: CliRun, tmp_path: Path) -> None:
    run_cli("memory", "add", "--kind", "fact", "--scope", "a:1", "first")
    run_cli("memory", "add", "--kind", "goal", "--scope", "b", "second")
    exported = run_cli("export")
    assert exported.exit_code == 0, exported.output
    assert "exported 2 memory records, 2 history entries" in exported.stderr
    target = tmp_path / "copy.db"
    imported = run_cli("import", "-", "--json", input=exported.stdout, db=str(target))
    assert imported.exit_code == 0, imported.output
    assert json.loads(imported.stdout)["added"]["memory"] == 2
    assert run_cli("export", db=str(target)).stdout_bytes == exported.stdout_bytes
    scoped = run_cli("export", "--memories", "--scope", "a:*")
    assert [json.loads(line)["type"] for line in scoped.stdout.splitlines()] == [
        "lantern_export",
        "memory",
        "history",
    ]
    again = run_cli("import", "-", input=exported.stdout, db=str(target))
    assert "memory:           0 added, 2 already present" in again.stdout
    missing = run_cli("import", str(tmp_path / "nope.jsonl"))
    assert missing.exit_code == 1 and "no such file" in missing.stderr


def test_export_and_import_through_the_real_executable(
    run_lantern: ProcessRun, tmp_path: Path
) -> None:
    run_lantern("memory", "add", "--kind", "fact", "Zoë: ünïcode survives the pipe")
    exported = run_lantern("export")
    assert exported.returncode == 0, exported.stderr
    dump = tmp_path / "store.jsonl"
    dump.write_text(exported.stdout, encoding="utf-8")
    target = tmp_path / "copy.db"
    imported = lantern_process("--db", str(target), "import", str(dump), "--json")
    assert imported.returncode == 0, imported.stderr
    again = lantern_process("--db", str(target), "export")
    assert again.stdout == exported.stdout
    bad = tmp_path / "bad.jsonl"
    bad.write_text(HEADER + "\n{oops\n", encoding="utf-8")
    refused = lantern_process("--db", str(target), "import", str(bad))
    assert refused.returncode == 1
    assert refused.stderr.startswith("Error: line 2: not a JSON object")
    assert len(refused.stderr.strip().splitlines()) == 1


# --- a store that does not exist yet, and the report every import shares ---------------------

DATA = Path(__file__).parent / "data"
LANTERN_FILE = (
    HEADER
    + "\n"
    + json.dumps(
        {
            "type": "memory",
            "id": "mem_00000000000000aa",
            "kind": "fact",
            "content": "x",
            "scope": "global",
            "priority": 50,
            "urgency": 0,
            "confidence": 1.0,
            "status": "active",
            "created_at": 1700000000,
            "updated_at": 1700000000,
            "expires_at": None,
            "supersedes_id": None,
            "source_refs": [],
        }
    )
    + "\n"
).encode()
FORMATS: dict[str, tuple[bytes, bytes, int]] = {
    # format: a good file, a file that fails on its last line, records the good one adds
    "lantern": (LANTERN_FILE, LANTERN_FILE + b'{"type":"memory","id":"mem_zz"}\n', 1),
    "mcp-memory": (
        (DATA / "mcp-memory" / "memory.jsonl").read_bytes(),
        (DATA / "mcp-memory" / "memory.jsonl").read_bytes() + b'\n{"type":"thing"}',
        17,
    ),
    "mem0": (
        (DATA / "mem0" / "get_all.json").read_bytes(),
        b'[{"id": "a", "memory": "fine"}, {"id": "b", "memory": ""}]',
        5,
    ),
}
REPORT_KEYS = ["format", "dry_run", "read", "records", "ignored", "added", "present", "skipped"]


@pytest.mark.parametrize("fmt", list(FORMATS))
def test_a_missing_store_is_previewed_and_never_left_behind(
    run_cli: CliRun, tmp_path: Path, fmt: str
) -> None:
    good, bad, records = FORMATS[fmt]
    (tmp_path / "good").write_bytes(good)
    (tmp_path / "bad").write_bytes(bad)
    store = tmp_path / "new" / "lantern.db"
    db = str(store)
    dry = run_cli("import", "--from", fmt, str(tmp_path / "good"), "--dry-run", "--json", db=db)
    assert dry.exit_code == 0, dry.output
    preview = json.loads(dry.stdout)
    assert (preview["format"], preview["dry_run"]) == (fmt, True)
    assert preview["records"] == {"added": records, "present": 0, "without_vector": records}
    assert not store.parent.exists()  # nothing created, not even the directory
    failed = run_cli("import", "--from", fmt, str(tmp_path / "bad"), db=db)
    assert failed.exit_code == 1 and failed.stderr.startswith("Error: line ")
    assert not store.parent.exists()
    # An empty file is no store either: a failed import leaves it as it was.
    store.parent.mkdir()
    store.touch()
    assert run_cli("import", "--from", fmt, str(tmp_path / "bad"), db=db).exit_code == 1
    assert store.read_bytes() == b""
    done = run_cli("import", "--from", fmt, str(tmp_path / "good"), "--json", db=db)
    assert done.exit_code == 0, done.output
    assert json.loads(done.stdout)["records"]["added"] == records
    assert (store.stat().st_mode & 0o777) == 0o600
    with Lantern.open(store, create=False) as lt:
        assert len(lt.memory.list(limit=100)) == records
    # On the store that now exists, a dry run and a failure change nothing.
    before = store.read_bytes()
    again = run_cli("import", "--from", fmt, str(tmp_path / "good"), "--dry-run", "--json", db=db)
    assert json.loads(again.stdout)["records"] == {
        "added": 0,
        "present": records,
        "without_vector": 0,
    }
    assert run_cli("import", "--from", fmt, str(tmp_path / "bad"), db=db).exit_code == 1
    assert store.read_bytes() == before


@pytest.mark.parametrize("fmt", list(FORMATS))
def test_a_missing_store_through_the_real_executable(tmp_path: Path, fmt: str) -> None:
    good, bad, _records = FORMATS[fmt]
    (tmp_path / "good").write_bytes(good)
    (tmp_path / "bad").write_bytes(bad)
    db = str(tmp_path / "lantern.db")
    dry = lantern_process("--db", db, "import", "--from", fmt, str(tmp_path / "good"), "--dry-run")
    assert dry.returncode == 0, dry.stderr
    assert "would" in dry.stdout and "already present" in dry.stdout
    failed = lantern_process("--db", db, "import", "--from", fmt, str(tmp_path / "bad"))
    assert failed.returncode == 1 and len(failed.stderr.splitlines()) == 1
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bad", "good"]
    done = lantern_process("--db", db, "import", "--from", fmt, str(tmp_path / "good"))
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "lantern.db").exists()


def test_every_import_prints_one_shape(run_cli: CliRun, tmp_path: Path) -> None:
    shapes = {}
    for fmt, (good, _bad, _records) in FORMATS.items():
        (tmp_path / fmt).write_bytes(good)
        report = json.loads(run_cli("import", "--from", fmt, str(tmp_path / fmt), "--json").stdout)
        assert list(report) == REPORT_KEYS
        assert list(report["records"]) == ["added", "present", "without_vector"]
        assert report["present"] == report["skipped"]  # the old word, kept
        assert report["added"]["memory"] == report["records"]["added"]
        assert report["present"]["memory"] == report["records"]["present"]
        shapes[fmt] = report
    lantern = shapes["lantern"]
    assert (
        list(lantern["read"])
        == list(lantern["added"])
        == list(lantern["skipped"])
        == [
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
        ]
    )
    assert lantern["read"]["memory"] == 1 and lantern["ignored"] == {}
    text = run_cli("import", str(tmp_path / "lantern"))
    assert text.stdout == "memory:           0 added, 1 already present\n"


# --- memory records' vectors ------------------------------------------------------------------


def _vector_lines(data: bytes) -> list[dict[str, Any]]:
    lines = [json.loads(line) for line in data.splitlines()]
    return [line for line in lines if line["type"] == "memory_embedding"]


def test_memory_vectors_travel_with_their_records(lt: Lantern, other_url: str) -> None:
    lt.memory.add(kind="preference", content="Ada prefers green tea in the morning")
    lt.memory.add(kind="fact", content="The deploy runs on Fridays")
    lt.embed(memory=True, sources=False, model="hashing")
    data = _export(lt)
    vectors = _vector_lines(data)
    assert [list(v) for v in vectors] == [
        ["type", "record_id", "model", "dim", "text_hash", "vector"]
    ] * 2
    assert [v["record_id"] for v in vectors] == sorted(v["record_id"] for v in vectors)
    assert len(base64.b64decode(vectors[0]["vector"])) == 4 * vectors[0]["dim"]
    with Lantern.open(other_url) as other:
        report = _import(other, data)
        assert report["added"]["memory_embedding"] == 2
        assert report["records"]["without_vector"] == 0
        assert _export(other) == data
        # The copy searches as the original: same mode, same hits, same similarity.
        for store in (lt, other):
            found = store.memory.search("green tea", model="hashing")
            assert found.summary is not None and found.summary.mode == "hybrid"
        original = lt.memory.search("green tea", mode="semantic", model="hashing")
        copied = other.memory.search("green tea", mode="semantic", model="hashing")
        assert [(h.record.id, h.similarity) for h in copied] == [
            (h.record.id, h.similarity) for h in original
        ]
        # A record the store had keeps its own vectors.
        again = _import(other, data)
        assert again["skipped"]["memory_embedding"] == 2


def test_a_stale_or_missing_vector_is_left_out_and_said(
    run_cli: CliRun, tmp_path: Path, store_url: str
) -> None:
    with Lantern.open(store_url) as lt:
        lt.memory.add(kind="fact", content="first")
        lt.memory.add(kind="fact", content="second")
        lt.embed(memory=True, sources=False, model="hashing")
        data = _export(lt)
    lines = data.decode().splitlines(keepends=True)
    stale = [
        json.dumps({**json.loads(line), "text_hash": "0" * 64}, separators=(",", ":")) + "\n"
        if '"memory_embedding"' in line and not any('"memory_embedding"' in x for x in lines[:i])
        else line
        for i, line in enumerate(lines)
    ]
    (tmp_path / "stale.jsonl").write_text("".join(stale), encoding="utf-8")
    target = str(tmp_path / "copy.db")
    result = run_cli("import", str(tmp_path / "stale.jsonl"), "--json", db=target)
    report = json.loads(result.stdout)
    assert report["ignored"] == {"memory_embedding": 1}
    assert report["read"]["memory_embedding"] == 2 and report["added"]["memory_embedding"] == 1
    assert report["records"]["without_vector"] == 1
    assert "left out 1 memory vector computed from another text" in result.stderr
    assert (
        "1 imported memory record has no vector: a search finds it by words only until "
        "`lantern embed --memory` computes the vectors" in result.stderr
    )
    # An export from before vectors were exported still imports, and says what is missing.
    old = "".join(line for line in lines if '"memory_embedding"' not in line)
    (tmp_path / "old.jsonl").write_text(old, encoding="utf-8")
    older = run_cli("import", str(tmp_path / "old.jsonl"), db=str(tmp_path / "old.db"))
    assert older.exit_code == 0, older.output
    assert "2 imported memory records have no vector" in older.stderr


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"vector": "AAAA"}, "memory_embedding vector has 3 bytes; 256 float32 values take 1024"),
        ({"dim": 0}, "dim must be positive"),
        ({"model": " "}, "model must name the model of the vector"),
        ({"record_id": "mem_00000000000000ff"}, "memory mem_00000000000000ff has a vector but"),
    ],
)
def test_a_bad_vector_line_is_named(
    lt: Lantern, other_url: str, change: dict[str, Any], message: str
) -> None:
    lt.memory.add(kind="fact", content="first")
    lt.embed(memory=True, sources=False, model="hashing")
    lines = _export(lt).decode().splitlines()
    number = next(n for n, line in enumerate(lines, 1) if '"memory_embedding"' in line)
    lines[number - 1] = json.dumps({**json.loads(lines[number - 1]), **change})
    with Lantern.open(other_url) as other:
        with pytest.raises(InvalidInput, match=rf"^line {number}: .*{message}"):
            _import(other, ("\n".join(lines) + "\n").encode())
        assert other.memory.list() == []
