"""A confined caller learns nothing of what lies outside its scopes.

Two stores are built on the same clock: one, and the same one plus a few hundred records
outside the fence that share the inside records' content (so the ids they would have, were
they inside), their entities and the evidence they cite, with supersede chains, archives,
expiries and forgets of their own. A caller confined to `user:alice*` then reads each store
through every surface that confines (the Python API's confined handle, `lantern mcp --scope`
over stdio, an HTTP token with scopes, `lantern ui --scope`) and through the CLI's `--scope`
filters, and every read, searches in every mode included, must answer byte for byte the same
on both.
The ids of the records outside never appear, and the links across the fence read as the
placeholder on both.
"""

from __future__ import annotations

import dataclasses
import json
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from click.testing import CliRunner
from mcp import MCPError, types
from starlette.testclient import TestClient

from lantern.api import Lantern
from lantern.cli import cli
from lantern.errors import LanternError
from lantern.mcpserver import tokens
from lantern.memory.records import OUTSIDE_SCOPES
from lantern.ui import overview_pages
from lantern.ui.app import build_app
from lantern.ui.views import Site
from tests.helpers import Clock
from tests.mcp_helpers import (
    McpClient,
    http_client,
    http_server,
    module_store,
    running,
    server_parameters,
)

FENCE = ["user:alice*"]
LOOK_ALIKES = ["user:alice2", "user:alicebob", "user:alice%", "user:alice.b", "user:alic"]
OUTSIDE = [*LOOK_ALIKES, "user:bob", "global"]
EXTRA_RECORDS = 300
TOKEN = "confinement-view-token"


@dataclass(frozen=True)
class Seeded:
    """What both stores hold inside the fence, and the ids only the larger one holds."""

    visible: list[str]
    forgotten_inside: str
    forgotten_outside: str
    source: str
    chunk: str
    entities: list[str]
    outside: list[str]
    """The records outside the fence both stores hold (linked to records inside)."""
    extra: list[str]


def _seed(lt: Lantern, clock: Clock, *, interleaved: list[str] | None = None) -> Seeded:
    """The records both stores hold: inside the fence, with links that cross it both ways; with
    `interleaved`, a record outside (its id added there) after each one added inside, so that
    the history entries inside are numbered differently in the log of the whole store."""
    now = clock.now
    ingested = lt.evidence.ingest_text(
        "tool://notes/alice", "Alice Smith deploys on Fridays. The staging password is hunter2pass."
    )
    source = ingested.source.id
    chunk = lt.evidence.get_source(source).chunks[0].id  # type: ignore[index]

    def add(scope: str, content: str, **fields: Any) -> str:
        clock.advance()
        added = lt.memory.add(
            kind=fields.pop("kind", "fact"), scope=scope, content=content, **fields
        ).id
        if interleaved is not None:
            interleaved.append(
                lt.memory.add(kind="fact", scope="global", content=f"Between {content}").id
            )
        return added

    cites = {"source_refs": [f"chunk:{chunk}"]}
    first = add("user:alice", "Alice deploys on Fridays.", entities=["person:Alice Smith"], **cites)
    notes = add("user:alice/notes", "Alice prefers short answers.", kind="preference", priority=80)
    goal = add("user:alice", "Ship the manual.", kind="goal", expires_at=now + 3 * 86_400)
    add("user:alice:work", "The staging password is hunter2pass.", entities=["project:lantern"])
    lt.memory.attach_entities(notes, ["project:lantern"])
    moved_out = add("user:alice", "Alice lives in Leeds.")
    clock.advance()
    successor = lt.memory.supersede(
        moved_out, scope="user:bob", content="Bob keeps Alice's old address."
    )
    came_from = add("user:bob", "Bob's note about the deploy.")
    clock.advance()
    moved_in = lt.memory.supersede(came_from, scope="user:alice", content="Alice took Bob's note.")
    archived = add("user:alice", "Alice used to deploy on Mondays.")
    clock.advance()
    lt.memory.archive(archived)
    gone_inside = add("user:alice", "Forgotten inside.")
    gone_outside = add("user:bob", "Forgotten outside.")
    clock.advance()
    lt.memory.forget(gone_inside)
    lt.memory.forget(gone_outside)
    visible = [first, notes, goal, moved_out, moved_in.id, archived]
    visible += [
        r.id for r in lt.memory.list(scope=FENCE, status="all", limit=100) if r.id not in visible
    ]
    return Seeded(
        visible,
        gone_inside,
        gone_outside,
        source,
        chunk,
        ["person:Alice Smith", "project:lantern"],
        [successor.id, came_from, gone_outside],
        [],
    )


