"""Tests of source-kind detection, transcript parsing and chunking.

Chunks are evidence that gets cited by offset, so every test checks the same hard
invariants (exact slices, order, no cut words, bounded sizes) on top of what it is
about.
"""

from __future__ import annotations

import json
import math
from datetime import UTC, datetime, timedelta, timezone
from itertools import pairwise

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from lantern.evidence.chunking import MIN_TARGET_SIZE, ChunkSpan, chunk_source
from lantern.evidence.sourcekinds import (
    KNOWN_SOURCE_KINDS,
    Turn,
    detect_kind,
    language_for,
    parse_transcript,
)

ALL_KINDS = (*KNOWN_SOURCE_KINDS, "not_a_known_kind")


def non_space(text: str) -> str:
    return "".join(text.split())


def assert_invariants(
    text: str,
    chunks: list[ChunkSpan],
    target: int,
    *,
    word_boundaries: bool = True,
    covers_all: bool = True,
    turns: list[Turn] | None = None,
) -> None:
    """The contract every chunker keeps, whatever the kind.

    A transcript's turn is cut only inside the strings of its words: with `turns`, a chunk
    may be longer than the target where it lies within one turn.
    """
    assert [chunk.ordinal for chunk in chunks] == list(range(len(chunks)))
    previous_end = 0
    for chunk in chunks:
        assert chunk.text == text[chunk.start : chunk.end]
        assert previous_end <= chunk.start < chunk.end
        previous_end = chunk.end
        assert chunk.text.strip() == chunk.text, "chunks are trimmed and never blank"
        assert (
            len(chunk.text) <= target
            or not any(c.isspace() for c in chunk.text)
            or (turns is not None and _within_one_turn(chunk, turns))
        )
        if word_boundaries:
            assert chunk.start == 0 or text[chunk.start - 1].isspace()
            assert chunk.end == len(text) or text[chunk.end].isspace()
    if covers_all:
        assert non_space("".join(chunk.text for chunk in chunks)) == non_space(text)


def _within_one_turn(chunk: ChunkSpan, turns: list[Turn]) -> bool:
    """Within one turn with words (and the turns without words next to it, joined to it)."""
    inside = [turn for turn in turns if turn.start < chunk.end and chunk.start < turn.end]
    return len([turn for turn in inside if turn.content.strip()]) <= 1


def is_json_document(text: str) -> bool:
    """A transcript that is one JSON document (an array, or an object holding the turns)."""
    try:
        value = json.loads(text)
    except ValueError:
        return False
    return isinstance(value, list) or (isinstance(value, dict) and "role" not in value)


def chunks_of(text: str, kind: str, target: int = 1000, path: str | None = None) -> list[ChunkSpan]:
    """Chunk and check the invariants.

    A transcript that is one JSON document (``{"messages": [...]}``, an array, a ChatGPT
    export) is chunked by turn objects, so its chunk edges sit next to JSON punctuation and
    its envelope is not part of any chunk.
    """
    chunks = chunk_source(text, kind, target_size=target, path=path)
    turns = parse_transcript(text) if kind == "transcript" else None
    by_messages = turns is not None and is_json_document(text)
    assert_invariants(
        text,
        chunks,
        target,
        word_boundaries=not by_messages,
        covers_all=not by_messages,
        turns=turns,
    )
    return chunks


def words(count: int, word: str = "word") -> str:
    return " ".join(f"{word}{i}" for i in range(count))


# --- target size ---------------------------------------------------------------


@pytest.mark.parametrize("bad", [0, 99, -1000, 100.0, "1000", None, True])
@pytest.mark.parametrize("kind", ALL_KINDS)
def test_invalid_target_size_is_rejected(bad: object, kind: str) -> None:
    with pytest.raises(ValueError, match="target_size"):
        chunk_source("some text", kind, target_size=bad)  # type: ignore[arg-type]


def test_minimum_target_size_is_accepted() -> None:
    assert len(chunk_source("text", "document", target_size=MIN_TARGET_SIZE)) == 1


