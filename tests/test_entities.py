"""Entities: what is extracted at ingest, what a caller attaches, finding by entity, and the
links' life with their chunks and records, on both engines."""

from __future__ import annotations

import json
import sysconfig
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import func, select

from lantern.api import Lantern
from lantern.entities import names
from lantern.entities.extraction import EXTRACTOR_VERSION, extract
from lantern.errors import InvalidInput, NotFound, PolicyRefused
from lantern.store.ids import entity_id
from lantern.store.models import chunk_entities, entities, entity_scans, memory_entities
from tests.legacy_stores import build_legacy_store

NOTE = (
    "Deploy notes: see https://github.com/acme/api/pull/42 (merged by @ada-l) and #17.\n"
    "Config lives in deploy/settings.toml and /etc/acme/api.conf; ping ops@acme.example.\n"
    "Fixed in 1a2b3c4d, tracked as OPS-311, see [[Release Checklist|the list]] #release.\n"
)


def _found(text: str, kind: str | None = None) -> list[str]:
    return [str(entity) for entity in extract(text, kind)]


# --- extraction ---------------------------------------------------------------------------------


def test_each_kind_is_found_with_its_normalised_name() -> None:
    assert _found(NOTE, "markdown") == [
        "url:https://github.com/acme/api/pull/42",
        "email:ops@acme.example",
        "path:deploy/settings.toml",
        "path:/etc/acme/api.conf",
        "mention:ada-l",
        "tag:release",
        "issue:#17",
        "issue:OPS-311",
        "commit:1a2b3c4d",
        "wikilink:Release Checklist",
    ]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("[docs](https://example.org/a_(b)).", ["url:https://example.org/a_(b)"]),
        ("<HTTPS://Example.ORG/Path?q=1>", ["url:https://example.org/Path?q=1"]),
        ("template https://example.org/{owner}/x", []),
        ("Mail Bob@Example.COM.", ["email:bob@example.com"]),
        ("clone git@github.com:acme/api.git", []),
        ("UTF-8, ISO-8859-1 and SHA-256 are standards", []),
        (
            "see GH-1234 and gh-99, bpo-4242, acme/api#7",
            ["issue:#1234", "issue:#99", "issue:bpo-4242", "issue:acme/api#7"],
        ),
        ("colour #fff, #include <x.h>, #!/bin/sh", ["path:/bin/sh"]),
        ("0xdeadbeef1 and 1234567 and abcdefab", []),
        ("a matrix [[1, 2], [3, 4]] and x[['a', 'b']]", []),
        ("CVE-2024-3094 in xz", ["cve:CVE-2024-3094"]),
    ],
)
def test_rules_keep_to_what_they_mean(text: str, expected: list[str]) -> None:
    assert _found(text, "markdown") == expected


def test_code_has_no_mentions_tags_or_wiki_links() -> None:
    code = "@property\ndef f(self):  # see #12 and #todo\n    return x[[0]]  # @ada\n"
    assert _found(code, "source_file") == ["issue:#12"]
    assert _found("    @staticmethod\n    def g(): ...", "markdown") == []


STDLIB = Path(sysconfig.get_paths()["stdlib"])


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # Lines of the standard library (http/server.py, http/client.py, wsgiref).
        ('    protocol_version = "HTTP/1.0"', []),
        ("        env['GATEWAY_INTERFACE'] = 'CGI/1.1'", []),
        ("    _http_vsn_str = 'HTTP/1.1'", []),
        ('r"""HTTP/1.1 client library', []),
        ("#      turn is lower than HTTP/12.3;", []),
        ("            context.set_alpn_protocols(['http/1.1'])", []),
        # Other protocols and versions, and what only looks like a path.
        ("TLS/1.3, SSL/3.0, RTSP/1.0, SMTP/1.5, SIP/2.0 and HTTP/2", []),
        ("user-agent: curl/7.53.1; changes from the 2.x/3.1 line", []),
        ("GET /docs/index.html HTTP/1.1", ["path:/docs/index.html"]),
        # Real paths stay paths, versions inside them included.
        (
            "see src/app.py, /etc/hosts, ~/notes/x.md and docs/v1.2/index.md",
            ["path:src/app.py", "path:/etc/hosts", "path:~/notes/x.md", "path:docs/v1.2/index.md"],
        ),
        (
            "in /usr/lib/python3.11/site-packages or ~/releases/1.1",
            ["path:/usr/lib/python3.11/site-packages", "path:~/releases/1.1"],
        ),
        ("man/man1/ls.1 and journal/2024/01.md", ["path:man/man1/ls.1", "path:journal/2024/01.md"]),
    ],
)
def test_a_protocol_and_its_version_is_not_a_path(text: str, expected: list[str]) -> None:
    assert _found(text, "source_file") == expected
    assert _found(text, "markdown") == expected


