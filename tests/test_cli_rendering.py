"""The human (non-JSON) output of the CLI: values written readably whatever a record holds
(entity lists, read-only mappings, metadata), expired records marked in listings, and counts
that agree with their nouns. On every engine: what a store hands back differs between them
(key order, JSON types), and the text must not."""

from __future__ import annotations

import json
import re
from pathlib import Path
from types import MappingProxyType
from typing import Any

import pytest
from click.testing import Result

from lantern.cli.output import counted, json_text, plural, value_text
from tests.helpers import REPO_ROOT, CliRun

DATA = REPO_ROOT / "tests" / "data"


def _ok(result: Result) -> str:
    assert result.exit_code == 0, result.output
    assert "unexpected" not in result.stderr, result.stderr
    return result.stdout


def _ok_json(result: Result) -> Any:
    return json.loads(_ok(result))


def _lines_of(stdout: str, record_id: str) -> list[str]:
    return [line for line in stdout.splitlines() if record_id in line]


# --- history entries of records with entities --------------------------------------------------


def test_history_and_changes_render_entities_as_names(run_cli: CliRun) -> None:
    record_id = _ok(
        run_cli(
            "memory", "add", "--kind", "fact", "--scope", "project:x",
            "--entity", "person:Ada", "Ada signs.",
        )
    ).strip()  # fmt: skip
    history = _ok(run_cli("memory", "history", record_id))
    assert "created" in history and "entities=['person:Ada']" in history
    other = _ok(run_cli("memory", "add", "--kind", "fact", "--scope", "project:x", "Bob.")).strip()
    _ok(run_cli("entity", "attach", "--memory", other, "person:Bob", "place:Lisbon"))
    changed = _ok(run_cli("memory", "history", other)).splitlines()
    assert len(changed) == 2
    assert changed[1].endswith("updated     entities: [] -> ['person:Bob', 'place:Lisbon']")
    _ok(run_cli("entity", "detach", "--memory", other, "place:Lisbon"))
    changes = _ok(run_cli("memory", "changes"))
    latest = changes.splitlines()[0]
    assert other in latest
    assert latest.endswith("entities: ['person:Bob', 'place:Lisbon'] -> ['person:Bob']")
    assert len(_lines_of(changes, record_id)) == 1


def test_changes_after_an_mcp_memory_import(run_cli: CliRun) -> None:
    imported = _ok_json(
        run_cli(
            "import", "--from", "mcp-memory", str(DATA / "mcp-memory" / "memory.jsonl"), "--json"
        )
    )
    added = imported["records"]["added"]
    changes = _ok(run_cli("memory", "changes", "--limit", "100")).splitlines()
    assert len(changes) == added
    assert all(re.search(r"entities=\['[^']+'", line) for line in changes)
    for record in _ok_json(run_cli("memory", "list", "--json", "--limit", "100")):
        history = _ok(run_cli("memory", "history", record["id"]))
        assert "entities=['" in history


# --- read-only mappings (mem0 metadata) --------------------------------------------------------


def test_mem0_records_with_metadata_render_in_every_human_view(run_cli: CliRun) -> None:
    _ok(run_cli("import", "--from", "mem0", str(DATA / "mem0" / "get_all.json")))
    records = _ok_json(run_cli("memory", "list", "--json", "--scope", "user:*"))
    food = next(r for r in records if r["content"] == "Is a vegetarian and allergic to nuts")
    ref = food["source_refs"][0]
    assert ref["metadata"] == {"category": "food", "source": "onboarding chat"}
    # The reference as the store hands it back (key order is the engine's), as JSON text.
    shown_ref = json.dumps(ref, ensure_ascii=False)
    history = _ok(run_cli("memory", "history", food["id"]))
    assert f"source_refs=[{shown_ref}]" in history
    show = _ok(run_cli("memory", "show", food["id"]))
    assert f"source_refs:   {shown_ref}\n" in show
    changes = _ok(run_cli("memory", "changes", "--limit", "100"))
    assert len(_lines_of(changes, food["id"])) == 1
    for record in records:
        _ok(run_cli("memory", "history", record["id"]))


def test_json_text_writes_read_only_mappings_nested_anywhere() -> None:
    frozen = MappingProxyType(
        {"metadata": MappingProxyType({"tags": ("a", "b")}), "n": None, "ok": True}
    )
    assert json_text(frozen) == '{"metadata": {"tags": ["a", "b"]}, "n": null, "ok": true}'
    assert json.loads(json_text([frozen], indent=2)) == [
        {"metadata": {"tags": ["a", "b"]}, "n": None, "ok": True}
    ]
    with pytest.raises(TypeError, match="not JSON serializable"):
        json_text({"when": object()})


# --- expired records in listings ---------------------------------------------------------------


def test_listing_marks_an_expired_active_record(run_cli: CliRun) -> None:
    def add(content: str, *args: str) -> str:
        return _ok(run_cli("memory", "add", "--kind", "fact", *args, content)).strip()

    expired = add("The CI runner was down.", "--expires-at", "2026-01-01")
    lasting = add("Build with just.", "--expires-at", "2099-01-01")
    archived = add("Old expired news.", "--expires-at", "2026-01-01")
    _ok(run_cli("memory", "archive", archived))

    listed = _ok(run_cli("memory", "list", "--include-expired", "--status", "all"))
    status = {line.split()[0]: line.split()[1] for line in listed.splitlines()}
    assert status == {expired: "expired", lasting: "active", archived: "archived"}
    assert _ok(run_cli("memory", "list")).split()[:2] == [lasting, "active"]
    dry = _ok(run_cli("memory", "expire", "--dry-run"))
    assert dry.split()[:2] == [expired, "expired"]
    # JSON keeps the stored status: the record is active until `memory expire` archives it.
    as_json = _ok_json(run_cli("memory", "list", "--include-expired", "--json"))
    assert {r["id"]: r["status"] for r in as_json} == {expired: "active", lasting: "active"}


