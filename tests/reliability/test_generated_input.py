"""Generated hostile input: search queries and CLI arguments never crash, and never hide errors.

Hypothesis generates text from all of Unicode (lone surrogates included), control characters,
huge strings and the operator syntax of both engines (FTS5 and `to_tsquery`), then:

* any search query, through the API on a real store, returns a result list: no exception;
* a raw query returns a list or a one-line `InvalidInput`, nothing else;
* a word of the store wrapped in any noise that holds no word of its own still finds its chunk
  and its memory record: a parse error turned into an empty result would fail this;
* any arguments to any command (options generated from each command's own parameters) give an
  exit code of 0, 1 or 2 and no traceback, with a one-line error for 1; and no generated text
  ever appears in the text of an SQL statement (it travels as a bound parameter only).
"""

from __future__ import annotations

import string
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import click
import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy import event
from sqlalchemy.engine import Engine

from lantern.api import Lantern
from lantern.cli import cli
from lantern.errors import InvalidInput
from lantern.retrieval.query import parse_query
from tests.helpers import command_at, command_paths
from tests.reliability.conftest import Figures
from tests.reliability.tools import Tier, is_postgres, sized

MARKER = "Qz7mark"
"""Starts every generated CLI string, so that its appearance in SQL text can be caught."""

ANY_CHAR = st.characters(exclude_categories=())  # lone surrogates included
SYNTAX_FRAGMENTS = [
    '"', "*", "AND", "OR", "NOT", "NEAR(", "NEAR/2", ")", "(", ":", "^", "-", "+", "{", "}",
    "text:", "<->", "<2>", "!", "|", "&", "'", "\\", "\x00", "%", "_", ";", "--", "/*",
    "' OR 1=1 --", "'); DROP TABLE memory_records; --", ":*", "\u2028", "\ud800", "\udfff",
    "\U0001f525", "e\u0301", "日本語", "ǅ", "ﬁ", "İ", "\t", "\r\n", "\x1b[31m", "\x7f",
]  # fmt: skip
SYNTAX = st.sampled_from(SYNTAX_FRAGMENTS)
WORDS = ["alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel"]
VOCABULARY = st.sampled_from([*WORDS, "lantern", "zulu", "Alpha", "ALPHA", "alph*", "al"])

QUERIES = st.one_of(
    st.text(ANY_CHAR, max_size=200),
    st.lists(st.one_of(SYNTAX, VOCABULARY, st.text(ANY_CHAR, max_size=8)), max_size=40).map(
        " ".join
    ),
    st.lists(st.one_of(SYNTAX, VOCABULARY), max_size=40).map("".join),
    st.builds(
        lambda part, times: part * times, st.text(ANY_CHAR, max_size=12), st.integers(0, 30_000)
    ),
)
# Noise holds no word of its own (the query parser finds no term in it), whatever else it has:
# characters that are no letter, digit, mark or private-use or unassigned code point, and the
# operator fragments that hold none. (A surrogate pair can still join into a letter: filtered.)
NOISE_CHAR = st.characters(exclude_categories=["L", "M", "N", "Co", "Cn"])
NOISE = (
    st.lists(
        st.one_of(
            st.sampled_from([f for f in SYNTAX_FRAGMENTS if parse_query(f) is None]),
            st.text(NOISE_CHAR, max_size=6),
        ),
        max_size=12,
    )
    .map(" ".join)
    .filter(lambda text: parse_query(text) is None)
)


def _settings(examples: int) -> settings:
    return settings(
        max_examples=examples,
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
        print_blob=True,
    )


@pytest.fixture
def corpus(store_url: str) -> Iterator[tuple[Lantern, dict[str, str], dict[str, str]]]:
    """A store where each of WORDS is in exactly one chunk and one memory record."""
    with Lantern.open(store_url) as lt:
        chunk_of: dict[str, str] = {}
        record_of: dict[str, str] = {}
        for word in WORDS:
            result = lt.evidence.ingest_text(
                f"tool://corpus/{word}", f"The {word} notes mention {word} twice."
            )
            chunks = lt.evidence.get_source(result.source.id).chunks
            assert chunks
            chunk = chunks[0]
            chunk_of[word] = chunk.id
            record_of[word] = lt.memory.add(kind="fact", content=f"Remember the {word} plan.").id
        yield lt, chunk_of, record_of


def test_generated_queries_never_fail_and_never_hide_a_match(
    corpus: tuple[Lantern, dict[str, str], dict[str, str]],
    store_url: str,
    tier: Tier,
    figures: Figures,
) -> None:
    lt, chunk_of, record_of = corpus
    examples = sized(tier, store_url).examples
    counts = {"queries": 0, "raw": 0, "raw refused": 0, "hits": 0, "wrapped": 0}

    @_settings(examples)
    @given(QUERIES)
    def any_query(query: str) -> None:
        hits = lt.evidence.search(query)
        matches = lt.memory.search(query, status="all")
        assert isinstance(hits, list) and isinstance(matches, list)
        counts["queries"] += 1
        counts["hits"] += bool(hits or matches)
        # The same text as a raw engine query: results, or a one-line InvalidInput.
        counts["raw"] += 1
        try:
            assert isinstance(lt.evidence.search(query, raw=True), list)
        except InvalidInput as exc:
            assert "\n" not in exc.message
            counts["raw refused"] += 1

    @_settings(examples)
    @given(NOISE, st.sampled_from(WORDS), NOISE, st.booleans())
    def a_wrapped_word_is_found(before: str, word: str, after: str, upper: bool) -> None:
        query = f"{before} {word.upper() if upper else word} {after}"
        assert chunk_of[word] in [hit.chunk_id for hit in lt.evidence.search(query)], query
        found = [match.record.id for match in lt.memory.search(query)]
        assert found == [record_of[word]], query
        counts["wrapped"] += 1

    started = time.monotonic()
    any_query()
    a_wrapped_word_is_found()
    engine = "postgres" if is_postgres(store_url) else "sqlite"
    figures(
        f"{engine}: {counts['queries']} generated queries (evidence and memory search): 0 "
        f"exceptions, {counts['hits']} found something; {counts['raw']} raw queries: "
        f"{counts['raw'] - counts['raw refused']} answered, {counts['raw refused']} refused "
        f"with a one-line InvalidInput, 0 other errors; {counts['wrapped']} words wrapped in "
        f"noise: all found (0 errors turned into empty results); "
        f"{time.monotonic() - started:.1f} s"
    )
    assert counts["queries"] == counts["raw"] == counts["wrapped"] == examples


