"""The MCP server behind `lantern mcp`: Lantern's memory and evidence calls as MCP tools.

The tools are plain data and functions (`spec`, `memory_tools`, `evidence_tools`), checked
against their schemas by `arguments`; `server` is the only module that imports the MCP SDK.
Nothing else in Lantern imports this package, so the rest of the CLI never pays for `mcp`
(about 0.7 s to import) or `jsonschema`.

Imports: the facade (`lantern.api`, `lantern`) and the public names below it (records,
errors, vocabularies: `PUBLIC` in tests/test_layers.py), and `lantern.serving` (the guard on
the HTTP server's connections, shared with the web view).

The package is not named `mcp`, so that it can never shadow the SDK it is built on.
"""
