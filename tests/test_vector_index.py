"""The memory-mapped index of memory records' vectors (`lantern.indexes.vectors`).

It changes how fast a search by meaning is, never what it finds: every search here is run
with the index and again with `LANTERN_INDEXES=off` (vectors read from the store's rows), and
the pages must be equal, scores included. The index follows writes made by other connections
and processes, survives a process killed in the middle of writing it, lets a forgotten
record's vector leave its files, is found out when it is cut short, edited or another store's,
and spares a new process reading the vectors from the store. The provider is `hashing`, which
needs no model; the store is SQLite (a PostgreSQL store has no index beside it).
"""

from __future__ import annotations

import itertools
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from importlib.util import find_spec
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from lantern.api import Lantern
from lantern.indexes import graph, place, vectors
from lantern.memory import topk
from lantern.semantic import index
from lantern.semantic.sides import MEMORY
from tests.helpers import REPO_ROOT, lantern_process
from tests.memory_helpers import sql

HASHING = "lantern-hashing-v1-256"
NAME = vectors.name_of(HASHING)
WORDS = [
    word
    for group in (
        "rosa lisbon tea coffee deploy script migration ticket deadline review dispatch retry",
        "garden bicycle invoice meeting porto sister allergy almond nuts train morning report",
        "budget release backup server laptop holiday flight hotel kitchen recipe",
    )
    for word in group.split()
]
QUERIES = ["rosa tea morning", "deploy script release", "invoice budget report", "flight"]


