"""The errors a user can cause, each with the exit code scripts rely on.

Every error that reaches a caller is a `LanternError`: the CLI prints its one-line message and
exits with its `exit_code`, the MCP server returns it as a tool error, and Python callers can
catch the root or a precise subclass. Database driver errors are translated at the store edge
(`lantern.store.engine`) so that nothing above it sees SQLAlchemy or sqlite3 exceptions.
"""

from __future__ import annotations


class LanternError(Exception):
    """Root of every error Lantern raises on purpose."""

    exit_code = 1
    code = "error"

    def __init__(self, message: str) -> None:
        # One line, always, and printable as UTF-8: a caller prints it as is. A lone surrogate
        # (an argument that was not valid UTF-8, echoed back) is shown as its escape.
        line = " ".join(message.split())
        super().__init__(line.encode("utf-8", "backslashreplace").decode("utf-8"))

    @property
    def message(self) -> str:
        """The one-line message, as the CLI prints it after `Error: `."""
        return str(self.args[0])


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