def test_the_standard_librarys_http_sources_name_no_versions_as_paths() -> None:
    for name in ("http/server.py", "http/client.py", "wsgiref/simple_server.py"):
        text = (STDLIB / name).read_text("utf-8")
        assert "HTTP/1.1" in text or "CGI/1.1" in text
        paths = [e.name for e in extract(text, "source_file") if e.kind == "path"]
        assert not [p for p in paths if p.split("/")[0].upper() in ("HTTP", "CGI")], paths


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("@raphael reviewed the plan.", ["mention:raphael"]),
        ("Plan\n\n@raphael reviewed it, @ada too.", ["mention:raphael", "mention:ada"]),
        ("@ada: can you look?\n  @bob, and you?", ["mention:ada", "mention:bob"]),
        ("ada@example.org reviewed it", ["email:ada@example.org"]),
        # Decorators and annotations stand alone on their line, or are well known.
        ("```python\n@my_cache\ndef f(): ...\n```", []),
        ("    @register  # the plug-in\n    class P: ...", []),
        (">>> @define\n... class C:\n...     x: int", []),
        ("@contextlib.contextmanager\n@retry(3)\n@property", []),
        ("@raphael", []),
        # Other things written with @.
        ("npm install @types/node; see @modelcontextprotocol/server-memory", []),
        ("@article{knuth84,\n@myscope:registry=x", []),
        ("add the missing JSDoc @param and @returns", []),
    ],
)
def test_mentions_at_the_start_of_a_line_and_what_is_no_mention(
    text: str, expected: list[str]
) -> None:
    assert _found(text, "markdown") == expected
    assert _found(text, "transcript") == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("#release is out", ["tag:release"]),
        ("Plan\n#release notes, #ops", ["tag:release", "tag:ops"]),
        ("# Release\n\n## Notes\n", []),
        ("#include <stdio.h>\n#define X 1", []),
        ("class A {\n  #count = 0;\n  #handler;\n}", []),
    ],
)
def test_tags_at_the_start_of_a_line_and_what_is_no_tag(text: str, expected: list[str]) -> None:
    assert _found(text, "markdown") == expected


def test_in_code_a_line_that_starts_with_at_or_hash_is_code() -> None:
    assert _found("@raphael reviewed\n#release notes\n", "source_file") == []


def test_what_a_url_contains_is_not_read_again() -> None:
    assert _found("https://example.org/@ada/notes.md#intro", "markdown") == [
        "url:https://example.org/@ada/notes.md#intro"
    ]


def test_names_follow_the_legacy_id_format() -> None:
    ada = names.parse("person:  Ada\u00a0 Lovelace ")
    assert (ada.kind, ada.name) == ("person", "Ada Lovelace")
    assert ada.id == entity_id("person", "Ada Lovelace") == names.parse("Person:ada lovelace").id
    assert names.parse("mention:@Ada").name == "ada"
    assert names.parse("issue:gh-12").name == "#12"
    assert names.key("ent_0123456789abcdef") == "ent_0123456789abcdef"


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("Ada", "an entity is KIND:NAME"),
        (":Ada", "an entity is KIND:NAME"),
        ("per son:Ada", "an entity kind is a word"),
        ("person:   ", "an entity needs a name"),
        ("email:bob", "email:bob is not an e-mail address"),
        ("commit:xyz", "is not a commit hash"),
        (42, "an entity is KIND:NAME"),
    ],
)
def test_malformed_entities_are_refused(value: Any, message: str) -> None:
    with pytest.raises(InvalidInput, match=message):
        names.parse(value)


# --- ingest and the links' life ----------------------------------------------------------------


def _links(lt: Lantern) -> set[tuple[str, str]]:
    with lt.store.read() as conn:
        rows = conn.execute(
            select(chunk_entities.c.chunk_id, entities.c.kind, entities.c.name).join(
                entities, entities.c.id == chunk_entities.c.entity_id
            )
        )
        return {(row.chunk_id, f"{row.kind}:{row.name}") for row in rows}