# --- metadata of chunks and sources -------------------------------------------------------------


def test_chunk_and_source_metadata_render_as_json_values(run_cli: CliRun, tmp_path: Path) -> None:
    transcript = tmp_path / "chat.jsonl"
    transcript.write_text(
        '{"role": "user", "content": "Deploy on Friday?"}\n'
        '{"role": "assistant", "content": "Not on Fridays."}\n',
        encoding="utf-8",
    )
    metadata = '{"tags": ["ops", "deploy"], "reviewed": false, "note": "", "owner": "Ada L"}'
    _ok(run_cli("ingest", str(transcript), "--metadata", metadata))
    source = _ok_json(run_cli("source", "list", "--json"))[0]
    shown = _ok_json(run_cli("source", "show", source["id"], "--json"))
    chunk = shown["chunks"][0]
    assert chunk["metadata"]["roles"] == ["assistant", "user"]
    assert chunk["metadata"]["last_ts"] is None

    human = _ok(run_cli("chunk", "show", chunk["id"])).splitlines()
    assert "meta.roles: " + '["assistant", "user"]' in human
    assert "meta.last_ts: null" in human
    assert "meta.first_ts: null" in human
    assert not [line for line in human if "None" in line or "['" in line]

    readable = _ok(run_cli("source", "show", source["id"])).splitlines()
    assert '  tags: ["ops", "deploy"]' in readable
    assert "  reviewed: false" in readable
    assert '  note: ""' in readable
    assert "  owner: Ada L" in readable


def test_value_text() -> None:
    assert value_text("plain words") == "plain words"
    assert value_text(" padded") == '" padded"'
    assert value_text("two\nlines") == '"two\\nlines"'
    assert value_text(None) == "null"
    assert value_text(3) == "3"
    assert value_text(MappingProxyType({"k": [1, None]})) == '{"k": [1, null]}'


# --- counts and their nouns ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("count", "noun", "expected"),
    [
        (1, "entity", "1 entity"),
        (7, "entity", "7 entities"),
        (0, "chunk", "0 chunks"),
        (1, "chunk", "1 chunk"),
        (2, "chunk", "2 chunks"),
        (2, "memory", "2 memories"),
        (2, "memory record", "2 memory records"),
        (2, "history entry", "2 history entries"),
        (3, "new entity", "3 new entities"),
        (1, "new entity", "1 new entity"),
    ],
)
def test_counted(count: int, noun: str, expected: str) -> None:
    assert counted(count, noun) == expected
    assert plural(count, noun) == expected.split(" ", 1)[1]


def test_import_summaries_agree_with_their_counts(run_cli: CliRun, tmp_path: Path) -> None:
    graph = tmp_path / "memory.jsonl"
    graph.write_text(
        '{"type":"entity","name":"Ada","entityType":"person","observations":["Signs."]}\n'
        '{"type":"relation","from":"Ada","to":"Ada","relationType":"knows"}\n',
        encoding="utf-8",
    )
    one = run_cli("import", "--from", "mcp-memory", str(graph))
    assert _ok(one) == (
        "read 1 entity, 1 observation, 1 relation: added 3 memory records, 0 already present\n"
    )
    mem0 = tmp_path / "mem0.json"
    mem0.write_text(
        json.dumps(
            {
                "results": [{"id": "m1", "memory": "Likes tea", "user_id": "ada"}],
                "relations": [{"source": "ada", "relationship": "likes", "target": "tea"}],
            }
        ),
        encoding="utf-8",
    )
    result = run_cli("import", "--from", "mem0", str(mem0))
    assert _ok(result) == "read 1 memory: added 1 memory record, 0 already present\n"
    assert result.stderr == (
        "lantern: left out 1 relation (not memories)\n"
        "lantern: 1 imported memory record has no vector: a search finds it by words only until "
        "`lantern embed --memory` computes the vectors\n"
    )
    _ok(run_cli("memory", "add", "--kind", "fact", "--entity", "person:Grace", "Grace codes."))
    listed = _ok(run_cli("entity", "list")).splitlines()
    ada = next(line for line in listed if line.endswith("person:Ada"))
    assert re.search(r" 0 chunks +3 memories +person:Ada$", ada), ada
    grace = next(line for line in listed if line.endswith("person:Grace"))
    assert re.search(r" 0 chunks +1 memory +person:Grace$", grace), grace


def test_stats_counts_agree_with_their_nouns(run_cli: CliRun) -> None:
    _ok(run_cli("memory", "add", "--kind", "fact", "--scope", "project:x", "One fact."))
    stats = _ok(run_cli("memory", "stats")).splitlines()
    assert stats[0] == "records: 1 in 1 scope"
    assert re.fullmatch(r"\d{4}-\d\d-\d\d +1 change: created 1", stats[-1]), stats[-1]
    _ok(run_cli("memory", "add", "--kind", "fact", "--scope", "project:y", "Two facts."))
    stats = _ok(run_cli("memory", "stats")).splitlines()
    assert stats[0] == "records: 2 in 2 scopes"
    assert re.fullmatch(r"\d{4}-\d\d-\d\d +2 changes: created 2", stats[-1]), stats[-1]
