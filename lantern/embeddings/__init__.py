"""Embedding providers: text in, one float32 vector per text out.

Embeddings are derived data, like the keyword index: recorded beside the model id and dimension
that made them, rebuilt on demand, never the only copy of anything. This package only makes
vectors and compares them; storing them is the store's business.

- `provider`: what a provider is (`EmbeddingProvider`) and the checks every provider shares.
- `registry`: providers by name, from the `lantern.embedding_providers` entry-point group, and
  which one to use (`resolve_provider`).
- `minilm`: the default, all-MiniLM-L6-v2 as an int8 ONNX file, run locally.
- `hashing`: a deterministic stand-in that needs no model (not semantic).
- `remote`: any server that speaks the OpenAI-compatible `/v1/embeddings` protocol.
- `vectors`: the stored byte format and a deterministic top-k by cosine.

Nothing here imports numpy, onnxruntime or tokenizers until vectors are asked for, so that
importing Lantern stays quick. Imports: the leaves.
"""
