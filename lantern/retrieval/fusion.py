"""Score fusion: the keyword and semantic rankings made one, as `hybrid` search does.

The candidates are the first `DEPTH` places of each ranking. Each scores a weighted sum of its
two relevances, each divided by the best of its ranking, so that both lie in [0, 1] whatever
the engine (BM25 on SQLite and in the word index, `ts_rank_cd` on PostgreSQL, a cosine):

    score = SEMANTIC_WEIGHT * similarity / best similarity
          + (1 - SEMANTIC_WEIGHT) * keyword score / best keyword score

A candidate's similarity is its own cosine with the query even where the semantic ranking did
not place it within the depth (the caller computes it from the stored vector); its keyword
score is 0 where the keyword ranking does not hold it. A negative cosine counts as 0.

One exception, for BM25 scores (`lead_for`), puts the keyword ranking's first place first:
when its keyword score is clear of the second's (the second below `CLEAR_LEAD` times the first,
or no second at all), the query holds words that single it out, as an identifier, a name or a
rare term does. Its score is then 1 plus its fused score, the only scores of 1 or more.

Why not reciprocal rank fusion, which Lantern used before: places alone throw away how far
ahead a first place is. On the recall data set, it put the answer first less often than
`semantic` alone, and on a conversational benchmark less often than `any` alone; a keyword
first place that is far ahead of the second is usually right, and a semantic first place a hair
ahead of the next ten is not much of a signal.

The rule was tuned on one half of the recall data set (bench/recall/run.py --half tune: 110
questions, those whose id hashes to an even first byte) and measured on the other, which had
no part in the choice (--half report, 112 questions), with all-MiniLM-L6-v2 (int8):

    half     mode      hit@1  hit@5  MRR
    tune     any       0.445  0.673  0.533
    tune     semantic  0.564  0.900  0.703
    tune     hybrid    0.618  0.945  0.752   (reciprocal rank fusion: 0.545  0.891  0.681)
    report   any       0.420  0.643  0.525
    report   semantic  0.598  0.848  0.706
    report   hybrid    0.589  0.893  0.715   (reciprocal rank fusion: 0.527  0.911  0.670)

On the held-out half, hybrid puts the answer first one question less often than semantic (66
against 67 of 112) and finds it within five more often than either. Near the chosen values the
tune half moves by a question or two: weights 0.85-0.9 and leads 0.5-0.65 tie within one, depth
10 costs one. These are measured choices on one small data set, not laws (docs/search.md).

Those figures are SQLite's (BM25). On PostgreSQL (`ts_rank_cd`), the clear-lead rule is off
(`lead_for`); hybrid then gives 0.582 / 0.900 / 0.718 on the tune half and 0.598 / 0.884 /
0.720 on the report half, where semantic gives 0.564 / 0.900 / 0.703 and 0.598 / 0.848 / 0.706.

Ties (equal fused scores) are broken by the keyword rank, then the semantic rank (a missing
rank last): a total order, since no two items share a rank.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass
from typing import TypeVar

Key = TypeVar("Key", bound=Hashable)

DEPTH = 20
"""Places of each ranking that are candidates for the fused score."""
SEMANTIC_WEIGHT = 0.85
"""The share of the fused score that the similarity carries; the keyword score has the rest."""
CLEAR_LEAD = 0.6
"""The keyword first place comes first when the second's keyword score is below this share of
its own (BM25 scores; see `lead_for`)."""


def lead_for(dialect: str, word_index: bool = False) -> float | None:
    """The clear lead for the keyword scores of a search: `CLEAR_LEAD` for BM25 (SQLite's FTS5,
    the word index on any engine), None (no clear-lead rule) for PostgreSQL's `ts_rank_cd`.

    On PostgreSQL's full-text ranking the rule cost first places on the recall set's tune half
    (hit@1 0.545 with it, 0.582 without), where `any` alone puts 0.300 first against 0.445 on
    SQLite: its first place is less often the answer, however far ahead."""
    if word_index or dialect != "postgresql":
        return CLEAR_LEAD
    return None


@dataclass(frozen=True, slots=True)
class Fused:
    """An item's fused score, its places in the two rankings (None beyond `DEPTH` or absent),
    and its cosine similarity with the query where it is known."""

    key: Hashable
    score: float
    keyword_rank: int | None
    semantic_rank: int | None
    similarity: float | None


def fuse(
    keyword: Sequence[tuple[Key, float]],
    semantic: Sequence[tuple[Key, float]],
    similarities: Mapping[Key, float] | None = None,
    depth: int = DEPTH,
    weight: float = SEMANTIC_WEIGHT,
    lead: float | None = CLEAR_LEAD,
) -> list[Fused]:
    """The hybrid ranking of a keyword ranking (keys with their keyword score, best first, as
    deep as the caller fetched it) and a semantic ranking (keys with their similarity, best
    first); `similarities` holds the cosines of keyword candidates the semantic ranking did
    not place within `depth` (those without a vector have none, and count 0); `lead` is the
    clear lead (`lead_for`), None for no clear-lead rule.

    Every item of the keyword ranking is kept, those beyond the depth with score 0 after the
    fused ones in their keyword order, so that hybrid finds whatever `any` finds; an item of
    the semantic ranking is kept only within the depth. Ranks are reported wherever they are
    known."""
    known: Mapping[Key, float] = similarities or {}
    keyword_rank = {key: rank for rank, (key, _score) in enumerate(keyword, 1)}
    keyword_score = dict(keyword[:depth])
    semantic_rank = {key: (rank, sim) for rank, (key, sim) in enumerate(semantic[:depth], 1)}
    best_keyword = keyword[0][1] if keyword else 0.0
    best_similarity = semantic[0][1] if semantic else 0.0
    clear = None
    if lead is not None and keyword and best_keyword > 0:
        second = keyword[1][1] if len(keyword) > 1 else 0.0
        if second < lead * best_keyword:
            clear = keyword[0][0]
    fused: list[Fused] = []
    candidates = [*keyword_score, *(k for k in semantic_rank if k not in keyword_score)]
    for key in candidates:
        s_rank, similarity = semantic_rank.get(key, (None, known.get(key)))
        score = (1 - weight) * _share(keyword_score.get(key, 0.0), best_keyword)
        score += weight * _share(similarity, best_similarity)
        if key == clear:
            score += 1.0
        fused.append(Fused(key, score, keyword_rank.get(key), s_rank, similarity))
    fused.sort(key=order_key)
    for key, rank in keyword_rank.items():
        if rank > depth:
            fused.append(Fused(key, 0.0, rank, None, known.get(key)))
    return fused


def _share(value: float | None, best: float) -> float:
    """`value` as a share of the best of its ranking, in [0, 1] (0 where either is not
    positive)."""
    if value is None or value <= 0 or best <= 0:
        return 0.0
    return min(value / best, 1.0)


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