@pytest.mark.parametrize("kind", ALL_KINDS)
@pytest.mark.parametrize("text", ["", " ", "\n\n\t \r\n", "\u3000\u2028"])
def test_blank_text_has_no_chunks(kind: str, text: str) -> None:
    assert chunk_source(text, kind) == []


# --- plain text ----------------------------------------------------------------


def test_paragraphs_are_grouped_up_to_the_target() -> None:
    paragraphs = [words(8, f"p{i}w") for i in range(12)]
    text = "\n\n".join(paragraphs)
    chunks = chunks_of(text, "document", target=200)
    assert len(chunks) > 1
    for chunk in chunks:
        assert chunk.metadata == {}
        # whole paragraphs only: each chunk is a run of the original paragraphs
        assert chunk.text.split("\n\n") == [p for p in paragraphs if p in chunk.text]
    for current, following in pairwise(chunks):
        next_paragraph = following.text.split("\n\n")[0]
        assert len(current.text) + 2 + len(next_paragraph) > 200, "packing is greedy"


def test_long_paragraph_is_cut_at_whitespace_only() -> None:
    text = "Intro.\n\n" + words(200) + "\n\nOutro."
    chunks = chunks_of(text, "tool_output", target=100)
    assert chunks[0].text == "Intro."
    assert chunks[-1].text == "Outro."
    assert all(len(chunk.text) <= 100 for chunk in chunks)


def test_long_paragraph_prefers_line_breaks() -> None:
    lines = [words(5, f"l{i}_") for i in range(20)]
    text = "\n".join(lines)
    chunks = chunks_of(text, "document", target=150)
    for chunk in chunks:
        assert chunk.start == 0 or text[chunk.start - 1] == "\n"
        assert chunk.end == len(text) or text[chunk.end] == "\n"


def test_word_longer_than_target_is_a_chunk_of_its_own() -> None:
    blob = "QUJD" * 200
    text = f"before the blob {blob} after the blob"
    chunks = chunks_of(text, "document", target=100)
    assert [chunk.text for chunk in chunks] == ["before the blob", blob, "after the blob"]


def test_unknown_kind_is_chunked_as_plain_text() -> None:
    text = "one\n\ntwo"
    assert chunks_of(text, "weird") == chunks_of(text, "document")


def test_offsets_count_code_points() -> None:
    text = "😀 e\u0301 naïve\r\n\r\n" + "😀 " * 80
    chunks = chunks_of(text, "document", target=100)
    assert chunks[0].text == "😀 e\u0301 naïve"
    assert chunks[0].end == 10


# --- logs ----------------------------------------------------------------------


def test_log_chunks_hold_whole_lines_with_line_numbers() -> None:
    lines = [f"2024-05-01T10:00:{i:02d} INFO request {i} served" for i in range(40)]
    text = "\n".join(lines) + "\n"
    chunks = chunks_of(text, "log", target=200)
    assert len(chunks) > 1
    for chunk in chunks:
        assert chunk.start == 0 or text[chunk.start - 1] == "\n"
        assert text[chunk.end] == "\n"
        first, last = chunk.metadata["start_line"], chunk.metadata["end_line"]
        assert isinstance(first, int)
        assert isinstance(last, int)
        assert chunk.text.split("\n") == lines[first - 1 : last]


def test_overlong_log_line_is_cut_at_whitespace() -> None:
    long_line = "ERROR " + words(100)
    text = f"short one\n{long_line}\nshort two"
    chunks = chunks_of(text, "log", target=120)
    assert chunks[0].text == "short one"
    assert chunks[-1].text == "short two"
    middle = chunks[1:-1]
    assert len(middle) > 1
    assert " ".join(chunk.text for chunk in middle) == long_line
    assert all(chunk.metadata["start_line"] == 2 for chunk in middle)


# --- source code ---------------------------------------------------------------

PYTHON = """import os
import sys


def alpha():
    value = 1

    return value


# Beta is decorated.
@decorator
def beta():
    return 2


class Gamma:
    def method(self):
        return 3

    def other(self):
        return 4
"""


