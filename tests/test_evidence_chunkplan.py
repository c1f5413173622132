"""Ordinals for re-ingested chunks: ids kept where the legacy format allows, and no more."""

from __future__ import annotations

from functools import cache
from itertools import pairwise

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lantern.evidence.chunkplan import assign_ordinals


def kept(old: list[tuple[int, str]], new: list[str], ordinals: list[int]) -> int:
    """How many new chunks have the (ordinal, text), hence the id, of a stored chunk."""
    stored = set(old)
    return sum((ordinal, text) in stored for ordinal, text in zip(ordinals, new, strict=True))


def best_possible(old: list[tuple[int, str]], new: list[str]) -> int:
    """The most stored ids any valid numbering keeps, by exhaustive search.

    Ordinals must be strictly increasing and non-negative; a new chunk either takes a stored
    chunk's ordinal (same text) or the smallest one still free, which is never worse.
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

    return best(0, 0)


def contiguous(texts: str) -> list[tuple[int, str]]:
    return list(enumerate(texts))


@pytest.mark.parametrize(
    ("old", "new", "expected"),
    [
        ("ABCDE", "ABCDE", [0, 1, 2, 3, 4]),  # unchanged
        ("ABCDE", "ABxDE", [0, 1, 2, 3, 4]),  # an edit inside one chunk
        ("ABCDE", "ABDE", [0, 1, 3, 4]),  # a removal leaves a gap
        ("ABCDE", "ABCDEF", [0, 1, 2, 3, 4, 5]),  # appended
        ("ABCDE", "ABxCDE", [0, 1, 2, 3, 4, 5]),  # inserted: C, D, E renumbered
        ("ABCDE", "xABCDE", [0, 1, 2, 3, 4, 5]),  # nothing free before 0: all renumbered
        ("", "AB", [0, 1]),
        ("AB", "", []),
        ("ABA", "AA", [0, 2]),  # repeated text: the later copy keeps its ordinal
    ],
)
def test_examples(old: str, new: str, expected: list[int]) -> None:
    assert assign_ordinals(contiguous(old), list(new)) == expected


def test_gaps_left_by_removals_take_later_insertions() -> None:
    old = [(0, "A"), (1, "B"), (3, "D"), (4, "E")]  # C was removed earlier
    assert assign_ordinals(old, list("ABxDE")) == [0, 1, 2, 3, 4]
    assert kept(old, list("ABxDE"), [0, 1, 2, 3, 4]) == 4


def test_many_repeated_texts_stay_fast() -> None:
    old = contiguous("x" * 5000)
    ordinals = assign_ordinals(old, ["y", *("x" * 5000)])
    assert ordinals == list(range(5001))


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
    assert all(o >= 0 for o in ordinals)
    assert all(a < b for a, b in pairwise(ordinals))
    assert kept(old, new, ordinals) == best_possible(old, new)
