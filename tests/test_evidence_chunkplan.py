"""Ordinals for re-ingested chunks: ids kept where the legacy format allows, and no more; and
where a source that grew ends its old text."""

from __future__ import annotations

import hashlib
from functools import cache
from itertools import pairwise

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lantern.evidence.chunkplan import (
    MAX_ORDINAL,
    MIN_ORDINAL,
    STRIDE,
    appended_at,
    assign_ordinals,
    following_ordinals,
)


def kept(old: list[tuple[int, str]], new: list[str], ordinals: list[int]) -> int:
    """How many new chunks have the (ordinal, text), hence the id, of a stored chunk."""
    stored = set(old)
    return sum((ordinal, text) in stored for ordinal, text in zip(ordinals, new, strict=True))


def best_possible(old: list[tuple[int, str]], new: list[str]) -> int:
    """The most stored ids any valid numbering keeps, by exhaustive search.

    Ordinals must be strictly increasing and within the range; a new chunk either takes a
    stored chunk's ordinal (same text) or the smallest one still free, which is never worse.
    """
    text_at = dict(old)

    @cache
    def best(position: int, lowest: int) -> int:
        if position == len(new):
            return 0
        choices = [(text_at.get(lowest) == new[position]) + best(position + 1, lowest + 1)]
        for ordinal, text in text_at.items():
            if ordinal >= lowest and text == new[position]:
                choices.append(1 + best(position + 1, ordinal + 1))
        return max(choices)

    return best(0, MIN_ORDINAL)


def contiguous(texts: str) -> list[tuple[int, str]]:
    """Chunks numbered 0, 1, 2...: as stores made before ordinals were spaced hold them."""
    return list(enumerate(texts))


def spaced(texts: str) -> list[tuple[int, str]]:
    """Chunks as an ingest numbers them now."""
    return [(n * STRIDE, text) for n, text in enumerate(texts)]


@pytest.mark.parametrize(
    ("old", "new", "expected"),
    [
        (spaced("ABCDE"), "ABCDE", [0, 1000, 2000, 3000, 4000]),  # unchanged
        (spaced("ABCDE"), "ABxDE", [0, 1000, 2000, 3000, 4000]),  # an edit inside one chunk
        (spaced("ABCDE"), "ABDE", [0, 1000, 3000, 4000]),  # a removal leaves a gap
        (spaced("ABCDE"), "ABCDEF", [0, 1000, 2000, 3000, 4000, 5000]),  # appended
        (spaced("ABCDE"), "ABxCDE", [0, 1000, 1500, 2000, 3000, 4000]),  # inserted in a gap
        (spaced("ABC"), "AxyzBC", [0, 250, 500, 750, 1000, 2000]),  # spread evenly
        (spaced("ABCDE"), "xABCDE", [-1000, 0, 1000, 2000, 3000, 4000]),  # before the first
        ([], "AB", [0, 1000]),
        (spaced("AB"), "", []),
        (spaced("ABA"), "AA", [0, 2000]),  # repeated text: the later copy keeps its ordinal
        # Numbered without gaps (older stores): the side of an insertion that keeps more ids
        # keeps them; the other is numbered in the free range below.
        (contiguous("ABCDE"), "ABxDE", [0, 1, 2, 3, 4]),
        (contiguous("ABCDE"), "ABCDEF", [0, 1, 2, 3, 4, 1004]),
        (contiguous("ABCDE"), "ABxCDE", [-2998, -1998, -998, 2, 3, 4]),  # C, D, E keep theirs
        (contiguous("ABCDE"), "ABCDxE", [0, 1, 2, 3, 1003, 2003]),  # E is numbered again
    ],
)
def test_examples(old: list[tuple[int, str]], new: str, expected: list[int]) -> None:
    assert assign_ordinals(old, list(new)) == expected