def test_source_chunks_start_at_top_level_lines() -> None:
    chunks = chunks_of(PYTHON, "source_file", target=100, path="pkg/mod.py")
    assert len(chunks) > 1
    for chunk in chunks:
        assert chunk.start == 0 or PYTHON[chunk.start - 1] == "\n"
        assert chunk.metadata["language"] == "python"
    beta = next(chunk for chunk in chunks if "def beta" in chunk.text)
    assert beta.text.startswith("# Beta is decorated.\n@decorator\ndef beta")


def test_source_line_numbers_are_one_based_and_inclusive() -> None:
    lines = PYTHON.split("\n")
    for chunk in chunks_of(PYTHON, "source_file", target=100, path="mod.py"):
        first, last = chunk.metadata["start_line"], chunk.metadata["end_line"]
        assert isinstance(first, int)
        assert isinstance(last, int)
        assert chunk.text == "\n".join(lines[first - 1 : last]).strip()


def test_small_file_is_one_chunk_and_language_needs_a_path() -> None:
    [chunk] = chunks_of(PYTHON, "source_file")
    assert chunk.metadata == {"language": None, "start_line": 1, "end_line": 22}


def test_closing_braces_do_not_start_units() -> None:
    functions = [
        f"function f{i}(a, b) {{\n  const x = a + b;\n  return x * {i};\n}}" for i in range(6)
    ]
    text = "\n".join(functions) + "\n"
    chunks = chunks_of(text, "source_file", target=120, path="app.js")
    for chunk in chunks:
        assert chunk.text.startswith("function")
        assert chunk.text.endswith("}")
        assert chunk.metadata["language"] == "javascript"


def test_large_definition_is_split_at_blank_lines_first() -> None:
    body = "\n\n".join(f"    step_{i} = compute({i})\n    check(step_{i})" for i in range(10))
    text = f"def big():\n{body}\n"
    chunks = chunks_of(text, "source_file", target=150, path="big.py")
    assert len(chunks) > 1
    for chunk in chunks:
        assert text[chunk.end] == "\n"
        assert chunk.text.endswith(")")


# --- markdown ------------------------------------------------------------------

MARKDOWN = """Preamble before any heading.

# Install

## From source

Clone the repository and run make.

## From pip

Run pip install lantern.

# Usage ##

Run it.
"""


def test_markdown_sections_carry_heading_paths() -> None:
    chunks = chunks_of(MARKDOWN, "markdown")
    assert [chunk.metadata["heading_path"] for chunk in chunks] == [
        [],
        ["Install", "From source"],
        ["Install", "From pip"],
        ["Usage"],
    ]
    # a heading with no body of its own is folded into its first subsection
    assert chunks[1].text.startswith("# Install\n\n## From source")
    assert chunks[3].text == "# Usage ##\n\nRun it."


def test_markdown_heading_rules() -> None:
    text = (
        "#hashtag is not a heading\n\n"
        "    # indented code, not a heading\n\n"
        "### Deep ###\n\ntext\n\n"
        "## Up a level\n\ntext\n\n"
        "#\n\nempty heading\n"
    )
    paths = [chunk.metadata["heading_path"] for chunk in chunks_of(text, "markdown")]
    assert paths == [[], ["Deep"], ["Up a level"], [""]]


def test_markdown_headings_inside_fences_are_ignored() -> None:
    text = (
        "# Real\n\n```bash\n# not a heading\n```\n\n"
        "~~~~\n## also not\n```\nstill code\n~~~~\n\n"
        "## Child\n\n```\n# unclosed fence swallows the rest\n# Not a heading\n"
    )
    paths = [chunk.metadata["heading_path"] for chunk in chunks_of(text, "markdown")]
    assert paths == [["Real"], ["Real", "Child"]]


def test_markdown_fence_is_not_split_when_it_fits() -> None:
    fence = "```python\n" + "\n\n".join(f"line_{i} = {i}" for i in range(10)) + "\n```"
    prose = "\n\n".join(words(6, f"p{i}_") for i in range(6))
    text = f"# Code\n\n{prose}\n\n{fence}\n\n{prose}\n"
    chunks = chunks_of(text, "markdown", target=200)
    assert len(fence) < 200 < len(text)
    assert any(fence in chunk.text for chunk in chunks)
    assert all(chunk.metadata["heading_path"] == ["Code"] for chunk in chunks)


