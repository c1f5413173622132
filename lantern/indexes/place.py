"""Where a store's derived indexes live, and how a new one replaces the old at once.

Beside a SQLite file `lantern.db` they live in `lantern.db.index/`, owner-only like the store
(they hold its words). Each index is a directory of one generation, named by a pointer file
(`words.current` names `words.4f2a...`): a rebuild fills a new generation, then replaces the
pointer with `os.replace`, atomic on every platform, so a reader sees the old generation or
the new one and never a half-built one. Generations that no pointer names (left by a rebuild
that was killed) are removed by the next rebuild.

A PostgreSQL store, or SQLite in memory, has no place beside it: its searches run inside the
database. `LANTERN_INDEXES=off` makes every store search that way (to compare, or to rule the
indexes out when something looks wrong).
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

from lantern.store.location import StoreLocation

ENV_VAR = "LANTERN_INDEXES"


def directory(location: StoreLocation) -> Path | None:
    """The directory of a store's derived indexes; None where a store has none.

    A store file that cannot be written (immutable, on a read-only mount, not the caller's)
    gets nothing written beside it either: its searches run in the database."""
    path = location.path
    if path is None or path.name == ":memory:" or os.environ.get(ENV_VAR, "").lower() == "off":
        return None
    if not _writable(path):
        return None
    return path.with_name(path.name + ".index")


def _writable(path: Path) -> bool:
    """Whether the store file opens for writing (nothing is written: opening changes neither
    its bytes nor its times). `os.access` would say yes to root for an immutable file."""
    try:
        with open(path, "r+b"):
            return True
    except OSError:
        return False


def current(directory: Path, name: str) -> Path | None:
    """The generation the pointer names, if it is there."""
    try:
        generation = (directory / f"{name}.current").read_text(encoding="utf-8").strip()
    except (FileNotFoundError, NotADirectoryError):
        return None
    path = directory / generation
    return path if generation.startswith(f"{name}.") and path.is_dir() else None


def new_generation(directory: Path, name: str) -> Path:
    """An empty directory for a generation being built (owner-only)."""
    directory.mkdir(mode=0o700, exist_ok=True)
    return Path(tempfile.mkdtemp(prefix=f"{name}.", dir=directory))


def publish(directory: Path, name: str, generation: Path) -> None:
    """Make `generation` the current one, then remove the others of this name."""
    pointer = directory / f"{name}.current"
    staged = directory / f".{name}.current.new"
    with open(staged, "w", encoding="utf-8") as handle:
        handle.write(generation.name)
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(staged, pointer)
    _sync_directory(directory)
    for other in directory.glob(f"{name}.*"):
        if other.is_dir() and other != generation:
            shutil.rmtree(other, ignore_errors=True)


def remove(directory: Path, name: str) -> None:
    """Remove every generation of this index and its pointer."""
    (directory / f"{name}.current").unlink(missing_ok=True)
    for other in directory.glob(f"{name}.*"):
        if other.is_dir():
            shutil.rmtree(other, ignore_errors=True)


def size(path: Path) -> int:
    """Bytes on disk of a generation's files."""
    return sum(entry.stat().st_size for entry in path.rglob("*") if entry.is_file())


def _sync_directory(directory: Path) -> None:
    if os.name != "posix":
        return
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
