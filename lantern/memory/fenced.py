"""A confined caller's keyword ranking on SQLite when the word index cannot serve it.

FTS5's `bm25()` weighs a word by how many rows of the whole table hold it and a row's length by
the average of the whole table, so its scores and its order would tell a confined caller
whether records outside its scopes hold the query's words. Where the fenced word index
(`lantern.indexes.words.Fence`) is missing (tantivy not installed, `LANTERN_INDEXES=off`, an
index that cannot be read now), a confined search on SQLite ranks here instead, by BM25 with
every statistic counted within the caller's scopes:

- how many records hold each term, and how often it occurs in each: FTS5's matches of the
  term alone among the scopes' records (so a phrase and a prefix match as FTS5 matches them),
  and the instances its `highlight()` marks, in one statement a term;
- a record's length: its characters, against the average of the scopes' records.

FTS5 finds the matches (with the search's filters and the scope policy); their scores are
computed in Python, and the whole ranking is made before the first page is cut from it. The
ranking has the interface of `lantern.memory.topk.Ranking`, so the pages are cut as they are
from the word index. On PostgreSQL `ts_rank_cd` has no store-wide statistics and ranks in the
database as for every caller.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterator
from typing import Any

from sqlalchemy import Select, func, literal_column, select

from lantern.memory import fts
from lantern.memory.core import MemoryCore
from lantern.memory.cursor import list_key
from lantern.memory.filters import Conditions
from lantern.memory.records import MemoryRecord
from lantern.memory.rows import row_to_record
from lantern.retrieval.query import ParsedQuery
from lantern.store.models import memory_records as table

_K1 = 1.2
_B = 0.75
_OPEN = "\x01"
_CLOSE = "\x02"


class FencedRanking:
    """One search's matches, ranked by BM25 over the caller's scopes, best first, then in the
    list order."""

    def __init__(self, core: MemoryCore, parsed: ParsedQuery, conditions: Conditions) -> None:
        self._core = core
        self._parsed = parsed
        self._conditions = conditions
        self._ranked: list[tuple[MemoryRecord, float]] | None = None

    def records(self, needed: int) -> Iterator[tuple[MemoryRecord, float]]:
        """The ranking (all of it is made at once, whatever `needed`)."""
        yield from self._ranking()

    def ranked_all(self) -> Iterator[tuple[MemoryRecord, float, int]]:
        """Every match with its score and its 1-based place in the ranking."""
        for rank, (record, score) in enumerate(self._ranking(), 1):
            yield record, score, rank

    def now(self, record_id: str) -> tuple[MemoryRecord, float] | None:
        """A record as it is and ranks now, if it still passes the filters and matches."""
        for record, score in self._ranking():
            if record.id == record_id:
                return record, score
        return None

    def _ranking(self) -> list[tuple[MemoryRecord, float]]:
        if self._ranked is None:
            self._ranked = self._rank()
        return self._ranked

    def _rank(self) -> list[tuple[MemoryRecord, float]]:
        core, conditions = self._core, self._conditions
        store = core._store
        dialect = store.dialect
        source, match, _score = fts.matching(dialect)
        policy = core._policy()

        def matching() -> Select[Any]:
            return select(table).select_from(source).where(match, *conditions.clauses(), *policy)

        values = {**conditions.values, "match": fts.match_value(dialect, self._parsed)}
        rows = store.fetch(core._prepared(("fenced-matches", conditions.key), matching), values)
        records = [row_to_record(row) for row in rows]
        if not records:
            return []

        def size() -> Select[Any]:
            return select(func.count(), func.avg(func.length(table.c.content))).where(*policy)

        total, average = store.fetch(core._prepared(("fenced-size",), size))[0]
        average = float(average or 1.0) or 1.0
        scores = {record.id: 0.0 for record in records}
        lengths = {record.id: len(record.content) for record in records}
        for term in dict.fromkeys(self._parsed.terms):
            if not term.tokens:
                continue
            alone = fts.match_value(dialect, dataclasses.replace(self._parsed, terms=(term,)))
            holding = self._holding(alone)
            weight = math.log(1.0 + (int(total) - len(holding) + 0.5) / (len(holding) + 0.5))
            for record_id, count in holding.items():
                if record_id in scores:
                    norm = _K1 * (1.0 - _B + _B * lengths[record_id] / average)
                    scores[record_id] += weight * count * (_K1 + 1.0) / (count + norm)
        ranked = [(record, scores[record.id]) for record in records]
        ranked.sort(key=lambda pair: (-pair[1], *list_key(pair[0])))
        return ranked

    def _holding(self, alone: str) -> dict[str, int]:
        """The records of the scopes that match one term, with how many times it occurs in
        each: one statement for both."""
        core = self._core
        source, match, _score = fts.matching(core._store.dialect)
        policy = core._policy()
        # Each instance of the term, wrapped in two control characters; those the text holds
        # already are counted off.
        marked = func.highlight(literal_column(fts.FTS_TABLE), 1, _OPEN, _CLOSE)

        def build() -> Select[Any]:
            return (
                select(table.c.id, table.c.content, marked)
                .select_from(source)
                .where(match, *policy)
            )

        found: dict[str, int] = {}
        for record_id, content, highlighted in core._store.fetch(
            core._prepared(("fenced-terms",), build), {"match": alone}
        ):
            found[record_id] = max(1, highlighted.count(_OPEN) - content.count(_OPEN))
        return found
