"""Copying a SQLite store while it is in use (`lantern db backup`)."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from lantern.errors import InvalidInput, Setting
from lantern.store import migrations
from lantern.store.engine import Store
from lantern.validation import JSONObject


@dataclass(frozen=True, slots=True)
class BackupReport:
    """Where `lantern db backup` wrote the copy, and how big it is."""

    path: Path
    size_bytes: int
    revision: str | None

    def to_json(self) -> JSONObject:
        """The report as `db backup --json` prints it."""
        return {"path": str(self.path), "size_bytes": self.size_bytes, "revision": self.revision}


def backup(store: Store, target: str | os.PathLike[str], *, force: bool = False) -> BackupReport:
    """A consistent copy of a SQLite store, write-ahead log included, while others use it.

    The copy is one snapshot (SQLite's online backup API, in one step under a read lock, which
    never blocks writers), checked with `quick_check`, and only then moved to `target`, so a
    crash never leaves a half-written file there. An existing `target` is refused unless
    `force`. PostgreSQL stores are copied with the server's tools (`pg_dump`), or portably
    with `lantern export`.
    """
    path = store.location.path
    if path is None:
        raise InvalidInput(
            "db backup copies SQLite store files; back up a PostgreSQL store with pg_dump "
            "(or lantern export for a portable copy)"
        )
    destination = Path(os.path.abspath(os.path.expanduser(os.fspath(target))))
    own_files = {path.with_name(path.name + suffix) for suffix in ("", "-wal", "-shm", "-journal")}
    if destination in own_files:
        raise InvalidInput(f"{destination} is the store itself or one of its files")
    if destination.is_dir():
        raise InvalidInput(f"{destination} is a directory; give the path of the backup file")
    if destination.exists() and not force:
        raise InvalidInput(f"{destination} exists; replace it ", Setting("force", True))
    with store.read() as conn:
        revision = migrations.read_state(conn, store.location).effective_revision
    migrations.copy_sqlite(path, destination, replace=force)
    return BackupReport(destination, destination.stat().st_size, revision)
