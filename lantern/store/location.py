"""Where the store lives: `--db`, else `LANTERN_DB`, else a file in the user's data directory."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from lantern.errors import InvalidInput

ENV_VAR = "LANTERN_DB"


@dataclass(frozen=True, slots=True)
class StoreLocation:
    """A resolved store address: a SQLAlchemy URL, plus the file path when it is SQLite."""

    url: str
    path: Path | None

    @property
    def is_sqlite(self) -> bool:
        return self.path is not None

    @property
    def display_url(self) -> str:
        """The URL with any password hidden, for messages and `db status`."""
        if self.path is not None:
            return self.url
        from sqlalchemy.engine import make_url

        return make_url(self.url).render_as_string(hide_password=True)

    @property
    def cli_flag(self) -> str:
        """How to name this store on a command line, for messages that give a command."""
        return f"--db {_shell_quote(str(self.path) if self.path else self.display_url)}"


def default_path() -> Path:
    """`$XDG_DATA_HOME/lantern/lantern.db`, or `~/.local/share/lantern/lantern.db` when that
    variable is unset, empty or relative: the XDG spec says a relative path is invalid and must
    be ignored (taken as is, it would put the store wherever the command happened to run)."""
    data_home = Path(os.path.expanduser(os.environ.get("XDG_DATA_HOME") or ""))
    if not data_home.is_absolute():
        data_home = Path.home() / ".local" / "share"
    return data_home / "lantern" / "lantern.db"


def resolve(value: str | os.PathLike[str] | None = None) -> StoreLocation:
    """Turn a path or URL (or nothing: the environment, then the default) into a location."""
    if value is None:
        value = os.environ.get(ENV_VAR) or None
    if value is None:
        return _sqlite_location(default_path())
    text = os.fspath(value)
    if not text.strip():
        raise InvalidInput("the store location is empty; give a file path or a database URL")
    if "://" not in text:
        return _sqlite_location(Path(text))
    return _url_location(text)


def _url_location(text: str) -> StoreLocation:
    from sqlalchemy.engine import make_url
    from sqlalchemy.exc import ArgumentError

    try:
        url = make_url(text)
    except ArgumentError as exc:
        raise InvalidInput(f"not a valid database URL: {text!r}") from exc
    backend = url.get_backend_name()
    if backend == "sqlite":
        if url.database in (None, "", ":memory:") or url.database.startswith("file:"):
            raise InvalidInput(
                "in-memory and URI-style SQLite URLs are not supported; give a file path"
            )
        return _sqlite_location(Path(url.database))
    if backend == "postgresql":
        if url.get_driver_name() not in ("psycopg", "postgresql"):
            raise InvalidInput(
                "PostgreSQL stores use the psycopg 3 driver: write the URL as "
                "postgresql+psycopg://user@host/dbname"
            )
        url = url.set(drivername="postgresql+psycopg")
        return StoreLocation(url=url.render_as_string(hide_password=False), path=None)
    raise InvalidInput(
        f"unsupported database {backend!r}: Lantern stores are SQLite files or PostgreSQL databases"
    )


def _sqlite_location(path: Path) -> StoreLocation:
    absolute = Path(os.path.abspath(path.expanduser()))
    return StoreLocation(url=f"sqlite+pysqlite:///{absolute}", path=absolute)


def _shell_quote(text: str) -> str:
    import shlex

    return shlex.quote(text)
