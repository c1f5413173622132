"""Turn whatever a user types into a safe keyword query for SQLite FTS5 and PostgreSQL.

Query syntax
------------
Lantern's search box is deliberately simple, and no input is ever an error:

* **Words.** Each word must appear in the document: all words are required (AND). Case does
  not matter, and a word matches its other English forms: it is matched by its stem
  (``deadlocks`` finds "deadlock", see ``lantern.retrieval.stemming``). (An ``any`` search,
  :meth:`ParsedQuery.any_of`, matches documents holding any of them instead.)
* **Function words.** A word that only carries grammar (``the``, ``which``, ``should``) or
  negates (``not``, ``never``) neither matches nor vetoes: it is left out of the query,
  whatever the mode, unless it is quoted, a prefix, or every word of the query is one (see
  ``lantern.retrieval.stopwords``).
* **"Quoted phrases."** Words inside double quotes must appear next to each other, in that
  order. A quote left open (``"unclosed``) is closed at the end of the query. Empty quotes are
  ignored.
* **Prefixes.** ``word*`` matches any word starting with ``word``. ``"quoted phra"*`` (or
  ``"quoted phra*"``) makes the last word of a phrase a prefix. A ``*`` anywhere else is
  ignored. The indexes hold stems, so a prefix is looked up as
  ``lantern.retrieval.stemming.prefix_stem`` cuts it back (``deploym*`` looks up ``deplo``):
  it may match a few more words than those starting with it.
* **Everything else is literal text.** ``AND``, ``OR``, ``NOT`` and ``NEAR`` are ordinary words;
  parentheses, colons, ``^``, ``+``, ``-`` and other punctuation have no special meaning.
* **Words are split the way the index splits them.** A word is cut into tokens at every
  character that is not a letter, digit or combining mark (the rules of SQLite's default
  ``unicode61`` tokenizer). A word that falls apart into several tokens is searched as a phrase:
  ``C++`` finds ``c``, ``don't`` finds "don t", ``20.04`` finds "20 04", ``multi-agent`` finds
  "multi agent", and ``e-mail*`` finds "e" followed by a word starting with "mail".
* **Symbols and emoji are not searchable**, and Chinese/Japanese text is not split into words:
  ``日本語`` finds the token 日本語 when it stands alone, not inside a longer run of CJK text.
* **Nothing to search.** A query without a single letter or digit (empty, blank, ``*``, ``)``,
  ``🔥``) is no query at all: the search returns no results.
* **Limits.** Only the first 1,024 characters of a query are read and only the first 64 terms
  (words or phrases) are used; a word longer than 256 characters is ignored together with the
  phrase containing it. NUL and other control characters count as spaces, and unpaired UTF-16
  surrogates become U+FFFD, so any Python string is accepted.

How it stays safe
-----------------
FTS5 and ``to_tsquery`` both have an operator language (``OR``, ``NOT``, ``NEAR``, ``col:``,
``^``, ``!``, ``|``, ``<->``...) and both raise on malformed input. Instead of escaping that
language piece by piece, every term is emitted as a quoted string, which neither engine
interprets: FTS5 gets ``"c" "don t" "e mail"*`` and PostgreSQL gets
``('C++' | 'C') & 'don''t' & 'e-mail':*``. Inside quotes both engines only run their own
tokenizer, so the worst a strange character can do is vanish.

PostgreSQL's default parser does not split text like ``unicode61``: it keeps ``20.04``,
``example.com``, ``/usr/bin`` or ``-5`` as one lexeme. So :meth:`ParsedQuery.to_tsquery` hands
PostgreSQL the user's own words (each quoted, phrase words joined with ``<->``) and lets it
tokenize them exactly as it tokenized the documents, rather than our ``unicode61``-style tokens,
which would never match such lexemes. Its parser also reads punctuation by what follows it
(``a..`` at the end of a text holds the lexeme ``..``; followed by a quote it does not), so a
term's last word is also offered without its trailing punctuation.
"""

from __future__ import annotations

import unicodedata
from dataclasses import dataclass, field, replace

from lantern.retrieval.stemming import prefix_stem
from lantern.retrieval.stopwords import is_stop_word

__all__ = [
    "MAX_QUERY_CHARS",
    "MAX_TERMS",
    "MAX_WORD_CHARS",
    "ParsedQuery",
    "Term",
    "parse_query",
]

MAX_QUERY_CHARS = 1024
"""Characters of user input read; the rest is ignored (bounds work on pasted megabytes)."""

