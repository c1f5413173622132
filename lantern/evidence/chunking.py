"""Split a source's text into chunks that keep exact offsets into the original.

Evidence has to be citable, so every chunk is a verbatim slice of the source:
``chunk.text == text[chunk.start:chunk.end]``. Chunks are ordered, never overlap,
never start or end with whitespace, and never cut a word (a run of non-whitespace)
in two.

Sizes are soft: units that belong together (a markdown section or code fence, a
top-level definition, a transcript turn, a log line, a paragraph) are packed
greedily up to ``target_size`` characters. A unit larger than the target is split
at ever finer boundaries (paragraphs, then lines, then whitespace), so no chunk
exceeds the target unless it is a single word longer than the target.

Every step is a regex scan or a bisect over unit offsets, so the work is linear in
the text size; 10 MB chunks in well under a second.
"""

from __future__ import annotations

import re
from bisect import bisect_left, bisect_right
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from itertools import pairwise

from lantern.evidence.searchtext import text_spans, transcript_search_text, unescape
from lantern.evidence.sourcekinds import Turn, language_for, parse_transcript

MIN_TARGET_SIZE = 100
DEFAULT_TARGET_SIZE = 1000

Span = tuple[int, int]
Piece = tuple[int, int, dict[str, object]]
Splitter = Callable[[str, int, int, int], Iterator[Span]]

# A paragraph, trimmed: trimmed lines joined by single newlines (no blank line between).
_PARAGRAPH = re.compile(r"\S(?:[^\n]*\S)?(?:[^\S\n]*\n[^\S\n]*\S(?:[^\n]*\S)?)*")
_NON_SPACE = re.compile(r"\S")
_SPACE = re.compile(r"\s")
_SPACES = re.compile(r"\s+")
_ENDS_WITH_SPACE = re.compile(r"[\s\S]*\s")
_BLANK_LINE = re.compile(r"\n[^\S\n]*\n")
_ENDS_WITH_BLANK_LINE = re.compile(r"[\s\S]*\n[^\S\n]*\n")

# Markdown: fences may be indented up to three spaces; a backtick fence's info
# string may not contain backticks (CommonMark), which keeps inline code out.
_FENCE_OPEN = re.compile(r"^ {0,3}(`{3,}(?=[^`\n]*$)|~{3,})", re.MULTILINE)
_ATX_HEADING = re.compile(r"^ {0,3}(#{1,6})(?=[ \t\r]|$)([^\n]*)$", re.MULTILINE)
_CLOSING_HASHES = re.compile(r"(?:^|[ \t]+)#+[ \t]*\Z")

# Code: a line at column 0 starts a top-level unit unless it closes or continues
# the construct above it (closing brackets, an opening brace on its own line,
# else/except/end and the like).
_TOP_LEVEL_LINE = re.compile(
    r"^(?=[^\s\}\)\]\{])(?!(?:else|elif|except|finally|catch|end|fi|done|esac)\b)",
    re.MULTILINE,
)
# Comments and decorators belong to the definition below them.
_LEADING_LINE = re.compile(r"(?:@|#|//|/\*|--|;|%| ?\*)")


@dataclass(frozen=True, slots=True)
class ChunkSpan:
    """A chunk and where it came from; offsets are str indices (code points)."""

    ordinal: int
    start: int
    end: int
    text: str
    metadata: dict[str, object] = field(default_factory=dict, hash=False)


def chunk_source(
    text: str,
    kind: str,
    *,
    target_size: int = DEFAULT_TARGET_SIZE,
    path: str | None = None,
    begin: int = 0,
) -> list[ChunkSpan]:
    """Chunk ``text`` along the boundaries that matter for its kind.

    Unknown kinds are chunked as plain text rather than rejected, so new kinds can
    be stored before they get a dedicated strategy.

    With ``begin``, only ``text[begin:]`` is chunked, as the continuation of what
    precedes it (a transcript or log that grew): units are found in the whole text,
    so that headings, definitions and turns that began earlier still give their
    context, and cut at ``begin``, which must not fall inside a word.
    """
    target = _validated_target(target_size)
    if kind == "markdown":
        pieces = _markdown_pieces(text, target, begin)
    elif kind == "source_file":
        pieces = _source_pieces(text, target, language_for(path), begin)
    elif kind == "transcript":
        pieces = _transcript_pieces(text, target, begin)
    elif kind == "log":
        pieces = _log_pieces(text, target, begin)
    else:
        pieces = _plain_pieces(text, target, begin)
    return [
        ChunkSpan(ordinal, start, end, text[start:end], metadata)
        for ordinal, (start, end, metadata) in enumerate(pieces)
    ]


