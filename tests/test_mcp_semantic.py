"""Semantic search through the real MCP server and the SDK's own stdio client: the modes, the
search summary, `lantern_memory_similar`, and the scope fence holding in every mode.

The store's default provider is `hashing` (`lantern db settings --default-model`), so the
server needs no model and no environment variable; one unrestricted and one scoped server per
engine serve the module.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from lantern.api import Lantern
from tests.mcp_helpers import McpClient, module_store, running, server_parameters, texts

HASHING = "lantern-hashing-v1-256"


@dataclass(frozen=True)
class World:
    ids: dict[str, str]


@pytest.fixture(scope="module", params=["sqlite", "postgres"])
def store(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[str]:
    yield from module_store(request, tmp_path_factory.mktemp("mcp-semantic"))


@pytest.fixture(scope="module")
def world(store: str) -> World:
    with Lantern.open(store) as lt:
        lt.set_embedding_settings(default_model="hashing")
        ids = {
            name: lt.memory.add(kind="fact", scope=scope, content=content).id
            for name, scope, content in [
                ("home", "user:rosa", "Rosa lives in Campo de Ourique, Lisbon."),
                ("tea", "user:rosa", "Rosa drinks green tea in the morning."),
                ("secret", "ops:prod", "The production deploy key lives in the vault."),
                ("deploy", "ops:prod", "Deploy with scripts/deploy.sh on weekdays."),
            ]
        }
        lt.evidence.ingest_text("log:ci", "ERROR exit code 137 in the dispatch worker")
        summary = lt.embed()
        assert summary.model == HASHING
        lt.memory.add(kind="fact", scope="user:rosa", content="Rosa lives near a tram stop.")
    return World(ids)


@pytest.fixture(scope="module")
def server(
    store: str, world: World, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[McpClient]:
    home = tmp_path_factory.mktemp("home")
    with running(server_parameters(store, home=home)) as client:
        yield client


@pytest.fixture(scope="module")
def fenced(
    store: str, world: World, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[McpClient]:
    home = tmp_path_factory.mktemp("fenced-home")
    with running(server_parameters(store, "--scope", "user:*", "--read-only", home=home)) as client:
        yield client


def _contents(result: dict[str, Any]) -> list[str]:
    return [record["content"] for record in result["records"]]


def test_the_tools_tell_an_agent_when_to_use_which_mode(server: McpClient) -> None:
    tools = server.tools()
    for name in ("lantern_search", "lantern_memory_search"):
        schema = tools[name].input_schema
        assert schema["properties"]["mode"]["enum"] == ["keyword", "any", "semantic", "hybrid"]
        assert "model" in schema["properties"]
        description = tools[name].description or ""
        assert "leave mode out" in description and "mode keyword" in description
    similar = tools["lantern_memory_similar"]
    assert similar.annotations is not None and similar.annotations.read_only_hint is True
    assert similar.input_schema["required"] == ["id"]


def test_modes_through_the_server(server: McpClient, world: World) -> None:
    found = server.ok("lantern_memory_search", {"query": "where does Rosa live"})
    assert found["search"] == {"mode": "hybrid", "model": HASHING, "without_vector": 1}
    assert found["records"][0]["id"] == world.ids["home"]
    assert found["records"][0]["mode"] == "hybrid"
    result = server.call("lantern_memory_search", {"query": "Rosa", "mode": "semantic"})
    assert texts(result)[1] == (
        f"1 matching record has no vector of {HASHING}; semantic search could not compare "
        "them (lantern embed computes them)"
    )
    hits = server.ok("lantern_search", {"query": "exit code 137", "mode": "semantic"})
    assert hits["search"] == {"mode": "semantic", "model": HASHING, "without_vector": 0}
    assert hits["hits"][0]["semantic_rank"] == 1 and hits["hits"][0]["keyword_rank"] is None
    keyword = server.ok("lantern_memory_search", {"query": "Rosa tram", "mode": "keyword"})
    assert keyword["search"] == {"mode": "keyword", "model": None, "without_vector": 0}
    assert server.error("lantern_search", {"query": "x", "model": "bert"}).startswith(
        "unknown embedding provider 'bert'; available: "
    )


def test_similar_records_through_the_server(server: McpClient, world: World) -> None:
    found = server.ok("lantern_memory_similar", {"id": world.ids["home"], "limit": 2})
    assert len(found["records"]) == 2 and found["next_cursor"] is None
    assert world.ids["home"] not in [record["id"] for record in found["records"]]
    assert all(record["mode"] == "semantic" for record in found["records"])
    assert found["search"]["model"] == HASHING


def test_the_scope_fence_holds_in_semantic_search(fenced: McpClient, world: World) -> None:
    for mode in ("semantic", "hybrid", "any"):
        found = fenced.ok("lantern_memory_search", {"query": "deploy key vault Rosa", "mode": mode})
        assert found["records"], mode
        assert {record["scope"] for record in found["records"]} == {"user:rosa"}, mode
    every = fenced.ok("lantern_memory_search", {"query": "production deploy", "limit": 100})
    assert every["search"]["without_vector"] == 1  # the one inside the fence, not the others
    assert "vault" not in " ".join(_contents(every))
    similar = fenced.ok("lantern_memory_similar", {"id": world.ids["home"], "limit": 100})
    assert {record["scope"] for record in similar["records"]} == {"user:rosa"}
    refused = fenced.error("lantern_memory_similar", {"id": world.ids["secret"]})
    assert refused == f"no memory record with id {world.ids['secret']!r}"
    assert "lantern_memory_add" not in fenced.tools()


def test_the_relevance_floor_through_the_server(server: McpClient, world: World) -> None:
    tools = server.tools()
    for name in ("lantern_search", "lantern_memory_search"):
        properties = tools[name].input_schema["properties"]
        assert properties["min_similarity"]["type"] == "number"
        assert properties["floor"]["default"] is True
    question = {"query": "what does Rosa drink?", "mode": "semantic"}
    everything = server.ok("lantern_memory_search", question)
    similarities = [record["similarity"] for record in everything["records"]]
    assert len(similarities) == 4  # the hashing model has no default floor
    floor = (similarities[0] + similarities[1]) / 2
    floored = server.ok("lantern_memory_search", {**question, "min_similarity": floor})
    assert [record["id"] for record in floored["records"]] == [everything["records"][0]["id"]]
    chunks = server.ok("lantern_search", {"query": "exit code", "mode": "semantic"})
    assert len(chunks["hits"]) == 1
    assert server.ok("lantern_search", {"query": "exit code", "min_similarity": 1.0})["hits"]
    assert (
        server.error("lantern_memory_search", {**question, "min_similarity": 0.5, "floor": False})
        == 'min_similarity cannot be given with "floor": false'
    )