MAX_TERMS = 64
"""Terms kept; an AND of more words is almost never what anyone meant and only costs time."""

MAX_WORD_CHARS = 256
"""Longer words are ignored. 256 characters are at most 1,024 UTF-8 bytes, safely below the
2,047-byte word limit of PostgreSQL, which would otherwise silently drop the word from the AND
(a broader query than the one typed) while FTS5 would keep it."""

# C0 and C1 control characters (including NUL, which FTS5 reads as the end of the query and
# psycopg refuses to send) become spaces.
_CONTROLS_TO_SPACE = {code: " " for code in [*range(0x20), *range(0x7F, 0xA0)]}


@dataclass(frozen=True, slots=True)
class Term:
    """One required term: a single token, or a phrase of adjacent tokens.

    ``words`` are the user's words behind the tokens (punctuation included), kept so that
    PostgreSQL can tokenize them with its own parser. They are a rendering detail, not part of
    the term's identity: ``Term(("c",), False) == parse_query("C++").terms[0]``. A term built by
    hand without words is rendered from its tokens.
    """

    tokens: tuple[str, ...]
    """Lower-cased tokens; more than one means a phrase."""
    prefix: bool
    """The last token matches as a prefix."""
    words: tuple[str, ...] = field(default=(), compare=False)
    """The user's words that produced ``tokens``, for :meth:`ParsedQuery.to_tsquery`."""
    quoted: bool = field(default=False, compare=False)
    """Typed inside double quotes: an ``any`` search keeps it even if it is common words."""

    @property
    def indexed_tokens(self) -> tuple[str, ...]:
        """The tokens to hand an index that stems: a prefix's last token cut back by
        `prefix_stem` (the engines stem every token, and the cut is its own stem)."""
        if not self.prefix or not self.tokens:
            return self.tokens
        return (*self.tokens[:-1], prefix_stem(self.tokens[-1]))

    @property
    def is_stop_word(self) -> bool:
        """A lone unquoted word, not a prefix, whose tokens are all common words."""
        return (
            not self.quoted
            and not self.prefix
            and len(self.words) <= 1
            and all(is_stop_word(token) for token in self.tokens)
        )


@dataclass(frozen=True, slots=True)
class ParsedQuery:
    """A non-empty AND of terms (an OR when ``match_any``), renderable for each search engine."""

    terms: tuple[Term, ...]
    match_any: bool = False
    """A document matches when it holds any of the terms rather than all of them."""

    def any_of(self) -> ParsedQuery:
        """This query for an ``any`` search: any term matches (function words are already
        left out by `parse_query`)."""
        return replace(self, terms=_content_terms(self.terms), match_any=True)

    def to_fts5(self) -> str:
        """Render for ``... MATCH ?`` in SQLite FTS5, e.g. ``"c" "don t" "e mail"*``.

        Every term is one double-quoted FTS5 string, so nothing in it is an operator or a
        column filter; terms separated by spaces are AND-ed by FTS5 (implicit AND), or joined
        by ``OR`` for an ``any`` query. FTS5 re-tokenizes the string with the table's
        tokenizer, so its options (such as ``remove_diacritics``) apply to the query as they
        did to the documents.
        """
        return (" OR " if self.match_any else " ").join(
            '"'
            + " ".join(term.indexed_tokens).replace('"', '""')
            + '"'
            + ("*" if term.prefix else "")
            for term in self.terms
            if term.tokens
        )

    def to_tsquery(self) -> str:
        """Render for PostgreSQL ``to_tsquery(config, ...)``, e.g. ``'don''t' & 'e-mail':*``.

        Every word is a quoted operand (``'`` doubled, ``\\`` escaped), the one form in which
        ``to_tsquery`` treats ``& | ! ( ) : <->`` as plain text. PostgreSQL runs its parser on
        each operand and joins the lexemes of a word with ``<->`` itself; the words of a phrase
        are joined with ``<->`` here, a prefix gets ``:*`` and terms are joined with ``&``
        (``|`` for an ``any`` query).
        """
        rendered = []
        for term in self.terms:
            # An empty operand ('') is a syntax error in to_tsquery; parse_query makes none.
            words = [word for word in term.words or term.tokens if word]
            if not words:
                continue
            if term.prefix and words[-1].isalpha() and words[-1].lower() == term.tokens[-1]:
                words[-1] = term.indexed_tokens[-1]  # cut back as for FTS5 (`prefix_stem`)
            operands = [_tsquery_operand(word) for word in words]
            if term.prefix:
                operands[-1] += ":*"
            elif (bare := words[-1][: _tokenize(words[-1])[1]]) != words[-1]:
                # PostgreSQL reads punctuation after a term by what follows it: ".." at the
                # end of the text is a lexeme, before a quote it is nothing. The query's text
                # ends there, the document's may not, so either reading matches.
                operands[-1] = f"({operands[-1]} | {_tsquery_operand(bare)})"
            phrase = " <-> ".join(operands)
            rendered.append(f"({phrase})" if len(operands) > 1 else phrase)
        return (" | " if self.match_any else " & ").join(rendered)


