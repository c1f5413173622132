"""The recall benchmark's data set: transcripts, memory records and questions, and their loader.

`open_dataset(path)` builds a Lantern store from the files under `data/` through the public API
and resolves every question to the one chunk or memory record that answers it:

* a chunk question names its transcript's URI and a distinctive substring of the answering
  turn; after ingestion it resolves to the single chunk of that source whose text contains the
  substring (as the file spells it: a transcript written with ASCII escapes holds `caf\\u00e9`
  where the question's substring says `café`);
* a record question names a distinctive substring of the record's content.

A substring that matches no candidate, or several, is an error in the data set: `resolve`
raises `DatasetError` listing every such question, so a benchmark never runs on a question
whose expected answer is ambiguous.

Each resolved question also carries its lexical overlap with the text it should find: the
question's words (tokenised as SQLite's `unicode61` tokenizer does, minus `STOP_WORDS`) that
also occur in the target's text. `none` means a keyword search has nothing but common words to
go on; `all` means every content word of the question is in the target.
"""

from __future__ import annotations

import json
import re
import unicodedata
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lantern import Lantern

DATA = Path(__file__).resolve().parent / "data"
TRANSCRIPT_DIR = "transcripts"
TRANSCRIPT_SUFFIXES = (".jsonl", ".json")

CATEGORIES = ("paraphrase", "mixed", "identifier")
"""How a question was written: `paraphrase` shares no content word with its answer by
intent, `identifier` hinges on an exact token (an error code, a ticket id, a file name),
`mixed` shares some words and rewords the rest."""

TAGS = ("current", "past")
"""`current`: the question asks for the latest of several states the data holds (the user
moved, the deadline slipped); `past`: it asks for an earlier one."""

OVERLAP_LABELS = ("none", "some", "all")

_STOP_WORD_TEXT = """
    a about after again all also am an and any are as at be been before being but by can could
    did do does doing done for from had has have having he her here hers him his how i if in
    into is it its just me more most my no not now of on once only or other our out over own
    same she should so some such than that the their them then there these they this those to
    too under until up very was we were what when where which while who whom why will with
    would you your yours
    s t d ll m re ve
    role content ts user assistant tool system messages
"""
STOP_WORDS = frozenset(_STOP_WORD_TEXT.split())
"""Words left out when overlap is counted: English function and question words, the pieces
that apostrophes leave behind (`don't` is `don` `t`), and the words every transcript line
carries (`"role": "user"`, `"content"`). The person every question asks about is "the user",
so that word carries no information either."""

_TOKEN = re.compile(r"[^\W_]+")


class DatasetError(Exception):
    """The data set is inconsistent: a file is malformed or a question does not resolve."""


@dataclass(frozen=True, slots=True)
class Question:
    """One question as written in `questions.json`."""

    id: str
    text: str
    category: str
    target: str
    """`chunk` or `record`."""
    contains: str
    uri: str | None
    """The transcript's URI, for a chunk question."""
    tags: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class ResolvedQuestion:
    """A question with the id and text of the chunk or record that answers it."""

    question: Question
    target_id: str
    target_text: str
    shared_words: tuple[str, ...]
    content_words: tuple[str, ...]
    escaped: bool
    """The answer's substring is stored with ASCII escapes (`\\u00e9`), so its non-ASCII
    words are not the words a search for them would use."""

    @property
    def non_ascii(self) -> bool:
        """The question or its answer's substring holds non-ASCII text."""
        return not (self.question.text.isascii() and self.question.contains.isascii())

    @property
    def overlap(self) -> str:
        """`none`, `some` or `all` of the question's content words occur in the target."""
        if not self.shared_words:
            return "none"
        if len(self.shared_words) == len(self.content_words):
            return "all"
        return "some"


@dataclass(frozen=True, slots=True)
class Transcript:
    uri: str
    text: str
    path: Path


@dataclass(frozen=True, slots=True)
class LoadedData:
    """Everything the files hold, before any store is involved."""

    transcripts: tuple[Transcript, ...]
    records: tuple[Mapping[str, Any], ...]
    questions: tuple[Question, ...]


@dataclass(frozen=True, slots=True)
class Dataset:
    """An open store holding the data set, and the questions resolved against it."""

    lantern: Lantern
    questions: tuple[ResolvedQuestion, ...]
    chunk_count: int
    record_ids: tuple[str, ...]

    def close(self) -> None:
        self.lantern.close()

    def __enter__(self) -> Dataset:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


# --- reading the files -------------------------------------------------------------------------


