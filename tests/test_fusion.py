"""The fusion rule of `hybrid` (`lantern.retrieval.fusion`), on hand-made rankings."""

from __future__ import annotations

import pytest

from lantern.retrieval.fusion import (
    CLEAR_LEAD,
    DEPTH,
    SEMANTIC_WEIGHT,
    Fused,
    fuse,
    lead_for,
    order_key,
)


def _keys(fused: list[Fused]) -> list[object]:
    return [item.key for item in fused]


def test_each_relevance_counts_as_a_share_of_the_best_of_its_ranking() -> None:
    # The keyword second is close to the first: no clear lead.
    fused = fuse([("a", 10.0), ("b", 9.0)], [("b", 0.5), ("c", 0.25)], {"a": 0.1})
    by_key = {item.key: item for item in fused}
    assert by_key["a"].score == pytest.approx((1 - SEMANTIC_WEIGHT) + SEMANTIC_WEIGHT * 0.2)
    assert by_key["b"].score == pytest.approx((1 - SEMANTIC_WEIGHT) * 0.9 + SEMANTIC_WEIGHT)
    assert by_key["c"].score == pytest.approx(SEMANTIC_WEIGHT * 0.5)
    assert _keys(fused) == ["b", "c", "a"]
    # Where each came from, and the similarity of a keyword candidate the semantic side missed.
    assert (by_key["a"].keyword_rank, by_key["a"].semantic_rank) == (1, None)
    assert by_key["a"].similarity == pytest.approx(0.1)
    assert (by_key["c"].keyword_rank, by_key["c"].semantic_rank) == (None, 2)


def test_a_keyword_first_place_clear_of_the_second_comes_first() -> None:
    semantic = [("s", 0.6), ("t", 0.59), ("a", 0.3)]
    clear = fuse([("a", 10.0), ("b", 10.0 * CLEAR_LEAD * 0.99)], semantic)
    assert _keys(clear)[0] == "a" and clear[0].score > 1
    assert all(item.score <= 1 for item in clear[1:])
    close = fuse([("a", 10.0), ("b", 10.0 * CLEAR_LEAD)], semantic)
    assert _keys(close)[0] == "s" and all(item.score <= 1 for item in close)
    # A keyword ranking of one match is a clear lead too.
    assert _keys(fuse([("a", 1.0)], semantic))[0] == "a"
    # Without the rule (PostgreSQL's ts_rank_cd), the fused scores alone decide.
    unruled = fuse([("a", 10.0), ("b", 1.0)], semantic, lead=None)
    assert _keys(unruled)[0] == "s" and all(item.score <= 1 for item in unruled)


def test_the_clear_lead_rule_holds_for_bm25_scores_only() -> None:
    assert lead_for("sqlite") == CLEAR_LEAD
    assert lead_for("postgresql") is None
    assert lead_for("postgresql", word_index=True) == CLEAR_LEAD


def test_a_missing_or_negative_similarity_counts_nothing() -> None:
    fused = fuse([("a", 5.0), ("b", 4.0)], [("c", 0.4), ("d", -0.2)], {"b": -0.5})
    by_key = {item.key: item for item in fused}
    assert by_key["a"].score == pytest.approx(1 - SEMANTIC_WEIGHT)
    assert by_key["a"].similarity is None
    assert by_key["b"].score == pytest.approx((1 - SEMANTIC_WEIGHT) * 0.8)
    assert by_key["d"].score == 0.0 and by_key["d"].similarity == pytest.approx(-0.2)
    # No semantic side at all: the keyword order, kept.
    alone = fuse([("a", 5.0), ("b", 4.0), ("c", 4.0)], [])
    assert _keys(alone) == ["a", "b", "c"]


def test_keyword_matches_past_the_depth_follow_with_score_zero() -> None:
    keyword = [(f"k{rank:02}", 100.0 - rank) for rank in range(1, DEPTH + 6)]
    semantic = [(f"s{rank:02}", 0.9 - rank / 100) for rank in range(1, DEPTH + 6)]
    fused = fuse(keyword, semantic)
    tail = fused[-5:]
    assert [item.key for item in tail] == [key for key, _score in keyword[DEPTH:]]
    assert all(item.score == 0 and item.semantic_rank is None for item in tail)
    # Semantic places past the depth are not candidates.
    assert not {key for key, _sim in semantic[DEPTH:]} & set(_keys(fused))
    assert len(fused) == len(keyword) + DEPTH


def test_the_order_is_total_and_ties_go_to_the_keyword_then_the_semantic_place() -> None:
    # a, b and c hold the best keyword score and a similarity of the best: they tie at 1;
    # d and e only have the best similarity: they tie at the semantic weight.
    keyword = [("a", 1.0), ("b", 1.0), ("c", 1.0)]
    semantic = [("d", 0.5), ("c", 0.5), ("e", 0.5)]
    fused = fuse(keyword, semantic, {"a": 0.5, "b": 0.5})
    assert [round(item.score, 12) for item in fused] == [1, 1, 1, SEMANTIC_WEIGHT, SEMANTIC_WEIGHT]
    assert _keys(fused) == ["a", "b", "c", "d", "e"]
    assert fused == sorted(fused, key=order_key)
    assert _keys(fuse(list(reversed(keyword)), semantic, {"a": 0.5, "b": 0.5}))[:3] == [
        "c",
        "b",
        "a",
    ]
