"""Golden vectors: IDs are part of the store format and must never change."""

from __future__ import annotations

import pytest

from lantern.store.ids import chunk_id, entity_id, memory_id, memory_identity, source_id


@pytest.mark.parametrize(
    ("scope", "kind", "content", "expected"),
    [
        (
            "user:raphael",
            "preference",
            "Raphael prefers separate branches on his repos.",
            "mem_5757c89809963788",
        ),
        ("project:lantern", "task_state", "Step 3 of 5 is done.", "mem_41331dc69a01101d"),
        ("global", "fact", "The sky is blue.", "mem_82e79f42f8fd70a9"),
        ("global", "fact", "  The\tsky \n is   blue. ", "mem_82e79f42f8fd70a9"),
    ],
)
def test_memory_ids(scope: str, kind: str, content: str, expected: str) -> None:
    assert memory_id(scope, kind, content) == expected


def test_memory_identity_and_the_ids_that_follow_a_taken_one() -> None:
    # sha256("global\nfact\nThe sky is blue." [+ "\n1" | "\n2"]), first 16 hex digits.
    assert memory_identity("global", "fact", " The  sky is blue.") == "82e79f42f8fd70a9"
    assert memory_id("global", "fact", "The sky is blue.", 1) == "mem_8d173490f3539c2a"
    assert memory_id("global", "fact", "The sky\tis blue.", 2) == "mem_6ff7c250d67f0191"


def test_memory_id_depends_on_scope_kind_and_content() -> None:
    base = memory_id("s", "fact", "x")
    others = {memory_id("t", "fact", "x"), memory_id("s", "goal", "x"), memory_id("s", "fact", "y")}
    assert base not in others and len(others) == 3


def test_evidence_ids_follow_the_legacy_format() -> None:
    # Computed independently from the format's formulas (sha256 hex digests, first 16 digits).
    assert source_id("notes/a.md") == "src_b33a8099b0121956"
    assert chunk_id("src_b33a8099b0121956", 0, "hello") == "chk_e1c9fae34fca94a2"
    assert entity_id("person", "Raphael") == "ent_b08cfd2e1f033f09"
