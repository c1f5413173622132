"""Entities: named things that evidence mentions and memory records are about.

`names` says what an entity is (a kind and a normalised name, written `KIND:NAME`, and its id);
`extraction` finds them in text, deterministically, with no model and no network; `links`
writes and removes the links between entities and chunks or memory records, in the caller's
transaction; `filters` are the conditions "linked to any of these entities"; `repository`
lists and shows entities, attaches them to chunks and fills the links of stored chunks,
composed of `reads` and `writes` over `core` (the store and the caller's scopes); `records`
holds the frozen results.

This package sits below both domains, so that an ingest writes a chunk's links in the chunk's
transaction and a memory write its record's, while memory and evidence still never import
each other. Imports: `lantern.store` and the leaves.
"""
