"""Re-ingesting a source that grew or changed: which chunks keep their ids, on every engine.

Memory records cite chunks by id, so every id a re-ingest changes is a reference that may
dangle. The figures below are measured here, on each engine, and asserted: appends keep every
id, and insertions anywhere keep the id of every chunk whose text did not change.
"""

from __future__ import annotations

import json
from collections.abc import Callable

import pytest

from lantern.api import Lantern
from lantern.evidence.records import Chunk


def words(count: int, stem: str) -> str:
    return " ".join(f"{stem}{i}" for i in range(count))


def chunks_of(lt: Lantern, uri: str) -> list[Chunk]:
    found = lt.evidence.get_source(uri).chunks
    assert found is not None
    return list(found)


def check_slices(lt: Lantern, uri: str, text: str) -> None:
    """Every chunk is its slice of the text, in order, and starts at a word."""
    previous = 0
    for chunk in chunks_of(lt, uri):
        assert chunk.start_offset is not None and chunk.end_offset is not None
        assert text[chunk.start_offset : chunk.end_offset] == chunk.text
        assert previous <= chunk.start_offset
        assert chunk.start_offset == 0 or text[chunk.start_offset - 1].isspace()
        previous = chunk.end_offset


def reingest(lt: Lantern, uri: str, old: str, new: str, kind: str) -> tuple[int, int, int]:
    """Ingest `old`, then `new`: (chunks before, ids kept, chunks whose text is unchanged)."""
    lt.evidence.ingest_text(uri, old, kind=kind)
    before = {c.id: c.text for c in chunks_of(lt, uri)}
    lt.evidence.ingest_text(uri, new, kind=kind)
    check_slices(lt, uri, new)
    after = {c.id: c.text for c in chunks_of(lt, uri)}
    return (
        len(before),
        len(before.keys() & after.keys()),
        len(set(before.values()) & set(after.values())),
    )


SECTIONS = [f"## Section {n}\n\n" + words(60 + n % 7 * 10, f"s{n}w") for n in range(240)]
INSERTED = "## Inserted\n\n" + words(80, "new")


def _markdown(position: int) -> tuple[str, str]:
    changed = [*SECTIONS[:position], INSERTED, *SECTIONS[position:]]
    return "\n\n".join(SECTIONS) + "\n", "\n\n".join(changed) + "\n"


def _turn(n: int) -> str:
    role = "user" if n % 2 else "assistant"
    return json.dumps({"role": role, "content": words(10 + n % 9 * 8, f"t{n}w"), "ts": n}) + "\n"


def _transcript() -> tuple[str, str]:
    old = "".join(_turn(n) for n in range(200))
    return old, old + json.dumps({"role": "user", "content": "Thanks."}) + "\n"


def _log(insert_at: int | None) -> tuple[str, str]:
    lines = [
        f"2026-01-01T00:{n // 60:02d}:{n % 60:02d} INFO {words(5 + n % 11, 'w')}\n"
        for n in range(3000)
    ]
    changed = list(lines)
    if insert_at is None:
        changed += ["2026-01-02T00:00:00 WARN disk almost full\n"] * 5
    else:
        changed.insert(insert_at, "2026-01-01T12:00:00 ERROR inserted line\n")
    return "".join(lines), "".join(changed)


# Each case keeps every id: 240 of 240 markdown chunks, whichever place a section is inserted
# at (before ordinals were spaced out: 0 at the top, 3 when 3rd, 120 in the middle), and all of a
# transcript's or a log's chunks when it grows (before: all but the last, which grew).
CASES: dict[str, tuple[str, Callable[[], tuple[str, str]]]] = {
    "markdown, a section inserted at the top": ("markdown", lambda: _markdown(0)),
    "markdown, a section inserted 3rd": ("markdown", lambda: _markdown(3)),
    "markdown, a section inserted in the middle": ("markdown", lambda: _markdown(120)),
    "markdown, a section appended": ("markdown", lambda: _markdown(240)),
    "transcript, one turn appended": ("transcript", _transcript),
    "log, five lines appended": ("log", lambda: _log(None)),
}


@pytest.mark.parametrize("case", CASES)
def test_appends_and_insertions_keep_every_id(
    lt: Lantern, record_property: Callable[[str, object], None], case: str
) -> None:
    kind, texts = CASES[case]
    old, new = texts()
    count, kept, unchanged = reingest(lt, "doc:measured", old, new, kind)
    record_property("ids_kept", f"{kept} of {count}")
    assert (kept, unchanged) == (count, count), f"{case}: {kept} of {count} ids kept"
    if kind == "markdown":
        assert count == 240


