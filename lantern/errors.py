"""The errors a user can cause, each with the exit code scripts rely on.

Every error that reaches a caller is a `LanternError`: the CLI prints its one-line message and
exits with its `exit_code`, the MCP server returns it as a tool error, and Python callers can
catch the root or a precise subclass. Database driver errors are translated at the store edge
(`lantern.store.engine`) so that nothing above it sees SQLAlchemy or sqlite3 exceptions.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass


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
    """

    exit_code = 1
    code = "error"

    def __init__(self, *parts: str | Term) -> None:
        self.parts = parts
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
    """An optional extra is needed for this feature and is not installed."""

    exit_code = 1
    code = "missing_dependency"


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
