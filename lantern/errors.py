"""The errors a user can cause, each with the exit code scripts rely on.

Every error that reaches a caller is a `LanternError`: the CLI prints its one-line message and
exits with its `exit_code`, the MCP server returns it as a tool error, and Python callers can
catch the root or a precise subclass. Database driver errors are translated at the store edge
(`lantern.store.engine`) so that nothing above it sees SQLAlchemy or sqlite3 exceptions.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Self


@dataclass(frozen=True, slots=True)
class Term:
    """A word of a message that each surface says its own way: the Python API says
    `min_priority`, the CLI `--min-priority`; an error names what its caller typed.

    A message is written with terms where it names a parameter, a setting or an operation;
    `LanternError.message` says them as the Python API does, and a surface renders the same
    error in its own words with `LanternError.spelled`.
    """

    def python(self) -> str:
        raise NotImplementedError


@dataclass(frozen=True, slots=True)
class Param(Term):
    """A parameter, by its name in the Python API (`min_priority`, `expires_at`)."""

    name: str

    def python(self) -> str:
        return self.name


@dataclass(frozen=True, slots=True)
class Setting(Term):
    """A parameter given a value, as advice: `with allow_dangling=True`, `with raw=False`
    (on the CLI `with --allow-dangling`, `without --raw`)."""

    name: str
    value: bool | int | str

    def python(self) -> str:
        return f"with {self.name}={self.value!r}"


@dataclass(frozen=True, slots=True)
class Operation(Term):
    """An operation, by its path in the Python API (`memory.update`)."""

    path: str

    def python(self) -> str:
        return f"{self.path}()"


Spelling = Callable[[Term], "str | None"]
"""A surface's words for a term, or None to leave it as the Python API says it."""


class LanternError(Exception):
    """Root of every error Lantern raises on purpose.

    The message is text and `Term`s, joined: `InvalidInput(Param("limit"), " must be ...")`.
    Where the error arose is also said in attributes, set where it is raised, so that a caller
    (or an importer that tells a batch's error by the line of its file) never parses the text:
    `argument`, the parameter or field at fault; `index`, the item of a batch (`add_many`'s
    record); `line`, the line of an imported file. Each is None where it does not apply.
    """

    exit_code = 1
    code = "error"

    def __init__(
        self,
        *parts: str | Term,
        argument: str | None = None,
        index: int | None = None,
        line: int | None = None,
    ) -> None:
        self.parts = parts
        self.reason: tuple[str | Term, ...] = parts
        """The message without the place it is told at (`at` puts one before it)."""
        self.argument = argument
        self.index = index
        self.line = line
        super().__init__(_one_line("".join(_python(part) for part in parts)))

    @property
    def message(self) -> str:
        """The one-line message in the Python API's words (the CLI prints its own after
        `Error: `, see `spelled`)."""
        return str(self.args[0])

    def spelled(self, spell: Spelling) -> str:
        """The one-line message with each term in a surface's words."""
        words = [
            part if isinstance(part, str) else (spell(part) or part.python()) for part in self.parts
        ]
        return _one_line("".join(words))

    def at(self, place: str, *, index: int | None = None, line: int | None = None) -> Self:
        """The same error told at a place: `place` ("record 3: ") before the message, its
        terms kept (so each surface still says them its own way), `index` or `line` recorded;
        `reason` stays the message without any place."""
        located = type(self)(
            place,
            *self.parts,
            argument=self.argument,
            index=self.index if index is None else index,
            line=self.line if line is None else line,
        )
        located.reason = self.reason
        return located

    def moved(self, place: str, *, line: int | None = None) -> Self:
        """The error told at another place instead of the one it has: `place` before its
        `reason`, `line` recorded and the batch `index` dropped (an importer tells an error of
        the records it made by the line of its file they came from)."""
        located = type(self)(place, *self.reason, argument=self.argument, line=line)
        located.reason = self.reason
        return located


def _python(part: str | Term) -> str:
    return part if isinstance(part, str) else part.python()


def _one_line(message: str) -> str:
    # One line, always, and printable as UTF-8: a caller prints it as is. A lone surrogate
    # (an argument that was not valid UTF-8, echoed back) is shown as its escape.
    line = " ".join(message.split())
    return line.encode("utf-8", "backslashreplace").decode("utf-8")


class InvalidInput(LanternError):
    """An argument or field value is not acceptable."""

    exit_code = 1
    code = "invalid_input"


class NotFound(LanternError):
    """An id (or uri) names nothing in the store."""

    exit_code = 1
    code = "not_found"


class Conflict(LanternError):
    """The operation contradicts the record's current state (e.g. superseding twice)."""

    exit_code = 1
    code = "conflict"


class StoreBusy(LanternError):
    """Another writer held the store past the busy timeout."""

    exit_code = 3
    code = "store_busy"


class NotAStore(LanternError):
    """The file is not a Lantern store: not SQLite, another application's, corrupt or unreadable."""

    exit_code = 4
    code = "not_a_store"