def _validated_target(target_size: object) -> int:
    if isinstance(target_size, bool) or not isinstance(target_size, int):
        raise ValueError(f"target_size must be an int, got {type(target_size).__name__}")
    if target_size < MIN_TARGET_SIZE:
        raise ValueError(f"target_size must be at least {MIN_TARGET_SIZE}, got {target_size}")
    return target_size


# --- generic packing -------------------------------------------------------------


def _trim(text: str, start: int, end: int) -> Span | None:
    """Shrink a span to its non-whitespace content, or None if there is none."""
    first = _NON_SPACE.search(text, start, end)
    if first is None:
        return None
    last = text[first.start() : end].rstrip()
    return first.start(), first.start() + len(last)


def _paragraphs(text: str, start: int, end: int) -> list[Span]:
    return [match.span() for match in _PARAGRAPH.finditer(text, start, end)]


def _end_trimmed(text: str, start: int, end: int) -> int:
    return start + len(text[start:end].rstrip())


def _last_space(text: str, low: int, high: int) -> int:
    """Index of the last whitespace in ``text[low:high]``, or -1.

    ``rfind`` finds the last space or newline at C speed; the regex then only has
    to backtrack over the short tail after it for rarer whitespace characters.
    """
    common = max(text.rfind(" ", low, high), text.rfind("\n", low, high))
    tail = _ENDS_WITH_SPACE.match(text, max(common + 1, low), high)
    return common if tail is None else tail.end() - 1


def _next_space(text: str, low: int, high: int) -> int:
    space = _SPACE.search(text, low, high)
    return high if space is None else space.start()


def _last_newline(text: str, low: int, high: int) -> int:
    return text.rfind("\n", low, high)


def _next_newline(text: str, low: int, high: int) -> int:
    newline = text.find("\n", low, high)
    return high if newline == -1 else newline


def _last_blank_line(text: str, low: int, high: int) -> int:
    """Where the last blank-line break in ``text[low:high]`` starts, or -1.

    The pattern ends in a literal newline, which lets the regex engine backtrack
    with a fast character scan instead of trying every position.
    """
    blank = _ENDS_WITH_BLANK_LINE.match(text, low, high)
    return -1 if blank is None else text.rfind("\n", low, blank.end() - 1)


def _next_blank_line(text: str, low: int, high: int) -> int:
    blank = _BLANK_LINE.search(text, low, high)
    return high if blank is None else blank.start()


@dataclass(frozen=True, slots=True)
class _Boundary:
    """A kind of break between units: how to find the last one in a window, and the next one.

    Both return the index where the break starts; ``last`` returns -1 when the
    window has none, ``next`` returns the upper bound.
    """

    last: Callable[[str, int, int], int]
    next: Callable[[str, int, int], int]


_WORDS = _Boundary(_last_space, _next_space)
_LINES = _Boundary(_last_newline, _next_newline)
_PARAGRAPHS = _Boundary(_last_blank_line, _next_blank_line)


def _split_words(text: str, start: int, end: int, target: int) -> Iterator[Span]:
    """Cut at whitespace; a word longer than the target is left whole, as the only way."""
    return _split_at(text, (start, end), target, _WORDS, None)


def _split_lines(text: str, start: int, end: int, target: int) -> Iterator[Span]:
    """Group whole lines; a line longer than the target is cut at whitespace."""
    return _split_at(text, (start, end), target, _LINES, _split_words)


def _split_paragraphs(text: str, start: int, end: int, target: int) -> Iterator[Span]:
    """Group whole paragraphs; a paragraph longer than the target is cut at lines."""
    return _split_at(text, (start, end), target, _PARAGRAPHS, _split_lines)


def _split_at(
    text: str, span: Span, target: int, boundary: _Boundary, finer: Splitter | None
) -> Iterator[Span]:
    """Pack the units of a trimmed span greedily into pieces of at most ``target``.

    Rather than listing units (millions of tiny lines would cost seconds), each
    step looks at one window of ``target`` characters for its last break, so the
    Python loop runs about once per piece. A unit that alone overflows the window
    is handed to ``finer``, or kept whole when there is nothing finer.
    """
    position, end = span
    while position < end:
        if end - position <= target:
            yield position, end
            return
        cut = boundary.last(text, position + 1, position + target + 1)
        if cut != -1:
            piece_end = _end_trimmed(text, position, cut)
            yield position, piece_end
        else:
            piece_end = _end_trimmed(text, position, boundary.next(text, position, end))
            if finer is None:
                yield position, piece_end
            else:
                yield from finer(text, position, piece_end, target)
        following = _NON_SPACE.search(text, piece_end, end)
        if following is None:
            return
        position = following.start()


