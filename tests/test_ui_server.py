"""The web view through Starlette's test client: the gate, every page on every engine, the JSON
twins against the CLI, filters and paging, scope confinement, bad input and hostile stores."""

from __future__ import annotations

import html
import json
import re
import shlex
import time
from collections.abc import Iterator
from html.parser import HTMLParser
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import click
import pytest
from click.testing import CliRunner
from starlette.testclient import TestClient

from lantern.api import Lantern
from lantern.cli import cli
from lantern.memory.scopes import ScopePolicy
from lantern.ui.app import build_app
from lantern.ui.fields import MEMORY_FILTERS
from lantern.ui.security import CONTENT_SECURITY_POLICY, cookie_name
from lantern.ui.views import Site
from tests.helpers import command_at, extra_hint, lantern_process, python_output
from tests.legacy_stores import build_legacy_store
from tests.ui_stores import build_demo_store, build_hostile_store

TOKEN = "test-token-0123456789"
BASE = "http://127.0.0.1:8470"


def _client(lantern: Lantern, db: str) -> TestClient:
    app = build_app(Site(lantern, ("--db", db)), token=TOKEN)
    return TestClient(app, base_url=BASE, headers={"Authorization": f"Bearer {TOKEN}"})


@pytest.fixture
def demo(store_url: str, tmp_path: Path) -> Iterator[tuple[TestClient, dict[str, str], str]]:
    """The demonstration store on each engine, seen through the view."""
    ids = build_demo_store(store_url)
    with Lantern.open(store_url, read_only=True, create=False) as lantern:
        yield _client(lantern, store_url), ids, store_url


def _pages(ids: dict[str, str]) -> list[str]:
    return [
        "/",
        "/memory",
        "/memory?status=all&explain=1&limit=3",
        "/memory?scope=project:*&kind=fact&kind=constraint&status=all&min_priority=50",
        f"/memory?cites=chunk:{ids['chat_chunk']}&status=all",
        "/memory?expires_before=2100-01-01&include_expired=1",
        "/memory/search?q=where+is+the+staging+server&status=all",
        "/memory/search?q=staging&order=policy&mode=keyword&status=all&limit=1",
        f"/memory/{ids['moved']}",
        f"/memory/{ids['prefers']}",
        f"/memory/{ids['staging']}",
        "/changes",
        "/changes?event=superseded&scope=project:*",
        "/sources",
        "/sources?kind=markdown&uri_prefix=file:///home/",
        f"/sources/{ids['notes']}",
        f"/sources/{ids['notes']}?limit=1&after=0",
        f"/chunks/{ids['chat_chunk']}",
        f"/chunks/{ids['note_chunk']}?context=1",
        "/search?q=which+branch+do+we+deploy+from",
        "/search?q=deploy&mode=keyword&kind=markdown&limit=5",
        "/health",
    ]


# --- the gate ----------------------------------------------------------------------------------


