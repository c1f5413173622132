"""Re-ingesting a changed source while keeping the ids of the chunks that did not change.

Memory records cite chunks by id, so a re-ingest should not renumber what it does not have to.
The legacy id is `chk_` + sha256(source_id, ordinal, sha256(text)): a chunk keeps its id exactly
when it keeps both its text and its ordinal. Ordinals must stay in document order (they order a
source's chunks and find a chunk's neighbours), but nothing in the format asks them to be
contiguous, or positive. So:

* Ordinals are spaced out: a source's first chunks get 0, 1000, 2000, ..., and chunks added
  later take ordinals in the gaps (spread evenly between their neighbours), before the first
  chunk (negative ordinals) or after the last. A chunk inserted anywhere then costs no other
  chunk its id, until about ten insertions at the very same place have used up a gap.
* Old and new chunks are matched by text, in order, keeping as many as possible, under the one
  constraint that the new chunks between two kept ones fit in the free ordinals between them
  (a longest chain, below). Only where a gap is used up are chunks renumbered: those on the
  side of the insertion that has fewer of them.
* A source whose new text starts with its old text (a transcript or log that grew) keeps every
  chunk as it is, text, offsets and id: only the appended text is chunked (`appended_at`).

Chunk boundaries come from the chunker: an edit that moves them (a paragraph that no longer fits
its chunk, lines repacked after a line inserted into a log) changes the text of the chunks whose
boundaries moved, and those get new ids whatever their ordinals.

Ordinals stay within PostgreSQL's `integer` (the legacy column type) on both engines, so that a
store can move between them; a source that would leave that range is numbered afresh.
"""

from __future__ import annotations

import hashlib
from bisect import bisect_left, bisect_right
from collections.abc import Sequence

STRIDE = 1000
"""The gap left between the ordinals of chunks written together."""
MIN_ORDINAL = -(2**31)
MAX_ORDINAL = 2**31 - 1
MAX_CANDIDATES = 16
"""Old chunks with the same text considered for each new chunk: repeated texts (a log line
printed a thousand times) would otherwise make matching quadratic."""
_MAX_TRAILING_BLANKS = 1 << 16
"""How many blank characters after the last chunk are tried as the end of the old text."""


