"""Embedding providers: text in, one float32 vector per text out.

Embeddings are derived data, like the keyword index: recorded beside the model id and dimension
that made them, rebuilt on demand, never the only copy of anything. This package only makes
vectors and compares them; storing them is the store's business.

- `vectors`: the stored byte format and a deterministic top-k by cosine.

Nothing here imports numpy until vectors are asked for, so that
importing Lantern stays quick.
"""
