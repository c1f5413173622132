"""The common English words an `any` search leaves out of its query.

When any word may match, a question's function words ("where", "does", "the") match almost
every text and drown the one or two words that say what it is about. BM25 gives such words
little weight but not none, and PostgreSQL's ranking gives them as much as any other, so they
are dropped before the query reaches the engine.

The rule (README, "Ranking"): in an `any` search, a term is left out when it is a single
unquoted word, not a prefix (`word*`), all of whose tokens are in `STOP_WORDS` (so `doesn't`,
which the index reads as `doesn` `t`, is left out too). Quoted phrases and prefixes are kept as
typed. When every term of a query would be left out, none is: `the who` still searches for
both words. `keyword` searches keep every word.

The list is fixed (it changes with a Lantern release, never by configuration) so that the same
query finds the same results on every store. It holds the words that carry grammar rather than
meaning: articles, pronouns, auxiliary and modal verbs, conjunctions, the commonest
prepositions, question words and the pieces contractions leave (`'s`, `n't`...). Words that can
carry the point of a question stay: `not`, `before`, `after`, `now`, `first`, `only`, `other`.
Content words, including ones that are frequent in agent stores such as `user`, are not in it
either: relevance ranking already weighs those by how rare they are. (On the recall data set,
bench/recall, a longer list with those words lost as much as it won.)
"""

from __future__ import annotations

__all__ = ["STOP_WORDS", "is_stop_word"]

_STOP_WORD_TEXT = """
    a an the
    i me my mine myself we us our ours ourselves you your yours yourself yourselves
    he him his himself she her hers herself it its itself they them their theirs themselves
    this that these those
    am is are was were be been being
    have has had having do does did doing done
    will would shall should can could may might must ought
    and or but nor so yet if then than because as until while
    of at by for with about into to from in on
    what which who whom whose when where why how
    s t d ll m re ve o y
    don doesn didn isn aren wasn weren hasn haven hadn won wouldn shan shouldn cannot couldn
    mightn mustn needn ain
"""

STOP_WORDS: frozenset[str] = frozenset(_STOP_WORD_TEXT.split())
"""Lower-case tokens, as the query parser produces them."""


def is_stop_word(token: str) -> bool:
    """Whether a lower-case token is in `STOP_WORDS`."""
    return token in STOP_WORDS
