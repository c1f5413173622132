"""A writer killed with SIGKILL at random moments: nothing acknowledged is lost, nothing is half.

A writer process loops over every kind of write (memory add with references, update, forget, a
batch import, a multi-chunk ingest), announcing each one before it starts (`intent`) and after
it committed (`ack`) on a pipe. The test kills it at a random moment, then checks that:

* `db check` finds the store healthy;
* every acknowledged write is there, as acknowledged, across all earlier kills as well;
* the write that was in flight happened completely or not at all: a batch import has all its
  records or none, an ingested source all its chunks or does not exist, a record its history,
  search and reference rows (which `db check` compares) or is absent.

Most writers are forked from the test process, so a kill cycle costs milliseconds; one cycle in
ten kills the real `lantern` executable in the middle of an import or an ingest instead.
"""

from __future__ import annotations

import functools
import io
import json
import os
import random
import select as selectors
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sqlalchemy import func, select

from lantern.api import Lantern
from lantern.evidence.chunking import chunk_source
from lantern.evidence.chunkplan import STRIDE
from lantern.store.ids import memory_id, source_id
from lantern.store.models import chunks, memory_history, memory_records, sources
from tests.helpers import LANTERN_BIN
from tests.reliability.conftest import Figures
from tests.reliability.tools import (
    Tier,
    assert_healthy,
    forked,
    is_postgres,
    kill,
    killed_by_signal,
    sized,
)

CHUNKED_TEXT = "# Log\n\n" + "\n\n".join(
    f"## Step {n}\n\n" + f"step {n} ran and wrote its lines " * 40 for n in range(6)
)
BATCH = 20
EXEC_BATCH = 400


@dataclass
class Model:
    """What the acknowledged writes left: the store must hold exactly this."""

    records: dict[str, int] = field(default_factory=dict)  # id -> priority
    forgotten: set[str] = field(default_factory=set)
    sources: dict[str, int] = field(default_factory=dict)  # uri -> chunks
    serial: int = 0


def _emit(fd: int, **fields: Any) -> None:
    os.write(fd, (json.dumps(fields) + "\n").encode())


def _writer(store_url: str, model: Model, fd: int, seed: int) -> None:
    """The forked writer: writes forever, announcing and acknowledging each write."""
    rng = random.Random(seed)
    serial = model.serial
    live = sorted(model.records)
    with Lantern.open(store_url) as lt:
        while True:
            serial += 1
            choice = rng.random()
            if choice < 0.35 or not live:
                text = f"killed writer keeps record {serial} with several words"
                record_id = memory_id("crash", "fact", text)
                _emit(fd, intent="add", ids=[record_id], serial=serial)
                lt.memory.add(
                    kind="fact",
                    scope="crash",
                    content=text,
                    source_refs=[f"session:s{serial}", {"type": "url", "id": f"u{serial}"}],
                )
                live.append(record_id)
                _emit(fd, ack="add", ids=[record_id], serial=serial)
            elif choice < 0.55:
                target = rng.choice(live)
                priority = rng.randrange(101)
                _emit(fd, intent="update", ids=[target], priority=priority, serial=serial)
                lt.memory.update(target, priority=priority)
                _emit(fd, ack="update", ids=[target], priority=priority, serial=serial)
            elif choice < 0.65:
                target = rng.choice(live)
                _emit(fd, intent="forget", ids=[target], serial=serial)
                lt.memory.forget(target)
                live.remove(target)
                _emit(fd, ack="forget", ids=[target], serial=serial)
            elif choice < 0.85:
                lines, ids = _export_lines(f"batch {serial}", BATCH)
                _emit(fd, intent="import", ids=ids, serial=serial)
                lt.import_jsonl(io.BytesIO(b"".join(lines)))
                live.extend(ids)
                _emit(fd, ack="import", ids=ids, serial=serial)
            else:
                uri = f"tool://crash/{serial}"
                _emit(fd, intent="ingest", uri=uri, serial=serial)
                result = lt.evidence.ingest_text(uri, f"{CHUNKED_TEXT}\n\nrun {serial}\n")
                _emit(fd, ack="ingest", uri=uri, chunks=result.source.chunk_count, serial=serial)


def _export_lines(prefix: str, count: int) -> tuple[list[bytes], list[str]]:
    lines = [b'{"type":"lantern_export","format":1}\n']
    ids = []
    for n in range(count):
        text = f"{prefix} record {n}"
        record_id = memory_id("crash", "fact", text)
        ids.append(record_id)
        record = {
            "type": "memory",
            "id": record_id,
            "kind": "fact",
            "content": text,
            "scope": "crash",
            "priority": 50,
            "urgency": 0,
            "confidence": 1.0,
            "status": "active",
            "created_at": 1_800_000_000,
            "updated_at": 1_800_000_000,
            "expires_at": None,
            "supersedes_id": None,
            "source_refs": [],
        }
        lines.append(json.dumps(record).encode() + b"\n")
    return lines, ids


