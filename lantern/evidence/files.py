"""Finding and reading the files an ingest takes in, the way a careful user would pick them.

This module only touches the file system; the evidence repository decides what to store.

* **What is walked.** Each path given is a file or a directory. Directories are walked
  recursively and deterministically: a directory's files in name order, then its
  subdirectories in name order. A file named on the command line is always read (only a binary,
  non-UTF-8 or too large file is refused); the rules below apply to what a walk finds.
* **Left out on Lantern's own accord, and reported** (`skipped_paths`): version-control
  directories (`.git`, `.hg`, `.svn`), `node_modules`, cache directories (`__pycache__`,
  `.mypy_cache`, `.pytest_cache` and the like, and any directory tagged with a `CACHEDIR.TAG`),
  virtual environments (a directory with a `pyvenv.cfg` or `conda-meta`), whatever a
  `.gitignore` excludes, binary files (a NUL byte),
  files that are not UTF-8 text, unreadable files and directories, special files (FIFOs,
  sockets, devices), file names that are not UTF-8, files larger than `MAX_FILE_BYTES` (checked
  before anything is read, so a huge file costs no memory), and every symbolic link.
* **Symbolic links are never followed inside a walk.** A link that points outside the walked
  directory would let an ingest read anywhere on the disk, and one that points inside it would
  ingest the same text twice; both are reported as skipped, with which one it was. Files are
  opened with `O_NOFOLLOW`, so a file swapped for a link after the walk is refused too.
* **`.gitignore`** files are read in every walked directory (their patterns apply below it,
  deeper files taking precedence), and, when the walked directory lies inside a Git work tree,
  in the directories from the top of the work tree down to it, with `.git/info/exclude`. A
  directory that those outer files exclude is still walked when named explicitly; only the
  `.gitignore` files inside it apply then.
* **`--include`/`--exclude`** are gitignore-style patterns matched against the path relative
  to the walked directory (`*.md` matches at any depth, `docs/*.md` only under `docs/`, a
  trailing `/` matches directories). A file is taken when it matches an include pattern (any
  file, when there is none) and no exclude pattern; an excluded directory is not entered. What
  these filters leave out is the user's choice and is not reported as skipped.
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field, replace

import pathspec

from lantern.errors import InvalidInput, Param
from lantern.evidence.records import SkippedPath

BINARY_SNIFF_BYTES = 8192
"""How much of a file is checked for a NUL byte before the rest is read (Git's heuristic)."""

MAX_FILE_BYTES = 64 * 1024 * 1024
"""The largest file (or standard input) an ingest takes. A source is chunked in memory and
stored in one transaction, which peaks at about three times its size (measured: 190 MB for
32 MB); larger texts are refused unread, so that memory stays bounded whatever is named."""

_VCS_DIRECTORIES = frozenset({".git", ".hg", ".svn"})
_VENV_MARKERS = ("pyvenv.cfg", "conda-meta")
CACHE_DIRECTORIES = frozenset(
    {
        "__pycache__",
        ".mypy_cache",
        ".pytest_cache",
        ".ruff_cache",
        ".hypothesis",
        ".tox",
        ".nox",
        ".ipynb_checkpoints",
        ".pytype",
        ".pyre",
        ".parcel-cache",
        ".sass-cache",
    }
)
"""Directories tools fill with derived files, left out of a walk by name; any other directory
that holds a `CACHEDIR.TAG` (the Cache Directory Tagging convention) is left out too."""
_CACHE_TAG = "CACHEDIR.TAG"


@dataclass(frozen=True, slots=True)
class FoundFile:
    """A regular file to read: named by the user (`root` is None), or found by a walk of `root`."""

    path: str
    root: str | None = None


@dataclass(frozen=True, slots=True)
class FileText:
    """A file's text, decoded as UTF-8 (a byte-order mark dropped), and its file facts."""

    path: str
    text: str
    size: int
    mtime: int

    @property
    def uri(self) -> str:
        return file_uri(self.path)


@dataclass(frozen=True, slots=True)
class FileSelection:
    """What a set of paths holds: the files to read, what was skipped, and the directories."""

    files: list[FoundFile] = field(default_factory=list)
    skipped: list[SkippedPath] = field(default_factory=list)
    directories: list[str] = field(default_factory=list)


def file_uri(path: str) -> str:
    """The legacy URI of a file: `file://` and the absolute path as it is, not percent-encoded.

    Stores written before Lantern used Alembic name files this way, so re-ingesting a file
    finds the source an old store already holds for it.
    """
    return "file://" + path


def directory_uri_prefix(path: str) -> str:
    """The prefix shared by the URIs of every file under a directory."""
    return file_uri(path.rstrip("/")) + "/"


def path_of_uri(uri: str) -> str | None:
    """The file path of a `file://` URI, or None for any other URI."""
    return uri[len("file://") :] if uri.startswith("file:///") else None


def select_files(
    paths: Sequence[str | os.PathLike[str]],
    *,
    include: Sequence[str] = (),
    exclude: Sequence[str] = (),
) -> FileSelection:
    """Find the files under `paths`; raise `InvalidInput` for a path or pattern that is wrong.

    Every path and pattern is checked before anything is walked, so bad input fails before an
    ingest writes anything. A file reached twice (named and inside a named directory) is
    listed once, as named.
    """
    include_spec = _patterns("include", include)
    exclude_spec = _patterns("exclude", exclude)
    roots = [_root(path) for path in paths]
    selection = FileSelection()
    seen: dict[str, int] = {}
    for root, is_dir in roots:
        if not is_dir:
            found = [FoundFile(root)]
        else:
            selection.directories.append(root)
            walker = _Walker(root, include_spec, exclude_spec, selection.skipped)
            found = list(walker.files())
        for item in found:
            if item.path not in seen:
                seen[item.path] = len(selection.files)
                selection.files.append(item)
            elif item.root is None:
                # Named as well as found by a walk: it is read as the file the user named.
                selection.files[seen[item.path]] = item
    return selection


def read_file(found: FoundFile) -> FileText | SkippedPath:
    """Read a file as UTF-8 text, or say why it was skipped (binary, not UTF-8, unreadable);
    a file named by the caller is skipped `named`."""
    read = _read_file(found)
    if isinstance(read, SkippedPath) and found.root is None:
        return replace(read, named=True)
    return read


def _read_file(found: FoundFile) -> FileText | SkippedPath:
    """Read a file as UTF-8 text, or say why it was skipped (binary, not UTF-8, unreadable).

    The file is opened once and checked with `fstat`, so what is read is the regular file that
    was checked. Only a file named explicitly may be reached through a symbolic link; a file
    found by a walk is opened one path component at a time from its walked directory, none of
    them followed if it is a link, so that a directory swapped for a link after the walk cannot
    lead the read out of the tree.
    """
    try:
        fd = _open_file(found)
    except OSError as exc:
        return _unreadable(found.path, exc)
    with os.fdopen(fd, "rb") as handle:
        try:
            info = os.fstat(fd)
            if not stat.S_ISREG(info.st_mode):
                return SkippedPath(display_path(found.path), "not a regular file")
            if info.st_size > MAX_FILE_BYTES:
                return _too_large(found.path, info.st_size)
            head = handle.read(BINARY_SNIFF_BYTES)
            if b"\x00" in head:
                return SkippedPath(display_path(found.path), "binary")
            # Bounded even if the file grows after the fstat.
            data = head + handle.read(MAX_FILE_BYTES + 1 - len(head))
        except OSError as exc:
            return _unreadable(found.path, exc)
    if len(data) > MAX_FILE_BYTES:
        return _too_large(found.path, len(data))
    if b"\x00" in data:
        return SkippedPath(display_path(found.path), "binary")
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError:
        return SkippedPath(display_path(found.path), "not UTF-8 text")
    return FileText(found.path, text, size=len(data), mtime=int(info.st_mtime))


_CLOEXEC = getattr(os, "O_CLOEXEC", 0)


def _open_file(found: FoundFile) -> int:
    flags = os.O_RDONLY | os.O_NONBLOCK | _CLOEXEC
    if found.root is None:
        return os.open(found.path, flags)
    parts = os.path.relpath(found.path, found.root).split(os.sep)
    directory = os.open(found.root, os.O_RDONLY | os.O_DIRECTORY | _CLOEXEC)
    try:
        for part in parts[:-1]:
            try:
                inner = os.open(
                    part, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | _CLOEXEC, dir_fd=directory
                )
            except NotADirectoryError:
                if stat.S_ISLNK(os.lstat(part, dir_fd=directory).st_mode):
                    # A directory of the walk became a link since: never go through it.
                    raise OSError(errno.ELOOP, os.strerror(errno.ELOOP), found.path) from None
                raise
            os.close(directory)
            directory = inner
        return os.open(parts[-1], flags | os.O_NOFOLLOW, dir_fd=directory)
    finally:
        os.close(directory)


def _too_large(path: str, size: int) -> SkippedPath:
    return SkippedPath(
        display_path(path), f"too large ({size} bytes; the limit is {MAX_FILE_BYTES} bytes)"
    )


def display_path(path: str) -> str:
    """A path as printable text, even when its name holds bytes that are not UTF-8."""
    return os.fsencode(path).decode("utf-8", "backslashreplace")


def _unreadable(path: str, exc: OSError) -> SkippedPath:
    if exc.errno == errno.ELOOP:
        return SkippedPath(display_path(path), "symlink (not followed)")
    return SkippedPath(display_path(path), f"unreadable: {exc.strerror or exc}")


def _root(path: str | os.PathLike[str]) -> tuple[str, bool]:
    """An absolute path (symbolic links kept, as the user wrote it) and whether it is a dir."""
    text = os.fspath(path)
    if not isinstance(text, str) or not text.strip():
        raise InvalidInput("a path to ingest must not be empty")
    absolute = os.path.abspath(os.path.expanduser(text))
    if not _is_utf8(absolute):
        raise InvalidInput(f"path is not valid UTF-8: {display_path(absolute)}")
    try:
        info = os.stat(absolute)
    except FileNotFoundError:
        raise InvalidInput(f"no such file or directory: {text}") from None
    except OSError as exc:
        raise InvalidInput(f"cannot read {text}: {exc.strerror or exc}") from exc
    if stat.S_ISDIR(info.st_mode):
        return absolute, True
    if stat.S_ISREG(info.st_mode):
        return absolute, False
    raise InvalidInput(f"not a regular file or directory: {text}")


def _is_utf8(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _patterns(option: str, patterns: Sequence[str]) -> pathspec.GitIgnoreSpec | None:
    if isinstance(patterns, str):
        patterns = [patterns]
    for pattern in patterns:
        if not isinstance(pattern, str) or not pattern.strip():
            raise InvalidInput(Param(option), " patterns must not be empty")
    if not patterns:
        return None
    try:
        return pathspec.GitIgnoreSpec.from_lines(list(patterns))
    except ValueError as exc:
        raise InvalidInput(Param(option), f" pattern is not valid: {exc}") from exc


def _read_ignore_file(path: str) -> pathspec.GitIgnoreSpec | None:
    """Compile a .gitignore; like Git, a pattern that does not compile is ignored."""
    try:
        with open(path, encoding="utf-8", errors="replace") as handle:
            lines = handle.read().splitlines()
    except OSError:
        return None
    try:
        return pathspec.GitIgnoreSpec.from_lines(lines)
    except ValueError:
        valid = []
        for line in lines:
            try:
                pathspec.GitIgnoreSpec.from_lines([line])
            except ValueError:
                continue
            valid.append(line)
        return pathspec.GitIgnoreSpec.from_lines(valid)


@dataclass(frozen=True, slots=True)
class _Ignores:
    """The .gitignore files in force for a directory, outermost first."""

    specs: tuple[tuple[str, pathspec.GitIgnoreSpec], ...] = ()

    def ignored(self, path: str, *, is_dir: bool) -> bool:
        # The deepest file with an opinion wins, as in Git.
        for base, spec in reversed(self.specs):
            relative = os.path.relpath(path, base).replace(os.sep, "/")
            result = spec.check_file(relative + "/" if is_dir else relative)
            if result.include is not None:
                return bool(result.include)
        return False

    def entering(self, directory: str) -> _Ignores:
        spec = _read_ignore_file(os.path.join(directory, ".gitignore"))
        return self if spec is None else _Ignores((*self.specs, (directory, spec)))

    @classmethod
    def above(cls, root: str) -> _Ignores:
        """The ignore files of the Git work tree around `root`, down to (not including) it."""
        top = _work_tree_top(root)
        if top is None:
            return cls()
        exclude = _read_ignore_file(os.path.join(top, ".git", "info", "exclude"))
        ignores = cls() if exclude is None else cls(((top, exclude),))
        if root == top:
            return ignores
        directory = top
        for part in os.path.relpath(root, top).split(os.sep):
            ignores = ignores.entering(directory)
            directory = os.path.join(directory, part)
        # A directory the outer files exclude is walked all the same when it is named.
        return cls() if ignores.ignored(root, is_dir=True) else ignores


def _work_tree_top(directory: str) -> str | None:
    current = directory
    while True:
        if os.path.exists(os.path.join(current, ".git")):
            return current
        parent = os.path.dirname(current)
        if parent == current:
            return None
        current = parent


class _Walker:
    """A depth-first walk of one named directory, in name order, that never follows links."""

    def __init__(
        self,
        root: str,
        include: pathspec.GitIgnoreSpec | None,
        exclude: pathspec.GitIgnoreSpec | None,
        skipped: list[SkippedPath],
    ) -> None:
        self.root = root
        self.real_root = os.path.realpath(root)
        self.include = include
        self.exclude = exclude
        self.skipped = skipped

    def files(self) -> Iterator[FoundFile]:
        stack = [(self.root, _Ignores.above(self.root))]
        while stack:
            directory, inherited = stack.pop()
            ignores = inherited.entering(directory)
            subdirectories: list[tuple[str, _Ignores]] = []
            for entry in self._entries(directory):
                if entry.is_dir(follow_symlinks=False):
                    if self._enter(entry, ignores):
                        subdirectories.append((entry.path, ignores))
                elif self._take(entry, ignores):
                    yield FoundFile(entry.path, root=self.root)
            stack.extend(reversed(subdirectories))

    def _entries(self, directory: str) -> list[os.DirEntry[str]]:
        try:
            with os.scandir(directory) as entries:
                return sorted(entries, key=lambda entry: entry.name)
        except OSError as exc:
            self._skip(directory, f"unreadable: {exc.strerror or exc}")
            return []

    def _skip(self, path: str, reason: str) -> None:
        self.skipped.append(SkippedPath(display_path(path), reason))

    def _relative(self, path: str, *, is_dir: bool) -> str:
        relative = os.path.relpath(path, self.root).replace(os.sep, "/")
        return relative + "/" if is_dir else relative

    def _enter(self, entry: os.DirEntry[str], ignores: _Ignores) -> bool:
        """Whether to walk into a directory (not a link: links are files to `_take`)."""
        if not _is_utf8(entry.name):
            self._skip(entry.path, "file name is not valid UTF-8")
            return False
        if self.exclude is not None and self.exclude.match_file(
            self._relative(entry.path, is_dir=True)
        ):
            return False
        reason = None
        if entry.name in _VCS_DIRECTORIES:
            reason = "version control directory"
        elif entry.name == "node_modules":
            reason = "node_modules directory"
        elif entry.name in CACHE_DIRECTORIES or os.path.lexists(
            os.path.join(entry.path, _CACHE_TAG)
        ):
            reason = "cache directory"
        elif any(os.path.lexists(os.path.join(entry.path, m)) for m in _VENV_MARKERS):
            reason = "virtual environment"
        elif ignores.ignored(entry.path, is_dir=True):
            reason = "excluded by .gitignore"
        if reason is not None:
            self._skip(entry.path, reason)
            return False
        return True

    def _take(self, entry: os.DirEntry[str], ignores: _Ignores) -> bool:
        """Whether a non-directory entry is a file to read; report what is skipped."""
        if not _is_utf8(entry.name):
            self._skip(entry.path, "file name is not valid UTF-8")
            return False
        relative = self._relative(entry.path, is_dir=False)
        if self.include is not None and not self.include.match_file(relative):
            return False
        if self.exclude is not None and self.exclude.match_file(relative):
            return False
        if entry.is_symlink():
            self._skip(entry.path, self._link_reason(entry.path))
            return False
        if entry.name in _VCS_DIRECTORIES:
            self._skip(entry.path, "version control directory")
            return False
        if ignores.ignored(entry.path, is_dir=False):
            self._skip(entry.path, "excluded by .gitignore")
            return False
        if not entry.is_file(follow_symlinks=False):
            self._skip(entry.path, "not a regular file")
            return False
        return True

    def _link_reason(self, path: str) -> str:
        target = os.path.realpath(path)
        if not os.path.exists(target):
            return "broken symlink"
        if os.path.commonpath([self.real_root, target]) != self.real_root:
            return "symlink to outside the directory (not followed)"
        return "symlink (not followed)"
