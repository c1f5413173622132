"""The memory lifecycle and retrieval commands through Click's runner and the real executable:
JSON shapes pinned, errors as one line with the documented exit code, the store unchanged."""

from __future__ import annotations

import json
from typing import Any

import pytest

from lantern.api import Lantern
from tests.helpers import ORIGIN_KEYS, CliRun, ProcessRun
from tests.test_cli_memory import RECORD_KEYS

HISTORY_KEYS = ["id", "record_id", "event", "at", "changes"]


def _json(result: Any) -> Any:
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def _add(run_cli: CliRun, *args: str) -> dict[str, Any]:
    record: dict[str, Any] = _json(run_cli("memory", "add", *args, "--json"))
    return record


def _snapshot(run_cli: CliRun) -> bytes:
    """Every memory record and history entry, as the export writes them."""
    result = run_cli("export", "--memories")
    assert result.exit_code == 0, result.output
    return result.stdout_bytes


def test_update_supersede_restore_history_show(run_cli: CliRun) -> None:
    record = _add(run_cli, "--kind", "fact", "--scope", "p", "The build uses make.")
    updated = _json(
        run_cli(
            "memory",
            "update",
            record["id"],
            "--priority",
            "80",
            "--add-ref",
            "session:s1",
            "--expires-at",
            "2100-01-01",
            "--json",
        )
    )
    assert list(updated) == RECORD_KEYS
    assert (updated["id"], updated["priority"], updated["expires_at"]) == (
        record["id"],
        80,
        4102444800,
    )
    assert updated["source_refs"] == [{"id": "s1", "type": "session"}]
    cleared = _json(run_cli("memory", "update", record["id"], "--no-expiry", "--json"))
    assert cleared["expires_at"] is None

    new_id = run_cli("memory", "supersede", record["id"], "--content", "The build uses just.")
    assert new_id.exit_code == 0, new_id.output
    new = _json(run_cli("memory", "show", new_id.stdout.strip(), "--json"))
    assert list(new) == [*RECORD_KEYS, "entities"]
    assert (new["supersedes_id"], new["priority"], new["scope"]) == (record["id"], 80, "p")
    chain = _json(run_cli("memory", "show", record["id"], "--chain", "--json"))
    assert list(chain) == [*RECORD_KEYS, "replaces", "replaced_by", "entities"]
    assert (chain["status"], chain["replaces"], chain["replaced_by"]) == (
        "superseded",
        [],
        [new["id"]],
    )
    human = run_cli("memory", "show", new["id"])
    assert f"replaces:      {record['id']}" in human.stdout
    assert "replaced_by:   -" in human.stdout

    history = _json(run_cli("memory", "history", record["id"], "--json"))
    assert all(list(entry) == HISTORY_KEYS for entry in history)
    assert [entry["event"] for entry in history] == ["created", "updated", "updated", "superseded"]
    assert history[-1]["changes"]["superseded_by"] == new["id"]
    text = run_cli("memory", "history", record["id"]).stdout
    assert "priority: 50 -> 80" in text and f"by {new['id']}" in text

    archived = _add(run_cli, "--kind", "goal", "to archive")
    run_cli("memory", "archive", archived["id"])
    restored = _json(run_cli("memory", "restore", archived["id"], "--json"))
    assert restored["status"] == "active" and list(restored) == RECORD_KEYS


def test_update_and_supersede_read_content_from_stdin(run_cli: CliRun) -> None:
    record = _add(run_cli, "--kind", "fact", "before")
    updated = _json(
        run_cli("memory", "update", record["id"], "--content", "-", "--json", input="after\n")
    )
    assert updated["content"] == "after"
    new = _json(
        run_cli("memory", "supersede", record["id"], "--content", "-", "--json", input="next")
    )
    assert new["content"] == "next"


