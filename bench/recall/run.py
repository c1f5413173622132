"""Recall of each search mode on the recall data set: hit@1, hit@5 and MRR.

    python bench/recall/run.py                       # every mode, and the default
    python bench/recall/run.py --mode keyword --mode any --target-size 2000
    python bench/recall/run.py --half tune --fusion-weights 0.7,0.8,0.9   # hybrid's rule, swept
    python bench/recall/run.py --json recall.json    # also write the figures as JSON

It builds a store from the data set in a temporary directory (`dataset.open_dataset`), computes
every vector with the default model (`lt.embed`, `--model` to choose another), asks every
question through the public API in each mode (`lt.evidence.search` for a question answered by a
chunk, `lt.memory.search` for one answered by a record, with the default filters and order) and
finds the rank of the expected chunk or record among the first `--depth` results (20 by
default). `default` is a search that names no mode, as an agent's would. A question's
reciprocal rank is 1/rank, 0 when the answer is not in them; hit@k is the share of questions
answered within the first k. The figures are printed overall, per category (paraphrase,
mixed, identifier) and per target (chunk, record).

`--half tune` or `--half report` asks only one half of the questions: a question is in the tune
half when the first byte of the SHA-256 of its id is even, in the report half otherwise (110
and 112 of the 222). The fusion rule of `hybrid` is chosen on the tune half; the report half,
which had no part in the choice, says how well it holds.

`--fusion-depths`, `--fusion-weights` and `--fusion-leads` measure hybrid with other settings
than Lantern's (`lantern.retrieval.fusion`: DEPTH, SEMANTIC_WEIGHT, CLEAR_LEAD): it fuses, with
the same `fuse` function, the `any` ranking (with its scores) and the `semantic` ranking (with
every similarity) the API returns, for every combination of the values given (Lantern's for
those not given), and prints hit@1, hit@5 and MRR for each.

The modes are Lantern's own (`lantern.retrieval.modes.SEARCH_MODES`): a mode Lantern gains is
measured by naming it, with no change here.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

# The data set's loader is imported through bench/ as `recall.dataset`, the name the type
# checker gives it (it reads bench/ as one tree, where `run` is bench/run.py).
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from recall import dataset
from recall.dataset import CATEGORIES, DATA, DatasetError, ResolvedQuestion

from lantern import Lantern
from lantern.retrieval.fusion import CLEAR_LEAD, SEMANTIC_WEIGHT, fuse
from lantern.retrieval.fusion import DEPTH as FUSION_DEPTH
from lantern.retrieval.modes import SEARCH_MODES

DEPTH = 20
DEFAULT = "default"
"""A search that names no mode."""
TARGETS = ("chunk", "record")
HALVES = ("tune", "report")


def half_of(question_id: str) -> str:
    """The half a question belongs to: by its id alone, so that it never changes as questions
    are added."""
    return HALVES[hashlib.sha256(question_id.encode()).digest()[0] % 2]


@dataclass(frozen=True, slots=True)
class Scores:
    """The figures of one group of questions in one mode."""

    mode: str
    group: str
    questions: int
    hit_at_1: float
    hit_at_5: float
    mrr: float


def scored(
    lt: Lantern, item: ResolvedQuestion, mode: str | None, depth: int
) -> list[tuple[str, float]]:
    """The ids of the first `depth` results of the question in `mode` (None: the default),
    each with its score (in `semantic`, its similarity)."""
    question = item.question
    if question.target == "chunk":
        hits = lt.evidence.search(question.text, mode=mode, limit=depth)
        return [(hit.chunk_id, hit.score) for hit in hits]
    matches = lt.memory.search(question.text, mode=mode, limit=depth)
    return [(match.record.id, match.score) for match in matches]


def ranking(lt: Lantern, item: ResolvedQuestion, mode: str | None, depth: int) -> list[str]:
    """The ids of the first `depth` results of the question in `mode` (None: the default)."""
    return [key for key, _score in scored(lt, item, mode, depth)]


def rank_of(lt: Lantern, item: ResolvedQuestion, mode: str, depth: int) -> int | None:
    """The 1-based rank of the question's answer among the first `depth` results, or None."""
    found = ranking(lt, item, None if mode == DEFAULT else mode, depth)
    return found.index(item.target_id) + 1 if item.target_id in found else None


@dataclass(frozen=True, slots=True)
class Setting:
    """One combination of the fusion rule's settings."""

    depth: int
    weight: float
    lead: float

    @property
    def name(self) -> str:
        return f"d{self.depth} w{self.weight:g} l{self.lead:g}"


