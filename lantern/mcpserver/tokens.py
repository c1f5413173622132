"""The token file of `lantern mcp --http`: who may call the server, and within what fence.

Each token carries a label (who it was given to), its own scope patterns (as `--scope`: none
means the whole store) and a read-only flag, so one server can give each agent its own part of
a store. The file holds a token's SHA-256, never the token: tokens are 256 random bits, so a
fast hash is as safe as a slow one and costs nothing per request, and someone who reads the
file (or a backup of it) still cannot call the server.

The file is JSON, owner-only (a file others may read or write is refused, as SSH refuses a
private key), and rewritten whole through a temporary file and a rename, under a lock, so that
a running server never reads half a file and two `token add` commands never lose one another's
token. The server reads it again whenever it changes: a revocation takes effect at the next
request, without a restart.

This module imports neither the MCP SDK nor SQLAlchemy: the `token` commands stay quick.
"""

from __future__ import annotations

import errno
import fcntl
import hashlib
import hmac
import json
import os
import re
import secrets
import stat
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lantern.errors import InvalidInput, NotFound, PolicyRefused, StoreIOError
from lantern.memory.scopes import ScopePolicy

FORMAT_VERSION = 1
TOKEN_PREFIX = "lantern_"
_LABEL = re.compile(r"[A-Za-z0-9][A-Za-z0-9._@-]{0,63}")
_HASH = re.compile(r"[0-9a-f]{64}")


@dataclass(frozen=True, slots=True)
class Grant:
    """One token's entry: what its bearer may see and do."""

    label: str
    sha256: str
    scopes: tuple[str, ...]
    read_only: bool
    created_at: int

    @property
    def policy(self) -> ScopePolicy:
        return ScopePolicy.of(self.scopes)

    def to_json(self) -> dict[str, Any]:
        """The entry as stored in the file."""
        return {
            "label": self.label,
            "sha256": self.sha256,
            "scopes": list(self.scopes),
            "read_only": self.read_only,
            "created_at": self.created_at,
        }

    def listed(self) -> dict[str, Any]:
        """The entry as `token list --json` shows it: everything but the hash."""
        return {
            "label": self.label,
            "scopes": list(self.scopes),
            "read_only": self.read_only,
            "created_at": self.created_at,
        }


