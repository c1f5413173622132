"""`lantern embed`, `db settings`, `memory similar` and the semantic modes on the command line,
through Click's runner and the real executable: JSON shapes pinned, notes on stderr, errors as
one line with the documented exit code. The store is SQLite (the engines are compared in
`test_semantic_search.py`); the provider is `hashing`, which needs no model.
"""

from __future__ import annotations

import itertools
import json
import re
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from lantern.api import Lantern
from lantern.cli import cli
from tests.helpers import HIT_KEYS, ProcessRun, extra_hint, lantern_process
from tests.memory_helpers import add_source

HASHING = "lantern-hashing-v1-256"
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
MATCH_KEYS = [*RECORD_KEYS, "score", "mode", "keyword_rank", "semantic_rank", "similarity"]


@pytest.fixture
def store(db_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setenv("LANTERN_EMBED_MODEL", "hashing")
    for content in (
        "Rosa lives in Campo de Ourique.",
        "The migration ticket is CLM-2291.",
        "Rosa prefers green tea.",
    ):
        assert run(str(db_path), "memory", "add", "--kind", "fact", content).exit_code == 0
    assert (
        run(str(db_path), "ingest", "-", "--uri", "note:a", input="Exit code 137 again.").exit_code
        == 0
    )
    return str(db_path)


def run(store: str, *args: str, input: str | None = None) -> Result:
    return CliRunner().invoke(cli, ["--db", store, *args], input=input)


def ok_json(result: Result) -> Any:
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def test_embed_prints_its_summary(store: str) -> None:
    summary = ok_json(run(store, "embed", "--json"))
    assert list(summary) == ["provider", "model", "memory", "sources", "seconds"]
    assert (summary["provider"], summary["model"]) == ("hashing", HASHING)
    assert list(summary["memory"]) == ["embedded", "unchanged", "seconds"]
    assert (summary["memory"]["embedded"], summary["sources"]["embedded"]) == (3, 1)
    again = ok_json(run(store, "embed", "--memory", "--json"))
    assert again["sources"] is None and again["memory"]["unchanged"] == 3
    text = run(store, "embed", "--sources")
    assert text.exit_code == 0
    assert text.stdout.startswith("chunks: 0 embedded, 1 unchanged; model lantern-hashing-v1-256")
    assert text.stderr == ""  # no progress bar off a terminal


def test_search_modes_on_the_command_line(store: str) -> None:
    before = ok_json(run(store, "memory", "search", "Rosa tea", "--with-cursor", "--json"))
    assert before["search"] == {"mode": "any", "model": None, "without_vector": 0}
    ok_json(run(store, "embed", "--json"))
    paged = ok_json(run(store, "memory", "search", "Rosa tea", "--with-cursor", "--json"))
    assert list(paged) == ["records", "next_cursor", "search"]
    assert paged["search"] == {"mode": "hybrid", "model": HASHING, "without_vector": 0}
    matches = ok_json(run(store, "memory", "search", "Rosa tea", "--mode", "semantic", "--json"))
    assert [list(match) for match in matches] == [MATCH_KEYS] * 3
    assert matches[0]["content"] == "Rosa prefers green tea."
    assert matches[0]["similarity"] == matches[0]["score"] and matches[0]["keyword_rank"] is None
    hits = ok_json(run(store, "search", "exit code 137", "--json"))
    assert [list(hit) for hit in hits] == [HIT_KEYS]
    assert (hits[0]["mode"], hits[0]["keyword_rank"], hits[0]["semantic_rank"]) == ("hybrid", 1, 1)
    explained = run(store, "search", "exit code", "--explain", "--mode", "semantic")
    assert explained.exit_code == 0
    assert explained.stderr == (
        f"lantern: searched in semantic mode (model {HASHING}); without a vector: 0\n"
    )
    assert "[mode=semantic keyword_rank=- semantic_rank=1 similarity=" in explained.stdout


def test_what_has_no_vector_is_reported(store: str) -> None:
    ok_json(run(store, "embed", "--json"))
    assert run(store, "memory", "add", "--kind", "goal", "Ship the manual.").exit_code == 0
    result = run(store, "memory", "search", "manual", "--mode", "semantic")
    assert result.exit_code == 0 and "Ship the manual." not in result.stdout
    assert result.stderr == (
        f"lantern: 1 record that the search could return has no vector of {HASHING}, so this "
        "search could not find it; lantern embed computes it\n"
    )
    hybrid = run(store, "memory", "search", "manual")
    assert "Ship the manual." in hybrid.stdout
    assert "so only its words could find it" in hybrid.stderr


def test_similar_records(store: str) -> None:
    ok_json(run(store, "embed", "--json"))
    records = ok_json(run(store, "memory", "list", "--json"))
    rosa = next(r["id"] for r in records if r["content"].startswith("Rosa lives"))
    similar = ok_json(run(store, "memory", "similar", rosa, "--limit", "1", "--json"))
    assert [list(match) for match in similar] == [MATCH_KEYS]
    assert similar[0]["content"] == "Rosa prefers green tea." and similar[0]["semantic_rank"] == 1
    text = run(store, "memory", "similar", rosa)
    assert text.exit_code == 0 and len(text.stdout.splitlines()) == 2
    assert rosa not in text.stdout


def test_settings_and_status(store: str) -> None:
    assert ok_json(run(store, "db", "settings", "--json")) == {
        "default_model": None,
        "on_write": False,
    }
    changed = run(store, "db", "settings", "--default-model", "hashing", "--embed-on-write")
    assert changed.exit_code == 0
    assert changed.stdout == "default_model: hashing\non_write:      true\n"
    assert run(store, "memory", "add", "--kind", "fact", "Embedded at once.").exit_code == 0
    status = ok_json(run(store, "db", "status", "--json"))
    assert list(status)[-3:] == ["embeddings", "word_index", "vector_indexes"]
    assert status["embeddings"]["models"] == [
        {
            "model": HASHING,
            "dim": 256,
            "records": 1,
            "records_without": 3,
            "chunks": 0,
            "chunks_without": 1,
        }
    ]
    shown = run(store, "db", "status")
    assert "vectors:           lantern-hashing-v1-256 (256 dimensions): 1 of 4 records" in (
        shown.stdout
    )


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("search", "x", "--model", "bert"), "unknown embedding provider 'bert'; available: "),
        (("embed", "--model", "bert"), "unknown embedding provider 'bert'; available: "),
        (("db", "settings", "--default-model", "bert"), "unknown embedding provider 'bert'"),
        (
            ("db", "settings", "--default-model", "hashing", "--clear-default-model"),
            "give either a default model or clear it, not both",
        ),
        (("memory", "similar", "mem_00000000000000ff"), "no memory record with id"),
        (("memory", "similar", "x", "--limit", "0"), "--limit must be"),
    ],
)
def test_bad_input_is_one_line(store: str, args: tuple[str, ...], message: str) -> None:
    result = run(store, *args)
    assert result.exit_code == 1, result.output
    [line] = result.stderr.splitlines()
    assert line.startswith(f"Error: {message}")