def test_search_json_has_score_last_and_explain_before_it(run_cli: CliRun) -> None:
    first = _add(run_cli, "--kind", "fact", "--priority", "90", "lamp oil and wick")
    second = _add(run_cli, "--kind", "fact", "lamp lamp lamp")
    _add(run_cli, "--kind", "fact", "unrelated")
    matches = _json(run_cli("memory", "search", "lamp", "--json"))
    assert [m["id"] for m in matches] == [second["id"], first["id"]]
    assert all(list(m) == [*RECORD_KEYS, "score", *ORIGIN_KEYS] for m in matches)
    assert matches[0]["score"] >= matches[1]["score"]
    assert [[m[key] for key in ORIGIN_KEYS] for m in matches] == [
        ["any", 1, None, None],
        ["any", 2, None, None],
    ]
    explained = _json(run_cli("memory", "search", "lamp", "--explain", "--json"))
    assert list(explained[0]) == [*RECORD_KEYS, "explain", "score", *ORIGIN_KEYS]
    assert list(explained[0]["explain"]) == [
        "relevance",
        "status_rank",
        "priority",
        "urgency",
        "updated_at",
        "id",
    ]
    policy = _json(run_cli("memory", "search", "lamp", "--order", "policy", "--json"))
    assert [m["id"] for m in policy] == [first["id"], second["id"]]
    human = run_cli("memory", "search", "lamp", "--explain")
    assert human.exit_code == 0 and "[relevance=" in human.stdout and first["id"] in human.stdout
    assert "[mode=any keyword_rank=1 semantic_rank=- similarity=-]" in human.stdout
    assert _json(run_cli("memory", "search", "***", "--json")) == []
    both = _json(run_cli("memory", "search", "lamp wick", "--mode", "keyword", "--json"))
    assert [(m["id"], m["mode"]) for m in both] == [(first["id"], "keyword")]


def test_a_relevance_search_pages_with_a_cursor(run_cli: CliRun) -> None:
    """12 records match, 2 per page: every page but the last has a cursor, with and without
    --json, and the pages hold each match once."""
    for n in range(12):
        _add(run_cli, "--kind", "fact", "--priority", str(n), f"deploy step {n}")
    everything = _json(run_cli("memory", "search", "deploy", "--limit", "20", "--json"))
    seen: list[str] = []
    after: list[str] = []
    for _page in range(6):
        page = _json(
            run_cli("memory", "search", "deploy", "--limit", "2", "--with-cursor", "--json", *after)
        )
        seen += [m["id"] for m in page["records"]]
        if page["next_cursor"] is None:
            break
        after = ["--after", page["next_cursor"]]
    assert seen == [m["id"] for m in everything] and page["next_cursor"] is None
    human = run_cli("memory", "search", "deploy", "--limit", "2", "--with-cursor")
    assert "more after this page: --after c2_" in human.stderr
    last = run_cli("memory", "search", "deploy", "--limit", "20", "--with-cursor")
    assert "lantern: this is the last page" in last.stderr


def test_list_filters_explain_and_cursor_wrapper(run_cli: CliRun) -> None:
    for n in range(5):
        _add(
            run_cli, "--kind", "fact", "--scope", f"team/{n % 2}*%_", "--priority", str(n), f"r{n}"
        )
    _add(run_cli, "--kind", "goal", "--scope", "other", "--source-ref", "session:x", "cited")
    plain = _json(run_cli("memory", "list", "--scope", "team/*", "--json"))
    assert [r["content"] for r in plain] == ["r4", "r3", "r2", "r1", "r0"]
    literal = _json(run_cli("memory", "list", "--scope", "team/1\\*%_", "--json"))
    assert [r["content"] for r in literal] == ["r3", "r1"]  # "\\*" is a literal star
    ambiguous = run_cli("memory", "list", "--scope", "team/1*%_")
    assert ambiguous.exit_code == 1 and "has a * before its end" in ambiguous.stderr
    by_name = _json(run_cli("memory", "list", "--scope", "team/1*", "--json"))
    assert by_name == []  # team/1 and what lies under it: not team/1*%_
    by_prefix = _json(run_cli("memory", "list", "--scope", "team/1\\**", "--json"))
    assert [r["content"] for r in by_prefix] == ["r3", "r1"]
    high = _json(run_cli("memory", "list", "--min-priority", "3", "--json"))
    assert [r["content"] for r in high] == ["cited", "r4", "r3"]
    cited = _json(run_cli("memory", "list", "--cites", "session:x", "--json"))
    assert [r["content"] for r in cited] == ["cited"]
    explained = _json(run_cli("memory", "list", "--explain", "--limit", "1", "--json"))
    assert list(explained[0]) == [*RECORD_KEYS, "explain"]
    assert list(explained[0]["explain"]) == [
        "status_rank",
        "priority",
        "urgency",
        "updated_at",
        "id",
    ]

    page = _json(run_cli("memory", "list", "--limit", "4", "--json", "--with-cursor"))
    assert list(page) == ["records", "next_cursor"]
    assert len(page["records"]) == 4 and page["next_cursor"].startswith("c1_")
    rest = _json(
        run_cli(
            "memory",
            "list",
            "--limit",
            "4",
            "--after",
            page["next_cursor"],
            "--with-cursor",
            "--json",
        )
    )
    assert rest["next_cursor"] is None
    everything = _json(run_cli("memory", "list", "--json"))
    assert page["records"] + rest["records"] == everything
    human = run_cli("memory", "list", "--limit", "2", "--with-cursor")
    assert "--after" not in human.stdout  # data on stdout, the hint on stderr
    assert "more after this page: --after c1_" in human.stderr


