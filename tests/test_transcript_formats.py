"""Chat exports read as transcripts, and transcript chunks searched only by what people wrote.

The formats: JSON Lines of turns, `{"messages": [...]}`, a bare array of turns, content given
as a list of typed blocks (the chat APIs' messages), and a ChatGPT export's conversations.json
(tests/data/transcripts holds one file of each of the last three, in the real shapes). A turn
longer than a chunk is cut only inside its words, so no chunk is searched by bare JSON (a
turn's `ts`, say).
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lantern.api import Lantern
from lantern.evidence.chunking import MIN_TARGET_SIZE, chunk_source
from lantern.evidence.searchtext import search_text, text_spans
from lantern.evidence.sourcekinds import detect_kind, parse_transcript
from tests.helpers import REPO_ROOT, CliRun

DATA = REPO_ROOT / "tests" / "data" / "transcripts"
_WORD = re.compile(r"[^\W_]+")
_TIMESTAMP = re.compile(r"[\d\s\-:.TZ+]*")


def _words(text: str) -> set[str]:
    return set(_WORD.findall(text.casefold()))


# (file, words it says, keys and values of its JSON that nobody wrote, turns)
FORMATS = [
    ("openai-chat.json", "quiet neighbourhood Ourique", "detail https example", 3),
    ("anthropic-messages.jsonl", "kestrel nest camera", "toolu_01A tool_use_id input", 4),
    ("conversations.json", "Dolomites fleece moka vinegar", "mapping author moderation slug", 7),
]


@pytest.mark.parametrize(("name", "said", "unsaid", "turns"), FORMATS)
def test_chat_exports_are_transcripts(name: str, said: str, unsaid: str, turns: int) -> None:
    text = (DATA / name).read_text(encoding="utf-8")
    assert detect_kind(name, text) == "transcript"
    assert detect_kind("renamed.json" if name.endswith(".json") else "x.jsonl", text) == (
        "transcript"
    )
    assert detect_kind(None, text) == "transcript"  # by structure, not by name
    found = parse_transcript(text)
    assert found is not None and len(found) == turns


def test_chatgpt_export_turns_have_roles_words_and_times() -> None:
    found = parse_transcript((DATA / "conversations.json").read_text(encoding="utf-8"))
    assert found is not None
    assert [(turn.role, turn.conversation) for turn in found][:3] == [
        ("system", 0),
        ("user", 0),
        ("assistant", 0),
    ]
    assert found[1].content.startswith("What should I pack") and found[1].ts == 1719300000
    assert found[3].content == "[image_asset_pointer] Is this tent good enough?"
    assert found[-1].conversation == 1 and found[-1].ts == 1720000005


def test_blocks_give_their_text_and_other_blocks_their_type() -> None:
    """A tool's result is what the tool said (its `content`); a tool call is only named."""
    found = parse_transcript((DATA / "anthropic-messages.jsonl").read_text(encoding="utf-8"))
    assert found is not None
    assert [turn.content for turn in found][1:3] == [
        "I'll read the report first. [tool_use]",
        "Nest box 4 camera offline since Tuesday.",
    ]


@pytest.mark.parametrize(("name", "said", "unsaid", "turns"), FORMATS)
@pytest.mark.parametrize("size", [100, 200, 1000])
def test_chat_exports_are_searched_by_their_words(
    lt: Lantern, tmp_path: Path, name: str, said: str, unsaid: str, turns: int, size: int
) -> None:
    path = tmp_path / name
    shutil.copy(DATA / name, path)
    [result] = lt.evidence.ingest_path(path, target_size=size).sources
    assert result.source.kind == "transcript"
    for word in said.split():
        hits = lt.evidence.search(word, mode="keyword")
        assert hits, word
        assert all('{"' not in hit.snippet and '": ' not in hit.snippet for hit in hits)
        assert any(f"«{word.casefold()}»" in hit.snippet.casefold() for hit in hits)
    for word in unsaid.split():
        assert lt.evidence.search(word, mode="keyword") == [], word
    assert lt.check().healthy


def test_chatgpt_chunks_hold_one_conversation(lt: Lantern, tmp_path: Path) -> None:
    path = tmp_path / "conversations.json"
    shutil.copy(DATA / "conversations.json", path)
    lt.evidence.ingest_path(path)
    chunks = lt.evidence.get_source(f"file://{path}").chunks or ()
    assert len(chunks) > 2
    assert not any(
        chunk.metadata["first_ts"] < 1720000000 <= chunk.metadata["last_ts"] for chunk in chunks
    )
    [hit] = lt.evidence.search("moka", mode="keyword")
    assert hit.snippet.startswith("user: How do I descale a «moka» pot?\nassistant: Fill")


# --- cut only inside words ---------------------------------------------------------------------


