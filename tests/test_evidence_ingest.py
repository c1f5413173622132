"""Ingest through the Python API, from real files in temporary directories, on every engine.

Every test checks stored chunks against the file they came from: a chunk is cited by offset, so
`text[start:end] == chunk.text` is the contract, whatever the kind.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
from collections.abc import Callable
from pathlib import Path

import pytest
from sqlalchemy import Connection, insert, select

from lantern.api import Lantern
from lantern.errors import InvalidInput
from lantern.evidence import documents
from lantern.evidence.records import IngestSummary, SkippedPath, Source
from lantern.store.models import chunks as chunks_table
from lantern.store.models import embeddings as embeddings_table
from tests.helpers import Clock
from tests.legacy_stores import chunk_id as legacy_chunk_id
from tests.legacy_stores import source_id as legacy_source_id

MTIME = 1_790_000_000


@pytest.fixture
def files(tmp_path: Path) -> Path:
    """The directory tests ingest (the store lives elsewhere under tmp_path)."""
    root = tmp_path / "files"
    root.mkdir()
    return root


def write(path: Path, text: str | bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text, encoding="utf-8", newline="")
    os.utime(path, (MTIME, MTIME))
    return path


def uri(path: Path) -> str:
    return f"file://{path}"


def source(lt: Lantern, path: Path) -> Source:
    return lt.evidence.get_source(uri(path))


def check_chunks(found: Source, text: str, target: int) -> None:
    """Offsets exact, legacy ids, ordered, trimmed, no word cut, sizes bounded."""
    assert found.chunks is not None
    assert found.chunk_count == len(found.chunks)
    previous_end = 0
    for chunk in found.chunks:
        assert chunk.start_offset is not None and chunk.end_offset is not None
        assert text[chunk.start_offset : chunk.end_offset] == chunk.text
        assert previous_end <= chunk.start_offset < chunk.end_offset
        previous_end = chunk.end_offset
        assert chunk.text == chunk.text.strip()
        assert chunk.id == legacy_chunk_id(found.id, chunk.ordinal, chunk.text)
        assert len(chunk.text) <= target or not any(c.isspace() for c in chunk.text)
        assert (
            chunk.start_offset == 0
            or text[chunk.start_offset - 1].isspace()
            or (found.kind == "transcript")
        )
    assert [c.ordinal for c in found.chunks] == sorted(c.ordinal for c in found.chunks)
    assert found.id == legacy_source_id(found.uri)


def skipped(summary: IngestSummary) -> list[SkippedPath]:
    return sorted(summary.skipped_paths, key=lambda item: item.path)


def words(count: int, stem: str = "word") -> str:
    return " ".join(f"{stem}{i}" for i in range(count))


MARKDOWN = (
    "# Field notes\n\nIntro paragraph about lanterns.\n\n"
    "## Setup\n\n" + words(40, "setup") + "\n\n"
    "## Usage\n\n" + words(40, "usage") + "\n\n```sh\nlantern ingest .\n```\n"
)
PYTHON = (
    "import os\n\n\n"
    "def first(x):\n    return x + 1\n\n\n"
    "class Second:\n    def method(self):\n        return " + words(30, "v") + "\n"
)
TRANSCRIPT = "".join(
    json.dumps({"role": role, "content": words(12, f"t{i}_"), "ts": 1_700_000_000 + i}) + "\n"
    for i, role in enumerate(["user", "assistant", "user", "assistant", "tool", "user"])
)
CHAT_EXPORT = json.dumps(
    {
        "title": "export",
        "messages": [
            {"role": "user", "content": "How do I rotate logs?", "ts": "2024-01-02T03:04:05Z"},
            {"role": "assistant", "content": "Use logrotate with a daily rule."},
        ],
    },
    indent=2,
)
LOG = "".join(f"2024-05-01 12:00:{i:02d} INFO worker {i} handled request\n" for i in range(40))
DOCUMENT = "\n\n".join(words(25, f"para{i}_") for i in range(6))


def test_every_kind_is_detected_chunked_and_described(
    lt: Lantern, files: Path, clock: Clock
) -> None:
    paths = {
        "markdown": write(files / "notes" / "field.md", MARKDOWN),
        "source_file": write(files / "src" / "app.py", PYTHON),
        "transcript": write(files / "chats" / "session.jsonl", TRANSCRIPT),
        "export": write(files / "chats" / "export.json", CHAT_EXPORT),
        "log": write(files / "logs" / "app.log.1", LOG),
        "document": write(files / "paper.txt", DOCUMENT),
    }
    target = 200
    summary = lt.evidence.ingest_path(files, target_size=target)
    assert (summary.added, summary.updated, summary.unchanged, summary.skipped) == (6, 0, 0, 0)
    assert summary.bytes == sum(p.stat().st_size for p in paths.values())
    texts = {name: path.read_text(encoding="utf-8") for name, path in paths.items()}
    found = {name: source(lt, path) for name, path in paths.items()}
    assert summary.chunks == sum(s.chunk_count for s in found.values())
    for name, item in found.items():
        check_chunks(item, texts[name], target)
        assert item.created_at == item.updated_at == clock.now
        assert item.content_hash == hashlib.sha256(texts[name].encode("utf-8")).hexdigest()
        file_facts = {"path": str(paths[name]), "size": paths[name].stat().st_size, "mtime": MTIME}
        assert file_facts.items() <= item.metadata.items()
    assert {name: item.kind for name, item in found.items()} == {
        "markdown": "markdown",
        "source_file": "source_file",
        "transcript": "transcript",
        "export": "transcript",
        "log": "log",
        "document": "document",
    }

    markdown = found["markdown"]
    assert markdown.title == "Field notes"
    assert markdown.chunks is not None and len(markdown.chunks) > 2
    heading_paths = [c.metadata["heading_path"] for c in markdown.chunks]
    assert ["Field notes", "Usage"] in heading_paths and ["Field notes", "Setup"] in heading_paths

    code = found["source_file"]
    assert code.title == "app.py" and code.metadata["language"] == "python"
    assert code.chunks is not None
    assert all(c.metadata["language"] == "python" for c in code.chunks)
    assert code.chunks[0].metadata["start_line"] == 1

    transcript = found["transcript"]
    assert dict(transcript.metadata) == {
        "path": str(paths["transcript"]),
        "size": paths["transcript"].stat().st_size,
        "mtime": MTIME,
        "roles": ["assistant", "tool", "user"],
        "turns": 6,
        "first_ts": 1_700_000_000,
        "last_ts": 1_700_000_005,
    }
    assert transcript.chunks is not None
    for chunk in transcript.chunks:  # whole turns only: every line is one JSON object
        assert all(json.loads(line)["role"] for line in chunk.text.splitlines())
    assert sum(c.metadata["turns"] for c in transcript.chunks) == 6

    export = found["export"]
    assert export.metadata["roles"] == ["assistant", "user"]
    assert export.metadata["first_ts"] == 1704164645 and export.metadata["last_ts"] == 1704164645

    log = found["log"]
    assert log.metadata["lines"] == 40
    assert log.chunks is not None and log.chunks[0].metadata["start_line"] == 1
    assert log.chunks[-1].metadata["end_line"] == 40

    document = found["document"]
    assert document.title == "paper.txt"
    assert document.chunks is not None and all(c.metadata == {} for c in document.chunks)


def test_ingest_text_for_tool_output_and_piped_transcripts(lt: Lantern, clock: Clock) -> None:
    result = lt.evidence.ingest_text(
        "tool://pytest/run-42",
        "collected 3 items\n\n3 passed in 0.12s\n",
        kind="tool_output",
        metadata={"command": "pytest -q", "exit_code": 0},
    )
    assert result.status == "added" and result.chunks_written == 1 and result.chunks_kept == 0
    assert result.bytes == len(b"collected 3 items\n\n3 passed in 0.12s\n")
    stored = lt.evidence.get_source("tool://pytest/run-42")
    assert stored == dataclasses.replace(result.source, chunks=stored.chunks)
    assert stored.kind == "tool_output" and stored.title is None
    assert dict(stored.metadata) == {"size": result.bytes, "command": "pytest -q", "exit_code": 0}
    # Kind detection: the URI's file name first, then the content.
    piped = lt.evidence.ingest_text("session:abc", TRANSCRIPT)
    assert piped.source.kind == "transcript" and piped.source.metadata["turns"] == 6
    assert lt.evidence.ingest_text("file:///tmp/notes.md", "# T\n\nbody").source.kind == "markdown"
    assert lt.evidence.ingest_text("file:///tmp/x.py", "x = 1").source.metadata == {
        "size": 5,
        "language": "python",
    }
    assert lt.evidence.ingest_text("tool://echo", "plain words").source.kind == "document"
    # The caller's metadata wins over what Lantern derives; a JSON text is accepted too.
    over = lt.evidence.ingest_text("tool://x", "y", metadata='{"size": "big"}')
    assert over.source.metadata["size"] == "big"
    empty = lt.evidence.ingest_text("tool://silent", "")
    assert empty.status == "added" and empty.source.chunk_count == 0


def test_reingest_unchanged_is_skipped_and_writes_nothing(
    lt: Lantern, files: Path, clock: Clock
) -> None:
    path = write(files / "a.md", MARKDOWN)
    lt.evidence.ingest_path(files, target_size=150)
    before = source(lt, path)
    clock.now += 100
    os.utime(path, (MTIME + 5, MTIME + 5))  # touched, not changed
    summary = lt.evidence.ingest_path(files, target_size=150)
    assert (summary.added, summary.updated, summary.unchanged, summary.chunks) == (0, 0, 1, 0)
    assert summary.sources[0].status == "unchanged"
    assert summary.sources[0].chunks_kept == before.chunk_count
    assert source(lt, path) == before


def test_same_text_under_another_kind_is_chunked_again(lt: Lantern) -> None:
    text = "# Notes\n\nline one\nline two\n"
    first = lt.evidence.ingest_text("doc:x", text, kind="markdown")
    again = lt.evidence.ingest_text("doc:x", text, kind="log")
    assert (first.status, again.status) == ("added", "updated")
    stored = lt.evidence.get_source("doc:x")
    assert stored.kind == "log" and stored.metadata["lines"] == 4
    assert stored.chunks is not None
    assert dict(stored.chunks[0].metadata) == {"start_line": 1, "end_line": 4}


def test_changed_source_keeps_the_ids_of_unchanged_chunks(
    lt: Lantern, files: Path, clock: Clock
) -> None:
    sections = [f"## Part {i}\n\n" + words(20, f"s{i}_") for i in range(6)]
    path = write(files / "doc.md", "\n\n".join(sections) + "\n")
    lt.evidence.ingest_path(files, target_size=200)
    before = source(lt, path)
    assert before.chunks is not None and len(before.chunks) == 6
    assert [c.ordinal for c in before.chunks] == [0, 1000, 2000, 3000, 4000, 5000]
    old = {c.ordinal: c for c in before.chunks}

    clock.now += 60
    sections[2] = "## Part 2\n\n" + words(20, "edited_")  # an edit inside one chunk
    del sections[4]  # and a removed chunk
    write(path, "\n\n".join(sections) + "\n")
    summary = lt.evidence.ingest_path(files, target_size=200)
    assert (summary.updated, summary.chunks) == (1, 1)
    assert summary.sources[0].chunks_kept == 4
    after = source(lt, path)
    assert after.chunks is not None
    check_chunks(after, path.read_text(encoding="utf-8"), 200)
    assert [c.ordinal for c in after.chunks] == [0, 1000, 2000, 3000, 5000]  # a gap at 4000
    for chunk in after.chunks:
        if chunk.ordinal == 2000:
            assert chunk.id != old[2000].id and chunk.created_at == clock.now
        else:
            assert chunk.id == old[chunk.ordinal].id
            assert chunk.created_at == old[chunk.ordinal].created_at
    assert after.created_at == before.created_at and after.updated_at == clock.now
    assert after.content_hash != before.content_hash

    # Appending keeps every id.
    sections.append("## Part 9\n\n" + words(10, "tail_"))
    write(path, "\n\n".join(sections) + "\n")
    lt.evidence.ingest_path(files, target_size=200)
    appended = source(lt, path)
    assert appended.chunks is not None
    assert [c.id for c in appended.chunks][:-1] == [c.id for c in after.chunks]
    assert appended.chunks[-1].ordinal == 6000

    # A chunk inserted before the first takes an ordinal below it: no other chunk changes its
    # id, and their offsets follow the text.
    sections.insert(0, "Preface line.")
    write(path, "\n\n".join(sections) + "\n")
    lt.evidence.ingest_path(files, target_size=200)
    shifted = source(lt, path)
    check_chunks(shifted, path.read_text(encoding="utf-8"), 200)
    assert shifted.chunks is not None
    assert [c.ordinal for c in shifted.chunks] == [-1000, 0, 1000, 2000, 3000, 5000, 6000]
    assert [c.id for c in shifted.chunks[1:]] == [c.id for c in appended.chunks]
    assert shifted.chunks[1].start_offset == len("Preface line.\n\n")


def test_kept_chunks_keep_their_embeddings_and_removed_ones_lose_them(
    lt: Lantern, files: Path
) -> None:
    path = write(files / "doc.txt", "\n\n".join(words(20, f"p{i}_") for i in range(3)))
    lt.evidence.ingest_path(files, target_size=150)
    first = source(lt, path)
    assert first.chunks is not None and len(first.chunks) == 3
    with lt.store.write() as conn:
        conn.execute(
            insert(embeddings_table),
            [
                {"chunk_id": c.id, "model": "m", "dim": 1, "vector": b"\0\0\0\0"}
                for c in first.chunks
            ],
        )
    write(path, "\n\n".join(words(20, f"p{i}_") for i in (0, 2)))
    lt.evidence.ingest_path(files, target_size=150)
    second = source(lt, path)
    assert second.chunks is not None
    assert [c.id for c in second.chunks] == [first.chunks[0].id, first.chunks[2].id]
    assert all(len(c.embeddings) == 1 for c in second.chunks)
    with lt.store.read() as conn:
        stored = set(conn.execute(select(embeddings_table.c.chunk_id)).scalars())
    assert stored == {c.id for c in second.chunks}


def test_a_failed_replace_changes_nothing(
    lt: Lantern, files: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = write(files / "doc.txt", "\n\n".join(words(20, f"p{i}_") for i in range(3)))
    lt.evidence.ingest_path(files, target_size=150)
    before = source(lt, path)
    original = documents.Writes.execute

    def fail_after_writing(self: documents.Writes, conn: Connection) -> None:
        original(self, conn)
        raise RuntimeError("disk unplugged")

    monkeypatch.setattr(documents.Writes, "execute", fail_after_writing)
    write(path, "completely different text")
    with pytest.raises(RuntimeError, match="disk unplugged"):
        lt.evidence.ingest_path(files, target_size=150)
    monkeypatch.undo()
    assert source(lt, path) == before
    with lt.store.read() as conn:
        assert len(conn.execute(select(chunks_table.c.id)).all()) == 3


def test_prune_removes_sources_whose_files_are_gone(lt: Lantern, files: Path) -> None:
    keep = write(files / "notes" / "keep.md", "kept")
    gone = write(files / "notes" / "sub" / "gone.md", "gone soon")
    sibling = write(files / "notes2" / "other.md", "a directory whose name extends notes")
    lt.evidence.ingest_path([files / "notes", files / "notes2"])
    lt.evidence.ingest_text("tool://x", "not a file")
    gone.unlink()
    assert lt.evidence.ingest_path(files / "notes").removed == 0  # only with prune
    assert source(lt, gone).chunk_count == 1
    summary = lt.evidence.ingest_path(files / "notes", prune=True)
    assert (summary.removed, summary.unchanged) == (1, 1)
    uris = [s.uri for s in lt.evidence.list_sources()]
    assert uris == sorted([uri(keep), uri(sibling), "tool://x"])


def test_include_and_exclude_patterns(lt: Lantern, files: Path) -> None:
    for name in ("a.md", "b.txt", "docs/c.md", "docs/deep/e.md", "drafts/d.md"):
        write(files / name, f"text of {name}")

    def ingested(**options: object) -> list[str]:
        for item in lt.evidence.list_sources():
            lt.evidence.remove_source(item.id)
        summary = lt.evidence.ingest_path(files, **options)  # type: ignore[arg-type]
        assert summary.skipped_paths == ()  # filtered out by the user, not skipped
        return sorted(s.uri.removeprefix(uri(files) + "/") for s in lt.evidence.list_sources())

    assert ingested(include=["*.md"]) == ["a.md", "docs/c.md", "docs/deep/e.md", "drafts/d.md"]
    assert ingested(include=["*.md"], exclude=["drafts/"]) == [
        "a.md",
        "docs/c.md",
        "docs/deep/e.md",
    ]
    assert ingested(include=["docs/*.md"]) == ["docs/c.md"]
    assert ingested(include=["docs/"]) == ["docs/c.md", "docs/deep/e.md"]
    assert ingested(exclude=["*.md", "deep"]) == ["b.txt"]


def test_gitignore_files_are_honoured_and_reported(lt: Lantern, tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    (repo / ".git" / "info").mkdir(parents=True)
    write(repo / ".git" / "info" / "exclude", "*.secret\n")
    write(repo / ".gitignore", "*.log\nbuild/\n")
    write(repo / "project" / ".gitignore", "*.tmp\n!keep.tmp\n")
    write(repo / "project" / "sub" / ".gitignore", "local.md\n")
    names = [
        "readme.md",
        "run.log",
        "scratch.tmp",
        "keep.tmp",
        "key.secret",
        "build/out.md",
        "sub/local.md",
        "sub/shared.md",
    ]
    for name in names:
        write(repo / "project" / name, f"content of {name}")
    summary = lt.evidence.ingest_path(repo / "project")
    project = repo / "project"
    taken = sorted(s.uri.removeprefix(uri(project) + "/") for s in lt.evidence.list_sources())
    assert taken == [".gitignore", "keep.tmp", "readme.md", "sub/.gitignore", "sub/shared.md"]
    assert skipped(summary) == [
        SkippedPath(str(project / name), "excluded by .gitignore")
        for name in ("build", "key.secret", "run.log", "scratch.tmp", "sub/local.md")
    ]
    # A file named explicitly is read whatever the ignore files say; an ignored directory
    # named explicitly is walked (only the ignore files inside it apply).
    assert lt.evidence.ingest_path(project / "run.log").added == 1
    assert lt.evidence.ingest_path(project / "build").added == 1


def test_binary_non_utf8_empty_and_bom_files(lt: Lantern, files: Path) -> None:
    write(files / "image.png", b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR")
    write(files / "late-nul.txt", b"a" * 20_000 + b"\x00")
    write(files / "latin1.txt", "café".encode("latin-1"))
    write(files / "empty.txt", "")
    bom = write(files / "bom.md", "\ufeff# Title\n\nbody text")
    summary = lt.evidence.ingest_path(files)
    assert skipped(summary) == [
        SkippedPath(str(files / "image.png"), "binary"),
        SkippedPath(str(files / "late-nul.txt"), "binary"),
        SkippedPath(str(files / "latin1.txt"), "not UTF-8 text"),
    ]
    assert summary.added == 2
    assert source(lt, files / "empty.txt").chunk_count == 0
    stored = source(lt, bom)
    check_chunks(stored, "# Title\n\nbody text", 1000)
    assert stored.title == "Title" and stored.metadata["size"] == bom.stat().st_size


def test_symlinks_are_never_followed_out_of_the_tree(lt: Lantern, tmp_path: Path) -> None:
    tree = tmp_path / "tree"
    outside = tmp_path / "outside"
    write(outside / "secret.md", "classified lighthouse coordinates")
    write(tree / "a.md", "inside text")
    (tree / "escape-dir").symlink_to(outside, target_is_directory=True)
    (tree / "escape-file.md").symlink_to(outside / "secret.md")
    (tree / "relative.md").symlink_to(Path("..") / "outside" / "secret.md")
    (tree / "inner.md").symlink_to(tree / "a.md")
    (tree / "broken.md").symlink_to(tree / "missing.md")
    summary = lt.evidence.ingest_path(tree)
    outside_reason = "symlink to outside the directory (not followed)"
    assert skipped(summary) == [
        SkippedPath(str(tree / "broken.md"), "broken symlink"),
        SkippedPath(str(tree / "escape-dir"), outside_reason),
        SkippedPath(str(tree / "escape-file.md"), outside_reason),
        SkippedPath(str(tree / "inner.md"), "symlink (not followed)"),
        SkippedPath(str(tree / "relative.md"), outside_reason),
    ]
    assert [s.uri for s in lt.evidence.list_sources()] == [uri(tree / "a.md")]
    assert lt.evidence.search("lighthouse") == []
    # A link named on the command line is the user's own choice, and is read.
    assert lt.evidence.ingest_path(tree / "escape-file.md").added == 1
    assert len(lt.evidence.search("lighthouse")) == 1


def test_version_control_dependencies_venvs_and_special_files_are_skipped(
    lt: Lantern, files: Path
) -> None:
    write(files / ".git" / "HEAD", "ref: refs/heads/main")
    write(files / "web" / "node_modules" / "left-pad" / "index.js", "module.exports = 1")
    write(files / "env" / "pyvenv.cfg", "home = /usr/bin")
    write(files / "env" / "lib" / "site.py", "x = 1")
    write(files / "conda" / "conda-meta" / "history", "x")
    write(files / "web" / "app.js", "export const app = 1")
    os.mkfifo(files / "pipe")
    summary = lt.evidence.ingest_path(files)
    assert skipped(summary) == [
        SkippedPath(str(files / ".git"), "version control directory"),
        SkippedPath(str(files / "conda"), "virtual environment"),
        SkippedPath(str(files / "env"), "virtual environment"),
        SkippedPath(str(files / "pipe"), "not a regular file"),
        SkippedPath(str(files / "web" / "node_modules"), "node_modules directory"),
    ]
    assert [s.uri for s in lt.evidence.list_sources()] == [uri(files / "web" / "app.js")]


def test_unreadable_files_are_skipped(
    lt: Lantern, files: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    locked = write(files / "locked.md", "no access")
    write(files / "open.md", "fine")
    real_open = os.open

    def refusing_open(path: str, flags: int, *args: int, **kwargs: int) -> int:
        # Permissions would do, but not for root, whom every file lets in. A walked file is
        # opened by name relative to its directory (dir_fd).
        if path == str(locked) or ("dir_fd" in kwargs and path == locked.name):
            raise PermissionError(13, "Permission denied", path)
        return real_open(path, flags, *args, **kwargs)

    monkeypatch.setattr(os, "open", refusing_open)
    summary = lt.evidence.ingest_path(files)
    assert summary.skipped_paths == (SkippedPath(str(locked), "unreadable: Permission denied"),)
    assert summary.added == 1


def test_a_file_reached_twice_is_ingested_once_and_kind_can_be_forced(
    lt: Lantern, files: Path
) -> None:
    a = write(files / "a.md", "# A\n\nbody")
    write(files / "b.py", "x = 1")
    summary = lt.evidence.ingest_path([a, files, a], kind="log", metadata={"batch": 7})
    assert summary.added == 2 and len(summary.sources) == 2
    for item in lt.evidence.list_sources():
        assert item.kind == "log" and item.metadata["batch"] == 7


def test_batches_and_progress(lt: Lantern, files: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("lantern.evidence.writes.BATCH_FILES", 2)
    for i in range(5):
        write(files / f"f{i}.txt", f"file number {i}")
    write(files / "z.bin", b"\x00")
    seen: list[tuple[int, int]] = []
    summary = lt.evidence.ingest_path(
        files, progress=lambda done, total: seen.append((done, total))
    )
    assert seen == [(n, 6) for n in range(1, 7)]
    assert summary.added == 5 and summary.skipped == 1
    assert len(lt.evidence.list_sources()) == 5


def test_summary_json_shape(lt: Lantern, files: Path) -> None:
    write(files / "a.txt", "alpha")
    write(files / "b.bin", b"\x00\x01")
    summary = lt.evidence.ingest_path(files)
    assert isinstance(summary, IngestSummary)
    rendered = summary.to_json()
    assert list(rendered) == [
        "added",
        "updated",
        "unchanged",
        "skipped",
        "removed",
        "chunks",
        "bytes",
        "seconds",
        "skipped_paths",
    ]
    assert {k: v for k, v in rendered.items() if k != "seconds"} == {
        "added": 1,
        "updated": 0,
        "unchanged": 0,
        "skipped": 1,
        "removed": 0,
        "chunks": 1,
        "bytes": 5,
        "skipped_paths": [{"path": str(files / "b.bin"), "reason": "binary", "named": False}],
    }
    named = lt.evidence.ingest_path(files / "b.bin").to_json()["skipped_paths"]
    assert named == [{"path": str(files / "b.bin"), "reason": "binary", "named": True}]
    assert isinstance(rendered["seconds"], float) and rendered["seconds"] >= 0


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda lt, root: lt.evidence.ingest_path(root / "missing"), "no such file or directory"),
        (lambda lt, root: lt.evidence.ingest_path([]), "at least one file or directory"),
        (lambda lt, root: lt.evidence.ingest_path(""), "must not be empty"),
        (lambda lt, root: lt.evidence.ingest_path(root, kind="Bad Kind"), "kind must be one of"),
        (lambda lt, root: lt.evidence.ingest_path(root, target_size=99), "target_size must be"),
        (lambda lt, root: lt.evidence.ingest_path(root, target_size=100_001), "target_size"),
        (lambda lt, root: lt.evidence.ingest_path(root, target_size=True), "target_size"),
        (lambda lt, root: lt.evidence.ingest_path(root, include=[""]), "include patterns"),
        (lambda lt, root: lt.evidence.ingest_path(root, metadata="{bad"), "not valid JSON"),
        (lambda lt, root: lt.evidence.ingest_path(root, metadata="[1]"), "must be a JSON object"),
        (
            lambda lt, root: lt.evidence.ingest_path(root, metadata={"x": float("nan")}),
            "not storable JSON",
        ),
        (lambda lt, root: lt.evidence.ingest_path(root, metadata={"x": "\x00"}), "NUL"),
        (lambda lt, root: lt.evidence.ingest_text("", "text"), "uri must not be empty"),
        (lambda lt, root: lt.evidence.ingest_text(" tool://x", "t"), "surrounding whitespace"),
        (lambda lt, root: lt.evidence.ingest_text("tool://x\n", "t"), "line breaks"),
        (lambda lt, root: lt.evidence.ingest_text("tool://x", "a\x00b"), "NUL"),
        (lambda lt, root: lt.evidence.ingest_text("tool://x", "\ud800"), "not valid UTF-8"),
        (lambda lt, root: lt.evidence.ingest_text("tool://x", b"bytes"), "text must be a str"),
        (lambda lt, root: lt.evidence.ingest_text("tool://x", "t", kind="log file"), "kind must"),
        (lambda lt, root: lt.evidence.ingest_text("tool://x", "t", title=""), "title must not"),
    ],
)
def test_bad_input_is_refused_and_changes_nothing(
    lt: Lantern, files: Path, call: Callable[[Lantern, Path], object], message: str
) -> None:
    write(files / "a.md", "some text")
    with pytest.raises(InvalidInput, match=message) as raised:
        call(lt, files)
    assert "\n" not in str(raised.value)
    assert lt.evidence.list_sources() == []


def test_files_over_the_size_limit_are_skipped_unread(
    lt: Lantern, files: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("lantern.evidence.files.MAX_FILE_BYTES", 100)
    monkeypatch.setattr("lantern.evidence.writes.MAX_FILE_BYTES", 100)
    big = write(files / "big.md", "x" * 200)
    write(files / "small.md", "fine")
    summary = lt.evidence.ingest_path(files)
    reason = "too large (200 bytes; the limit is 100 bytes)"
    assert summary.skipped_paths == (SkippedPath(str(big), reason),)
    named = SkippedPath(str(big), reason, named=True)
    assert lt.evidence.ingest_path(big).skipped_paths == (named,)
    with pytest.raises(InvalidInput, match="text is too large: 101 bytes, the limit is 100"):
        lt.evidence.ingest_text("tool://big", "y" * 101)
