"""A deterministic provider that needs no model: feature hashing of words and letter trigrams.

It is NOT semantic. Two texts score high when they share words or parts of words ("deploy" and
"deployment"), never because they mean the same thing ("car" and "automobile" score about 0).
It exists so that code and tests that need vectors (storage, ranking, rebuilds) run in
milliseconds without the model, and as a last resort on machines where the model cannot run.

Each text is lowercased (after Unicode NFKC normalisation) and split into words (runs of letters
and digits). Every word adds 1 and every trigram of the word padded with a space on each side
adds 0.5 to one coordinate, chosen with its sign by the first 8 bytes of the feature's BLAKE2b
digest; the sum is scaled to unit length. BLAKE2b, unlike Python's `hash`, is the same in every
process, so the vectors are the same on every machine and run.
"""

from __future__ import annotations

import hashlib
import re
import unicodedata
from collections.abc import Sequence
from typing import TYPE_CHECKING

from lantern.embeddings.provider import checked_texts, require_modules
from lantern.errors import InvalidInput

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import NDArray

DEFAULT_DIMENSION = 256
_WORD = re.compile(r"[^\W_]+")
_WORD_WEIGHT = 1.0
_TRIGRAM_WEIGHT = 0.5


class HashingProvider:
    """Feature-hashed bags of words and letter trigrams: fast, deterministic, not semantic."""

    name = "hashing"

    def __init__(self, dimension: int = DEFAULT_DIMENSION) -> None:
        if not isinstance(dimension, int) or not 2 <= dimension <= 65_536:
            raise InvalidInput(
                f"the hashing provider's dimension must be from 2 to 65536; got {dimension!r}"
            )
        require_modules(self.name, ["numpy"])
        self.dimension = dimension
        # The scheme's version is in the id: a change to the features must change it.
        self.model = f"lantern-hashing-v1-{dimension}"

    def embed(self, texts: Sequence[str]) -> NDArray[np.float32]:
        import numpy as np

        listed = checked_texts(texts)
        matrix = np.zeros((len(listed), self.dimension), dtype=np.float32)
        for row, text in enumerate(listed):
            for feature, weight in _features(text):
                digest = int.from_bytes(hashlib.blake2b(feature, digest_size=8).digest(), "little")
                sign = 1.0 if digest >> 63 == 0 else -1.0
                matrix[row, digest % self.dimension] += sign * weight
        norms = np.linalg.norm(matrix, axis=1, keepdims=True)
        np.divide(matrix, norms, out=matrix, where=norms > 0)
        return matrix


def _features(text: str) -> list[tuple[bytes, float]]:
    """The weighted features of one text, each as the bytes that are hashed."""
    features: list[tuple[bytes, float]] = []
    for word in _WORD.findall(unicodedata.normalize("NFKC", text).lower()):
        features.append((b"w:" + word.encode("utf-8", "surrogatepass"), _WORD_WEIGHT))
        padded = f" {word} "
        for start in range(len(padded) - 2):
            features.append(
                (
                    b"t:" + padded[start : start + 3].encode("utf-8", "surrogatepass"),
                    _TRIGRAM_WEIGHT,
                )
            )
    return features