def _extra(lt: Lantern, clock: Clock, seeded: Seeded) -> list[str]:
    """Records outside the fence that say what the inside ones say, name the same entities and
    cite the same chunk, with lives of their own."""
    with Lantern.open(lt.location.url, scopes=FENCE) as confined:
        contents = [r.content for r in confined.memory.list(status="all", limit=100)]
    ids: list[str] = []
    for n in range(EXTRA_RECORDS):
        clock.advance()
        scope = OUTSIDE[n % len(OUTSIDE)]
        record = lt.memory.add(
            kind="fact",
            scope=scope,
            content=f"{contents[n % len(contents)]} hunter2pass {n // len(contents)}"
            if n >= len(contents) * len(OUTSIDE)
            else contents[n % len(contents)],
            source_refs=[f"chunk:{seeded.chunk}"],
            entities=[*seeded.entities, f"person:Mallory {n % 7}"],
            expires_at=clock.now + 86_400 if n % 11 == 0 else None,
            priority=n % 101,
        )
        ids.append(record.id)
        if n % 5 == 1:
            ids.append(lt.memory.supersede(record.id, content=f"Replaced outside {n}.").id)
        elif n % 5 == 2:
            lt.memory.archive(record.id)
        elif n % 5 == 3:
            lt.memory.forget(record.id)
    return ids


@pytest.fixture(scope="module", params=["sqlite", "postgres"])
def stores(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[str, str, Seeded]]:
    """The two stores, on the same clock: the second one with the records outside."""
    tmp = tmp_path_factory.mktemp("confinement")
    start = int(time.time()) - 3_600
    with ExitStack() as stack:
        urls = []
        for name in ("plain", "more"):
            (tmp / name).mkdir()
            urls.append(stack.enter_context(contextmanager(module_store)(request, tmp / name)))
        plain, more = urls
        for url in urls:
            clock = Clock(start)
            with Lantern.open(url, clock=clock) as lt:
                if url == more:
                    between: list[str] = []
                    seeded = _seed(lt, clock, interleaved=between)
                    extra = [*between, *_extra(lt, clock, seeded)]
                    seeded = dataclasses.replace(seeded, extra=extra)
                else:
                    seeded = _seed(lt, clock)
                lt.embed(model="hashing")
        yield plain, more, seeded


def _same(
    outputs: Callable[[str], Any], stores: tuple[str, str, Seeded], *, confined: bool = True
) -> Any:
    """What `outputs(store)` gives on both stores, which must be the same, and which must name
    no record outside (of those both stores hold too, when `confined`)."""
    plain, more, seeded = stores
    first, second = outputs(plain), outputs(more)
    text_first = json.dumps(first, sort_keys=True).replace(plain, "STORE")
    text_second = json.dumps(second, sort_keys=True).replace(more, "STORE")
    assert text_first == text_second
    for record_id in [*seeded.extra, *(seeded.outside if confined else [])]:
        assert record_id not in text_second
    for scope in OUTSIDE:
        assert f'"scope": "{scope}"' not in text_second
    return first


def _error(call: Callable[[], Any]) -> str:
    with pytest.raises(LanternError) as refused:
        call()
    return f"{type(refused.value).__name__}: {refused.value.message}"