def test_every_request_needs_the_token(tmp_path: Path) -> None:
    db = tmp_path / "s.db"
    build_demo_store(db)
    with Lantern.open(db, read_only=True, create=False) as lantern:
        app = build_app(Site(lantern), token=TOKEN)
        anonymous = TestClient(app, base_url=BASE)
        for path in ("/", "/memory", "/memory?format=json", "/static/lantern.css", "/nowhere"):
            refused = anonymous.get(path)
            assert refused.status_code == 403, path
            assert "needs the token" in refused.text
            assert refused.headers["content-security-policy"] == CONTENT_SECURITY_POLICY
        assert anonymous.get("/?token=wrong").status_code == 403
        assert anonymous.get("/", headers={"Authorization": "Bearer wrong"}).status_code == 403
        wrong_cookie = {"cookie": f"{cookie_name(TOKEN)}=wrong"}
        assert anonymous.get("/", headers=wrong_cookie).status_code == 403
        assert (
            anonymous.get("/", headers={"cookie": f"{cookie_name('x')}={TOKEN}"}).status_code == 403
        )
        # A token in the address of a page whose path needs quoting keeps the path.
        odd = anonymous.get(f"/memory/mem x\u00e9?token={TOKEN}", follow_redirects=False)
        assert odd.status_code == 303 and odd.headers["location"] == "/memory/mem%20x%C3%A9"
        # The first visit trades the token in the URL for a cookie, and drops it from the URL.
        first = anonymous.get(f"/memory?status=all&token={TOKEN}", follow_redirects=False)
        assert first.status_code == 303
        assert first.headers["location"] == "/memory?status=all"
        cookie = first.headers["set-cookie"]
        assert cookie.startswith(f"{cookie_name(TOKEN)}={TOKEN};")
        assert "HttpOnly" in cookie and "SameSite=Strict" in cookie
        assert TOKEN not in cookie_name(TOKEN)
        visitor = TestClient(app, base_url=BASE, cookies={cookie_name(TOKEN): TOKEN})
        assert visitor.get("/memory").status_code == 200
        # Only the loopback names and the view's own host, only GET and HEAD.
        bearer = {"Authorization": f"Bearer {TOKEN}"}
        elsewhere = TestClient(app, base_url="http://attacker.example:8470")
        assert elsewhere.get("/", headers=bearer).status_code == 403
        assert visitor.post("/memory").status_code == 405
        assert visitor.request("DELETE", f"/memory?token={TOKEN}").status_code == 405
        assert visitor.head("/memory").status_code == 200
        for host in ("localhost:8470", "[::1]:8470"):
            assert visitor.get("/", headers={"host": host}).status_code == 200


def _raw(app: Any, path: str, query: str = "", headers: dict[str, str] | None = None) -> Any:
    """What the view answers a GET whose path, query and headers are exactly these (as uvicorn
    would pass them, the path percent-decoded), without a client that would tidy them."""
    import anyio

    sent: list[dict[str, Any]] = []
    given = {"host": "127.0.0.1:8470", **(headers or {})}
    scope = {
        "type": "http",
        "method": "GET",
        "path": path,
        "raw_path": path.encode("utf-8", "surrogateescape"),
        "root_path": "",
        "query_string": query.encode("latin-1"),
        "headers": [(k.encode("latin-1"), v.encode("latin-1")) for k, v in given.items()],
    }

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    anyio.run(app, scope, receive, send)
    start = sent[0]
    return start["status"], {k.decode(): v.decode("latin-1") for k, v in start["headers"]}


@pytest.mark.parametrize(
    ("path", "location"),
    [
        ("//evil.example/x", "/evil.example/x"),
        ("///evil.example/x", "/evil.example/x"),  # as uvicorn decodes /%2F%2Fevil.example/x
        ("/\\evil.example/x", "/%5Cevil.example/x"),
        ("/\\/evil.example", "/%5C/evil.example"),
        ("//\\evil.example", "/%5Cevil.example"),
        ("/%5C/evil.example", "/%255C/evil.example"),  # a literal %, sent as %25
        ("/\t/evil.example", "/%09/evil.example"),
        ("/memory", "/memory"),
    ],
)
def test_the_token_redirect_never_leaves_the_view(tmp_path: Path, path: str, location: str) -> None:
    db = tmp_path / "s.db"
    Lantern.open(db).close()
    with Lantern.open(db, read_only=True, create=False) as lantern:
        app = build_app(Site(lantern), token=TOKEN)
        status, headers = _raw(app, path, f"token={TOKEN}&a=1")
    assert status == 303
    assert headers["location"] == location + "?a=1"
    assert headers["location"].startswith("/") and headers["location"][1] not in "/\\"


