"""Indexes derived from a store, that make search top-k instead of linear.

Full-text ranking inside SQLite scores every row that holds a word of the query, and vectors
kept in the database are read into every new process; both grow with the store. The indexes
here answer the same questions from files beside the store's file (`place`): a top-k engine for
words (`words`, tantivy) and a memory-mapped matrix for vectors (`vectors`).

They are derived data, like the embeddings: the store stays the truth. Each is built from the
tables, remembers the last change it applied from the store's feed (`feed`, written by
triggers in every writing transaction), and is caught up from there before a search reads it,
so a search never misses a committed record nor returns a forgotten one. A crash or a kill can
leave one behind, never wrong: being behind is detected and caught up, a file that does not
belong to this store is detected and rebuilt, and `lantern db check` verifies them. A store
without them (the `index` extra not installed, a store too large to build one on the fly,
PostgreSQL outside a long-lived server process: see `place`) searches as before, inside the
database.

Imports: `lantern.store`, `lantern.retrieval`, `lantern.embeddings` and the leaves; tantivy
and numpy only when a search uses them. The memory repository, the semantic index and the
whole-store operations use it.
"""