# --- CLI arguments -------------------------------------------------------------------------

CLI_TEXT = st.one_of(QUERIES.map(lambda text: text[:300]), VOCABULARY, SYNTAX).map(
    lambda text: MARKER + text
)
NUMBER = st.one_of(
    st.integers(-5, 200).map(str),
    st.sampled_from(["0", "100", "1e3", "NaN", "inf", "-0", "0x10", "", " 7", "1.5", "9" * 30]),
    CLI_TEXT,
)


# The servers run until stopped: `mcp` is attacked with its client (test_mcp_attacks.py), `ui`
# through its pages (tests/test_ui_server.py).
COMMANDS = [path for path in command_paths(cli) if path not in (("mcp",), ("ui",))]


@st.composite
def invocations(draw: st.DrawFn, tmp: str) -> tuple[list[str], bytes | None]:
    """A command with generated values for a random subset of its own options and arguments.

    Paths stay inside the test's directory: ingest and import read standard input (`-`), and
    a backup goes to a generated name under the temporary directory.
    """
    path = draw(st.sampled_from(COMMANDS))
    command = command_at(cli, path)
    args = list(path)
    stdin = None
    for param in command.params:
        if isinstance(param, click.Argument):
            if path in (("ingest",), ("import",)):
                args.append("-")
                # Standard input is bytes: lone surrogates become invalid UTF-8.
                stdin = draw(CLI_TEXT).encode("utf-8", "surrogatepass")
            elif path == ("db", "backup"):
                name = draw(st.text(string.ascii_letters, min_size=1, max_size=12))
                args.append(f"{tmp}/{name}.db")
            else:
                args.append(draw(CLI_TEXT))
            continue
        if not isinstance(param, click.Option) or param.name == "db" or not draw(st.booleans()):
            continue
        flag = param.opts[-1]
        if param.is_flag:
            args.append(flag)
        elif isinstance(param.type, click.types.IntParamType | click.types.FloatParamType):
            args += [flag, draw(NUMBER)]
        elif isinstance(param.type, click.Choice):
            args += [flag, draw(st.one_of(st.sampled_from(list(param.type.choices)), CLI_TEXT))]
        else:
            args += [flag, draw(CLI_TEXT)]
    if path == ("ingest",) and "--uri" not in args:
        args += ["--uri", draw(CLI_TEXT)]
    return args, stdin


@contextmanager
def _no_marker_in_sql() -> Iterator[list[str]]:
    """Record every statement whose SQL text holds a generated string."""
    leaked: list[str] = []

    def inspect(_conn: Any, _cursor: Any, statement: str, *_rest: Any) -> None:
        if MARKER.lower() in statement.lower():
            leaked.append(statement)

    event.listen(Engine, "before_cursor_execute", inspect)
    try:
        yield leaked
    finally:
        event.remove(Engine, "before_cursor_execute", inspect)


def test_generated_cli_arguments_never_crash_or_reach_sql_text(
    store_url: str, tier: Tier, figures: Figures, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Generated relative paths (a token file, an export target) land in the test's directory.
    monkeypatch.chdir(tmp_path)
    Lantern.open(store_url).close()
    examples = sized(tier, store_url).examples
    codes: dict[int, int] = {}
    statements = 0

    def count(*_args: Any) -> None:
        nonlocal statements
        statements += 1

    @_settings(examples)
    @given(invocations(str(tmp_path)))
    def any_arguments(invocation: tuple[list[str], bytes | None]) -> None:
        args, stdin = invocation
        result = CliRunner().invoke(cli, ["--db", store_url, *args], input=stdin)
        assert result.exception is None or isinstance(result.exception, SystemExit), (
            args,
            result.exception,
        )
        assert result.exit_code in (0, 1, 2), (args, result.exit_code, result.stderr)
        assert "Traceback" not in result.stderr
        if result.exit_code == 1:
            lines = result.stderr.strip().splitlines()
            assert len(lines) == 1 and lines[0].startswith("Error: "), (args, result.stderr)
        codes[result.exit_code] = codes.get(result.exit_code, 0) + 1

    started = time.monotonic()
    event.listen(Engine, "before_cursor_execute", count)
    try:
        with _no_marker_in_sql() as leaked:
            any_arguments()
    finally:
        event.remove(Engine, "before_cursor_execute", count)
    engine = "postgres" if is_postgres(store_url) else "sqlite"
    figures(
        f"{engine}: {sum(codes.values())} generated command lines over {len(COMMANDS)} "
        f"commands: exit codes {', '.join(f'{c}: {n}' for c, n in sorted(codes.items()))}; "
        f"0 tracebacks; {statements} SQL statements, {len(leaked)} with generated text in "
        f"their SQL; {time.monotonic() - started:.1f} s"
    )
    assert not leaked, leaked[:3]
    assert sum(codes.values()) == examples
