"""Small shared pieces for tests (fixtures live in conftest.py)."""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any, Protocol

import click
from click.testing import Result

LANTERN_BIN = Path(sys.executable).with_name("lantern")
REPO_ROOT = Path(__file__).resolve().parent.parent

BASE_TIME = 1_800_000_000
"""Where a test's clock starts: 2027-01-15 08:00 UTC."""


class Clock:
    """A settable clock for a store (`Lantern.open(clock=...)`): every operation takes `now`
    as its timestamp, and tests move it by hand."""

    def __init__(self, start: int = BASE_TIME) -> None:
        self.now = start

    def __call__(self) -> int:
        return self.now

    def advance(self, seconds: int = 1) -> int:
        self.now += seconds
        return self.now


def extra_hint(extra: str, *, upgrade: bool = False) -> str:
    """What Lantern says to install a missing extra when it runs from this checkout's editable
    install (`pip install -e ".[dev]"`, as the README sets up the tests): that checkout with
    the extra, never the unrelated `lantern` of the package index."""
    flags = "--upgrade " if upgrade else ""
    return f"pip install {flags}-e {shlex.quote(f'{REPO_ROOT}[{extra}]')}"


# The pinned JSON keys of a source and a chunk, in order (docs/json.md, "Sources and chunks").
SOURCE_KEYS = [
    "id",
    "uri",
    "kind",
    "title",
    "content_hash",
    "metadata",
    "created_at",
    "updated_at",
    "chunk_count",
]
# When a chunk's words were said (docs/json.md): the last keys of a chunk and of a search hit.
SAID_KEYS = ["said_from", "said_until"]
FIRST_CHUNK_KEYS = [
    "id",
    "source_id",
    "ordinal",
    "text",
    "start_offset",
    "end_offset",
    "metadata",
    "created_at",
    "entities",
    "embeddings",
]
"""A chunk's keys before `chunk show` adds its own (`source`, `before`, `after`, `cited_by`)."""
CHUNK_KEYS = [*FIRST_CHUNK_KEYS, *SAID_KEYS]

# Where a search hit came from, after a hit's or a memory match's own keys (README, "Search").
ORIGIN_KEYS = ["mode", "keyword_rank", "semantic_rank", "similarity"]
# The pinned JSON keys of an evidence search hit, in order.
HIT_KEYS = [
    "chunk_id",
    "source_id",
    "uri",
    "kind",
    "ordinal",
    "start_offset",
    "end_offset",
    "score",
    "snippet",
    *ORIGIN_KEYS,
    *SAID_KEYS,
]


class CliRun(Protocol):
    """The `run_cli` fixture: a `lantern` command in-process, against the test store (or `db`)."""

    def __call__(
        self, *args: str, input: str | bytes | None = None, db: str | None = None
    ) -> Result: ...


class ProcessRun(Protocol):
    """The `run_lantern` fixture: the installed `lantern` in a subprocess, against the test
    store."""

    def __call__(
        self, *args: str, input: str | None = None, env: dict[str, Any] | None = None
    ) -> subprocess.CompletedProcess[str]: ...


def lantern_process(
    *args: str, env: dict[str, Any] | None = None, **kwargs: Any
) -> subprocess.CompletedProcess[str]:
    """Run the installed `lantern` executable with the test environment."""
    return subprocess.run(
        [str(LANTERN_BIN), *args],
        check=False,
        capture_output=True,
        text=True,
        env={**os.environ, **(env or {})},
        timeout=120,
        **kwargs,
    )


def python_output(script: str, *args: str) -> str:
    """The stdout of `script` run by a fresh interpreter from the repository, which must
    succeed: for what a new process loads, which an in-process test cannot see."""
    ran = subprocess.run(
        [sys.executable, "-c", script, *args],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        cwd=REPO_ROOT,
    )
    assert ran.returncode == 0, ran.stderr
    return ran.stdout


def file_state(path: Path) -> tuple[bytes, int]:
    """Bytes and modification time, to prove a command left a file untouched."""
    return path.read_bytes(), path.stat().st_mtime_ns


def subcommands(group: click.Group) -> dict[str, click.Command]:
    """A group's commands by name, loaded as `lantern` loads them (the root group is lazy)."""
    ctx = click.Context(group)
    found = {name: group.get_command(ctx, name) for name in group.list_commands(ctx)}
    return {name: command for name, command in found.items() if command is not None}


def command_paths(group: click.Group, prefix: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    """Every runnable command under `group`, as the words that name it, sorted."""
    paths: list[tuple[str, ...]] = []
    for name, command in sorted(subcommands(group).items()):
        if isinstance(command, click.Group):
            paths += command_paths(command, (*prefix, name))
        else:
            paths.append((*prefix, name))
    return paths


def command_at(group: click.Group, path: tuple[str, ...]) -> click.Command:
    found: click.Command = group
    for name in path:
        assert isinstance(found, click.Group)
        found = subcommands(found)[name]
    return found
