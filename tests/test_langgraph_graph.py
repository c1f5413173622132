"""A LangGraph graph with no model, end to end on `LanternStore`: a node writes through the store
LangGraph hands it, the next reads through it, and the CLI then shows what the graph stored.

The sync graph is the manual's own example (docs/langgraph.md), run as written in a process of
its own against the test store; the async graph runs here, through `ainvoke`, so that
LangGraph's async store calls (`aput`, `aget`, `abatch`) carry it.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from typing import Any, TypedDict

from langgraph.graph import END, START, StateGraph
from langgraph.store.base import BaseStore

from lantern.integrations.langgraph import LanternStore
from tests.doc_examples import examples
from tests.helpers import REPO_ROOT, ProcessRun

PAGE = REPO_ROOT / "docs" / "langgraph.md"


def _manual_graph() -> str:
    [example] = [
        example
        for example in examples(PAGE, "docs/langgraph.md")
        if example.language == "python" and "StateGraph" in example.body
    ]
    assert example.skipped is None  # the manual runs it too (tests/test_doc_examples.py)
    return example.body


def _cli_json(run_lantern: ProcessRun, *args: str) -> Any:
    done = run_lantern(*args, "--json")
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_the_manuals_graph_runs_and_the_cli_shows_its_memory(
    store_url: str, run_lantern: ProcessRun
) -> None:
    env = {name: value for name, value in os.environ.items() if not name.startswith("LANTERN_")}
    ran = subprocess.run(
        [sys.executable, "-c", _manual_graph()],
        env={**env, "LANTERN_DB": store_url},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert ran.returncode == 0, ran.stderr
    assert ran.stdout.splitlines() == [
        "Ada prefers short answers.",
        "Ada prefers answers with examples.",
    ]
    [record] = _cli_json(run_lantern, "memory", "list", "--scope", "user:ada/*")
    assert record["scope"] == "user:ada/notes" and record["kind"] == "fact"
    assert json.loads(record["content"]) == {
        "key": "latest",
        "value": {"text": "Ada prefers answers with examples."},
    }
    assert record["source_refs"] == [{"id": "user:ada/notes/latest", "type": "langgraph"}]
    history = _cli_json(run_lantern, "memory", "history", record["id"])
    assert [entry["event"] for entry in history] == ["created", "updated"]
    assert json.loads(history[0]["changes"]["after"]["content"])["value"] == {
        "text": "Ada prefers short answers."
    }
    cited = _cli_json(run_lantern, "memory", "list", "--cites", "langgraph:user:ada/notes/latest")
    assert [found["id"] for found in cited] == [record["id"]]


class Turn(TypedDict):
    user: str
    facts: list[str]
    recalled: list[str]


async def remember(state: Turn, *, store: BaseStore) -> dict[str, Any]:
    for number, fact in enumerate(state["facts"]):
        await store.aput(("user:" + state["user"], "facts"), f"fact-{number}", {"text": fact})
    return {}


async def recall(state: Turn, *, store: BaseStore) -> dict[str, Any]:
    found = await store.asearch(("user:" + state["user"],), query="tea")
    first = await store.aget(("user:" + state["user"], "facts"), "fact-0")
    assert first is not None
    return {"recalled": [first.value["text"], *(item.value["text"] for item in found)]}


def test_an_async_graph_writes_and_reads_through_the_store(
    store_url: str, run_lantern: ProcessRun
) -> None:
    builder = StateGraph(Turn)
    builder.add_node(remember)
    builder.add_node(recall)
    builder.add_edge(START, "remember")
    builder.add_edge("remember", "recall")
    builder.add_edge("recall", END)
    with LanternStore.open(store_url) as store:
        graph = builder.compile(store=store)
        state = asyncio.run(
            graph.ainvoke(
                {"user": "bo", "facts": ["Bo drinks tea.", "Bo cycles to work."], "recalled": []}
            )
        )
    assert state["recalled"] == ["Bo drinks tea.", "Bo drinks tea."]
    records = _cli_json(run_lantern, "memory", "list", "--scope", "user:bo/*")
    assert sorted(json.loads(record["content"])["key"] for record in records) == [
        "fact-0",
        "fact-1",
    ]
    found = _cli_json(run_lantern, "memory", "search", "cycles", "--scope", "user:bo/*")
    assert [json.loads(hit["content"])["value"]["text"] for hit in found] == ["Bo cycles to work."]