def test_without_the_extra(store: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """The default model's modules are missing: asking for semantic search says what to
    install; the default mode answers from the keyword side."""
    real = __import__("importlib.util").util.find_spec
    monkeypatch.setattr(
        "lantern.embeddings.provider.find_spec",
        lambda name: None if name == "onnxruntime" else real(name),
    )
    monkeypatch.delenv("LANTERN_EMBED_MODEL")
    for args in (
        ("search", "x", "--mode", "semantic"),
        ("memory", "search", "x", "--mode", "hybrid"),
        ("embed",),
    ):
        result = run(store, *args)
        assert result.exit_code == 1
        assert result.stderr == (
            "Error: the minilm embedding provider needs the Python module 'onnxruntime', which "
            f"is not installed: {extra_hint('embed')}\n"
        )
    hits = ok_json(run(store, "search", "exit code", "--json"))
    assert hits and {hit["mode"] for hit in hits} == {"any"}


def test_the_real_executable(store: str) -> None:
    env = {"LANTERN_EMBED_MODEL": "hashing"}
    embedded = lantern_process("--db", store, "embed", "--json", env=env)
    assert embedded.returncode == 0, embedded.stderr
    assert json.loads(embedded.stdout)["memory"]["embedded"] == 3
    assert embedded.stderr == ""  # each side done in one batch: no progress to tell
    found = lantern_process("--db", store, "memory", "search", "tea", "--json", env=env)
    assert json.loads(found.stdout)[0]["mode"] == "hybrid"
    wrong = lantern_process("--db", store, "search", "x", "--mode", "fuzzy", env=env)
    assert wrong.returncode == 2 and "Invalid value for '--mode'" in wrong.stderr
    unknown = lantern_process("--db", store, "search", "x", "--model", "bert", env=env)
    assert unknown.returncode == 1 and len(unknown.stderr.splitlines()) == 1
    assert "Traceback" not in unknown.stderr


_PROGRESS = re.compile(
    r"lantern: embedding (memory records|chunks): (\d+)/(\d+) \((\d+)%\), \d+\.\d s elapsed"
)


def _progress(stderr: str) -> dict[str, list[tuple[int, int, int]]]:
    """The progress lines of `lantern embed`, each checked whole: (done, total, percent) by
    side, in order."""
    sides: dict[str, list[tuple[int, int, int]]] = {}
    for line in stderr.splitlines():
        matched = _PROGRESS.fullmatch(line)
        assert matched, f"not a progress line: {line!r}"
        side, done, total, percent = matched.groups()
        sides.setdefault(side, []).append((int(done), int(total), int(percent)))
    return sides


def test_embed_logs_progress_lines_when_stderr_is_not_a_terminal(
    run_lantern: ProcessRun, store_url: str
) -> None:
    """A long run in a log or CI says how far it is: a line every 5 %, plain text, and the
    JSON on stdout is what it always was."""
    with Lantern.open(store_url) as lt:
        add_source(lt, "notes://long", [f"Note {n} is about topic {n}." for n in range(1000)])
        lt.memory.add_many([{"kind": "fact", "content": f"Fact number {n}."} for n in range(300)])
    env = {"LANTERN_EMBED_MODEL": "hashing"}
    ran = run_lantern("embed", "--json", env=env)
    assert ran.returncode == 0, ran.stderr
    summary = json.loads(ran.stdout)
    assert list(summary) == ["provider", "model", "memory", "sources", "seconds"]
    assert (summary["provider"], summary["model"]) == ("hashing", HASHING)
    assert {side: (summary[side]["embedded"], summary[side]["unchanged"]) for side in (
        "memory", "sources")} == {"memory": (300, 0), "sources": (1000, 0)}  # fmt: skip
    progress = _progress(ran.stderr)
    assert list(progress) == ["memory records", "chunks"]  # in the order they run
    for side, total in (("memory records", 300), ("chunks", 1000)):
        lines = progress[side]
        done = [line[0] for line in lines]
        assert done == sorted(set(done)) and done[-1] == total
        assert all(t == total and p == d * 100 // total for d, t, p in lines)
        percents = [p for _d, _t, p in lines]
        # A line every 5 % and no more often (the 10 s clock never fires in so short a run):
        # one in each 5 % step that the batches reach, plus the last.
        assert all(b // 5 > a // 5 or b == 100 for a, b in itertools.pairwise(percents))
    assert {p // 5 for _d, _t, p in progress["chunks"]} == set(range(1, 21))
    assert len(progress["chunks"]) < 1000 / 32  # fewer lines than batches

    quiet = run_lantern("embed", "--json", "--quiet", env=env)
    assert quiet.returncode == 0 and quiet.stderr == ""
    again = json.loads(quiet.stdout)
    assert {side: (again[side]["embedded"], again[side]["unchanged"]) for side in (
        "memory", "sources")} == {"memory": (0, 300), "sources": (0, 1000)}  # fmt: skip

    text = run_lantern("embed", "--sources", env=env)
    assert text.returncode == 0, text.stderr
    assert text.stdout.startswith("chunks: 0 embedded, 1000 unchanged; model ")
    assert list(_progress(text.stderr)) == ["chunks"]
