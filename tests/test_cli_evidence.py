"""`lantern ingest`, `search`, `source ...` and `chunk show` through Click's runner and the real
executable, on every engine: JSON shapes pinned, errors as one line with the documented exit code.
"""

from __future__ import annotations

import json
import os
import pty
import subprocess
from pathlib import Path
from typing import Any

import pytest
from click.testing import Result

from lantern.errors import NoStore
from lantern.evidence.chunking import DEFAULT_TARGET_SIZE
from tests.helpers import (
    CHUNK_KEYS,
    FIRST_CHUNK_KEYS,
    HIT_KEYS,
    LANTERN_BIN,
    SAID_KEYS,
    SOURCE_KEYS,
    CliRun,
    ProcessRun,
)

SUMMARY_KEYS = [
    "added",
    "updated",
    "unchanged",
    "skipped",
    "removed",
    "chunks",
    "bytes",
    "seconds",
    "skipped_paths",
]


@pytest.fixture
def files(tmp_path: Path) -> Path:
    root = tmp_path / "files"
    (root / "notes").mkdir(parents=True)
    (root / "notes" / "lantern.md").write_text(
        "# Lanterns\n\nA lantern keeps evidence.\n\n## Oil\n\nLantern oil burns slowly.\n",
        encoding="utf-8",
    )
    (root / "notes" / "plain.txt").write_text("Nothing to see, don't look.", encoding="utf-8")
    (root / "photo.jpg").write_bytes(b"\xff\xd8\xff\x00\x10JFIF")
    return root


def ok_json(result: Result) -> Any:
    """The JSON a command printed, once it is known to have succeeded."""
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def test_ingest_prints_the_summary(run_cli: CliRun, files: Path) -> None:
    result = run_cli("ingest", str(files), "--json")
    summary = ok_json(result)
    assert list(summary) == SUMMARY_KEYS
    assert {k: v for k, v in summary.items() if k != "seconds"} == {
        "added": 2,
        "updated": 0,
        "unchanged": 0,
        "skipped": 1,
        "removed": 0,
        "chunks": 3,
        "bytes": sum(p.stat().st_size for p in (files / "notes").iterdir()),
        "skipped_paths": [{"path": str(files / "photo.jpg"), "reason": "binary", "named": False}],
    }
    assert isinstance(summary["seconds"], float)
    assert result.stderr == f"lantern: skipped {files / 'photo.jpg'}: binary\n"
    again = run_cli("ingest", str(files / "notes"))
    assert again.exit_code == 0
    assert again.stdout.startswith(
        "added 0, updated 0, unchanged 2, skipped 0, removed 0; 0 chunks written, "
    )
    (files / "notes" / "plain.txt").unlink()
    pruned = ok_json(run_cli("ingest", str(files / "notes"), "--prune", "--json"))
    assert (pruned["removed"], pruned["unchanged"]) == (1, 1)


def test_ingest_from_standard_input(run_cli: CliRun) -> None:
    args = ("ingest", "-", "--uri", "tool://pytest/run-42", "--kind", "tool_output")
    summary = ok_json(
        run_cli(*args, "--metadata", '{"exit_code": 0}', "--json", input="3 passed\n")
    )
    assert list(summary) == SUMMARY_KEYS
    # The line break that ends standard input is dropped.
    assert (summary["added"], summary["chunks"], summary["bytes"]) == (1, 1, 8)
    shown = ok_json(run_cli("source", "show", "tool://pytest/run-42", "--json"))
    assert (shown["kind"], shown["metadata"]) == ("tool_output", {"size": 8, "exit_code": 0})
    again = run_cli(*args, input="3 passed\n")
    assert again.exit_code == 0 and "unchanged 1" in again.stdout
    detected = ok_json(
        run_cli(
            "ingest",
            "-",
            "--uri",
            "session:7",
            "--json",
            input='{"role": "user", "content": "hi"}\n',
        )
    )
    assert detected["added"] == 1
    assert ok_json(run_cli("source", "show", "session:7", "--json"))["kind"] == "transcript"


