"""The relevance floor: where a hit found only by meaning stops being worth returning.

A semantic ranking has no end: every record is somewhat similar to every query, so `semantic`
and `hybrid` used to fill `limit` with whatever came next, however unrelated (a search for
`branch*` that the words answer with one record returned five more, all below 0.17). A hit
that no keyword ranking supports is now returned only when its cosine similarity to the query
reaches the floor; a hit the `any` ranking found is kept whatever its similarity, since its
words match. In `semantic` mode no keyword ranking runs, so the floor applies to every hit.

Cosine similarity has a different scale for each model (the hashing provider gives unrelated
texts about 0 and MiniLM about 0.1 to 0.2), so a default floor is a measured number per model,
`FLOORS`, and a model without one (the hashing provider, a remote model, any other) has no
floor unless the caller sets one: nothing is hidden by a number that was never measured for it.

MiniLM's 0.18 was chosen on half of the recall data set (bench/recall, the 111 questions of
even index): the highest floor, in steps of 0.01, that kept every answer `semantic` and
`hybrid` placed in the first five. On the other half (the 111 questions of odd index, not used
to choose it), hit@1 and hit@5 are unchanged in both modes (semantic 0.532 and 0.865, hybrid
0.514 and 0.874), and a semantic search asked for 20 hits returns 14.6 of them on average.
docs/search.md ("The relevance floor") has the figures.

Callers choose: `min_similarity` sets the floor (a cosine similarity, -1 to 1) for any model,
and `floor=False` turns it off.
"""

from __future__ import annotations

from collections.abc import Mapping

__all__ = ["FLOORS", "default_floor", "keeps", "resolve"]

FLOORS: Mapping[str, float] = {"all-MiniLM-L6-v2-int8": 0.18}
"""Default floors by model name (a model id without its `@version`)."""


def default_floor(model: str | None) -> float | None:
    """The measured floor of a model (its id, `name@version`), or None when it has none."""
    if model is None:
        return None
    return FLOORS.get(model.split("@", 1)[0])


def resolve(model: str | None, min_similarity: float | None, floor: bool) -> float | None:
    """The floor a search applies: the caller's `min_similarity` (checked by
    `lantern.validation.min_similarity`), else the model's default; None when `floor` is False
    or the model has none."""
    if not floor:
        return None
    return min_similarity if min_similarity is not None else default_floor(model)


def keeps(threshold: float | None, similarity: float | None, keyword_rank: int | None) -> bool:
    """Whether a hit stays above the floor: found by words, or similar enough."""
    if threshold is None or keyword_rank is not None:
        return True
    return similarity is not None and similarity >= threshold
