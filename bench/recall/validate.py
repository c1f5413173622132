"""Check the recall data set's integrity and print what it holds.

    python bench/recall/validate.py                  # Lantern's default chunk size and 2000
    python bench/recall/validate.py --target-size 1500 --target-size 3000

It reads every transcript as JSON on its own (one turn per line, or `{"messages": [...]}`),
checks that each chunk question's substring occurs in exactly one turn of its transcript, then
builds a store in a temporary directory for each chunk size and resolves every question to
exactly one chunk or record through Lantern's public API. It prints the counts per target,
category, tag and lexical-overlap label, and exits 1 if anything is wrong.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from collections import Counter
from pathlib import Path
from typing import Any

# The data set's loader is imported through bench/ as `recall.dataset`, the name the type
# checker gives it (it reads bench/ as one tree, where `run` is bench/run.py).
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from recall import dataset
from recall.dataset import (
    DATA,
    DatasetError,
    LoadedData,
    Question,
    ResolvedQuestion,
    Transcript,
)

MIN_QUESTIONS = 100
MIN_RECORDS = 80
DEFAULT_SIZES = (None, 2000)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--data", type=Path, default=DATA, help="the data folder")
    parser.add_argument(
        "--target-size",
        type=int,
        action="append",
        help="chunk size to resolve at (repeatable; default: Lantern's default and 2000)",
    )
    args = parser.parse_args(argv)
    sizes = args.target_size or list(DEFAULT_SIZES)
    try:
        data = dataset.load(args.data)
    except DatasetError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    problems = check_files(data)
    report_files(data)
    resolved: list[ResolvedQuestion] = []
    for size in sizes:
        shown = "default" if size is None else str(size)
        try:
            with (
                tempfile.TemporaryDirectory() as folder,
                dataset.open_dataset(
                    Path(folder) / "recall.db", data_dir=args.data, target_size=size
                ) as opened,
            ):
                print(f"chunk size {shown}: {opened.chunk_count} chunks, all questions resolve")
                resolved = resolved or list(opened.questions)
        except DatasetError as exc:
            problems.append(f"chunk size {shown}: {exc}")
    if resolved:
        report_questions(resolved, sizes[0], data)
    if problems:
        print(dataset.listing("\nproblems", problems), file=sys.stderr)
        return 1
    return 0


def check_files(data: LoadedData) -> list[str]:
    """What the files get wrong that resolving in a store would not show."""
    problems: list[str] = []
    if len(data.questions) < MIN_QUESTIONS:
        problems.append(f"{len(data.questions)} questions; at least {MIN_QUESTIONS} wanted")
    if len(data.records) < MIN_RECORDS:
        problems.append(f"{len(data.records)} records; at least {MIN_RECORDS} wanted")
    contents = Counter(str(record.get("content")) for record in data.records)
    problems += [f"record content repeated: {text!r}" for text, n in contents.items() if n > 1]
    turns: dict[str, list[str]] = {}
    for transcript in data.transcripts:
        try:
            turns[transcript.uri] = [turn["content"] for turn in read_turns(transcript)]
        except (ValueError, KeyError, TypeError) as exc:
            problems.append(f"{transcript.uri}: not a transcript ({exc!r})")
    for question in data.questions:
        if question.target != "chunk" or question.uri not in turns:
            continue
        found = sum(question.contains in content for content in turns[question.uri])
        if found != 1:
            problems.append(
                f"{question.id}: {question.contains!r} occurs in {found} turns of {question.uri}"
            )
    for question in data.questions:
        if question.category == "identifier" and not answer_overlap(question, turns, data):
            problems.append(f"{question.id}: an identifier question shares no word with its answer")
    asked = Counter(question.uri for question in data.questions if question.target == "chunk")
    problems += [f"{uri}: asked about but not in the data" for uri in asked if uri not in turns]
    return problems


def answer_text(question: Question, turns: dict[str, list[str]], data: LoadedData) -> str | None:
    """The turn or record content that answers a question, if exactly one holds its substring."""
    if question.target == "chunk":
        candidates = turns.get(question.uri or "", [])
    else:
        candidates = [str(record.get("content")) for record in data.records]
    found = [content for content in candidates if question.contains in content]
    return found[0] if len(found) == 1 else None


def answer_overlap(
    question: Question, turns: dict[str, list[str]], data: LoadedData
) -> tuple[str, ...]:
    """The question's content words found in the answering turn or record."""
    answer = answer_text(question, turns, data)
    if answer is None:
        return ()
    present = set(dataset.words(answer))
    return tuple(word for word in dataset.content_words(question.text) if word in present)