def test_search_json_hits_and_queries_with_nothing_to_search(run_cli: CliRun, files: Path) -> None:
    ok_json(run_cli("ingest", str(files), "--json"))
    hits = ok_json(run_cli("search", "lantern", "--json"))
    assert len(hits) == 2
    assert all(list(hit) == HIT_KEYS for hit in hits)
    assert hits[0]["uri"] == f"file://{files / 'notes' / 'lantern.md'}"
    assert hits[0]["kind"] == "markdown" and "«" in hits[0]["snippet"]
    assert hits[0]["score"] >= hits[1]["score"]
    both = ok_json(run_cli("search", "lantern", "oil", "--mode", "keyword", "--json"))  # AND
    assert len(both) == 1 and "«Lantern» «oil» burns slowly" in both[0]["snippet"]
    assert [(hit["mode"], hit["keyword_rank"]) for hit in both] == [("keyword", 1)]
    either = ok_json(run_cli("search", "what", "about", "lantern", "oil?", "--json"))  # any
    assert [hit["uri"] for hit in either] == [hit["uri"] for hit in hits]
    assert [(hit["mode"], hit["keyword_rank"]) for hit in either] == [("any", 1), ("any", 2)]
    assert either[0]["semantic_rank"] is None and either[0]["similarity"] is None
    for nothing in ("*", ")", "🔥", ""):
        result = run_cli("search", nothing, "--json")
        assert result.exit_code == 0 and json.loads(result.stdout) == []
    documents = ok_json(run_cli("search", "--kind", "document", "don't", "--json"))
    assert [hit["uri"] for hit in documents] == [f"file://{files / 'notes' / 'plain.txt'}"]
    human = run_cli("search", "oil")
    assert human.exit_code == 0 and "«oil»" in human.stdout.lower()
    assert "keyword_rank" not in human.stdout
    explained = run_cli("search", "oil", "--explain")
    assert "[mode=any keyword_rank=1 semantic_rank=- similarity=-]" in explained.stdout
    refused = run_cli("search", "--raw", "oil", "--mode", "any")
    assert refused.exit_code == 1 and "a raw query goes to the engine" in refused.stderr
    usage = run_cli("search", "oil", "--mode", "fuzzy")
    assert usage.exit_code == 2 and "'fuzzy' is not one of 'keyword', 'any'" in usage.stderr


def test_ids_prints_the_ids_of_hits_and_sources_one_a_line(run_cli: CliRun, files: Path) -> None:
    """What a script captures (`chunk=$(lantern search ... --ids)`): the ids alone, in the
    order of the hits, and nothing when nothing matches."""
    ok_json(run_cli("ingest", str(files), "--json"))
    hits = ok_json(run_cli("search", "lantern", "--json"))
    ids = run_cli("search", "lantern", "--ids")
    assert ids.exit_code == 0, ids.output
    assert ids.stdout == "".join(f"{hit['chunk_id']}\n" for hit in hits)
    first = run_cli("search", "lantern", "--limit", "1", "--ids", "--explain")
    assert first.exit_code == 0 and first.stdout == f"{hits[0]['chunk_id']}\n"
    chunk = ok_json(run_cli("chunk", "show", first.stdout.strip(), "--json"))
    assert chunk["id"] == hits[0]["chunk_id"]
    none = run_cli("search", "🔥", "--ids")
    assert (none.exit_code, none.stdout) == (0, "")
    both = run_cli("search", "lantern", "--ids", "--json")
    assert both.exit_code == 2
    assert "--ids and --json print different things" in both.stderr
    assert "Traceback" not in both.output
    sources = run_cli("source", "list", "--uri-prefix", f"file://{files}/notes/", "--ids")
    assert sources.exit_code == 0, sources.output
    listed = ok_json(run_cli("source", "list", "--uri-prefix", f"file://{files}/notes/", "--json"))
    assert len(listed) == 2
    assert sources.stdout == "".join(f"{item['id']}\n" for item in listed)
    refused = run_cli("source", "list", "--ids", "--json")
    assert refused.exit_code == 2 and "--ids and --json" in refused.stderr


