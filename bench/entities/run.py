"""Entity extraction on real text: precision per kind, and speed.

The corpus is what a Python install carries: the standard library's sources (`source_file`),
its documentation as pydoc ships it (`pydoc_data/topics.py`, read as a document), the
interpreter's changelog (`NEWS.gz`, Debian's copy of Misc/NEWS) and, when present, a Markdown
changelog written on GitHub (pyenv's `CHANGELOG.md`, with @mentions, #issues and commits). Each
text is chunked as ingest chunks it and every chunk goes through `lantern.entities.extraction`,
exactly as at ingest.

Precision: for each kind, a fixed-seed sample of the distinct entities found (with the line
each was found in) is classified by hand in `labels.json` (`true`: the text means that thing;
`false`: it does not, with why). The table counts only labelled samples; `--unlabelled` prints
the samples that have no label yet, to classify them. Speed: characters per second through the
extractor, beside a single pass of the URL pattern alone (the floor: one regular expression
over the same text), and the chunker, which ingest runs anyway.

    python bench/entities/run.py                  # the table
    python bench/entities/run.py --unlabelled     # samples still to classify
"""

from __future__ import annotations

import argparse
import gzip
import json
import random
import sys
import sysconfig
import time
from collections import defaultdict
from pathlib import Path

from lantern.entities.extraction import _URL, mentions
from lantern.entities.names import EXTRACTED_KINDS, NORMALISERS
from lantern.evidence.chunking import chunk_source

HERE = Path(__file__).parent
LABELS = HERE / "labels.json"
SAMPLE = 30
SEED = 20261201


def corpus() -> list[tuple[str, str, str]]:
    """`(name, source kind, text)` of every text measured."""
    stdlib = Path(sysconfig.get_paths()["stdlib"])
    texts: list[tuple[str, str, str]] = []
    for path in sorted(stdlib.rglob("*.py")):
        parts = path.relative_to(stdlib).parts
        if (
            parts[0] in ("test", "idlelib", "lib2to3", "site-packages", "dist-packages")
            or "tests" in parts
        ):
            continue
        if path.name == "topics.py":
            continue
        texts.append(
            (str(path.relative_to(stdlib)), "source_file", path.read_text("utf-8", "replace"))
        )
    topics = stdlib / "pydoc_data" / "topics.py"
    if topics.exists():
        namespace: dict[str, object] = {}
        exec(compile(topics.read_text("utf-8"), str(topics), "exec"), namespace)
        docs = namespace["topics"]
        assert isinstance(docs, dict)
        texts.append(("pydoc_data/topics.py", "document", "\n\n".join(docs.values())))
    version = f"{sys.version_info.major}.{sys.version_info.minor}"
    news = Path(f"/usr/share/doc/python{version}/NEWS.gz")
    if news.exists():
        texts.append(
            (str(news), "document", gzip.decompress(news.read_bytes()).decode("utf-8", "replace"))
        )
    for changelog in (Path.home() / ".pyenv" / "CHANGELOG.md",):
        if changelog.exists():
            texts.append((str(changelog), "markdown", changelog.read_text("utf-8", "replace")))
    return texts