def _read_available(fd: int, buffer: bytearray, until: float) -> None:
    while time.monotonic() < until:
        ready, _, _ = selectors.select([fd], [], [], max(0.0, until - time.monotonic()))
        if not ready:
            return
        chunk = os.read(fd, 65536)
        if not chunk:
            return
        buffer.extend(chunk)


def _events(buffer: bytes) -> list[dict[str, Any]]:
    complete = buffer[: buffer.rfind(b"\n") + 1]
    return [json.loads(line) for line in complete.splitlines()]


@dataclass
class _Stored:
    records: dict[str, int]
    forgotten: set[str]
    created: dict[str, int]
    sources: dict[str, tuple[int, int | None, int]]  # uri -> chunks, last end, max ordinal


def _stored(store_url: str) -> _Stored:
    with Lantern.open(store_url) as lt, lt.store.read() as conn:
        records = dict(
            conn.execute(
                select(memory_records.c.id, memory_records.c.priority).where(
                    memory_records.c.scope == "crash"
                )
            ).all()
        )
        events = conn.execute(
            select(memory_history.c.record_id, memory_history.c.event, func.count()).group_by(
                memory_history.c.record_id, memory_history.c.event
            )
        ).all()
        found = conn.execute(
            select(
                sources.c.uri,
                func.count(chunks.c.id),
                func.max(chunks.c.end_offset),
                func.max(chunks.c.ordinal),
            )
            .join(chunks, chunks.c.source_id == sources.c.id, isouter=True)
            .where(sources.c.uri.like("tool://crash/%"))
            .group_by(sources.c.uri)
        ).all()
    return _Stored(
        records=records,
        forgotten={record for record, event, _n in events if event == "forgotten"},
        created={record: n for record, event, n in events if event == "created"},
        sources={uri: (n, end, top) for uri, n, end, top in found},
    )


def _verify(model: Model, stored: _Stored, texts: dict[str, int]) -> list[str]:
    """What differs between the acknowledged writes and the store; empty when nothing."""
    problems = []
    for record_id, priority in model.records.items():
        if stored.records.get(record_id) != priority:
            problems.append(
                f"{record_id}: expected priority {priority}, found {stored.records.get(record_id)}"
            )
    for record_id in model.forgotten:
        if record_id in stored.records or record_id not in stored.forgotten:
            problems.append(f"{record_id} was forgotten but is still there")
    for record_id in stored.records:
        if record_id not in model.records:
            problems.append(f"{record_id} is stored but was never acknowledged")
    for uri, count in model.sources.items():
        found = stored.sources.get(uri)
        last = (count - 1) * STRIDE  # the ordinal of a first ingest's last chunk
        if found is None or found[0] != count or found[2] != last or found[1] != texts[uri]:
            problems.append(f"{uri}: expected {count} complete chunks, found {found}")
    return problems


def _reconcile(model: Model, stored: _Stored, intent: dict[str, Any] | None) -> str:
    """Settle the write that was in flight: all of it happened, or none. Its outcome."""
    if intent is None:
        return "none"
    op = intent["intent"]
    if op == "ingest":
        uri = intent["uri"]
        if uri not in stored.sources:
            return "absent"
        model.sources[uri] = stored.sources[uri][0]
        return "complete"
    ids = intent["ids"]
    present = [record_id in stored.records for record_id in ids]
    if op == "forget":
        (record_id,) = ids
        if present[0]:
            return "absent"
        model.records.pop(record_id, None)
        model.forgotten.add(record_id)
        return "complete"
    if op == "update":
        (record_id,) = ids
        if stored.records[record_id] == intent["priority"] != model.records[record_id]:
            model.records[record_id] = intent["priority"]
            return "complete"
        return "absent"
    assert all(present) or not any(present), f"partial {op}: {sum(present)} of {len(ids)} stored"
    if not any(present):
        return "absent"
    for record_id in ids:
        model.records[record_id] = 50
        model.forgotten.discard(record_id)
    if op == "add":
        assert all(stored.created.get(record_id) == 1 for record_id in ids)
    return "complete"


def _apply(model: Model, event: dict[str, Any], texts: dict[str, int]) -> None:
    op = event["ack"]
    if op in ("add", "import"):
        for record_id in event["ids"]:
            model.records[record_id] = 50
            model.forgotten.discard(record_id)
    elif op == "update":
        model.records[event["ids"][0]] = event["priority"]
    elif op == "forget":
        model.records.pop(event["ids"][0], None)
        model.forgotten.add(event["ids"][0])
    elif op == "ingest":
        model.sources[event["uri"]] = event["chunks"]
    model.serial = max(model.serial, event["serial"])


def _shape(text: str) -> tuple[int, int]:
    """How many chunks a text makes, and where the last one ends."""
    spans = chunk_source(text, "markdown")
    return len(spans), spans[-1].end