def test_expire_forget_cites_check_refs(run_cli: CliRun) -> None:
    due = _add(run_cli, "--kind", "task_state", "--expires-at", "1000", "stale step")
    _add(run_cli, "--kind", "task_state", "--expires-at", "4102444800", "later step")
    dry = _json(run_cli("memory", "expire", "--dry-run", "--json"))
    assert [r["id"] for r in dry] == [due["id"]] and dry[0]["status"] == "active"
    human = run_cli("memory", "expire", "--dry-run")
    assert "would archive 1 expired record" in human.stderr
    expired = _json(run_cli("memory", "expire", "--json"))
    assert [(r["id"], r["status"]) for r in expired] == [(due["id"], "archived")]
    assert _json(run_cli("memory", "expire", "--json")) == []

    cited = _add(
        run_cli,
        "--kind",
        "fact",
        "--allow-dangling",
        "--source-ref",
        "chunk:chk_00000000000000aa",
        "cites a missing chunk",
    )
    dangling = _json(run_cli("memory", "check-refs", "--json"))
    assert dangling == [{"record_id": cited["id"], "type": "chunk", "id": "chk_00000000000000aa"}]
    citing = _json(run_cli("memory", "cites", "chunk:chk_00000000000000aa", "--json"))
    assert [r["id"] for r in citing] == [cited["id"]]
    wrapped = _json(
        run_cli("memory", "cites", "chunk:chk_00000000000000aa", "--json", "--with-cursor")
    )
    assert wrapped == {"records": citing, "next_cursor": None}

    forgot = _json(run_cli("memory", "forget", cited["id"], "--yes", "--json"))
    assert list(forgot) == ["id", "forgotten_at", "wal_checkpointed"]
    assert forgot["id"] == cited["id"]
    assert _json(run_cli("memory", "check-refs", "--json")) == []
    history = _json(run_cli("memory", "history", cited["id"], "--json"))
    assert [entry["event"] for entry in history] == ["forgotten"]
    assert "cites a missing chunk" not in json.dumps(history)
    assert (
        "its content and earlier history were removed"
        in run_cli("memory", "history", cited["id"]).stdout
    )


BAD_COMMANDS = [
    (["update", "{id}"], 1, "nothing to update"),
    (["update", "{id}", "--priority", "101"], 1, "priority must be an integer from 0 to 100"),
    (["update", "{id}", "--priority", "x"], 2, "'x' is not a valid integer"),
    (["update", "{id}", "--expires-at", "1", "--no-expiry"], 1, "not both"),
    (["update", "{id}", "--remove-ref", "session:zz"], 1, "has no reference session:zz"),
    (["update", "{id}", "--add-ref", "chunk:chk_0000000000000000"], 1, "names no chunk"),
    (["update", "mem_0000000000000000", "--priority", "1"], 1, "no memory record"),
    (["update", "{id}", "--scope", "x"], 2, "No such option"),
    (["supersede", "{id}"], 1, "would be identical to"),
    (["supersede", "{id}", "--content", "taken"], 1, "an identical memory is already stored"),
    (["supersede", "{id}", "--content", "n", "--kind", "x"], 2, "'x' is not one of 'fact'"),
    (["supersede", "{id}", "--content", "n", "--source-ref", "source:src_0"], 1, "names no"),
    (["supersede", "{superseded}", "--content", "n"], 1, "already superseded by"),
    (["restore", "mem_0000000000000000"], 1, "no memory record"),
    (["restore", "{superseded}"], 1, "only an archived record can be restored"),
    (["forget", "{id}"], 1, "add --yes to confirm"),
    (["forget", "mem_0000000000000000", "--yes"], 1, "no memory record"),
    (["history", "mem_0000000000000000"], 1, "no memory record"),
    (["show", "mem_0000000000000000", "--chain"], 1, "no memory record"),
    (["search"], 2, "Missing argument 'QUERY'"),
    (["search", "x", "--order", "best"], 2, "'best' is not one of"),
    (["search", "x", "--after", "c1_WzFd"], 1, "a listing's cursor continues that listing"),
    (["search", "x", "--mode", "fuzzy"], 2, "'fuzzy' is not one of 'keyword', 'any'"),
    # A forged cursor: a time past SQLite's 64-bit integers, an unknown status.
    (
        ["list", "--after", "c1_WyJhY3RpdmUiLDUwLDAsOTk5OTk5OTk5OTk5OTk5OTk5OTk5OSwibWVtX3giXQ"],
        1,
        "not a cursor from a previous page",
    ),
    (
        ["list", "--after", "c1_WyJnb25lIiw1MCwwLDEsIm1lbV94Il0"],
        1,
        "not a cursor from a previous page",
    ),
    (["search", "x", "--order", "policy", "--after", "bogus"], 1, "not a cursor"),
    (["list", "--min-confidence", "2"], 1, "--min-confidence must be a number"),
    (["list", "--updated-since", "tomorrow"], 1, "--updated-since must be unix seconds"),
    (["list", "--cites", "nocolon"], 1, "must be TYPE:ID"),
    (["list", "--after", "c1_WzFd", "--offset", "2"], 1, "an --offset or a cursor (--after)"),
    (["list", "--scope", " *"], 1, "surrounding whitespace"),
    (["cites", "session"], 1, "must be TYPE:ID"),
    (["cites", '{"type": "chunk"}'], 1, "needs an id"),
    (["add", "--kind", "fact", "--source-ref", "chunk:chk_x", "y"], 1, "names no chunk"),
]