def load(data_dir: Path = DATA) -> LoadedData:
    """Read the transcripts, records and questions under `data_dir`."""
    return LoadedData(
        transcripts=tuple(load_transcripts(data_dir)),
        records=tuple(load_records(data_dir / "records.json")),
        questions=tuple(load_questions(data_dir / "questions.json")),
    )


def load_transcripts(data_dir: Path = DATA) -> list[Transcript]:
    """The transcript files, in name order; a file's URI is its path under `data_dir`."""
    folder = data_dir / TRANSCRIPT_DIR
    found = [
        Transcript(
            uri=f"{TRANSCRIPT_DIR}/{path.name}",
            text=path.read_text(encoding="utf-8"),
            path=path,
        )
        for path in sorted(folder.iterdir())
        if path.suffix in TRANSCRIPT_SUFFIXES
    ]
    if not found:
        raise DatasetError(f"no transcripts under {folder}")
    return found


def load_records(path: Path) -> list[Mapping[str, Any]]:
    """The memory records: a JSON array of objects holding `memory add`'s arguments."""
    records = _read_json(path)
    if not isinstance(records, list) or not all(isinstance(r, dict) for r in records):
        raise DatasetError(f"{path}: expected a JSON array of objects")
    return records


def load_questions(path: Path) -> list[Question]:
    """The questions, checked for shape; resolving them needs a store (see `resolve`)."""
    raw = _read_json(path)
    if not isinstance(raw, list):
        raise DatasetError(f"{path}: expected a JSON array of questions")
    questions: list[Question] = []
    problems: list[str] = []
    for position, entry in enumerate(raw):
        try:
            questions.append(_question(entry))
        except (KeyError, TypeError, ValueError) as exc:
            problems.append(f"question {position} ({_shown_id(entry)}): {exc}")
    ids = [question.id for question in questions]
    problems += [f"question id {qid} is used more than once" for qid in _repeated(ids)]
    texts = [question.text for question in questions]
    problems += [f"question {text!r} is asked more than once" for text in _repeated(texts)]
    if problems:
        raise DatasetError(listing(f"{path}: malformed questions", problems))
    return questions


def _question(entry: object) -> Question:
    if not isinstance(entry, dict):
        raise TypeError("not an object")
    category = entry["category"]
    if category not in CATEGORIES:
        raise ValueError(f"category must be one of {', '.join(CATEGORIES)}; got {category!r}")
    tags = tuple(entry.get("tags", ()))
    unknown = [tag for tag in tags if tag not in TAGS]
    if unknown:
        raise ValueError(f"unknown tags {unknown}; known: {', '.join(TAGS)}")
    if ("chunk" in entry) == ("record" in entry):
        raise ValueError("give exactly one of 'chunk' and 'record'")
    target = "chunk" if "chunk" in entry else "record"
    spec = entry[target]
    contains = spec["contains"]
    if not isinstance(contains, str) or not contains.strip():
        raise ValueError("'contains' must be a non-empty string")
    uri = spec["uri"] if target == "chunk" else None
    text = entry["question"]
    if not isinstance(text, str) or not text.strip():
        raise ValueError("'question' must be a non-empty string")
    return Question(
        id=str(entry["id"]),
        text=text,
        category=category,
        target=target,
        contains=contains,
        uri=uri,
        tags=tags,
    )


def _read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise DatasetError(f"{path}: {exc}") from exc


# --- building a store and resolving the questions ----------------------------------------------


def open_dataset(
    db: str | Path,
    *,
    data_dir: Path = DATA,
    target_size: int | None = None,
) -> Dataset:
    """Create a store at `db` (a path or URL of a new, empty store), fill it, resolve questions.

    `target_size` is the chunk size handed to ingestion (Lantern's default when None). The
    returned `Dataset` owns the open `Lantern`; close it (or use it as a context manager).
    """
    data = load(data_dir)
    lantern = Lantern.open(db)
    try:
        if lantern.evidence.list_sources(limit=1) or lantern.memory.list(limit=1):
            raise DatasetError(f"{db} is not empty; the benchmark builds its own store")
        chunks = ingest_transcripts(lantern, data.transcripts, target_size=target_size)
        records = add_records(lantern, data.records)
        resolved = resolve(data.questions, chunks, records)
    except BaseException:
        lantern.close()
        raise
    return Dataset(
        lantern=lantern,
        questions=tuple(resolved),
        chunk_count=sum(len(found) for found in chunks.values()),
        record_ids=tuple(record_id for record_id, _ in records),
    )