def test_insertions_at_one_place_use_the_gap_then_renumber_the_smaller_side() -> None:
    old = spaced("ABCDEFGH")
    texts = list("ABCDEFGH")
    for n in range(12):
        texts.insert(1, f"x{n}")  # always right after A
        ordinals = assign_ordinals(old, texts)
        assert all(a < b for a, b in pairwise(ordinals))
        old = list(zip(ordinals, texts, strict=True))
        kept = {o for o, t in old if t in "ABCDEFGH"}
        if n < 9:  # ten halvings of the gap between A (0) and B (1000)
            assert kept == {n * STRIDE for n in range(8)}
    # Once the gap is used up, A (the smaller side) is numbered again, and B to H keep theirs.
    assert {o for o, t in old if t in "BCDEFGH"} == {n * STRIDE for n in range(1, 8)}


def test_ordinals_stay_in_the_range_or_are_numbered_afresh() -> None:
    assert assign_ordinals([(MIN_ORDINAL, "A")], ["x", "A"]) == [0, 1000]
    assert assign_ordinals([(MAX_ORDINAL, "A")], ["A", "x"]) == [0, 1000]
    assert assign_ordinals([(MAX_ORDINAL - 3, "A")], ["A", "x", "y"]) == [
        MAX_ORDINAL - 3,
        MAX_ORDINAL - 2,
        MAX_ORDINAL - 1,
    ]
    assert following_ordinals(MAX_ORDINAL - 1, 2) is None
    assert following_ordinals(None, 3) == [0, 1000, 2000]


def test_many_repeated_texts_stay_fast() -> None:
    old = contiguous("x" * 5000)
    ordinals = assign_ordinals(old, ["y", *("x" * 5000)])
    assert ordinals == [-1000, *range(5000)]


texts = st.lists(st.sampled_from("ABCD"), max_size=9)


@settings(max_examples=400, deadline=None, database=None)
@given(
    old_texts=texts,
    gaps=st.lists(st.integers(min_value=0, max_value=2), min_size=9, max_size=9),
    new=texts,
)
def test_numbering_is_valid_and_keeps_as_many_ids_as_possible(
    old_texts: list[str], gaps: list[int], new: list[str]
) -> None:
    old: list[tuple[int, str]] = []
    ordinal = gaps[0]
    for text, gap in zip(old_texts, [*gaps[1:], 0], strict=False):
        old.append((ordinal, text))
        ordinal += 1 + gap
    ordinals = assign_ordinals(old, new)
    assert len(ordinals) == len(new)
    assert all(MIN_ORDINAL <= o <= MAX_ORDINAL for o in ordinals)
    assert all(a < b for a, b in pairwise(ordinals))
    assert kept(old, new, ordinals) == best_possible(old, new)


# --- a source that grew ----------------------------------------------------------------------


def _chunks(text: str, *pieces: str) -> list[tuple[int | None, int | None, str]]:
    found: list[tuple[int | None, int | None, str]] = []
    for piece in pieces:
        start = text.index(piece)
        found.append((start, start + len(piece), piece))
    return found


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


@pytest.mark.parametrize(
    ("old", "new", "expected"),
    [
        ("one two\nthree\n", "one two\nthree\nfour\n", 14),
        ("one two\nthree", "one two\nthree\nfour\n", 13),
        ("one two\nthree  \n\n", "one two\nthree  \n\n\nfour", 17),
        ("one two\nthree", "one two\nthreefold", 13),  # a word goes on: the caller decides
        ("one two\nthree\n", "one two\nthree\n", None),  # unchanged
        ("one two\nthree\n", "one two\nthree\n  ", 14),  # only blanks were added
        ("one two\nthree\n", "one too\nthree\nfour\n", None),  # an earlier edit
        ("one two\nthree\n", "one two\nthree", None),  # shorter
    ],
)
def test_appended_at_finds_the_end_of_the_old_text(
    old: str, new: str, expected: int | None
) -> None:
    chunks = _chunks(old, "one two", "three")
    assert appended_at(new, _sha(old), chunks) == expected


def test_appended_at_needs_the_offsets_of_the_old_chunks() -> None:
    old, new = "one\n", "one\ntwo\n"
    assert appended_at(new, _sha(old), [(0, 3, "one")]) == 4
    assert appended_at(new, _sha(old), [(None, None, "one")]) is None
    assert appended_at(new, _sha(old), [(0, 3, "two")]) is None  # not a slice of the text
    assert appended_at(new, _sha(old), []) is None
