"""Whole-store operations: health checks, index rebuilds, live backups and the inspection summary.

They read or repair every table at once, so they sit above both domains: imports are
`lantern.store`, `lantern.memory`, `lantern.evidence` and `lantern.semantic` (and the leaves).
Only the facade calls them, and it refuses them on a scope-restricted store.
"""
