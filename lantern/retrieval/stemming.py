"""English stemming as SQLite FTS5's `porter` tokenizer does it, for the indexes kept outside it.

Keyword search matches words by their stems (docs/search.md, "Stemming"): `deadlocks`,
`deadlocked` and `deadlock` are one word. SQLite indexes stems with FTS5's built-in `porter`
tokenizer around `unicode61`; the word index (`lantern.indexes.words`) must hold exactly the same
stems, or it would rank differently from the database it stands in for. tantivy's own stemmer is
Snowball's English ("Porter2"), which differs from FTS5's original Porter algorithm on many
words (`generously` is `gener` for FTS5 and `generous` for Snowball; `skies` is `ski` and
`sky`), so the word index stems with `stem` here, a transcription of the algorithm FTS5 runs
(sqlite/ext/fts5/fts5_tokenize.c), and a test compares the two over a large vocabulary.

FTS5's version works on a token's UTF-8 bytes, leaves tokens shorter than 3 or longer than 64
bytes as they are, and treats every byte other than `a e i o u` (and `y` after a consonant) as a
consonant; so does this one. PostgreSQL stems with Snowball's English (revision 0012), the
stemmer it ships: there, as for its tokenizer, the differences are documented.

`prefix_stem` is what a `word*` query looks up: the index holds stems, not words, so the typed
prefix is cut back to what every word starting with it keeps of itself once stemmed, as far as
the common endings go (`deploy*` finds `deploy`, `deployed`, `deploys` and `deployment`, stored
as `deploi` and `deploy`).
"""

from __future__ import annotations

import functools
from collections.abc import Callable

__all__ = ["prefix_stem", "stem"]

_MIN_BYTES = 3
_MAX_BYTES = 64
_VOWELS = frozenset("aeiou")


def _is_vowel(char: str, y_is_vowel: bool) -> bool:
    return char in _VOWELS or (y_is_vowel and char == "y")


def _gobble_vc(word: str, previous_consonant: bool) -> int:
    """The length of the word's first vowels-then-consonant run (0: none), as FTS5 counts it."""
    consonant = previous_consonant
    index = 0
    while index < len(word):
        consonant = not _is_vowel(word[index], consonant)
        if not consonant:
            break
        index += 1
    index += 1
    while index < len(word):
        consonant = not _is_vowel(word[index], consonant)
        if consonant:
            return index + 1
        index += 1
    return 0


def _m_gt0(word: str) -> bool:
    return _gobble_vc(word, False) > 0


def _m_gt1(word: str) -> bool:
    first = _gobble_vc(word, False)
    return first > 0 and _gobble_vc(word[first:], True) > 0


def _m_eq1(word: str) -> bool:
    first = _gobble_vc(word, False)
    return first > 0 and _gobble_vc(word[first:], True) == 0


def _o_star(word: str) -> bool:
    """Ends consonant-vowel-consonant, the last not `w`, `x` or `y`."""
    if word[-1] in "wxy":
        return False
    mask = 0
    consonant = False
    for char in word:
        consonant = not _is_vowel(char, consonant)
        mask = (mask << 1) + int(consonant)
    return (mask & 0b111) == 0b101


def _m_gt1_s_or_t(word: str) -> bool:
    return word[-1] in "st" and _m_gt1(word)


def _has_vowel(word: str) -> bool:
    return any(_is_vowel(char, index > 0) for index, char in enumerate(word))


_Rule = tuple[str, Callable[[str], bool] | None, str]
"""(suffix, condition on the rest, replacement), tried in order; the first suffix that ends
the word (and is shorter than it) decides, whether or not its condition holds."""

_STEP_1B2: tuple[_Rule, ...] = (("at", None, "ate"), ("bl", None, "ble"), ("iz", None, "ize"))
_STEP_2: tuple[_Rule, ...] = tuple(
    (suffix, _m_gt0, replacement)
    for suffix, replacement in (
        ("ational", "ate"),
        ("tional", "tion"),
        ("enci", "ence"),
        ("anci", "ance"),
        ("izer", "ize"),
        ("logi", "log"),
        ("bli", "ble"),
        ("alli", "al"),
        ("entli", "ent"),
        ("eli", "e"),
        ("ousli", "ous"),
        ("ization", "ize"),
        ("ation", "ate"),
        ("ator", "ate"),
        ("alism", "al"),
        ("iveness", "ive"),
        ("fulness", "ful"),
        ("ousness", "ous"),
        ("aliti", "al"),
        ("iviti", "ive"),
        ("biliti", "ble"),
    )
)
_STEP_3: tuple[_Rule, ...] = tuple(
    (suffix, _m_gt0, replacement)
    for suffix, replacement in (
        ("ical", "ic"),
        ("ness", ""),
        ("icate", "ic"),
        ("iciti", "ic"),
        ("ful", ""),
        ("ative", ""),
        ("alize", "al"),
    )
)
_STEP_4: tuple[_Rule, ...] = (
    ("al", _m_gt1, ""),
    ("ance", _m_gt1, ""),
    ("ence", _m_gt1, ""),
    ("er", _m_gt1, ""),
    ("ic", _m_gt1, ""),
    ("able", _m_gt1, ""),
    ("ible", _m_gt1, ""),
    ("ant", _m_gt1, ""),
    ("ement", _m_gt1, ""),
    ("ment", _m_gt1, ""),
    ("ent", _m_gt1, ""),
    ("ion", _m_gt1_s_or_t, ""),
    ("ou", _m_gt1, ""),
    ("ism", _m_gt1, ""),
    ("ate", _m_gt1, ""),
    ("iti", _m_gt1, ""),
    ("ous", _m_gt1, ""),
    ("ive", _m_gt1, ""),
    ("ize", _m_gt1, ""),
)


