"""An approximate nearest-neighbour graph (HNSW, by usearch) over a vector index's rows.

Why: exact search is one product of the query with every vector, linear in the records (tens
of milliseconds at 100,000, half a second at a million). A graph finds the nearest rows by
visiting a few thousand of them, whatever the store's size. It is approximate, so it only
proposes rows: every row it proposes is scored again against the vector index's own matrix
(the same cosine an exact search gives, bit for bit), every proposed row is read back from
the store with the search's filters, and a search whose filters reject most of what the graph
proposes goes on exactly (`lantern.semantic.index.nearest`).

What a graph file holds: `graph-<rows>-<breadth>.usearch` in a generation of the vector index
(`lantern.indexes.vectors`) is usearch's file of the generation's rows below `rows` that
were live when it was built, each under its row number as key (inner product over the rows,
which are of unit length). Rows appended since (`rows` and beyond) are searched exactly, and
dead rows are left out of what it proposes by the generation's dead rows; so a graph never
needs a catch-up of its own to be right, only to stay fast: `lantern db rebuild-index` builds
the vector index and its graph anew.

How it stays right under kill and concurrency: a graph is built from the rows of a published
generation (rows below the manifest's count are never rewritten, except zeroed), saved to a
temporary file, synced, and given its name with `os.replace` under the index's lock, after
the rows that were forgotten while it was built are zeroed in it; a reader opens the file
with the highest count that the manifest covers, memory-mapped. A forgotten record's vector
must leave the disk: a catch-up that zeroes a row of the matrix first zeroes the same vector
in every graph file of the generation (`forget`), or removes the file where usearch is not
installed.

Exact search stays: a model with fewer than `BUILD_FROM` live vectors gets no graph, and
`LANTERN_VECTOR_SEARCH=exact` makes every search ignore the graphs.
"""

from __future__ import annotations

import functools
import os
import re
import threading
from collections.abc import Iterator
from contextlib import suppress
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lantern.indexes import place

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import NDArray

ENV_VAR = "LANTERN_VECTOR_SEARCH"
"""`exact` makes every search compare the query with every vector (no graph is read)."""
BUILD_FROM = 50_000
"""Live vectors from which `lantern db rebuild-index` builds a model's graph. Below it exact
search costs a few milliseconds, no more than the graph and its exact tail would."""
CONNECTIVITY = 16
"""Edges a node keeps in each layer of the graph (usearch's `connectivity`, HNSW's M)."""
EXPANSION_ADD = 128
"""Candidates weighed while a row is linked in (HNSW's efConstruction)."""
BUILD_THREADS = 0
"""Threads that link a new graph (0: one a core). Several threads link rows in an order of
their own, so two builds of the same rows may differ; one gives the same graph every time."""
BREADTHS = (64, 128, 256, 512, 1024)
"""The walk's breadths (HNSW's ef: candidates a search keeps while it walks the graph) a new
graph is tried at, narrowest first; it keeps the first whose recall reaches `MIN_RECALL`, in
its file's name, and a search walks `MARGIN` times that wide (a deeper round, wider)."""
MIN_RECALL = 0.98
"""The recall@10 against exact search that a new graph must show on its own rows
(`measured_recall`), or it is not kept and searches stay exact: on vectors without
neighbourhoods (random ones, as in the benchmark) no walk short of visiting most rows finds
the nearest ten, and a graph would be slower than exact search and wrong."""
MARGIN = 2
"""A search walks this many times the breadth measured when the graph was built (a filtered
search reads deeper than ten, and a query is not one of the rows measured with: on clustered
vectors a walk of 64 found 0.97 of the nearest ten for questions where it found 0.98 of the
rows' own)."""
PROBES = 50
"""Live rows taken as queries to measure a new graph's recall."""
_PATTERN = re.compile(r"graph-(\d+)-(\d+)\.usearch")
_COPY = 65_536
_KILL_HOOK = "LANTERN_TEST_GRAPH_PAUSE"
"""Tests only: a file path; a build that has saved its graph but not named it creates it and
waits, so that a test can kill the process at that moment."""


def _usearch_index() -> Any:
    """usearch's `Index` class, loaded after onnxruntime where that is installed (the `embed`
    extra): loading onnxruntime after usearch's compiled module crashes the process with a
    segmentation fault (usearch 2.26, onnxruntime 1.32), and the other order does not. A search
    maps a graph before it embeds its query, so without this the first semantic search of a
    store with a graph would end the process."""
    from importlib.util import find_spec

    if find_spec("onnxruntime") is not None:
        import onnxruntime  # noqa: F401

    from usearch.index import Index

    return Index


@functools.cache
def available() -> bool:
    """Whether usearch is installed (the `index` extra); asked once a process."""
    from importlib.util import find_spec

    return find_spec("usearch") is not None


def exact_only() -> bool:
    """Whether the environment asks for exact search alone (`LANTERN_VECTOR_SEARCH=exact`)."""
    return os.environ.get(ENV_VAR, "").strip().lower() == "exact"


