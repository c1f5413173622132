"""Rendering for the CLI: JSON on stdout for `--json`, readable text otherwise."""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable, Iterable, Mapping
from datetime import UTC, datetime
from types import TracebackType
from typing import Any, TypeVar

import click

from lantern.cli.parsing import invoked_command
from lantern.errors import InvalidInput, LanternError, Operation, Param, Setting, Spelling, Term
from lantern.memory.records import MemoryRecord

F = TypeVar("F", bound=Callable[..., Any])
_JSON_KEY = "lantern.json"
_ARGV_KEY = "lantern.argv"

MODE_HELP = (
    "hybrid (the default where the store has vectors, else any): words and meaning fused; "
    "any: any word but common ones; keyword: every word must appear; semantic: by meaning."
)
MODEL_HELP = (
    "Embedding provider for semantic and hybrid (default: $LANTERN_EMBED_MODEL, else the "
    "store's, else minilm)."
)
MIN_SIMILARITY_HELP = (
    "Relevance floor of semantic and hybrid: a hit no keyword ranking found must be at least "
    "this similar (cosine, -1 to 1; default: the model's measured floor, 0.18 for minilm, "
    "none for other models)."
)
FLOOR_HELP = "--no-floor returns the nearest hits however dissimilar (semantic and hybrid)."


def _remember_json(ctx: click.Context, _param: click.Parameter, value: bool) -> bool:
    if value:
        ctx.meta[_JSON_KEY] = True
    return value


def json_option(func: F) -> F:
    """`--json` on a command; errors then also print a JSON object on stdout."""
    option = click.option(
        "--json",
        "as_json",
        is_flag=True,
        is_eager=True,
        callback=_remember_json,
        help="Print JSON on stdout (the documented, stable format).",
    )
    return option(func)


def read_stdin(limit_bytes: int, what: str, *, encoding: str = "utf-8") -> str:
    """Standard input as text, refused past `limit_bytes` without reading more than that.

    The one line break that ends it (which `echo` and a here-document add) is dropped, so that
    `echo "Build with just." | lantern memory add -` stores what was typed; any other
    whitespace is kept.
    """
    data = sys.stdin.buffer.read(limit_bytes + 1)
    if len(data) > limit_bytes:
        raise InvalidInput(f"standard input is larger than the {limit_bytes}-byte limit for {what}")
    try:
        text = data.decode(encoding)
    except UnicodeDecodeError as exc:
        raise InvalidInput("standard input is not valid UTF-8 text") from exc
    return text.removesuffix("\n").removesuffix("\r") if text.endswith("\n") else text


def wants_json(ctx: click.Context) -> bool:
    return bool(ctx.meta.get(_JSON_KEY))


def emit_json(value: Any) -> None:
    click.echo(json_text(value, indent=2))


def json_text(value: Any, *, indent: int | None = None) -> str:
    """`value` as JSON text, for `--json` and for values shown inside human output.

    Records are frozen: their mappings are read-only views (`MappingProxyType`), nested ones
    included, and their sequences tuples. Any mapping is written as a JSON object and any
    tuple as an array, so that no caller has to thaw a record before showing it.
    """
    return json.dumps(value, ensure_ascii=False, indent=indent, default=_plain_json)


def _plain_json(value: object) -> object:
    # Called by json.dumps for what it cannot encode; it encodes the dict returned in turn.
    if isinstance(value, Mapping):
        return dict(value)
    raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")


def value_text(value: Any) -> str:
    """A stored value (metadata, a setting) as a person reads it: a one-line string as it is,
    anything else as JSON (`null`, `true`, `3`, `["a", "b"]`, `{"k": 1}`).

    A string that would be misread bare (empty, spread over lines, with spaces at an end) is
    quoted as JSON.
    """
    if isinstance(value, str) and value and value == value.strip() and value.isprintable():
        return value
    return json_text(value)


def note(message: str) -> None:
    """A message for the person at the terminal: stderr, so stdout stays data."""
    click.echo(f"lantern: {message}", err=True)


def hint(message: str) -> None:
    """A note only a person reads: on stderr when it is a terminal, nothing on a pipe or in a
    file, so that scripts and logs stay quiet."""
    if stderr_is_terminal():
        note(message)


def stderr_is_terminal() -> bool:
    return sys.stderr.isatty()


def page_hint(shown: int, noun: str, *, more: bool, next_page: str) -> None:
    """Say (at a terminal) that a listing or search found nothing, or stopped at its limit
    with more to come, and how to ask for the next page."""
    if not shown:
        hint(f"no {plural(0, noun)} match")
    elif more:
        hint(f"{counted(shown, noun)} shown, more match: {next_page}")


def report_error(ctx: click.Context, exc: LanternError) -> None:
    """The error in the words of the command that raised it: `--min-priority` where the Python
    API says `min_priority`."""
    message = exc.spelled(cli_words(invoked_command(ctx)[0]))
    if wants_json(ctx):
        emit_json({"error": {"code": exc.code, "message": message}})
    click.echo(f"Error: {message}", err=True)


