"""Semantic recall: vectors stored beside what they were computed from, held in memory, searched.

- `sides`: the two kinds of vectors, memory records' and chunks', and where each is stored.
- `storage`: writing and removing vectors, each write replacing its kind's token in the same
  transaction (`lantern.store.settings`).
- `index`: a side's vectors of one model as one float32 matrix, loaded once per process and
  reloaded only when the token changed (memory records' mapped from the store's vector index,
  `lantern.indexes.vectors`, where it has one); the nearest rows of a query, in rounds.
- `plan`: which mode a search runs and with which provider (the default falls back to `any`
  where semantic search cannot run).
- `backfill`: computing the missing and stale vectors in batches (`lantern embed`).

It knows the vector tables and the store, never memory or evidence rules: the repositories ask
it for ranked ids and apply their own filters. numpy, the model runtime and the model load only
when vectors are actually compared or computed.

Imports: `lantern.store`, `lantern.indexes`, `lantern.embeddings`, `lantern.retrieval` and the
leaves.
"""
