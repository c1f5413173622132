"""Embedding providers on this machine: load time, throughput, memory, and a small recall check.

    python bench/embeddings.py                      # minilm and hashing, 3 rounds each
    python bench/embeddings.py --wordllama          # adds WordLlama (pip install wordllama)
    python bench/embeddings.py --json out.json      # also write the results as JSON

Each round runs in a fresh interpreter, so that load time and memory are those of a process
that embeds for the first time:

- load: from the first import to the first vector (of one short text): the libraries, the model
  (for minilm: reading and checking the 23 MB file, building the ONNX Runtime session, the
  tokenizer) and one call, what a command that embeds one query pays before its first result;
- short: 512 sentences of 30-160 characters taken from README.md, the size of memory records;
- chunks: 64 passages of about 1,000 characters of README.md prose, the size of evidence chunks;
- per CPU-second: the same counts over the CPU time the process used (all its threads), which
  another busy process on the machine disturbs far less than the wall-clock rates;
- memory: the process's resident set after load, and its peak after both runs (ru_maxrss);
- recall: bench/recall_pairs.json, 40 hand-written memories each with a query that says the
  same thing in other words; every query ranks all 40 memories by cosine. recall@1 is the share
  of queries whose own memory comes first, MRR the mean of 1/rank. It is small: it tells a
  semantic model from a lexical one, not two good models apart.

WordLlama is loaded from the files inside its wheel (0.4.0.post1's `WordLlama.load()` looks for
its tokenizer under a folder name the wheel does not use, then tries to download it).
Nothing here asserts a number; the table is the result.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

_ROUND = r"""
import json, resource, sys, time
started = time.perf_counter()
name, short_path, chunks_path, pairs_path = sys.argv[1:5]

def rss_mb():
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return float("nan")

if name == "wordllama":
    from pathlib import Path
    import numpy as np
    import wordllama
    from safetensors import safe_open
    from wordllama import WordLlama
    from wordllama.inference import WordLlamaInference

    class WordLlamaProvider:
        def __init__(self):
            root = Path(wordllama.__file__).parent
            config = root / "tokenizers" / "l2_supercat_tokenizer_config.json"
            weights = root / "weights" / "l2_supercat_256.safetensors"
            tokenizer = WordLlama.load_tokenizer(config)
            with safe_open(str(weights), framework="np") as f:
                self.model = WordLlamaInference(f.get_tensor("embedding.weight"), tokenizer)

        def embed(self, texts):
            return np.asarray(self.model.embed(list(texts), norm=True), dtype=np.float32)

    provider = WordLlamaProvider()
else:
    from lantern.embeddings.registry import resolve_provider
    provider = resolve_provider(name)
imported = time.perf_counter()
provider.embed(["warm up"])
loaded = time.perf_counter()
rss_loaded = rss_mb()

short = json.load(open(short_path))
chunks = json.load(open(chunks_path))
result = {"import_s": imported - started, "load_s": loaded - started, "rss_loaded_mb": rss_loaded}
for label, texts in (("short", short), ("chunks", chunks)):
    begin, cpu = time.perf_counter(), time.process_time()
    vectors = provider.embed(texts)
    result[label + "_per_s"] = len(texts) / (time.perf_counter() - begin)
    result[label + "_per_cpu_s"] = len(texts) / (time.process_time() - cpu)
pairs = json.load(open(pairs_path))
memories = provider.embed([p["memory"] for p in pairs])
queries = provider.embed([p["query"] for p in pairs])
scores = queries @ memories.T
ranks = [1 + int((row > row[i]).sum()) for i, row in enumerate(scores)]
result["recall_at_1"] = sum(r == 1 for r in ranks) / len(ranks)
result["mrr"] = sum(1 / r for r in ranks) / len(ranks)
result["peak_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print(json.dumps(result))
"""


def corpus(tmp: Path) -> tuple[Path, Path]:
    """Short sentences and ~1,000-character chunks of README.md prose, deterministic."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    prose = [
        line.strip()
        for line in text.splitlines()
        if line.strip() and not line.lstrip().startswith(("|", "#", "`", "-", "{", "}", '"'))
    ]
    sentences = [
        s.strip()
        for s in re.split(r"(?<=[.!?])\s+", " ".join(prose))
        if 30 <= len(s.strip()) <= 160
    ]
    short = (sentences * (512 // max(1, len(sentences)) + 1))[:512]
    words = " ".join(prose).split()
    chunks: list[str] = []
    current: list[str] = []
    for word in words:
        current.append(word)
        if sum(len(w) + 1 for w in current) >= 1000:
            chunks.append(" ".join(current))
            current = []
        if len(chunks) == 64:
            break
    short_path, chunks_path = tmp / "short.json", tmp / "chunks.json"
    short_path.write_text(json.dumps(short))
    chunks_path.write_text(json.dumps(chunks))
    return short_path, chunks_path


def run_round(name: str, short: Path, chunks: Path) -> dict[str, float]:
    pairs = ROOT / "bench" / "recall_pairs.json"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    ran = subprocess.run(
        [sys.executable, "-c", _ROUND, name, str(short), str(chunks), str(pairs)],
        capture_output=True,
        text=True,
        check=True,
        env=env,
        timeout=600,
    )
    result: dict[str, float] = json.loads(ran.stdout.splitlines()[-1])
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--wordllama", action="store_true")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()

    import tempfile

    names = ["minilm", "hashing", *(["wordllama"] if args.wordllama else [])]
    with tempfile.TemporaryDirectory() as tmp:
        short, chunks = corpus(Path(tmp))
        results = {
            name: [run_round(name, short, chunks) for _ in range(args.rounds)] for name in names
        }
    columns = [
        ("load_s", "load s", "{:.2f}"),
        ("short_per_s", "short/s", "{:.0f}"),
        ("chunks_per_s", "chunks/s", "{:.1f}"),
        ("short_per_cpu_s", "short/CPU-s", "{:.0f}"),
        ("chunks_per_cpu_s", "chunks/CPU-s", "{:.1f}"),
        ("rss_loaded_mb", "RSS loaded MB", "{:.0f}"),
        ("peak_rss_mb", "peak RSS MB", "{:.0f}"),
        ("recall_at_1", "recall@1", "{:.2f}"),
        ("mrr", "MRR", "{:.2f}"),
    ]
    print(
        f"{platform.processor() or platform.machine()}, {os.cpu_count()} CPUs, "
        f"Python {platform.python_version()}; medians of {args.rounds} fresh processes"
    )
    print("| provider | " + " | ".join(title for _, title, _ in columns) + " |")
    print("| --- |" + " ---: |" * len(columns))
    summary = {}
    for name, rounds in results.items():
        medians = {key: statistics.median(r[key] for r in rounds) for key, _, _ in columns}
        summary[name] = {"median": medians, "rounds": rounds}
        cells = [fmt.format(medians[key]) for key, _, fmt in columns]
        print(f"| {name} | " + " | ".join(cells) + " |")
    if args.json:
        args.json.write_text(json.dumps(summary, indent=2) + "\n")


if __name__ == "__main__":
    main()