def _count(lt: Lantern, table: Any) -> int:
    with lt.store.read() as conn:
        return int(conn.execute(select(func.count()).select_from(table)).scalar_one())


def test_ingest_links_each_chunk_in_its_transaction_and_reingest_keeps_them(lt: Lantern) -> None:
    first = "Intro about @ada.\n\n" + "filler words " * 90 + "\n\nEnd: see https://example.org/x."
    lt.evidence.ingest_text("note://a", first, kind="markdown", target_size=200)
    source = lt.evidence.get_source("note://a")
    assert source.chunks is not None and len(source.chunks) > 2
    shown = {chunk.id: [f"{e.kind}:{e.name}" for e in chunk.entities] for chunk in source.chunks}
    assert shown[source.chunks[0].id] == ["mention:ada"]
    assert shown[source.chunks[-1].id] == ["url:https://example.org/x"]
    assert _count(lt, entity_scans) == len(source.chunks)
    kept = source.chunks[0].id
    # A changed ending: the first chunk keeps its id and its link, the last one is replaced.
    lt.evidence.ingest_text(
        "note://a",
        first.replace("example.org/x", "example.org/y"),
        kind="markdown",
        target_size=200,
    )
    after = _links(lt)
    assert (kept, "mention:ada") in after
    assert {name for _c, name in after} == {"mention:ada", "url:https://example.org/y"}
    with lt.store.read() as conn:  # the entity only the replaced chunk named went with it
        assert conn.execute(
            select(entities.c.name).where(entities.c.kind == "url")
        ).scalars().all() == ["https://example.org/y"]
    lt.evidence.remove_source("note://a")
    assert (_links(lt), _count(lt, entities), _count(lt, entity_scans)) == (set(), 0, 0)


def test_search_lists_and_show_find_by_entity(lt: Lantern) -> None:
    lt.evidence.ingest_text("note://a", "Deploy with @ada today.", kind="markdown")
    lt.evidence.ingest_text("note://b", "Deploy with @bob today.", kind="markdown")
    ada = lt.memory.add(
        kind="fact", content="Ada deploys on Fridays", entities=["person:Ada", "mention:ada"]
    )
    lt.memory.add(kind="fact", content="Bob deploys on Mondays", entities=["person:Bob"])
    hits = lt.evidence.search("deploy", entity="mention:ada")
    assert [hit.uri for hit in hits] == ["note://a"]
    assert [
        hit.uri for hit in lt.evidence.search("deploy", entity=["mention:ada", "mention:bob"])
    ] == sorted(["note://a", "note://b"]) or len(
        lt.evidence.search("deploy", entity=["mention:ada", "mention:bob"])
    ) == 2
    assert [r.id for r in lt.memory.list(entity="person:ada")] == [ada.id]
    assert [m.record.id for m in lt.memory.search("deploys", entity=[ada_id(lt)])] == [ada.id]
    assert lt.memory.list(entity="person:nobody") == []
    shown = lt.entity_show("mention:ada")
    assert (shown.entity.chunk_count, shown.entity.memory_count) == (1, 1)
    assert [c.uri for c in shown.chunks] == ["note://a"] and shown.chunks[0].excerpt.startswith(
        "Deploy"
    )
    assert [r.id for r in shown.memories] == [ada.id] and shown.next_cursor is None
    listed = {f"{e.kind}:{e.name}": (e.chunk_count, e.memory_count) for e in lt.entities.list()}
    assert listed == {
        "mention:ada": (1, 1),
        "mention:bob": (1, 0),
        "person:Ada": (0, 1),
        "person:Bob": (0, 1),
    }
    assert [e.name for e in lt.entities.list(kind="person", order="count")] == ["Ada", "Bob"]
    with pytest.raises(NotFound, match="no entity person:Carol"):
        lt.entity_show("person:Carol")


def ada_id(lt: Lantern) -> str:
    return lt.entities.get("person:Ada").id