def test_an_insertion_into_a_log_keeps_every_id_the_chunker_allows(lt: Lantern) -> None:
    """Lines are packed into chunks greedily from the start, so from an inserted line on the
    chunks are packed anew and their texts change; every chunk whose text did not keeps its id."""
    old, new = _log(1500)
    lt.evidence.ingest_text("log:inserted", old, kind="log")
    inserted_at = new.index("ERROR inserted line")
    before_it = [c for c in chunks_of(lt, "log:inserted") if (c.end_offset or 0) < inserted_at]
    count, kept, unchanged = reingest(lt, "log:inserted", old, new, "log")
    assert kept == unchanged and kept >= len(before_it) > count // 3


def test_a_grown_transcript_keeps_every_chunk_as_it_was(lt: Lantern) -> None:
    old = "".join(_turn(n) for n in range(30))
    lt.evidence.ingest_text("chat:live", old, kind="transcript")
    before = chunks_of(lt, "chat:live")
    last = before[-1]
    record = lt.memory.add(
        kind="fact", content="cites the live end", source_refs=[f"chunk:{last.id}"]
    )
    grown = old
    for n in range(30, 36):  # a turn at a time, re-ingested after each
        grown += _turn(n)
        result = lt.evidence.ingest_text("chat:live", grown, kind="transcript")
        assert (result.status, result.chunks_kept) == (
            "updated",
            len(chunks_of(lt, "chat:live")) - 1,
        )
    after = chunks_of(lt, "chat:live")
    assert after[: len(before)] == before  # id, ordinal, text, offsets, metadata, time
    assert [c.ordinal for c in after[len(before) :]] == [
        last.ordinal + 1000 * n for n in range(1, 7)
    ]
    assert [c.text for c in after[len(before) :]] == [_turn(n).strip() for n in range(30, 36)]
    assert after[-1].metadata["turns"] == 1 and after[-1].metadata["first_ts"] == 35
    assert lt.memory.check_refs() == [] and lt.memory.get(record.id).source_refs[0]["id"] == last.id
    check_slices(lt, "chat:live", grown)


def test_appended_text_keeps_its_context(lt: Lantern) -> None:
    old = "# Guide\n\n## Install\n\n" + words(20, "i") + "\n"
    lt.evidence.ingest_text("md:grown", old, kind="markdown")
    before = chunks_of(lt, "md:grown")
    new = old + "\nOne more paragraph for the install section.\n"
    lt.evidence.ingest_text("md:grown", new, kind="markdown")
    after = chunks_of(lt, "md:grown")
    assert after[:-1] == before
    assert after[-1].text == "One more paragraph for the install section."
    assert after[-1].metadata["heading_path"] == ["Guide", "Install"]
    assert lt.evidence.get_source("md:grown").title == "Guide"


def test_a_word_that_goes_on_is_chunked_again_with_what_follows(lt: Lantern) -> None:
    old = "\n\n".join(words(30, f"p{n}w") for n in range(4))  # no newline at the end
    lt.evidence.ingest_text("doc:word", old, kind="document", target_size=200)
    before = chunks_of(lt, "doc:word")
    new = old + "tail and more words after it\n"  # the last word goes on
    lt.evidence.ingest_text("doc:word", new, kind="document", target_size=200)
    after = chunks_of(lt, "doc:word")
    check_slices(lt, "doc:word", new)
    assert after[: len(before) - 1] == before[:-1]
    assert before[-1].id not in {c.id for c in after}
    assert after[len(before) - 1].start_offset == before[-1].start_offset
    assert new[after[-1].start_offset :].strip().endswith("after it")


def test_a_source_that_did_not_grow_is_chunked_and_matched_as_before(lt: Lantern) -> None:
    old = "\n\n".join(words(30, f"p{n}w") for n in range(4)) + "\n"
    lt.evidence.ingest_text("doc:edit", old, kind="document", target_size=200)
    before = chunks_of(lt, "doc:edit")
    new = old.replace("p0w0", "edited") + "\n" + words(10, "tail") + "\n"
    lt.evidence.ingest_text("doc:edit", new, kind="document", target_size=200)
    after = chunks_of(lt, "doc:edit")
    assert [c.id for c in after[1 : len(before)]] == [c.id for c in before[1:]]
    assert after[0].id != before[0].id and after[0].ordinal == before[0].ordinal
    # The same text under another kind is chunked again from the start.
    lt.evidence.ingest_text("doc:edit", new + "more\n", kind="log")
    assert all(c.metadata.get("start_line") for c in chunks_of(lt, "doc:edit"))