def read_turns(transcript: Transcript) -> list[dict[str, str]]:
    """The turns of a transcript file, read as plain JSON (independently of Lantern)."""
    text = transcript.text
    found: list[Any]
    if transcript.path.suffix == ".json":
        found = json.loads(text)["messages"]
    else:
        found = [json.loads(line) for line in text.splitlines() if line.strip()]
    if not isinstance(found, list) or not found:
        raise ValueError("no turns")
    for turn in found:
        if not isinstance(turn, dict):
            raise ValueError("a turn is not a JSON object")
        if not isinstance(turn.get("role"), str) or not isinstance(turn.get("content"), str):
            raise ValueError("a turn lacks a string role or content")
    return found


def report_files(data: LoadedData) -> None:
    shapes: Counter[str] = Counter()
    turn_count = 0
    multiline = 0
    roles: Counter[str] = Counter()
    for transcript in data.transcripts:
        try:
            found = read_turns(transcript)
        except (ValueError, KeyError, TypeError):
            continue  # check_files reports it
        turn_count += len(found)
        multiline += sum("\n" in turn["content"] for turn in found)
        roles.update(turn["role"] for turn in found)
        shape = "messages" if transcript.path.suffix == ".json" else "json lines"
        escaped = "ascii-escaped" if "\\u" in transcript.text else "utf-8"
        shapes[f"{shape}, {escaped}"] += 1
    kinds = Counter(str(record.get("kind")) for record in data.records)
    print(f"{len(data.transcripts)} transcripts, {turn_count} turns ({multiline} multi-line)")
    print("  " + ", ".join(f"{n} {shape}" for shape, n in sorted(shapes.items())))
    print("  roles: " + ", ".join(f"{role} {n}" for role, n in roles.most_common()))
    print(f"{len(data.records)} memory records")
    print("  kinds: " + ", ".join(f"{kind} {n}" for kind, n in kinds.most_common()))
    print(f"{len(data.questions)} questions")


def turn_contents(data: LoadedData) -> dict[str, list[str]]:
    """Each readable transcript's turn contents, by URI."""
    contents: dict[str, list[str]] = {}
    for transcript in data.transcripts:
        try:
            contents[transcript.uri] = [turn["content"] for turn in read_turns(transcript)]
        except (ValueError, KeyError, TypeError):
            continue  # check_files reports it
    return contents


def report_questions(resolved: list[ResolvedQuestion], size: int | None, data: LoadedData) -> None:
    turns = turn_contents(data)
    shown = "default" if size is None else str(size)
    print(f"\nquestions by target, category and overlap with the target (chunk size {shown}):")
    print_overlap_table(
        Counter((item.question.target, item.question.category, item.overlap) for item in resolved)
    )
    print("\nthe same, overlap counted against the answering turn alone (records: unchanged):")
    by_answer: Counter[tuple[str, str, str]] = Counter()
    for item in resolved:
        label = item.overlap
        if item.question.target == "chunk":
            shared = answer_overlap(item.question, turns, data)
            label = _label(len(shared), len(item.content_words))
        by_answer[item.question.target, item.question.category, label] += 1
    print_overlap_table(by_answer)
    tags = Counter(tag for item in resolved for tag in item.question.tags)
    print("tags: " + ", ".join(f"{tag} {tags[tag]}" for tag in dataset.TAGS))
    escaped = sum(item.escaped for item in resolved)
    non_ascii = sum(item.non_ascii for item in resolved)
    print(f"answers stored with ASCII escapes: {escaped}; non-ASCII text involved: {non_ascii}")


def _label(shared: int, content: int) -> str:
    if not shared:
        return "none"
    return "all" if shared == content else "some"


def print_overlap_table(table: Counter[tuple[str, str, str]]) -> None:
    labels = dataset.OVERLAP_LABELS
    print(f"  {'target':<8}{'category':<12}" + "".join(f"{label:>7}" for label in labels))
    for target in ("chunk", "record"):
        for category in dataset.CATEGORIES:
            counts = [table[target, category, label] for label in labels]
            if any(counts):
                cells = "".join(f"{n:>7}" for n in counts)
                print(f"  {target:<8}{category:<12}{cells}  {sum(counts):>5}")
    totals: Counter[str] = Counter()
    for (_, _, label), n in table.items():
        totals[label] += n
    cells = "".join(f"{totals[label]:>7}" for label in labels)
    print(f"  {'all':<20}{cells}  {sum(totals.values()):>5}")


if __name__ == "__main__":
    sys.exit(main())