def _groups(units: Sequence[Span], target: int) -> Iterator[tuple[int, int]]:
    """Yield index ranges of consecutive units that fit together in ``target``.

    A range of one unit may not fit; the caller then splits that unit. Bisecting
    over unit ends keeps the loop to one step per chunk, not per unit.
    """
    ends = [end for _, end in units]
    index = 0
    while index < len(units):
        stop = max(bisect_right(ends, units[index][0] + target, index), index + 1)
        yield index, stop
        index = stop


def _pack(text: str, units: Sequence[Span], target: int, finer: Splitter) -> Iterator[Span]:
    """Greedily merge structural units up to ``target``; split oversize ones with ``finer``."""
    for first, stop in _groups(units, target):
        start, end = units[first][0], units[stop - 1][1]
        if end - start <= target:
            yield start, end
        else:
            yield from finer(text, start, end, target)


def _split_all(text: str, target: int, splitter: Splitter, begin: int) -> Iterator[Span]:
    span = _trim(text, begin, len(text))
    return iter(()) if span is None else splitter(text, *span, target)


def _from(text: str, units: Sequence[Span], begin: int) -> Sequence[Span]:
    """The units, or what is left of them, from ``begin`` on."""
    if begin == 0:
        return units
    rest = (_trim(text, max(start, begin), end) for start, end in units if end > begin)
    return [unit for unit in rest if unit is not None]


# --- plain text and logs -------------------------------------------------------


def _plain_pieces(text: str, target: int, begin: int) -> Iterator[Piece]:
    for start, end in _split_all(text, target, _split_paragraphs, begin):
        yield start, end, {}


class _LineCounter:
    """Map ascending offsets to 1-based line numbers, counting each newline once."""

    def __init__(self, text: str) -> None:
        self._text = text
        self._offset = 0
        self._line = 1

    def line_at(self, offset: int) -> int:
        if offset < self._offset:
            self._offset, self._line = 0, 1
        self._line += self._text.count("\n", self._offset, offset)
        self._offset = offset
        return self._line

    def lines_of(self, start: int, end: int) -> dict[str, object]:
        return {"start_line": self.line_at(start), "end_line": self.line_at(end - 1)}


def _log_pieces(text: str, target: int, begin: int) -> Iterator[Piece]:
    counter = _LineCounter(text)
    for start, end in _split_all(text, target, _split_lines, begin):
        yield start, end, counter.lines_of(start, end)


# --- source code ---------------------------------------------------------------


def _top_level_units(text: str) -> list[Span]:
    """Cut code before each column-0 line that starts a new top-level construct."""
    cuts = [0]
    for match in _TOP_LEVEL_LINE.finditer(text):
        position = match.start()
        if position > 0 and not _follows_leading_line(text, position):
            cuts.append(position)
    cuts.append(len(text))
    units = (_trim(text, start, end) for start, end in pairwise(cuts))
    return [unit for unit in units if unit is not None]


def _follows_leading_line(text: str, line_start: int) -> bool:
    previous_start = text.rfind("\n", 0, line_start - 1) + 1
    return _LEADING_LINE.match(text, previous_start, line_start - 1) is not None


def _source_pieces(text: str, target: int, language: str | None, begin: int) -> Iterator[Piece]:
    counter = _LineCounter(text)
    units = _from(text, _top_level_units(text), begin)
    for start, end in _pack(text, units, target, _split_paragraphs):
        yield start, end, {"language": language, **counter.lines_of(start, end)}


# --- markdown ------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Section:
    start: int
    end: int
    heading_path: tuple[str, ...]
    heading_end: int


@lru_cache(maxsize=64)
def _closing_fence(opening: str) -> re.Pattern[str]:
    marker = re.escape(opening[0])
    return re.compile(rf"^ {{0,3}}{marker}{{{len(opening)},}}[^\S\n]*$", re.MULTILINE)


class _Fences:
    """Fenced code blocks of a document; an unclosed fence runs to the end (CommonMark)."""

    def __init__(self, text: str) -> None:
        self.spans: list[Span] = []
        position = 0
        while (opening := _FENCE_OPEN.search(text, position)) is not None:
            line_end = text.find("\n", opening.end())
            closing = (
                None
                if line_end == -1
                else _closing_fence(opening.group(1)).search(text, line_end + 1)
            )
            end = len(text) if closing is None else closing.end()
            self.spans.append((opening.start(), end))
            position = max(end, opening.end())
        self._starts = [start for start, _ in self.spans]

    def contains(self, position: int) -> bool:
        index = bisect_right(self._starts, position) - 1
        return index >= 0 and position < self.spans[index][1]

    def reach(self, start: int, end: int) -> int:
        """How far the fences opening in ``[start, end)`` extend (-1 if none open there)."""
        reach = -1
        index = bisect_left(self._starts, start)
        while index < len(self._starts) and self._starts[index] < end:
            reach = max(reach, self.spans[index][1])
            index += 1
        return reach


