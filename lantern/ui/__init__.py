"""`lantern ui`: a local, read-only web view of a store, for people who would rather look.

A surface like the CLI and the MCP server: each page parses its query, makes calls on the facade
(`lantern.api.Lantern`) and renders the records it gets back, as HTML or as its JSON twin, the
same JSON the CLI prints for the command the page shows. It holds no SQL and no rule of its own.

* `security`: the gate every request passes (token, host, method) and the headers every
  response carries (a strict Content-Security-Policy among them);
* `fields`: the query parameters of each page, read from the vocabularies below, and how each
  becomes an API argument and a CLI option;
* `text`: how stored text is shown (times, invisible characters, snippets, previews);
* `memory_pages`, `evidence_pages`, `overview_pages`: the pages;
* `app`: the Starlette application; `server`: the token and uvicorn.

Starlette, Jinja2 and uvicorn are the optional extra `lantern[ui]`: only this package imports
them, and `lantern ui` imports this package only when it runs.

Imports: the facade (`lantern.api`, `lantern`) and the public names below it (records,
errors, vocabularies: `PUBLIC` in tests/test_layers.py), and `lantern.serving` (the guard on
the server's connections, shared with `lantern mcp --http`).
"""
