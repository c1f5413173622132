"""The top-k index of memory records' words, kept by tantivy beside the store.

Why tantivy: a search engine made for top-k over an inverted index (block-max WAND skips the
documents that cannot reach the top), a single wheel with no runtime of its own, and files that
several processes can read while one writes. Measured on the benchmark corpus at 100,000
records: an `any` question in 2.4 ms and a keyword AND in 0.9 ms, where FTS5 ranks every row
holding a word (a second and more); built in 2.2 s, 8 MB on disk (docs/performance.md).

What it holds: each record's id (stored), scope and status (filter terms) and content (words
with positions, not stored). Tokens are cut at every character that is not a letter or digit,
lower-cased and folded to ASCII where a letter has a plain form (`Crème` is `creme`), which is
FTS5's `unicode61` with its diacritics removed, plus ligatures and `ß` folded: the documented
differences are in docs/search.md. Each token is then stemmed as FTS5's `porter` tokenizer
stems it (`lantern.retrieval.stemming`; tantivy's own stemmer is another algorithm) and the
stems are indexed as they are. Scores are BM25 (k1 = 1.2, b = 0.75) over the records in
the index, every status, as FTS5's are over its table.

How it stays right: each generation keeps the feed mark (`lantern.indexes.feed`) of the last
change it applied in a file beside its tantivy files (`WordIndex.mark` says why not in the
index), written after the commit that applied the change. `ready` compares it with the store's
feed before every search and applies what changed since, under tantivy's own writer lock
(another process catching up is waited for).
A record that left the store (forgotten) makes the catch-up rebuild the index instead: deleted
documents leave their words in tantivy's segments until a merge, and a forgotten word must not
stay on disk. So does a generation of another format (`FORMAT`, recorded with the mark): an
index built before stemming holds words the queries no longer look up, and is rebuilt rather
than searched.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import time
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sqlalchemy import ColumnElement, Connection, Select, bindparam, func, select

from lantern.errors import StoreBusy
from lantern.indexes import feed, place
from lantern.indexes.feed import Mark
from lantern.retrieval.query import ParsedQuery
from lantern.retrieval.stemming import stem
from lantern.store.engine import Store, busy_timeout
from lantern.store.models import memory_records as records
from lantern.validation import JSONObject

if TYPE_CHECKING:
    import tantivy

NAME = "words"
ANALYZER = "lantern_words"
STEMS = "lantern_stems"
"""The content field's tokenizer since format 2: the text arrives as stems, one per space."""
FORMAT = 2
SNOWBALL_FORMAT = 3
"""The format of an index stemmed as PostgreSQL's `lantern_english` stems (Snowball's English
stemmer), which a server keeps for a PostgreSQL store: its words match the database's own."""
"""What a generation's documents hold, recorded beside its mark: 1 (no record) for words, 2 for
their stems. A generation of another format is rebuilt, never searched."""
MARK_FILE = "mark.json"
"""The feed mark of a generation, beside its tantivy files."""
AUTO_BUILD_UP_TO = 50_000
"""A store with at most this many records gets its index from its writes or a confined
caller's search (about a second at most); a larger one keeps searching inside the database
until `lantern db rebuild-index` builds it, so that nothing pays minutes unannounced."""
MAX_EXPANSION = 64
"""Words a `prefix*` is expanded to and scored by; beyond, it matches with a constant score."""
_CATCH_UP_HEAP = 32_000_000
_BUILD_HEAP = 256_000_000
_BATCH = 500
_ROWS = select(records.c.id, records.c.scope, records.c.status, records.c.content)
_ID_ONLY = select(records.c.id)


@functools.cache
def available() -> bool:
    """Whether tantivy is installed (the `index` extra)."""
    from importlib.util import find_spec

    return find_spec("tantivy") is not None


@dataclass(frozen=True, slots=True)
class Hit:
    record_id: str
    score: float


STALE: Any = object()
"""What `catch_up` returns for a generation that must be rebuilt rather than caught up."""