@pytest.mark.parametrize(
    ("headers", "status"),
    [
        ({}, 200),
        ({"host": "localhost:8470"}, 200),
        ({"host": "LOCALHOST"}, 200),
        ({"host": "[::1]:8470"}, 200),
        ({"origin": "http://127.0.0.1:8470"}, 200),
        ({"origin": "https://localhost"}, 200),
        ({"host": "localhost:8765@evil.example"}, 403),
        ({"host": "localhost:evil"}, 403),
        ({"host": "localhost.evil.example"}, 403),
        ({"host": "127.0.0.1:8470:1"}, 403),
        ({"host": ""}, 403),
        ({"origin": "http://localhost:8765.evil.example"}, 403),
        ({"origin": "http://evil.example"}, 403),
        ({"origin": "null"}, 403),
        ({"origin": "http://localhost@evil.example"}, 403),
    ],
)
def test_only_exact_host_and_origin_forms_are_answered(
    tmp_path: Path, headers: dict[str, str], status: int
) -> None:
    db = tmp_path / "s.db"
    Lantern.open(db).close()
    with Lantern.open(db, read_only=True, create=False) as lantern:
        app = build_app(Site(lantern), token=TOKEN)
        bearer = {"authorization": f"Bearer {TOKEN}"}
        assert _raw(app, "/memory", headers={**bearer, **headers})[0] == status
        # The token redirect is refused alike: the token is not even looked at.
        assert _raw(app, "/memory", f"token={TOKEN}", headers)[0] in (status, 303)
        if status == 403:
            assert _raw(app, "/memory", f"token={TOKEN}", headers)[0] == 403


def test_responses_carry_the_security_headers(demo: tuple[TestClient, Any, str]) -> None:
    client, ids, _ = demo
    for path in ("/", f"/memory/{ids['moved']}", "/memory/mem_nope", "/static/lantern.css"):
        response = client.get(path)
        assert response.headers["content-security-policy"] == CONTENT_SECURITY_POLICY
        assert "script-src" not in CONTENT_SECURITY_POLICY  # default-src 'none' covers it
        assert response.headers["x-content-type-options"] == "nosniff"
        assert response.headers["referrer-policy"] == "no-referrer"
        assert response.headers["x-frame-options"] == "DENY"
        assert response.headers["cache-control"] == "no-store"


# --- pages and their JSON twins ----------------------------------------------------------------


def test_every_page_renders_and_its_twins_are_the_cli_json(
    demo: tuple[TestClient, dict[str, str], str],
) -> None:
    client, ids, _ = demo
    for path in _pages(ids):
        _check_twins(client, path)


def _check_twins(client: TestClient, path: str, *, confined: bool = False) -> None:
    """The page renders, and each command it shows prints its JSON twin; in a `confined` view,
    but for the numbers of history entries and the cursor of changes (a confined caller's
    count a record's entries; the CLI's `--scope` is a filter, and shows the whole log's)."""
    runner = CliRunner()
    page = client.get(path)
    assert page.status_code == 200, (path, page.text[:500])
    assert page.headers["content-type"].startswith("text/html")
    commands = _commands(page.text)
    assert commands, path
    for line, twin in commands:
        words = shlex.split(line)
        assert words[0] == "lantern"
        ran = runner.invoke(cli, words[1:])
        shown = client.get(twin)
        assert shown.status_code == 200, (twin, shown.text)
        assert shown.headers["content-type"].startswith("application/json")
        # What the CLI prints, key order included; sizes on disk (a shared PostgreSQL
        # database grows under other tests) and `db check`'s checks that need a write
        # transaction, which the read-only view skips, aside.
        if words[-2:] != ["check", "--json"]:
            assert ran.exit_code == 0, (line, ran.output)
            if confined and "changes" in words:
                assert _numbered(shown.text) == _numbered(ran.stdout), line
            else:
                assert _stable(shown.text) == _stable(ran.stdout), line
        else:
            checks = {c["name"]: c["status"] for c in json.loads(shown.text)["checks"]}
            assert set(checks) == {c["name"] for c in json.loads(ran.stdout)["checks"]}