def test_a_turn_just_over_the_chunk_size_leaves_no_chunk_of_json(run_cli: CliRun) -> None:
    """The time of a turn is not searched: no chunk may hold it alone."""
    turn = {"role": "user", "content": "word " * 37 + "end", "ts": "2023-05-30T17:27:00Z"}
    text = json.dumps(turn) + "\n" + json.dumps({"role": "assistant", "content": "ok"}) + "\n"
    result = run_cli(
        "ingest", "-", "--uri", "chat:ts", "--kind", "transcript", "--chunk-size", "200",
        input=text,
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    found = run_cli("search", "2023", "--mode", "keyword", "--json")
    assert found.exit_code == 0 and json.loads(found.output) == []
    found = run_cli("search", "end", "--mode", "keyword", "--json")
    [hit] = json.loads(found.output)
    assert "2023" not in hit["snippet"] and hit["snippet"].endswith("«end»")


def _turn(draw: st.DrawFn, shape: str) -> dict[str, object]:
    words = st.lists(
        st.one_of(
            st.sampled_from(["word", "café", "[1, 2]", '"quoted"', "a\nb", "42", "{}", "null"]),
            st.text(st.characters(exclude_categories=["Cs"]), min_size=1, max_size=12),
        ),
        max_size=60,
    )
    content = " ".join(draw(words))
    role = draw(st.sampled_from(["user", "assistant", "tool"]))
    stamps: list[str | float] = ["2023-05-30T17:27:00Z", 1685467620, 1685467620.5]
    stamp = draw(st.sampled_from(stamps))
    if shape == "chatgpt":
        parts: list[object] = [content]
        if draw(st.booleans()):
            parts.insert(0, {"content_type": "image_asset_pointer", "asset_pointer": "file-x"})
        if draw(st.booleans()):
            parts.append(" ".join(draw(words)))
        message: dict[str, object] = {
            "id": "m",
            "author": {"role": role, "name": None, "metadata": {}},
            "create_time": float(stamp) if not isinstance(stamp, str) else None,
            "content": {"content_type": "text", "parts": parts},
            "metadata": {"model_slug": "gpt-4o"},
        }
        return {"id": "n", "message": message, "parent": None, "children": []}
    if shape == "blocks":
        blocks: list[object] = [{"type": "text", "text": content}]
        if draw(st.booleans()):
            blocks.append({"type": "image", "source": {"type": "base64", "data": "iVBORw0K"}})
            blocks.append({"type": "text", "text": " ".join(draw(words))})
        return {"role": role, "content": blocks, "ts": stamp}
    return {"role": role, "content": content, "ts": stamp}


@st.composite
def transcripts(draw: st.DrawFn) -> str:
    shape = draw(st.sampled_from(["lines", "messages", "array", "blocks", "chatgpt"]))
    turns = [_turn(draw, shape) for _ in range(draw(st.integers(1, 6)))]
    ascii_only = draw(st.booleans())
    indent = draw(st.sampled_from([None, 2]))
    if shape in ("lines", "blocks") and draw(st.booleans()):
        return "".join(json.dumps(turn, ensure_ascii=ascii_only) + "\n" for turn in turns)
    if shape == "messages":
        return json.dumps({"messages": turns}, ensure_ascii=ascii_only, indent=indent)
    if shape == "chatgpt":
        mapping = {f"node-{index}": turn for index, turn in enumerate(turns)}
        conversations = [{"title": "t", "create_time": 1.5, "mapping": mapping, "id": "c"}]
        return json.dumps(conversations, ensure_ascii=ascii_only, indent=indent)
    return json.dumps(turns, ensure_ascii=ascii_only, indent=indent)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=transcripts(), target=st.integers(MIN_TARGET_SIZE, 400))
def test_every_chunk_is_searched_by_words_and_ends_at_a_turn_or_in_its_words(
    text: str, target: int
) -> None:
    turns = parse_transcript(text)
    assert turns is not None
    said = set().union(*(_words(turn.content) for turn in turns))
    roles = {turn.role for turn in turns}
    ends = {turn.end for turn in turns}
    words_at = [span for turn in turns for span in text_spans(text, turn.start, turn.end)]
    searched: set[str] = set()
    for chunk in chunk_source(text, "transcript", target_size=target):
        assert chunk.text == text[chunk.start : chunk.end]
        found = search_text("transcript", chunk.text)
        searchable = chunk.text if found is None else found
        assert searchable.strip(), chunk
        # Never a bare time from the JSON around the words (a number someone said is a word).
        assert not _TIMESTAMP.fullmatch(searchable) or set(searchable.split()) <= said, chunk
        assert _words(searchable) <= said | roles, chunk
        # A chunk ends where a turn does, or inside the string of a turn's words.
        assert chunk.end in ends or any(a < chunk.end < b for a, b in words_at), chunk
        assert chunk.start in {turn.start for turn in turns} or any(
            a <= chunk.start < b for a, b in words_at
        ), chunk
        searched |= _words(searchable)
    assert said <= searched


def test_a_chat_export_stored_as_code_becomes_a_transcript_on_reingest(
    lt: Lantern, tmp_path: Path
) -> None:
    """A store made before these formats were read holds the file as a `source_file`; its
    kind now differs, so the unchanged file is chunked again as a transcript, then left alone."""
    path = tmp_path / "openai-chat.json"
    shutil.copy(DATA / "openai-chat.json", path)
    [old] = lt.evidence.ingest_path(path, kind="source_file").sources
    assert old.source.kind == "source_file" and lt.evidence.search("role", mode="keyword")
    [again] = lt.evidence.ingest_path(path).sources
    assert (again.status, again.source.kind) == ("updated", "transcript")
    assert again.source.id == old.source.id
    assert lt.evidence.search("role", mode="keyword") == []
    [same] = lt.evidence.ingest_path(path).sources
    assert same.status == "unchanged"
    assert lt.check().healthy