def parse_query(text: str) -> ParsedQuery | None:
    """Parse user input into terms, or return None when there is nothing to search.

    Never raises for any ``str``: see the module docstring for the syntax and limits.
    """
    segments = _sanitize(text).split('"')
    terms: list[Term] = []
    # Segments alternate: outside quotes, inside quotes, outside... An odd number of quotes
    # leaves the last segment inside quotes, which closes an unclosed quote at the end.
    for index, segment in enumerate(segments):
        if index % 2:
            # A "*" right after the closing quote makes the phrase's last token a prefix.
            closing_star = index + 1 < len(segments) and segments[index + 1].startswith("*")
            term = _make_term(segment.split(), closing_star, quoted=True)
            candidates = [term] if term else []
        else:
            candidates = [term for word in segment.split() if (term := _make_term([word], False))]
        terms.extend(candidates)
        if len(terms) >= MAX_TERMS:
            break
    return ParsedQuery(_content_terms(tuple(terms[:MAX_TERMS]))) if terms else None


def _content_terms(terms: tuple[Term, ...]) -> tuple[Term, ...]:
    """The terms without the function words (`Term.is_stop_word`); all of them when every
    term is one, so that a query of common words still searches for them."""
    return tuple(term for term in terms if not term.is_stop_word) or terms


def _sanitize(text: str) -> str:
    """Truncate, and make the text encodable and free of control characters.

    The UTF-16 round trip joins surrogate pairs that arrived as two code points (as JSON
    escapes can produce) and replaces lone surrogates with U+FFFD, which sqlite3 and psycopg
    could not encode otherwise.
    """
    utf16 = text[:MAX_QUERY_CHARS].encode("utf-16-le", "surrogatepass")
    return utf16.decode("utf-16-le", "replace").translate(_CONTROLS_TO_SPACE)


def _make_term(words: list[str], closing_star: bool, *, quoted: bool = False) -> Term | None:
    """Build one term (a word, or a quoted phrase of words); None if it has no token."""
    tokens: list[str] = []
    kept: list[str] = []
    prefix = False
    for word in words:
        if len(word) > MAX_WORD_CHARS:
            return None  # dropping only the word would make the phrase match non-adjacent text
        word_tokens, end = _tokenize(word)
        if not word_tokens:
            continue  # pure punctuation: neither engine indexes it, and it must not break <->
        tokens += word_tokens
        prefix = word[end : end + 1] == "*"
        # The prefix ends at the "*": what follows it must not reach PostgreSQL's parser.
        kept.append(word[:end] if prefix else word)
    if not tokens:
        return None
    if closing_star and not prefix:
        prefix = True
        kept[-1] = kept[-1][: _tokenize(kept[-1])[1]]
    return Term(tuple(tokens), prefix, tuple(kept), quoted)


def _tokenize(word: str) -> tuple[list[str], int]:
    """Split a word like FTS5 ``unicode61`` does; return the tokens and the end of the last one.

    Token characters are letters, digits, combining marks, private-use and unassigned code
    points: measured against SQLite 3.40 for every code point, FTS5 treats all of those as
    token characters (it even keeps many marks and every code point its older Unicode table
    does not know). Where the two still disagree (symbols and marks of recent Unicode versions)
    it is mostly harmless because FTS5 re-tokenizes each quoted term: a token we keep whole
    that FTS5 splits still matches as a phrase.
    """
    tokens: list[str] = []
    start = -1
    end = 0
    for index, char in enumerate(word):
        category = unicodedata.category(char)
        if category[0] in "LNM" or category in ("Co", "Cn"):
            if start < 0:
                start = index
        elif start >= 0:
            tokens.append(word[start:index].lower())
            start, end = -1, index
    if start >= 0:
        tokens.append(word[start:].lower())
        end = len(word)
    return tokens, end


def _tsquery_operand(word: str) -> str:
    """Quote a word as a ``to_tsquery`` operand: backslash and quote are the escapes there."""
    return "'" + word.replace("\\", "\\\\").replace("'", "''") + "'"