def _numbered(text: str) -> Any:
    """History entries without their numbers, and with their entities' names in lowercase
    (as a confined caller reads them), and no cursor."""
    found = json.loads(text)
    entries = found["entries"] if isinstance(found, dict) else found
    for entry in entries:
        del entry["id"]
        for side in ("before", "after"):
            part = entry["changes"].get(side) or {}
            if "entities" in part:
                part["entities"] = [name.lower() for name in part["entities"]]
    if isinstance(found, dict):
        found["next_cursor"] = found["next_cursor"] is not None
    return found


def test_the_record_page_shows_history_chain_and_evidence(
    demo: tuple[TestClient, dict[str, str], str],
) -> None:
    client, ids, _ = demo
    moved = client.get(f"/memory/{ids['moved']}").text
    assert f'href="/memory/{ids["staging"]}"' in moved  # the chain, back
    assert "He also said that answers should stay short" in moved  # the cited chunk's text
    staging = client.get(f"/memory/{ids['staging']}").text
    assert f'href="/memory/{ids["moved"]}"' in staging  # the chain, forward
    assert '<strong class="event">superseded</strong>' in staging
    prefers = client.get(f"/memory/{ids['prefers']}").text
    assert '<strong class="event">updated</strong>' in prefers
    assert "session:2026-11-30" in prefers and "not evidence of this store" in prefers
    listed = client.get("/memory?status=all&format=json").json()["records"]
    dangling = next(record["id"] for record in listed if record["kind"] == "hypothesis")
    flagged = client.get(f"/memory/{dangling}").text
    assert "dangling: names nothing in this store" in flagged
    deploy = client.get(f"/memory/{ids['deploy']}").text
    assert (
        f'href="/sources/{ids["notes"]}"' in deploy
        and f'href="/chunks/{ids["note_chunk"]}"' in deploy
    )
    # The history, as `memory history --json`.
    history = client.get(f"/memory/{ids['prefers']}?format=json&part=history").json()
    assert [entry["event"] for entry in history] == ["created", "updated"]
    chunk = client.get(f"/chunks/{ids['chat_chunk']}").text
    assert '<mark id="chunk">' in chunk and ids["prefers"] in chunk


def test_lists_filter_and_page_as_the_api_does(
    demo: tuple[TestClient, dict[str, str], str], store_url: str
) -> None:
    client, _, _ = demo
    with Lantern.open(store_url, read_only=True, create=False) as lt:
        for query, kwargs in (
            ("status=all", {"status": "all"}),
            ("scope=project:*&status=all", {"scope": ["project:*"], "status": "all"}),
            ("kind=preference&kind=goal", {"kind": ["preference", "goal"]}),
            ("min_priority=80&min_confidence=0.9", {"min_priority": 80, "min_confidence": 0.9}),
        ):
            expected = [record.id for record in lt.memory.list(limit=100, **kwargs)]
            seen: list[str] = []
            path: str | None = f"/memory?{query}&limit=2"
            while path:
                page = client.get(path)
                seen += re.findall(r'<td class="id"><a href="/memory/(mem_[0-9a-f]+)"', page.text)
                found = re.search(r'<a href="([^"]+)" rel="next">', page.text)
                path = html.unescape(found.group(1)) if found else None
            assert seen == expected, query
        # Changes page by cursor too.
        every = [entry.id for entry in lt.memory.changes(limit=100)]
    seen_changes: list[int] = []
    cursor: str | None = None
    while True:
        twin = client.get(
            "/changes",
            params={"limit": 3, "format": "json", **({"after": cursor} if cursor else {})},
        ).json()
        seen_changes += [entry["id"] for entry in twin["entries"]]
        cursor = twin["next_cursor"]
        if cursor is None:
            break
    assert seen_changes == every


