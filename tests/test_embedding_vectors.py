"""Stored vector bytes and the deterministic nearest-vector ranking."""

from __future__ import annotations

import struct

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lantern.embeddings.vectors import (
    ScoredRow,
    cosine_scores,
    from_blob,
    from_blobs,
    normalise_rows,
    to_blob,
    top_k,
)
from lantern.errors import InvalidInput


def test_a_vector_is_stored_as_little_endian_float32() -> None:
    blob = to_blob([1.0, -2.5, 0.125])
    assert blob == struct.pack("<3f", 1.0, -2.5, 0.125)
    assert blob.hex() == "0000803f000020c00000003e"  # fixed bytes, whatever the machine


def test_a_stored_vector_reads_back_exactly() -> None:
    vector = np.random.default_rng(7).standard_normal(384).astype(np.float32)
    back = from_blob(to_blob(vector), 384)
    assert back.dtype == np.float32 and back.flags.writeable
    assert np.array_equal(back, vector)


def test_blobs_written_by_older_stores_read_as_a_matrix() -> None:
    # The legacy `embeddings.vector` column: dim little-endian float32 values, written by struct.
    blobs = [struct.pack("<4f", *row) for row in ([1, 0, 0, 0], [0.5, 0.5, 0.5, 0.5])]
    matrix = from_blobs(blobs, 4)
    assert matrix.shape == (2, 4) and matrix.dtype == np.float32
    assert matrix.tolist() == [[1, 0, 0, 0], [0.5, 0.5, 0.5, 0.5]]
    assert from_blobs([], 4).shape == (0, 4)


@pytest.mark.parametrize(
    ("blobs", "dim", "message"),
    [
        ([b"\x00" * 12], 4, "stored vector 0 has 12 bytes; 4 float32 values take 16"),
        ([struct.pack("<2f", 1, 2), struct.pack("<2f", 1, float("nan"))], 2, "vector 1 holds"),
        ([b""], 0, "dimension must be a positive integer"),
    ],
)
def test_a_damaged_blob_is_refused(blobs: list[bytes], dim: int, message: str) -> None:
    with pytest.raises(InvalidInput, match=message):
        from_blobs(blobs, dim)


def test_only_finite_rows_are_stored() -> None:
    with pytest.raises(InvalidInput, match="not a finite number"):
        to_blob([1.0, float("inf")])
    with pytest.raises(InvalidInput, match="one non-empty row"):
        to_blob([[1.0, 2.0]])


def test_rows_are_normalised_and_zero_rows_stay_zero() -> None:
    rows = normalise_rows([[3.0, 4.0], [0.0, 0.0]])
    assert rows.dtype == np.float32
    assert rows.tolist() == [[0.6000000238418579, 0.800000011920929], [0.0, 0.0]]


def test_cosine_scores_zero_vectors_as_zero() -> None:
    matrix = np.array([[2.0, 0.0], [0.0, 0.0], [-1.0, 0.0]], dtype=np.float32)
    assert cosine_scores([1.0, 0.0], matrix).tolist() == [1.0, 0.0, -1.0]
    assert cosine_scores([0.0, 0.0], matrix).tolist() == [0.0, 0.0, 0.0]


def test_top_k_orders_by_score_then_position() -> None:
    matrix = np.array(
        [[0.0, 1.0], [1.0, 0.0], [1.0, 1.0], [2.0, 0.0], [1.0, 0.0], [-1.0, 0.0]],
        dtype=np.float32,
    )
    hits = top_k([1.0, 0.0], matrix, 3)
    assert [hit.row for hit in hits] == [1, 3, 4]  # three ties at 1.0, in row order
    assert all(isinstance(hit, ScoredRow) and hit.score == 1.0 for hit in hits)
    assert [hit.row for hit in top_k([1.0, 0.0], matrix, 10)] == [1, 3, 4, 2, 0, 5]


def test_top_k_refuses_bad_arguments() -> None:
    matrix = np.eye(3, dtype=np.float32)
    with pytest.raises(InvalidInput, match="k must be a positive integer"):
        top_k([1.0, 0.0, 0.0], matrix, 0)
    with pytest.raises(InvalidInput, match="cannot compare a 2-dimension query"):
        top_k([1.0, 0.0], matrix, 1)
    assert top_k([1.0, 0.0, 0.0], np.zeros((0, 3), dtype=np.float32), 5) == []


@settings(max_examples=200, deadline=None)
@given(
    rows=st.lists(st.lists(st.integers(-2, 2), min_size=3, max_size=3), min_size=1, max_size=40),
    query=st.lists(st.integers(-2, 2), min_size=3, max_size=3),
    k=st.integers(1, 45),
)
def test_top_k_equals_a_full_stable_sort(rows: list[list[int]], query: list[int], k: int) -> None:
    # Small integer coordinates make many exact ties, the case a partial sort can get wrong.
    matrix = np.array(rows, dtype=np.float32)
    scores = cosine_scores(query, matrix).tolist()
    expected = sorted(range(len(rows)), key=lambda i: (-scores[i], i))[:k]
    assert [hit.row for hit in top_k(query, matrix, k)] == expected