@pytest.mark.parametrize(
    "query", ["C++", "don't", "20.04", "multi-agent", '"unclosed', "AND OR NOT ("]
)
def test_nasty_queries_on_the_command_line(run_cli: CliRun, query: str) -> None:
    text = "C++ and don't, 20.04 for multi-agent: an unclosed quote, and or not."
    ok_json(run_cli("ingest", "-", "--uri", "doc:nasty", "--json", input=text))
    hits = ok_json(run_cli("search", query, "--json"))
    assert [hit["uri"] for hit in hits] == ["doc:nasty"]


def test_raw_query_errors(run_cli: CliRun, files: Path) -> None:
    ok_json(run_cli("ingest", str(files), "--json"))
    result = run_cli("search", "--raw", "AND (")
    assert result.exit_code == 1
    assert result.stderr.startswith("Error: the raw query is not valid")
    assert len(result.stderr.strip().splitlines()) == 1
    as_json = run_cli("search", "--raw", "AND (", "--json")
    assert as_json.exit_code == 1
    assert json.loads(as_json.stdout)["error"]["code"] == "invalid_input"


def test_source_and_chunk_commands(run_cli: CliRun, files: Path) -> None:
    ok_json(run_cli("ingest", str(files / "notes"), "--chunk-size", "100", "--json"))
    listed = ok_json(run_cli("source", "list", "--json"))
    assert all(list(item) == SOURCE_KEYS for item in listed)
    assert [item["chunk_count"] for item in listed] == [2, 1]
    markdown = ok_json(run_cli("source", "list", "--kind", "markdown", "--json"))
    assert len(markdown) == 1
    uri = markdown[0]["uri"]
    prefix = ok_json(run_cli("source", "list", "--uri-prefix", uri[:-3], "--json"))
    assert prefix == markdown
    shown = ok_json(run_cli("source", "show", markdown[0]["id"], "--json"))
    assert list(shown) == [*SOURCE_KEYS, "chunks", "cited_by", "next_cursor"]
    assert all(list(chunk) == CHUNK_KEYS for chunk in shown["chunks"])
    first, second = shown["chunks"]
    assert first["metadata"] == {"heading_path": ["Lanterns"]}
    chunk = ok_json(run_cli("chunk", "show", first["id"], "--context", "1", "--json"))
    assert list(chunk) == [*FIRST_CHUNK_KEYS, "source", "before", "after", "cited_by", *SAID_KEYS]
    assert {k: chunk[k] for k in CHUNK_KEYS} == first
    assert chunk["source"] == {k: shown[k] for k in SOURCE_KEYS}
    assert (chunk["before"], chunk["after"]) == ([], [second])
    human = run_cli("chunk", "show", second["id"], "--context", "1")
    assert human.exit_code == 0
    assert first["text"] in human.stdout and second["text"] in human.stdout
    readable = run_cli("source", "show", uri).stdout
    assert f"  path: {files / 'notes' / 'lantern.md'}" in readable
    assert first["id"] in readable and second["id"] in readable
    removed = ok_json(run_cli("source", "remove", uri, "--json"))
    assert removed == {k: shown[k] for k in SOURCE_KEYS}
    assert ok_json(run_cli("search", "oil", "--json")) == []
    gone = run_cli("source", "show", uri)
    assert gone.exit_code == 1 and gone.stderr == f"Error: no source with id or uri {uri!r}\n"


BAD = [
    (["ingest", "{files}/missing"], 1, "no such file or directory"),
    (["ingest", "{files}", "--chunk-size", "50"], 1, "--chunk-size must be an integer from 100"),
    (["ingest", "{files}", "--chunk-size", "big"], 2, "is not a valid integer"),
    (["ingest", "{files}", "--kind", "Log File"], 1, "kind must be one of"),
    (["ingest", "{files}", "--metadata", "{bad"], 1, "metadata is not valid JSON"),
    (["ingest", "{files}", "--include", ""], 1, "--include patterns must not be empty"),
    (["ingest", "-"], 2, "--uri is required"),
    (["ingest", "-", "{files}", "--uri", "x"], 2, "cannot be combined"),
    (["ingest", "{files}", "--uri", "x"], 2, "use it with - as the path"),
    (["ingest", "-", "--uri", "x", "--prune"], 2, "apply to paths"),
    (["ingest"], 2, "Missing argument"),
    (["search"], 2, "Missing argument"),
    (["search", "x", "--limit", "0"], 1, "limit must be an integer from 1"),
    (["search", "x", "--since", "soon"], 1, "since must be unix seconds"),
    (["search", "--raw", "x AND"], 1, "the raw query is not valid"),
    (["source", "show", "src_0000000000000000"], 1, "no source with id or uri"),
    (["source", "remove", "nothing"], 1, "no source with id or uri"),
    (["source", "list", "--limit", "0"], 1, "limit must be an integer from 1"),
    (["chunk", "show", "chk_0000000000000000"], 1, "no chunk with id"),
    (["chunk", "show", "x", "--context", "-1"], 1, "context must be an integer from 0"),
]


