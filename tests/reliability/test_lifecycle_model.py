"""A stateful model of the memory lifecycle: the store and a plain Python model never diverge.

Hypothesis drives random sequences of add, update, supersede, archive, restore, expire, forget,
list and search (and the clock moving on) against a real store and against `Model`, a few
dictionaries that restate the manual's rules (docs/memory.md). After every step the whole of
the run's records, every field of each, must equal the model's; lists and searches must return
the same records in the same order. Each run works in a scope of its own (`run<N>:...`), so
runs share one store.
"""

from __future__ import annotations

import dataclasses
import itertools
import time
from typing import Any

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import Bundle, RuleBasedStateMachine, invariant, rule

from lantern.api import Lantern
from lantern.errors import Conflict, InvalidInput, LanternError, NotFound
from lantern.memory.records import MemoryRecord
from lantern.store.ids import memory_id
from lantern.validation import MEMORY_KINDS, normalized_content
from tests.helpers import Clock
from tests.reliability.conftest import Figures
from tests.reliability.tools import Tier, is_postgres, sized

WORDS = ["amber", "basalt", "cedar", "dune", "ember", "fjord"]
CONTENTS = st.lists(st.sampled_from(WORDS), min_size=1, max_size=3).flatmap(
    lambda words: st.sampled_from([" ".join(words), "  ".join(words) + " ", "\t".join(words)])
)
STATUS_ORDER = {"active": 0, "archived": 1, "superseded": 2}
_runs = itertools.count()


class Model:
    """The rules of the manual, restated over plain records (frozen `MemoryRecord`s)."""

    def __init__(self) -> None:
        self.records: dict[str, MemoryRecord] = {}

    def order(self, records: list[MemoryRecord]) -> list[str]:
        def key(r: MemoryRecord) -> tuple[int, int, int, int, str]:
            return (STATUS_ORDER[r.status], -r.priority, -r.urgency, -r.updated_at, r.id)

        return [r.id for r in sorted(records, key=key)]

    def saying(self, scope: str, kind: str, content: str) -> MemoryRecord | None:
        """The record that says this now: same scope, kind and content, whitespace aside."""
        said = (scope, kind, normalized_content(content))
        for record in self.records.values():
            if (record.scope, record.kind, normalized_content(record.content)) == said:
                return record
        return None

    def new_id(self, scope: str, kind: str, content: str) -> str:
        """The first id of the text's sequence that no stored record has."""
        for attempt in itertools.count():
            candidate = memory_id(scope, kind, content, attempt)
            if candidate not in self.records:
                return candidate
        raise AssertionError("unreachable")

    def visible(self, status: str, include_expired: bool, now: int) -> list[MemoryRecord]:
        return [
            r
            for r in self.records.values()
            if status in ("all", r.status) and (include_expired or not r.is_expired(now))
        ]