def test_markdown_oversize_fence_is_split_at_lines() -> None:
    code = "\n".join(f"    result_{i} = function_call({i})" for i in range(30))
    text = f"## Big\n\n```\n{code}\n```\n"
    chunks = chunks_of(text, "markdown", target=150)
    assert len(chunks) > 1
    for chunk in chunks:
        assert len(chunk.text) <= 150
        assert chunk.start == 0 or text[chunk.start - 1] in "\n "
        assert text[chunk.end] == "\n"


def test_large_markdown_section_is_split_by_paragraphs() -> None:
    paragraphs = [words(10, f"s{i}_") for i in range(10)]
    text = "# Long\n\n" + "\n\n".join(paragraphs)
    chunks = chunks_of(text, "markdown", target=300)
    assert len(chunks) > 1
    for chunk in chunks:
        assert chunk.metadata["heading_path"] == ["Long"]
        assert chunk.text.endswith(tuple(paragraphs))


# --- transcripts: parsing ------------------------------------------------------


def test_parse_json_lines_with_timestamps() -> None:
    lines = [
        '{"role": "user", "content": "hi", "ts": 1700000000}',
        "",
        '{"role": "assistant", "content": "hello", "ts": 1700000001.9}',
        '{"role": "user", "content": "iso", "ts": "2024-01-02T03:04:05Z"}',
        '{"role": "user", "content": "offset", "ts": "2024-01-02T05:04:05+02:00"}',
        '{"role": "user", "content": "naive", "ts": "2024-01-02T03:04:05"}',
        '{"role": "tool", "content": "bad ts", "ts": "yesterday", "extra": [1]}',
        '{"role": "tool", "content": "bool ts", "ts": true}',
        '  {"role": "system", "content": ""}  ',
    ]
    text = "\n".join(lines) + "\n\n"
    turns = parse_transcript(text)
    assert turns is not None
    expected_iso = int(datetime(2024, 1, 2, 3, 4, 5, tzinfo=UTC).timestamp())
    assert [turn.ts for turn in turns] == [
        1700000000,
        1700000001,
        expected_iso,
        expected_iso,
        expected_iso,
        None,
        None,
        None,
    ]
    assert [turn.role for turn in turns][-1] == "system"
    non_blank = [line for line in lines if line]
    assert [text[turn.start : turn.end] for turn in turns] == non_blank


def test_parse_json_lines_spans_exclude_crlf() -> None:
    text = '{"role": "user", "content": "a"}\r\n\r\n{"role": "bot", "content": "b"}\r\n'
    turns = parse_transcript(text)
    assert turns == [
        Turn("user", "a", None, 0, 32),
        Turn("bot", "b", None, 36, 67),
    ]


def test_parse_messages_document_keeps_object_spans() -> None:
    messages = [
        {"role": "user", "content": "hi", "ts": "2024-01-02T03:04:05+00:00"},
        {"role": "assistant", "content": "hello {not json} ]", "ts": 5},
    ]
    for indent in (None, 2):
        text = json.dumps(
            {"title": "chat", "messages": messages, "model": {"x": [1]}}, indent=indent
        )
        turns = parse_transcript(text)
        assert turns is not None
        assert [json.loads(text[turn.start : turn.end]) for turn in turns] == messages
        assert [turn.content for turn in turns] == ["hi", "hello {not json} ]"]
        assert turns[1].ts == 5


