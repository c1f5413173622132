"""Re-ingesting a changed source while keeping the ids of the chunks that did not change.

Memory records cite chunks by id, so a re-ingest should not renumber what it does not have to.
The legacy id is `chk_` + sha256(source_id, ordinal, sha256(text)): a chunk keeps its id exactly
when it keeps both its text and its ordinal. Ordinals must stay in document order (they order a
source's chunks and find a chunk's neighbours), so "where the format allows" means:

* old and new chunks are matched by text, in order, keeping as many as possible, under the one
  constraint that the new chunks between two kept ones fit in the free ordinals between them
  (and the new chunks before the first kept one fit below it, from 0);
* every other new chunk takes the next free ordinal after its predecessor, so it gets a new id.

So edits inside chunks and removed chunks cost no other chunk its id (a removal leaves a gap in
the ordinals, which later insertions can use), and appending keeps every id. A chunk inserted
where no ordinal is free (between neighbours numbered n and n + 1, or before ordinal 0)
renumbers the chunks after it up to the next gap in the ordinals, and those get new ids.
Chunk boundaries come from the chunker: an edit that moves them (a paragraph that no longer
fits its chunk) changes the text of the chunks whose boundaries moved.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Sequence

MAX_CANDIDATES = 16
"""Old chunks with the same text considered for each new chunk: repeated texts (a log line
printed a thousand times) would otherwise make matching quadratic."""


def assign_ordinals(old: Sequence[tuple[int, str]], new: Sequence[str]) -> list[int]:
    """Ordinals for the `new` chunk texts (in document order), reusing those of `old` ones.

    `old` holds `(ordinal, text)` of the stored chunks (any order); texts may also be hashes,
    as long as both sides use the same. The result is strictly increasing and non-negative; a
    new chunk whose ordinal and text equal a stored chunk's has that chunk's id.

    Matching is a longest chain over candidate pairs `(new position p, old ordinal o)` with
    equal text: kept pairs need `p` increasing and the slack `o - p` non-decreasing and
    non-negative, which is exactly "the chunks between fit in the free ordinals". Sorting the
    pairs by `p`, with decreasing slack within one `p`, turns that into a longest
    non-decreasing subsequence, found in O(n log n).
    """
    ordinals_by_text: dict[str, list[int]] = {}
    for ordinal, text in sorted(old):
        ordinals_by_text.setdefault(text, []).append(ordinal)
    pairs: list[tuple[int, int]] = []  # (p, o), sorted by p then by decreasing o
    for position, text in enumerate(new):
        same_text = ordinals_by_text.get(text)
        if not same_text:
            continue
        first = bisect_left(same_text, position)  # slack must be >= 0
        candidates = same_text[first : first + MAX_CANDIDATES]
        pairs.extend((position, ordinal) for ordinal in reversed(candidates))
    kept = dict(_longest_chain(pairs))
    ordinals: list[int] = []
    next_free = 0
    for position in range(len(new)):
        ordinal = kept.get(position, next_free)
        ordinals.append(ordinal)
        next_free = ordinal + 1
    return ordinals


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