@dataclass(frozen=True, slots=True)
class Fence:
    """The records an index holds: all of them, or those of a confined caller's scopes.

    A caller confined to some scopes searches an index of its scopes' records alone, so that
    every number BM25 weighs (how many records hold a word, how long they are on average) is
    counted within its scopes: its scores and their order are the same whatever the rest of
    the store holds. `where` is the confinement as SQL conditions (the scope policy's)."""

    patterns: tuple[tuple[str, bool], ...] = ()
    where: tuple[ColumnElement[bool], ...] = field(default=(), compare=False)

    @property
    def name(self) -> str:
        """`words` for the whole store; `words-` and a digest of the patterns for a fence."""
        if not self.patterns:
            return NAME
        canonical = json.dumps(sorted(self.patterns), ensure_ascii=False)
        return f"{NAME}-{hashlib.sha256(canonical.encode('utf-8')).hexdigest()[:16]}"


WHOLE_STORE = Fence()


class WordIndex:
    """One generation of the index, open for searching and catching up."""

    def __init__(
        self, directory: Path, path: Path, fence: Fence = WHOLE_STORE, *, snowball: bool = False
    ) -> None:
        import tantivy

        self.snowball = snowball
        self.directory = directory
        self.path = path
        self.fence = fence
        self._index = tantivy.Index.open(str(path))
        self._index.register_tokenizer(ANALYZER, _analyzer())
        self._index.register_tokenizer(STEMS, _stems_analyzer())
        self._schema = self._index.schema
        self._kept: tuple[Mark, tantivy.Searcher] | None = None

    @property
    def generation(self) -> str:
        return self.path.name

    # --- the mark ----------------------------------------------------------------------

    def mark(self) -> Mark | None:
        """The feed mark this generation holds (None: not a finished build).

        It is kept in a file of its own, replaced atomically after each tantivy commit, not as
        a document: a document rewritten at every catch-up would leave deleted documents in
        tantivy's statistics, and move every score a little on any write to the store, even
        one outside a fenced index's scopes. A crash between the commit and the file leaves
        the mark behind; the changes since are applied again, which changes nothing."""
        try:
            found = json.loads((self.path / MARK_FILE).read_text(encoding="utf-8"))
            if found.get("format", 1) != (SNOWBALL_FORMAT if self.snowball else FORMAT):
                return None  # another format: rebuilt as a generation that did not finish
            return Mark.from_json(found)
        except (OSError, ValueError, KeyError, TypeError):
            return None

    def searcher(self) -> tantivy.Searcher:
        self._index.reload()
        return self._index.searcher()

    # --- searching ---------------------------------------------------------------------

    def query(
        self,
        searcher: tantivy.Searcher,
        parsed: ParsedQuery,
        *,
        statuses: Sequence[str] | None,
        scopes: Sequence[Sequence[tuple[str, bool]]],
    ) -> tantivy.Query | None:
        """The tantivy query for a parsed query, within statuses and scope patterns (each
        sequence of patterns must admit the record: the caller's filter, the policy). Only
        the words score: the filters are wrapped to add nothing to a score."""
        import tantivy

        words = _words_query(self._schema, searcher, parsed, self.snowball)
        if words is None:
            return None
        filters = []
        if statuses is not None:
            filters.append(_any_term(self._schema, "status", statuses))
        filters += [_scope_query(self._schema, patterns) for patterns in scopes if patterns]
        must = tantivy.Occur.Must
        clauses = [(must, words)]
        clauses += [(must, tantivy.Query.const_score_query(part, 0.0)) for part in filters]
        return tantivy.Query.boolean_query(clauses) if len(clauses) > 1 else words

    def score_of(
        self, searcher: tantivy.Searcher, query: tantivy.Query, record_id: str
    ) -> float | None:
        """One record's score for the query as the index ranks it now (None: no match)."""
        import tantivy

        only = tantivy.Query.const_score_query(
            tantivy.Query.term_query(self._schema, "id", record_id), 0.0
        )
        must = tantivy.Occur.Must
        found = searcher.search(tantivy.Query.boolean_query([(must, query), (must, only)]), 1)
        return float(found.hits[0][0]) if found.hits else None

    def ranked(
        self, searcher: tantivy.Searcher, query: tantivy.Query, first: int
    ) -> Iterator[list[Hit]]:
        """The matches, best score first, in rounds of about `first`, then four times as
        many: each round holds every match of its scores (ties never straddle two rounds)
        and scores strictly below the round before."""
        offset = 0
        size = max(1, first)
        held: list[Hit] = []
        while True:
            found = searcher.search(query, size, count=False, offset=offset).hits
            offset += len(found)
            hits = [Hit(_id_of(searcher, address), float(score)) for score, address in found]
            pool = held + hits
            if len(found) < size:
                yield pool
                return
            lowest = hits[-1].score
            ready = [hit for hit in pool if hit.score > lowest]
            held = [hit for hit in pool if hit.score == lowest]
            if ready:
                yield ready
            size *= 4

    # --- keeping it current ------------------------------------------------------------

    def ready(self, store: Store) -> Any:
        """A searcher that has every change the store committed up to now; `STALE` when this
        generation must be rebuilt instead (another store's, or a record was forgotten); None
        when another process held the writer past the busy timeout.

        The searcher of the last call is kept with its mark: while the store's feed has not
        moved, a search costs one look-up in the store and no file is read."""
        kept = self._kept
        if kept is not None and feed.unchanged(store, feed.MEMORY, kept[0]):
            return kept[1]
        with store.read() as conn:
            now = Mark.now(conn, feed.MEMORY)
            if (
                kept is not None
                and self.fence.patterns
                and feed.belongs(conn, kept[0], now)
                and not self._concerned(conn, kept[1], kept[0], now)
            ):
                # Only records outside the fence changed since the last call: its searcher
                # serves, with no file read, written, synced or reloaded, so that a confined
                # caller's search takes about as long whether or not others wrote.
                self._kept = (now, kept[1])
                return kept[1]
            searcher = self.searcher()
            mark = self.mark()
            if mark != now:
                if mark is None or not feed.belongs(conn, mark, now):
                    return STALE
                if feed.lacking(conn, feed.MEMORY, mark, now):
                    if self.fence.patterns and not self._concerned(conn, searcher, mark, now):
                        # Only records outside the fence changed: nothing is written or
                        # synced. The mark on disk stays behind; the next catch-up starts
                        # from it, and this process remembers how far it looked.
                        self._kept = (now, searcher)
                        return searcher
                    caught_up = self._catch_up(conn, now)
                    if caught_up is not True:
                        return caught_up
                    searcher = self.searcher()
                    mark = now
        self._kept = (mark, searcher)
        return searcher

    def _catch_up(self, conn: Connection, now: Mark) -> Any:
        """Apply the feed up to `now` under the writer lock: True, or `STALE`, or None."""
        writer = _writer(self._index, _CATCH_UP_HEAP)
        if writer is None:
            return None
        try:
            mark = self.mark()  # what the lock holder before us left
            if mark is None or not feed.belongs(conn, mark, now):
                return STALE
            if feed.lacking(conn, feed.MEMORY, mark, now):
                changed = feed.changed(conn, feed.MEMORY, mark, now)
                present = {row[0] for row in _rows_of(conn, changed, _ID_ONLY)}
                gone = [record_id for record_id in changed if record_id not in present]
                if gone and not self.fence.patterns:
                    return STALE  # a record left the store: its words must leave the disk
                rows = _rows_of(conn, changed, _ROWS.where(*self.fence.where))
                searcher = self.searcher()
                held = self.held(searcher, changed)
                if set(gone) & set(held):
                    return STALE  # a record of the fence left the store: the same
                if rows or held:  # nothing of the fence changed: the index stays as it is
                    for record_id in held:
                        writer.delete_documents_by_term("id", record_id)
                    _add_rows(writer, rows, self.snowball)
                    writer.commit()
                    writer.wait_merging_threads()
                    writer = None
                _write_mark(self.path, now, self.snowball)
        finally:
            if writer is not None:
                writer.rollback()
        return True

    def _concerned(
        self, conn: Connection, searcher: tantivy.Searcher, mark: Mark, now: Mark
    ) -> bool:
        """Whether a change of the feed after `mark` up to `now` touches this fence: a record
        in it now, or one the index holds (that left the fence, or the store)."""
        changed = feed.changed(conn, feed.MEMORY, mark, now)
        if not changed:
            return False
        if _rows_of(conn, changed, _ID_ONLY.where(*self.fence.where)):
            return True
        return bool(self.held(searcher, changed))

    def held(self, searcher: tantivy.Searcher, record_ids: list[str]) -> list[str]:
        """Those of `record_ids` the index holds a document of (one query for them all)."""
        found: list[str] = []
        for start in range(0, len(record_ids), _BATCH):
            part = record_ids[start : start + _BATCH]
            query = _any_term(self._schema, "id", part)
            hits = searcher.search(query, len(part), count=False).hits
            found += [_id_of(searcher, address) for _score, address in hits]
        return found

    def holds(
        self,
        searcher: tantivy.Searcher,
        record_id: str,
        scope: str | None = None,
        state: str | None = None,
    ) -> bool:
        """Whether the index holds exactly one document of this record (in this scope and
        status, when given)."""
        import tantivy

        must = tantivy.Occur.Must
        clauses = [(must, tantivy.Query.term_query(self._schema, "id", record_id))]
        for name, value in (("scope", scope), ("status", state)):
            if value is not None:
                clauses.append((must, tantivy.Query.term_query(self._schema, name, value)))
        query = tantivy.Query.boolean_query(clauses)
        return len(searcher.search(query, 2, count=False).hits) == 1

    def documents(self, searcher: tantivy.Searcher) -> int:
        """Records in this generation."""
        return int(searcher.num_docs)


