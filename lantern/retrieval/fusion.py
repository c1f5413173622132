"""Reciprocal rank fusion: two rankings made one, as `hybrid` search does.

Each item scores the sum, over the rankings it is in, of 1 / (K + rank), its 1-based rank in
that ranking, with K = 60 (Cormack, Clarke and Büttcher, 2009): a first place counts 1/61, a
tenth 1/70. Scores of different rankers (BM25, a cosine) are never compared, only places.

Only the first `DEPTH` places of each ranking count. Far down a keyword ranking, items match
the query by one word that is not what it is about; far down a semantic ranking, everything is
somewhat similar to everything. Fused over whole lists, an item ranked 30th in both beats one
ranked first in one (2/90 > 1/61), and a paraphrase, which matches no word, loses to anything
that shares a word with the question and is vaguely near it. Cut at the depth, an item scores
only for the rankings that place it near the top.

The depth was chosen on the recall data set (bench/recall/run.py --fusion-depths, with the
common words already left out of the keyword side by `lantern.retrieval.stopwords`): the
answer is within the first five hits for 90 % of its 222 questions at depth 10, against 88-89 %
at 5 and 8, 87 % at 12, 84 % at 15 and 81 % at 20, and exact identifiers stay at 100 % at every
depth. The peak is narrow and measured on one data set of about a hundred records and a
hundred chunks per question: treat 10 as a measured choice, not a law (docs/search.md).

Ties (equal fused scores) are broken by the keyword rank, then the semantic rank (a missing
rank last): a total order, since no two items share a rank.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from dataclasses import dataclass

K = 60
"""The constant of reciprocal rank fusion."""
DEPTH = 10
"""Places of each ranking that count in the fused score."""


@dataclass(frozen=True, slots=True)
class Fused:
    """An item's fused score and its places in the two rankings (None beyond `DEPTH` or
    absent), and its cosine similarity where the semantic ranking placed it."""

    key: Hashable
    score: float
    keyword_rank: int | None
    semantic_rank: int | None
    similarity: float | None


def contribution(rank: int | None, depth: int = DEPTH) -> float:
    """What one ranking adds to an item's score for placing it at `rank`."""
    if rank is None or rank > depth:
        return 0.0
    return 1.0 / (K + rank)


def fuse(
    keyword: Sequence[Hashable],
    semantic: Sequence[tuple[Hashable, float]],
    depth: int = DEPTH,
) -> list[Fused]:
    """The hybrid ranking of a keyword ranking (keys, best first, as deep as the caller
    fetched it) and a semantic ranking (keys with their similarity, best first).

    Each item scores for its places within the first `depth` of each ranking. Every item of
    the keyword ranking is kept, those beyond the depth with score 0 after the fused ones in
    their keyword order, so that hybrid finds whatever `any` finds; an item of the semantic
    ranking is kept only within the depth. Ranks are reported wherever they are known."""
    keyword_rank = {key: rank for rank, key in enumerate(keyword, 1)}
    semantic_rank = {key: (rank, sim) for rank, (key, sim) in enumerate(semantic[:depth], 1)}
    fused: list[Fused] = []
    for key in [*keyword_rank, *(k for k in semantic_rank if k not in keyword_rank)]:
        k_rank = keyword_rank.get(key)
        s_rank, similarity = semantic_rank.get(key, (None, None))
        score = contribution(k_rank, depth) + contribution(s_rank, depth)
        fused.append(Fused(key, score, k_rank, s_rank, similarity))
    return sorted(fused, key=order_key)


def order_key(item: Fused) -> tuple[float, float, float]:
    """The hybrid order: fused score, higher first, then the keyword rank, then the semantic
    rank (a missing rank last). Every item has at least one rank, and no two items share one,
    so the order is total."""
    missing = float("inf")
    return (
        -item.score,
        missing if item.keyword_rank is None else item.keyword_rank,
        missing if item.semantic_rank is None else item.semantic_rank,
    )