@pytest.mark.parametrize(("args", "code", "message"), BAD)
def test_bad_input_fails_cleanly_and_changes_nothing(
    run_cli: CliRun, files: Path, args: list[str], code: int, message: str
) -> None:
    ok_json(run_cli("ingest", str(files / "notes"), "--json"))
    before = run_cli("source", "list", "--json").stdout
    result = run_cli(*(arg.replace("{files}", str(files)) for arg in args), input="piped")
    assert result.exit_code == code, result.output
    assert message in result.stderr
    assert "Traceback" not in result.output
    if code == 1:
        assert len(result.stderr.strip().splitlines()) == 1
    assert run_cli("source", "list", "--json").stdout == before


def test_help_states_the_default_chunk_size(run_cli: CliRun) -> None:
    shown = " ".join(run_cli("ingest", "--help").stdout.split())
    assert f"(default {DEFAULT_TARGET_SIZE})" in shown


def test_standard_input_must_be_utf8(run_cli: CliRun) -> None:
    result = run_cli("ingest", "-", "--uri", "tool://x", input=b"caf\xe9")
    assert result.exit_code == 1
    assert result.stderr == "Error: standard input is not valid UTF-8 text\n"
    assert run_cli("source", "list", "--json").exit_code == NoStore.exit_code  # none was made


def test_real_executable(run_lantern: ProcessRun, files: Path) -> None:
    ingested = run_lantern("ingest", str(files), "--json")
    assert ingested.returncode == 0, ingested.stderr
    assert json.loads(ingested.stdout)["added"] == 2
    # On a pipe there is no progress bar: stderr holds only the report of what was skipped.
    assert ingested.stderr == f"lantern: skipped {files / 'photo.jpg'}: binary\n"
    piped = run_lantern("ingest", "-", "--uri", "tool://ls", input="lantern notes\nplain text\n")
    assert piped.returncode == 0 and piped.stderr == ""
    hits = json.loads(run_lantern("search", "lantern", "--json").stdout)
    assert {hit["uri"] for hit in hits} == {f"file://{files / 'notes' / 'lantern.md'}", "tool://ls"}
    assert all(list(hit) == HIT_KEYS for hit in hits)
    empty = run_lantern("search", "🔥", "--json")
    assert (empty.returncode, json.loads(empty.stdout)) == (0, [])
    bad = run_lantern("search", "--raw", "AND (")
    assert bad.returncode == 1 and len(bad.stderr.strip().splitlines()) == 1
    missing = run_lantern("chunk", "show", "chk_0000000000000000")
    assert missing.returncode == 1
    assert missing.stderr == "Error: no chunk with id 'chk_0000000000000000'\n"


def test_progress_bar_on_a_terminal(store_url: str, files: Path) -> None:
    """With stderr on a terminal, a long run shows a progress bar there."""
    leader, follower = pty.openpty()
    process = subprocess.Popen(
        [str(LANTERN_BIN), "--db", store_url, "ingest", str(files / "notes")],
        stdout=subprocess.PIPE,
        stderr=follower,
        env={**os.environ, "COLUMNS": "80"},
    )
    os.close(follower)
    terminal = b""
    while True:
        try:
            data = os.read(leader, 4096)
        except OSError:  # the terminal closes with the last process holding it
            break
        if not data:
            break
        terminal += data
    os.close(leader)
    stdout, _ = process.communicate(timeout=120)
    assert process.returncode == 0
    assert b"Ingesting" in terminal and b"100%" in terminal
    assert stdout.startswith(b"added 2,")