def open_current(store: Store, fence: Fence = WHOLE_STORE) -> WordIndex | None:
    """The store's current generation for this fence, if it has one that opens."""
    directory = place.directory(store.location)
    if directory is None or not available():
        return None
    path = place.current(directory, fence.name)
    if path is None:
        return None
    try:
        return WordIndex(directory, path, fence, snowball=_snowball(store))
    except (ValueError, OSError):
        return None


def build(store: Store, directory: Path, fence: Fence = WHOLE_STORE) -> WordIndex:
    """A new generation from every record in the fence, published as the current one; one
    build of an index at a time, across processes (`place.locked`).

    Raises:
        StoreBusy: Another process held the index's build lock past the busy timeout.
    """
    with place.locked(directory, fence.name) as held:
        if not held:
            raise StoreBusy(
                f"the word index beside {directory} is being built by another process; "
                "try again when it is done"
            )
        return _build(store, directory, fence)


def _build(store: Store, directory: Path, fence: Fence) -> WordIndex:
    import tantivy

    path = place.new_generation(directory, fence.name)
    index = tantivy.Index(_schema(), path=str(path))
    index.register_tokenizer(STEMS, _stems_analyzer())
    writer = index.writer(_BUILD_HEAP)
    with store.read() as conn:
        now = Mark.now(conn, feed.MEMORY)
        rows = conn.execution_options(stream_results=True, yield_per=10_000).execute(
            _ROWS.where(*fence.where)
        )
        for partition in rows.partitions():
            _add_rows(writer, partition, _snowball(store))
    writer.commit()
    writer.wait_merging_threads()
    _write_mark(path, now, _snowball(store))
    place.publish(directory, fence.name, path)
    return WordIndex(directory, path, fence, snowball=_snowball(store))


