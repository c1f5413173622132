"""The entity tools and filters over the official SDK's stdio client: what they return is what
the CLI prints, every result fits its output schema, and the fences hold (scopes, read-only)."""

from __future__ import annotations

from pathlib import Path

import pytest

from lantern.api import Lantern
from tests.mcp_helpers import cli_json, running, server_parameters


@pytest.fixture
def store(store_url: str) -> str:
    with Lantern.open(store_url) as lt:
        lt.evidence.ingest_text("note://deploy", "Deploy with @ada, see #12.", kind="markdown")
        lt.memory.add(kind="fact", scope="team:a", content="Ada deploys", entities=["person:Ada"])
        lt.memory.add(
            kind="fact", scope="team:b", content="Secret", entities=["person:Ada", "person:Eve"]
        )
    return store_url


def test_entity_tools_match_the_cli_and_their_schemas(store: str, tmp_path: Path) -> None:
    with running(server_parameters(store, home=tmp_path)) as server:
        ok = server.ok  # which checks each result against the tool's output schema

        listed = ok("lantern_entity_list", {"order": "count"})
        assert listed == {"entities": cli_json(store, "entity", "list", "--order", "count")}
        shown = ok("lantern_entity_show", {"entity": "mention:ada"})
        assert shown == cli_json(store, "entity", "show", "mention:ada")
        record = ok(
            "lantern_memory_add",
            {"kind": "goal", "content": "Ship", "entities": ["project:lantern"]},
        )
        assert ok("lantern_memory_show", {"id": record["id"]})["entities"][0]["name"] == "lantern"
        attached = ok("lantern_entity_attach", {"entities": ["person:Ada"], "memory": record["id"]})
        assert attached["changes"][0]["changed"] is True
        found = ok("lantern_memory_list", {"entity": ["person:Ada"], "scope": ["global"]})
        assert [r["id"] for r in found["records"]] == [record["id"]]
        hits = ok("lantern_search", {"query": "deploy", "entity": ["issue:#12"]})
        assert [h["uri"] for h in hits["hits"]] == ["note://deploy"]
        chunk = hits["hits"][0]["chunk_id"]
        assert (
            ok("lantern_entity_attach", {"entities": ["place:Lisbon"], "chunk": chunk})["changes"][
                0
            ]["chunk_id"]
            == chunk
        )
        assert ok("lantern_entity_detach", {"entities": ["place:Lisbon"], "chunk": chunk})[
            "changes"
        ][0]["changed"]
        assert "give exactly one of 'chunk' and 'memory'" in server.error(
            "lantern_entity_attach", {"entities": ["place:Lisbon"]}
        )
        assert "an entity is KIND:NAME" in server.error(
            "lantern_entity_show", {"entity": "nothing"}
        )


def test_scoped_and_read_only_clients(store: str, tmp_path: Path) -> None:
    with running(server_parameters(store, "--scope", "team:a", home=tmp_path)) as scoped:
        names = [e["name"] for e in scoped.ok("lantern_entity_list", {})["entities"]]
        # Eve is only in team:b; a confined client reads names in lowercase.
        assert sorted(names) == ["#12", "ada", "ada"]
        ada = scoped.ok("lantern_entity_show", {"entity": "person:Ada"})
        assert [r["content"] for r in ada["memories"]] == ["Ada deploys"] and ada[
            "memory_count"
        ] == 1
        assert "no entity person:Eve" in scoped.error(
            "lantern_entity_show", {"entity": "person:Eve"}
        )
    with running(server_parameters(store, "--read-only", home=tmp_path)) as reader:
        tools = set(reader.tools())
        assert {"lantern_entity_list", "lantern_entity_show"} <= tools
        assert not {"lantern_entity_attach", "lantern_entity_detach"} & tools
