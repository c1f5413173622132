"""The relevance floor of `semantic` and `hybrid` (`lantern.retrieval.floor`): a hit found by
meaning alone is returned only when it is similar enough; the caller may move or remove the
floor, on every surface, and a model without a measured floor has none."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from lantern.api import Lantern
from lantern.errors import InvalidInput
from lantern.retrieval.floor import FLOORS, default_floor, resolve
from lantern.validation import min_similarity
from tests.helpers import CliRun

RECORDS = (
    "Raphael wants one branch per feature.",
    "Build with 'just'.",
    "Ship the manual as a site.",
    "Write the search chapter.",
    "The CI runner was down on Monday.",
    "A failed deploy is rolled back by redeploying the previous tag.",
)


def test_the_default_floor_is_per_model() -> None:
    assert default_floor("all-MiniLM-L6-v2-int8@8199be6f699a") == FLOORS["all-MiniLM-L6-v2-int8"]
    assert default_floor("lantern-hashing-v1-256") is None
    assert default_floor(None) is None
    assert resolve("lantern-hashing-v1-256", 0.3, True) == 0.3
    assert resolve("all-MiniLM-L6-v2-int8@x", None, False) is None
    for bad in (1.5, -2, float("nan"), True, "0.2"):
        with pytest.raises(InvalidInput, match="min_similarity must be a cosine similarity"):
            min_similarity(bad, True)
    with pytest.raises(InvalidInput, match="cannot be given with floor=False"):
        min_similarity(0.2, False)
    assert min_similarity(None, False) is None and min_similarity(1, True) == 1.0


@pytest.fixture
def hashed(lt: Lantern) -> Lantern:
    for content in RECORDS:
        lt.memory.add(kind="fact", scope="user:raphael", content=content)
    lt.evidence.ingest_text("note:branches", "Raphael wants one branch per feature.")
    lt.evidence.ingest_text("note:ci", "The CI runner was down on Monday.")
    lt.embed(model="hashing")
    return lt


def test_a_floor_cuts_what_only_meaning_found_and_keeps_what_words_found(hashed: Lantern) -> None:
    # The hashing model has no measured floor: every record with a vector comes back.
    everything = hashed.memory.search("branch", mode="semantic", model="hashing")
    assert len(everything) == len(RECORDS)
    assert everything[0].record.content == RECORDS[0]
    cut = everything[0].similarity
    assert cut is not None and cut > (everything[1].similarity or 0.0)
    found = hashed.memory.search("branch", mode="semantic", model="hashing", min_similarity=cut)
    assert [match.record.content for match in found] == [RECORDS[0]]
    # In hybrid, a hit the words found stays whatever its similarity; the others must reach it.
    hybrid = hashed.memory.search("deploy branch", mode="hybrid", model="hashing", min_similarity=1)
    assert {match.record.content for match in hybrid} == {RECORDS[0], RECORDS[5]}
    assert all(match.keyword_rank is not None for match in hybrid)
    policy = hashed.memory.search(
        "deploy branch", mode="hybrid", model="hashing", min_similarity=1, order="policy"
    )
    assert {match.record.content for match in policy} == {RECORDS[0], RECORDS[5]}
    # Evidence alike.
    chunks = hashed.evidence.search("branch", mode="semantic", model="hashing")
    assert len(chunks) == 2
    floored = hashed.evidence.search("branch", mode="semantic", model="hashing", min_similarity=cut)
    assert [hit.uri for hit in floored] == ["note:branches"]
    both = hashed.evidence.search("monday", mode="hybrid", model="hashing", min_similarity=1)
    assert [hit.uri for hit in both] == ["note:ci"]


def test_the_floor_on_the_command_line(hashed: Lantern, run_cli: CliRun) -> None:
    search = ("memory", "search", "branch", "--mode", "semantic", "--model", "hashing", "--json")
    result = run_cli(*search, "--min-similarity", "0.3")
    assert result.exit_code == 0, result.output
    assert [match["content"] for match in json.loads(result.stdout)] == [RECORDS[0]]
    result = run_cli(*search, "--no-floor")
    assert result.exit_code == 0 and len(json.loads(result.stdout)) == len(RECORDS)
    hits = run_cli(
        "search",
        "branch",
        "--mode",
        "semantic",
        "--model",
        "hashing",
        "--min-similarity",
        "0.3",
        "--json",
    )
    assert [hit["uri"] for hit in json.loads(hits.stdout)] == ["note:branches"]
    for args in (("--min-similarity", "2"), ("--min-similarity", "0.5", "--no-floor")):
        refused = run_cli(*search, *args)
        assert refused.exit_code == 1
        assert refused.stderr.count("\n") == 1 and "Traceback" not in refused.output
    assert "without --floor" in run_cli(*search, "--min-similarity", "0.5", "--no-floor").stderr


@pytest.fixture(scope="module")
def minilm_store(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    pytest.importorskip("onnxruntime", reason="needs the embed extra")
    path = tmp_path_factory.mktemp("floor") / "lantern.db"
    with Lantern.open(path) as lt:
        for content in RECORDS:
            lt.memory.add(kind="preference", scope="user:raphael", content=content)
        lt.embed(model="minilm")
    yield path


def test_a_prefix_search_is_not_padded_with_unrelated_records(minilm_store: Path) -> None:
    with Lantern.open(minilm_store) as lt:
        found = lt.memory.search("branch*", scope="user:*")
        assert found.summary is not None and found.summary.mode == "hybrid"
        assert [match.record.content for match in found] == [RECORDS[0]]
        unfloored = lt.memory.search("branch*", scope="user:*", floor=False)
        assert len(unfloored) == len(RECORDS)