@pytest.mark.parametrize(
    "text",
    [
        "",
        "plain prose",
        "{}",
        "[]",
        '[{"role": "user", "content": "hi"}, {"role": "user"}]',
        '[{"role": "user", "content": [{"text": "a block without a type"}]}]',
        '[{"title": "a conversation", "mapping": {"n": {"message": {"content": "no author"}}}}]',
        '{"messages": []}',
        '{"messages": "nope"}',
        '{"messages": [{"role": "user"}]}',
        '{"messages": [{"role": "user", "content": 3}]}',
        '{"messages": [{"role": "user", "content": "hi"}]} trailing',
        '{"messages": [{"role": "user", "content": "hi"},]}',
        '{"role": "user", "content": "hi"}\nnot json',
        '{"role": "user", "content": "hi"}\n{"content": "no role"}',
        '{"role": "user", "content": "hi"}\n[1, 2]',
        '{\n  "role": "user",\n  "content": "pretty-printed single turn"\n}',
    ],
)
def test_non_transcripts_are_rejected(text: str) -> None:
    assert parse_transcript(text) is None


def test_single_line_turn_is_a_transcript() -> None:
    assert parse_transcript('{"role": "user", "content": "hi"}') == [
        Turn("user", "hi", None, 0, 33)
    ]


# --- transcripts: chunking -----------------------------------------------------


def jsonl(turns: list[dict[str, object]]) -> str:
    return "\n".join(json.dumps(turn, ensure_ascii=False) for turn in turns) + "\n"


def test_transcript_chunks_group_whole_turns() -> None:
    turns: list[dict[str, object]] = [
        {"role": "user" if i % 2 else "assistant", "content": words(6, f"t{i}_"), "ts": 100 + i}
        for i in range(12)
    ]
    text = jsonl(turns)
    chunks = chunks_of(text, "transcript", target=300)
    assert len(chunks) > 1
    seen = 0
    for chunk in chunks:
        lines = chunk.text.split("\n")
        assert [json.loads(line) for line in lines] == turns[seen : seen + len(lines)]
        assert chunk.metadata == {
            "roles": sorted({str(turns[i]["role"]) for i in range(seen, seen + len(lines))}),
            "first_ts": 100 + seen,
            "last_ts": 100 + seen + len(lines) - 1,
            "turns": len(lines),
        }
        seen += len(lines)
    assert seen == len(turns)


def test_oversize_turn_is_split_alone() -> None:
    turns: list[dict[str, object]] = [
        {"role": "user", "content": "short question"},
        {"role": "assistant", "content": words(120), "ts": "2024-01-01T00:00:00Z"},
        {"role": "user", "content": "thanks"},
    ]
    text = jsonl(turns)
    chunks = chunks_of(text, "transcript", target=150)
    assert json.loads(chunks[0].text) == turns[0]
    assert json.loads(chunks[-1].text) == turns[2]
    middle = chunks[1:-1]
    assert len(middle) > 1
    stamp = int(datetime(2024, 1, 1, tzinfo=UTC).timestamp())
    for chunk in middle:
        assert chunk.metadata == {
            "roles": ["assistant"],
            "first_ts": stamp,
            "last_ts": stamp,
            "turns": 1,
        }


def test_messages_document_chunks_cover_each_message() -> None:
    messages = [{"role": "user", "content": words(5, f"m{i}_")} for i in range(10)]
    text = json.dumps({"messages": messages}, indent=2)
    chunks = chunks_of(text, "transcript", target=250)
    decoded = [
        json.loads(f"[{chunk.text}]") for chunk in chunks
    ]  # a chunk is a run of whole message objects
    assert [message for run in decoded for message in run] == messages
    assert all(
        chunk.metadata["turns"] == len(run) for chunk, run in zip(chunks, decoded, strict=True)
    )


def test_transcript_kind_falls_back_to_plain_text() -> None:
    text = "not\n\na transcript"
    assert chunks_of(text, "transcript") == chunks_of(text, "document")


# --- detection -----------------------------------------------------------------

TRANSCRIPT_JSONL = '{"role": "user", "content": "hi"}\n{"role": "assistant", "content": "yo"}\n'
TRANSCRIPT_JSON = json.dumps({"messages": [{"role": "user", "content": "hi"}]})


