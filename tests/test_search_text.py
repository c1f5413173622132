"""What a chunk is searched by: the decoded turns of a transcript chunk, on every engine, kept
with the chunks by ingest, removal, re-ingest, import, `db rebuild-index` and older tools."""

from __future__ import annotations

import json
import re
import sqlite3
from io import BytesIO
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lantern.api import Lantern
from lantern.evidence import searchtext
from lantern.evidence.chunking import chunk_source
from lantern.evidence.searchtext import search_text, transcript_search_text
from lantern.evidence.sourcekinds import parse_transcript
from tests.helpers import REPO_ROOT
from tests.memory_helpers import sql

RECALL_TRANSCRIPTS = sorted((REPO_ROOT / "bench" / "recall" / "data" / "transcripts").iterdir())
_WORD = re.compile(r"[^\W_]+")


def _words(text: str) -> set[str]:
    return set(_WORD.findall(text.casefold()))


# --- the decoder -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("chunk", "decoded"),
    [
        (
            '{"role": "user", "content": "Z\\u00fcrich,\\ncaf\\u00e9 \\"x\\"", "ts": 17}\n'
            '{"role": "assistant", "content": "ok"}',
            'user: Zürich,\ncafé "x"\nassistant: ok',
        ),
        # A messages document's elements, indented, with other keys.
        (
            '{\n  "role": "user",\n  "content": "hi",\n  "id": "m-1"\n},\n'
            '{\n  "role": "tool",\n  "content": "exit 137"\n}',
            "user: hi\ntool: exit 137",
        ),
        # A turn cut at whitespace: its start, its middle, its end.
        ('{"role": "user", "content": "the start of', "user: the start of"),
        ("the middle \\u00e9 of it", "the middle é of it"),
        ('its end.", "ts": "2024-01-09T19:12:00Z"}\n{"role": "user", "content": "next"}',
         "its end.\nuser: next"),
        ('"content": "after its role", "ts": 1}', "after its role"),
        # Content given as blocks, and metadata beside it: a block without text is its type.
        ('{"role": "user", "content": [{"type": "text", "text": "hello"}, '
         '{"type": "image_url", "image_url": {"url": "https://x.test/a"}}], "meta": {"a": "b"}}',
         "user: hello [image_url]"),
        # Escapes JSON does not know, and unpaired surrogates, still give storable text.
        ('{"role": "user", "content": "a \\q b \\ud800 c \\ud83d\\ude00"}',
         "user: a \\q b \ufffd c \U0001f600"),
    ],
)  # fmt: skip
def test_transcript_chunks_decode_to_their_turns(chunk: str, decoded: str) -> None:
    assert transcript_search_text(chunk) == decoded
    assert search_text("transcript", chunk) == decoded


@pytest.mark.parametrize(
    "chunk",
    [
        "Meeting notes 0: the Lantern evidence store keeps every chunk it saw.",  # plain text
        "a plain middle with no escapes at all",
    ],
)
def test_text_that_decodes_to_itself_needs_no_search_text(chunk: str) -> None:
    assert search_text("transcript", chunk) is None


def test_text_that_is_not_json_is_searched_as_it_is() -> None:
    for chunk in ('She said "quoted" twice.', "line one\nline two", '{"a": 1} trailing words'):
        assert transcript_search_text(chunk) is None
        assert search_text("transcript", chunk) is None


def test_only_transcripts_have_a_search_text() -> None:
    chunk = '{"role": "user", "content": "caf\\u00e9"}'
    assert search_text("transcript", chunk) == "user: café"
    for kind in ("markdown", "log", "document", "source_file", "tool_output", "email", None):
        assert search_text(kind, chunk) is None


@pytest.mark.parametrize("size", [100, 160, 400, 1000])
def test_chunking_a_transcript_loses_no_word_and_indexes_no_key(size: int) -> None:
    """Every word of every turn is in the searchable text of some chunk, however the turns are
    cut, and no key is. Besides the roles, only a value a chunk starts with may be added (its
    key in the chunk before, it is taken for content): at most a time here."""
    for path in RECALL_TRANSCRIPTS:
        text = path.read_text(encoding="utf-8")
        turns = parse_transcript(text)
        assert turns is not None, path
        said = set().union(*(_words(turn.content) for turn in turns))
        roles = {turn.role for turn in turns}
        objects = [json.loads(text[turn.start : turn.end]) for turn in turns]
        keys = set().union(*(_words(" ".join(item)) for item in objects))
        values = set().union(*(_words(str(value)) for item in objects for value in item.values()))
        searched: set[str] = set()
        for span in chunk_source(text, "transcript", target_size=size):
            found = search_text("transcript", span.text)
            searched |= _words(span.text if found is None else found)
        assert said <= searched, (path.name, sorted(said - searched)[:10])
        assert searched <= said | roles | values, (path.name, sorted(searched - said - values))
        assert not searched & (keys - said - values), path.name


TURN = st.fixed_dictionaries(
    {"role": st.sampled_from(["user", "assistant", "tool"]), "content": st.text(max_size=40)},
    optional={
        "ts": st.one_of(st.integers(), st.text(max_size=10)),
        "meta": st.dictionaries(st.sampled_from(["content", "id"]), st.text(max_size=5)),
    },
)


