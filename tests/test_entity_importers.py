"""Importers from other memory systems: the MCP reference memory server's memory.jsonl (and
its export back) and mem0's get_all(), on both engines.

`data/mcp-memory/memory.jsonl` was written by @modelcontextprotocol/server-memory 2026.8.31
itself (create_entities, create_relations, add_observations, delete_observations over MCP);
`data/mem0/get_all.json` has the shape mem0's Memory.get_all() returns.
"""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest

from lantern.api import Lantern
from lantern.errors import InvalidInput
from tests.helpers import REPO_ROOT

DATA = REPO_ROOT / "tests" / "data"
GRAPH = (DATA / "mcp-memory" / "memory.jsonl").read_bytes()
MEM0 = (DATA / "mem0" / "get_all.json").read_bytes()


def _export(lt: Lantern, **options: Any) -> bytes:
    out = io.BytesIO()
    lt.export_mcp_memory(out, **options)
    return out.getvalue()


def _everything(lt: Lantern) -> list[Any]:
    records = lt.memory.list(status="all", include_expired=True, limit=1000)
    return [(r.to_json(), lt.memory.history(r.id)) for r in records]


def test_the_reference_servers_file_round_trips_byte_for_byte(lt: Lantern) -> None:
    report = lt.import_mcp_memory(io.BytesIO(GRAPH), scope="user:ada")
    assert report.to_json() == {
        "format": "mcp-memory",
        "dry_run": False,
        "read": {"entities": 5, "observations": 8, "relations": 4},
        "records": {"added": 17, "present": 0, "without_vector": 17},
        "ignored": {},
        "added": {"memory": 17},
        "present": {"memory": 0},
        "skipped": {"memory": 0},
    }
    assert _export(lt) == GRAPH
    assert _export(lt, scope="user:*") == GRAPH
    assert _export(lt, scope="other") == b""
    # Searchable and listable like any memory, by entity too.
    found = lt.memory.search("London", scope="user:ada")
    assert "Ada_Lovelace: Lives in London" in [m.record.content for m in found]
    ada = lt.entity_show("person:Ada_Lovelace")
    assert sorted(r.content for r in ada.memories) == [
        "Ada_Lovelace corresponded with Charles_Babbage",
        "Ada_Lovelace is a person",
        "Ada_Lovelace lives_in London",
        "Ada_Lovelace wrote notes on Analytical Engine",
        "Ada_Lovelace: Lives in London",
        "Ada_Lovelace: Wrote the first published algorithm",
    ]
    kinds = {e.kind for e in lt.entities.list()}
    assert kinds == {"person", "machine", "place", "software_project"}
    # Again: nothing changes.
    before = _everything(lt)
    again = lt.import_mcp_memory(io.BytesIO(GRAPH), scope="user:ada")
    assert (again.added, again.present) == (0, 17)
    assert _everything(lt) == before


@pytest.mark.parametrize("ending", [b"", b"\n"], ids=["as-the-server-writes", "newline"])
def test_the_end_of_the_file_round_trips(lt: Lantern, ending: bytes) -> None:
    assert not GRAPH.endswith(b"\n")  # as the reference server writes it
    lt.import_mcp_memory(io.BytesIO(GRAPH + ending), scope="user:ada")
    assert _export(lt) == GRAPH + ending
    # Only the record of the last line says how the file ended.
    marked = [r for r in lt.memory.list(limit=100) if "final_newline" in r.source_refs[0]]
    assert [r.content for r in marked] == (
        ["Ada_Lovelace corresponded with Charles_Babbage"] if ending else []
    )


def test_a_graph_without_relations_ends_as_its_last_entity_did(lt: Lantern) -> None:
    graph = GRAPH.split(b'\n{"type":"relation"')[0] + b"\n"
    lt.import_mcp_memory(io.BytesIO(graph))
    assert _export(lt) == graph