def _apply(word: str, rules: tuple[_Rule, ...]) -> tuple[str, bool]:
    """The word after the first rule whose suffix it ends with; whether that rule applied.

    FTS5 picks the candidates by the word's second-to-last letter, then tries them in order;
    suffixes sharing that letter are listed here in FTS5's order, and suffixes with different
    ones can never both end a word, so trying them all in this order picks the same rule."""
    for suffix, condition, replacement in rules:
        if len(word) > len(suffix) and word.endswith(suffix):
            rest = word[: -len(suffix)]
            if condition is None or condition(rest):
                return rest + replacement, True
            return word, False
    return word, False


def _stem_bytes(word: str) -> str:
    """The stem of a token given as one character per UTF-8 byte."""
    # Step 1a: plurals.
    if word.endswith("s"):
        if word[-2] == "e":
            if (len(word) > 4 and word[-4:-2] == "ss") or (len(word) > 3 and word[-3] == "i"):
                word = word[:-2]
            else:
                word = word[:-1]
        elif word[-2] != "s":
            word = word[:-1]
    # Step 1b: -eed, -ed, -ing, and what removing the last two leaves.
    ending = 3 if word.endswith("ing") else 2 if word.endswith("ed") else 0
    if word.endswith("eed") and len(word) > 3:
        if _m_gt0(word[:-3]):
            word = word[:-1]
    elif ending and len(word) > ending and _has_vowel(word[:-ending]):
        word, restored = _apply(word[:-ending], _STEP_1B2)
        if not restored:
            last = word[-1]
            if len(word) > 1 and last not in "aeioulsz" and last == word[-2]:
                word = word[:-1]
            elif _m_eq1(word) and _o_star(word):
                word += "e"
    # Step 1c: a final y after a vowel somewhere before it.
    if word.endswith("y") and _has_vowel(word[:-1]):
        word = word[:-1] + "i"
    word = _apply(word, _STEP_2)[0]
    word = _apply(word, _STEP_3)[0]
    word = _apply(word, _STEP_4)[0]
    # Step 5a: a final e.
    if word.endswith("e"):
        rest = word[:-1]
        if _m_gt1(rest) or (_m_eq1(rest) and not _o_star(rest)):
            word = rest
    # Step 5b: a final double l.
    if len(word) > 1 and word.endswith("ll") and _m_gt1(word[:-1]):
        word = word[:-1]
    return word


@functools.lru_cache(maxsize=65_536)
def stem(token: str) -> str:
    """The stem FTS5's `porter` tokenizer gives a lower-case token."""
    raw = token.encode("utf-8", "surrogatepass")
    if not _MIN_BYTES <= len(raw) <= _MAX_BYTES:
        return token
    return _stem_bytes(raw.decode("latin-1")).encode("latin-1").decode("utf-8", "replace")


_ENDINGS: tuple[str, ...] = tuple(
    {
        suffix
        for rules in (_STEP_1B2, _STEP_2, _STEP_3, _STEP_4)
        for suffix, _condition, _replacement in rules
    }
    | {"s", "es", "ies", "sses", "eed", "ed", "ing", "y"}
)
_ENDING_STARTS = frozenset(ending[:size] for ending in _ENDINGS for size in range(1, len(ending)))
"""What a word may end with before it goes on into an ending the stemmer removes or changes."""


@functools.lru_cache(maxsize=4_096)
def prefix_stem(prefix: str) -> str:
    """What a `prefix*` query looks up among stems.

    A word that starts with the prefix is stored as its stem, which may end sooner or end
    differently (`deploys` is stored as `deploi`, `deployment` as `deploy`, `configuration` as
    `configur`). So the prefix is cut back: first before a tail that could be the start of an
    ending the stemmer removes (`deploym`, `configurat`), when what is left still has a vowel
    and a consonant after it; then to where the rest and its own stem agree, and further until
    it is its own stem, so that the engine, which stems what it is given, looks up exactly this
    (`deploy*` looks up `deplo`, which `deploi` and `deploy` start with). The cut makes a prefix
    match a little more than the words starting with it, never fewer of the common ones."""
    cut = prefix
    for size in range(min(len(prefix) - 1, max(map(len, _ENDING_STARTS))), 0, -1):
        if prefix[-size:] in _ENDING_STARTS and _m_gt0(prefix[:-size]):
            cut = prefix[:-size]
            break
    stemmed = stem(cut)
    common = 0
    while common < min(len(cut), len(stemmed)) and cut[common] == stemmed[common]:
        common += 1
    cut = cut[: max(common, 1)]
    while len(cut) > 1 and stem(cut) != cut:
        cut = cut[:-1]
    return cut