def files(generation: Path) -> list[tuple[int, Path]]:
    """The graph files of a generation with the rows each covers, most rows first."""
    found = []
    with suppress(FileNotFoundError, NotADirectoryError):  # a generation removed meanwhile
        for entry in os.scandir(generation):
            matched = _PATTERN.fullmatch(entry.name)
            if matched:
                found.append((int(matched[1]), Path(entry.path)))
    return sorted(found, reverse=True)


def breadth_of(path: Path) -> int:
    """The walk's breadth a graph file was measured at (in its name)."""
    matched = _PATTERN.fullmatch(path.name)
    return int(matched[2]) if matched else BREADTHS[-1]


@dataclass(frozen=True, slots=True, eq=False)
class Graph:
    """A graph file, memory-mapped (read-only), covering rows below `rows`."""

    path: Path
    rows: int
    breadth: int
    index: Any
    lock: threading.Lock

    def search(self, query: NDArray[np.float32], count: int) -> NDArray[np.int64]:
        """The keys (rows) of about the `count` nearest vectors, nearest first (fewer when the
        graph holds fewer)."""
        import numpy as np

        with self.lock:  # the expansion is the index's setting, shared by every thread
            # Twice the breadth measured: a search asks for more than ten (its filters read
            # past what they reject), and its query is not one of the rows measured with.
            self.index.expansion_search = max(MARGIN * self.breadth, 4 * count)
            found = self.index.search(query, count, threads=1)
        return np.asarray(found.keys, dtype=np.int64)


_opened: dict[str, Graph] = {}
_opened_lock = threading.Lock()


def current(generation: Path, rows: int, dim: int) -> Graph | None:
    """The graph that covers the most of the generation's first `rows` rows, mapped; None
    when there is none, usearch is missing, exact search is asked for, or it cannot be
    read (the search is exact then)."""
    if exact_only() or not available():
        return None
    for covered, path in files(generation):
        if covered > rows:
            continue  # made by a catch-up whose manifest was never written: not ours
        key = str(path)
        with _opened_lock:
            found = _opened.get(key)
        if found is not None:
            return found
        try:
            index = _usearch_index().restore(key, view=True)
        except (OSError, RuntimeError, ValueError):
            return None
        if index is None or index.ndim != dim:
            return None
        graph = Graph(path, covered, breadth_of(path), index, threading.Lock())
        with _opened_lock:
            if len(_opened) >= 8:
                _opened.pop(next(iter(_opened)))
            _opened[key] = graph
        return graph
    return None


def build(
    generation: Path,
    matrix: NDArray[np.float32],
    dead: NDArray[np.int64],
    staged_name: str = ".graph.new",
) -> tuple[Path, Any]:
    """A graph of the matrix's live rows, saved and synced to a temporary file of the
    generation (not yet named: `publish` does that); the file and the index in memory."""
    import numpy as np

    rows, dim = matrix.shape
    alive = np.ones(rows, dtype=np.bool_)
    alive[dead] = False
    index = _usearch_index()(
        ndim=dim,
        metric="ip",
        dtype="f32",
        connectivity=CONNECTIVITY,
        expansion_add=EXPANSION_ADD,
    )
    for start in range(0, rows, _COPY):
        keys = np.flatnonzero(alive[start : start + _COPY]).astype(np.uint64) + np.uint64(start)
        if len(keys):
            block = np.ascontiguousarray(
                matrix[start : start + _COPY][alive[start : start + _COPY]]
            )
            index.add(keys, block, threads=BUILD_THREADS)
    staged = generation / staged_name
    index.save(str(staged))
    place.sync(staged)
    os.chmod(staged, 0o600)
    return staged, index


def breadth_for(index: Any, matrix: NDArray[np.float32], dead: NDArray[np.int64]) -> int | None:
    """The narrowest of `BREADTHS` at which the graph's recall@10 reaches `MIN_RECALL`; None
    when none does (the graph is not kept)."""
    for breadth in BREADTHS:
        if measured_recall(index, matrix, dead, breadth) >= MIN_RECALL:
            return breadth
    return None