class LifecycleMachine(RuleBasedStateMachine):
    """One run: a namespace, a model, and the store and clock shared by all runs."""

    lt: Lantern
    clock: Clock
    counts: dict[str, int]

    records = Bundle("records")

    def __init__(self) -> None:
        super().__init__()
        self.namespace = f"run{next(_runs)}"
        self.model = Model()
        self.counts["runs"] += 1

    def _scope(self, suffix: str) -> str:
        return f"{self.namespace}:{suffix}"

    def _step(self) -> None:
        self.counts["steps"] += 1

    # --- writes ---------------------------------------------------------------------------

    @rule(
        target=records,
        kind=st.sampled_from(MEMORY_KINDS[:3]),
        content=CONTENTS,
        suffix=st.sampled_from(["a", "b"]),
        priority=st.integers(0, 100),
        urgency=st.sampled_from([0, 50]),
        expires_in=st.one_of(st.none(), st.integers(-2, 6)),
    )
    def add(
        self, kind: str, content: str, suffix: str, priority: int, urgency: int, expires_in: int
    ) -> str:
        self._step()
        scope = self._scope(suffix)
        now = self.clock.now
        stored = self.model.saying(scope, kind, content)
        record_id = stored.id if stored is not None else self.model.new_id(scope, kind, content)
        got, created = self.lt.memory.get_or_add(
            kind=kind,
            content=content,
            scope=scope,
            priority=priority,
            urgency=urgency,
            expires_at=None if expires_in is None else now + expires_in,
        )
        if stored is not None:
            assert not created and got == stored
        else:
            assert created
            self.model.records[record_id] = MemoryRecord(
                id=record_id,
                kind=kind,
                content=content,
                scope=scope,
                priority=priority,
                urgency=urgency,
                confidence=1.0,
                status="active",
                created_at=now,
                updated_at=now,
                expires_at=None if expires_in is None else now + expires_in,
                supersedes_id=None,
                source_refs=(),
            )
            assert got == self.model.records[record_id]
        return record_id

    @rule(
        target=records,
        record_id=records,
        priority=st.one_of(st.none(), st.integers(0, 100)),
        content=st.one_of(st.none(), CONTENTS),
    )
    def update(self, record_id: str, priority: int | None, content: str | None) -> str:
        self._step()
        if priority is None and content is None:
            with pytest.raises(InvalidInput):
                self.lt.memory.update(record_id, priority=priority, content=content)
            return record_id
        old = self.model.records.get(record_id)
        expected: type[LanternError] | None = None
        if old is None:
            expected = NotFound
        elif old.status == "superseded":
            expected = Conflict
        elif content is not None and content != old.content:
            twin = self.model.saying(old.scope, old.kind, content)
            if twin is not None and twin.id != record_id:
                expected = Conflict
        if expected is not None:
            with pytest.raises(expected):
                self.lt.memory.update(record_id, priority=priority, content=content)
            return record_id
        assert old is not None
        changes: dict[str, Any] = {
            name: value
            for name, value in (("priority", priority), ("content", content))
            if value is not None and getattr(old, name) != value
        }
        new = dataclasses.replace(old, **changes)
        if changes:
            new = dataclasses.replace(new, updated_at=self.clock.now)
        assert self.lt.memory.update(record_id, priority=priority, content=content) == new
        self.model.records[record_id] = new
        return record_id

    @rule(target=records, record_id=records, content=CONTENTS)
    def supersede(self, record_id: str, content: str) -> str:
        self._step()
        old = self.model.records.get(record_id)
        expected: type[LanternError] | None = None
        if old is None:
            expected = NotFound
        elif old.status == "superseded":
            expected = Conflict
        elif normalized_content(content) == normalized_content(old.content):
            expected = InvalidInput
        elif self.model.saying(old.scope, old.kind, content) is not None:
            expected = Conflict
        if expected is not None:
            with pytest.raises(expected):
                self.lt.memory.supersede(record_id, content=content)
            return record_id
        assert old is not None
        now = self.clock.now
        new_id = self.model.new_id(old.scope, old.kind, content)
        new = dataclasses.replace(
            old,
            id=new_id,
            content=content,
            status="active",
            created_at=now,
            updated_at=now,
            supersedes_id=record_id,
        )
        assert self.lt.memory.supersede(record_id, content=content) == new
        self.model.records[record_id] = dataclasses.replace(
            old, status="superseded", updated_at=now
        )
        self.model.records[new_id] = new
        return new_id

    @rule(record_id=records, to=st.sampled_from(["archived", "active"]))
    def archive_or_restore(self, record_id: str, to: str) -> None:
        self._step()
        call = self.lt.memory.archive if to == "archived" else self.lt.memory.restore
        old = self.model.records.get(record_id)
        if old is None or old.status == "superseded":
            with pytest.raises(NotFound if old is None else Conflict):
                call(record_id)
            return
        new = old
        if old.status != to:
            new = dataclasses.replace(old, status=to, updated_at=self.clock.now)
        assert call(record_id) == new
        self.model.records[record_id] = new

    @rule(dry_run=st.booleans())
    def expire(self, dry_run: bool) -> None:
        self._step()
        now = self.clock.now
        due = [r for r in self.model.records.values() if r.status == "active" and r.is_expired(now)]
        got = [r for r in self.lt.memory.expire(dry_run=dry_run) if r.id in self.model.records]
        expected = self.model.order(due)
        assert [r.id for r in got] == expected
        if not dry_run:
            for record in due:
                archived = dataclasses.replace(record, status="archived", updated_at=now)
                self.model.records[record.id] = archived

    @rule(record_id=records)
    def forget(self, record_id: str) -> None:
        self._step()
        if record_id not in self.model.records:
            with pytest.raises(NotFound):
                self.lt.memory.forget(record_id)
            return
        self.lt.memory.forget(record_id)
        del self.model.records[record_id]
        for other in list(self.model.records.values()):
            if other.supersedes_id == record_id:
                self.model.records[other.id] = dataclasses.replace(other, supersedes_id=None)

    @rule(seconds=st.integers(1, 3))
    def tick(self, seconds: int) -> None:
        self.clock.advance(seconds)

    # --- reads ----------------------------------------------------------------------------

    @rule(
        status=st.sampled_from(["active", "archived", "superseded", "all"]),
        include_expired=st.booleans(),
    )
    def list_records(self, status: str, include_expired: bool) -> None:
        self._step()
        got = self.lt.memory.list(
            scope=f"{self.namespace}:*",
            status=status,
            include_expired=include_expired,
            limit=1000,
        )
        want = self.model.order(self.model.visible(status, include_expired, self.clock.now))
        assert [r.id for r in got] == want

    @rule(word=st.sampled_from(WORDS), status=st.sampled_from(["active", "all"]))
    def search(self, word: str, status: str) -> None:
        self._step()
        got = self.lt.memory.search(
            word, scope=f"{self.namespace}:*", status=status, order="policy", limit=1000
        )
        matching = [
            r
            for r in self.model.visible(status, False, self.clock.now)
            if word in normalized_content(r.content).split(" ")
        ]
        assert [m.record.id for m in got] == self.model.order(matching)

    @invariant()
    def store_equals_model(self) -> None:
        stored = self.lt.memory.list(
            scope=f"{self.namespace}:*", status="all", include_expired=True, limit=1000
        )
        assert {r.id: r for r in stored} == self.model.records


def test_the_memory_lifecycle_matches_its_model(
    store_url: str, tier: Tier, figures: Figures, clock: Clock
) -> None:
    size = sized(tier, store_url)
    counts = {"runs": 0, "steps": 0}
    with Lantern.open(store_url, clock=clock) as lt:
        LifecycleMachine.lt = lt
        LifecycleMachine.clock = clock
        LifecycleMachine.counts = counts
        started = time.monotonic()

        class LifecycleRun(LifecycleMachine):
            """A subclass per test: settings may be given to a machine class only once."""

        machine = LifecycleRun
        machine.TestCase.settings = settings(
            max_examples=size.model_runs,
            stateful_step_count=size.model_steps,
            deadline=None,
            suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
            print_blob=True,
        )
        machine.TestCase().runTest()
    engine = "postgres" if is_postgres(store_url) else "sqlite"
    figures(
        f"{engine}: {counts['runs']} runs (up to {size.model_steps} steps each), "
        f"{counts['steps']} operations checked against the model, 0 divergences; "
        f"{time.monotonic() - started:.1f} s"
    )
    assert counts["runs"] >= size.model_runs