def holds_record(directory: Path, name: str, record_id: str) -> bool:
    """Whether the current generation of the index `name` holds a record (True when it cannot
    be read: the caller then treats it as if it did)."""
    path = place.current(directory, name)
    if path is None:
        return False
    try:
        index = WordIndex(directory, path)
        return bool(index.held(index.searcher(), [record_id]))
    except (ValueError, OSError):
        return True


def fenced_names(directory: Path) -> list[str]:
    """The names of the fenced indexes beside a store (`words-...`)."""
    return sorted(
        pointer.name.removesuffix(".current") for pointer in directory.glob(f"{NAME}-*.current")
    )


def count_records(store: Store) -> int:
    with store.read() as conn:
        return int(conn.execute(select(func.count()).select_from(records)).scalar_one())


# --- documents ----------------------------------------------------------------------------


def _schema() -> tantivy.Schema:
    import tantivy

    builder = tantivy.SchemaBuilder()
    builder.add_text_field("id", stored=True, tokenizer_name="raw")
    builder.add_text_field("scope", tokenizer_name="raw")
    builder.add_text_field("status", tokenizer_name="raw")
    builder.add_text_field("content", tokenizer_name=STEMS, index_option="position")
    return builder.build()


@functools.cache
def _analyzer(snowball: bool = False) -> tantivy.TextAnalyzer:
    """Words split, lower-cased and folded to ASCII; with `snowball`, stemmed too by tantivy's
    Snowball English stemmer (PostgreSQL's stems; FTS5's Porter stems are `stem`'s)."""
    import tantivy

    builder = (
        tantivy.TextAnalyzerBuilder(tantivy.Tokenizer.simple())
        .filter(tantivy.Filter.lowercase())
        .filter(tantivy.Filter.ascii_fold())
    )
    if snowball:
        builder = builder.filter(tantivy.Filter.stemmer("english"))
    return builder.build()


