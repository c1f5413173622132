"""Which ranking a search runs, and with which embedding provider.

A mode the caller names runs as named: `semantic` and `hybrid` need a provider (chosen as
`lantern.embeddings.registry` says: the caller's, else LANTERN_EMBED_MODEL, else the store's
default, else `minilm`), and a provider whose modules are missing is an error that says what to
install. The default mode is `hybrid` where semantic search can run, and `any` where it cannot:
when the store holds no vector on the side searched (then no provider is even looked up), when
the embed extra is not installed, or when the store holds no vector of the model, so that a
store without vectors searches exactly as before and loads neither numpy nor a model.
Choosing a provider loads nothing (`lantern.embeddings.registry`), and no query is embedded
unless there are vectors to compare it with.

The store's own default provider, and whether its writes embed, are recorded here too
(`configure`): this is the layer that knows both the providers and the store.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from lantern.errors import InvalidInput, MissingDependency
from lantern.retrieval.modes import DEFAULT_MODE, SEMANTIC_MODES, SearchMode
from lantern.semantic.index import any_vectors, has_vectors
from lantern.semantic.sides import MEMORY, Side
from lantern.store import settings
from lantern.store.engine import Store

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import NDArray

    from lantern.embeddings.provider import EmbeddingProvider


@dataclass(frozen=True, slots=True)
class ModePlan:
    """The mode a search runs in, and for `semantic` and `hybrid` its provider and whether
    the store holds any vector of the provider's model on the side searched."""

    mode: SearchMode
    provider: EmbeddingProvider | None = None
    has_vectors: bool = False

    @property
    def model(self) -> str | None:
        return None if self.provider is None else self.provider.model


def plan_mode(
    store: Store, side: Side, requested: SearchMode | None, model: str | None
) -> ModePlan:
    """What a search asked for `requested` (None: the default) with `model` runs as."""
    if model is not None and (not isinstance(model, str) or not model.strip()):
        raise InvalidInput(f"model must be the name of an embedding provider; got {model!r}")
    if requested is not None and requested not in SEMANTIC_MODES:
        return ModePlan(requested)
    if requested is None and not any_vectors(store, side):
        if model is not None:
            _known(model.strip())  # a name given is checked, even where it is not needed
        return ModePlan(SearchMode.ANY)
    try:
        provider = provider_for(store, model)
    except MissingDependency:
        if requested is None:
            return ModePlan(SearchMode.ANY)
        raise
    found = has_vectors(store, side, provider.model)
    if requested is None:
        return ModePlan(DEFAULT_MODE, provider, True) if found else ModePlan(SearchMode.ANY)
    return ModePlan(requested, provider, found)


def prepare(store: Store, side: Side) -> None:
    """Load what a first search by meaning on this side needs beyond a keyword search, so
    that it costs what later ones cost: the code of the semantic modes and, where the store
    holds vectors of its default provider's model, those vectors (`lantern.semantic.index`),
    when that is quick: mapped from the vector index, or read from a store small enough to
    build one. Never the model, nor a call to an embedding service (an embedding server may
    not be up yet, and a model takes memory a keyword-only caller never needs)."""
    from lantern.indexes import place, vectors
    from lantern.semantic.index import load

    if not any_vectors(store, side):
        return
    try:
        model = provider_for(store, None).model
    except (MissingDependency, InvalidInput):
        return  # a provider that is not installed: the first search says so
    directory = vectors.directory_of(store) if side.name == MEMORY.name else None
    if directory is None or not has_vectors(store, side, model):
        return
    indexed = place.current(directory, vectors.name_of(model)) is not None
    if indexed or vectors.count(store, model) <= vectors.AUTO_BUILD_UP_TO:
        load(store, side, model)


def check_model(model: object) -> None:
    """Refuse a model that names no installed provider, even for a search that does not need
    one (a keyword mode, or the default on a store without vectors): bad input is said."""
    if not isinstance(model, str) or not model.strip():
        raise InvalidInput(f"model must be the name of an embedding provider; got {model!r}")
    _known(model.strip())


def configure(
    store: Store,
    *,
    default_model: str | None = None,
    clear_default_model: bool = False,
    on_write: bool | None = None,
) -> settings.EmbeddingSettings:
    """Record the store's default provider (or clear it) and whether writes embed; the settings
    then. What is not given stays as it is.

    A provider named must be registered, and turning embedding on write on needs the provider
    it would use to run here, so that no later write fails for want of a module: both are
    refused before anything is written.
    """
    if default_model is not None and clear_default_model:
        raise InvalidInput("give either a default model or clear it, not both")
    if default_model is not None:
        if not isinstance(default_model, str) or not default_model.strip():
            raise InvalidInput("the default model must be an embedding provider's name")
        default_model = default_model.strip()
        _known(default_model)
    if on_write:
        if clear_default_model:
            from lantern.embeddings.registry import resolve_provider

            resolve_provider()
        else:
            provider_for(store, default_model)
    with store.write() as conn:
        settings.set_embedding_settings(
            conn, default_model=default_model, clear_model=clear_default_model, on_write=on_write
        )
    with store.read() as conn:
        return settings.embedding_settings(conn)


def _known(name: str) -> None:
    from lantern.embeddings.registry import available_providers

    known = available_providers()
    if name not in known:
        available = ", ".join(known) or "none are installed"
        raise InvalidInput(f"unknown embedding provider {name!r}; available: {available}")


def provider_for(store: Store, explicit: str | None) -> EmbeddingProvider:
    """The provider to use in this store: `explicit`, else LANTERN_EMBED_MODEL, else the store's
    default, else `minilm` (the store is read only when the first two are not given)."""
    import os

    from lantern.embeddings.registry import ENV_MODEL, resolve_provider

    stored = None
    if not (explicit and explicit.strip()) and not os.environ.get(ENV_MODEL, "").strip():
        with store.read() as conn:
            stored = settings.embedding_settings(conn).default_model
    return resolve_provider(explicit, stored)


def embed_query(provider: EmbeddingProvider, text: str) -> NDArray[np.float32]:
    """The query's unit vector (zeros for a text the provider has nothing to say about)."""
    from lantern.embeddings.provider import embed_checked

    vector: NDArray[np.float32] = embed_checked(provider, [text])[0]
    return vector