def test_show_pages_both_lists_with_one_cursor(lt: Lantern) -> None:
    for n in range(5):
        lt.evidence.ingest_text(f"note://{n}", f"note {n} for @ada", kind="markdown")
    for n in range(3):
        lt.memory.add(kind="fact", content=f"fact {n}", entities=["mention:ada"])
    seen_chunks: list[str] = []
    seen_records: list[str] = []
    after = None
    while True:
        page = lt.entity_show("mention:ada", limit=2, after=after)
        seen_chunks += [c.uri for c in page.chunks]
        seen_records += [r.id for r in page.memories]
        after = page.next_cursor
        if after is None:
            break
    assert seen_chunks == [f"note://{n}" for n in range(5)]
    assert len(seen_records) == len(set(seen_records)) == 3
    with pytest.raises(InvalidInput, match="not a cursor of entity show"):
        lt.entity_show("mention:ada", after="nonsense")


def test_record_links_are_kept_in_its_history_and_go_with_forget(lt: Lantern) -> None:
    record = lt.memory.add(kind="fact", content="Ada met Bob", entities=["person:Ada"])
    assert lt.memory.history(record.id)[0].changes["after"]["entities"] == ("person:Ada",)
    changes = lt.memory.attach_entities(record.id, ["person:Bob", "person:ada"])
    assert [(c.entity.name, c.changed) for c in changes] == [("Bob", True), ("Ada", False)]
    last = lt.memory.history(record.id)[-1]
    assert last.event == "updated"
    assert last.to_json()["changes"] == {
        "after": {"entities": ["person:Ada", "person:Bob"]},
        "before": {"entities": ["person:Ada"]},
    }
    again = lt.memory.attach_entities(record.id, "person:Bob")
    assert not again[0].changed and len(lt.memory.history(record.id)) == 2
    assert [e.name for e in lt.memory.entities(record.id)] == ["Ada", "Bob"]
    # The same memory added again with another entity: linked to the stored record.
    same = lt.memory.add(kind="fact", content="Ada met Bob", entities=["place:Lisbon"])
    assert same.id == record.id
    assert [e.kind for e in lt.memory.entities(record.id)] == ["person", "person", "place"]
    new = lt.memory.supersede(record.id, content="Ada met Bob in Lisbon")
    assert [e.name for e in lt.memory.entities(new.id)] == ["Ada", "Bob", "Lisbon"]
    lt.memory.detach_entities(new.id, ["place:Lisbon"])
    lt.memory.forget(new.id)
    lt.memory.forget(record.id)
    assert (_count(lt, memory_entities), _count(lt, entities)) == (0, 0)


def test_bad_entities_change_nothing(lt: Lantern) -> None:
    record = lt.memory.add(kind="fact", content="x")
    before = lt.memory.history(record.id)
    for call in (
        lambda: lt.memory.add(kind="fact", content="y", entities=["person:Ada", "nope"]),
        lambda: lt.memory.attach_entities(record.id, ["person:Ada", "email:bob"]),
        lambda: lt.memory.attach_entities(record.id, ["ent_0000000000000000"]),
        lambda: lt.memory.attach_entities("mem_0000000000000000", ["person:Ada"]),
        lambda: lt.entities.attach_entities("chk_0000000000000000", ["person:Ada"]),
        lambda: lt.memory.list(entity=["person:"]),
    ):
        with pytest.raises((InvalidInput, NotFound)):
            call()
    assert lt.memory.history(record.id) == before
    assert [r.content for r in lt.memory.list()] == ["x"]
    assert _count(lt, entities) == 0


def test_chunk_attach_and_detach(lt: Lantern) -> None:
    lt.evidence.ingest_text("note://a", "plain words", kind="markdown")
    chunk = lt.evidence.get_source("note://a").chunks[0].id  # type: ignore[index]
    assert [
        c.changed
        for c in lt.entities.attach_entities(chunk, ["project:lantern", "project:Lantern"])
    ] == [True]
    assert [e.name for e in lt.evidence.get_chunk(chunk).chunk.entities] == ["lantern"]
    assert [c.changed for c in lt.entities.detach_entities(chunk, ["project:lantern"])] == [True]
    with pytest.raises(NotFound, match="no entity mention:ada"):
        lt.entities.detach_entities(chunk, ["mention:ada"])
    assert _count(lt, entities) == 0


def test_entity_view_is_still_importable_from_the_facade() -> None:
    import lantern.api
    from lantern.memory.records import EntityView

    assert lantern.api.EntityView is EntityView


