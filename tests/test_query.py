"""Tests for lantern.retrieval.query against a real SQLite FTS5 table and, if reachable, PostgreSQL.

The point of the module is that no user input can make either engine raise, and that literal
text is found literally, so the tests run the generated queries on the real engines rather than
comparing strings.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lantern.retrieval.query import MAX_TERMS, ParsedQuery, Term, _tsquery_operand, parse_query
from lantern.retrieval.stopwords import STOP_WORDS

PG_DSN = "postgresql://postgres@127.0.0.1:5432/test"

# (query, document it must find). Each document also contains some noise so that matching is
# not trivially "any row".
FINDS = [
    ("C++", "I use C++ daily"),
    ("don't", "we don't know"),
    ("20.04", "Ubuntu 20.04 LTS"),
    ("multi-agent", "a multi-agent system"),
    ('"unclosed', "an unclosed quote"),
    ("AND OR NOT (", "to be or not to be, and so on"),
    ("NEAR(a b)", "stay near a tree, plan b"),
    ("a:b", "the ratio a:b is fixed"),
    ("^start", "start here"),
    ("col:term", "col:term in text"),
    ("-x", "x marks the spot"),
    ("+y", "the y axis"),
    ("foo*", "foobar baz"),
    ('"quoted phrase"', "a quoted phrase here"),
    ("über", "Über alles"),
    ("日本語", "日本語 テキスト"),
    ("e-mail*", "send e-mails daily"),
    ('"multi-agent sys"*', "a multi-agent system"),
    ("\x00C++\x07", "I use C++ daily"),
    ("\ud800don't\udfff", "we don't know"),
    ("daily\ud83d\udd25 C++", "I use C++ daily"),
    ('see a.."', 'we see a.." here'),  # PostgreSQL: ".." is a lexeme at the end, not before "
    ("x.com/a/", "go to x.com/a/ now"),
]

NOTHING = ["*", ")", "🔥", "", "   ", "\"\" ''", '""', "\x00", "\ud800", "\x01\x1f\x7f", "-", "+*^"]

NASTY = [query for query, _ in FINDS] + NOTHING + ["x" * 1_000_000, ("a " * 500_000), '"' * 9999]

# Operator syntax of both engines, glued into random text by the property tests.
FRAGMENTS = [
    *"\"*():^+-{}[],.'\\!&|<>~@#$%=;/",
    *("AND", "OR", "NOT", "NEAR", "NEAR(", "<->", "<2>", ":*", ":A", "col:", "x:", "!"),
    *(" ", "  ", "\t", "\n", "\x00", "\ud800", "\udc00", "\ud83d\udd25", "🔥", "é", "e\u0301"),
    *("C++", "don't", "20.04", "e-mail", "foo", "bar", "über", "日本語", "-5", "a.b", "'s"),
]
ANY_CHAR = st.one_of(st.characters(), st.characters(categories=["Cs"]))
NASTY_TEXT = st.lists(
    st.one_of(st.text(ANY_CHAR, max_size=12), st.sampled_from(FRAGMENTS)), max_size=16
).map("".join)
# Text over an alphabet where our tokenizer is exactly FTS5's: a document equal to the query
# must be found by that query.
PLAIN_TEXT = st.lists(
    st.sampled_from([*"aAbé0-.'*\" ", "foo", "Bar", "C++", "20.04", "über", "日本語", "x:y"]),
    max_size=20,
).map("".join)

PROPERTY = settings(
    max_examples=300,
    deadline=None,
    database=None,  # no .hypothesis/ directory in the repository
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)


@pytest.fixture(scope="module")
def fts5() -> Iterator[sqlite3.Connection]:
    db = sqlite3.connect(":memory:")
    db.execute("CREATE VIRTUAL TABLE docs USING fts5(body, tokenize='porter unicode61')")
    documents = dict.fromkeys(doc for _, doc in FINDS)  # each distinct document once
    db.executemany("INSERT INTO docs(body) VALUES (?)", [(doc,) for doc in documents])
    db.executemany(
        "INSERT INTO docs(body) VALUES (?)",
        [("foo bar baz",), ("phrase quoted",), ("foo",), ("near the end",)],
    )
    yield db
    db.close()


def fts5_search(db: sqlite3.Connection, query: ParsedQuery) -> list[str]:
    rows = db.execute("SELECT body FROM docs WHERE docs MATCH ?", (query.to_fts5(),))
    return [body for (body,) in rows]


@pytest.fixture(scope="module")
def pg() -> Iterator[Any]:
    psycopg = pytest.importorskip("psycopg", reason="psycopg is not installed")
    try:
        conn = psycopg.connect(PG_DSN, connect_timeout=3, autocommit=True)
    except psycopg.OperationalError as exc:
        pytest.skip(f"PostgreSQL not reachable at {PG_DSN}: {exc}")
    with conn:
        yield conn


def pg_matches(conn: Any, document: str, query: ParsedQuery) -> bool:
    sql = "SELECT to_tsvector('simple', %s) @@ to_tsquery('simple', %s)"
    row = conn.execute(sql, (document, query.to_tsquery())).fetchone()
    return bool(row[0])


def parsed(text: str) -> ParsedQuery:
    query = parse_query(text)
    assert query is not None
    return query


# --- parsing -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "terms"),
    [
        ("C++", [(("c",), False)]),
        ("don't", [(("don", "t"), False)]),
        ("20.04", [(("20", "04"), False)]),
        ("multi-agent", [(("multi", "agent"), False)]),
        ("e-mail*", [(("e", "mail"), True)]),
        ("AND OR NOT", [(("and",), False), (("or",), False), (("not",), False)]),
        ("NEAR(a b)", [(("near", "a"), False), (("b",), False)]),
        ('"quoted Phrase"', [(("quoted", "phrase"), False)]),
        ('"unclosed phrase', [(("unclosed", "phrase"), False)]),
        ('"foo bar"*', [(("foo", "bar"), True)]),
        ('"foo bar*"', [(("foo", "bar"), True)]),
        ('"foo* bar"', [(("foo", "bar"), False)]),
        ("(foo*)", [(("foo",), True)]),
        ("foo*bar", [(("foo", "bar"), False)]),
        ('p "" q', [(("p",), False), (("q",), False)]),
        ("über ÜBER", [(("über",), False), (("über",), False)]),
        ("cafe\u0301", [(("cafe\u0301",), False)]),
    ],
)
def test_parse(text: str, terms: list[tuple[tuple[str, ...], bool]]) -> None:
    assert parsed(text).terms == tuple(Term(tokens, prefix) for tokens, prefix in terms)


@pytest.mark.parametrize("text", NOTHING)
def test_nothing_to_search_is_none(text: str) -> None:
    assert parse_query(text) is None


def test_rendering() -> None:
    query = parsed("C++ rock'n'roll e-mail* \"it's a\\b\"*")
    assert query.to_fts5() == '"c" "rock n roll" "e mail"* "it s a b"*'
    assert query.to_tsquery() == (
        r"('C++' | 'C') & 'rock''n''roll' & 'e-mail':* & ('it''s' <-> 'a\\b':*)"
    )


def test_any_of_drops_common_words_and_joins_with_or() -> None:
    query = parsed('Where does the user live now? "the who" the* doesn\'t C++')
    relaxed = query.any_of()
    assert relaxed.match_any and not query.match_any
    assert [term.tokens for term in relaxed.terms] == [
        ("user",),
        ("live",),
        ("now",),
        ("the", "who"),  # a quoted phrase is kept as typed
        ("the",),  # so is a prefix
        ("c",),
    ]
    assert relaxed.to_fts5() == '"user" OR "live" OR "now" OR "the who" OR "the"* OR "c"'
    assert relaxed.to_tsquery() == (
        "'user' | 'live' | ('now?' | 'now') | ('the' <-> 'who') | 'the':* | ('C++' | 'C')"
    )
    # Nothing but common words: all of them are kept rather than none.
    only_common = parsed("what is it").any_of()
    assert [term.tokens for term in only_common.terms] == [("what",), ("is",), ("it",)]
    assert only_common.to_fts5() == '"what" OR "is" OR "it"'


def test_the_stop_list_is_lower_case_single_tokens() -> None:
    assert STOP_WORDS and all(word == word.lower() for word in STOP_WORDS)
    assert all(parsed(word).terms[0].tokens == (word,) for word in STOP_WORDS)
    assert {"the", "does", "he", "what", "is", "doesn", "t"} <= STOP_WORDS
    assert not {"user", "live", "home", "deploy", "now", "before", "first"} & STOP_WORDS
    assert {"not", "no", "never"} <= STOP_WORDS  # negations neither match nor veto


def test_function_words_neither_match_nor_veto_in_either_mode() -> None:
    query = parsed("Which day should we not release?")
    assert query.to_fts5() == '"day" "release"'  # keyword: not required
    assert query.any_of().to_fts5() == '"day" OR "release"'  # any: not matched
    assert query.to_tsquery() == "'day' & ('release?' | 'release')"
    # Quoted, or a prefix, a function word is searched for as typed.
    assert parsed('"not" sydney').to_fts5() == '"not" "sydney"'
    assert parsed("not* sydney").to_fts5() == '"not"* "sydney"'
    # A query of nothing else keeps them all: every one is required in `keyword`.
    assert parsed("not the").to_fts5() == '"not" "the"'


def test_a_prefix_is_cut_back_to_what_stems_keep() -> None:
    assert parsed("deploym*").to_fts5() == '"deplo"*'
    assert parsed("deploym*").to_tsquery() == "'deplo':*"
    assert parsed("branch*").to_fts5() == '"branch"*'
    assert parsed('"ledger dead"*').to_fts5() == '"ledger dead"*'
    assert parsed("v2.0*").to_tsquery() == "'v2.0':*"  # not a plain word: PostgreSQL's own


def test_hand_built_terms_render_from_tokens() -> None:
    query = ParsedQuery((Term(("a", 'b"c'), True), Term((), False), Term(("it's",), False)))
    assert query.to_fts5() == '"a b""c"* "it\'s"'
    assert query.to_tsquery() == "('a' <-> 'b\"c':*) & 'it''s'"


def test_limits() -> None:
    many = parsed(" ".join(f"w{i}" for i in range(1000)))
    assert len(many.terms) == MAX_TERMS
    assert many.terms[-1].tokens == (f"w{MAX_TERMS - 1}",)
    assert parse_query("x" * 257) is None
    assert parse_query(f'"a {"x" * 257} b" c') == ParsedQuery((Term(("c",), False),))
    assert parsed("y" * 256).terms[0].tokens == ("y" * 256,)
    assert parse_query("a " * 600 + "late") is not None
    assert "late" not in parsed("a " * 600 + "late").to_fts5()  # past the first 1,024 chars


@pytest.mark.parametrize("text", NASTY)
def test_nasty_output_is_encodable(text: str) -> None:
    query = parse_query(text)
    if query is not None:
        query.to_fts5().encode("utf-8")
        query.to_tsquery().encode("utf-8")
        assert "\x00" not in query.to_fts5() + query.to_tsquery()


# --- SQLite FTS5 ---------------------------------------------------------------------------


@pytest.mark.parametrize(("text", "document"), FINDS)
def test_fts5_finds_literal_text(fts5: sqlite3.Connection, text: str, document: str) -> None:
    assert document in fts5_search(fts5, parsed(text))


@pytest.mark.parametrize("text", NASTY)
def test_fts5_accepts_nasty_input(fts5: sqlite3.Connection, text: str) -> None:
    query = parse_query(text)
    if query is not None:
        fts5_search(fts5, query)


def test_fts5_semantics(fts5: sqlite3.Connection) -> None:
    def search(text: str) -> list[str]:
        return sorted(fts5_search(fts5, parsed(text)))

    assert search('"quoted phrase"') == ["a quoted phrase here"]  # not "phrase quoted"
    assert search("phrase quoted") == ["a quoted phrase here", "phrase quoted"]
    assert search("foo bar") == ["foo bar baz"]  # AND: the row with only "foo" is not found
    assert search("foo") == ["foo", "foo bar baz"]  # no implicit prefix: "foobar" is a word
    assert search("foo*") == ["foo", "foo bar baz", "foobar baz"]
    assert search("NEAR") == ["near the end", "stay near a tree, plan b"]
    assert search("C++ daily") == ["I use C++ daily"]
    assert search("don't know") == ["we don't know"]
    assert search('"don\'t know"') == ["we don't know"]

    def any_of(text: str) -> list[str]:
        return sorted(fts5_search(fts5, parsed(text).any_of()))

    assert any_of("foo daily") == ["I use C++ daily", "foo", "foo bar baz", "send e-mails daily"]
    assert any_of("what is the foo") == ["foo", "foo bar baz"]


@PROPERTY
@given(NASTY_TEXT)
def test_fts5_never_raises(fts5: sqlite3.Connection, text: str) -> None:
    query = parse_query(text)
    if query is not None:
        fts5_search(fts5, query)
        fts5_search(fts5, query.any_of())


@PROPERTY
@given(PLAIN_TEXT)
def test_fts5_text_finds_itself(text: str) -> None:
    query = parse_query(text)
    if query is None:
        return
    db = sqlite3.connect(":memory:")
    db.execute("CREATE VIRTUAL TABLE docs USING fts5(body, tokenize='porter unicode61')")
    db.execute("INSERT INTO docs(body) VALUES (?)", (text,))
    assert fts5_search(db, query), (text, query.to_fts5())


# --- PostgreSQL ----------------------------------------------------------------------------


@pytest.mark.parametrize(("text", "document"), FINDS)
def test_pg_finds_literal_text(pg: Any, text: str, document: str) -> None:
    assert pg_matches(pg, document, parsed(text))


@pytest.mark.parametrize("text", NASTY)
def test_pg_accepts_nasty_input(pg: Any, text: str) -> None:
    query = parse_query(text)
    if query is not None:
        pg.execute("SELECT to_tsquery('simple', %s)", (query.to_tsquery(),))


def test_pg_semantics(pg: Any) -> None:
    assert not pg_matches(pg, "phrase quoted", parsed('"quoted phrase"'))
    assert not pg_matches(pg, "foo only", parsed("foo bar"))
    assert not pg_matches(pg, "foobar", parsed("foo"))
    assert pg_matches(pg, "foobar", parsed("foo*"))
    assert pg_matches(pg, "see example.com now", parsed("example.com"))
    assert pg_matches(pg, "AND OR NOT", parsed("not or and"))
    assert pg_matches(pg, "foo only", parsed("foo bar").any_of())
    assert not pg_matches(pg, "the only", parsed("the foo").any_of())
    assert pg_matches(pg, "the only", parsed("the a").any_of())


@PROPERTY
@given(NASTY_TEXT)
def test_pg_never_raises(pg: Any, text: str) -> None:
    query = parse_query(text)
    if query is not None:
        pg.execute("SELECT to_tsquery('simple', %s)", (query.to_tsquery(),))
        pg.execute("SELECT to_tsquery('simple', %s)", (query.any_of().to_tsquery(),))


@PROPERTY
@given(
    st.text(
        ANY_CHAR.filter(lambda c: c not in "\x00\"'\\") | st.sampled_from("'\\"),
        min_size=1,
        max_size=30,
    )
)
def test_pg_operand_is_the_word(pg: Any, word: str) -> None:
    # Quoting must hand PostgreSQL's parser exactly the user's word: compare with
    # phraseto_tsquery, which parses raw text without any query syntax.
    encodable = word.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")
    sql = "SELECT to_tsquery('simple', %s)::text = phraseto_tsquery('simple', %s)::text"
    row = pg.execute(sql, (_tsquery_operand(encodable), encodable)).fetchone()
    assert row[0], word


@PROPERTY
@given(PLAIN_TEXT)
def test_pg_text_finds_itself(pg: Any, text: str) -> None:
    query = parse_query(text)
    if query is not None:
        assert pg_matches(pg, text, query), (text, query.to_tsquery())
