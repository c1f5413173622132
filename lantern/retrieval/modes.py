"""Search modes: which ranking a search runs, named the same on every surface.

* `keyword`: every word of the query must appear (AND), ranked by relevance. What every search
  did before modes existed; the choice for exact look-ups (an error code, a ticket id).
* `any`: any of the query's words may appear (OR), after the common English words of
  `lantern.retrieval.stopwords` are dropped, ranked by relevance, so a question asked in
  natural language ranks first what shares its most informative words.

Each hit says which ranking it came from (`mode`), its place in the keyword ranking
(`keyword_rank`), and, for the rankings that embeddings will add, `semantic_rank` and
`similarity` (null until then). Those fields are what a fused ranking needs, so a mode that
merges two ranked lists can be added beside these without changing a hit's shape.
"""

from __future__ import annotations

from enum import StrEnum

__all__ = ["DEFAULT_MODE", "SEARCH_MODES", "SearchMode"]


class SearchMode(StrEnum):
    """The rankings a search can run; each member's value is its name on every surface."""

    KEYWORD = "keyword"
    ANY = "any"


SEARCH_MODES: tuple[str, ...] = tuple(mode.value for mode in SearchMode)
"""The mode names, in the order help texts list them."""

DEFAULT_MODE = SearchMode.ANY
"""The mode of a search that names none: the same for the CLI, the API and the MCP tools."""