def test_attach_and_detach_keep_their_earlier_names(lt: Lantern) -> None:
    lt.evidence.ingest_text("note://a", "plain words", kind="markdown")
    chunk = lt.evidence.get_source("note://a").chunks[0].id  # type: ignore[index]
    attached = lt.entities.attach(chunk, entity="place:Lisbon")
    assert [(c.entity.name, c.changed) for c in attached] == [("Lisbon", True)]
    assert [c.changed for c in lt.entities.attach(chunk, ["place:Lisbon"])] == [False]
    assert [c.changed for c in lt.entities.detach(chunk, entity=["place:Lisbon"])] == [True]
    assert _count(lt, entities) == 0


def test_scope_confinement_holds_for_entities(store_url: str) -> None:
    with Lantern.open(store_url) as lt:
        lt.evidence.ingest_text("note://a", "shared note about @ada", kind="markdown")
        inside = lt.memory.add(kind="fact", scope="team:a", content="in", entities=["person:Ada"])
        outside = lt.memory.add(
            kind="fact", scope="team:b", content="secret", entities=["person:Ada", "person:Secret"]
        )
    with Lantern.open(store_url, scopes=["team:a"]) as scoped:
        listed = {f"{e.kind}:{e.name}": e.memory_count for e in scoped.entities.list()}
        assert listed == {"mention:ada": 0, "person:ada": 1}  # in lowercase, when confined
        with pytest.raises(NotFound):
            scoped.entity_show("person:Secret")
        assert [r.id for r in scoped.entity_show("person:Ada").memories] == [inside.id]
        with pytest.raises(NotFound):
            scoped.memory.attach_entities(outside.id, ["person:Eve"])
        with pytest.raises(NotFound):
            scoped.memory.entities(outside.id)
        assert scoped.memory.list(entity="person:Secret") == []
    with Lantern.open(store_url, read_only=True) as reader, pytest.raises(PolicyRefused):
        reader.memory.attach_entities(inside.id, ["person:Eve"])


# --- stored chunks: upgraded stores and `entity extract` ----------------------------------------


def test_extract_fills_an_upgraded_store_incrementally(tmp_path: Path) -> None:
    path = tmp_path / "legacy.db"
    build_legacy_store(path, 2, n_sources=3)
    with Lantern.open(path, require_current=False) as lt:
        lt.upgrade(backup=False)
    with Lantern.open(path) as lt:
        with lt.store.write() as conn:  # a chunk that mentions things, as an old tool wrote it
            chunk = conn.execute(select(chunk_entities.c.chunk_id).limit(1)).scalar()
        before = _links(lt)
        todo = lt.entities.pending()
        assert todo > 0
        seen: list[tuple[int, int]] = []
        report = lt.entities.extract(progress=lambda done, total: seen.append((done, total)))
        assert (report.scanned, report.extractor) == (todo, EXTRACTOR_VERSION)
        assert seen[-1] == (todo, todo)
        assert before <= _links(lt)  # the legacy links stay
        assert lt.entities.pending() == 0
        again = lt.entities.extract()
        assert (again.scanned, again.links_added, again.skipped) == (0, 0, todo)
        assert chunk is None or isinstance(chunk, str)


def test_extract_reads_again_what_older_rules_read(lt: Lantern) -> None:
    lt.evidence.ingest_text("note://a", "@raphael reviewed HTTP/1.1 support", kind="markdown")
    assert {name for _chunk, name in _links(lt)} == {"mention:raphael"}
    with lt.store.write() as conn:  # as the first rules left it: no mention found
        conn.execute(chunk_entities.delete())
        conn.execute(entity_scans.update().values(extractor=1))
    assert EXTRACTOR_VERSION > 1 and lt.entities.pending() == 1
    report = lt.entities.extract()
    assert (report.scanned, report.links_added) == (1, 1)
    assert {name for _chunk, name in _links(lt)} == {"mention:raphael"}
    assert lt.entities.pending() == 0


def test_extract_resumes_after_an_interrupted_run(
    lt: Lantern, monkeypatch: pytest.MonkeyPatch
) -> None:
    from lantern.entities import writes

    for n in range(7):
        lt.evidence.ingest_text(f"note://{n}", f"see https://example.org/{n}", kind="markdown")
    with lt.store.write() as conn:  # as if they were stored before extraction existed
        conn.execute(entity_scans.delete())
        conn.execute(chunk_entities.delete())
    monkeypatch.setattr(writes, "EXTRACT_BATCH", 3)

    def interrupt(done: int, total: int) -> None:
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        lt.entities.extract(progress=interrupt)
    assert lt.entities.pending() == 4  # the first batch was committed
    report = lt.entities.extract()
    assert (report.scanned, report.skipped) == (4, 3)
    assert len(_links(lt)) == 7


