"""Oversize input is refused, or taken, with bounded memory, and never half-written.

Documented limits (docs/guarantees.md): an ingested file or standard input is at most
`MAX_FILE_BYTES` (64 MiB), checked before it is read; a memory content is at most 100,000
characters, and `memory add -` reads at most four bytes per character of standard input. Each
command runs as the `lantern` executable under a small parent that reports its peak resident
memory (`getrusage(RUSAGE_CHILDREN).ru_maxrss`).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from lantern.api import Lantern
from lantern.errors import InvalidInput
from lantern.evidence.files import MAX_FILE_BYTES
from lantern.validation import MAX_CONTENT_CHARS
from tests.helpers import LANTERN_BIN
from tests.reliability.conftest import Figures
from tests.reliability.tools import Tier, assert_healthy

GIB = 1024**3
MIB = 1024**2
_MEASURE = (
    "import resource, subprocess, sys\n"
    "done = subprocess.run(sys.argv[1:], stdin=sys.stdin, capture_output=True)\n"
    "peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss\n"
    "sys.stdout.write(f'{done.returncode}\\n{peak}\\n' + done.stderr.decode(errors='replace'))\n"
)


def _measured(store: Path, *args: str, stdin: Path | None = None) -> tuple[int, int, str]:
    """Exit code, peak RSS in MiB, and stderr of `lantern --db STORE ARGS...`."""
    with open(stdin or "/dev/null", "rb") as source:
        done = subprocess.run(
            [sys.executable, "-c", _MEASURE, str(LANTERN_BIN), "--db", str(store), *args],
            stdin=source,
            capture_output=True,
            text=True,
            check=True,
            timeout=600,
        )
    code, peak, stderr = done.stdout.split("\n", 2)
    return int(code), int(peak) // 1024, stderr


def _sparse_text_file(path: Path, size: int) -> Path:
    """A file of `size` bytes that starts as text: a hole after the first page costs no disk."""
    with open(path, "wb") as handle:
        handle.write(b"# A huge log\n\n" + b"line of a very long log\n" * 150)
        handle.truncate(size)
    return path


def _text_file(path: Path, size: int) -> Path:
    line = b"2026-11-30T09:00:00Z worker 7 finished step 12 of the nightly batch in 41 ms\n"
    with open(path, "wb") as handle:
        for _ in range(size // len(line)):
            handle.write(line)
    return path


def test_oversize_input_is_refused_or_taken_with_bounded_memory(
    tmp_path: Path, tier: Tier, figures: Figures
) -> None:
    store = tmp_path / "store.db"
    Lantern.open(store).close()
    big = _sparse_text_file(tmp_path / "huge.log", GIB)

    # A 1 GB file named on the command line: skipped unread, and said so with exit code 1.
    code, peak_file, stderr = _measured(store, "ingest", str(big))
    too_large = f"too large ({GIB} bytes; the limit is {MAX_FILE_BYTES} bytes)"
    assert code == 1, stderr
    assert f"skipped {big}: {too_large}" in stderr
    assert stderr.splitlines()[-1] == f"Error: {big} was not ingested: {too_large}"
    assert peak_file < 150, f"{peak_file} MiB to skip a file it never reads"

    # The same gigabyte on standard input: refused after reading at most the limit.
    code, peak_stdin, stderr = _measured(store, "ingest", "-", "--uri", "tool://huge", stdin=big)
    assert code == 1, stderr
    assert f"larger than the {MAX_FILE_BYTES}-byte limit" in stderr
    assert peak_stdin < 2 * MAX_FILE_BYTES // MIB + 100

    # A 10 MB memory content, on standard input and through the API.
    content = tmp_path / "content.txt"
    content.write_bytes(b"a memory that goes on " * (10 * MIB // 22))
    code, peak_memory, stderr = _measured(
        store, "memory", "add", "--kind", "fact", "-", stdin=content
    )
    assert code == 1 and "limit for memory content" in stderr, stderr
    assert peak_memory < 150
    with Lantern.open(store) as lt:
        with pytest.raises(InvalidInput, match=f"the limit is {MAX_CONTENT_CHARS}"):
            lt.memory.add(kind="fact", content=content.read_text())
        assert lt.memory.list(status="all") == []
        assert lt.evidence.list_sources() == []
    assert_healthy(str(store))

    # A text file that fits: taken whole, memory in proportion to it.
    size = 8 * MIB if tier.name == "quick" else MAX_FILE_BYTES
    fits = _text_file(tmp_path / "fits.log", size)
    code, peak_fits, stderr = _measured(store, "ingest", str(fits), "--json")
    assert code == 0, stderr
    with Lantern.open(store) as lt:
        (source,) = lt.evidence.list_sources()
        assert source.metadata["size"] == fits.stat().st_size
        assert source.chunk_count > 1
    assert_healthy(str(store))
    figures(
        f"1 GiB file: skipped unread as too large, peak RSS {peak_file} MiB; 1 GiB on stdin: "
        f"refused at the {MAX_FILE_BYTES // MIB} MiB limit, peak RSS {peak_stdin} MiB; 10 MB "
        f"memory content: refused (limit {MAX_CONTENT_CHARS} characters), peak RSS "
        f"{peak_memory} MiB; nothing written; a {size // MIB} MiB file: ingested whole "
        f"({source.chunk_count} chunks), peak RSS {peak_fits} MiB"
    )


def test_an_oversize_import_line_changes_nothing(tmp_path: Path) -> None:
    """An export whose memory line holds 10 MB of content fails on that line, all or nothing."""
    store = tmp_path / "store.db"
    lines = [{"type": "lantern_export", "format": 1}]
    with Lantern.open(tmp_path / "scratch.db") as scratch:
        for n in range(3):
            scratch.memory.add(kind="fact", content=f"small record {n}")
        export = tmp_path / "export.jsonl"
        with open(export, "wb") as out:
            scratch.export_jsonl(out)
    records = [json.loads(line) for line in export.read_text().splitlines()[1:]]
    huge = dict(records[0], id="mem_0000000000000001", content="x" * (10 * MIB))
    lines += [records[0], huge, *records[1:]]
    export.write_text("".join(json.dumps(line) + "\n" for line in lines))
    with Lantern.open(store) as lt:
        done = subprocess.run(
            [str(LANTERN_BIN), "--db", str(store), "import", str(export)],
            capture_output=True,
            text=True,
            check=False,
        )
        assert done.returncode == 1
        assert "line 3:" in done.stderr and "too long" in done.stderr, done.stderr
        assert lt.memory.list(status="all") == []