@settings(max_examples=300, deadline=None, database=None)
@given(
    turns=st.lists(TURN, min_size=1, max_size=4),
    ascii_only=st.booleans(),
    lines=st.booleans(),
)
def test_whole_turns_decode_as_the_scan_decodes_them(
    turns: list[dict[str, object]], ascii_only: bool, lines: bool
) -> None:
    """Chunks of whole turns take a faster path (json.loads); it must give the scan's text."""
    if lines:
        chunk = "\n".join(json.dumps(turn, ensure_ascii=ascii_only) for turn in turns)
    else:
        chunk = ",\n".join(json.dumps(turn, ensure_ascii=ascii_only, indent=2) for turn in turns)
    assert searchtext._whole_turns(chunk) == searchtext._decode(chunk, starts_inside=False)


@settings(max_examples=500, deadline=None, database=None)
@given(
    st.lists(
        st.one_of(
            st.text(max_size=10),
            st.sampled_from(['"', "\\", "\\u", "\\ud800", ":", "{", "}", "[", "]", ",", "\n"]),
            st.sampled_from(['"role"', '"content"', '"user"', "true", "-1.5e3"]),
        ),
        max_size=30,
    ).map("".join)
)
def test_any_text_decodes_without_error_to_storable_text(chunk: str) -> None:
    found = search_text("transcript", chunk)
    if found is not None:
        found.encode("utf-8")


# --- in a store --------------------------------------------------------------------------------

ESCAPED = "\n".join(
    json.dumps(turn)  # ensure_ascii=True, as Python writes JSON by default
    for turn in [
        {"role": "user", "content": "We met at the café near Zürich.\nThen we walked home."},
        {"role": "assistant", "content": "Noted — the café."},
    ]
)


def _ids(lt: Lantern, query: str) -> list[str]:
    return [hit.chunk_id for hit in lt.evidence.search(query, mode="keyword")]


def test_a_transcript_is_found_by_what_it_says(lt: Lantern) -> None:
    result = lt.evidence.ingest_text("session:zurich", ESCAPED, kind="transcript")
    lt.evidence.ingest_text("notes:roles", "The role of the content editor.", kind="markdown")
    [chunk] = lt.evidence.get_source("session:zurich").chunks or ()
    assert chunk.text == ESCAPED[chunk.start_offset : chunk.end_offset]  # still the exact slice
    assert _ids(lt, "Zürich") == [chunk.id]
    assert _ids(lt, "walked home") == [chunk.id]
    assert _ids(lt, "u00fcrich") == [] and _ids(lt, "nthen") == []
    assert _ids(lt, "then") == [chunk.id]
    # Keys are not words of the transcript: only the markdown note holds "role" and "content".
    assert lt.evidence.search("role content", mode="keyword")[0].uri == "notes:roles"
    assert len(lt.evidence.search("role")) == 1
    [hit] = lt.evidence.search("café", kind="transcript")
    assert hit.snippet.startswith("user: We met at the «café» near Zürich.")
    assert result.source.kind == "transcript"
    assert lt.check().healthy


def test_a_long_turn_cut_across_chunks_is_found_in_each_part(lt: Lantern) -> None:
    words = " ".join(f"word{n}" for n in range(120))
    turns = [{"role": "user", "content": f"Caf\u00e9 first. {words} last\u2014done."}]
    text = json.dumps({"messages": turns, "title": "one long turn"}, indent=2)
    lt.evidence.ingest_text("chat.json", text, kind="transcript", target_size=100)
    chunks = lt.evidence.get_source("chat.json").chunks or ()
    assert len(chunks) > 5
    [first] = [chunk.id for chunk in chunks if "Caf\\u00e9" in chunk.text]
    [last] = [chunk.id for chunk in chunks if "\\u2014done" in chunk.text]
    assert _ids(lt, "café") == [first] and _ids(lt, "done") == [last]
    assert len(_ids(lt, "word60")) == 1
    assert _ids(lt, "messages") == [] and _ids(lt, "title") == []
    assert lt.check().healthy


def test_search_texts_follow_their_chunks(lt: Lantern) -> None:
    lt.evidence.ingest_text("session:a", ESCAPED, kind="transcript")
    assert _rows(lt) == 1
    # The same text stored again as another kind: the chunk stays, its search text goes.
    lt.evidence.ingest_text("session:a", ESCAPED, kind="log")
    assert _rows(lt) == 0 and _ids(lt, "café") == [] and len(_ids(lt, "u00e9")) == 1
    assert lt.check().healthy
    lt.evidence.ingest_text("session:a", ESCAPED, kind="transcript")
    assert _rows(lt) == 1 and len(_ids(lt, "café")) == 1 and _ids(lt, "u00e9") == []
    assert lt.check().healthy
    # Changed text: the old chunk and its row go, the new ones come.
    lt.evidence.ingest_text("session:a", ESCAPED.replace("Z\\u00fcrich", "Basel"))
    assert _rows(lt) == 1 and _ids(lt, "zürich") == [] and len(_ids(lt, "basel")) == 1
    lt.evidence.remove_source("session:a")
    assert _rows(lt) == 0 and _ids(lt, "café") == []
    assert lt.check().healthy