# --- the CLI -------------------------------------------------------------------------------------


def test_cli_commands_and_their_json(run_cli: Any) -> None:
    assert run_cli("ingest", "-", "--uri", "note://a", input="Ask @ada about #12").exit_code == 0
    added = run_cli(
        "memory",
        "add",
        "--kind",
        "fact",
        "--entity",
        "person:Ada",
        "--entity",
        "mention:ada",
        "Ada knows",
        "--json",
    )
    assert added.exit_code == 0, added.output
    record = json.loads(added.stdout)
    shown = json.loads(run_cli("memory", "show", record["id"], "--json").stdout)
    assert shown["entities"] == [
        {"id": entity_id("mention", "ada"), "name": "ada", "kind": "mention"},
        {"id": entity_id("person", "Ada"), "name": "Ada", "kind": "person"},
    ]
    listed = json.loads(run_cli("entity", "list", "--json").stdout)
    assert all(list(e) == ["id", "name", "kind", "chunk_count", "memory_count"] for e in listed)
    view = json.loads(run_cli("entity", "show", "mention:ada", "--json").stdout)
    assert list(view) == [
        "id",
        "name",
        "kind",
        "chunk_count",
        "memory_count",
        "chunks",
        "memories",
        "next_cursor",
    ]
    assert list(view["chunks"][0]) == [
        "chunk_id",
        "source_id",
        "uri",
        "ordinal",
        "start_offset",
        "end_offset",
        "excerpt",
    ]
    attached = json.loads(
        run_cli("entity", "attach", "project:lantern", "--memory", record["id"], "--json").stdout
    )
    assert attached == [
        {
            "entity": {"id": entity_id("project", "lantern"), "name": "lantern", "kind": "project"},
            "record_id": record["id"],
            "changed": True,
        }
    ]
    hits = json.loads(run_cli("search", "ada", "--entity", "issue:#12", "--json").stdout)
    assert [hit["uri"] for hit in hits] == ["note://a"]
    listed_records = json.loads(
        run_cli("memory", "list", "--entity", "project:lantern", "--json").stdout
    )
    assert [r["id"] for r in listed_records] == [record["id"]]
    extracted = json.loads(run_cli("entity", "extract", "--json").stdout)
    assert list(extracted) == [
        "scanned",
        "skipped",
        "links_added",
        "entities_added",
        "extractor",
        "seconds",
    ]


@pytest.mark.parametrize(
    ("args", "code", "message"),
    [
        (
            ["entity", "attach", "Ada", "--memory", "mem_0000000000000000"],
            1,
            "an entity is KIND:NAME",
        ),
        (["entity", "attach", "person:Ada"], 2, "give exactly one of --chunk ID and --memory ID"),
        (["entity", "show", "per son:Ada"], 1, "an entity kind is a word"),
        (
            ["memory", "add", "--kind", "fact", "--entity", "email:x", "y"],
            1,
            "email:x is not an e-mail",
        ),
        (["memory", "list", "--entity", ":x"], 1, "an entity is KIND:NAME"),
        (["entity", "list", "--order", "size"], 2, "Invalid value for '--order'"),
    ],
)
def test_cli_errors_are_one_line_and_change_nothing(
    run_cli: Any, args: list[str], code: int, message: str
) -> None:
    assert run_cli("memory", "add", "--kind", "fact", "kept").exit_code == 0
    result = run_cli(*args)
    assert result.exit_code == code
    assert message in result.stderr and "Traceback" not in result.output
    assert [r["content"] for r in json.loads(run_cli("memory", "list", "--json").stdout)] == [
        "kept"
    ]
    assert json.loads(run_cli("entity", "list", "--json").stdout) == []


def test_the_real_executable(run_lantern: Any) -> None:
    added = run_lantern(
        "memory", "add", "--kind", "goal", "--entity", "project:lantern", "Ship entities"
    )
    assert added.returncode == 0, added.stderr
    shown = run_lantern("entity", "show", "project:lantern", "--json")
    assert json.loads(shown.stdout)["memories"][0]["content"] == "Ship entities"
    bad = run_lantern("entity", "detach", "project:", "--memory", added.stdout.strip())
    assert bad.returncode == 1 and bad.stderr.strip().count("\n") == 0
    assert bad.stderr.startswith("Error: an entity needs a name")
