"""Evidence search through the Python API on every engine: modes, ranking, filters, safety."""

from __future__ import annotations

import re
from itertools import pairwise

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lantern.api import Lantern
from lantern.errors import InvalidInput
from lantern.evidence.records import SearchHit
from tests.helpers import BASE_TIME, HIT_KEYS, Clock

BASE = BASE_TIME  # where the test's clock starts
FILLER = " ".join(f"filler{i}" for i in range(150))

# The list: every one of these finds its document, none raises.
FINDS = [
    ("C++", "doc:cpp", "I write C++ daily"),
    ("don't", "doc:dont", "we don't know yet"),
    ("20.04", "doc:ubuntu", "Ubuntu 20.04 LTS on the build host"),
    ("multi-agent", "doc:agents", "a multi-agent system of planners"),
    ('"unclosed', "doc:quote", "an unclosed quote in the parser"),
    ("AND OR NOT (", "doc:operators", "to be or not to be, and so on"),
]
NOTHING = ["*", ")", "🔥", "", "   ", '""', "\x00", "\ud800", "-", "+*^", "((", ":"]


@pytest.fixture
def corpus(lt: Lantern, clock: Clock) -> Lantern:
    """Three sources ingested at BASE, BASE + 100 and BASE + 200."""
    lt.evidence.ingest_text(
        "doc:lantern-short", "Lantern keeps evidence. Lantern, lantern, lantern!", kind="markdown"
    )
    clock.now += 100
    lt.evidence.ingest_text(
        "doc:lantern-long", f"{FILLER} one lantern here {FILLER}", kind="document"
    )
    clock.now += 100
    lt.evidence.ingest_text("doc:unrelated", "Zebras graze near the river.", kind="log")
    return lt


def uris(hits: list[SearchHit]) -> list[str]:
    return [hit.uri for hit in hits]


def test_hits_carry_provenance_and_a_marked_snippet(corpus: Lantern) -> None:
    hits = corpus.evidence.search("lantern")
    assert uris(hits) == ["doc:lantern-short", "doc:lantern-long"]  # more and denser first
    assert hits[0].score >= hits[1].score > 0
    short = corpus.evidence.get_source("doc:lantern-short")
    assert short.chunks is not None
    chunk = short.chunks[0]
    assert hits[0] == SearchHit(
        chunk_id=chunk.id,
        source_id=short.id,
        uri="doc:lantern-short",
        kind="markdown",
        ordinal=0,
        start_offset=0,
        end_offset=len(chunk.text),
        score=hits[0].score,
        snippet=hits[0].snippet,
        mode="any",
        keyword_rank=1,
        semantic_rank=None,
        similarity=None,
    )
    assert [hit.keyword_rank for hit in hits] == [1, 2]
    assert re.search("«[Ll]antern»", hits[0].snippet)
    long_text = corpus.evidence.get_source("doc:lantern-long").chunks
    assert long_text is not None
    assert "«lantern»" in hits[1].snippet and len(hits[1].snippet) < len(long_text[0].text) / 4
    assert list(hits[0].to_json()) == HIT_KEYS


def test_words_phrases_and_prefixes(corpus: Lantern) -> None:
    def search(query: str) -> list[SearchHit]:
        return corpus.evidence.search(query, mode="keyword")

    assert uris(search("lantern evidence")) == ["doc:lantern-short"]
    assert uris(search('"keeps evidence"')) == ["doc:lantern-short"]
    assert search('"evidence keeps"') == []
    assert search("lant") == []
    assert len(search("lant*")) == 2
    assert uris(search("ZEBRAS")) == ["doc:unrelated"]


def test_any_mode_matches_any_word_but_the_common_ones(corpus: Lantern) -> None:
    def search(query: str, **options: object) -> list[SearchHit]:
        return corpus.evidence.search(query, **options)  # type: ignore[arg-type]

    # Either word is enough; the document holding the rarer one ranks first.
    assert set(uris(search("lantern zebras"))) == {
        "doc:lantern-short",
        "doc:lantern-long",
        "doc:unrelated",
    }
    assert uris(search("lantern zebras", mode="keyword")) == []
    assert uris(search("where do the zebras graze?"))[0] == "doc:unrelated"
    # Common words are left out when there is anything else, kept when there is not.
    assert uris(search("where does the lantern live")) == ["doc:lantern-short", "doc:lantern-long"]
    assert uris(search("the near")) == ["doc:unrelated"]
    assert uris(search('"the river"')) == ["doc:unrelated"]  # a phrase is kept as typed
    assert all(hit.mode == "any" for hit in search("lantern zebras"))
    assert [hit.keyword_rank for hit in search("lantern zebras", limit=2)] == [1, 2]
    assert all(hit.mode == "keyword" for hit in search("lantern", mode="keyword"))
    with pytest.raises(
        InvalidInput, match="mode must be one of keyword, any, semantic, hybrid; got 'fuzzy'"
    ):
        search("lantern", mode="fuzzy")


def test_filters(corpus: Lantern) -> None:
    search = corpus.evidence.search
    assert uris(search("lantern", kind="document")) == ["doc:lantern-long"]
    assert len(search("lantern", kind=["document", "markdown"])) == 2
    assert search("lantern", kind="log") == []
    short_id = corpus.evidence.get_source("doc:lantern-short").id
    assert uris(search("lantern", source=short_id)) == ["doc:lantern-short"]
    assert uris(search("lantern", source="doc:lantern-l")) == ["doc:lantern-long"]
    assert len(search("lantern", source="doc:lantern-")) == 2
    assert len(search("lantern", source=["doc:lantern-l", short_id])) == 2
    assert search("lantern", source="DOC:") == []  # prefixes are case-sensitive
    assert search("lantern", source="doc:lantern-short-but-longer") == []
    assert uris(search("lantern", since=BASE + 50)) == ["doc:lantern-long"]
    assert uris(search("lantern", until=BASE + 100)) == ["doc:lantern-short"]  # until excludes
    assert uris(search("lantern", since=BASE, until=BASE + 101)) == uris(search("lantern"))
    assert search("lantern", since="2027-01-15T08:00:50Z", until=BASE + 100) == []
    assert uris(search("lantern", since="2027-01-15T08:00:50Z")) == ["doc:lantern-long"]