def test_the_python_api(stores: tuple[str, str, Seeded]) -> None:
    seeded = stores[2]

    def outputs(url: str) -> Any:
        with Lantern.open(url, scopes=FENCE, read_only=True) as lt:
            memory = lt.memory
            listed = memory.list(status="all", include_expired=True, limit=1000)
            shown: dict[str, Any] = {}
            for record in listed:
                shown[record.id] = {
                    "get": memory.get(record.id).to_json(),
                    "chain": memory.chain(record.id).to_json(),
                    "history": [e.to_json() for e in memory.history(record.id)],
                    "entities": [e.to_json() for e in memory.entities(record.id)],
                }
            pages, after = [], None
            while True:
                page = memory.changes(limit=4, after=after)
                pages.append(([e.to_json() for e in page], page.next_cursor))
                if page.next_cursor is None:
                    break
                after = page.next_cursor
            status = lt.status().to_json()
            del status["url"], status["path"]
            return {
                "list": [r.to_json() for r in listed],
                "shown": shown,
                "changes": pages,
                "stats": memory.stats(top=10, days=30).to_json(),
                "citing": [r.to_json() for r in memory.citing(f"chunk:{seeded.chunk}")],
                "cited_by": lt.cited_by(f"source:{seeded.source}", through_chunks=True),
                "check_refs": [d.to_json() for d in memory.check_refs()],
                "expire": [r.to_json() for r in memory.expire(dry_run=True)],
                "entities": [e.to_json() for e in lt.entities.list(order="count")],
                "entity_show": [lt.entity_show(e).to_json() for e in seeded.entities],
                "forgotten": [e.to_json() for e in memory.history(seeded.forgotten_inside)],
                "status": status,
                "unknown": [
                    _error(lambda rid=rid: memory.get(rid)).replace(rid, "ID")  # type: ignore[misc]
                    for rid in [
                        seeded.forgotten_outside,
                        "mem_00000000000000ff",
                        *seeded.extra[:20],
                    ]
                ],
            }

    found = _same(outputs, stores)
    assert len(found["list"]) == len(seeded.visible)
    texts = json.dumps(found)
    assert texts.count(OUTSIDE_SCOPES) >= 4  # the links across the fence, on both stores
    assert {entity["memory_count"] for entity in found["entities"]} <= {1, 2}
    assert found["status"]["size_bytes"] is None and found["status"]["embeddings"] is None
    assert set(found["unknown"]) == {"NotFound: no memory record with id 'ID'"}


SEARCHES = ["hunter2pass", "Alice deploys on Fridays", "deploy*", "which note did Bob take"]


def test_searches_in_every_mode(stores: tuple[str, str, Seeded]) -> None:
    _searches_in_every_mode(stores)


def _searches_in_every_mode(stores: tuple[str, str, Seeded]) -> Any:
    """Hits, their order and every number in them (scores, ranks, similarities, the count of
    records without a vector) are the same whether or not records outside the scopes hold the
    query's words: relevance statistics are counted within the scopes."""

    def outputs(url: str) -> Any:
        found: dict[str, Any] = {}
        with Lantern.open(url, scopes=FENCE) as lt:
            for query in SEARCHES:
                for mode in ("keyword", "any", "semantic", "hybrid"):
                    for order in ("relevance", "policy"):
                        model = None if mode in ("keyword", "any") else "hashing"
                        pages = []
                        after = None
                        while True:
                            page = lt.memory.search(
                                query,
                                mode=mode,
                                model=model,
                                order=order,
                                status="all",
                                limit=2,
                                after=after,
                            )
                            summary = None if page.summary is None else page.summary.to_json()
                            pages.append([[m.to_json(explain=True) for m in page], summary])
                            if page.next_cursor is None:
                                break
                            after = page.next_cursor
                        found[f"{query} {mode} {order}"] = pages
        return found

    found = _same(outputs, stores)
    assert found["hunter2pass keyword relevance"][0][0], "the search finds the record inside"
    return found