def _heading_title(raw: str) -> str:
    return _CLOSING_HASHES.sub("", raw.strip()).strip()


def _sections(text: str, fences: _Fences) -> list[_Section]:
    """Cut the document at ATX headings outside fences, tracking the heading path."""
    sections: list[_Section] = []
    stack: list[tuple[int, str]] = []
    start, heading_end = 0, 0
    for heading in _ATX_HEADING.finditer(text):
        if fences.contains(heading.start()):
            continue
        sections.append(_Section(start, heading.start(), tuple(t for _, t in stack), heading_end))
        level = len(heading.group(1))
        while stack and stack[-1][0] >= level:
            stack.pop()
        stack.append((level, _heading_title(heading.group(2))))
        start, heading_end = heading.start(), heading.end()
    sections.append(_Section(start, len(text), tuple(t for _, t in stack), heading_end))
    return _merge_bare_headings(text, sections)


def _merge_bare_headings(text: str, sections: list[_Section]) -> list[_Section]:
    """Fold a heading with no body into the subsection that follows it.

    A lone "# Install" chunk is useless for retrieval, and the subsection's
    heading path already names it.
    """
    merged: list[_Section] = []
    carried_start: int | None = None
    for index, section in enumerate(sections):
        start = section.start if carried_start is None else carried_start
        following = sections[index + 1] if index + 1 < len(sections) else None
        bare = bool(section.heading_path) and _trim(text, section.heading_end, section.end) is None
        if bare and following is not None and _is_nested(section, following):
            carried_start = start
            continue
        carried_start = None
        merged.append(_Section(start, section.end, section.heading_path, section.heading_end))
    return merged


def _is_nested(parent: _Section, child: _Section) -> bool:
    depth = len(parent.heading_path)
    return len(child.heading_path) > depth and child.heading_path[:depth] == parent.heading_path


def _markdown_blocks(text: str, start: int, end: int, fences: _Fences) -> list[Span]:
    """Paragraphs, except that a fenced code block is kept whole with what touches it."""
    blocks: list[Span] = []
    covered_until = -1
    for block_start, block_end in _paragraphs(text, start, end):
        if blocks and block_start < covered_until:
            blocks[-1] = (blocks[-1][0], block_end)
        else:
            blocks.append((block_start, block_end))
        covered_until = max(covered_until, fences.reach(block_start, block_end))
    return blocks


def _markdown_pieces(text: str, target: int, begin: int) -> Iterator[Piece]:
    fences = _Fences(text)
    for section in _sections(text, fences):
        if section.end <= begin:
            continue
        span = _trim(text, max(section.start, begin), section.end)
        if span is None:
            continue
        if span[1] - span[0] <= target:
            spans: Iterator[Span] = iter((span,))
        else:
            spans = _pack(text, _markdown_blocks(text, *span, fences), target, _split_lines)
        for start, end in spans:
            yield start, end, {"heading_path": list(section.heading_path)}


# --- transcripts ---------------------------------------------------------------


def _turn_metadata(turns: Sequence[Turn]) -> dict[str, object]:
    stamps = [turn.ts for turn in turns if turn.ts is not None]
    return {
        "roles": sorted({turn.role for turn in turns}),
        "first_ts": stamps[0] if stamps else None,
        "last_ts": stamps[-1] if stamps else None,
        "turns": len(turns),
    }


@dataclass(frozen=True, slots=True)
class _TurnUnit:
    """What is packed: a turn with words, with the turns without words next to it."""

    start: int
    end: int
    turn: Turn


def _turn_units(text: str, turns: Sequence[Turn], begin: int) -> list[_TurnUnit]:
    """The turns from ``begin`` on, a turn without words (an empty system message) joined to
    the one before it in its conversation, else to the one after: alone it would make a chunk
    with nothing to search. Only a conversation without a word keeps such turns apart."""
    units: list[_TurnUnit] = []
    waiting: _TurnUnit | None = None  # wordless turns that open a conversation
    for turn in turns:
        if turn.end <= begin:
            continue
        span = _trim(text, max(turn.start, begin), turn.end)
        if span is None:
            continue
        start, end = span
        previous = units[-1] if units else None
        if waiting is not None and waiting.turn.conversation != turn.conversation:
            units.append(waiting)
            previous, waiting = waiting, None
        if not turn.content.strip():
            if waiting is not None:
                waiting = _TurnUnit(waiting.start, end, waiting.turn)
            elif previous is not None and previous.turn.conversation == turn.conversation:
                units[-1] = _TurnUnit(previous.start, end, previous.turn)
            else:
                waiting = _TurnUnit(start, end, turn)
            continue
        if waiting is not None:
            start, waiting = waiting.start, None
        units.append(_TurnUnit(start, end, turn))
    if waiting is not None:
        units.append(waiting)
    return units