def ingest_transcripts(
    lantern: Lantern, transcripts: Iterable[Transcript], *, target_size: int | None = None
) -> dict[str, list[tuple[str, str]]]:
    """Ingest each transcript as kind `transcript`; `(chunk id, chunk text)` by URI, in order."""
    chunks: dict[str, list[tuple[str, str]]] = {}
    for transcript in transcripts:
        if target_size is None:
            lantern.evidence.ingest_text(transcript.uri, transcript.text, kind="transcript")
        else:
            lantern.evidence.ingest_text(
                transcript.uri, transcript.text, kind="transcript", target_size=target_size
            )
        source = lantern.evidence.get_source(transcript.uri)
        found = source.chunks or ()
        not_turns = [chunk.id for chunk in found if "turns" not in chunk.metadata]
        if not_turns:
            raise DatasetError(f"{transcript.uri} was not read as a transcript")
        chunks[transcript.uri] = [(chunk.id, chunk.text) for chunk in found]
    return chunks


def add_records(lantern: Lantern, records: Sequence[Mapping[str, Any]]) -> list[tuple[str, str]]:
    """Add the records in one batch; `(record id, content)` for each, in file order."""
    written = lantern.memory.add_many(records)
    repeated = [record.content for record, created in written if not created]
    if repeated:
        raise DatasetError(listing("records repeated in records.json", repeated))
    return [(record.id, record.content) for record, _ in written]


def resolve(
    questions: Iterable[Question],
    chunks: Mapping[str, Sequence[tuple[str, str]]],
    records: Sequence[tuple[str, str]],
) -> list[ResolvedQuestion]:
    """Pair each question with the one chunk or record containing its substring, or raise."""
    resolved: list[ResolvedQuestion] = []
    problems: list[str] = []
    for question in questions:
        if question.target == "chunk":
            if question.uri is None or question.uri not in chunks:
                problems.append(f"{question.id}: no transcript {question.uri!r}")
                continue
            forms = spellings(question.contains)
            candidates = [
                (chunk_id, text)
                for chunk_id, text in chunks[question.uri]
                if any(form in text for form in forms)
            ]
            where = question.uri
            escaped = bool(candidates) and not any(form in candidates[0][1] for form in forms[:2])
        else:
            candidates = [(rid, text) for rid, text in records if question.contains in text]
            where = "the records"
            escaped = False
        if len(candidates) != 1:
            problems.append(
                f"{question.id}: {question.contains!r} matches {len(candidates)} "
                f"{question.target}s in {where} (expected exactly one)"
            )
            continue
        target_id, target_text = candidates[0]
        content = content_words(question.text)
        target_words = set(words(target_text))
        resolved.append(
            ResolvedQuestion(
                question=question,
                target_id=target_id,
                target_text=target_text,
                shared_words=tuple(word for word in content if word in target_words),
                content_words=content,
                escaped=escaped,
            )
        )
    if problems:
        raise DatasetError(listing("questions that do not resolve to exactly one target", problems))
    return resolved


def spellings(text: str) -> tuple[str, ...]:
    """The ways a transcript file may spell `text` inside a JSON string, the escaped one last.

    The chunk text is a verbatim slice of the file, so a turn's content appears there as JSON
    string source: quotes and newlines escaped, and non-ASCII escaped too where the file was
    written with `ensure_ascii`.
    """
    return (
        text,
        json.dumps(text, ensure_ascii=False)[1:-1],
        json.dumps(text, ensure_ascii=True)[1:-1],
    )


# --- words -------------------------------------------------------------------------------------


def words(text: str) -> list[str]:
    """Tokens as SQLite's `unicode61` tokenizer makes them (diacritics removed, lower case):
    runs of letters and digits, split at anything else, underscores included."""
    folded = unicodedata.normalize("NFKD", text)
    folded = "".join(ch for ch in folded if not unicodedata.combining(ch))
    return _TOKEN.findall(folded.casefold())


def content_words(text: str) -> tuple[str, ...]:
    """The distinct words of `text` that are not `STOP_WORDS`, in order of appearance."""
    return tuple(dict.fromkeys(word for word in words(text) if word not in STOP_WORDS))


# --- helpers -----------------------------------------------------------------------------------


def _repeated(values: Iterable[str]) -> list[str]:
    seen: set[str] = set()
    repeated: list[str] = []
    for value in values:
        if value in seen and value not in repeated:
            repeated.append(value)
        seen.add(value)
    return repeated


def _shown_id(entry: object) -> str:
    return str(entry.get("id", "?")) if isinstance(entry, dict) else "?"


def listing(title: str, problems: Sequence[str]) -> str:
    """A title with its count, then one problem per indented line."""
    return "\n  ".join([f"{title} ({len(problems)}):", *problems])
