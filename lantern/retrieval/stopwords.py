"""The function words a search leaves out of its query: they neither match nor veto.

A question's function words ("where", "does", "the") match almost every text and drown the one
or two words that say what it is about; in an AND of words (`keyword`) they veto every text
that says the same thing in other words. Negations are function words too: in "which day should
we not release?" the `not` says how to read the answer, not which text holds it, and a text
that happens to contain "not" ("... Canberra, not Sydney.") is no nearer to it; a text that
answers it ("Never release on a Friday") may not contain "not" at all. BM25 gives such words
little weight but not none, and PostgreSQL's ranking gives them as much as any other, so they
are dropped before the query reaches any engine.

The rule (docs/search.md, "Common words"), in every mode (`keyword` and `any`, and so the
`any` side of `hybrid`): a term is left out when it is a single unquoted word, not a prefix
(`word*`), all of whose tokens are in `STOP_WORDS` (so `doesn't`, which the index reads as
`doesn` `t`, is left out too). Quoted phrases and prefixes are kept as typed: `"not"` searches
for the word. When every term of a query would be left out, none is: `the who` still searches
for both words (in `keyword`, every one of them must appear). Semantic search embeds the query
as typed: a model reads negations in context.

The list is fixed (it changes with a Lantern release, never by configuration) so that the same
query finds the same results on every store. It holds the words that carry grammar rather than
meaning: articles, pronouns, auxiliary and modal verbs, conjunctions, the commonest
prepositions, question words, the pieces contractions leave (`'s`, `n't`...), and the
negations `not`, `no` and `never`. Words that can carry the point of a question stay: `before`,
`after`, `now`, `first`, `only`, `other`. Content words, including ones that are frequent in
agent stores such as `user`, are not in it either: relevance ranking already weighs those by how
rare they are. (On the recall data set, bench/recall, a longer list with those words lost as
much as it won.)
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
    not no never
"""

STOP_WORDS: frozenset[str] = frozenset(_STOP_WORD_TEXT.split())
"""Lower-case tokens, as the query parser produces them."""


def is_stop_word(token: str) -> bool:
    """Whether a lower-case token is in `STOP_WORDS`."""
    return token in STOP_WORDS