@functools.cache
def _stems_analyzer() -> tantivy.TextAnalyzer:
    import tantivy

    return tantivy.TextAnalyzerBuilder(tantivy.Tokenizer.whitespace()).build()


def _snowball(store: Store) -> bool:
    """Whether the store's index stems as PostgreSQL does (Snowball) rather than as FTS5's
    `porter` does: the two stem some words differently (`deployment`, `generously`), and an
    index must find what its database finds."""
    return store.dialect == "postgresql"


def _stems(text: str, snowball: bool = False) -> list[str]:
    """The stems of a text's tokens, in order, as FTS5's `porter unicode61` indexes them, or
    as PostgreSQL's `lantern_english` does (`snowball`)."""
    if snowball:
        return list(_analyzer(snowball=True).analyze(text))
    return [stem(token) for token in _analyzer().analyze(text)]


def _add_rows(
    writer: tantivy.IndexWriter, rows: Iterable[Sequence[Any]], snowball: bool = False
) -> None:
    import tantivy

    for record_id, scope, status, content in rows:
        stems = " ".join(_stems(content, snowball))
        writer.add_document(
            tantivy.Document(id=record_id, scope=scope, status=status, content=stems)
        )


def _write_mark(path: Path, mark: Mark, snowball: bool = False) -> None:
    place.owner_only(path)  # the files of the commit before it
    staged = path / f".{MARK_FILE}.new"
    fd = os.open(staged, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with open(fd, "w", encoding="utf-8") as handle:
        kept = {**mark.to_json(), "format": SNOWBALL_FORMAT if snowball else FORMAT}
        json.dump(kept, handle)
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(staged, path / MARK_FILE)


def _rows_of(conn: Connection, ids: list[str], rows_of: Select[Any]) -> list[Sequence[Any]]:
    statement = rows_of.where(records.c.id.in_(bindparam("ids", expanding=True)))
    rows: list[Sequence[Any]] = []
    for start in range(0, len(ids), _BATCH):
        rows.extend(conn.execute(statement, {"ids": ids[start : start + _BATCH]}))
    return rows


def _writer(index: tantivy.Index, heap: int) -> tantivy.IndexWriter | None:
    """The index's writer, waiting for another process's catch-up as long as a write to the
    store would wait (`busy_timeout`); None if it is not let go by then."""
    deadline = time.monotonic() + busy_timeout()
    delay = 0.005
    while True:
        try:
            return index.writer(heap, 1)
        except ValueError as exc:
            if "LockBusy" not in str(exc) or time.monotonic() >= deadline:
                return None
        time.sleep(delay)
        delay = min(delay * 2, 0.1)


def _escape(text: str) -> str:
    """`text` as a literal in tantivy's regular expressions (Rust's syntax)."""
    return "".join(char if char.isalnum() else f"\\x{{{ord(char):X}}}" for char in text)


def _id_of(searcher: tantivy.Searcher, address: tantivy.DocAddress) -> str:
    return str(searcher.doc(address)["id"][0])


# --- queries -------------------------------------------------------------------------------


def _words_query(
    schema: tantivy.Schema, searcher: tantivy.Searcher, parsed: ParsedQuery, snowball: bool
) -> tantivy.Query | None:
    import tantivy

    occur = tantivy.Occur.Should if parsed.match_any else tantivy.Occur.Must
    clauses = []
    for term in parsed.terms:
        # FTS5 folds and stems what it is given, a prefix already cut back (`indexed_tokens`).
        tokens: list[str | tuple[int, str]] = list(_stems(" ".join(term.indexed_tokens), snowball))
        if not tokens:
            continue
        if len(tokens) == 1:
            if term.prefix:
                part = _prefix_query(schema, searcher, str(tokens[0]))
            else:
                part = _word_query(schema, searcher, str(tokens[0]))
        elif term.prefix:
            part = tantivy.Query.phrase_prefix_query(schema, "content", tokens)
        else:
            part = _phrase_query(schema, searcher, [str(token) for token in tokens])
        clauses.append((occur, part))
    return tantivy.Query.boolean_query(clauses) if clauses else None


def _prefix_query(schema: tantivy.Schema, searcher: tantivy.Searcher, prefix: str) -> tantivy.Query:
    """`prefix*`: any of the words that start with it, each scored by BM25 as a word typed in
    full would be (a record holding several of them scores their sum). Past `MAX_EXPANSION`
    such words the prefix matches them all with a constant score of 1, which costs no more
    however common it is."""
    import tantivy

    expansion = searcher.terms_with_prefix("content", prefix, limit=MAX_EXPANSION + 1)
    if not expansion or len(expansion) > MAX_EXPANSION:
        return tantivy.Query.regex_query(schema, "content", _escape(prefix) + ".*")
    should = tantivy.Occur.Should
    return tantivy.Query.boolean_query(
        [(should, _word_query(schema, searcher, word, count)) for word, count in expansion]
    )


def _phrase_query(
    schema: tantivy.Schema, searcher: tantivy.Searcher, words: list[str]
) -> tantivy.Query:
    """Words next to each other (`don't`, `user's`, a quoted phrase), weighted as FTS5 weighs
    a phrase: by how many records hold it, taken here as the records holding its rarest word
    (counting the phrase itself would read every record holding its words). tantivy weighs a
    phrase by the sum of its words' weights; the boost is the ratio."""
    import tantivy

    query = tantivy.Query.phrase_query(schema, "content", list[str | tuple[int, str]](words))
    counts = [searcher.doc_freq("content", word) for word in words]
    total = int(searcher.num_docs)
    if not all(counts) or not total:
        return query
    own = sum(_own_weight(total, n) for n in counts)
    return tantivy.Query.boost_query(query, _fts5_weight(total, min(counts)) / own)


def _fts5_weight(total: int, holding: int) -> float:
    import math

    total = max(total, holding)  # deleted documents count in `holding` until they merge
    return max(math.log((total - holding + 0.5) / (holding + 0.5)), 1e-6)


def _own_weight(total: int, holding: int) -> float:
    import math

    total = max(total, holding)
    return math.log(1 + (total - holding + 0.5) / (holding + 0.5))


def _word_query(
    schema: tantivy.Schema, searcher: tantivy.Searcher, word: str, holding: int | None = None
) -> tantivy.Query:
    """One word, weighted as FTS5 weighs it. tantivy's BM25 gives a word found in `n` of `N`
    records the weight ln(1 + (N - n + 0.5) / (n + 0.5)); FTS5's is ln((N - n + 0.5) / (n +
    0.5)), at least 10^-6, which all but ignores a word found in more than half the records.
    The query is boosted by the ratio, so a record's score is FTS5's weighting of the words
    it holds (measured on the recall set: tantivy's own weights put answers lower), with
    tantivy's length normalisation."""
    import tantivy

    query = tantivy.Query.term_query(schema, "content", word)
    n = searcher.doc_freq("content", word) if holding is None else holding
    total = int(searcher.num_docs)
    if not n or not total:
        return query
    return tantivy.Query.boost_query(query, _fts5_weight(total, n) / _own_weight(total, n))


def _scope_query(schema: tantivy.Schema, patterns: Sequence[tuple[str, bool]]) -> tantivy.Query:
    """Records in any of the patterns' scopes: exact terms, and prefixes as term-dictionary
    automata (the database checks the patterns again; this only has to admit every match)."""
    import tantivy

    exact = [text for text, prefix in patterns if not prefix]
    should = tantivy.Occur.Should
    clauses = [
        (should, tantivy.Query.regex_query(schema, "scope", _escape(text) + ".*"))
        for text, prefix in patterns
        if prefix
    ]
    if exact:
        clauses.append((should, _any_term(schema, "scope", exact)))
    return clauses[0][1] if len(clauses) == 1 else tantivy.Query.boolean_query(clauses)


def _any_term(schema: tantivy.Schema, field: str, values: Sequence[str]) -> tantivy.Query:
    """Documents whose `field` is one of `values` (a term query for one: the cheaper)."""
    import tantivy

    if len(values) == 1:
        return tantivy.Query.term_query(schema, field, values[0])
    return tantivy.Query.term_set_query(schema, field, list(values))


# --- status and checks ---------------------------------------------------------------------

_SAMPLE = 200


def status(store: Store) -> JSONObject:
    """What `db status` says of the word index: `state` is `current`, `behind` (caught up at
    the next search), `stale` (rebuilt at the next search or by `db rebuild-index`), `absent`
    or `unavailable` (no tantivy, or a store that keeps no index beside it). For a PostgreSQL
    store, the index a server process on this host keeps for it (`place.serve`)."""
    directory = place.directory(store.location, looking=True)
    if directory is None or not available():
        return {"state": "unavailable", "records": None, "size_bytes": None, "behind_by": None}
    path = place.current(directory, NAME)
    if path is None:
        return {"state": "absent", "records": None, "size_bytes": None, "behind_by": None}
    index = WordIndex(directory, path, snowball=_snowball(store))
    searcher = index.searcher()
    mark = index.mark()
    with store.read() as conn:
        now = Mark.now(conn, feed.MEMORY)
        usable = mark is not None and feed.belongs(conn, mark, now)
        behind = None if mark is None or not usable else feed.lacking(conn, feed.MEMORY, mark, now)
    state = "stale" if not usable else "behind" if behind else "current"
    return {
        "state": state,
        "records": index.documents(searcher),
        "size_bytes": place.size(path),
        "behind_by": behind,
    }


def verify(store: Store) -> list[str] | None:
    """Problems of the word index (empty: none); None when the store has none to check.

    Reads only. An index behind the feed is not a problem (the next search catches it up):
    its records are compared with the table only when it is current."""
    directory = place.directory(store.location, looking=True)
    if directory is None or not available() or place.current(directory, NAME) is None:
        return None
    try:
        index = WordIndex(
            directory, place.current(directory, NAME) or directory, snowball=_snowball(store)
        )
        searcher = index.searcher()
        mark = index.mark()
    except (OSError, ValueError) as exc:
        return [f"the word index cannot be read ({exc}); lantern db rebuild-index builds it again"]
    rebuild = "lantern db rebuild-index builds it again"
    with store.read() as conn:
        now = Mark.now(conn, feed.MEMORY)
        if mark is None or not feed.belongs(conn, mark, now):
            return [f"the word index was not built from this store's changes; {rebuild}"]
        if feed.lacking(conn, feed.MEMORY, mark, now):
            return []
        problems = []
        total = int(conn.execute(select(func.count()).select_from(records)).scalar_one())
        if index.documents(searcher) != total:
            problems.append(
                f"the word index holds {index.documents(searcher)} records and the store "
                f"{total}; {rebuild}"
            )
        sample = conn.execute(
            select(records.c.id, records.c.scope, records.c.status)
            .order_by(func.random())
            .limit(_SAMPLE)
        )
        for record_id, scope, state in sample:
            if not index.holds(searcher, record_id, scope, state):
                problems.append(
                    f"the word index does not hold {record_id} as the store does; {rebuild}"
                )
        return problems
