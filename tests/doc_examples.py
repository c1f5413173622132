"""Read the runnable examples out of the README and the manual, and compare what they print.

An example is a fenced block whose language is `bash`, `console` or `python`:

- `bash`: commands, one per line (a line ending in `\\` continues on the next; a here-document
  runs to its closing word). Each must exit with 0; what they print is not compared.
- `console`: `$ command` lines, each followed by what it prints (stdout and stderr, as a
  terminal shows them), which is compared. A command must exit with 0 unless the next one is
  `$ echo $?`, whose output then states the exit code.
- `python`: a script, run on its own by a fresh interpreter; it must succeed.

A block that cannot run in a test is marked on the line before it, visibly in the source:
`<!-- not run: REASON -->`. Every other fence (`json`, `text`, ...) shows data and is not run.

Commands run exactly as written, as a reader would paste them: they name files by `~` or
`$HOME`, never by `/home/ada`, and use only the ids that earlier commands of the page printed
(memory ids are made from content, so they are the same on every machine) or captured into a
shell variable (`chunk=$(lantern search rollback --limit 1 --ids)`); an id that names nothing
anywhere is spelled as a placeholder (`chk_0123456789abcdef`, `mem_00000000000000ff`).
`unportable` says what a command breaks of this.

Outputs are compared after the machine's differences are taken out: the test's home directory
reads as `/home/ada`, evidence ids derived from its paths read as the ids the same files have
there, and values that change from run to run (times, durations, scores, sizes on disk) are
compared by their form, not their value.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

RUNNABLE = ("bash", "console", "python")
DOC_HOME = "/home/ada"
NOT_RUN = re.compile(r"<!--\s*not run:\s*(?P<reason>.*?)\s*-->")
# The ids of evidence and memory records, as commands and outputs spell them.
STORED_ID = re.compile(r"(?<![\w])(?:chk|src|mem)_[0-9a-f]{16}(?![\w])")
# Ids that name nothing on any machine: the digits in order, or eight zeros first.
PLACEHOLDER_ID = re.compile(r"(?:chk|src|mem)_(?:0123456789abcdef|0{8}[0-9a-f]{8})")

# JSON keys whose values change from run to run: compared by type only.
VOLATILE_KEYS = frozenset(
    {
        "at",
        "created_at",
        "updated_at",
        "forgotten_at",
        "last_write_at",
        "mtime",
        # When a chunk's words were said: a file's modification time, for the notes of a page.
        "said_from",
        "said_until",
        "seconds",
        "score",
        "relevance",
        "size_bytes",
        # A store's schema revision: docs show the latest, which moves as revisions are added.
        "revision",
        "head",
        "from_revision",
        "to_revision",
    }
)

# Tokens of human output that change from run to run, matched by their form.
_ISO_TIME = r"\d{4}-\d\d-\d\d[ T]\d\d:\d\d:\d\d(?:\.\d+)?(?:Z|[+-]\d\d:?\d\d)?"
_UNIX_TIME = r"(?<![\d.])1[7-9]\d{8}(?![\d.])"
_FLOAT = r"(?<![\w.])\d+\.\d+(?:e[-+]?\d+)?(?![\w.])|(?<![\w.])\d+e-\d+(?![\w.])"
# A schema revision in human output ("revision: 0009", "already at 0009"): the latest moves as
# revisions are added.
_REVISION = r"(?<![\w.])0\d{3}(?![\w.])"
_VOLATILE_TOKEN = re.compile(
    f"(?P<iso>{_ISO_TIME})|(?P<unix>{_UNIX_TIME})|(?P<float>{_FLOAT})|(?P<revision>{_REVISION})"
)
_FORMS = {
    "iso": _ISO_TIME,
    "unix": r"\d{10}",
    "revision": r"0\d{3}",
    "float": r"-?(?:\d+(?:\.\d+)?(?:e[-+]?\d+)?)",
}


@dataclass
class Command:
    line: int
    text: str
    output: list[str] = field(default_factory=list)
    compare: bool = False


@dataclass
class Example:
    path: Path
    name: str
    line: int
    language: str
    body: str
    skipped: str | None = None
    commands: list[Command] = field(default_factory=list)

    @property
    def where(self) -> str:
        return f"{self.name}:{self.line}"


def examples(path: Path, name: str) -> list[Example]:
    """Every runnable block of a Markdown file, in order, with its commands; `name` is how
    messages call the file."""
    lines = path.read_text(encoding="utf-8").splitlines()
    found: list[Example] = []
    index = 0
    while index < len(lines):
        fence = re.match(r"^(\s*)(`{3,}|~{3,})\s*([\w+-]*)", lines[index])
        if not fence:
            index += 1
            continue
        indent, marker, language = fence.group(1), fence.group(2), fence.group(3)
        start = index
        body: list[str] = []
        index += 1
        while index < len(lines) and not lines[index].strip().startswith(marker):
            body.append(lines[index].removeprefix(indent))
            index += 1
        index += 1
        if language not in RUNNABLE:
            continue
        example = Example(path, name, start + 1, language, "\n".join(body) + "\n")
        example.skipped = _skip_reason(lines, start)
        if language == "bash":
            example.commands = _bash_commands(body, start + 2)
        elif language == "console":
            example.commands = _console_commands(body, start + 2, example.where)
        found.append(example)
    return found


def _skip_reason(lines: list[str], fence: int) -> str | None:
    before = fence - 1
    while before >= 0 and not lines[before].strip():
        before -= 1
    if before < 0:
        return None
    marker = NOT_RUN.search(lines[before])
    if marker is None:
        return None
    reason = marker.group("reason")
    if not reason:
        raise ValueError(f"line {before + 1}: `not run` needs a reason")
    return reason


def _bash_commands(body: list[str], first_line: int) -> list[Command]:
    commands: list[Command] = []
    index = 0
    while index < len(body):
        line = body[index]
        start = index
        index += 1
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        text = [line]
        while text[-1].rstrip().endswith("\\") and index < len(body):
            text.append(body[index])
            index += 1
        heredoc = re.search(r"<<-?\s*(['\"]?)(\w+)\1", " ".join(text))
        if heredoc:
            word = heredoc.group(2)
            while index < len(body):
                text.append(body[index])
                index += 1
                if text[-1].strip() == word:
                    break
        commands.append(Command(first_line + start, "\n".join(text)))
    return commands


def _console_commands(body: list[str], first_line: int, where: str) -> list[Command]:
    commands: list[Command] = []
    index = 0
    while index < len(body):
        line = body[index]
        start = index
        index += 1
        if line.startswith("$ "):
            text = [line[2:]]
            while text[-1].rstrip().endswith("\\") and index < len(body):
                text.append(body[index].removeprefix("> "))
                index += 1
            commands.append(Command(first_line + start, "\n".join(text), compare=True))
        elif commands:
            commands[-1].output.append(line)
        elif line.strip():
            raise ValueError(f"{where}: a console block starts with `$ command`, not {line!r}")
    return commands


def unportable(text: str, produced: set[str]) -> str | None:
    """Why a command (or a Python example) would not run as written on a reader's machine, or
    None: it names the pages' home directory, or an id that `produced` (the ids the page's
    earlier commands printed) does not hold and that is no placeholder."""
    if DOC_HOME in text:
        return f"it names {DOC_HOME}, which is on nobody's machine: write ~ or $HOME"
    for found in STORED_ID.finditer(text):
        name = found.group()
        if name not in produced and not PLACEHOLDER_ID.fullmatch(name):
            return (
                f"it names {name}, which no command before it printed: capture the id from "
                "the command that makes it, or name what has it (a file by file://$HOME/...)"
            )
    return None


# --- Comparing outputs --------------------------------------------------------------------


def mismatch(expected: list[str], actual: str) -> str | None:
    """None when `actual` is what `expected` shows, else a description of the difference."""
    want = _segments("\n".join(expected))
    got = _segments(actual)
    if _match(want, got):
        return None
    return "expected:\n" + "\n".join(expected).rstrip() + "\n\nactual:\n" + actual.rstrip()


@dataclass(frozen=True)
class _Json:
    value: Any


_Segment = _Json | str


def _segments(text: str) -> list[_Segment]:
    """The text as a list of JSON values and non-blank lines of text, in order."""
    decoder = json.JSONDecoder()
    segments: list[_Segment] = []
    position = 0
    while position < len(text):
        end = text.find("\n", position)
        end = len(text) if end < 0 else end
        line = text[position:end]
        start = position + len(line) - len(line.lstrip())
        if line.lstrip()[:1] in ("{", "["):
            try:
                value, stop = decoder.raw_decode(text, start)
            except ValueError:
                pass
            else:
                rest = text.find("\n", stop)
                rest = len(text) if rest < 0 else rest
                if not text[stop:rest].strip():
                    segments.append(_Json(value))
                    position = rest + 1
                    continue
        if line.strip():
            segments.append(line.rstrip())
        position = end + 1
    return segments


def _match(want: list[_Segment], got: list[_Segment]) -> bool:
    if not want:
        return not got
    head = want[0]
    if isinstance(head, str) and head.strip() == "...":
        return any(_match(want[1:], got[skip:]) for skip in range(len(got) + 1))
    if not got:
        return False
    if isinstance(head, _Json):
        if not isinstance(got[0], _Json) or not _same_json(head.value, got[0].value, None):
            return False
    elif isinstance(got[0], _Json) or not _line_pattern(_squash(head)).fullmatch(_squash(got[0])):
        return False
    return _match(want[1:], got[1:])


def _squash(line: str) -> str:
    """A line with its runs of spaces made one: columns may widen with their values."""
    return " ".join(line.split())


def _line_pattern(line: str) -> re.Pattern[str]:

    pattern: list[str] = []
    position = 0
    for found in _VOLATILE_TOKEN.finditer(line):
        pattern.append(_literal(line[position : found.start()]))
        pattern.append(f"(?:{_FORMS[found.lastgroup or 'float']})")
        position = found.end()
    pattern.append(_literal(line[position:]))
    return re.compile("".join(pattern))


def _literal(text: str) -> str:
    """Text matched as it is, except that `...` stands for anything on the line."""
    return ".*?".join(re.escape(part) for part in text.split("..."))


def _same_json(want: Any, got: Any, key: str | None) -> bool:
    if key in VOLATILE_KEYS and _number(want) and _number(got):
        return type(want) is type(got) or {type(want), type(got)} == {int, float}
    if isinstance(want, dict):
        return (
            isinstance(got, dict)
            and list(want) == list(got)
            and all(_same_json(want[name], got[name], name) for name in want)
        )
    if isinstance(want, list):
        return (
            isinstance(got, list)
            and len(want) == len(got)
            and all(_same_json(a, b, None) for a, b in zip(want, got, strict=True))
        )
    if isinstance(want, str) and isinstance(got, str):
        return want == got or bool(_line_pattern(want).fullmatch(got))
    return type(want) is type(got) and bool(want == got)


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)