def test_limit_defaults_to_twenty(lt: Lantern) -> None:
    for n in range(25):
        lt.evidence.ingest_text(f"doc:{n:02d}", f"common word number {n}")
    assert len(lt.evidence.search("common")) == 20
    assert len(lt.evidence.search("common", limit=25)) == 25
    assert len(lt.evidence.search("common", limit=3)) == 3
    # Equal scores are ordered by chunk id, so pages are deterministic.
    hits = lt.evidence.search("common word", limit=25)
    assert [h.chunk_id for h in hits] == sorted(h.chunk_id for h in hits)


@pytest.mark.parametrize(("query", "uri", "text"), FINDS)
def test_the_nasty_queries_find_their_documents(
    lt: Lantern, query: str, uri: str, text: str
) -> None:
    for _query, other_uri, other_text in FINDS:
        lt.evidence.ingest_text(other_uri, other_text)
    assert uri in uris(lt.evidence.search(query))


@pytest.mark.parametrize("query", NOTHING)
def test_queries_with_nothing_searchable_return_nothing(corpus: Lantern, query: str) -> None:
    assert corpus.evidence.search(query) == []


def test_huge_queries_are_accepted(corpus: Lantern) -> None:
    assert corpus.evidence.search("x" * 1_000_000) == []
    assert corpus.evidence.search("lantern " * 100_000)[0].uri == "doc:lantern-short"
    assert corpus.evidence.search('"' * 9999) == []


FRAGMENTS = [
    *"\"*():^+-{}[],.'\\!&|<>~@#$%=;/",
    *("AND", "OR", "NOT", "NEAR", "NEAR(", "<->", "<2>", ":*", ":A", "col:", "text:", "!"),
    *(" ", "\t", "\n", "\x00", "\ud800", "🔥", "é", "e\u0301", "C++", "don't", "20.04"),
    *("lantern", "Lantern", "lant", "zebras", "multi-agent", "-5", "a.b", "日本語"),
]
QUERIES = st.lists(st.one_of(st.text(max_size=8), st.sampled_from(FRAGMENTS)), max_size=12).map(
    "".join
)


@settings(
    max_examples=300,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(
    query=QUERIES,
    limit=st.integers(min_value=1, max_value=5),
    mode=st.sampled_from(["keyword", "any"]),
)
def test_generated_queries_never_raise(corpus: Lantern, query: str, limit: int, mode: str) -> None:
    hits = corpus.evidence.search(query, limit=limit, mode=mode)
    assert len(hits) <= limit
    assert all(a.score >= b.score for a, b in pairwise(hits))
    assert [hit.keyword_rank for hit in hits] == list(range(1, len(hits) + 1))


def test_raw_queries_reach_the_engine(corpus: Lantern) -> None:
    either = "lantern | zebras" if corpus.store.dialect == "postgresql" else "lantern OR zebras"
    assert len(corpus.evidence.search(either, raw=True)) == 3
    assert corpus.evidence.search("   ", raw=True) == []
    # A lone backslash: PostgreSQL's message for it does not say "syntax" (its SQLSTATE does).
    for malformed in ("AND (", "lantern &", '"unclosed AND (', "\\"):
        with pytest.raises(InvalidInput, match="the raw query is not valid") as raised:
            corpus.evidence.search(malformed, raw=True)
        assert "\n" not in str(raised.value)
    with pytest.raises(InvalidInput, match="NUL"):
        corpus.evidence.search("a\x00b", raw=True)
    # The same malformed text is just words without --raw.
    assert corpus.evidence.search("AND (", mode="keyword") == []
    # A raw query's mode is the engine's own: keyword.
    assert {hit.mode for hit in corpus.evidence.search(either, raw=True, mode="keyword")} == {
        "keyword"
    }
    with pytest.raises(InvalidInput, match="a raw query goes to the engine as written"):
        corpus.evidence.search(either, raw=True, mode="any")


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"limit": 0}, "limit must be an integer from 1"),
        ({"limit": 10_001}, "limit must be an integer from 1"),
        ({"limit": "5"}, "limit must be an integer"),
        ({"since": "yesterday"}, "since must be unix seconds or an ISO-8601 time"),
        ({"until": 10**20}, "until is out of range"),
        ({"kind": ""}, "kind filter must be non-empty"),
        ({"source": [" "]}, "source filter must be non-empty"),
    ],
)
def test_bad_search_arguments(corpus: Lantern, kwargs: dict[str, object], message: str) -> None:
    with pytest.raises(InvalidInput, match=message):
        corpus.evidence.search("lantern", **kwargs)  # type: ignore[arg-type]
    with pytest.raises(InvalidInput, match="query must be text"):
        corpus.evidence.search(42)  # type: ignore[arg-type]


def test_removed_and_replaced_text_is_no_longer_found(corpus: Lantern) -> None:
    corpus.evidence.remove_source("doc:lantern-short")
    assert uris(corpus.evidence.search("lantern")) == ["doc:lantern-long"]
    corpus.evidence.ingest_text("doc:unrelated", "Now about lanterns and lantern oil.", kind="log")
    assert uris(corpus.evidence.search("zebras")) == []
    assert set(uris(corpus.evidence.search("lantern"))) == {"doc:lantern-long", "doc:unrelated"}