def assign_ordinals(old: Sequence[tuple[int, str]], new: Sequence[str]) -> list[int]:
    """Ordinals for the `new` chunk texts (in document order), reusing those of `old` ones.

    `old` holds `(ordinal, text)` of the stored chunks (any order); texts may also be hashes,
    as long as both sides use the same. The result is strictly increasing and within the
    ordinal range; a new chunk whose ordinal and text equal a stored chunk's has that chunk's id.

    Matching is a longest chain over candidate pairs `(new position p, old ordinal o)` with
    equal text: kept pairs need `p` increasing and the slack `o - p` non-decreasing, which is
    exactly "the chunks between fit in the free ordinals". Sorting the pairs by `p`, with
    decreasing slack within one `p`, turns that into a longest non-decreasing subsequence, found
    in O(n log n).
    """
    ranked = sorted(old)
    by_text: dict[str, list[tuple[int, int]]] = {}  # text -> [(rank, ordinal)], by rank
    for rank, (ordinal, text) in enumerate(ranked):
        by_text.setdefault(text, []).append((rank, ordinal))
    pairs: list[tuple[int, int]] = []  # (p, o), sorted by p then by decreasing o
    for position, text in enumerate(new):
        same_text = by_text.get(text)
        if not same_text:
            continue
        # The candidates nearest to where the chunk sits now, by rank.
        first = bisect_left(same_text, (position - MAX_CANDIDATES // 2, MIN_ORDINAL))
        first = max(0, min(first, len(same_text) - MAX_CANDIDATES))
        candidates = same_text[first : first + MAX_CANDIDATES]
        pairs.extend((position, ordinal) for _rank, ordinal in reversed(candidates))
    ordinals = _around(_longest_chain(pairs), len(new))
    if ordinals is None:  # numbered afresh: every id changes, but the range always has room
        ordinals = _spread(None, None, len(new))
        assert ordinals is not None
    return ordinals


def following_ordinals(last: int | None, count: int) -> list[int] | None:
    """Ordinals for `count` chunks written after the chunk numbered `last` (None: there is
    none); None when the range has no room for them."""
    return _spread(last, None, count)


def appended_at(
    text: str, old_hash: str, old: Sequence[tuple[int | None, int | None, str]]
) -> int | None:
    """The length of the old text when `text` starts with it, else None.

    `old_hash` is the sha256 (hex) of the old text, and `old` its chunks as `(start, end, text)`
    offsets: the old text itself is not stored, but its chunks are slices of it, and after the
    last one only blank characters can follow (the chunkers leave nothing else out at the end).
    So the old text is `text[:n]` for an `n` from the end of the last chunk through the blanks
    that follow it in `text`, the one whose hash is `old_hash`.
    """
    if not old or any(start is None or end is None for start, end, _chunk in old):
        return None
    end = 0
    for start, stop, chunk in old:
        assert start is not None and stop is not None
        if stop - start != len(chunk) or not text.startswith(chunk, start):
            return None
        end = max(end, stop)
    if end > len(text):
        return None
    digest = hashlib.sha256(text[:end].encode("utf-8"))
    for length in range(end, min(len(text), end + _MAX_TRAILING_BLANKS) + 1):
        if length > end:
            if not text[length - 1].isspace():
                return None
            digest.update(text[length - 1].encode("utf-8"))
        if digest.hexdigest() == old_hash:
            return length if length < len(text) else None
    return None


def _around(kept: list[tuple[int, int]], count: int) -> list[int] | None:
    """Ordinals for `count` chunks: the kept `(position, ordinal)` pairs as they are, the
    others spread in the gaps around them; None if the range has no room for them."""
    ordinals: list[int] = []
    low: int | None = None
    position = 0
    for kept_position, kept_ordinal in [*kept, (count, None)]:
        between = _spread(low, kept_ordinal, kept_position - position)
        if between is None:
            return None
        ordinals += between
        if kept_ordinal is not None:
            ordinals.append(kept_ordinal)
        low, position = kept_ordinal, kept_position + 1
    return ordinals


def _spread(low: int | None, high: int | None, count: int) -> list[int] | None:
    """`count` increasing ordinals strictly between `low` and `high` (None: no bound but the
    range's), STRIDE apart where there is room, evenly spread where there is less; None when
    they do not fit."""
    if count == 0:
        return []
    if low is not None and high is not None:
        room = high - low
        if room <= count:
            return None
        return [low + (index + 1) * room // (count + 1) for index in range(count)]
    if low is None and high is None:
        step = min(STRIDE, MAX_ORDINAL // max(count - 1, 1))
        return [step * index for index in range(count)]
    if high is not None:  # before the first kept chunk
        step = min(STRIDE, (high - MIN_ORDINAL) // count)
        return None if step < 1 else [high - step * (count - index) for index in range(count)]
    assert low is not None  # after the last kept chunk
    step = min(STRIDE, (MAX_ORDINAL - low) // count)
    return None if step < 1 else [low + step * (index + 1) for index in range(count)]


def _longest_chain(pairs: Sequence[tuple[int, int]]) -> list[tuple[int, int]]:
    """The longest subsequence of `pairs` whose slack `o - p` never decreases."""
    tails: list[int] = []  # smallest slack ending a chain of each length
    tail_index: list[int] = []  # which pair ends that chain
    previous: list[int] = [-1] * len(pairs)
    for index, (position, ordinal) in enumerate(pairs):
        slack = ordinal - position
        length = bisect_right(tails, slack)
        if length == len(tails):
            tails.append(slack)
            tail_index.append(index)
        else:
            tails[length] = slack
            tail_index[length] = index
        previous[index] = tail_index[length - 1] if length > 0 else -1
    chain: list[tuple[int, int]] = []
    index = tail_index[-1] if tail_index else -1
    while index >= 0:
        chain.append(pairs[index])
        index = previous[index]
    chain.reverse()
    return chain
