"""An upgrade of a legacy store killed at every statement boundary: old or new, never between.

For each generation, a legacy store (awkward rows, and rows that live only in its write-ahead
log) is upgraded in a forked process that kills itself with SIGKILL just before its k-th SQL
statement starts, for every k from the first statement to the last (FTS5's own internal
statements included, so some kills land inside a `CREATE VIRTUAL TABLE`). The quick tier, run
by every `pytest`, takes every third k, from the first for generation 1 and from the second for
generation 2 (most statements are those of the revisions both upgrades run); the long tier takes
every k for both. Random-time kills add moments between statements, such as the middle of the backup
copy. After each kill:

* the store opens at its legacy generation or at the head revision, never in between;
* every row, id and byte is as before, and full-text search answers the same queries (at
  head, with what stemming adds: revision 0012);
* any `NAME.backup-*` file beside it is a complete copy (partial copies live only under a
  hidden temporary name);
* `db check` finds it healthy, and upgrading it again then succeeds, healthy too.

Legacy stores are SQLite files only; PostgreSQL runs its DDL in one transaction of its own.
"""

from __future__ import annotations

import functools
import os
import random
import shutil
import signal
import time
from pathlib import Path

import pytest
from sqlalchemy import event
from sqlalchemy.engine import Engine

from lantern.api import Lantern
from lantern.store import migrations
from lantern.store.location import resolve
from tests.legacy_stores import FTS_PROBE_QUERIES, build_legacy_store, fts_answers, snapshot
from tests.reliability.conftest import Figures
from tests.reliability.tools import Tier, assert_healthy, forked, kill, killed_by_signal


def _statements_in_an_upgrade(template: Path, work: Path) -> int:
    """Upgrade a copy in this process, counting the statements SQLite starts."""
    _copy_store(template, work)
    count = 0

    def count_statement(_sql: str) -> None:
        nonlocal count
        count += 1

    def trace(dbapi_connection: object, _record: object) -> None:
        dbapi_connection.set_trace_callback(count_statement)  # type: ignore[attr-defined]

    event.listen(Engine, "connect", trace)
    try:
        migrations.upgrade(resolve(str(work)))
    finally:
        event.remove(Engine, "connect", trace)
    return count


def _upgrade_killed_at(path: Path, statement: int) -> None:
    """The child: upgrade, and SIGKILL itself as the `statement`-th statement starts."""
    seen = 0

    def on_statement(_sql: str) -> None:
        nonlocal seen
        seen += 1
        if seen == statement:
            os.kill(os.getpid(), signal.SIGKILL)

    def trace(dbapi_connection: object, _record: object) -> None:
        dbapi_connection.set_trace_callback(on_statement)  # type: ignore[attr-defined]

    event.listen(Engine, "connect", trace)
    migrations.upgrade(resolve(str(path)))


def _upgrade(path: Path) -> None:
    migrations.upgrade(resolve(str(path)))


def _copy_store(template: Path, path: Path) -> None:
    for leftover in path.parent.iterdir():
        if leftover.name.startswith((path.name, "." + path.name)):
            leftover.unlink()
    for suffix in ("", "-wal", "-shm"):
        source = template.with_name(template.name + suffix)
        if source.exists():
            shutil.copyfile(source, path.with_name(path.name + suffix))


def _assert_rows_intact(
    after: dict[str, list[tuple[object, ...]]], before: dict[str, list[tuple[object, ...]]]
) -> None:
    """Every legacy row as it was; tables an upgrade adds (entities, for generation 1) empty."""
    assert {table: after[table] for table in before} == before
    assert all(rows == [] for table, rows in after.items() if table not in before)


def _check_after_kill(
    path: Path,
    generation: int,
    before: dict[str, list[tuple[object, ...]]],
    answers: dict[str, list[str]],
) -> str:
    """Everything the kill may not have broken; the revision the store was found at."""
    with Lantern.open(path, require_current=False, create=False) as lt:
        status = lt.status()
    found = (status.revision, status.legacy_generation)
    assert found in ((None, generation), (migrations.HEAD, None)), found
    _assert_rows_intact(snapshot(path), before)
    found_answers = fts_answers(path, FTS_PROBE_QUERIES)
    if status.revision is None:
        assert found_answers == answers
    else:  # stemmed (revision 0012): every chunk found before, and a word's other forms too
        assert found_answers.keys() == answers.keys()
        assert all(set(answers[query]) <= set(found_answers[query]) for query in answers)
    for backup in path.parent.glob(path.name + ".backup-*"):
        if backup.name.endswith(("-wal", "-shm")):
            continue
        assert snapshot(backup) == before, f"{backup.name} is not a complete copy of the store"
    assert_healthy(str(path))
    return "head" if status.revision else "legacy"


@pytest.mark.parametrize("generation", [1, 2])
def test_an_upgrade_killed_anywhere_leaves_the_old_or_the_new_store(
    tmp_path: Path, tier: Tier, figures: Figures, generation: int
) -> None:
    template = tmp_path / "template" / "legacy.db"
    template.parent.mkdir()
    build_legacy_store(template, generation, wal_pending=True)
    before = snapshot(template)
    answers = fts_answers(template, FTS_PROBE_QUERIES)
    work = tmp_path / "work" / "legacy.db"
    work.parent.mkdir()
    statements = _statements_in_an_upgrade(template, work)
    rng = random.Random(generation)
    stride = tier.upgrade_statement_stride
    first = 1 + (generation - 1) % stride
    kills = [("statement", k) for k in range(first, statements + 1, stride)]
    kills += [("random", 0)] * tier.upgrade_random_kills
    found: dict[str, int] = {"legacy": 0, "head": 0}
    reupgraded = 0
    started = time.monotonic()
    for how, statement in kills:
        _copy_store(template, work)
        if how == "statement":
            pid = forked(functools.partial(_upgrade_killed_at, work, statement))
            _pid, status = os.waitpid(pid, 0)
        else:
            pid = forked(functools.partial(_upgrade, work))
            time.sleep(rng.uniform(0.0, 0.08))
            status = kill(pid)
            if not killed_by_signal(status):
                assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0, status
        if how == "statement":
            assert killed_by_signal(status), f"statement {statement}: status {status}"
        found[_check_after_kill(work, generation, before, answers)] += 1
        # And the recovery: upgrading again completes.
        migrations.upgrade(resolve(str(work)))
        assert _check_after_kill(work, generation, before, answers) == "head"
        reupgraded += 1
    figures(
        f"generation {generation}: {len(range(first, statements + 1, stride))} of {statements} "
        f"statement boundaries killed one by one and "
        f"{tier.upgrade_random_kills} random kills in {time.monotonic() - started:.1f} s: "
        f"store found at its legacy generation {found['legacy']}, at head {found['head']}, "
        f"in between 0; rows and FTS answers intact {len(kills)}/{len(kills)}, db check "
        f"healthy {len(kills)}/{len(kills)}, upgraded again {reupgraded}"
    )
