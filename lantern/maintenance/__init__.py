"""Whole-store operations: health checks, index rebuilds, live backups and the inspection summary.

They read or repair every table at once, so they sit above both domains. Imports:
`lantern.store`, `lantern.retrieval`, `lantern.entities`, `lantern.memory`, `lantern.evidence`,
`lantern.indexes`, `lantern.semantic`, `lantern.embeddings` and the leaves. Only the facade
calls them, and it refuses them on a scope-restricted store.
"""
