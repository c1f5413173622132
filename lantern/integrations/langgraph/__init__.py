"""Lantern as a LangGraph store: `LanternStore`, a `langgraph.store.base.BaseStore`.

    from lantern.integrations.langgraph import LanternStore

    graph = builder.compile(store=LanternStore.open())   # the default store, or a path or URL

Each item a graph puts is a memory record (docs/langgraph.md has the mapping):

* `mapping`: namespaces as scopes, keys as references, values as the records' content;
* `filtering`: LangGraph's `filter` of a search, as its own `InMemoryStore` reads it;
* `store`: `LanternStore`, the operations of a batch made of calls on the facade.

LangGraph is the optional extra `lantern[langgraph]`; importing this package without it raises
`MissingDependency`, whose message says what to install.
"""

from __future__ import annotations

from lantern.integrations.langgraph.store import LanternStore

__all__ = ["LanternStore"]
