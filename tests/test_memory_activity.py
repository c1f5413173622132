"""`memory stats`, `memory changes` and the `expires_before` filter: the overview of a store's
memory, within the scopes, through the API and the CLI."""

from __future__ import annotations

import json

import pytest

from lantern.api import Lantern
from lantern.errors import InvalidInput
from lantern.memory.scopes import ScopePolicy
from lantern.validation import HISTORY_EVENTS, MEMORY_KINDS, STATUSES
from tests.helpers import BASE_TIME, CliRun, Clock

DAY = 86_400


def _story(lt: Lantern, clock: Clock) -> dict[str, str]:
    """Records in two scopes, changed over three days; their ids by name."""
    clock.now = BASE_TIME - 2 * DAY
    ada = lt.memory.add(kind="fact", content="Ada lives in Lyon.", scope="user:ada")
    bob = lt.memory.add(kind="goal", content="Bob ships.", scope="user:bob", expires_at=BASE_TIME)
    clock.now = BASE_TIME - DAY
    lt.memory.update(ada.id, priority=90)
    moved = lt.memory.supersede(ada.id, content="Ada lives in Paris.")
    note = lt.memory.add(kind="observation", content="A note.", scope="project:x")
    clock.now = BASE_TIME
    lt.memory.archive(note.id)
    lt.memory.forget(bob.id)
    return {"ada": ada.id, "moved": moved.id, "note": note.id, "bob": bob.id}


def test_stats_count_records_by_kind_status_and_scope(lt: Lantern, clock: Clock) -> None:
    ids = _story(lt, clock)
    lt.memory.add(kind="fact", content="old", scope="user:ada", expires_at=BASE_TIME - 10)
    stats = lt.memory.stats(top=2, days=3)
    assert stats.total == 4
    assert dict(stats.by_status) == {"active": 2, "archived": 1, "superseded": 1}
    assert list(stats.by_kind) == list(MEMORY_KINDS)
    assert stats.by_kind["fact"] == 3 and stats.by_kind["observation"] == 1
    assert stats.top_scopes == (("user:ada", 3), ("project:x", 1))
    assert stats.scope_count == 2
    assert stats.expired_active == 1
    days = stats.changes_per_day
    assert [day.start for day in days] == [BASE_TIME // DAY * DAY - n * DAY for n in (2, 1, 0)]
    assert [list(day.counts) for day in days] == [list(HISTORY_EVENTS)] * 3
    # Forgetting Bob's record removed its earlier entries: only its `forgotten` one is left.
    assert {k: v for k, v in days[0].counts.items() if v} == {"created": 1}
    # The update, and the supersede: an entry on the old record, one created for the new.
    assert {k: v for k, v in days[1].counts.items() if v} == {
        "created": 2,
        "updated": 1,
        "superseded": 1,
    }
    assert {k: v for k, v in days[2].counts.items() if v} == {
        "created": 1,
        "archived": 1,
        "forgotten": 1,
    }
    assert ids["moved"] != ids["ada"]
    rendered = stats.to_json()
    assert list(rendered) == [
        "total",
        "by_kind",
        "by_status",
        "top_scopes",
        "scope_count",
        "expired_active",
        "changes_per_day",
    ]
    assert rendered["top_scopes"][0] == {"scope": "user:ada", "count": 3}
    assert list(rendered["changes_per_day"][0]) == ["day", "start", "counts"]
    assert list(rendered["by_status"]) == list(STATUSES)


def test_stats_and_changes_stay_within_the_scopes(lt: Lantern, clock: Clock) -> None:
    ids = _story(lt, clock)
    for patterns, expected in (("user:*", {"ada", "moved", "bob"}), ("project:x", {"note"})):
        confined = lt.restricted(scopes=ScopePolicy.of(patterns), read_only=True)
        stats = confined.memory.stats(days=3)
        assert stats.total == len(expected - {"bob"})
        seen = {entry.record_id for entry in confined.memory.changes()}
        assert seen == {ids[name] for name in expected}
        counted = sum(sum(day.counts.values()) for day in stats.changes_per_day)
        assert counted == len(confined.memory.changes())
        # Asking for the scopes gives what the fence gives.
        assert lt.memory.stats(scope=patterns, days=3) == stats
        # The same entries; a confined caller's are numbered within their record.
        filtered, fenced = lt.memory.changes(scope=patterns), confined.memory.changes()
        assert len(filtered) == len(fenced)
        for whole, place in zip(filtered, fenced, strict=True):
            assert (whole.record_id, whole.event, whole.at) == (
                place.record_id,
                place.event,
                place.at,
            )
            log = [e.id for e in lt.memory.history(whole.record_id)]
            assert place.id == log.index(whole.id) + 1
    # The forgotten record's one entry keeps its scope, and is shown only there.
    confined = lt.restricted(scopes=ScopePolicy.of("project:*"), read_only=True)
    assert "forgotten" not in {entry.event for entry in confined.memory.changes()}


def test_changes_are_newest_first_filtered_and_paged(lt: Lantern, clock: Clock) -> None:
    ids = _story(lt, clock)
    every = lt.memory.changes()
    assert [e.event for e in every] == [
        "forgotten",
        "archived",
        "created",
        "superseded",
        "created",
        "updated",
        "created",
    ]
    assert [e.id for e in every] == sorted((e.id for e in every), reverse=True)
    assert every.next_cursor is None
    first = lt.memory.changes(limit=3)
    rest = lt.memory.changes(limit=10, after=first.next_cursor)
    assert first.next_cursor is not None
    assert [e.id for e in first] + [e.id for e in rest] == [e.id for e in every]
    assert [e.event for e in lt.memory.changes(event=["archived", "forgotten"])] == [
        "forgotten",
        "archived",
    ]
    assert {e.record_id for e in lt.memory.changes(scope="user:bob")} == {ids["bob"]}
    assert {e.record_id for e in lt.memory.changes(scope="user:*", since=BASE_TIME)} == {ids["bob"]}
    assert len(lt.memory.changes(before=BASE_TIME - DAY)) == 1  # Bob's went with his record
    # A changes page's entries are the same as each record's history.
    assert [e for e in every if e.record_id == ids["note"]][::-1] == lt.memory.history(ids["note"])


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"event": "renamed"}, "event must be one of"),
        ({"since": "yesterday"}, "since must be unix seconds"),
        ({"after": "c1_abc"}, "not a cursor of memory changes"),
        ({"after": -1}, "not a cursor of memory changes"),
        ({"limit": 0}, "limit must be an integer"),
        ({"scope": " x"}, "surrounding whitespace"),
    ],
)
def test_changes_refuse_bad_arguments(lt: Lantern, kwargs: dict[str, object], message: str) -> None:
    with pytest.raises(InvalidInput, match=message):
        lt.memory.changes(**kwargs)  # type: ignore[arg-type]