def _transcript_pieces(text: str, target: int, begin: int) -> Iterator[Piece]:
    """Group whole turns, within one conversation; only a turn longer than the target is
    ever split, and only inside the strings that hold its words."""
    turns = parse_transcript(text)
    if turns is None:
        yield from _plain_pieces(text, target, begin)
        return
    units = _turn_units(text, turns, begin)
    starts = [turn.start for turn in turns]
    ends = [unit.end for unit in units]
    index = 0
    while index < len(units):
        stop = max(bisect_right(ends, units[index].start + target, index), index + 1)
        conversation = units[index].turn.conversation
        stop = next(
            (i for i in range(index + 1, stop) if units[i].turn.conversation != conversation),
            stop,
        )
        start, end = units[index].start, units[stop - 1].end
        turn = units[index].turn
        # A turn that fits stays whole, with the wordless turns joined to it.
        if end - start <= target or stop - index > 1 or turn.end - turn.start <= target:
            yield start, end, _turn_metadata(_turns_in(turns, starts, start, end))
        else:
            for piece_start, piece_end in _split_turn(text, units[index], target):
                yield (
                    piece_start,
                    piece_end,
                    _turn_metadata(_turns_in(turns, starts, piece_start, piece_end)),
                )
        index = stop


def _turns_in(turns: Sequence[Turn], starts: list[int], start: int, end: int) -> list[Turn]:
    """The turns a chunk ``[start, end)`` holds some of."""
    first = max(bisect_right(starts, start) - 1, 0)
    return [turn for turn in turns[first : bisect_left(starts, end)] if turn.end > start]


def _split_turn(text: str, unit: _TurnUnit, target: int) -> Iterator[Span]:
    """Cut a turn that does not fit a chunk, only at whitespace inside its words' strings.

    Pieces are packed up to the target, counted from the turn's first word to its last: the
    JSON before the first word and after the last comes along, so the first and the last
    piece are longer by that JSON. A piece must read back as
    the words it holds (JSON that looks like structure, `[1, 2]`, inside a string could be
    read otherwise): one that would not is extended to the next cut.
    """
    turn = unit.turn
    spans = [span for span in text_spans(text, turn.start, turn.end) if span[1] > unit.start]
    cuts: list[Span] = []  # (where a piece may end, where the next one then starts)
    for body_start, body_end in spans:
        for space in _SPACES.finditer(text, max(body_start, unit.start), body_end):
            if space.start() > max(body_start, unit.start) and space.end() < body_end:
                cuts.append(space.span())
    cut_ends = [cut_end for cut_end, _next in cuts]
    if not spans:
        return iter(((unit.start, unit.end),))
    # Sizes count from the first word and up to the last: the JSON around them comes along.
    words_start, words_end = max(spans[0][0], unit.start), spans[-1][1]
    pieces: list[Span] = []
    position = unit.start
    index = 0
    while words_end - max(position, words_start) > target:
        index = max(index, bisect_left(cut_ends, position + 1))
        chosen = max(bisect_right(cut_ends, max(position, words_start) + target) - 1, index)
        while chosen < len(cuts) and not _reads_back(text, spans, position, cut_ends[chosen]):
            chosen += 1
        if chosen >= len(cuts):
            break
        pieces.append((position, cut_ends[chosen]))
        position = cuts[chosen][1]
        index = chosen + 1
    pieces.append((position, unit.end))
    if len(pieces) > 1 and not _reads_back(text, spans, position, unit.end):
        pieces[-2:] = [(pieces[-2][0], unit.end)]  # the rest holds no words: no piece of its own
    return iter(pieces)


def _reads_back(text: str, spans: Sequence[Span], start: int, end: int) -> bool:
    """Whether the piece ``text[start:end]`` holds words, and is searched by every one."""
    decoded = transcript_search_text(text[start:end]) or text[start:end]
    if not decoded.strip():
        return False
    for body_start, body_end in spans:
        if body_end <= start or body_start >= end:
            continue
        fragment = unescape(text[max(body_start, start) : min(body_end, end)]).strip()
        if fragment and fragment not in decoded:
            return False
    return True
