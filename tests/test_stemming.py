"""Keyword search by English stems: the stemmer the word index shares with FTS5, revision 0012
on stores that hold data, and the rule that function words neither match nor veto."""

from __future__ import annotations

import re
import sqlite3

import pytest
from sqlalchemy import text

from alembic import command
from lantern.api import Lantern
from lantern.indexes import place
from lantern.retrieval.query import parse_query
from lantern.retrieval.stemming import prefix_stem, stem
from lantern.store import migrations
from lantern.store.location import resolve
from tests.helpers import REPO_ROOT

_SUFFIXES = (
    *("", "s", "es", "ies", "sses", "ed", "eed", "ing", "ly", "y", "ness", "ation", "ational"),
    *("ement", "ment", "er", "ize", "izer", "ization", "ful", "fulness", "ity", "iviti", "al"),
    *("alism", "ous", "ive", "able", "ible", "ism", "ate", "ance", "ence", "ical", "icate"),
)
_BASES = (
    *("deploy", "run", "hop", "fail", "agree", "feed", "sky", "happy", "cry", "relate", "tie"),
    *("generous", "bless", "caress", "pony", "size", "fizz", "file", "control", "roll", "ledger"),
)


def _vocabulary() -> list[str]:
    """Every word of the manual, plus endings on common stems: tens of thousands of forms."""
    found: set[str] = {base + suffix for base in _BASES for suffix in _SUFFIXES}
    for page in [REPO_ROOT / "README.md", *(REPO_ROOT / "docs").glob("*.md")]:
        found.update(re.findall(r"[a-z0-9]+", page.read_text(encoding="utf-8").lower()))
    found.update(["naïves", "zürichs", "résumés", "caféing", "straße", "серверы", "日本語"])
    return sorted(found)


def _fts5_stems(words: list[str]) -> dict[str, list[str]]:
    """What FTS5's `porter unicode61` indexes for each word, and what plain `unicode61` does."""
    db = sqlite3.connect(":memory:")
    try:
        found: dict[str, list[str]] = {}
        for tokenizer in ("porter unicode61", "unicode61"):
            db.execute(f"CREATE VIRTUAL TABLE t USING fts5(c, tokenize='{tokenizer}')")
            db.execute("CREATE VIRTUAL TABLE v USING fts5vocab(t, instance)")
            db.executemany("INSERT INTO t (rowid, c) VALUES (?, ?)", enumerate(words, 1))
            terms = {doc: term for term, doc, _col, _offset in db.execute("SELECT * FROM v")}
            for index, word in enumerate(words, 1):
                found.setdefault(word, []).append(terms[index])
            db.execute("DROP TABLE v")
            db.execute("DROP TABLE t")
        return found
    finally:
        db.close()


def test_the_stemmer_is_fts5s_porter() -> None:
    words = _vocabulary()
    assert len(words) > 2_000
    different = {
        word: (stemmed, stem(plain))
        for word, (stemmed, plain) in _fts5_stems(words).items()
        if stem(plain) != stemmed
    }
    assert different == {}


def test_a_prefix_is_looked_up_as_its_own_stem() -> None:
    cases = {"deploy": "deplo", "deploym": "deplo", "configurat": "configur", "branch": "branch"}
    assert {prefix: prefix_stem(prefix) for prefix in cases} == cases
    for prefix in ("release", "ledg", "deadl", "psycop", "clm", "a", "2291"):
        cut = prefix_stem(prefix)
        assert prefix.startswith(cut) and stem(cut) == cut, prefix
    # Every word starting with the prefix has a stem starting with the cut, for these endings.
    for base in ("deploy", "configur", "releas", "branch", "migrat"):
        for word in (base + suffix for suffix in _SUFFIXES):
            assert stem(word).startswith(prefix_stem(base)), (base, word)


# --- revision 0012 on a store that holds data ----------------------------------------------

_RECORDS = (
    "The ledger deadlocks when two transfers lock the same rows.",
    "Canberra is the capital of Australia, not Sydney.",
    "Never release on a Friday.",
    "Secrets live in the vault.",
)
_NOTE = "# Deploys\n\nThe deploy script deployed version 3.1.18 for CLM-2291 from retry.py.\n"


def _at(url: str, revision: str, *, down: bool = False) -> None:
    config = migrations.alembic_config(migrations._Options(location=resolve(url), backup=False))
    (command.downgrade if down else command.upgrade)(config, revision)


def _stored(lt: Lantern) -> dict[str, list[tuple[object, ...]]]:
    with lt.store.read() as conn:
        return {
            "records": [
                tuple(row)
                for row in conn.execute(text("SELECT id, content FROM memory_records ORDER BY id"))
            ],
            "chunks": [
                tuple(row) for row in conn.execute(text("SELECT id, text FROM chunks ORDER BY id"))
            ],
        }


def _indexes(lt: Lantern) -> list[tuple[str, str]]:
    with lt.store.read() as conn:
        rows = conn.execute(
            text(
                "SELECT name, sql FROM sqlite_master WHERE name IN "
                "('memory_fts', 'chunks_fts', 'chunks_ai', 'chunks_ad', 'chunks_au') ORDER BY name"
            )
        )
        return [(name, sql) for name, sql in rows]