@pytest.fixture(autouse=True)
def hashing(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Vectors by the hashing provider; no matrix kept from another test."""
    monkeypatch.setenv("LANTERN_EMBED_MODEL", "hashing")
    index.forget_cached()
    yield
    index.forget_cached()


@pytest.fixture
def keyword_side_in_the_database(monkeypatch: pytest.MonkeyPatch) -> None:
    """Hybrid's keyword side ranked by FTS5 in both runs, so that the two differ in the vector
    index alone (the word index is compared with FTS5 on its own)."""
    monkeypatch.setattr(topk, "ready_index", lambda core: None)


def texts(count: int, seed: int = 7) -> list[str]:
    rng = random.Random(seed)
    return [
        f"{' '.join(rng.sample(WORDS, rng.randint(3, 7)))} ({number})" for number in range(count)
    ]


def add(lt: Lantern, count: int, seed: int = 7) -> list[str]:
    scopes = ["user:rosa", "project:claims", "team:ops"]
    kinds = ["fact", "preference", "task_state"]
    added = lt.memory.add_many(
        [
            {"scope": scopes[i % 3], "kind": kinds[(i // 3) % 3], "content": content}
            for i, content in enumerate(texts(count, seed))
        ]
    )
    return [record.id for record, _created in added]


@pytest.fixture
def lt(db_path: Path) -> Iterator[Lantern]:
    """A store of 60 records with their vectors."""
    with Lantern.open(str(db_path)) as lantern:
        add(lantern, 60)
        lantern.embed(sources=False)
        yield lantern


def directory(lt: Lantern) -> Path:
    found = place.directory(lt.location)
    assert found is not None
    return found


def generation(lt: Lantern) -> Path:
    found = place.current(directory(lt), NAME)
    assert found is not None, "the store has no vector index"
    return found


def manifest(lt: Lantern) -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads((generation(lt) / "manifest.json").read_text())
    return loaded


def outcome(page: Any) -> Any:
    matches = [
        (m.record.id, m.score, m.similarity, m.keyword_rank, m.semantic_rank, m.mode) for m in page
    ]
    return matches, page.next_cursor, page.summary and page.summary.to_json()


def pages(lt: Lantern, query: str, **options: Any) -> list[Any]:
    """Three pages of five, each after the cursor of the one before."""
    found = []
    after = None
    for _ in range(3):
        page = lt.memory.search(query, limit=5, after=after, **options)
        found.append(outcome(page))
        after = page.next_cursor
        if after is None:
            break
    return found


def searches(lt: Lantern) -> list[Any]:
    """Semantic, hybrid and default searches, in both orders, with and without filters, paged;
    and the records similar to a few."""
    found: list[Any] = []
    for query in QUERIES:
        for mode in ("semantic", "hybrid", None):
            for order in ("relevance", "policy"):
                found.append(pages(lt, query, mode=mode, order=order))
            found.append(pages(lt, query, mode=mode, scope="user:rosa", kind="fact"))
    for record in lt.memory.list(limit=3):
        found.append(outcome(lt.memory.similar(record.id, limit=8)))
    return found


def without_index(monkeypatch: pytest.MonkeyPatch, call: Callable[[], Any]) -> Any:
    """What `call` gives with the derived indexes off (vectors read from the store's rows)."""
    index.forget_cached()
    monkeypatch.setenv(place.ENV_VAR, "off")
    try:
        return call()
    finally:
        monkeypatch.delenv(place.ENV_VAR)
        index.forget_cached()


def agree(lt: Lantern, monkeypatch: pytest.MonkeyPatch, *, graph: bool = False) -> None:
    """Every search gives the same pages with the index as without it, and the index is used.

    Through a graph, a candidate's cosine is a dot product of rows gathered from the matrix,
    which may differ from the whole matrix's in its last bits (seen: -1.9e-09 for 0.0): there
    the results are compared with such near ties in either order (`untied`)."""
    with_index = searches(lt)
    assert index.load(lt.store, MEMORY, HASHING).mark is not None, "the index was not used"
    exact = without_index(monkeypatch, lambda: searches(lt))
    if graph:
        assert untied(with_index) == untied(exact)
    else:
        assert with_index == exact
    assert vectors.check(lt.store) == []


def untied(found: list[Any]) -> list[Any]:
    """Each search's matches (its pages joined) with scores and similarities to 6 places, runs
    of matches equal to that precision in id order, and no semantic rank or cursor (both follow
    from the order within such a run)."""
    canonical = []
    for entry in found:
        matches = [m for page in entry for m in page[0]] if isinstance(entry, list) else entry[0]
        rounded = [
            (m[0], *(None if v is None else round(v, 6) + 0.0 for v in m[1:3]), m[3], m[5])
            for m in matches
        ]
        runs = itertools.groupby(rounded, key=lambda m: (m[1], m[2]))
        canonical.append([sorted(run, key=lambda m: m[0]) for _tie, run in runs])
    return canonical


def live_ids(lt: Lantern) -> list[str]:
    loaded = index.load(lt.store, MEMORY, HASHING)
    return sorted(item for item in loaded.ids if item)


def table_ids(lt: Lantern) -> list[str]:
    rows = sql(lt, "SELECT memory_id FROM memory_embeddings WHERE model = :m", m=HASHING)
    return sorted(row[0] for row in rows)


# --- the same answers ----------------------------------------------------------------------


@pytest.mark.usefixtures("keyword_side_in_the_database")
def test_searches_give_the_same_pages_with_and_without_the_index(
    lt: Lantern, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert place.current(directory(lt), NAME) is None  # built by the first search
    agree(lt, monkeypatch)
    assert manifest(lt)["rows"] == 60 and manifest(lt)["dead"] == 0
    assert live_ids(lt) == table_ids(lt)


def test_a_new_process_reads_no_vector_from_the_store(lt: Lantern) -> None:
    """The first search of a fresh interpreter maps the index: no statement it runs reads the
    `vector` column (traced on every SQLite connection the process opens); with the indexes
    off, the same search reads them all, and finds the same records."""
    lt.memory.search("rosa", mode="semantic")  # builds the index
    script = """
import json, sys
from sqlalchemy import event
from sqlalchemy.pool import Pool
from lantern.api import Lantern

statements = []
event.listen(Pool, "connect", lambda conn, _record: conn.set_trace_callback(statements.append))
with Lantern.open(sys.argv[1]) as lt:
    found = lt.memory.search("deploy script release", mode="semantic", limit=10)
reads = [s for s in statements if "memory_embeddings.vector" in s]
print(json.dumps({"ids": [m.record.id for m in found], "reads": len(reads)}))
"""

    def run(env: dict[str, str]) -> dict[str, Any]:
        ran = subprocess.run(
            [sys.executable, "-c", script, str(lt.location.path)],
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
            cwd=REPO_ROOT,
            env={**os.environ, **env},
        )
        assert ran.returncode == 0, ran.stderr
        result: dict[str, Any] = json.loads(ran.stdout)
        return result

    mapped = run({})
    read = run({place.ENV_VAR: "off"})
    assert mapped["reads"] == 0
    assert read["reads"] >= 1
    assert mapped["ids"] == read["ids"] and len(mapped["ids"]) == 10


# --- catching up -----------------------------------------------------------------------------


@pytest.mark.usefixtures("keyword_side_in_the_database")
def test_the_index_follows_writes_of_other_connections_and_processes(
    lt: Lantern, db_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    agree(lt, monkeypatch)
    ids = [record.id for record in lt.memory.list(limit=100)]
    with Lantern.open(str(db_path)) as other:
        added = add(other, 5, seed=11)
        other.embed(sources=False)
        other.memory.update(ids[0], content="A new text about the flight and the hotel.")
        other.memory.update(ids[1], priority=90)  # not the content: the vector stays
        other.memory.forget(ids[2])
    assert live_ids(lt) == table_ids(lt)
    assert ids[0] not in live_ids(lt) and set(added) <= set(live_ids(lt))
    agree(lt, monkeypatch)
    # Another process re-embeds (the changed record) and forgets.
    embedded = lantern_process("--db", str(db_path), "embed", "--memory", "--json")
    assert embedded.returncode == 0, embedded.stderr
    assert json.loads(embedded.stdout)["memory"]["embedded"] == 1
    forgotten = lantern_process("--db", str(db_path), "memory", "forget", ids[3], "--yes")
    assert forgotten.returncode == 0, forgotten.stderr
    assert ids[0] in live_ids(lt) and ids[3] not in live_ids(lt)
    assert live_ids(lt) == table_ids(lt)
    agree(lt, monkeypatch)


@pytest.mark.usefixtures("keyword_side_in_the_database")
def test_a_catch_up_reads_the_changed_vectors_a_batch_at_a_time(
    lt: Lantern, monkeypatch: pytest.MonkeyPatch
) -> None:
    lt.memory.search("rosa", mode="semantic")
    monkeypatch.setattr(vectors, "_FETCH", 4)
    ids = [record.id for record in lt.memory.list(limit=100)]
    add(lt, 10, seed=12)
    for record in ids[:5]:
        lt.memory.update(record, content=f"Changed: {record} hotel laptop.")
    lt.embed(sources=False)
    agree(lt, monkeypatch)
    assert (manifest(lt)["rows"], manifest(lt)["dead"]) == (75, 5)


@pytest.mark.usefixtures("keyword_side_in_the_database")
def test_an_id_longer_than_any_before_widens_the_index(
    lt: Lantern, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Ids are kept in a fixed width; a record whose id is longer (written by another tool)
    moves the index into a new generation with wider ids."""
    lt.memory.search("rosa", mode="semantic")
    before = generation(lt)
    assert manifest(lt)["width"] == 20
    long_id = "mem_imported-by-another-tool-0001"
    sql(
        lt,
        "INSERT INTO memory_records (id, kind, content, scope, priority, urgency, confidence, "
        "status, created_at, updated_at, source_refs, identity_hash) VALUES (:id, 'fact', "
        "'Rosa drinks tea every morning.', 'user:rosa', 50, 0, 1.0, 'active', 1, 1, '[]', 'x')",
        id=long_id,
    )
    lt.embed(sources=False)
    agree(lt, monkeypatch)
    assert generation(lt) != before and manifest(lt)["width"] == len(long_id)
    assert long_id in live_ids(lt) and live_ids(lt) == table_ids(lt)
    assert long_id in [m.record.id for m in lt.memory.search("rosa tea", mode="semantic")]


def test_a_write_of_another_model_leaves_the_loaded_vectors_as_they_are(lt: Lantern) -> None:
    lt.memory.search("rosa", mode="semantic")
    first = index.load(lt.store, MEMORY, HASHING)
    lt.memory.add(kind="fact", content="No vector for this one.")
    assert index.load(lt.store, MEMORY, HASHING) is first  # the feed of vectors did not move
    record = lt.memory.list(limit=1)[0].id
    with lt.store.write() as conn:
        from lantern.semantic.storage import write_memory_vectors

        write_memory_vectors(conn, "other-model-3", 3, [(record, bytes(12), "x")], 1)
    again = index.load(lt.store, MEMORY, HASHING)
    assert again.mark != first.mark and len(again) == len(first)
    assert vectors.check(lt.store) == []


@pytest.mark.usefixtures("keyword_side_in_the_database")
def test_many_replaced_vectors_compact_into_a_new_generation(
    lt: Lantern, monkeypatch: pytest.MonkeyPatch
) -> None:
    lt.memory.search("rosa", mode="semantic")
    before = generation(lt)
    ids = [record.id for record in lt.memory.list(limit=100)]
    for record in ids[:10]:
        lt.memory.update(record, content=f"Changed: {record} holiday kitchen recipe.")
    lt.embed(sources=False)
    lt.memory.search("rosa", mode="semantic")
    assert generation(lt) == before  # 10 dead of 70 rows: kept
    assert manifest(lt)["dead"] == 10
    for record in ids[10:21]:  # 21 dead of 81 rows: more than a quarter
        lt.memory.update(record, content=f"Changed: {record} budget release server.")
    lt.embed(sources=False)
    agree(lt, monkeypatch)
    assert generation(lt) != before and not before.exists()
    assert (manifest(lt)["rows"], manifest(lt)["dead"]) == (60, 0)


def test_unusable_vectors_are_left_out_and_counted(
    lt: Lantern, monkeypatch: pytest.MonkeyPatch
) -> None:
    lt.memory.search("rosa", mode="semantic")
    ids = [record.id for record in lt.memory.list(limit=100)]
    sql(lt, "UPDATE memory_embeddings SET dim = 255 WHERE memory_id = :id", id=ids[0])
    sql(
        lt,
        "UPDATE memory_embeddings SET vector = :v WHERE memory_id = :id",
        v=np.full(256, np.nan, dtype="<f4").tobytes(),
        id=ids[1],
    )
    loaded = index.load(lt.store, MEMORY, HASHING)
    assert (len(loaded), loaded.unusable) == (58, 2)
    assert manifest(lt)["unusable"] == sorted(ids[:2])
    assert without_index(monkeypatch, lambda: index.load(lt.store, MEMORY, HASHING).unusable) == 2
    found = lt.memory.search("rosa", mode="semantic", limit=100)
    assert not {ids[0], ids[1]} & {m.record.id for m in found}
    assert vectors.check(lt.store) == []


# --- forgetting ------------------------------------------------------------------------------


def index_bytes(lt: Lantern) -> bytes:
    return b"".join(path.read_bytes() for path in directory(lt).rglob("*") if path.is_file())


def row_bytes(lt: Lantern, record_id: str) -> bytes:
    loaded = index.load(lt.store, MEMORY, HASHING)
    row = loaded.row_of(record_id)
    assert row is not None
    return bytes(np.asarray(loaded.matrix[row], dtype="<f4").tobytes())


def test_a_forgotten_records_vectors_leave_the_index_files(lt: Lantern) -> None:
    lt.memory.search("rosa", mode="semantic")
    ids = [record.id for record in lt.memory.list(limit=100)]
    plain, changed, replaced = ids[0], ids[1], ids[2]
    kept = {record: row_bytes(lt, record) for record in (plain, changed, replaced)}
    # `replaced` gets a new vector (its old row is dead, a new row holds the new one);
    # `changed` loses its vector with its content (its old row is dead).
    lt.memory.update(replaced, content="Another text, embedded again.")
    lt.embed(sources=False)
    lt.memory.update(changed, content="Something else entirely.")
    kept["replaced, new"] = row_bytes(lt, replaced)
    assert index.load(lt.store, MEMORY, HASHING).row_of(changed) is None
    assert all(blob in index_bytes(lt) for blob in kept.values())
    for record in (plain, changed, replaced):
        lt.memory.forget(record)
    held = index_bytes(lt)  # no search since: the forget itself caught the index up
    assert [name for name, blob in kept.items() if blob in held] == []
    assert vectors.check(lt.store) == []


def test_a_forget_killed_before_the_index_caught_up_is_made_good_later(
    lt: Lantern, monkeypatch: pytest.MonkeyPatch
) -> None:
    lt.memory.search("rosa", mode="semantic")
    record = lt.memory.list(limit=1)[0].id
    old = row_bytes(lt, record)
    lt.memory.update(record, content="Changed, so the vector goes.")
    lt.memory.search("rosa", mode="semantic")  # its row is dead now, its bytes still there
    assert old in index_bytes(lt)
    monkeypatch.setattr(index, "after_forget", lambda store: None)  # as if killed after commit
    lt.memory.forget(record)
    assert old in index_bytes(lt)
    add(lt, 1, seed=3)
    lt.embed(sources=False)
    lt.memory.search("rosa", mode="semantic")  # the next catch-up
    assert old not in index_bytes(lt)


@pytest.mark.usefixtures("keyword_side_in_the_database")
def test_a_forgotten_id_that_begins_with_another_leaves_the_other_alone(
    lt: Lantern, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Ids are kept in a fixed width; a removed record whose id is longer, and begins with a
    kept one's, must not be taken for it."""
    lt.memory.search("rosa", mode="semantic")
    kept = lt.memory.list(limit=1)[0].id
    before = row_bytes(lt, kept)
    longer = kept + "-copy"
    sql(
        lt,
        "INSERT INTO memory_records (id, kind, content, scope, priority, urgency, confidence, "
        "status, created_at, updated_at, source_refs, identity_hash) VALUES (:id, 'fact', "
        "'A copy made by another tool.', 'user:rosa', 50, 0, 1.0, 'active', 1, 1, '[]', 'y')",
        id=longer,
    )
    sql(lt, "DELETE FROM memory_records WHERE id = :id", id=longer)
    add(lt, 1, seed=21)
    lt.embed(sources=False)
    assert row_bytes(lt, kept) == before
    agree(lt, monkeypatch)


# --- kills, damage, other stores -------------------------------------------------------------

KILLED_SEARCH = """
import sys
from lantern.api import Lantern
with Lantern.open(sys.argv[1]) as lt:
    lt.memory.search("rosa tea morning", mode="semantic")
raise SystemExit("the search ended: it should have been killed while writing the index")
"""


def kill_while_writing(db_path: Path, tmp_path: Path) -> None:
    """Start a search in another process, and kill it once it has written an index's data and
    not yet its manifest."""
    marker = tmp_path / "paused"
    marker.unlink(missing_ok=True)
    env = {**os.environ, "LANTERN_TEST_VECTOR_INDEX_PAUSE": str(marker)}
    process = subprocess.Popen(
        [sys.executable, "-c", KILLED_SEARCH, str(db_path)],
        cwd=REPO_ROOT,
        env=env,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 60
        while not marker.exists():
            assert process.poll() is None, process.stderr and process.stderr.read()
            assert time.monotonic() < deadline, "the search never paused"
            time.sleep(0.02)
        process.send_signal(signal.SIGKILL)
        assert process.wait(timeout=30) == -signal.SIGKILL
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()


@pytest.mark.usefixtures("keyword_side_in_the_database")
def test_a_process_killed_while_building_leaves_a_store_that_searches_right(
    lt: Lantern, db_path: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    kill_while_writing(db_path, tmp_path)
    assert place.current(directory(lt), NAME) is None  # never published
    left = [path for path in directory(lt).iterdir() if path.is_dir()]
    assert len(left) == 1  # the killed build's generation
    agree(lt, monkeypatch)
    assert [path for path in directory(lt).iterdir() if path.is_dir()] == [generation(lt)]


@pytest.mark.usefixtures("keyword_side_in_the_database")
def test_a_process_killed_while_catching_up_leaves_a_store_that_searches_right(
    lt: Lantern, db_path: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    lt.memory.search("rosa", mode="semantic")
    ids = [record.id for record in lt.memory.list(limit=100)]
    before = manifest(lt)
    add(lt, 4, seed=5)
    lt.memory.update(ids[0], content="A new text for the first record.")
    lt.memory.forget(ids[1])  # caught up by the forget
    lt.embed(sources=False)
    index.forget_cached()
    kill_while_writing(db_path, tmp_path)
    assert manifest(lt)["mark"] != before["mark"]
    sizes = {path.name: path.stat().st_size for path in generation(lt).iterdir()}
    assert sizes["vectors.f32"] > 4 * 256 * manifest(lt)["rows"]  # appended, not yet counted
    agree(lt, monkeypatch)
    assert generation(lt).joinpath("vectors.f32").stat().st_size == 4 * 256 * manifest(lt)["rows"]


@pytest.mark.usefixtures("keyword_side_in_the_database")
def test_a_process_killed_while_compacting_leaves_a_store_that_searches_right(
    lt: Lantern, db_path: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    lt.memory.search("rosa", mode="semantic")
    before = generation(lt)
    for record in [record.id for record in lt.memory.list(limit=100)][:21]:
        lt.memory.update(record, content=f"Changed: {record} train porto.")
    lt.embed(sources=False)
    index.forget_cached()
    kill_while_writing(db_path, tmp_path)
    assert generation(lt) == before  # the new generation was never published
    agree(lt, monkeypatch)
    assert generation(lt) != before and manifest(lt)["dead"] == 0


def cut_short(lt: Lantern) -> None:
    path = generation(lt) / "vectors.f32"
    os.truncate(path, path.stat().st_size - 100)


def unreadable_manifest(lt: Lantern) -> None:
    (generation(lt) / "manifest.json").write_text("{not json")


def missing_file(lt: Lantern) -> None:
    (generation(lt) / "ids.bin").unlink()


def another_stores(lt: Lantern) -> None:
    """The index of another store (another history of changes), put beside this one."""
    assert lt.location.path is not None
    other_path = lt.location.path.with_name("other.db")
    with Lantern.open(str(other_path)) as other:
        add(other, 60, seed=99)
        other.embed(sources=False)
        other.memory.search("rosa", mode="semantic")
    mine = directory(lt)
    shutil.rmtree(mine)
    shutil.copytree(other_path.with_name("other.db.index"), mine)


@pytest.mark.usefixtures("keyword_side_in_the_database")
@pytest.mark.parametrize(
    ("damage", "said"),
    [
        (cut_short, "holds"),
        (unreadable_manifest, "manifest cannot be read"),
        (missing_file, "missing"),
        (another_stores, "does not belong to this store"),
    ],
)
def test_a_damaged_or_foreign_index_is_found_and_built_again(
    lt: Lantern,
    monkeypatch: pytest.MonkeyPatch,
    damage: Callable[[Lantern], None],
    said: str,
) -> None:
    lt.memory.search("rosa", mode="semantic")
    damage(lt)
    index.forget_cached()
    [problem] = vectors.check(lt.store)
    assert problem.startswith("vector index ") and said in problem
    assert "lantern db rebuild-index" in problem
    agree(lt, monkeypatch)  # the search built it again (a small store)
    assert vectors.check(lt.store) == []


def test_vectors_edited_in_the_files_are_found_by_check_and_rebuilt(lt: Lantern) -> None:
    lt.memory.search("rosa", mode="semantic")
    path = generation(lt) / "vectors.f32"
    data = bytearray(path.read_bytes())
    data[0:4] = np.float32(0.5).tobytes()
    path.write_bytes(bytes(data))
    [problem] = vectors.check(lt.store)
    assert "differs from the table's" in problem
    status = vectors.build(lt.store, directory(lt), HASHING)
    assert (status["model"], status["rows"], status["current"]) == (HASHING, 60, True)
    assert vectors.check(lt.store) == []


# --- size, status, removal -------------------------------------------------------------------


@pytest.mark.usefixtures("keyword_side_in_the_database")
def test_a_search_builds_no_index_for_a_large_store(
    lt: Lantern, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(vectors, "AUTO_BUILD_UP_TO", 59)
    found = searches(lt)
    assert place.current(directory(lt), NAME) is None
    assert index.load(lt.store, MEMORY, HASHING).mark is None  # read from the store's rows
    [row] = vectors.status(lt.store)
    assert row == {
        "model": HASHING,
        "rows": 0,
        "dead": 0,
        "bytes": 0,
        "current": False,
        "built": False,
        "graph_rows": 0,
    }
    built = vectors.build(lt.store, directory(lt), HASHING)
    assert built["rows"] == 60 and built["current"] and built["bytes"] > 60 * 1024
    assert searches(lt) == found
    # Built, it is caught up whatever the size.
    add(lt, 3, seed=1)
    lt.embed(sources=False)
    agree(lt, monkeypatch)
    assert manifest(lt)["rows"] == 63


def test_status_says_what_each_index_holds_and_remove_takes_them_away(lt: Lantern) -> None:
    lt.memory.search("rosa", mode="semantic")
    [row] = vectors.status(lt.store)
    size = sum(path.stat().st_size for path in generation(lt).iterdir())
    assert row == {
        "model": HASHING,
        "rows": 60,
        "dead": 0,
        "bytes": size,
        "current": True,
        "built": True,
        "graph_rows": 0,
    }
    record = lt.memory.list(limit=1)[0].id
    lt.memory.update(record, content="Changed again.")
    assert vectors.status(lt.store)[0]["current"] is False  # behind until the next search
    lt.memory.search("rosa", mode="semantic")
    assert vectors.status(lt.store)[0] | {"bytes": 0} == {
        "model": HASHING,
        "rows": 59,
        "dead": 1,
        "bytes": 0,
        "current": True,
        "built": True,
        "graph_rows": 0,
    }
    assert vectors.models(lt.store) == [HASHING]
    vectors.remove(directory(lt))
    assert [path.name for path in directory(lt).iterdir() if "vectors" in path.name] == []
    assert vectors.status(lt.store)[0]["built"] is False
    assert vectors.check(lt.store) == []


def test_stores_without_a_place_for_the_index_search_as_before(
    db_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(place.ENV_VAR, "off")
    with Lantern.open(str(db_path)) as lt:
        add(lt, 10)
        lt.embed(sources=False)
        assert len(lt.memory.search("rosa", mode="semantic")) == 10
        assert index.load(lt.store, MEMORY, HASHING).mark is None
        assert vectors.status(lt.store)[0]["built"] is False
        assert vectors.check(lt.store) == []
    assert not db_path.with_name(db_path.name + ".index").exists()


def test_a_store_older_than_the_change_feed_searches_its_rows(db_path: Path) -> None:
    """A store opened to be upgraded (`require_current=False`) may predate the feed the index
    follows: it searches the store's rows, as before the index."""
    import sqlite3

    with Lantern.open(str(db_path)) as lt:
        add(lt, 10)
        lt.embed(sources=False)
    with sqlite3.connect(db_path) as conn:
        triggers = conn.execute(
            "SELECT name FROM sqlite_master WHERE type = 'trigger' AND name LIKE '%_feed_%'"
        ).fetchall()
        for (trigger,) in triggers:
            conn.execute(f"DROP TRIGGER {trigger}")
        conn.execute("DROP TABLE index_feed")
        conn.execute("UPDATE alembic_version SET version_num = '0009'")
    with Lantern.open(str(db_path), require_current=False) as lt:
        assert len(lt.memory.search("rosa", mode="semantic")) == 10
        assert index.load(lt.store, MEMORY, HASHING).mark is None
        assert vectors.check(lt.store) == []
        assert vectors.status(lt.store)[0]["built"] is False


# --- several processes at once ---------------------------------------------------------------

SEARCHING = """
import sys
from lantern.api import Lantern
with Lantern.open(sys.argv[1]) as lt:
    for _ in range(int(sys.argv[2])):
        for mode in ("semantic", "hybrid"):
            lt.memory.search("rosa tea morning", mode=mode)
"""


@pytest.mark.usefixtures("keyword_side_in_the_database")
def test_processes_searching_while_another_writes_leave_the_index_right(
    lt: Lantern, db_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    lt.memory.search("rosa", mode="semantic")
    searchers = [
        subprocess.Popen(
            [sys.executable, "-c", SEARCHING, str(db_path), "15"],
            cwd=REPO_ROOT,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(2)
    ]
    try:
        ids = [record.id for record in lt.memory.list(limit=100)]
        for round_ in range(6):
            add(lt, 3, seed=100 + round_)
            lt.memory.update(ids[round_], content=f"Round {round_}: kitchen and garden.")
            lt.embed(sources=False)
            lt.memory.forget(ids[30 + round_])
            lt.memory.search("rosa", mode="semantic")
    finally:
        for process in searchers:
            _out, err = process.communicate(timeout=120)
            assert process.returncode == 0, err
    agree(lt, monkeypatch)
    assert live_ids(lt) == table_ids(lt)


def test_a_vector_scores_the_same_wherever_its_row_lies() -> None:
    """The index holds the rows in another order than the store's reader, with dead rows
    between them: a row's cosine must not depend on where it lies, bit for bit (a BLAS
    matrix-vector product sums the rows at the edges of its blocks in another order)."""
    rng = np.random.default_rng(5)
    matrix = rng.standard_normal((1001, 256)).astype(np.float32)
    query = rng.standard_normal(256).astype(np.float32)

    def loaded(rows: Any, dead: Any = None) -> index.Loaded:
        ids = [f"r{i}" for i in range(len(rows))]
        return index.Loaded(HASHING, None, ids, np.ascontiguousarray(rows), 256, 0, dead=dead)

    whole = index.scores(loaded(matrix), query)
    for start in (1, 2, 3, 5):
        assert np.array_equal(index.scores(loaded(matrix[start:]), query), whole[start:])
    shuffled = rng.permutation(len(matrix))
    assert np.array_equal(index.scores(loaded(matrix[shuffled]), query), whole[shuffled])
    with_dead = np.vstack([np.zeros((3, 256), np.float32), matrix])
    scored = index.scores(loaded(with_dead, dead=np.arange(3, dtype=np.int64)), query)
    assert np.isneginf(scored[:3]).all() and np.array_equal(scored[3:], whole)


def test_the_rows_of_several_ids_are_those_row_of_finds_one_by_one() -> None:
    # Ids of several lengths (the column pads them), one replaced (its newer row is the live
    # one), one whose only row is dead, one longer than the column, one absent.
    raw = [b"mem_a", b"mem_bb", b"mem_a", b"chk_ccc", b"mem_bb", b"mem_0123456789ab", b"dead"]
    alive = np.array([True, False, True, True, True, True, False])
    column = vectors.IdColumn(np.array(raw), alive)
    asked = ["mem_a", "mem_bb", "chk_ccc", "mem_0123456789ab", "dead", "mem_0123456789abc", "x", ""]
    expected = {item: row for item in asked if (row := column.row_of(item)) is not None}
    assert expected == {"mem_a": 2, "mem_bb": 4, "chk_ccc": 3, "mem_0123456789ab": 5}
    assert column.rows_of(asked) == expected
    assert column.rows_of(asked) == expected  # the fold, kept, gives the same
    assert vectors.IdColumn(np.array([], dtype="S4"), None).rows_of(["a"]) == {}


# --- the nearest-neighbour graph -------------------------------------------------------------


@pytest.fixture
def graphed(lt: Lantern, monkeypatch: pytest.MonkeyPatch) -> Lantern:
    """The 60 records' index with a graph (`lantern.indexes.graph`), built as `lantern db
    rebuild-index` builds it for a large store, and searches that walk it whatever the size."""
    needs_usearch()
    monkeypatch.setattr(graph, "BUILD_FROM", 1)
    monkeypatch.setattr(graph, "BUILD_THREADS", 1)  # the same graph at every run
    monkeypatch.setattr(index, "_GRAPH_FROM", 1)
    monkeypatch.setattr(index, "_GRAPH_SHARE", 1)
    built = vectors.build(lt.store, directory(lt), HASHING)
    assert built["graph_rows"] == 60
    return lt


def needs_usearch() -> None:
    """Skip without usearch. Never `importorskip`: usearch loaded before onnxruntime makes the
    latter crash this worker when a later test loads it (see the last test here)."""
    if not graph.available():
        pytest.skip("usearch is not installed (the index extra)")


def graph_bytes(lt: Lantern) -> bytes:
    return b"".join(path.read_bytes() for _rows, path in graph.files(generation(lt)))


@pytest.mark.usefixtures("keyword_side_in_the_database")
def test_a_graph_gives_the_pages_of_exact_search(
    graphed: Lantern, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Its candidates are scored again against the matrix and filtered by the store, and a
    search whose filters it cannot satisfy goes on exactly: on a graph that holds every row
    within reach (60 rows, a walk of 64), the pages are exact search's, scores included."""
    loaded = index.load(graphed.store, MEMORY, HASHING)
    assert loaded.graph is not None and loaded.graph.rows == 60
    agree(graphed, monkeypatch, graph=True)
    monkeypatch.setenv(graph.ENV_VAR, "exact")
    index.forget_cached()
    assert index.load(graphed.store, MEMORY, HASHING).graph is None
    monkeypatch.delenv(graph.ENV_VAR)


@pytest.mark.usefixtures("keyword_side_in_the_database")
def test_a_graph_follows_writes_and_forgets(
    graphed: Lantern, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Rows appended after the graph are searched exactly, replaced and removed rows are never
    proposed, and a forgotten record's vector leaves the graph's file as it leaves the
    matrix."""
    ids = [record.id for record in graphed.memory.list(limit=100)]
    forgotten, replaced = ids[0], ids[1]
    old = row_bytes(graphed, forgotten)
    assert old in graph_bytes(graphed)
    added = add(graphed, 5, seed=13)
    graphed.memory.update(replaced, content="A new text about the garden and the bicycle.")
    graphed.embed(sources=False)
    graphed.memory.forget(forgotten)
    assert old not in graph_bytes(graphed)
    loaded = index.load(graphed.store, MEMORY, HASHING)
    assert loaded.graph is not None and loaded.graph.rows == 60 and len(loaded.ids) > 60
    assert set(added) <= set(live_ids(graphed)) and forgotten not in live_ids(graphed)
    agree(graphed, monkeypatch, graph=True)
    assert vectors.status(graphed.store)[0]["graph_rows"] == 60


def test_check_finds_a_graph_that_differs_from_the_index(graphed: Lantern) -> None:
    graphed.memory.search("rosa", mode="semantic")
    loaded = index.load(graphed.store, MEMORY, HASHING)
    assert loaded.graph is not None
    vector = np.asarray(loaded.matrix[0], dtype="<f4")
    graph.zero(loaded.graph.path, [vector], np.array([0]))
    [problem] = vectors.check(graphed.store)
    assert "in its graph differs from the index's" in problem
    vectors.build(graphed.store, directory(graphed), HASHING)
    assert vectors.check(graphed.store) == []


def test_a_process_killed_while_naming_a_graph_leaves_a_store_that_searches_right(
    graphed: Lantern, db_path: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    marker = tmp_path / "paused"
    script = (
        "import sys\nfrom lantern.indexes import graph\ngraph.BUILD_FROM = 1\n"
        "from lantern.cli import main\nsys.argv = ['lantern', '--db', sys.argv[1], 'db', "
        "'rebuild-index']\nmain()\n"
    )
    process = subprocess.Popen(
        [sys.executable, "-c", script, str(db_path)],
        cwd=REPO_ROOT,
        env={**os.environ, "LANTERN_TEST_GRAPH_PAUSE": str(marker)},
    )
    try:
        deadline = time.monotonic() + 60
        while not marker.exists():
            assert process.poll() is None and time.monotonic() < deadline
            time.sleep(0.02)
        process.send_signal(signal.SIGKILL)
        assert process.wait(timeout=30) == -signal.SIGKILL
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    # The killed rebuild published its matrix, not its graph: searched exactly, and right.
    assert graph.files(generation(graphed)) == []
    index.forget_cached()
    assert index.load(graphed.store, MEMORY, HASHING).graph is None
    assert vectors.check(graphed.store) == []
    assert vectors.build(graphed.store, directory(graphed), HASHING)["graph_rows"] == 60
    assert [p.name for p in generation(graphed).iterdir() if "graph" in p.name] == [
        "graph-60-64.usearch"
    ]


def test_prepare_search_maps_the_default_models_vectors_and_loads_no_model(
    lt: Lantern, db_path: Path
) -> None:
    """What a long-lived caller (the MCP server) runs at start, so that its first search costs
    what later ones cost."""
    lt.memory.search("rosa", mode="semantic")  # the index exists
    index.forget_cached()
    lt.prepare_search()
    cached = [loaded for key, loaded in index._cache.items() if key[2] == HASHING]
    assert len(cached) == 1 and cached[0].mark is not None  # mapped from the index
    assert index.load(lt.store, MEMORY, HASHING) is cached[0]
    index.forget_cached()
    with Lantern.open(str(db_path.with_name("empty.db"))) as empty:
        empty.prepare_search()  # no vectors: nothing to load, no provider looked up
    assert index._cache == {}


def test_a_graph_that_misses_the_nearest_rows_is_not_kept(
    lt: Lantern, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A new graph's recall@10 is measured on its own rows against exact search; below
    `graph.MIN_RECALL` it is dropped and searches stay exact (as on random vectors, where no
    walk short of visiting most rows finds the nearest ten)."""
    needs_usearch()
    monkeypatch.setattr(graph, "BUILD_FROM", 1)
    measured: list[float] = []
    real = graph.measured_recall

    def measuring(*args: Any) -> float:
        measured.append(real(*args))
        return measured[-1]

    monkeypatch.setattr(graph, "measured_recall", measuring)
    assert vectors.build(lt.store, directory(lt), HASHING)["graph_rows"] == 60
    # Kept at the first breadth whose recall reaches the bar (60 rows: usually all within a
    # walk of 64; a graph built on several threads may need the next breadth), named by it.
    assert measured and measured[-1] >= graph.MIN_RECALL
    assert all(recall < graph.MIN_RECALL for recall in measured[:-1])
    [kept] = [p.name for p in generation(lt).iterdir() if "graph" in p.name]
    assert kept == f"graph-60-{graph.BREADTHS[len(measured) - 1]}.usearch"
    monkeypatch.setattr(graph, "MIN_RECALL", 1.01)
    assert vectors.build(lt.store, directory(lt), HASHING)["graph_rows"] == 0
    assert [p for p in generation(lt).iterdir() if "graph" in p.name] == []


@pytest.mark.usefixtures("keyword_side_in_the_database")
def test_without_usearch_a_graph_is_ignored_and_a_forget_removes_it(
    graphed: Lantern, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A process without usearch searches exactly beside a graph another one built, and, not
    able to zero a forgotten vector in the graph's file, removes the file."""
    monkeypatch.setattr(graph, "available", lambda: False)
    index.forget_cached()
    assert index.load(graphed.store, MEMORY, HASHING).graph is None
    agree(graphed, monkeypatch, graph=True)
    assert len(graph.files(generation(graphed))) == 1
    graphed.memory.forget(graphed.memory.list(limit=1)[0].id)
    assert graph.files(generation(graphed)) == []
    assert vectors.check(graphed.store) == []


def test_onnxruntime_loads_after_a_graph_was_opened() -> None:
    """A process that opened a graph, then embeds a query with MiniLM, lives: onnxruntime
    loaded after usearch's compiled module crashes the interpreter (a segmentation fault), so
    the graph loads it first (`graph._usearch_index`)."""
    needs_usearch()
    if find_spec("onnxruntime") is None:
        pytest.skip("onnxruntime is not installed (the embed extra)")
    script = (
        "from lantern.indexes import graph\n"
        "graph._usearch_index()\n"
        "import onnxruntime\n"
        "print('alive')\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120, check=False
    )
    assert (done.returncode, done.stdout) == (0, "alive\n"), done.stderr