def _kill_executable(
    store_url: str, tmp_path: Path, rng: random.Random, cycle: int, model: Model
) -> str:
    """Kill `lantern import` or `lantern ingest` mid-way; its batch is then all there or absent."""
    if (cycle // 10) % 2:  # import and ingest in turn
        lines, ids = _export_lines(f"exec {cycle}", EXEC_BATCH)
        data = b"".join(lines)
        args = ["import", "-"]
        uris: list[str] = []
    else:
        tree = tmp_path / f"tree{cycle}"
        tree.mkdir()
        for n in range(60):
            (tree / f"note{n}.md").write_text(f"{CHUNKED_TEXT}\n\nfile {n}\n")
        data, args, ids = b"", ["ingest", str(tree)], []
        uris = [f"file://{tree}/note{n}.md" for n in range(60)]
    process = subprocess.Popen(
        [str(LANTERN_BIN), "--db", store_url, *args],
        stdin=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    assert process.stdin is not None
    process.stdin.write(data)
    process.stdin.close()
    time.sleep(rng.uniform(0.35, 1.0))
    process.kill()
    process.wait()
    with Lantern.open(store_url) as lt, lt.store.read() as conn:
        present = (
            set(
                conn.execute(
                    select(memory_records.c.id).where(memory_records.c.id.in_(ids))
                ).scalars()
            )
            if ids
            else set()
        )
        stored = (
            {
                uri: n
                for uri, n in conn.execute(
                    select(sources.c.uri, func.count(chunks.c.id))
                    .join(chunks, chunks.c.source_id == sources.c.id, isouter=True)
                    .where(sources.c.id.in_([source_id(uri) for uri in uris]))
                    .group_by(sources.c.uri)
                )
            }
            if uris
            else {}
        )
    assert len(present) in (0, len(ids)), f"partial import: {len(present)} of {len(ids)}"
    whole = {_shape(f"{CHUNKED_TEXT}\n\nfile {n}\n")[0] for n in range(60)}
    assert set(stored.values()) <= whole, f"a source without all its chunks: {stored}"
    if ids and present:
        for record_id in ids:
            model.records[record_id] = 50
    return f"{'import' if ids else 'ingest'} {'complete' if present or stored else 'absent'}"


def test_a_killed_writer_loses_no_acknowledged_write_and_leaves_no_half(
    store_url: str, tier: Tier, figures: Figures, tmp_path: Path
) -> None:
    size = sized(tier, store_url)
    Lantern.open(store_url).close()
    rng = random.Random(20261130)
    model = Model()
    texts: dict[str, int] = {}
    acked = healthy = executables = 0
    outcomes: dict[str, int] = {}
    started = time.monotonic()
    for cycle in range(size.kills):
        if cycle % 10 == 9:
            outcome = _kill_executable(store_url, tmp_path, rng, cycle, model)
            executables += 1
        else:
            read_fd, write_fd = os.pipe()
            seed = rng.randrange(1 << 30)
            pid = forked(functools.partial(_writer, store_url, model, write_fd, seed))
            os.close(write_fd)
            buffer = bytearray()
            wanted_acks = rng.randrange(0, 12)
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline and buffer.count(b'"ack"') < wanted_acks:
                _read_available(read_fd, buffer, time.monotonic() + 0.05)
            _read_available(read_fd, buffer, time.monotonic() + rng.uniform(0, 0.004))
            status = kill(pid)
            _read_available(read_fd, buffer, time.monotonic() + 0.01)
            os.close(read_fd)
            assert killed_by_signal(status), f"the writer ended by itself (status {status})"
            intent = None
            for event in _events(bytes(buffer)):
                if "intent" in event:
                    intent = event
                    if event["intent"] == "ingest":
                        texts[event["uri"]] = _shape(f"{CHUNKED_TEXT}\n\nrun {event['serial']}\n")[
                            1
                        ]
                else:
                    _apply(model, event, texts)
                    acked += len(event.get("ids", [])) or 1
                    intent = None
            stored = _stored(store_url)
            outcome = (
                f"{intent['intent'] if intent else 'idle'} {_reconcile(model, stored, intent)}"
            )
            if intent is not None:
                model.serial = max(model.serial, intent["serial"])
            problems = _verify(model, _stored(store_url), texts)
            assert not problems, f"after kill {cycle + 1}: {problems[:5]}"
        outcomes[outcome] = outcomes.get(outcome, 0) + 1
        assert_healthy(store_url)
        healthy += 1
    seconds = time.monotonic() - started
    engine = "postgres" if is_postgres(store_url) else "sqlite"
    figures(
        f"{size.kills} SIGKILLs on {engine} ({executables} of the lantern executable) in "
        f"{seconds:.1f} s: db check healthy {healthy}/{size.kills}, acknowledged writes "
        f"{acked} all present as acknowledged ({len(model.records)} records, "
        f"{len(model.forgotten)} forgotten, {len(model.sources)} sources), write in flight "
        f"at the kill: {', '.join(f'{k} {v}' for k, v in sorted(outcomes.items()))}; "
        "partial batches 0"
    )
    assert acked > 0
