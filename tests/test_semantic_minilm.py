"""What the default model finds that words cannot: paraphrases sharing no word with their answer
are found by `semantic` and `hybrid` and not by `keyword` or `any`; an exact identifier is
still found first by `hybrid`. On every engine, with all-MiniLM-L6-v2 (the store is embedded
once per engine; the model loads once per process).
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from lantern.api import Lantern
from tests.mcp_helpers import module_store

RECORDS = {
    "home": "Rosa moved into a flat in Campo de Ourique last spring.",
    "allergy": "Rosa is allergic to nuts; never suggest almond dishes.",
    "ticket": "The migration ticket is CLM-2291; its cutover slipped to June.",
    "tea": "Rosa prefers green tea to coffee.",
    "oom": "The dispatch worker was killed with exit code 137.",
    "sister": "Rosa's sister Marta works as a nurse in Porto.",
    "running": "Rosa runs three times a week along the river.",
}
# Questions that share no word with their answer but common ones.
PARAPHRASES = {
    "Which neighbourhood is home these days?": "home",
    "What food could make her ill?": "allergy",
    "What does she drink when she wakes up?": "tea",
    "Who in her family is a caregiver?": "sister",
}
TRANSCRIPT = "\n".join(
    [
        '{"role": "user", "content": "My knee hurts after the long walk yesterday."}',
        '{"role": "assistant", "content": "Rest it and avoid stairs for a few days."}',
    ]
)


@pytest.fixture(scope="module", params=["sqlite", "postgres"])
def store(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[str]:
    yield from module_store(request, tmp_path_factory.mktemp("minilm"))


@pytest.fixture(scope="module")
def ids(store: str) -> dict[str, str]:
    with Lantern.open(store) as lt:
        added = {
            name: lt.memory.add(kind="fact", content=text).id for name, text in RECORDS.items()
        }
        lt.evidence.ingest_text("chat:knee", TRANSCRIPT, kind="transcript")
        lt.evidence.ingest_text("note:other", "The build hosts run Ubuntu 20.04.")
        summary = lt.embed(model="minilm")
        assert summary.model.startswith("all-MiniLM-L6-v2")
    return added


@pytest.fixture
def lt(store: str, ids: dict[str, str]) -> Iterator[Lantern]:
    with Lantern.open(store) as lantern:
        yield lantern


@pytest.mark.parametrize("question", list(PARAPHRASES))
def test_a_paraphrase_is_found_by_meaning_not_by_words(
    lt: Lantern, ids: dict[str, str], question: str
) -> None:
    answer = ids[PARAPHRASES[question]]
    content = RECORDS[PARAPHRASES[question]].lower()
    assert not [word for word in ("neighbourhood", "food", "drink", "family") if word in content]
    assert answer not in [m.record.id for m in lt.memory.search(question, mode="keyword")]
    assert answer not in [m.record.id for m in lt.memory.search(question, mode="any")]
    semantic = lt.memory.search(question, mode="semantic")
    assert semantic[0].record.id == answer
    hybrid = lt.memory.search(question)  # the default: hybrid, since the store has vectors
    assert hybrid.summary is not None and hybrid.summary.mode == "hybrid"
    assert hybrid[0].record.id == answer


def test_an_exact_identifier_comes_first_in_hybrid(lt: Lantern, ids: dict[str, str]) -> None:
    for query, name in (("CLM-2291", "ticket"), ("exit code 137", "oom")):
        found = lt.memory.search(query)
        assert found[0].record.id == ids[name]
        assert found[0].keyword_rank == 1


def test_a_transcript_chunk_is_found_by_what_it_means(lt: Lantern) -> None:
    question = "injury from hiking"
    assert lt.evidence.search(question, mode="keyword") == []
    hits = lt.evidence.search(question)
    assert hits.summary is not None and hits.summary.mode == "hybrid"
    assert hits[0].uri == "chat:knee" and hits[0].semantic_rank == 1