def cli_words(command: click.Command) -> Spelling:
    """How `command` names the terms of a message: its own options and arguments, and the
    commands of `lantern`. A term it has no word for stays as the Python API says it."""

    def spell(term: Term) -> str | None:
        if isinstance(term, Operation):
            return "lantern " + term.path.replace(".", " ")
        if not isinstance(term, Param | Setting):
            return None
        param = _param_named(command, term.name)
        if param is None:
            return None
        name = _param_word(param)
        if isinstance(term, Param):
            return name
        if isinstance(param, click.Option) and param.is_flag:
            return f"with {name}" if term.value else f"without {name}"
        return f"with {name} {term.value}"

    return spell


def _param_named(command: click.Command, name: str) -> click.Parameter | None:
    """The parameter that passes the API's `name`: by its name, or by its long option (the
    repeatable `--scope` fills `scopes`)."""
    dashed = "--" + name.replace("_", "-")
    for param in command.params:
        if param.name == name or (isinstance(param, click.Option) and dashed in param.opts):
            return param
    return None


def _param_word(param: click.Parameter) -> str:
    if isinstance(param, click.Option):
        return max(param.opts, key=len)
    return param.human_readable_name


USAGE_CODE = "usage"
"""The `code` of a usage error in its JSON object: the command line itself is wrong."""


def remember_argv(ctx: click.Context, args: list[str]) -> None:
    """Keep the words of the command line, for a usage error found before `--json` is read."""
    ctx.meta[_ARGV_KEY] = list(args)


def report_usage_error(ctx: click.Context, exc: click.UsageError) -> None:
    """One line on stderr (and the error object on stdout with `--json`) for a command line
    that Click could not read, in place of Click's usage block."""
    message = " ".join(exc.format_message().split()).removesuffix(".")
    if wants_json(ctx) or _json_in_argv(ctx):
        emit_json({"error": {"code": USAGE_CODE, "message": message}})
    where = exc.ctx.command_path if exc.ctx is not None else invoked_command(ctx)[1]
    click.echo(f"Error: {message} (see '{where} --help')", err=True)


def _json_in_argv(ctx: click.Context) -> bool:
    # Parsing stopped before `--json` was read (an unknown option, a missing value): look at
    # the words themselves, up to a `--` after which every word is an argument.
    argv: list[str] = ctx.meta.get(_ARGV_KEY, [])
    options = argv[: argv.index("--")] if "--" in argv else argv
    return "--json" in options


# The words whose plural is not the word and an s.
_PLURALS = {
    "memory": "memories",
    "entity": "entities",
    "entry": "entries",
}


def plural(count: int, noun: str) -> str:
    """The noun for `count` of it: `chunk` for 1, `chunks` otherwise. In a noun of several
    words the last one agrees (`new entity`, `new entities`)."""
    if count == 1:
        return noun
    head, space, last = noun.rpartition(" ")
    return head + space + _PLURALS.get(last, last + "s")


def counted(count: int, noun: str) -> str:
    """`1 chunk`, `102 sources`: a count and its noun, in agreement."""
    return f"{count} {plural(count, noun)}"


def when(seconds: int | None) -> str:
    if seconds is None:
        return "-"
    try:
        stamp = datetime.fromtimestamp(seconds, UTC).strftime("%Y-%m-%d %H:%M:%SZ")
    except (OverflowError, OSError, ValueError):
        return str(seconds)
    return f"{stamp} ({seconds})"


def said_text(said_from: int | None, said_until: int | None) -> str:
    """When a chunk's words were said: one time, or the first and last of a range; `-` when
    unknown."""
    if said_from is None:
        return "-"
    if said_until is None or said_until == said_from:
        return when(said_from)
    return f"{when(said_from)} to {when(said_until)}"


def ref_text(ref: Mapping[str, Any]) -> str:
    """A source reference: `TYPE:ID` when that is all it holds, else its JSON object."""
    if set(ref) == {"type", "id"}:
        return f"{ref['type']}:{ref['id']}"
    return json_text(ref)


def status_text(record: MemoryRecord, at: int) -> str:
    """The status a listing shows: `expired` for an active record whose `expires_at` has
    passed at `at` (still active until `memory expire` archives it), else the status."""
    if record.status == "active" and record.is_expired(at):
        return "expired"
    return record.status


def show_record(record: MemoryRecord) -> None:
    fields = [
        ("id", record.id),
        ("kind", record.kind),
        ("scope", record.scope),
        ("status", record.status),
        ("priority", str(record.priority)),
        ("urgency", str(record.urgency)),
        ("confidence", f"{record.confidence:g}"),
        ("created_at", when(record.created_at)),
        ("updated_at", when(record.updated_at)),
        ("expires_at", when(record.expires_at)),
        ("supersedes_id", record.supersedes_id or "-"),
        ("source_refs", ", ".join(ref_text(r) for r in record.source_refs) or "-"),
    ]
    for name, value in fields:
        click.echo(f"{name + ':':<15}{value}")
    click.echo("content:")
    for line in record.content.splitlines() or [""]:
        click.echo(f"  {line}")