def test_searches_in_every_mode_without_the_word_index(
    stores: tuple[str, str, Seeded], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The same without the word index (no tantivy, or `LANTERN_INDEXES=off`): a confined
    caller's keyword scores are then BM25 counted within its scopes (`lantern.memory.fenced`)
    rather than FTS5's, which counts the whole table."""
    monkeypatch.setenv("LANTERN_INDEXES", "off")
    found = _searches_in_every_mode(stores)
    first = found["Alice deploys on Fridays keyword relevance"][0][0]
    assert [hit["keyword_rank"] for hit in first] == [1]
    assert first[0]["score"] > 0


def _mcp_outputs(mcp: McpClient, seeded: Seeded) -> Any:
    listed = mcp.ok("lantern_memory_list", {"status": "all", "include_expired": True, "limit": 500})
    shown = {}
    for record in listed["records"]:
        rid = record["id"]
        shown[rid] = {
            "show": mcp.ok("lantern_memory_show", {"id": rid, "chain": True}),
            "history": mcp.ok("lantern_memory_history", {"id": rid}),
            "resource": _read(mcp, f"lantern://memory/{rid}"),
            "history_resource": _read(mcp, f"lantern://memory/{rid}/history"),
        }
    resources = mcp.portal.call(mcp.session.list_resources)
    return {
        "list": listed,
        "shown": shown,
        "resources": [r.model_dump(mode="json") for r in resources.resources],
        "entities": mcp.ok("lantern_entity_list", {"order": "count"}),
        "entity_show": [mcp.ok("lantern_entity_show", {"entity": e}) for e in seeded.entities],
        "source": mcp.ok("lantern_source_show", {"id": seeded.source}),
        "chunk": mcp.ok("lantern_chunk_show", {"id": seeded.chunk}),
        "forgotten": mcp.ok("lantern_memory_history", {"id": seeded.forgotten_inside}),
        "unknown": [
            mcp.error("lantern_memory_show", {"id": rid}).replace(rid, "ID")
            for rid in [seeded.forgotten_outside, *seeded.extra[:10]]
        ],
        "unknown_resource": [
            _read(mcp, f"lantern://memory/{rid}").replace(rid, "ID") for rid in seeded.extra[:5]
        ],
    }


def _read(mcp: McpClient, uri: str) -> Any:
    try:
        result = mcp.portal.call(mcp.session.read_resource, uri)
    except MCPError as exc:
        return f"error {exc.error.code}: {exc.error.message}"
    [content] = result.contents
    assert isinstance(content, types.TextResourceContents)
    return json.loads(content.text)


def test_lantern_mcp_scope_over_stdio(stores: tuple[str, str, Seeded], tmp_path: Path) -> None:
    seeded = stores[2]

    def outputs(url: str) -> Any:
        params = server_parameters(url, "--scope", *FENCE, "--read-only", home=tmp_path)
        with running(params) as mcp:
            return _mcp_outputs(mcp, seeded)

    found = _same(outputs, stores)
    assert OUTSIDE_SCOPES in json.dumps(found["shown"])


def test_an_http_token_with_scopes(stores: tuple[str, str, Seeded], tmp_path: Path) -> None:
    seeded = stores[2]
    token_file = tmp_path / "tokens.json"
    secret, _ = tokens.add(token_file, "alice", scopes=FENCE, read_only=True)

    def outputs(url: str) -> Any:
        with http_server(url, token_file) as server, http_client(server.url, secret) as mcp:
            return _mcp_outputs(mcp, seeded)

    found = _same(outputs, stores)
    assert OUTSIDE_SCOPES in json.dumps(found["shown"])


def test_the_web_view_with_scope(
    stores: tuple[str, str, Seeded], monkeypatch: pytest.MonkeyPatch
) -> None:
    seeded = stores[2]
    # The overview links to what expires within days of now: one now for both stores.
    frozen = int(time.time())
    monkeypatch.setattr(overview_pages, "time", SimpleNamespace(time=lambda: frozen))

    def outputs(url: str) -> Any:
        with Lantern.open(url, create=False, read_only=True, scopes=FENCE) as lantern:
            app = build_app(Site(lantern, (), tuple(FENCE)), token=TOKEN)
            client = TestClient(
                app, base_url="http://127.0.0.1:8470", headers={"Authorization": f"Bearer {TOKEN}"}
            )
            pages = ["/", "/memory?status=all&include_expired=1&limit=200", "/changes?limit=5"]
            pages += ["/sources", f"/sources/{seeded.source}", f"/chunks/{seeded.chunk}", "/health"]
            pages += [f"/memory/{rid}" for rid in seeded.visible]
            pages += [f"/memory/{seeded.forgotten_outside}", f"/memory/{seeded.extra[0]}"]
            answers = {}
            asked = (seeded.forgotten_outside, seeded.extra[0])
            for page in pages:
                for suffix in ("", "&format=json" if "?" in page else "?format=json"):
                    answer = client.get(page + suffix)
                    key, body = page + suffix, answer.text
                    for rid in asked:  # the ids asked for, in the messages that quote them
                        key, body = key.replace(rid, "ID"), body.replace(rid, "ID")
                    answers[key] = [answer.status_code, body]
            return answers

    found = _same(outputs, stores)
    assert OUTSIDE_SCOPES in json.dumps(found)


def test_the_cli_scope_filters(stores: tuple[str, str, Seeded]) -> None:
    def outputs(url: str) -> Any:
        found = {}
        for words in (
            ["memory", "list", "--status", "all", "--include-expired", "--limit", "1000"],
            ["memory", "stats"],
            ["memory", "changes", "--limit", "1000"],
        ):
            args = ["--db", url, *words, *[w for p in FENCE for w in ("--scope", p)], "--json"]
            result = CliRunner().invoke(cli, args)
            assert result.exit_code == 0, result.output
            found[" ".join(words)] = json.loads(result.stdout)
        # A filter is no fence: an unconfined caller sees the ids of the whole store's log.
        for entry in found["memory changes --limit 1000"]:
            del entry["id"]
        return found

    _same(outputs, stores, confined=False)