def fusion_sweep(
    lt: Lantern,
    questions: Sequence[ResolvedQuestion],
    settings: Sequence[Setting],
    depth: int,
    everything: int,
) -> list[Scores]:
    """Hybrid with each setting: the API's `any` ranking (with its scores) and `semantic`
    ranking (all `everything` items, with their similarities) fused by
    `lantern.retrieval.fusion.fuse` (overall figures)."""
    deepest = max(depth, *(setting.depth for setting in settings))
    rankings = [
        (item, scored(lt, item, "any", deepest), scored(lt, item, "semantic", everything))
        for item in questions
    ]
    results = []
    for setting in settings:
        ranks: list[int | None] = []
        for item, keyword, semantic in rankings:
            fused = fuse(
                keyword,
                semantic,
                dict(semantic),
                depth=setting.depth,
                weight=setting.weight,
                lead=setting.lead,
            )
            found = [str(entry.key) for entry in fused][:depth]
            ranks.append(found.index(item.target_id) + 1 if item.target_id in found else None)
        results.append(scores(setting.name, "all", ranks))
    return results


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


def sweep_settings(depths: str | None, weights: str | None, leads: str | None) -> list[Setting]:
    """Every combination of the values given, Lantern's own for a setting not given; none when
    no value is given at all."""
    if depths is None and weights is None and leads is None:
        return []
    return [
        Setting(int(depth), float(weight), float(lead))
        for depth in (depths or str(FUSION_DEPTH)).split(",")
        for weight in (weights or str(SEMANTIC_WEIGHT)).split(",")
        for lead in (leads or str(CLEAR_LEAD)).split(",")
    ]


def render(results: Sequence[Scores], width: int = 10) -> str:
    header = f"{'mode':<{width}} {'questions':<12} {'n':>4} {'hit@1':>7} {'hit@5':>7} {'MRR':>7}"
    lines = [header, "-" * len(header)]
    for result in results:
        lines.append(
            f"{result.mode:<{width}} {result.group:<12} {result.questions:>4} "
            f"{result.hit_at_1:>7.3f} {result.hit_at_5:>7.3f} {result.mrr:>7.3f}"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument(
        "--mode",
        action="append",
        help=f"a search mode to measure, or {DEFAULT} for a search that names none "
        f"(repeatable; default: {', '.join([*SEARCH_MODES, DEFAULT])})",
    )
    parser.add_argument("--model", help="embedding provider (default: Lantern's, minilm)")
    parser.add_argument("--half", choices=HALVES, help="ask only this half of the questions")
    parser.add_argument(
        "--fusion-depths",
        help=f"comma-separated fusion depths to sweep hybrid over (Lantern's: {FUSION_DEPTH})",
    )
    parser.add_argument(
        "--fusion-weights",
        help=f"comma-separated semantic weights to sweep (Lantern's: {SEMANTIC_WEIGHT})",
    )
    parser.add_argument(
        "--fusion-leads",
        help=f"comma-separated clear-lead shares to sweep (Lantern's: {CLEAR_LEAD})",
    )
    parser.add_argument("--target-size", type=int, help="chunk size (default: Lantern's)")
    parser.add_argument("--depth", type=int, default=DEPTH, help="results looked at per question")
    parser.add_argument("--data", type=Path, default=DATA, help="the data folder")
    parser.add_argument("--json", dest="json_path", type=Path, help="also write results here")
    args = parser.parse_args(argv)
    modes = args.mode or [*SEARCH_MODES, DEFAULT]
    try:
        settings = sweep_settings(args.fusion_depths, args.fusion_weights, args.fusion_leads)
    except ValueError as exc:
        parser.error(f"a fusion setting is not a number: {exc}")
    results: list[Scores] = []
    sweep: list[Scores] = []
    try:
        with (
            tempfile.TemporaryDirectory(prefix="lantern-recall-") as folder,
            dataset.open_dataset(
                Path(folder) / "recall.db", data_dir=args.data, target_size=args.target_size
            ) as data,
        ):
            questions = [
                item
                for item in data.questions
                if args.half is None or half_of(item.question.id) == args.half
            ]
            half = f" (the {args.half} half)" if args.half else ""
            print(
                f"{len(questions)} questions{half}, {data.chunk_count} chunks, "
                f"{len(data.record_ids)} records; rank looked for in the first {args.depth}"
            )
            embedded = data.lantern.embed(model=args.model)
            assert embedded.memory is not None and embedded.sources is not None
            print(
                f"embedded {embedded.memory.embedded} records and {embedded.sources.embedded} "
                f"chunks with {embedded.model} in {embedded.seconds:.1f} s"
            )
            for mode in modes:
                started = time.perf_counter()
                results += measure(data.lantern, questions, mode, args.depth)
                elapsed = time.perf_counter() - started
                print(f"{mode}: {len(questions)} questions in {elapsed:.2f} s")
            if settings:
                everything = data.chunk_count + len(data.record_ids)
                sweep = fusion_sweep(data.lantern, questions, settings, args.depth, everything)
    except DatasetError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    print(render(results))
    if settings:
        print()
        print(
            f"hybrid with other fusion settings (Lantern's: d{FUSION_DEPTH} "
            f"w{SEMANTIC_WEIGHT:g} l{CLEAR_LEAD:g}):"
        )
        print(render(sweep, width=18))
    if args.json_path:
        payload = {
            "target_size": args.target_size,
            "half": args.half,
            "depth": args.depth,
            "results": [asdict(result) for result in results],
            "fusion_sweep": [asdict(result) for result in sweep],
        }
        args.json_path.write_text(json.dumps(payload, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
