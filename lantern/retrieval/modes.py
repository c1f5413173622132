"""Search modes: which ranking a search runs, named the same on every surface.

* `keyword`: every word of the query must appear (AND), ranked by relevance. What every search
  did before modes existed; the choice for exact look-ups (an error code, a ticket id). Words
  match by their stems, and function words are left out (`lantern.retrieval.stopwords`), in
  every mode.
* `any`: any of the query's words may appear (OR), after the common English words of
  `lantern.retrieval.stopwords` are dropped, ranked by relevance, so a question asked in
  natural language ranks first what shares its most informative words.
* `semantic`: the nearest neighbours of the query by cosine similarity of embeddings of one
  model, down to the relevance floor (`lantern.retrieval.floor`); what has no vector of that
  model cannot be found, and is counted.
* `hybrid`: the `any` ranking and the `semantic` ranking fused by their relevances
  (`lantern.retrieval.fusion`), so that an exact identifier and a paraphrase both surface.

The default, for every surface, is `hybrid` where semantic search can run, and `any` where it
cannot (no embedding extra, or no vector of the model in the store): a question in natural
language finds its answer without the caller naming a mode. Each hit says which ranking it came
from (`mode`), its place in the keyword ranking (`keyword_rank`), its place in the semantic
ranking (`semantic_rank`) and its cosine similarity (`similarity`), each None where that
ranking did not run or did not reach it.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

__all__ = [
    "DEFAULT_MODE",
    "KEYWORD_MODES",
    "SEARCH_MODES",
    "SEMANTIC_MODES",
    "SearchMode",
    "SearchSummary",
]


class SearchMode(StrEnum):
    """The rankings a search can run; each member's value is its name on every surface."""

    KEYWORD = "keyword"
    ANY = "any"
    SEMANTIC = "semantic"
    HYBRID = "hybrid"


SEARCH_MODES: tuple[str, ...] = tuple(mode.value for mode in SearchMode)
"""The mode names, in the order help texts list them."""

KEYWORD_MODES = frozenset({SearchMode.KEYWORD, SearchMode.ANY})
"""The modes that need no embeddings."""
SEMANTIC_MODES = frozenset({SearchMode.SEMANTIC, SearchMode.HYBRID})
"""The modes that compare vectors."""

DEFAULT_MODE = SearchMode.HYBRID
"""The mode of a search that names none, where semantic search can run (else `any`): the same
for the CLI, the API and the MCP tools."""


@dataclass(frozen=True, slots=True)
class SearchSummary:
    """What a search did, beside its hits: the mode it ran in (the default's `hybrid`, or `any`
    where semantic search could not run), the model whose vectors it compared (None in
    `keyword` and `any`), and how many of the records or chunks it could have returned have no
    vector of that model, so that semantic search could not find them (`without_vector`)."""

    mode: str
    model: str | None = None
    without_vector: int = 0

    def to_json(self) -> dict[str, object]:
        """`{"mode", "model", "without_vector"}`."""
        return {"mode": self.mode, "model": self.model, "without_vector": self.without_vector}