def test_what_a_caller_adds_is_exported_with_the_graph(lt: Lantern) -> None:
    lt.import_mcp_memory(io.BytesIO(GRAPH))
    lt.memory.add(
        kind="fact", content="Ada_Lovelace: Was born in 1815", entities=["person:Ada_Lovelace"]
    )
    lt.memory.add(kind="preference", content="Likes tea", entities=["person:Grace"])
    graph = [json.loads(line) for line in _export(lt).decode().split("\n")]
    ada = next(item for item in graph if item.get("name") == "Ada_Lovelace")
    assert ada["observations"][-1] == "Was born in 1815"
    assert {
        "type": "entity",
        "name": "Grace",
        "entityType": "person",
        "observations": ["Likes tea"],
    } in graph


def test_dry_run_says_what_would_be_written_and_writes_nothing(lt: Lantern) -> None:
    dry = lt.import_mcp_memory(io.BytesIO(GRAPH), dry_run=True)
    assert (dry.dry_run, dry.added, dry.present) == (True, 17, 0)
    assert lt.memory.list() == [] and lt.entities.list() == []


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            '{"type":"entity","name":"A","entityType":"x","observations":[]}\nnot json',
            "line 2: not a JSON object",
        ),
        ('{"type":"entity","name":"A","entityType":"x"}', "line 1: observations must be a list"),
        (
            '{"type":"entity","name":"A","entityType":"x","observations":[1]}',
            "line 1: observations must be",
        ),
        (
            '{"type":"relation","from":"A","to":"B"}',
            "line 1: relationType must be a non-empty string",
        ),
        ('{"type":"thing"}', 'line 1: type must be "entity" or "relation"'),
        (
            '{"type":"entity","name":"A","entityType":"x","observations":[]}\n'
            '{"type":"entity","name":"A","entityType":"y","observations":[]}',
            "line 2: entity 'A' appears twice (first on line 1)",
        ),
        (
            '{"type":"entity","name":"Home","entityType":"url","observations":[]}',
            "line 1: url:Home is not a URL",
        ),
        (
            '{"type":"entity","name":"A","entityType":"x","observations":["'
            + "w" * 100_001
            + '"]}',
            "line 1: content is too long",
        ),
    ],
)
def test_a_bad_line_is_named_and_changes_nothing(lt: Lantern, text: str, message: str) -> None:
    good = b'{"type":"entity","name":"Z","entityType":"x","observations":["kept"]}\n'
    with pytest.raises(InvalidInput) as caught:
        lt.import_mcp_memory(io.BytesIO(good + text.encode()))
    shifted = (
        message.replace("line 2", "line 3")
        .replace("line 1", "line 2")
        .replace("on line 2)", "on line 2)")
    )
    assert shifted.split(" (first")[0] in caught.value.message
    assert lt.memory.list() == [] and lt.entities.list() == []


def test_mem0_memories_land_in_their_scopes_with_everything_mem0_knew(lt: Lantern) -> None:
    report = lt.import_mem0(io.BytesIO(MEM0))
    assert report.to_json() == {
        "format": "mem0",
        "dry_run": False,
        "read": {"memories": 5},
        "records": {"added": 5, "present": 0, "without_vector": 5},
        "ignored": {"relations": 1},
        "added": {"memory": 5},
        "present": {"memory": 0},
        "skipped": {"memory": 0},
    }
    records = {r.content: r for r in lt.memory.list(limit=100)}
    assert {(r.scope, r.kind) for r in records.values()} == {
        ("user:alex", "fact"),
        ("user:alex", "preference"),
        ("agent:travel-assistant", "task_state"),
        ("run:trip-2025-05", "fact"),
    }
    nuts = records["Is a vegetarian and allergic to nuts"]
    assert nuts.source_refs[0] == {
        "id": "7f21c9d4-83e5-4b6a-a1f0-5c2d9e8b7a63",
        "hash": "9e8d7c6b5a4f3e2d1c0b9a8f7e6d5c4b",
        "role": "user",
        "type": "mem0",
        "user_id": "alex",
        "actor_id": "alex",
        "metadata": {"source": "onboarding chat", "category": "food"},
        "created_at": "2025-03-02T10:15:22.493117-08:00",
        "updated_at": "2025-04-11T08:02:51.100457-07:00",
    }
    assert [r.id for r in lt.memory.list(cites="mem0:7f21c9d4-83e5-4b6a-a1f0-5c2d9e8b7a63")] == [
        nuts.id
    ]
    before = _everything(lt)
    assert lt.import_mem0(io.BytesIO(MEM0)).present == 5
    assert _everything(lt) == before


