"""Moving a store's content in and out: Lantern's own JSON Lines export and import.

Like `lantern.maintenance`, this works on every table at once and sits above both domains.
Imports: `lantern.store`, `lantern.retrieval`, `lantern.entities`, `lantern.memory`,
`lantern.evidence`, `lantern.semantic`, `lantern.embeddings` and the leaves.
"""
