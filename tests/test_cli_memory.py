"""`lantern memory ...` through Click's runner and through the real executable."""

from __future__ import annotations

import json

import pytest

from lantern.api import Lantern
from tests.helpers import CliRun, ProcessRun

RECORD_KEYS = [
    "id",
    "kind",
    "content",
    "scope",
    "priority",
    "urgency",
    "confidence",
    "status",
    "created_at",
    "updated_at",
    "expires_at",
    "supersedes_id",
    "source_refs",
]


def _add(run_cli: CliRun, *args: str) -> dict[str, object]:
    result = run_cli("memory", "add", *args, "--json")
    assert result.exit_code == 0, result.output
    record: dict[str, object] = json.loads(result.stdout)
    return record


def test_add_prints_the_id_and_json_prints_the_record(run_cli: CliRun) -> None:
    result = run_cli(
        "memory",
        "add",
        "--kind",
        "preference",
        "--scope",
        "user:raphael",
        "--priority",
        "90",
        "--confidence",
        "1.0",
        "Raphael prefers separate branches on his repos.",
    )
    assert result.exit_code == 0, result.output
    record_id = result.stdout.strip()
    assert record_id.startswith("mem_") and len(record_id) == 20
    shown = json.loads(run_cli("memory", "show", record_id, "--json").stdout)
    assert list(shown) == [*RECORD_KEYS, "entities"]
    assert shown["id"] == record_id
    assert shown["priority"] == 90 and shown["confidence"] == 1.0
    assert isinstance(shown["created_at"], int) and shown["expires_at"] is None


def test_json_shape_of_a_full_record_is_pinned(run_cli: CliRun) -> None:
    record = _add(
        run_cli,
        "--kind",
        "task_state",
        "--scope",
        "project:lantern",
        "--priority",
        "70",
        "--urgency",
        "30",
        "--confidence",
        "0.5",
        "--expires-at",
        "2100-01-01T00:00:00Z",
        "--allow-dangling",  # no such chunk in this store
        "--source-ref",
        "chunk:chk_0123456789abcdef",
        "--source-ref",
        '{"type": "url", "id": "https://example.org", "note": "ü"}',
        "Step 3 of 5 is done.",
    )
    created = record["created_at"]
    assert isinstance(created, int)
    assert record == {
        "id": "mem_41331dc69a01101d",
        "kind": "task_state",
        "content": "Step 3 of 5 is done.",
        "scope": "project:lantern",
        "priority": 70,
        "urgency": 30,
        "confidence": 0.5,
        "status": "active",
        "created_at": created,
        "updated_at": created,
        "expires_at": 4102444800,
        "supersedes_id": None,
        "source_refs": [
            {"id": "chk_0123456789abcdef", "type": "chunk"},
            {"id": "https://example.org", "note": "ü", "type": "url"},
        ],
    }
    assert list(record) == RECORD_KEYS


def test_list_show_archive_json(run_cli: CliRun) -> None:
    low = _add(run_cli, "--kind", "fact", "--scope", "s", "--priority", "10", "low")
    high = _add(run_cli, "--kind", "fact", "--scope", "s", "--priority", "90", "high")
    _add(run_cli, "--kind", "goal", "--scope", "other", "elsewhere")
    listed = json.loads(run_cli("memory", "list", "--scope", "s", "--json").stdout)
    assert [r["id"] for r in listed] == [high["id"], low["id"]]
    assert all(list(r) == RECORD_KEYS for r in listed)
    archived = json.loads(run_cli("memory", "archive", str(low["id"]), "--json").stdout)
    assert archived["status"] == "archived" and list(archived) == RECORD_KEYS
    again = run_cli("memory", "archive", str(low["id"]), "--json")
    assert again.exit_code == 0 and json.loads(again.stdout) == archived
    active = json.loads(run_cli("memory", "list", "--scope", "s", "--json").stdout)
    assert [r["id"] for r in active] == [high["id"]]
    every = json.loads(run_cli("memory", "list", "--status", "all", "--json").stdout)
    assert len(every) == 3
    kinds = json.loads(run_cli("memory", "list", "--kind", "goal", "--json").stdout)
    assert [r["content"] for r in kinds] == ["elsewhere"]
    assert json.loads(run_cli("memory", "list", "--limit", "1", "--offset", "1", "--json").stdout)[
        0
    ]["content"] in {"high", "elsewhere"}


def test_human_output(run_cli: CliRun) -> None:
    record = _add(run_cli, "--kind", "fact", "--scope", "s", "multi\nline  content")
    listed = run_cli("memory", "list")
    assert listed.exit_code == 0
    assert str(record["id"]) in listed.stdout and "multi line content" in listed.stdout
    shown = run_cli("memory", "show", str(record["id"]))
    assert "status:" in shown.stdout and "  multi\n  line  content" in shown.stdout


def test_duplicate_add_says_so_on_stderr_and_exits_zero(run_cli: CliRun) -> None:
    first = _add(run_cli, "--kind", "fact", "same thing")
    result = run_cli("memory", "add", "--kind", "fact", "--priority", "1", "same   thing")
    assert result.exit_code == 0
    assert result.stdout.strip() == first["id"]
    assert "already stored" in result.stderr
    listed = json.loads(run_cli("memory", "list", "--json").stdout)
    assert [r["priority"] for r in listed] == [50]


def test_content_from_stdin(run_cli: CliRun) -> None:
    result = run_cli("memory", "add", "--kind", "observation", "-", "--json", input="from a pipe\n")
    assert result.exit_code == 0, result.output
    # The line break that ends standard input is dropped; the rest is kept as it is.
    assert json.loads(result.stdout)["content"] == "from a pipe"