def test_bad_input_is_one_line_and_a_status(demo: tuple[TestClient, dict[str, str], str]) -> None:
    client, _, _ = demo
    for path, status, message in (
        ("/memory?min_priority=high", 400, "min_priority must be a whole number"),
        ("/memory?status=bogus", 400, "status must be one of"),
        ("/memory?after=c1_garbage", 400, "not a cursor"),
        ("/memory?limit=0", 400, "limit must be an integer from 1 to 10000"),
        ("/memory/search", 200, ""),
        ("/memory/mem_0000000000000000", 404, "no memory record with id"),
        ("/sources/src_nope", 404, "no source"),
        ("/chunks/chk_nope", 404, "no chunk with id"),
        ("/changes?event=renamed", 400, "event must be one of"),
        ("/?format=json&part=nothing", 404, "this page has no part"),
    ):
        page = client.get(path)
        assert page.status_code == status, (path, page.text[:300])
        assert message in html.unescape(page.text), path
        if status != 200:
            joined = "&" if "?" in path else "?"
            error = client.get(f"{path}{joined}format=json").json()["error"]
            assert message in error["message"] and error["code"]
    assert client.get("/memory/search?format=json").json()["error"]["code"] == "invalid_input"


def test_a_scope_restricted_view_shows_nothing_outside(tmp_path: Path) -> None:
    db = tmp_path / "s.db"
    ids = build_demo_store(db)
    with Lantern.open(db, read_only=True, create=False, scopes=["user:*"]) as lantern:
        app = build_app(Site(lantern, ("--db", str(db)), ("user:*",)), token=TOKEN)
        client = TestClient(app, base_url=BASE, headers={"Authorization": f"Bearer {TOKEN}"})
        # The commands it shows confine themselves as the view is confined.
        for path in ("/", "/memory?status=all", "/memory/search?q=staging+server", "/changes"):
            _check_twins(client, path, confined=True)
        listed = client.get("/memory?status=all&format=json").json()["records"]
        assert listed and {r["scope"] for r in listed} == {"user:raphael"}
        stats = client.get("/?format=json&part=stats").json()
        assert stats["total"] == len(listed) and stats["scope_count"] == 1
        assert "inspect" not in client.get("/?format=json").json()
        outside = client.get(f"/memory/{ids['moved']}")
        assert outside.status_code == 404
        assert "The staging server" not in outside.text
        assert client.get(f"/memory/{ids['prefers']}").status_code == 200
        assert "project:lantern" not in client.get("/changes").text
        assert client.get("/memory/search?q=staging+server&status=all&format=json").json() == {
            "records": [],
            "next_cursor": None,
            "search": {"mode": "any", "model": None, "without_vector": 0},
        }
        health = client.get("/health")
        assert health.status_code == 403 and "restricted to the scopes user:*" in health.text
        # Evidence has no scope, as in the MCP server; the records citing it stay fenced.
        chunk = client.get(f"/chunks/{ids['chat_chunk']}?format=json").json()
        assert ids["prefers"] in chunk["cited_by"] and ids["moved"] not in chunk["cited_by"]
        assert "user:*" in client.get("/").text


def test_an_empty_store_renders(tmp_path: Path) -> None:
    db = tmp_path / "empty.db"
    Lantern.open(db).close()
    with Lantern.open(db, read_only=True, create=False) as lantern:
        client = _client(lantern, str(db))
        for path in (
            "/",
            "/memory",
            "/memory/search?q=x",
            "/changes",
            "/sources",
            "/search?q=x",
            "/health",
        ):
            assert client.get(path).status_code == 200, path
        assert client.get("/memory?format=json").json() == {"records": [], "next_cursor": None}
        assert "No record matches." in client.get("/memory").text


