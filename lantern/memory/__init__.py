"""Memory records: explicit, durable state with lifecycle, scope, priority and references.

`repository.MemoryRepository` holds every rule about records, composed of `writes`,
`lifecycle` and `reads`; `changes` keeps each record's history, search row (`fts`) and
reference rows (`refs`) in step with it; `filterspec` says each listing filter once for
every surface; `filters` and `cursor` define listings and paging;
`semantic` searches by meaning (`semantic`, `hybrid`, similar records) and `vectors` keeps the
records' vectors; `scopes` confines a repository to some scopes; `records` holds the frozen
results.

Imports: `lantern.store`, `lantern.retrieval`, `lantern.entities`, `lantern.semantic`,
`lantern.indexes`, `lantern.embeddings` and the leaves. Never the evidence package, the facade
or a surface.
"""