@pytest.mark.parametrize(("args", "code", "message"), BAD_COMMANDS)
def test_bad_input_fails_with_one_line_and_changes_nothing(
    run_cli: CliRun, args: list[str], code: int, message: str
) -> None:
    record = _add(run_cli, "--kind", "fact", "--source-ref", "session:a", "existing")
    _add(run_cli, "--kind", "fact", "taken")
    old = _add(run_cli, "--kind", "fact", "old")
    assert run_cli("memory", "supersede", old["id"], "--content", "newer").exit_code == 0
    ids = {"id": record["id"], "superseded": old["id"]}
    before = _snapshot(run_cli)
    for name, value in ids.items():
        args = [arg.replace("{" + name + "}", value) for arg in args]
    result = run_cli("memory", *args)
    assert result.exit_code == code, result.output
    assert message in result.stderr
    assert "Traceback" not in result.output
    if code == 1:
        assert len(result.stderr.strip().splitlines()) == 1
        assert result.stderr.startswith("Error: ")
    assert _snapshot(run_cli) == before


def test_errors_with_json_print_an_error_object(run_cli: CliRun, store_url: str) -> None:
    Lantern.open(store_url).close()
    result = run_cli("memory", "update", "mem_0000000000000000", "--priority", "1", "--json")
    assert result.exit_code == 1
    assert json.loads(result.stdout)["error"]["code"] == "not_found"
    refused = run_cli("memory", "forget", "mem_0000000000000000", "--json")
    assert json.loads(refused.stdout)["error"]["code"] == "invalid_input"


def test_real_executable_lifecycle(run_lantern: ProcessRun) -> None:
    added = run_lantern("memory", "add", "--kind", "fact", "--scope", "p", "uses make")
    assert added.returncode == 0, added.stderr
    old_id = added.stdout.strip()
    updated = run_lantern("memory", "update", old_id, "--urgency", "40", "--json")
    assert updated.returncode == 0 and json.loads(updated.stdout)["urgency"] == 40
    new = run_lantern("memory", "supersede", old_id, "--content", "uses just", "--json")
    assert new.returncode == 0, new.stderr
    new_record = json.loads(new.stdout)
    found = run_lantern("memory", "search", "just", "--json")
    assert [m["id"] for m in json.loads(found.stdout)] == [new_record["id"]]
    history = run_lantern("memory", "history", old_id, "--json")
    assert [e["event"] for e in json.loads(history.stdout)] == ["created", "updated", "superseded"]
    chain = run_lantern("memory", "show", new_record["id"], "--chain", "--json")
    assert json.loads(chain.stdout)["replaces"] == [old_id]
    again = run_lantern("memory", "supersede", old_id, "--content", "uses bazel")
    assert again.returncode == 1
    assert again.stderr.strip() == (
        f"Error: memory {old_id} is already superseded by {new_record['id']}"
    )
