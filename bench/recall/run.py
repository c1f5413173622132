"""Recall of each search mode on the recall data set: hit@1, hit@5 and MRR.

    python bench/recall/run.py                       # every mode Lantern has
    python bench/recall/run.py --mode keyword --mode any --target-size 2000
    python bench/recall/run.py --json recall.json    # also write the figures as JSON

It builds a store from the data set in a temporary directory (`dataset.open_dataset`), asks
every question through the public API in each mode (`lt.evidence.search` for a question
answered by a chunk, `lt.memory.search` for one answered by a record, with the default filters
and order) and finds the rank of the expected chunk or record among the first `--depth`
results (20 by default). A question's reciprocal rank is 1/rank, 0 when the answer is not in
them; hit@k is the share of questions answered within the first k. The figures are printed
overall, per category (paraphrase, mixed, identifier) and per target (chunk, record).

The modes are Lantern's own (`lantern.retrieval.modes.SEARCH_MODES`): a mode Lantern gains is
measured by naming it, with no change here.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

import dataset
from dataset import CATEGORIES, DATA, DatasetError, ResolvedQuestion

from lantern import Lantern
from lantern.retrieval.modes import SEARCH_MODES

DEPTH = 20
TARGETS = ("chunk", "record")


@dataclass(frozen=True, slots=True)
class Scores:
    """The figures of one group of questions in one mode."""

    mode: str
    group: str
    questions: int
    hit_at_1: float
    hit_at_5: float
    mrr: float


def rank_of(lt: Lantern, item: ResolvedQuestion, mode: str, depth: int) -> int | None:
    """The 1-based rank of the question's answer among the first `depth` results, or None."""
    question = item.question
    if question.target == "chunk":
        found = [hit.chunk_id for hit in lt.evidence.search(question.text, mode=mode, limit=depth)]
    else:
        matches = lt.memory.search(question.text, mode=mode, limit=depth)
        found = [match.record.id for match in matches]
    return found.index(item.target_id) + 1 if item.target_id in found else None


def scores(mode: str, group: str, ranks: Sequence[int | None]) -> Scores:
    count = len(ranks)

    def share(test: Callable[[int], bool]) -> float:
        return sum(1 for rank in ranks if rank is not None and test(rank)) / count

    reciprocal = sum(1 / rank for rank in ranks if rank is not None) / count
    return Scores(
        mode=mode,
        group=group,
        questions=count,
        hit_at_1=share(lambda rank: rank == 1),
        hit_at_5=share(lambda rank: rank <= 5),
        mrr=reciprocal,
    )


def measure(
    lt: Lantern, questions: Sequence[ResolvedQuestion], mode: str, depth: int
) -> list[Scores]:
    """The figures of one mode: overall, per category, per target."""
    by_group: dict[str, list[int | None]] = {name: [] for name in ("all", *CATEGORIES, *TARGETS)}
    for item in questions:
        rank = rank_of(lt, item, mode, depth)
        for name in ("all", item.question.category, item.question.target):
            by_group[name].append(rank)
    return [scores(mode, name, ranks) for name, ranks in by_group.items() if ranks]


def render(results: Sequence[Scores]) -> str:
    header = f"{'mode':<10} {'questions':<12} {'n':>4} {'hit@1':>7} {'hit@5':>7} {'MRR':>7}"
    lines = [header, "-" * len(header)]
    for result in results:
        lines.append(
            f"{result.mode:<10} {result.group:<12} {result.questions:>4} "
            f"{result.hit_at_1:>7.3f} {result.hit_at_5:>7.3f} {result.mrr:>7.3f}"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument(
        "--mode",
        action="append",
        help=f"a search mode to measure (repeatable; default: {', '.join(SEARCH_MODES)})",
    )
    parser.add_argument("--target-size", type=int, help="chunk size (default: Lantern's)")
    parser.add_argument("--depth", type=int, default=DEPTH, help="results looked at per question")
    parser.add_argument("--data", type=Path, default=DATA, help="the data folder")
    parser.add_argument("--json", dest="json_path", type=Path, help="also write results here")
    args = parser.parse_args(argv)
    modes = args.mode or list(SEARCH_MODES)
    results: list[Scores] = []
    try:
        with (
            tempfile.TemporaryDirectory(prefix="lantern-recall-") as folder,
            dataset.open_dataset(
                Path(folder) / "recall.db", data_dir=args.data, target_size=args.target_size
            ) as data,
        ):
            print(
                f"{len(data.questions)} questions, {data.chunk_count} chunks, "
                f"{len(data.record_ids)} records; rank looked for in the first {args.depth}"
            )
            for mode in modes:
                started = time.perf_counter()
                results += measure(data.lantern, data.questions, mode, args.depth)
                elapsed = time.perf_counter() - started
                print(f"{mode}: {len(data.questions)} questions in {elapsed:.2f} s")
    except DatasetError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    print(render(results))
    if args.json_path:
        payload = {
            "target_size": args.target_size,
            "depth": args.depth,
            "results": [asdict(result) for result in results],
        }
        args.json_path.write_text(json.dumps(payload, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
