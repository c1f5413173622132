"""Vectors as stored bytes, and the nearest ones by cosine.

The byte format is the one older Lantern stores already hold in their `embeddings` table
(`model TEXT, dim INTEGER, vector BLOB`): `dim` float32 values, little-endian, nothing else. It
is the same on every machine, so a store moves between them.

Ranking is deterministic: scores are cosines computed in float32, higher first, and equal scores
keep the order of the rows (the lower position first), so the same store and query give the same
hits in the same order every time.

numpy is imported when a function runs, not when this module loads.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, NamedTuple

from lantern.errors import InvalidInput

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import ArrayLike, NDArray

_FLOAT32_LE = "<f4"


class ScoredRow(NamedTuple):
    """A row of the matrix searched (its position) and its cosine with the query."""

    row: int
    score: float


def to_blob(vector: ArrayLike) -> bytes:
    """The stored form of one vector: its values as little-endian float32 bytes."""
    import numpy as np

    array = np.asarray(vector, dtype=np.float32)
    if array.ndim != 1 or array.size == 0:
        raise InvalidInput(f"a vector to store must be one non-empty row; got shape {array.shape}")
    if not np.isfinite(array).all():
        raise InvalidInput("a vector to store holds a value that is not a finite number")
    return array.astype(_FLOAT32_LE, copy=False).tobytes()


def from_blob(blob: bytes, dim: int) -> NDArray[np.float32]:
    """One stored vector back as a float32 array of length `dim`."""
    vector: NDArray[np.float32] = from_blobs([blob], dim)[0]
    return vector


def from_blobs(blobs: Iterable[bytes], dim: int) -> NDArray[np.float32]:
    """Stored vectors of one dimension as a (n, dim) float32 matrix, in the order given.

    Refuses a blob of the wrong length or one that holds NaN or infinity, rather than letting it
    rank anywhere.
    """
    import numpy as np

    if not isinstance(dim, int) or dim <= 0:
        raise InvalidInput(f"a vector dimension must be a positive integer; got {dim!r}")
    expected = 4 * dim
    parts = []
    for position, blob in enumerate(blobs):
        if len(blob) != expected:
            raise InvalidInput(
                f"stored vector {position} has {len(blob)} bytes; {dim} float32 values "
                f"take {expected}"
            )
        parts.append(bytes(blob))
    matrix = np.frombuffer(b"".join(parts), dtype=_FLOAT32_LE).reshape(len(parts), dim)
    if not np.isfinite(matrix).all():
        bad = int(np.flatnonzero(~np.isfinite(matrix).all(axis=1))[0])
        raise InvalidInput(f"stored vector {bad} holds a value that is not a finite number")
    return matrix.astype(np.float32)  # native byte order, writable


def normalise_rows(matrix: ArrayLike) -> NDArray[np.float32]:
    """Rows scaled to unit length (float32); a row of zeros stays zeros."""
    import numpy as np

    array = np.array(matrix, dtype=np.float32, ndmin=2)
    norms = np.linalg.norm(array, axis=1, keepdims=True)
    np.divide(array, norms, out=array, where=norms > 0)
    return array


def cosine_scores(query: ArrayLike, matrix: ArrayLike) -> NDArray[np.float32]:
    """The cosine of `query` with every row of `matrix`; 0 where either is all zeros."""
    import numpy as np

    q = np.asarray(query, dtype=np.float32)
    rows = np.asarray(matrix, dtype=np.float32)
    if q.ndim != 1:
        raise InvalidInput(f"a query vector must be one row; got shape {q.shape}")
    if rows.ndim != 2 or rows.shape[1] != q.shape[0]:
        raise InvalidInput(
            f"cannot compare a {q.shape[0]}-dimension query with vectors of shape {rows.shape}"
        )
    q_norm = np.float32(np.linalg.norm(q))
    norms = np.linalg.norm(rows, axis=1) * q_norm
    dots = rows @ q
    scores: NDArray[np.float32] = np.zeros(rows.shape[0], dtype=np.float32)
    np.divide(dots, norms, out=scores, where=norms > 0)
    return scores


def top_k(query: ArrayLike, matrix: ArrayLike, k: int) -> list[ScoredRow]:
    """The `k` rows nearest to `query` by cosine, best first; ties keep row order.

    Selects with a partial sort, then orders the few kept rows fully, so a search over many
    rows costs about one pass; rows that tie with the k-th score are all considered before the
    cut so the lower positions win the tie, as a full sort would decide.
    """
    import numpy as np

    if not isinstance(k, int) or k <= 0:
        raise InvalidInput(f"k must be a positive integer; got {k!r}")
    scores = cosine_scores(query, matrix)
    n = scores.shape[0]
    if n == 0:
        return []
    candidates: NDArray[Any]
    if k < n:
        kth = np.partition(scores, n - k)[n - k]
        candidates = np.flatnonzero(scores >= kth)
    else:
        candidates = np.arange(n)
    order = np.lexsort((candidates, -scores[candidates]))[:k]
    return [ScoredRow(int(candidates[i]), float(scores[candidates[i]])) for i in order]