def list_records(records: Iterable[MemoryRecord], *, at: int | None = None) -> None:
    """One line per record: id, status (`expired` marks an active record past its
    `expires_at`, see `status_text`), priority, urgency, confidence, kind, scope, content.
    `at` is the time expiry is judged at, now by default."""
    at = int(time.time()) if at is None else at
    for record in records:
        content = " ".join(record.content.split())
        click.echo(
            f"{record.id}  {status_text(record, at):<10}  p{record.priority:<3} "
            f"u{record.urgency:<3} c{record.confidence:<4g}  {record.kind:<11}  {record.scope}  "
            f"{content}"
        )


def origin_text(hit: Any) -> str:
    """Where a search hit came from (`--explain`): its ranking, its keyword rank, and its
    semantic rank and similarity ('-' where there is none)."""
    semantic = "-" if hit.semantic_rank is None else str(hit.semantic_rank)
    similarity = "-" if hit.similarity is None else f"{hit.similarity:.4f}"
    keyword = "-" if hit.keyword_rank is None else str(hit.keyword_rank)
    return (
        f"[mode={hit.mode} keyword_rank={keyword} semantic_rank={semantic} similarity={similarity}]"
    )


def search_notes(summary: Any, item: str, *, explain: bool) -> None:
    """What a search that compared vectors did, on stderr: with `--explain`, its mode, model
    and count of what has no vector; without, that count only when it is not 0, so that
    nothing is missed silently. A keyword search (or the default where there are no vectors)
    says nothing: its hits' mode says it all."""
    if summary is None or summary.model is None:
        return
    if explain:
        note(
            f"searched in {summary.mode} mode (model {summary.model}); "
            f"without a vector: {summary.without_vector}"
        )
    if summary.without_vector:
        count = summary.without_vector
        one = count == 1
        verb, them, their = ("has", "it", "its") if one else ("have", "them", "their")
        how = (
            f"only {their} words could find {them}"
            if summary.mode == "hybrid"
            else f"this search could not find {them}"
        )
        note(
            f"{counted(count, item)} that the search could return {verb} no vector of "
            f"{summary.model}, so {how}; lantern embed computes {them}"
        )


class ProgressBar:
    """A progress bar on stderr when it is a terminal; nothing at all on a pipe or a file."""

    def __init__(self, label: str, *, enabled: bool = True) -> None:
        self.enabled = enabled and sys.stderr.isatty()
        self.label = label
        self._bar: Any = None

    def update(self, done: int, total: int) -> None:
        if self._bar is None:
            if total < 2:
                return
            self._bar = click.progressbar(length=total, label=self.label, file=sys.stderr)
            self._bar.__enter__()
        self._bar.update(done - self._bar.pos)

    def __enter__(self) -> ProgressBar:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self._bar is not None:
            self._bar.__exit__(exc_type, exc, tb)
            self._bar = None


class ProgressLog:
    """Progress as plain lines on stderr, for a long command whose stderr is a log, a pipe or
    CI rather than a terminal: a bar there is either nothing or control characters, and hours
    of silence look like a hang.

    A line when the work has gone another `step` percent, or `interval` seconds after the
    previous line, whichever comes first (checked whenever the work reports, after each
    batch), and one when it is done: `lantern: embedding chunks: 640/3000 (21%), 4.2 s
    elapsed`. Work done in its first step (one batch) prints nothing. The elapsed time counts
    from `started` (when the log is made, by default).
    """

    def __init__(
        self,
        what: str,
        *,
        enabled: bool = True,
        started: float | None = None,
        step: int = 5,
        interval: float = 10.0,
    ) -> None:
        self.enabled = enabled
        self.what = what
        self.started = time.monotonic() if started is None else started
        self.step = step
        self.interval = interval
        self._next_percent = step
        self._last_line: float | None = None
        self._last_done = -1
        self._under_way = False

    def update(self, done: int, total: int) -> None:
        if not self.enabled or total <= 0 or done == self._last_done:
            return
        if not self._under_way and done >= total:
            return  # done in one step: nothing was ever under way, the summary says the rest
        self._under_way = True
        now = time.monotonic()
        percent = min(100, done * 100 // total)
        due = (
            done >= total
            or percent >= self._next_percent
            or now - (self.started if self._last_line is None else self._last_line) >= self.interval
        )
        if not due:
            return
        self._last_done, self._last_line = done, now
        self._next_percent = (percent // self.step + 1) * self.step
        click.echo(
            f"lantern: {self.what}: {done}/{total} ({percent}%), "
            f"{now - self.started:.1f} s elapsed",
            err=True,
        )

    def __enter__(self) -> ProgressLog:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        return None