def precision_table(found: dict[str, dict[str, str]], counts: dict[str, int]) -> list[str]:
    """Print precision per kind from the labels; return the samples that have no label yet."""
    labels: dict[str, dict[str, object]] = (
        json.loads(LABELS.read_text("utf-8")) if LABELS.exists() else {}
    )
    rng = random.Random(SEED)
    print("| kind | mentions | distinct | sampled | labelled | correct | precision |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: |")
    missing: list[str] = []
    total_labelled = total_correct = 0
    for kind in EXTRACTED_KINDS:
        names = sorted(found[kind])
        sample = rng.sample(names, min(SAMPLE, len(names)))
        labelled = [labels[f"{kind}:{n}"] for n in sample if f"{kind}:{n}" in labels]
        correct = sum(1 for label in labelled if label["correct"])
        missing += [f"{kind}:{n}\t{found[kind][n]}" for n in sample if f"{kind}:{n}" not in labels]
        total_labelled += len(labelled)
        total_correct += correct
        precision = f"{correct / len(labelled):.0%}" if labelled else "-"
        print(
            f"| {kind} | {counts[kind]} | {len(names)} | {len(sample)} | {len(labelled)} | "
            f"{correct} | {precision} |"
        )
    overall = f"{total_correct / total_labelled:.0%}" if total_labelled else "-"
    print(
        f"| all | {sum(counts.values())} | {sum(len(v) for v in found.values())} | | "
        f"{total_labelled} | {total_correct} | {overall} |\n"
    )
    return missing


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--unlabelled", action="store_true", help="print samples without a label")
    parser.add_argument(
        "--ingest",
        type=int,
        metavar="FILES",
        default=0,
        help="also ingest this many standard library files, with and without extraction",
    )
    args = parser.parse_args()
    texts = corpus()
    chunks: list[tuple[str, str, str]] = []
    started = time.perf_counter()
    for name, kind, text in texts:
        chunks += [
            (name, kind, span.text)
            for span in chunk_source(text, kind, target_size=1000, path=name)
        ]
    chunking = time.perf_counter() - started
    characters = sum(len(text) for _n, _k, text in chunks)

    started = time.perf_counter()
    found: dict[str, dict[str, str]] = defaultdict(dict)  # kind -> name -> where
    counts: dict[str, int] = defaultdict(int)
    for name, kind, text in chunks:
        for start, end, entity_kind, raw in mentions(text, kind):
            normalised = NORMALISERS[entity_kind](raw)
            if normalised is None:
                continue
            counts[entity_kind] += 1
            line_start = text.rfind("\n", 0, start) + 1
            line_end = text.find("\n", end)
            line = text[line_start : line_end if line_end >= 0 else len(text)].strip()[:200]
            found[entity_kind].setdefault(normalised, f"{name}: {line}")
    extracting = time.perf_counter() - started

    started = time.perf_counter()
    for _name, _kind, text in chunks:
        for _match in _URL.finditer(text):
            pass
    floor = time.perf_counter() - started

    print(
        f"corpus: {len(texts)} texts, {len(chunks)} chunks, {characters / 1e6:.1f} M characters\n"
    )
    missing = precision_table(found, counts)
    mb = characters / 1e6
    print("| step | seconds | M characters/s |")
    print("| --- | ---: | ---: |")
    print(f"| extraction, every rule (Lantern) | {extracting:.2f} | {mb / extracting:.1f} |")
    print(f"| one pass of the URL pattern (floor) | {floor:.2f} | {mb / floor:.1f} |")
    print(f"| chunking, which ingest runs anyway | {chunking:.2f} | {mb / chunking:.1f} |")
    if args.ingest:
        ingest_rows(args.ingest)
    if args.unlabelled:
        print("\nunlabelled samples:")
        for line in missing:
            print(line)


def ingest_rows(count: int) -> None:
    """Ingest the same files into fresh stores, with the extractor and with it switched off
    (the floor: what ingest costs without entities), alternately, three times each."""
    import tempfile
    from contextlib import AbstractContextManager, nullcontext
    from unittest import mock

    from lantern.api import Lantern
    from lantern.entities.names import EntityName
    from lantern.evidence import documents

    def no_entities(text: str, source_kind: str | None = None) -> list[EntityName]:
        return []

    stdlib = Path(sysconfig.get_paths()["stdlib"])
    files = sorted(p for p in stdlib.glob("*.py"))[:count]
    size = sum(p.stat().st_size for p in files) / 1e6
    timings: dict[bool, list[float]] = {True: [], False: []}
    for _round in range(3):
        for extracting in (True, False):
            # Without: ingest's own name for the extractor finds nothing, for this run only.
            switch: AbstractContextManager[object] = (
                nullcontext()
                if extracting
                else mock.patch.object(documents, "extract", no_entities)
            )
            with (
                switch,
                tempfile.TemporaryDirectory() as folder,
                Lantern.open(Path(folder) / "s.db") as lt,
            ):
                started = time.perf_counter()
                lt.evidence.ingest_path([str(p) for p in files])
                timings[extracting].append(time.perf_counter() - started)
    print(f"\n| ingest of {len(files)} files ({size:.1f} MB), median of 3 | seconds | ms per MB |")
    print("| --- | ---: | ---: |")
    for extracting, label in (
        (True, "with entity extraction (Lantern)"),
        (False, "without (floor)"),
    ):
        median = sorted(timings[extracting])[1]
        print(f"| {label} | {median:.2f} | {median * 1000 / size:.0f} |")


if __name__ == "__main__":
    main()