def digest(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8", "surrogatepass")).hexdigest()


def find(grants: Sequence[Grant], token: str) -> Grant | None:
    """The grant of a presented token, comparing with every stored hash in constant time (no
    early exit, so the time taken says nothing about which entry came close)."""
    presented = digest(token)
    found = None
    for grant in grants:
        if hmac.compare_digest(presented, grant.sha256):
            found = grant
    return found


def read(path: Path) -> list[Grant]:
    """The grants in the file, after checking that only its owner can read or change it."""
    try:
        with open(path, "rb") as handle:
            _check_private(path, os.fstat(handle.fileno()))
            raw = handle.read()
    except (FileNotFoundError, NotADirectoryError) as exc:
        raise NotFound(
            f"no token file at {path}: create one with lantern mcp token add --tokens {path}"
        ) from exc
    except OSError as exc:
        if exc.errno == errno.ENAMETOOLONG:
            raise InvalidInput(f"the token file's name is too long: {str(path)[:60]}…") from exc
        raise StoreIOError(f"cannot read the token file {path}: {exc.strerror}") from exc
    return _parse(path, raw)


def add(
    path: Path, label: str, *, scopes: Sequence[str] = (), read_only: bool = False
) -> tuple[str, Grant]:
    """A new token for `label` (returned once, in clear) and its stored entry."""
    if len(path.name.encode()) > 200:
        raise InvalidInput(f"the token file's name is too long: {str(path)[:60]}…")
    checked = _label(label)
    patterns = tuple(dict.fromkeys(scopes))
    ScopePolicy.of(patterns)  # the patterns' own messages, before anything is written
    token = TOKEN_PREFIX + secrets.token_urlsafe(32)
    grant = Grant(checked, digest(token), patterns, read_only, int(time.time()))
    with _locked(path):
        grants = read(path) if path.exists() else []
        if any(existing.label == checked for existing in grants):
            raise InvalidInput(
                f"a token labelled {checked!r} exists already in {path}; revoke it first or "
                "choose another label"
            )
        _write(path, [*grants, grant])
    return token, grant


def revoke(path: Path, label: str) -> Grant:
    """Remove the token of this label; a running server refuses it from its next request."""
    read(path)  # a missing file is reported before anything is created beside it
    with _locked(path):
        grants = read(path)
        kept = [grant for grant in grants if grant.label != label]
        if len(kept) == len(grants):
            raise NotFound(f"no token labelled {label!r} in {path}")
        _write(path, kept)
    return next(grant for grant in grants if grant.label == label)


class TokenFile:
    """The grants of a token file as a server sees them: read again when the file changes.

    A file that turns unreadable, loose in its permissions or malformed while the server runs
    grants nothing until it is fixed (the server says why on stderr, once per change).
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        self._seen: tuple[int, int, int, int] | None = None
        self._grants: list[Grant] = []
        self.problem: str | None = None
        self.grants()

    def grants(self) -> list[Grant]:
        try:
            info = os.stat(self.path)
            seen = (info.st_ino, info.st_size, info.st_mtime_ns, info.st_mode)
        except OSError:
            seen = None
        if seen is not None and seen == self._seen:
            return self._grants
        self._seen = seen
        try:
            self._grants, self.problem = read(self.path), None
        except (InvalidInput, NotFound, PolicyRefused, StoreIOError) as exc:
            self._grants, self.problem = [], exc.message
        return self._grants


def _parse(path: Path, raw: bytes) -> list[Grant]:
    problem = f"the token file {path} is not one lantern mcp token wrote"
    try:
        document = json.loads(raw)
        if document.get("version") != FORMAT_VERSION:
            raise InvalidInput(f"{problem} (format version {document.get('version')!r})")
        grants = [
            Grant(
                label=_label(entry["label"]),
                sha256=_hash(entry["sha256"]),
                scopes=tuple(_text_list(entry.get("scopes", []))),
                read_only=entry["read_only"] is True,
                created_at=int(entry["created_at"]),
            )
            for entry in document["tokens"]
        ]
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        raise InvalidInput(problem) from exc
    for grant in grants:
        grant.policy  # noqa: B018  (a bad pattern in the file fails here, with its message)
    return grants


def _check_private(path: Path, info: os.stat_result) -> None:
    if not stat.S_ISREG(info.st_mode):
        raise InvalidInput(f"the token file {path} is not a regular file")
    if info.st_mode & 0o077:
        raise PolicyRefused(
            f"the token file {path} can be read or changed by others "
            f"(mode {stat.S_IMODE(info.st_mode):o}): chmod 600 {path}"
        )
    if hasattr(os, "getuid") and info.st_uid != os.getuid():
        raise PolicyRefused(f"the token file {path} belongs to another user")


def _label(value: object) -> str:
    if not isinstance(value, str) or not _LABEL.fullmatch(value):
        raise InvalidInput(
            "a token label is 1-64 letters, digits and . _ @ -, starting with a letter or "
            f"digit; got {value!r}"
        )
    return value


def _hash(value: object) -> str:
    if not isinstance(value, str) or not _HASH.fullmatch(value):
        raise ValueError("not a SHA-256 in hex")
    return value


def _text_list(value: object) -> list[str]:
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise ValueError("not a list of strings")
    return value


def _write(path: Path, grants: list[Grant]) -> None:
    document = {"version": FORMAT_VERSION, "tokens": [grant.to_json() for grant in grants]}
    data = (json.dumps(document, indent=2) + "\n").encode("utf-8")
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        try:
            os.write(fd, data)
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(temporary, path)
    except OSError as exc:
        temporary.unlink(missing_ok=True)
        raise StoreIOError(f"cannot write the token file {path}: {exc.strerror}") from exc


@contextmanager
def _locked(path: Path) -> Iterator[None]:
    """Held while a command reads and rewrites the file (a lock file beside it, since the file
    itself is replaced)."""
    try:
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        fd = os.open(path.with_name(f".{path.name}.lock"), os.O_RDWR | os.O_CREAT, 0o600)
    except OSError as exc:
        raise StoreIOError(f"cannot lock the token file {path}: {exc.strerror}") from exc
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)