@pytest.mark.parametrize(
    ("path", "text", "kind"),
    [
        ("notes/todo.md", "# Todo", "markdown"),
        ("README.MARKDOWN", "text", "markdown"),
        ("page.mdx", "text", "markdown"),
        ("src/app.py", "print(1)", "source_file"),
        ("C:\\code\\main.RS", "fn main() {}", "source_file"),
        ("deploy/config.yaml", "a: 1", "source_file"),
        ("pyproject.toml", "[project]", "source_file"),
        ("package.json", '{"name": "x"}', "source_file"),
        ("Makefile", "all:\n\techo", "source_file"),
        ("server.log", "line", "log"),
        ("server.log.1", "line", "log"),
        ("/var/log/app.LOG.2.10", "line", "log"),
        ("chat.jsonl", TRANSCRIPT_JSONL, "transcript"),
        ("chat.ndjson", TRANSCRIPT_JSONL, "transcript"),
        ("export.json", TRANSCRIPT_JSON, "transcript"),
        ("chat.json", TRANSCRIPT_JSONL, "transcript"),
        ("events.jsonl", '{"event": "start"}\n{"event": "stop"}\n', "log"),
        ("app.py", TRANSCRIPT_JSONL, "source_file"),
        ("notes.txt", TRANSCRIPT_JSONL, "document"),
        ("paper.txt", "prose", "document"),
        ("no_extension", "prose", "document"),
        (".hidden", "prose", "document"),
        (None, TRANSCRIPT_JSON, "transcript"),
        (None, "# Looks like markdown", "document"),
        ("", "prose", "document"),
    ],
)
def test_detect_kind(path: str | None, text: str, kind: str) -> None:
    assert detect_kind(path, text) == kind


@pytest.mark.parametrize(
    ("path", "language"),
    [
        ("a.py", "python"),
        ("a.tsx", "typescript"),
        ("a.jsx", "javascript"),
        ("lib/a.hpp", "cpp"),
        ("a.EXS", "elixir"),
        ("a.yml", "yaml"),
        ("Dockerfile", "dockerfile"),
        ("a.md", None),
        ("a.log", None),
        ("README", None),
        (None, None),
    ],
)
def test_language_for(path: str | None, language: str | None) -> None:
    assert language_for(path) == language


def test_known_source_kinds() -> None:
    assert KNOWN_SOURCE_KINDS == (
        "transcript",
        "markdown",
        "source_file",
        "tool_output",
        "log",
        "document",
    )


# --- size ----------------------------------------------------------------------
# How fast chunking is belongs to the benchmark (bench/run.py, the ingest row); this checks that
# a 10 MB source is chunked whole, to its last unit.


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["document", "log", "markdown", "source_file", "transcript"])
def test_ten_megabytes_are_chunked_to_the_end(kind: str) -> None:
    samples = {
        "document": words(60) + "\n\n",
        "log": "2024-05-01 INFO " + words(8) + "\n",
        "markdown": "## Part\n\n" + words(50) + "\n\n```\ncode\n\nmore\n```\n\n",
        "source_file": "def f(x):\n    y = x\n\n    return " + words(4) + "\n\n",
        "transcript": json.dumps({"role": "user", "content": words(40), "ts": 1}) + "\n",
    }
    sample = samples[kind]
    text = sample * (10_000_000 // len(sample))
    chunks = chunk_source(text, kind, path="big.py")
    assert chunks[-1].end > len(text) - len(sample)
    assert all(chunk.text == text[chunk.start : chunk.end] for chunk in chunks)


# --- properties ----------------------------------------------------------------

FRAGMENTS = [
    "# Title",
    "## Sub ##",
    "#no",
    "```",
    "```py",
    "~~~",
    "def f():",
    "    return 1",
    "@decorator",
    "// comment",
    "function g() {",
    "}",
    "{",
    '{"role": "user", "content": "hi"}',
    "\n",
    "\n\n",
    "\r\n",
    "\r",
    "\t",
    " ",
    "  ",
    "\u00a0",
    "\u3000",
    "\u2028",
    "\x85",
    "\x1c",
    "\x0b",
    "😀",
    "👩‍👩‍👧",
    "e\u0301",
    "\u0301",
    "word",
    "a" * 130,
    "b" * 450,
    "short words here",
]

texts = st.lists(
    st.one_of(st.sampled_from(FRAGMENTS), st.text(max_size=40)),
    max_size=120,
).map("".join)
targets = st.integers(min_value=MIN_TARGET_SIZE, max_value=320)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=texts, kind=st.sampled_from(ALL_KINDS), target=targets)
def test_every_kind_keeps_the_invariants(text: str, kind: str, target: int) -> None:
    if kind == "transcript":
        assume(parse_transcript(text) is None)
    chunk_source_result = chunk_source(text, kind, target_size=target, path="file.py")
    assert_invariants(text, chunk_source_result, target)