class SchemaMismatch(LanternError):
    """The store's schema is behind this Lantern (upgrade it) or ahead of it (newer Lantern)."""

    exit_code = 5
    code = "schema_mismatch"


class StoreIOError(LanternError):
    """The operating system refused a write: disk full, read-only file or directory."""

    exit_code = 6
    code = "io_error"


class PolicyRefused(LanternError):
    """A configured policy (read-only mode, scope restriction) refused the operation."""

    exit_code = 7
    code = "refused"


class StoreUnreachable(LanternError):
    """The database server of a store cannot be reached, or refused the connection: a server
    that is down or unknown, a network that fails, a database or user it does not know.

    Nothing is wrong with the store as far as Lantern can tell; trying again later, or with
    another URL, may work. (A SQLite store is a file: it is found or not, never unreachable.)
    """

    exit_code = 9
    code = "store_unreachable"


class NoStore(LanternError):
    """No store is where the command looked (a missing or empty file, an empty database).

    Commands that only read, or change what is already stored, never create a store: a
    mistyped path is reported instead of silently starting an empty store there.
    """

    exit_code = 8
    code = "no_store"


class MissingDependency(LanternError):
    """An optional extra is needed for this feature and is not installed; the message ends
    with `install_hint` of that extra."""

    exit_code = 1
    code = "missing_dependency"


DISTRIBUTION = "lantern"
_OWN_ENTRY_POINTS = "lantern.embedding_providers"


def install_hint(extra: str, *, upgrade: bool = False) -> str:
    """How to install this Lantern's optional `extra` (`ui`, `mcp`, `embed`, `postgres`).

    `pip install 'lantern[ui]'` would fetch an unrelated project of that name from the package
    index, so the hint installs from where this Lantern came from, as pip recorded it in the
    distribution's `direct_url.json` (PEP 610): the checkout (editable or not), the archive or
    the repository. Where that is unknown (another installer, or no distribution of this
    project installed), it says so in words rather than guessing a command that would install
    the wrong thing. Read only when a hint is printed, so nothing is imported before.
    """
    flags = "--upgrade " if upgrade else ""
    origin = _direct_url()
    requirement = None if origin is None else requirement_from(extra, origin)
    if requirement is not None:
        editable, target = requirement
        return f"pip install {flags}{'-e ' if editable else ''}{target}"
    return (
        f"install Lantern with its {extra} extra from where you installed it "
        f"(from a checkout: pip install {flags}'.[{extra}]')"
    )


def requirement_from(extra: str, origin: dict[str, object]) -> tuple[bool, str] | None:
    """What `pip install` takes to install `extra` from the origin a `direct_url.json` holds,
    shell-quoted, and whether it was an editable install; None for an origin that is gone or
    not understood."""
    import shlex
    from pathlib import Path
    from urllib.parse import unquote, urlsplit

    url = origin.get("url")
    if not isinstance(url, str) or not url:
        return None
    subdirectory = origin.get("subdirectory")
    vcs = origin.get("vcs_info")
    if isinstance(vcs, dict):
        revision = vcs.get("requested_revision") or vcs.get("commit_id")
        at = f"@{revision}" if isinstance(revision, str) and revision else ""
        within = f"#subdirectory={subdirectory}" if isinstance(subdirectory, str) else ""
        return False, shlex.quote(f"{DISTRIBUTION}[{extra}] @ {vcs.get('vcs')}+{url}{at}{within}")
    parts = urlsplit(url)
    if parts.scheme != "file":
        return False, shlex.quote(f"{DISTRIBUTION}[{extra}] @ {url}")
    path = Path(unquote(parts.path))
    info = origin.get("dir_info")
    if isinstance(info, dict):
        if isinstance(subdirectory, str):
            path = path / subdirectory
        if not path.is_dir():
            return None
        return bool(info.get("editable")), shlex.quote(f"{path}[{extra}]")
    if not path.is_file():
        return None
    return False, shlex.quote(f"{path}[{extra}]")


def _direct_url() -> dict[str, object] | None:
    """The installed distribution's `direct_url.json`, when it is this project's."""
    import json
    from importlib.metadata import PackageNotFoundError, distribution

    try:
        found = distribution(DISTRIBUTION)
    except PackageNotFoundError:
        return None
    if not any(entry.group == _OWN_ENTRY_POINTS for entry in found.entry_points):
        return None  # another project's distribution of the same name
    recorded = found.read_text("direct_url.json")
    if recorded is None:
        return None
    try:
        origin = json.loads(recorded)
    except ValueError:
        return None
    return origin if isinstance(origin, dict) else None


class EmbeddingFailed(LanternError):
    """An embedding model or service could not give vectors: a model file that fails its
    checksum, a server that cannot be reached or answers with an error or a malformed body."""

    exit_code = 1
    code = "embedding_failed"


class WriteAbandoned(LanternError):
    """A write rolled back because its caller gave up on it before it committed (an MCP
    client cancelled the call, or the server is shutting down); nothing was written."""

    exit_code = 1
    code = "abandoned"