def _contents(found: object) -> list[str]:
    return [match.record.content for match in found]  # type: ignore[attr-defined]


def test_0012_stems_a_store_with_data_and_loses_nothing(
    store_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(place.ENV_VAR, "off")  # the database's own indexes answer
    _at(store_url, "0011")
    with Lantern.open(store_url, require_current=False) as lt:
        for content in _RECORDS:
            lt.memory.add(kind="fact", scope="project:x", content=content)
        lt.evidence.ingest_text("file:///notes/deploys.md", _NOTE, kind="markdown")
        forgotten = lt.memory.add(kind="fact", content="The vault code is 4711.")
        lt.memory.forget(forgotten.id)
        before = _stored(lt)
        sqlite = lt.store.dialect == "sqlite"
        ddl = _indexes(lt) if sqlite else []
        if sqlite:  # on PostgreSQL this Lantern's queries name revision 0012's configuration
            assert _contents(lt.memory.search("deadlock", mode="keyword")) == []
    migrations.upgrade(resolve(store_url), backup=False)
    with Lantern.open(store_url) as lt:
        assert _stored(lt) == before
        assert lt.check().healthy, lt.check().problems
        assert _contents(lt.memory.search("deadlock", mode="keyword")) == [_RECORDS[0]]
        assert _contents(lt.memory.search("ledgers deadlocked", mode="any")) == [_RECORDS[0]]
        assert _contents(lt.memory.search("vault", mode="keyword")) == [_RECORDS[3]]
        assert lt.memory.search("4711", mode="keyword") == []
        for query in ("deploying", "deploy*", '"deploy script"', "CLM-2291", "retry.py", "3.1.18"):
            hits = lt.evidence.search(query, mode="keyword")
            assert [hit.uri for hit in hits] == ["file:///notes/deploys.md"], query
        # Writes after the upgrade are indexed by stems too, by the repository and the triggers.
        lt.memory.add(kind="fact", content="Branches are merged by rebasing.")
        lt.evidence.ingest_text("file:///notes/b.md", "We rebased the branch.", kind="markdown")
        assert _contents(lt.memory.search("branch rebase", mode="keyword")) == [
            "Branches are merged by rebasing."
        ]
        assert len(lt.evidence.search("rebasing branches", mode="keyword")) == 1
        after = _stored(lt)
        if lt.store.dialect == "sqlite":
            assert all("porter unicode61" in sql for name, sql in _indexes(lt) if "fts" in name)
    _at(store_url, "0011", down=True)
    with Lantern.open(store_url, require_current=False) as lt:
        assert _stored(lt) == after
        if sqlite:
            assert _contents(lt.memory.search("deadlock", mode="keyword")) == []
            assert _contents(lt.memory.search("deadlocks", mode="keyword")) == [_RECORDS[0]]
            assert _indexes(lt) == ddl
        else:
            with lt.store.read() as conn:
                unstemmed = conn.execute(
                    text(
                        "SELECT bool_and(content_tsv = to_tsvector('simple', content)) "
                        "FROM memory_records"
                    )
                ).scalar()
            assert unstemmed is True


# --- function words --------------------------------------------------------------------------


@pytest.fixture
def negations(lt: Lantern) -> Lantern:
    for content in (
        "Canberra is the capital of Australia, not Sydney.",
        "We release on Tuesdays after the standup.",
        "Never release on a Friday: nobody is around on the weekend.",
        "The ledger deadlock was fixed by ordering the row locks.",
        "Ledger exports run nightly.",
        "A deadlock in the scheduler was a false alarm.",
    ):
        lt.memory.add(kind="fact", content=content)
    return lt


def test_a_negation_neither_matches_nor_vetoes(negations: Lantern) -> None:
    question = "which day should we not release?"
    ranked = _contents(negations.memory.search(question, mode="any"))
    assert "Canberra is the capital of Australia, not Sydney." not in ranked
    assert set(ranked) == {
        "We release on Tuesdays after the standup.",
        "Never release on a Friday: nobody is around on the weekend.",
    }
    # In keyword mode `not` is not required either: the words that remain all must appear.
    assert set(_contents(negations.memory.search("should we not release", mode="keyword"))) == {
        "We release on Tuesdays after the standup.",
        "Never release on a Friday: nobody is around on the weekend.",
    }
    # Quoted, it is searched for.
    assert _contents(negations.memory.search('"not" Sydney', mode="keyword")) == [
        "Canberra is the capital of Australia, not Sydney."
    ]


def test_a_stemmed_word_ranks_its_other_forms_first(negations: Lantern) -> None:
    ranked = _contents(negations.memory.search("ledger deadlocks", mode="any"))
    assert ranked[0] == "The ledger deadlock was fixed by ordering the row locks."


def test_a_query_of_function_words_alone_still_searches(negations: Lantern) -> None:
    parsed = parse_query("not the")
    assert parsed is not None and len(parsed.terms) == 2
    found = _contents(negations.memory.search("not the", mode="keyword"))
    assert found == ["Canberra is the capital of Australia, not Sydney."]
