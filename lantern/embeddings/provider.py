"""What an embedding provider is, and the checks that every provider shares.

A provider turns texts into vectors. Three facts travel with every vector it makes: its
registry `name` (what a user types to choose it), its `model` (the id stored beside each
vector: vectors of different models are never compared, so the id must change whenever the
vectors would) and its `dimension`.

`embed` returns a float32 matrix with one row per text, in order, each row of unit length, so
that a dot product is a cosine. A provider may return a row of zeros for a text it has nothing to
say about (the hashing provider for a text with no words, the remote provider for an empty
text); such a row scores 0 against everything.
"""

from __future__ import annotations

from collections.abc import Sequence
from importlib.util import find_spec
from typing import TYPE_CHECKING, Protocol, runtime_checkable

from lantern.errors import EmbeddingFailed, InvalidInput, MissingDependency, install_hint

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import NDArray


@runtime_checkable
class EmbeddingProvider(Protocol):
    """Turns texts into unit-length float32 vectors of one model."""

    @property
    def name(self) -> str:
        """The registry name, as a user chooses the provider (`minilm`)."""
        ...

    @property
    def model(self) -> str:
        """The id recorded beside every vector; equal ids mean comparable vectors."""
        ...

    @property
    def dimension(self) -> int:
        """The length of every vector."""
        ...

    def embed(self, texts: Sequence[str]) -> NDArray[np.float32]:
        """A (len(texts), dimension) float32 matrix, rows in the order of `texts`."""
        ...


def embed_checked(provider: EmbeddingProvider, texts: Sequence[str]) -> NDArray[np.float32]:
    """`provider.embed(texts)`, refused unless it keeps the contract: a float32 matrix of
    len(texts) rows of `provider.dimension` finite values, each of unit length or all zeros.

    Lantern's providers keep it by construction; this is the gate for vectors about to be
    stored, whichever package made them.
    """
    import numpy as np

    listed = checked_texts(texts)
    matrix = provider.embed(listed)
    where = f"the embedding provider {provider.name!r} ({provider.model})"
    if not isinstance(matrix, np.ndarray) or matrix.dtype != np.float32:
        raise EmbeddingFailed(f"{where} did not return a float32 numpy array")
    expected = (len(listed), provider.dimension)
    if matrix.shape != expected:
        raise EmbeddingFailed(f"{where} returned shape {matrix.shape}; expected {expected}")
    if not np.isfinite(matrix).all():
        raise EmbeddingFailed(f"{where} returned a value that is not a finite number")
    norms = np.linalg.norm(matrix, axis=1)
    if not np.all((np.abs(norms - 1.0) <= 1e-3) | (norms == 0.0)):
        raise EmbeddingFailed(f"{where} returned vectors that are not of unit length")
    return matrix


def checked_texts(texts: Sequence[str]) -> list[str]:
    """`texts` as a list, refusing a bare string (which would be embedded letter by letter)."""
    if isinstance(texts, str | bytes):
        raise InvalidInput("embed takes a list of texts, not a single string")
    listed = list(texts)
    for position, text in enumerate(listed):
        if not isinstance(text, str):
            raise InvalidInput(f"text {position} to embed is a {type(text).__name__}, not a string")
    return listed


def require_modules(provider: str, modules: Sequence[str], hint: str | None = None) -> None:
    """Refuse to build `provider` when one of its modules is not installed.

    Looks the modules up without importing them, so that choosing a provider stays quick and a
    missing extra is reported before any work starts rather than halfway through it. `hint`
    says how to install them; by default, Lantern's `embed` extra (`install_hint`).
    """
    for module in modules:
        try:
            found = find_spec(module) is not None
        except (ImportError, ValueError):
            found = False
        if not found:
            raise missing_module(provider, module, hint)


def missing_module(
    provider: str, module: str, hint: str | None = None, cause: ImportError | None = None
) -> MissingDependency:
    """The one-line error for a module that a provider needs and cannot import: absent, or
    (with `cause`) present but broken."""
    state = "which is not installed" if cause is None else f"which cannot be imported ({cause})"
    return MissingDependency(
        f"the {provider} embedding provider needs the Python module {module!r}, {state}: "
        f"{hint or install_hint('embed')}"
    )
