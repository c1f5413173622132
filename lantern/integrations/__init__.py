"""Lantern behind other frameworks' interfaces: what an agent written for one of them stores
becomes ordinary Lantern records, listed, searched, explained and kept with their history like
any other.

* `langgraph`: `LanternStore`, a LangGraph `BaseStore` (the optional extra `lantern[langgraph]`).

A surface like the CLI and the MCP server: it parses what the framework hands it, makes calls on
the facade (`lantern.api.Lantern`) and turns the records it gets back into the framework's
objects. It holds no SQL, and no rule that the repositories do not hold: what a framework needs
that the facade lacked was added below, once, for every caller. Nothing else in Lantern imports
this package, and each framework is imported only by the module made for it.

Imports: the facade (`lantern.api`, `lantern`) and the public names below it (records,
errors, vocabularies: `PUBLIC` in tests/test_layers.py).
"""