def measured_recall(
    index: Any, matrix: NDArray[np.float32], dead: NDArray[np.int64], breadth: int
) -> float:
    """recall@10 of a graph against exact search over the matrix's live rows, with `PROBES`
    of those rows as queries (each left out of its own answers), walking `breadth` wide: the
    share of exact search's ten nearest that the graph finds."""
    import numpy as np

    rows = matrix.shape[0]
    alive = np.ones(rows, dtype=np.bool_)
    alive[dead] = False
    live = np.flatnonzero(alive)
    if len(live) <= 11:
        return 1.0
    rng = np.random.default_rng(len(live))
    probes = np.sort(rng.choice(live, size=min(PROBES, len(live)), replace=False))
    queries = np.ascontiguousarray(matrix[probes], dtype=np.float32)
    best_rows = np.zeros((len(probes), 0), dtype=np.int64)
    best_scores = np.zeros((len(probes), 0), dtype=np.float32)
    for start in range(0, rows, _COPY):
        block = np.asarray(matrix[start : start + _COPY], dtype=np.float32)
        scores = queries @ block.T
        scores[:, ~alive[start : start + _COPY]] = -np.inf
        hit = (probes[:, None] >= start) & (probes[:, None] < start + len(block))
        scores[hit[:, 0], (probes - start)[hit[:, 0]]] = -np.inf  # not its own neighbour
        positions = np.arange(start, start + len(block), dtype=np.int64)
        both_scores = np.concatenate([best_scores, scores], axis=1)
        both_rows = np.concatenate([best_rows, np.broadcast_to(positions, scores.shape)], axis=1)
        keep = np.argsort(-both_scores, axis=1, kind="stable")[:, :10]
        best_scores = np.take_along_axis(both_scores, keep, axis=1)
        best_rows = np.take_along_axis(both_rows, keep, axis=1)
    index.expansion_search = breadth
    found = 0
    for probe, query, exact in zip(probes, queries, best_rows, strict=True):
        keys = np.asarray(index.search(query, 11, threads=1).keys, dtype=np.int64)
        found += len(set(keys[keys != probe][:10].tolist()) & set(exact.tolist()))
    return found / (10 * len(probes))


def publish(generation: Path, staged: Path, rows: int, breadth: int) -> Path:
    """Name a staged graph as covering `rows` rows, walked `breadth` wide (the caller holds
    the index's lock), then remove the generation's other graph files."""

    final = generation / f"graph-{rows}-{breadth}.usearch"
    place.pause_for_a_test(_KILL_HOOK)
    os.replace(staged, final)
    place.sync(generation)
    for _covered, other in files(generation):
        if other != final:
            other.unlink(missing_ok=True)
    return final


def forget(generation: Path, matrix: NDArray[np.float32], rows: NDArray[np.int64]) -> None:
    """Zero, in every graph file of the generation, the vectors that `rows` of the matrix
    hold now (called before the matrix's rows are zeroed); without usearch (whose metadata
    says where a file's vectors begin) the files are removed instead."""
    import numpy as np

    graphs = files(generation)
    if not graphs or not len(rows):
        return
    for covered, path in graphs:
        wanted = rows[rows < covered]
        if not len(wanted):
            continue
        if not available():
            path.unlink(missing_ok=True)
            continue
        zero(path, [np.asarray(matrix[int(row)], dtype="<f4") for row in wanted], wanted)


def zero(path: Path, vectors: list[NDArray[np.float32]], slots: NDArray[np.int64]) -> None:
    """Overwrite each of `vectors` in the file's matrix of vectors with zeros, in place: at
    its row's slot when it is there (a graph is built in row order), else wherever it is."""
    import numpy as np

    meta = _usearch_index().metadata(str(path))
    if meta is None:
        path.unlink(missing_ok=True)
        return
    dim = int(meta["dimensions"])
    count = int(meta["count_present"]) + int(meta["count_deleted"])
    header = 16 if meta["matrix_uses_64_bit_dimensions"] else 8
    if not count or os.path.getsize(path) < header + 4 * dim * count:
        path.unlink(missing_ok=True)  # not laid out as expected: the file goes instead
        return
    stored = np.memmap(path, dtype="<f4", mode="r+", offset=header, shape=(count, dim))
    try:
        for vector, slot in zip(vectors, slots, strict=True):
            if not vector.any():
                continue  # zeroed already
            if slot < count and np.array_equal(stored[int(slot)], vector):
                stored[int(slot)] = 0
                continue
            for start in range(0, count, _COPY):
                block = stored[start : start + _COPY]
                for hit in np.flatnonzero((block == vector).all(axis=1)):
                    stored[start + int(hit)] = 0
        stored.flush()
    finally:
        del stored
    place.sync(path)


def check(graph: Graph, matrix: NDArray[np.float32], sample: Iterator[int]) -> list[str]:
    """What is wrong with a graph beside its generation's matrix: a sampled row whose vector
    in the graph differs from the matrix's (a zeroed row must be zero in the graph too)."""
    import numpy as np

    problems = []
    if graph.index.ndim != matrix.shape[1]:
        return [f"its graph has {graph.index.ndim} dimensions, the vectors {matrix.shape[1]}"]
    if len(graph.index) > graph.rows:
        return [f"its graph holds {len(graph.index)} rows, more than the {graph.rows} it covers"]
    for row in sample:
        if row >= graph.rows:
            continue
        held = graph.index.get(row)
        if held is None:
            continue  # dead when the graph was built
        expected = matrix[row]
        if not np.allclose(np.asarray(held, dtype=np.float32), expected, rtol=0, atol=1e-6):
            problems.append(f"the vector of row {row} in its graph differs from the index's")
            break
    return problems
