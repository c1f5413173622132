"""Where a store's derived indexes live, and how a new one replaces the old at once.

Beside a SQLite file `lantern.db` they live in `lantern.db.index/`, owner-only like the store
(they hold its words). Each index is a directory of one generation, named by a pointer file
(`words.current` names `words.4f2a...`): a rebuild fills a new generation, then replaces the
pointer with `os.replace`, atomic on every platform, so a reader sees the old generation or
the new one and never a half-built one. Generations that no pointer names (left by a rebuild
that was killed) are removed by the next rebuild.

A PostgreSQL store has no file to put them beside. A long-lived server process (`lantern mcp`,
over stdio or HTTP, and `lantern ui`) keeps them in the user's cache
directory (`$XDG_CACHE_HOME/lantern/indexes/<digest of the database URL>/`, owner-only; see
`serve`), built when it starts and caught up from the store's feed before each search, as
beside a file. Any other process (a one-shot CLI) searches inside the database: building or
opening an index would cost it more than the one search it runs. The URL names the store
(the password left out); a database restored or recreated at the same URL is told apart by
the feed's anchor (`lantern.indexes.feed`), and its indexes rebuilt. SQLite in memory has no
place either. `LANTERN_INDEXES=off` makes every store search inside its database (to compare,
or to rule the indexes out when something looks wrong).
"""

from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from lantern.store.engine import busy_timeout
from lantern.store.location import StoreLocation

ENV_VAR = "LANTERN_INDEXES"


_served: set[str] = set()
"""The database stores whose indexes this process keeps (`serve`), by URL."""


def directory(location: StoreLocation, *, looking: bool = False) -> Path | None:
    """The directory of a store's derived indexes; None where a store has none.

    The directory is made by a write to the store (`lantern.memory.topk.after_write`), by
    `db upgrade` and by `db rebuild-index`, never by a search: reading a store that cannot be
    written (an immutable file) leaves nothing beside it. Nothing here opens the store's file:
    closing any descriptor of a SQLite file releases every lock the process holds on it.

    A database store has one only in a process that `serve`s it; `looking` (`db status`,
    `db check`) also names the one a server process on this host keeps for it."""
    if os.environ.get(ENV_VAR, "").lower() == "off":
        return None
    path = location.path
    if path is None:
        if location.url in _served:
            return cache_directory(location)
        return cache_directory(location) if looking and cache_directory(location).is_dir() else None
    if path.name == ":memory:":
        return None
    return path.with_name(path.name + ".index")


def cache_directory(location: StoreLocation) -> Path:
    """Where the indexes of a database store live on this host: the user's cache directory
    (`$XDG_CACHE_HOME`, else `~/.cache`), one directory per database URL without its password
    (a digest, so that no name or host is spelled out in the file system)."""
    from sqlalchemy.engine import make_url

    identity = make_url(location.url).set(password=None).render_as_string(hide_password=False)
    digest = hashlib.sha256(identity.encode("utf-8")).hexdigest()[:32]
    cache_home = Path(os.path.expanduser(os.environ.get("XDG_CACHE_HOME") or ""))
    if not cache_home.is_absolute():
        cache_home = Path.home() / ".cache"
    return cache_home / "lantern" / "indexes" / digest


def serve(location: StoreLocation) -> Path | None:
    """Keep a database store's indexes in this process (a long-lived server) from now on,
    in its cache directory, made here (owner-only); None where it has none (SQLite keeps
    them beside its file whoever opens it; `LANTERN_INDEXES=off`)."""
    if location.path is not None or os.environ.get(ENV_VAR, "").lower() == "off":
        return None
    found = cache_directory(location)
    found.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    make(found)
    _served.add(location.url)
    return found


CACHE_TAG = "CACHEDIR.TAG"
_CACHE_TAG_TEXT = (
    "Signature: 8a477f597d28d172789f06886806bc55\n"
    "# Lantern's search indexes, derived from the store beside this directory and rebuilt\n"
    "# from it by `lantern db rebuild-index`. See https://bford.info/cachedir/\n"
)


def make(directory: Path) -> None:
    """Create the directory (owner-only), tagged as a cache (`CACHEDIR.TAG`): backup tools
    that honour the tag skip derived data, and `lantern ingest` never reads it as evidence."""
    directory.mkdir(mode=0o700, exist_ok=True)
    tag = directory / CACHE_TAG
    if not tag.exists():
        fd = os.open(tag, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with open(fd, "w", encoding="ascii") as handle:
            handle.write(_CACHE_TAG_TEXT)


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
    make(directory)
    return Path(tempfile.mkdtemp(prefix=f"{name}.", dir=directory))


def owner_only(generation: Path) -> None:
    """Make a generation's files readable by their owner alone, as the store's file is: they
    hold its words (tantivy creates its files by the process's umask)."""
    for entry in generation.iterdir():
        if entry.is_file() and entry.stat().st_mode & 0o077:
            entry.chmod(0o600)


def publish(directory: Path, name: str, generation: Path) -> None:
    """Make `generation` the current one, then remove the others of this name."""
    pointer = directory / f"{name}.current"
    staged = directory / f".{name}.current.new"
    owner_only(generation)
    fd = os.open(staged, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with open(fd, "w", encoding="utf-8") as handle:
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
    sync(directory)


def sync(path: Path) -> None:
    """Flush a file (or a directory's entries) to the disk, by a descriptor of its own."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def pause_for_a_test(variable: str) -> None:
    """Tests only: where the environment names a file path in `variable`, create it and wait,
    so that a test can kill the process at this moment of a build."""
    hook = os.environ.get(variable)
    if not hook:
        return
    import time

    Path(hook).touch()
    time.sleep(60)


@contextmanager
def locked(directory: Path, name: str) -> Iterator[bool]:
    """An exclusive lock on one index's builds, waited for as long as a write to the store
    would wait (`busy_timeout`); yields False if another process holds it past that. A lock
    file of its own (`flock`), never the store's file. Without POSIX locks (Windows), builds
    are not serialised: two at once each publish a whole generation, and the last one stays."""
    make(directory)
    if os.name != "posix":
        yield True
        return
    import fcntl

    fd = os.open(directory / f".{name}.lock", os.O_RDWR | os.O_CREAT, 0o600)
    try:
        deadline = time.monotonic() + busy_timeout()
        delay = 0.002
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    yield False
                    return
                time.sleep(delay)
                delay = min(delay * 2, 0.05)
        yield True
    finally:
        os.close(fd)  # lets the lock go, as a killed process's lock goes with it