@settings(max_examples=150, deadline=None)
@given(text=st.text(max_size=2000), kind=st.sampled_from(ALL_KINDS), target=targets)
def test_arbitrary_unicode_keeps_the_invariants(text: str, kind: str, target: int) -> None:
    if kind == "transcript":
        assume(parse_transcript(text) is None)
    assert_invariants(text, chunk_source(text, kind, target_size=target), target)


@given(path=st.one_of(st.none(), st.text(max_size=30)), text=texts)
def test_detected_kind_is_known(path: str | None, text: str) -> None:
    assert detect_kind(path, text) in KNOWN_SOURCE_KINDS


offsets = st.integers(min_value=-23 * 60, max_value=23 * 60).map(
    lambda minutes: timezone(timedelta(minutes=minutes))
)
stamps = st.one_of(
    st.integers(min_value=-(2**40), max_value=2**40),
    st.floats(min_value=-1e11, max_value=1e11, allow_nan=False),
    st.datetimes(
        min_value=datetime(1900, 1, 1), max_value=datetime(2200, 1, 1), timezones=offsets
    ).map(datetime.isoformat),
    st.datetimes(min_value=datetime(1900, 1, 1), max_value=datetime(2200, 1, 1)).map(
        datetime.isoformat
    ),
)
turn_values = st.fixed_dictionaries(
    {
        "role": st.sampled_from(["user", "assistant", "system", "tool", "😀 bot"]),
        "content": st.text(max_size=400),
    },
    optional={"ts": stamps},
)


def expected_ts(value: object) -> int | None:
    if isinstance(value, str):
        moment = datetime.fromisoformat(value)
        if moment.tzinfo is None:
            moment = moment.replace(tzinfo=UTC)
        return math.floor(moment.timestamp())
    if isinstance(value, float):
        return math.floor(value)
    assert value is None or isinstance(value, int)
    return value


@settings(max_examples=200, deadline=None)
@given(
    values=st.lists(turn_values, min_size=1, max_size=15),
    messages_shape=st.booleans(),
    ascii_only=st.booleans(),
    indent=st.sampled_from([None, 0, 2, "\t"]),
    target=targets,
)
def test_transcripts_round_trip_and_never_split_a_fitting_turn(
    values: list[dict[str, object]],
    messages_shape: bool,
    ascii_only: bool,
    indent: int | str | None,
    target: int,
) -> None:
    if messages_shape:
        text = json.dumps({"messages": values}, ensure_ascii=ascii_only, indent=indent)
    else:
        text = "\n".join(json.dumps(v, ensure_ascii=ascii_only) for v in values) + "\n"
    turns = parse_transcript(text)
    assert turns is not None
    assert [json.loads(text[turn.start : turn.end]) for turn in turns] == values
    assert [(turn.role, turn.content) for turn in turns] == [
        (v["role"], v["content"]) for v in values
    ]
    assert [turn.ts for turn in turns] == [expected_ts(v.get("ts")) for v in values]

    chunks = chunks_of(text, "transcript", target=target)
    for chunk in chunks:
        inside = [t for t in turns if t.start < chunk.end and chunk.start < t.end]
        assert chunk.metadata["turns"] == len(inside)
        if len([t for t in inside if t.content.strip()]) > 1:
            assert all(chunk.start <= t.start and t.end <= chunk.end for t in inside)
    for turn in turns:
        if turn.end - turn.start <= target:
            assert any(c.start <= turn.start and turn.end <= c.end for c in chunks)