def test_supersedes_option(run_cli: CliRun) -> None:
    old = _add(run_cli, "--kind", "fact", "uses make")
    new = _add(run_cli, "--kind", "fact", "--supersedes", str(old["id"]), "uses just")
    assert new["supersedes_id"] == old["id"]
    shown = json.loads(run_cli("memory", "show", str(old["id"]), "--json").stdout)
    assert shown["status"] == "superseded"
    again = run_cli("memory", "add", "--kind", "fact", "--supersedes", str(old["id"]), "uses x")
    assert again.exit_code == 1
    assert f"already superseded by {new['id']}" in again.stderr


BAD_ADDS = [
    (["--kind", "opinion", "x"], 2, "'opinion' is not one of 'fact', 'preference'"),
    (["--kind", "fact", ""], 1, "CONTENT must not be empty"),
    (["--kind", "fact", "   "], 1, "CONTENT must not be empty"),
    (["--kind", "fact", "--priority", "101", "x"], 1, "priority must be an integer from 0 to 100"),
    (["--kind", "fact", "--priority", "high", "x"], 2, "'high' is not a valid integer"),
    (["--kind", "fact", "--urgency", "-3", "x"], 1, "urgency must be an integer from 0 to 100"),
    (["--kind", "fact", "--confidence", "2", "x"], 1, "confidence must be a number from 0.0"),
    (["--kind", "fact", "--confidence", "nan", "x"], 1, "confidence must be a number"),
    (["--kind", "fact", "--expires-at", "soon", "x"], 1, "--expires-at must be unix seconds"),
    (["--kind", "fact", "--scope", "", "x"], 1, "scope must not be empty"),
    (["--kind", "fact", "--source-ref", "nocolon", "x"], 1, "source reference must be TYPE:ID"),
    (["--kind", "fact", "--source-ref", "{bad", "x"], 1, "not valid JSON"),
    (["--kind", "fact", "--supersedes", "mem_missing", "x"], 1, "no memory record"),
    (["x"], 2, "Missing option '--kind'"),
    (["--kind", "fact"], 2, "Missing argument 'CONTENT'"),
    (["--kind", "fact", "--bogus", "x"], 2, "No such option"),
]


@pytest.mark.parametrize(("args", "code", "message"), BAD_ADDS)
def test_bad_add_input_fails_cleanly_and_changes_nothing(
    run_cli: CliRun, args: list[str], code: int, message: str
) -> None:
    _add(run_cli, "--kind", "fact", "existing")
    before = run_cli("memory", "list", "--status", "all", "--include-expired", "--json").stdout
    result = run_cli("memory", "add", *args)
    assert result.exit_code == code
    assert message in result.stderr
    assert "Traceback" not in result.output
    if code == 1:
        assert len(result.stderr.strip().splitlines()) == 1
    after = run_cli("memory", "list", "--status", "all", "--include-expired", "--json").stdout
    assert after == before


@pytest.mark.parametrize(
    ("args", "code", "message"),
    [
        (["list", "--status", "gone"], 2, "'gone' is not one of 'active', 'archived'"),
        (["list", "--kind", "nope"], 2, "'nope' is not one of 'fact'"),
        (["list", "--limit", "0"], 1, "limit must be an integer from 1"),
        (["list", "--offset", "-1"], 1, "offset must be a non-negative integer"),
        (["list", "--limit", "many"], 2, "is not a valid integer"),
        (["show", "mem_0000000000000000"], 1, "no memory record with id"),
        (["archive", "mem_0000000000000000"], 1, "no memory record with id"),
        (["show"], 2, "Missing argument 'ID'"),
    ],
)
def test_bad_input_for_other_commands(
    run_cli: CliRun, store_url: str, args: list[str], code: int, message: str
) -> None:
    Lantern.open(store_url).close()
    result = run_cli("memory", *args)
    assert result.exit_code == code
    assert message in result.stderr
    assert "Traceback" not in result.output


def test_errors_with_json_print_an_error_object(run_cli: CliRun, store_url: str) -> None:
    Lantern.open(store_url).close()
    result = run_cli("memory", "show", "mem_0000000000000000", "--json")
    assert result.exit_code == 1
    assert json.loads(result.stdout) == {
        "error": {
            "code": "not_found",
            "message": "no memory record with id 'mem_0000000000000000'",
        }
    }
    bad = run_cli("memory", "add", "--json", "--priority", "101", "x", "--kind", "fact")
    assert json.loads(bad.stdout)["error"]["code"] == "invalid_input"
    usage = run_cli("memory", "add", "--json", "--kind", "nope", "x")
    assert json.loads(usage.stdout)["error"]["code"] == "usage"


def test_real_executable_add_list_show_archive(run_lantern: ProcessRun) -> None:
    added = run_lantern("memory", "add", "--kind", "goal", "--scope", "p", "--json", "Ship v0")
    assert added.returncode == 0, added.stderr
    record = json.loads(added.stdout)
    listed = run_lantern("memory", "list", "--scope", "p", "--json")
    assert json.loads(listed.stdout) == [record]
    shown = run_lantern("memory", "show", record["id"], "--json")
    assert json.loads(shown.stdout) == {**record, "entities": []}
    archived = run_lantern("memory", "archive", record["id"], "--json")
    assert json.loads(archived.stdout)["status"] == "archived"
    from_stdin = run_lantern("memory", "add", "--kind", "fact", "-", input="piped text")
    assert from_stdin.returncode == 0 and from_stdin.stdout.startswith("mem_")
    missing = run_lantern("memory", "show", "mem_0000000000000000")
    assert missing.returncode == 1
    assert missing.stderr.strip() == "Error: no memory record with id 'mem_0000000000000000'"
