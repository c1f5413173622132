"""Concurrent writers on one store lose nothing, duplicate nothing, and never see "locked".

Processes of every kind a user runs write at once: API scripts (memory and evidence), the CLI
(`cli.main` per call, in a long-lived process), the `lantern` executable (a process per call)
and MCP clients, each with its own `lantern mcp` server. Each prints an acknowledgement after
every successful write (see `writers.py`); the test then compares the store with the
acknowledgements, record by record.
"""

from __future__ import annotations

import contextlib
import json
import tempfile
import time
from collections import Counter

from sqlalchemy import func, select

from lantern.api import Lantern
from lantern.store.models import chunks, memory_history, memory_records, sources
from tests.reliability.conftest import Figures
from tests.reliability.tools import Tier, assert_healthy, python_process, sized

ROLES = ("api-memory", "api-evidence", "cli", "cli-exec", "mcp", "cli", "api-memory", "mcp")


def test_concurrent_writers_lose_and_duplicate_nothing(
    store_url: str, tier: Tier, figures: Figures
) -> None:
    size = sized(tier, store_url)
    Lantern.open(store_url).close()
    roles = ROLES[: size.writers]
    started = time.monotonic()
    acks: list[dict[str, object]] = []
    stray: list[str] = []
    with contextlib.ExitStack() as stack:
        outputs = [stack.enter_context(tempfile.TemporaryFile("w+")) for _ in roles]
        processes = [
            python_process(
                *("-m", "tests.reliability.writers", role, store_url, str(size.writes), str(n)),
                stdout=out,
                stderr=out,
            )
            for n, (role, out) in enumerate(zip(roles, outputs, strict=True))
        ]
        codes = [process.wait(timeout=3_600) for process in processes]
        for out in outputs:
            out.seek(0)
            for line in out:
                try:
                    acks.append(json.loads(line))
                except json.JSONDecodeError:
                    stray.append(line.rstrip())
    seconds = time.monotonic() - started
    errors = [entry for entry in acks if entry["op"] == "error"]
    locked = [
        entry
        for entry in errors
        if entry.get("code") == 3 or "locked" in str(entry.get("message", "")).lower()
    ]

    expected: dict[str, int] = {}
    created_by_call: set[str] = set()
    acknowledged = 0
    evidence: dict[str, tuple[str, int]] = {}
    for entry in acks:
        op = entry["op"]
        if op in ("add", "update"):
            expected[str(entry["id"])] = int(str(entry["priority"]))
            if op == "add":
                created_by_call.add(str(entry["id"]))
            acknowledged += 1
        elif op == "import":
            ids = entry["ids"]
            assert isinstance(ids, list)
            for record_id in ids:
                expected[str(record_id)] = 50
                acknowledged += 1
        elif op == "ingest":
            evidence[str(entry["uri"])] = (str(entry["id"]), int(str(entry["chunks"])))
            acknowledged += 1

    with Lantern.open(store_url) as lt, lt.store.read() as conn:
        stored = dict(
            conn.execute(
                select(memory_records.c.id, memory_records.c.priority).where(
                    memory_records.c.scope.like("w:%")
                )
            ).all()
        )
        created: Counter[str] = Counter(
            dict(
                conn.execute(
                    select(memory_history.c.record_id, func.count())
                    .where(memory_history.c.event == "created")
                    .group_by(memory_history.c.record_id)
                ).all()
            )
        )
        stored_sources = {
            uri: (source, count)
            for uri, source, count in conn.execute(
                select(sources.c.uri, sources.c.id, func.count(chunks.c.id))
                .join(chunks, chunks.c.source_id == sources.c.id)
                .group_by(sources.c.uri, sources.c.id)
            )
        }

    lost = [i for i in expected if i not in stored] + [
        u for u in evidence if u not in stored_sources
    ]
    wrong = [i for i, p in expected.items() if i in stored and stored[i] != p]
    wrong += [u for u, v in evidence.items() if u in stored_sources and stored_sources[u] != v]
    extra = [i for i in stored if i not in expected]
    extra += [u for u in stored_sources if u not in evidence]
    duplicated = [i for i, n in created.items() if n > 1]
    duplicated += [i for i in created_by_call if created[i] != 1]
    attempted = len(roles) * size.writes
    found = len(expected) - len(lost) + len(evidence)
    figures(
        f"{len(roles)} processes ({', '.join(roles)}) x {size.writes} writes in {seconds:.1f} s: "
        f"attempted {attempted}, acknowledged {acknowledged}, records and sources found "
        f"{found} of {len(expected) + len(evidence)} distinct, lost {len(lost)}, wrong "
        f"{len(wrong)}, extra {len(extra)}, duplicated {len(duplicated)}, errors {len(errors)}, "
        f'"database is locked" {len(locked)}'
    )
    assert not stray, stray[:5]
    assert codes == [0] * len(roles), errors[:5]
    assert acknowledged == attempted
    assert (lost, wrong, extra, duplicated, errors, locked) == ([], [], [], [], [], [])
    assert_healthy(store_url)