def test_mem0_as_a_bare_list_and_its_errors(lt: Lantern) -> None:
    listed = json.dumps(json.loads(MEM0)["results"][:2], indent=1).encode()
    assert lt.import_mem0(io.BytesIO(listed), dry_run=True).added == 2
    assert lt.memory.list() == []
    bad = b'{"results": [\n  {"id": "a", "memory": "fine"},\n  {"id": "b", "memory": ""}\n]}'
    with pytest.raises(InvalidInput, match=r"^line 3: memory b: memory must be non-empty text$"):
        lt.import_mem0(io.BytesIO(bad))
    with pytest.raises(InvalidInput, match=r"^line 2: not valid JSON"):
        lt.import_mem0(io.BytesIO(b'{"results": [\n}'))
    with pytest.raises(InvalidInput, match="not a mem0 export"):
        lt.import_mem0(io.BytesIO(b'{"memories": []}'))
    assert lt.memory.list() == []


def test_the_cli_imports_and_exports(run_cli: Any, run_lantern: Any, tmp_path: Path) -> None:
    graph = tmp_path / "memory.jsonl"
    graph.write_bytes(GRAPH)
    dry = run_cli("import", "--from", "mcp-memory", str(graph), "--dry-run", "--json")
    assert dry.exit_code == 0, dry.output  # a preview, on a store that does not exist yet
    assert json.loads(dry.stdout)["records"]["added"] == 17
    done = run_lantern("import", "--from", "mcp-memory", str(graph), "--scope", "user:ada")
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("read 5 entities, 8 observations, 4 relations: added 17")
    exported = run_lantern("export", "--to", "mcp-memory")
    assert exported.stdout.encode() == GRAPH
    usage = run_cli("export", "--to", "mcp-memory", "--memories")
    assert usage.exit_code == 2
    assert run_cli("import", str(graph), "--scope", "user:ada").exit_code == 2
    mem0 = tmp_path / "mem0.json"
    mem0.write_bytes(MEM0)
    imported = json.loads(run_cli("import", "--from", "mem0", str(mem0), "--json").stdout)
    assert imported["records"] == {"added": 5, "present": 0, "without_vector": 5}
    broken = tmp_path / "broken.json"
    broken.write_text('[{"id": "x"}]', encoding="utf-8")
    failed = run_lantern("import", "--from", "mem0", str(broken))
    assert failed.returncode == 1
    assert failed.stderr == "Error: line 1: memory x: memory must be non-empty text\n"


@pytest.mark.parametrize(
    ("categories", "kind"),
    [
        (["user_preferences"], "preference"),
        (["food", "User_Preferences"], "preference"),
        ("user_preferences", "preference"),
        (["milestones"], "observation"),
        (["milestones", "user_preferences"], "preference"),
        (["personal_details"], "fact"),
        (["family", "professional_details", "sports", "travel", "food", "music"], "fact"),
        (["health", "technology", "hobbies", "fashion", "entertainment", "misc"], "fact"),
        (["a_custom_category"], "fact"),
        ([], "fact"),
    ],
)
def test_mem0_categories_choose_the_kind(lt: Lantern, categories: Any, kind: str) -> None:
    memory = {"id": "m-1", "memory": "Likes green tea", "user_id": "alex", "categories": categories}
    lt.import_mem0(io.BytesIO(json.dumps({"results": [memory]}).encode()))
    [stored] = lt.memory.list()
    assert stored.kind == kind
    assert stored.source_refs[0]["categories"] == categories


def test_mem0_categories_in_metadata_and_procedural_memories(lt: Lantern) -> None:
    memories = [
        {"id": "a", "memory": "Likes trains", "metadata": {"categories": ["user_preferences"]}},
        {
            "id": "b",
            "memory": "Book through the portal",
            "categories": ["user_preferences"],
            "metadata": {"memory_type": "procedural_memory"},
        },
    ]
    lt.import_mem0(io.BytesIO(json.dumps(memories).encode()))
    kinds = {r.content: r.kind for r in lt.memory.list()}
    assert kinds == {"Likes trains": "preference", "Book through the portal": "task_state"}
