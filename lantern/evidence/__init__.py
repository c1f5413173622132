"""Evidence: sources split into chunks with provenance, keyword search, re-ingestion.

`repository.EvidenceRepository` is the entry, composed of `writes` (ingest, remove, embed) and
`reads` (search, show, list) over `core`; `files` selects and reads files, `sourcekinds` tells
what a text is, `chunking` and `chunkplan` split it and keep chunk ids stable,
`documents` stores documents as source and chunk rows, `rows` reads them back, `search` ranks
chunks per engine, `semantic` searches them by meaning (`semantic`, `hybrid`), `chunkvectors`
keeps their vectors, `inputs` checks arguments, and `records` holds the frozen results.

Imports: `lantern.store`, `lantern.retrieval`, `lantern.entities`, `lantern.semantic`,
`lantern.embeddings` and the leaves. Never the memory package, the facade or a surface.
"""