@pytest.mark.parametrize("generation", [1, 2])
def test_a_legacy_store_is_refused_then_shown_once_upgraded(
    tmp_path: Path, generation: int
) -> None:
    db = tmp_path / "legacy.db"
    build_legacy_store(db, generation)
    refused = lantern_process("--db", str(db), "ui", "--port", "0")
    assert refused.returncode == 5
    assert refused.stderr.strip().splitlines() == [
        f"Error: {db} is a legacy generation-{generation} store; upgrade it with: "
        f"lantern --db {db} db upgrade"
    ]
    with Lantern.open(db, require_current=False) as lt:
        lt.upgrade(backup=False)
    with Lantern.open(db, read_only=True, create=False) as lantern:
        client = _client(lantern, str(db))
        sources = client.get("/sources?format=json").json()
        assert sources
        for path in ["/", "/memory?status=all", "/changes", "/sources", "/search?q=the", "/health"]:
            assert client.get(path).status_code == 200, path
        for source in sources:
            page = client.get(f"/sources/{source['id']}")
            assert page.status_code == 200
            for chunk_id in re.findall(r'href="/chunks/([^"]+)"', page.text):
                assert client.get(f"/chunks/{chunk_id}").status_code == 200


# --- hostile stores ----------------------------------------------------------------------------


class _Tags(HTMLParser):
    """Every tag and attribute of a page."""

    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, list[tuple[str, str | None]]]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, attrs))


def test_a_hostile_store_is_shown_as_text(tmp_path: Path) -> None:
    db = tmp_path / "hostile.db"
    ids = build_hostile_store(db)
    with Lantern.open(db, read_only=True, create=False) as lantern:
        client = _client(lantern, str(db))
        records = client.get("/memory?status=all&limit=100&format=json").json()["records"]
        paths = [
            "/",
            "/memory?status=all&explain=1",
            "/memory/search?q=window+pwned+script&status=all",
            "/changes",
            "/sources",
            f"/sources/{ids['source']}",
            f"/chunks/{ids['wide_chunk']}",
            "/search?q=window+pwned+script",
            *(f"/memory/{record['id']}" for record in records),
        ]
        for path in paths:
            page = client.get(path)
            assert page.status_code == 200, path
            parser = _Tags()
            parser.feed(page.text)
            for tag, attrs in parser.tags:
                assert tag not in ("script", "iframe", "object", "embed", "style", "base"), path
                for name, value in attrs:
                    assert not name.startswith("on"), (path, tag, name)
                    if name in ("href", "src", "action"):
                        assert (value or "").startswith(("/", "http://", "https://")), (path, value)
            assert "javascript:" not in "".join(
                value or "" for _, attrs in parser.tags for name, value in attrs if name == "href"
            )
        wide = client.get(f"/chunks/{ids['wide_chunk']}")
        assert len(wide.text) > 1_000_000
        # An address with invisible characters is shown, marked, and not linked.
        rtl = client.get(f"/sources/{ids['rtl_source']}").text
        assert 'href="https://example.org' not in rtl and "U+202E" in rtl
        # The zero-width characters of a scope are shown, not hidden.
        zero = client.get(f"/memory/{ids['zero_width']}").text
        assert 'title="U+200B">U+200B</span>' in zero and 'title="U+202E">U+202E</span>' in zero
        # The JSON twins hold the stored text as it is.
        twin = client.get(f"/memory/{ids['record_0']}?format=json").json()
        assert twin["content"].startswith("<script>window.__pwned = 'script'</script>")


# --- the command -------------------------------------------------------------------------------


def test_the_filters_are_those_of_memory_list() -> None:
    """A filter added to `memory list` must be added to the view's form, and no other."""
    listing = command_at(cli, ("memory", "list"))
    paging = {"offset", "after", "with_cursor", "explain", "limit", "as_json", "db"}
    options = {p.name for p in listing.params if isinstance(p, click.Option)} - paging
    renamed = {"scopes": "scope", "kinds": "kind", "entities": "entity"}
    assert {renamed.get(name, name) for name in options} == {f.name for f in MEMORY_FILTERS}
    flags = {f.option for f in MEMORY_FILTERS}
    assert flags <= {opt for p in listing.params for opt in p.opts}


