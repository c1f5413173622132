"""Providers by name, and which one to use.

Providers are found through the entry-point group `lantern.embedding_providers`: each entry
maps a name to a factory (a class or function called with no arguments that returns an
`EmbeddingProvider`). Lantern registers its own providers there too, in its pyproject.toml, so a
separate package adds one exactly as Lantern does, with no change to Lantern:

    [project.entry-points."lantern.embedding_providers"]
    my-model = "my_package.embeddings:MyProvider"

Which provider is used: the name the caller gives (a command's option), else the environment
variable LANTERN_EMBED_MODEL, else the default recorded in the store (passed in by the caller),
else `minilm`. Names are looked up, never guessed: an unknown one is an error that lists the
known ones. Choosing a provider loads no model and makes no network call; the first `embed`
does.
"""

from __future__ import annotations

import inspect
import os
from functools import cache
from importlib.metadata import EntryPoint, entry_points
from typing import cast

from lantern.embeddings.provider import EmbeddingProvider
from lantern.errors import InvalidInput, MissingDependency

GROUP = "lantern.embedding_providers"
ENV_MODEL = "LANTERN_EMBED_MODEL"
DEFAULT_PROVIDER = "minilm"


@cache
def _registered() -> tuple[EntryPoint, ...]:
    """The group's entry points, read once per process: reading every installed package's
    metadata takes a tenth of a second, more than a search."""
    return tuple(entry_points(group=GROUP))


def available_providers() -> dict[str, EntryPoint]:
    """The registered providers by name, sorted; not loaded.

    The same name registered twice with different targets is refused, rather than letting
    the order of installed packages decide which one a store's vectors come from. Packages
    installed while the process runs are seen by the next process.
    """
    found: dict[str, EntryPoint] = {}
    for entry in _registered():
        known = found.get(entry.name)
        if known is not None and known.value != entry.value:
            first, second = sorted([_origin(known), _origin(entry)])
            raise InvalidInput(
                f"two installed packages register the embedding provider {entry.name!r} "
                f"({first} and {second}); uninstall one"
            )
        found[entry.name] = entry
    return dict(sorted(found.items()))


def provider_name(explicit: str | None = None, store_default: str | None = None) -> str:
    """The name to use: `explicit`, else LANTERN_EMBED_MODEL, else `store_default`, else
    `minilm`. Blank values count as not given."""
    for candidate in (explicit, os.environ.get(ENV_MODEL), store_default):
        if candidate is not None and candidate.strip():
            return candidate.strip()
    return DEFAULT_PROVIDER


def load_provider(name: str) -> EmbeddingProvider:
    """The provider registered as `name`, built by its factory.

    A provider whose module cannot be imported is a `MissingDependency`; Lantern's own providers
    say which extra to install.
    """
    providers = available_providers()
    entry = providers.get(name)
    if entry is None:
        known = ", ".join(providers) or "none are installed"
        raise InvalidInput(f"unknown embedding provider {name!r}; available: {known}")
    try:
        factory = entry.load()
    except ImportError as exc:
        raise MissingDependency(
            f"the embedding provider {name!r} ({entry.value}) cannot be imported: {exc}"
        ) from exc
    provider = factory()
    _check(name, provider)
    return cast(EmbeddingProvider, provider)


def resolve_provider(
    explicit: str | None = None, store_default: str | None = None
) -> EmbeddingProvider:
    """The provider to use, chosen as `provider_name` says."""
    return load_provider(provider_name(explicit, store_default))


def _check(name: str, provider: object) -> None:
    """Refuse a factory's result that cannot stand behind stored vectors.

    Attributes are looked up statically: the remote provider learns its dimension from its
    server, and choosing a provider must not call the network. `embed_checked` checks the
    dimension against what `embed` returns.
    """
    missing = [
        attribute
        for attribute in ("name", "model", "dimension", "embed")
        if _static(provider, attribute) is _ABSENT
    ]
    if missing or not callable(getattr(provider, "embed", None)):
        absent = ", ".join(missing) or "a callable embed"
        raise InvalidInput(f"the embedding provider {name!r} has no {absent}")
    model = getattr(provider, "model", None)
    if not isinstance(model, str) or not model.strip():
        raise InvalidInput(f"the embedding provider {name!r} gives no model id")


_ABSENT = object()


def _static(provider: object, attribute: str) -> object:
    return inspect.getattr_static(provider, attribute, _ABSENT)


def _origin(entry: EntryPoint) -> str:
    dist = entry.dist
    where = f"{dist.name} {dist.version}" if dist is not None else "an unknown package"
    return f"{where}: {entry.value}"
