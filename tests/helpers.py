"""Small shared pieces for tests (fixtures live in conftest.py)."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from click.testing import Result

LANTERN_BIN = Path(sys.executable).with_name("lantern")
REPO_ROOT = Path(__file__).resolve().parent.parent

# The pinned JSON keys of a source and a chunk, in order (README, "Evidence").
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
CHUNK_KEYS = [
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

CliRun = Callable[..., Result]
ProcessRun = Callable[..., subprocess.CompletedProcess[str]]


def lantern_process(*args: str, env: dict[str, Any] | None = None, **kwargs: Any) -> Any:
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


def file_state(path: Path) -> tuple[bytes, int]:
    """Bytes and modification time, to prove a command left a file untouched."""
    return path.read_bytes(), path.stat().st_mtime_ns
