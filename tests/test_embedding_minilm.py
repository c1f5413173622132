"""The default provider: all-MiniLM-L6-v2 (int8 ONNX), checked against the full-precision model.

tests/data/minilm_reference.json holds vectors of the original float32 model for varied texts
(tests/data/make_minilm_reference.py says how they were made); the int8 model must stay within a
cosine of 0.995 of each, so a change of tokenizer, truncation, pooling or normalisation shows.
"""

from __future__ import annotations

import json
import shutil
import socket
from pathlib import Path

import numpy as np
import pytest

from lantern.embeddings import minilm
from lantern.embeddings.minilm import MiniLMProvider
from lantern.embeddings.provider import embed_checked
from lantern.errors import EmbeddingFailed
from tests.helpers import REPO_ROOT

REFERENCE = json.loads(
    (REPO_ROOT / "tests" / "data" / "minilm_reference.json").read_text(encoding="utf-8")
)


@pytest.fixture(scope="module")
def provider() -> MiniLMProvider:
    return MiniLMProvider()


def _cos(a: np.ndarray, b: np.ndarray) -> float:
    return float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b)))


def test_vectors_are_384_unit_length_float32(provider: MiniLMProvider) -> None:
    vectors = embed_checked(provider, ["The user prefers short answers.", "ok"])
    assert vectors.shape == (2, 384) and vectors.dtype == np.float32
    assert np.linalg.norm(vectors, axis=1) == pytest.approx([1.0, 1.0], abs=1e-5)
    assert (provider.name, provider.dimension) == ("minilm", 384)
    assert provider.model == "all-MiniLM-L6-v2-int8@8199be6f699a"


def test_the_vectors_agree_with_the_full_precision_model(provider: MiniLMProvider) -> None:
    reference = np.array(REFERENCE["vectors"], dtype=np.float32)
    vectors = provider.embed(REFERENCE["texts"])
    agreement = [_cos(a, b) for a, b in zip(vectors, reference, strict=True)]
    assert min(agreement) >= 0.995, agreement
    # The similarities that ranking uses agree too.
    assert np.abs(vectors @ vectors.T - reference @ reference.T).max() < 0.02
    # The values the model's users know for its card's example sentence.
    assert vectors[0][:5] == pytest.approx([0.0677, 0.0635, 0.0487, 0.0793, 0.0374], abs=0.005)


def test_a_paraphrase_scores_higher_than_an_unrelated_sentence(provider: MiniLMProvider) -> None:
    query, paraphrase, unrelated, near_words = provider.embed(
        [
            "The user prefers short answers without bullet points.",
            "Keep replies brief and skip the bulleted lists.",
            "Deploy the staging cluster before Friday's release.",
            "The user points at the short bullet answers.",
        ]
    )
    assert _cos(query, paraphrase) > 0.45
    assert _cos(query, unrelated) < 0.15
    assert _cos(query, paraphrase) > _cos(query, unrelated) + 0.3
    assert _cos(query, near_words) > _cos(query, unrelated)


def test_a_batch_gives_the_same_vectors_as_one_by_one(provider: MiniLMProvider) -> None:
    texts = [*REFERENCE["texts"], *(f"memory number {i} about topic {i % 7}" for i in range(12))]
    together = provider.embed(texts)
    alone = np.stack([provider.embed([text])[0] for text in texts])
    assert np.abs(together - alone).max() < 1e-5


def test_a_list_longer_than_a_tokenizer_slice_keeps_its_order(
    provider: MiniLMProvider, monkeypatch: pytest.MonkeyPatch
) -> None:
    texts = [f"note {i}: " + "word " * (i % 9) for i in range(11)]
    whole = provider.embed(texts)
    monkeypatch.setattr(minilm, "TOKENIZE_SLICE", 4)
    assert np.abs(provider.embed(texts) - whole).max() < 1e-5


def test_batches_stay_within_their_bounds() -> None:
    lengths = [256] * 20 + [10] * 70 + [3]
    batches = minilm._batches(lengths)
    assert sorted(i for batch in batches for i in batch) == list(range(len(lengths)))
    for batch in batches:
        width = max(lengths[i] for i in batch)
        assert len(batch) <= minilm.BATCH_ROWS and len(batch) * width <= minilm.BATCH_TOKENS


def test_no_texts_give_an_empty_matrix(provider: MiniLMProvider) -> None:
    vectors = provider.embed([])
    assert vectors.shape == (0, 384) and vectors.dtype == np.float32


def test_the_empty_text_is_embedded_as_the_model_does(provider: MiniLMProvider) -> None:
    # sentence-transformers embeds "" as [CLS] [SEP]: a unit vector, like any other.
    empty = provider.embed([""])[0]
    reference = np.array(REFERENCE["vectors"][REFERENCE["texts"].index("")], dtype=np.float32)
    assert _cos(empty, reference) > 0.99


def test_a_very_long_text_is_truncated_not_refused(provider: MiniLMProvider) -> None:
    head = "Grandmother's lemon cake needs six eggs, butter and a slow oven. " * 40
    tail = "The database migration failed because the disk was full. " * 2_000
    long, head_only = provider.embed([head + tail, head])
    assert np.linalg.norm(long) == pytest.approx(1.0, abs=1e-5)
    assert _cos(long, head_only) > 0.999  # the first 256 tokens are all head


def test_text_that_is_not_valid_unicode_is_embedded(provider: MiniLMProvider) -> None:
    vector = provider.embed(["caf\udce9 au lait"])[0]
    assert np.linalg.norm(vector) == pytest.approx(1.0, abs=1e-5)


def test_a_changed_model_file_is_refused(tmp_path: Path) -> None:
    packaged = minilm._packaged_model()
    tampered = tmp_path / "model.onnx"
    shutil.copyfile(packaged, tampered)
    data = bytearray(tampered.read_bytes())
    data[len(data) // 2] ^= 0x01
    tampered.write_bytes(bytes(data))
    with pytest.raises(EmbeddingFailed) as raised:
        MiniLMProvider(model_path=tampered).embed(["hello"])
    message = raised.value.message
    assert "\n" not in message
    assert message.startswith(f"the all-MiniLM-L6-v2 model file at {tampered} has sha256 ")
    assert f"not the pinned {minilm.MODEL_SHA256}, so it is not used" in message


def test_a_copy_of_the_right_file_is_accepted(tmp_path: Path) -> None:
    copy = tmp_path / "elsewhere.onnx"
    shutil.copyfile(minilm._packaged_model(), copy)
    assert MiniLMProvider(model_path=copy).embed(["hello"]).shape == (1, 384)


def test_a_missing_model_file_is_one_line(tmp_path: Path) -> None:
    with pytest.raises(EmbeddingFailed, match=r"cannot read the .* at .*: No such file"):
        MiniLMProvider(model_path=tmp_path / "absent.onnx").embed(["hello"])


def test_the_model_loads_once_per_process(provider: MiniLMProvider) -> None:
    provider.embed(["first"])
    loaded = dict(minilm._loaded)
    MiniLMProvider().embed(["second"])
    assert minilm._loaded == loaded and len(loaded) >= 1


def test_embedding_opens_no_network_connection(
    provider: MiniLMProvider, monkeypatch: pytest.MonkeyPatch
) -> None:
    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("a network connection was attempted")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)
    minilm._loaded.clear()  # load again, from scratch, under the guard
    assert provider.embed(["offline"]).shape == (1, 384)
