"""Memory records: explicit, durable state with lifecycle, scope, priority and references.

`repository.MemoryRepository` holds every rule about records, composed of `writes`,
`lifecycle` and `reads`; `changes` keeps each record's history, search row (`fts`) and
reference rows (`refs`) in step with it; `filters` and `cursor` define listings and paging;
`scopes` confines a repository to some scopes; `records` holds the frozen results.

Imports: `lantern.store`, `lantern.retrieval`, `lantern.errors`, `lantern.validation`. Never the
evidence package, the facade or a surface.
"""