def _rows(lt: Lantern) -> int:
    return int(sql(lt, "SELECT count(*) FROM chunk_search_text")[0][0])


def test_export_leaves_search_texts_out_and_import_derives_them(
    lt: Lantern, tmp_path: Path
) -> None:
    lt.evidence.ingest_text("session:a", ESCAPED, kind="transcript")
    exported = BytesIO()
    lt.export_jsonl(exported)
    lines = [json.loads(line) for line in exported.getvalue().splitlines()]
    assert {line["type"] for line in lines} == {"lantern_export", "source", "chunk", "entity_scan"}
    assert [line["text"] for line in lines if line["type"] == "chunk"] == [ESCAPED]
    with Lantern.open(tmp_path / "imported.db") as other:
        other.import_jsonl(BytesIO(exported.getvalue()))
        assert len(_ids(other, "café")) == 1 and _ids(other, "u00e9") == []
        assert _rows(other) == 1 and other.check().healthy


def test_rebuild_index_derives_the_search_texts_again(lt: Lantern) -> None:
    lt.evidence.ingest_text("session:a", ESCAPED, kind="transcript")
    lt.evidence.ingest_text("notes:a", "plain notes about a café", kind="markdown")
    [chunk] = lt.evidence.get_source("session:a").chunks or ()
    sql(lt, "UPDATE chunk_search_text SET text = 'something else'")
    sql(lt, "INSERT INTO chunk_search_text (chunk_id, text) VALUES (:id, 'x')", id=_note(lt))
    problems = lt.check().problems
    assert f"chunk_index: chunk {chunk.id} has a searchable text that its text does not give" in (
        problems
    )
    assert f"chunk_index: chunk {_note(lt)} has a searchable text row but needs none" in problems
    report = lt.rebuild_index()
    assert report.search_texts == 1
    assert lt.check().healthy and len(_ids(lt, "café")) == 2


def _note(lt: Lantern) -> str:
    [chunk] = lt.evidence.get_source("notes:a").chunks or ()
    return chunk.id


def test_older_tools_that_write_plain_chunks_keep_the_index_consistent(db_path: Path) -> None:
    """The triggers index what a chunk is searched by, whoever inserts, updates or deletes it:
    FTS5's own check passes; the missing search text is reported, and rebuild-index adds it."""
    with Lantern.open(db_path) as lt:
        lt.evidence.ingest_text("session:a", ESCAPED, kind="transcript")
        source = lt.evidence.get_source("session:a")
    [chunk] = source.chunks or ()
    conn = sqlite3.connect(db_path)
    with conn:
        conn.execute(
            "INSERT INTO chunks (id, source_id, ordinal, text, created_at) "
            "VALUES ('chk_by_old_tool', ?, 1, ?, 0)",
            (source.id, json.dumps({"role": "user", "content": "Gr\u00fc\u00dfe aus Bern"})),
        )
        conn.execute("UPDATE chunks SET metadata = '{}' WHERE id = ?", (chunk.id,))
    conn.close()
    with Lantern.open(db_path) as lt:
        assert _ids(lt, "café") == [chunk.id]  # the update kept its searchable text
        assert lt.check().problems == [
            "chunk_index: chunk chk_by_old_tool has no searchable text row"
        ]
        assert _ids(lt, "u00fc") == ["chk_by_old_tool"]
        lt.rebuild_index()
        assert lt.check().healthy
        assert _ids(lt, "grüße") == ["chk_by_old_tool"] and _ids(lt, "u00fc") == []
    conn = sqlite3.connect(db_path)
    with conn:
        conn.execute("UPDATE chunks SET text = 'replaced by hand' WHERE id = ?", (chunk.id,))
        conn.execute("DELETE FROM chunks WHERE id = 'chk_by_old_tool'")
    conn.close()
    with Lantern.open(db_path) as lt:
        assert _ids(lt, "café") == [] and _ids(lt, "replaced") == [chunk.id]
        assert _rows(lt) == 0 and lt.check().healthy


def test_check_finds_the_generation_1_index_and_triggers(db_path: Path) -> None:
    """An older tool that puts back the legacy chunk trigger, or drops the view, is reported."""
    with Lantern.open(db_path) as lt:
        lt.evidence.ingest_text("session:a", ESCAPED, kind="transcript")
    conn = sqlite3.connect(db_path)
    with conn:
        conn.executescript(
            """
            DROP TRIGGER chunks_ai;
            CREATE TRIGGER chunks_ai AFTER INSERT ON chunks BEGIN
                INSERT INTO chunks_fts(rowid, text) VALUES (new.rowid, new.text);
            END;
            """
        )
    conn.close()
    with Lantern.open(db_path) as lt:
        assert lt.check().problems == [
            "schema: trigger chunks_ai indexes chunk text, not its searchable text"
        ]