def test_stats_refuse_bad_arguments(lt: Lantern) -> None:
    with pytest.raises(InvalidInput, match="top must be an integer from 1 to 1000"):
        lt.memory.stats(top=0)
    with pytest.raises(InvalidInput, match="days must be an integer from 1 to 366"):
        lt.memory.stats(days=367)


def test_expires_before_keeps_records_expiring_earlier(lt: Lantern, clock: Clock) -> None:
    soon = lt.memory.add(kind="fact", content="soon", expires_at=BASE_TIME + DAY)
    later = lt.memory.add(kind="fact", content="later", expires_at=BASE_TIME + 30 * DAY)
    lt.memory.add(kind="fact", content="never")
    gone = lt.memory.add(kind="fact", content="gone", expires_at=BASE_TIME - 1)
    assert [r.id for r in lt.memory.list(expires_before=BASE_TIME + 7 * DAY)] == [soon.id]
    assert {
        r.id for r in lt.memory.list(expires_before=BASE_TIME + 7 * DAY, include_expired=True)
    } == {soon.id, gone.id}
    assert {r.id for r in lt.memory.list(expires_before="2100-01-01")} == {soon.id, later.id}
    # Times past 2038 fit in a statement first compiled for smaller ones.
    assert len(lt.memory.list(updated_before=BASE_TIME + 1)) == 3
    assert len(lt.memory.list(updated_before="2100-01-01")) == 3
    found = lt.memory.search("soon later never", expires_before=BASE_TIME + 7 * DAY)
    assert [m.record.id for m in found] == [soon.id]
    with pytest.raises(InvalidInput, match="expires_before must be unix seconds"):
        lt.memory.list(expires_before="soon")


def test_cli_stats_changes_and_expires_before(run_cli: CliRun, clock: Clock) -> None:
    added = run_cli("memory", "add", "--kind", "fact", "--expires-at", str(BASE_TIME + 60), "x")
    assert added.exit_code == 0, added.output
    run_cli("memory", "add", "--kind", "goal", "--scope", "user:ada", "y")
    stats = run_cli("memory", "stats", "--json", "--days", "1")
    assert stats.exit_code == 0, stats.output
    assert json.loads(stats.stdout)["total"] == 2
    text = run_cli("memory", "stats")
    assert "records: 2 in 2 scopes" in text.stdout
    changes = run_cli("memory", "changes", "--json", "--with-cursor", "--limit", "1")
    page = json.loads(changes.stdout)
    assert [e["event"] for e in page["entries"]] == ["created"] and page["next_cursor"]
    rest = run_cli("memory", "changes", "--json", "--after", page["next_cursor"])
    assert [e["record_id"] for e in json.loads(rest.stdout)] == [added.stdout.strip()]
    listed = run_cli("memory", "list", "--json", "--expires-before", str(BASE_TIME + 3600))
    assert [r["id"] for r in json.loads(listed.stdout)] == [added.stdout.strip()]
    bad = run_cli("memory", "changes", "--event", "renamed")
    assert bad.exit_code == 1 and "event must be one of" in bad.stderr