def test_help_loads_no_web_library() -> None:
    script = (
        "import json, sys\n"
        "from lantern.cli import cli\n"
        "for args in (['--help'], ['ui', '--help']):\n"
        "    try:\n"
        "        cli.main(args, standalone_mode=False)\n"
        "    except SystemExit:\n"
        "        pass\n"
        "print(json.dumps(sorted(sys.modules)))\n"
    )
    loaded = set(json.loads(python_output(script).splitlines()[-1]))
    assert sorted(loaded & {"starlette", "jinja2", "uvicorn", "lantern.ui", "lantern.ui.app"}) == []


def test_without_the_extra_the_command_says_what_to_install(tmp_path: Path) -> None:
    script = (
        "import sys\n"
        "sys.modules['starlette'] = None\n"
        "from lantern.cli import main\n"
        "sys.argv = ['lantern', '--db', sys.argv[1], 'ui']\n"
        "main()\n"
    )
    import subprocess
    import sys

    ran = subprocess.run(
        [sys.executable, "-c", script, str(tmp_path / "s.db")],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert ran.returncode == 1
    assert ran.stderr.splitlines() == [
        f"Error: the web view needs starlette (the ui extra): {extra_hint('ui')}"
    ]
    assert not (tmp_path / "s.db").exists()


def test_the_command_refuses_bad_options_before_starting(tmp_path: Path) -> None:
    runner = CliRunner()
    db = str(tmp_path / "s.db")
    bad_scope = runner.invoke(cli, ["--db", db, "ui", "--scope", " user:*"])
    assert bad_scope.exit_code == 1 and "surrounding whitespace" in bad_scope.stderr
    nothing = runner.invoke(cli, ["--db", db, "ui", "--port", "0"])
    assert nothing.exit_code == 8 and "no Lantern store" in nothing.stderr
    assert not Path(db).exists()
    assert ScopePolicy.of(["user:*"]).restricted


def _stable(text: str) -> str:
    """JSON text with sizes on disk left out, keys kept in their order."""

    def strip(value: Any) -> Any:
        if isinstance(value, dict):
            return {k: strip(v) for k, v in value.items() if k != "size_bytes"}
        if isinstance(value, list):
            return [strip(item) for item in value]
        return value

    return json.dumps(strip(json.loads(text)), ensure_ascii=False, indent=2)


def _commands(page: str) -> list[tuple[str, str]]:
    """The CLI commands a page shows, each with the link to its JSON twin."""
    found = re.findall(
        r'<code class="cli">(.*?)</code></td>\s*<td class="twin"><a href="([^"]+)">JSON</a>',
        page,
        flags=re.S,
    )
    return [(html.unescape(line), html.unescape(link)) for line, link in found]


def test_the_real_command_serves_a_confined_view(tmp_path: Path) -> None:
    import urllib.error
    import urllib.request

    from tests.ui_helpers import serve

    db = tmp_path / "s.db"
    ids = build_demo_store(db)
    with serve(db, "--scope", "project:*") as view:
        assert view.url.startswith("http://127.0.0.1:") and len(view.token) >= 40

        def fetch(path: str, token: str | None) -> tuple[int, str]:
            headers = {} if token is None else {"Authorization": f"Bearer {token}"}
            request = urllib.request.Request(view.base + path, headers=headers)
            try:
                with urllib.request.urlopen(request, timeout=30) as response:
                    return response.status, response.read().decode()
            except urllib.error.HTTPError as refused:
                return refused.code, refused.read().decode()

        status, body = fetch("/memory?status=all&format=json", view.token)
        assert status == 200
        assert {r["scope"] for r in json.loads(body)["records"]} == {
            "project:lantern",
            "project:lantern/docs",
        }
        assert fetch(f"/memory/{ids['prefers']}", view.token)[0] == 404
        assert "--scope 'project:*'" in html.unescape(fetch("/memory", view.token)[1])
        assert fetch("/memory", None)[0] == 403
        assert fetch("/memory", "not-the-token")[0] == 403
        # Answers come at once on a kept-alive connection (no 40 ms wait for a delayed ACK
        # before each response's body: Nagle's algorithm is off).
        from http.client import HTTPConnection

        address = urlsplit(view.base)
        connection = HTTPConnection(address.hostname or "", address.port, timeout=30)
        started = time.monotonic()
        for _ in range(50):
            connection.request(
                "GET", "/static/lantern.svg", headers={"Authorization": f"Bearer {view.token}"}
            )
            assert connection.getresponse().read()
        connection.close()
        assert time.monotonic() - started < 50 * 0.03


def test_the_connection_limits_default_as_the_command_shows() -> None:
    from lantern.cli.ui_command import DEFAULT_MAX_CONNECTIONS, DEFAULT_REQUEST_TIMEOUT
    from lantern.serving.connections import ServerLimits

    limits = ServerLimits()
    assert (limits.max_connections, limits.request_timeout) == (
        DEFAULT_MAX_CONNECTIONS,
        DEFAULT_REQUEST_TIMEOUT,
    )


def _half_open(where: tuple[str, int]) -> Any:
    """A connection that sends half a request and never the rest."""
    import socket

    sock = socket.create_connection(where, timeout=30)
    sock.sendall(b"GET /memory HTTP/1.1\r\nHost: 127.0.0.1\r\n")
    return sock


def _closed_by_server(sock: Any, deadline: float) -> float | None:
    """When the server closed `sock` (end of file, a reset), or None if not by `deadline`."""
    sock.settimeout(max(0.01, deadline - time.monotonic()))
    try:
        data = sock.recv(1024)
    except TimeoutError:
        return None
    except ConnectionResetError:
        return time.monotonic()
    assert data == b"" or data.startswith(b"HTTP/1.1 "), data
    return time.monotonic()


def test_a_half_sent_request_is_closed_after_the_deadline(tmp_path: Path) -> None:
    """A slow-loris (headers begun, never ended) holds its connection `--request-timeout`
    seconds, no longer, while a good client is served meanwhile."""
    from tests.ui_helpers import serve

    db = tmp_path / "s.db"
    build_demo_store(db)
    timeout = 1.0
    with serve(db, "--request-timeout", str(timeout)) as view:
        address = urlsplit(view.base)
        where = (address.hostname or "", address.port or 0)
        started = time.monotonic()
        stalled = [_half_open(where) for _ in range(20)]
        with _client_of(view) as client:
            assert client.get("/memory").status_code == 200
        closed = [_closed_by_server(sock, started + timeout + 10) for sock in stalled]
        for sock in stalled:
            sock.close()
    assert None not in closed
    assert all(moment is not None and moment - started >= timeout - 0.1 for moment in closed)


def test_past_the_connection_cap_the_oldest_waiting_connection_is_closed(tmp_path: Path) -> None:
    from tests.ui_helpers import serve

    db = tmp_path / "s.db"
    build_demo_store(db)
    with serve(db, "--max-connections", "5", "--request-timeout", "60") as view:
        address = urlsplit(view.base)
        where = (address.hostname or "", address.port or 0)
        stalled = [_half_open(where) for _ in range(20)]
        with _client_of(view) as client:
            assert client.get("/memory").status_code == 200
        deadline = time.monotonic() + 5
        closed = [_closed_by_server(sock, deadline) for sock in stalled[:15]]
        for sock in stalled:
            sock.close()
    assert closed.count(None) == 0  # the first ones made room for the later ones


def _client_of(view: Any) -> Any:
    import httpx

    return httpx.Client(
        base_url=view.base, headers={"Authorization": f"Bearer {view.token}"}, timeout=30
    )
