"""Scope confinement and read-only stores, at the Python API, on every engine under test.

The restriction `lantern mcp --scope` and `--read-only` rely on lives below the tools, in the
repository and the store; these tests hold it to "a record outside the scopes behaves exactly
as if it did not exist" through every memory call, and to "a read-only store writes nothing".
"""

from __future__ import annotations

import io
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import text

from lantern.api import Lantern
from lantern.errors import (
    Conflict,
    InvalidInput,
    LanternError,
    NoStore,
    NotFound,
    PolicyRefused,
)
from lantern.memory.records import OUTSIDE_SCOPES, MemoryRecord
from lantern.memory.scopes import UNRESTRICTED, ScopePolicy
from lantern.store.ids import memory_id
from tests.memory_helpers import add_source, table_rows

PATTERNS = ["team:*", "solo", "odd\\*"]
UNKNOWN = "mem_00000000000000ff"


@dataclass
class World:
    """Records inside and outside PATTERNS, stored without restriction."""

    inside: list[MemoryRecord]
    outside: list[MemoryRecord]
    chunk: str
    replaced_by_outside: MemoryRecord
    """In scope, superseded by `successor_outside`."""
    successor_outside: MemoryRecord
    replacing_outside: MemoryRecord
    """In scope, supersedes `predecessor_outside`."""
    predecessor_outside: MemoryRecord
    forgotten_inside: str
    forgotten_outside: str


def _add(lt: Lantern, scope: str, content: str, **fields: Any) -> MemoryRecord:
    return lt.memory.add(kind="fact", scope=scope, content=content, **fields)


@pytest.fixture
def world(lt: Lantern) -> World:
    _sid, [chunk] = add_source(lt, "file:///shared/notes.md", ["The shared deploy checklist."])
    cite = {"source_refs": [f"chunk:{chunk}", "chunk:chk_ffffffffffffffff"], "allow_dangling": True}
    inside = [
        _add(lt, "team:a", "Alpha deploys the shared service.", **cite),
        _add(lt, "team:b", "Beta deploys on Fridays.", expires_at=1),  # expired, still active
        _add(lt, "solo", "Solo deploys by hand."),
        _add(lt, "odd*", "Odd deploys with a literal star."),
    ]
    outside = [
        _add(lt, "other", "Other deploys the shared service too.", **cite),
        _add(lt, "team", "Team without a colon deploys.", expires_at=1),
        _add(lt, "teamwork:a", "Teamwork deploys nightly."),
        _add(lt, "odd*x", "Odd-star-x deploys rarely."),
        _add(lt, "solo2", "Solo2 deploys never."),
    ]
    lt.memory.archive(outside[2].id)
    replaced = _add(lt, "team:a", "Replaced inside by a record outside.")
    successor = lt.memory.supersede(replaced.id, scope="other", content="The successor, outside.")
    predecessor = _add(lt, "other", "A predecessor outside.")
    replacing = lt.memory.supersede(predecessor.id, scope="team:a", content="Replacing, inside.")
    forgotten_inside = _add(lt, "team:a", "Forgotten inside.").id
    forgotten_outside = _add(lt, "other", "Forgotten outside.").id
    lt.memory.forget(forgotten_inside)
    lt.memory.forget(forgotten_outside)
    return World(
        inside=[*inside, replaced, replacing],
        outside=[*outside, successor, predecessor],
        chunk=chunk,
        replaced_by_outside=lt.memory.get(replaced.id),
        successor_outside=successor,
        replacing_outside=replacing,
        predecessor_outside=predecessor,
        forgotten_inside=forgotten_inside,
        forgotten_outside=forgotten_outside,
    )


@pytest.fixture
def confined(store_url: str, world: World) -> Iterator[Lantern]:
    with Lantern.open(store_url, scopes=PATTERNS) as lantern:
        yield lantern


def _ids(records: Any) -> set[str]:
    return {getattr(item, "record", item).id for item in records}


def _snapshot(lt: Lantern) -> list[Any]:
    return [
        table_rows(lt, "memory_records", "id"),
        table_rows(lt, "memory_history", "id"),
        table_rows(lt, "memory_refs", "record_id, ref_type, ref_id"),
    ]


def _same_as_unknown(call: Callable[[str], object], record_id: str) -> None:
    """`call(record_id)` fails exactly as `call` on an id that was never stored."""
    with pytest.raises(LanternError) as unknown:
        call(UNKNOWN)
    with pytest.raises(LanternError) as hidden:
        call(record_id)
    assert type(hidden.value) is type(unknown.value) is NotFound
    assert hidden.value.message == unknown.value.message.replace(UNKNOWN, record_id)


# --- the policy itself ------------------------------------------------------------------------


def test_patterns_mean_what_they_mean_for_memory_list() -> None:
    policy = ScopePolicy.of(PATTERNS)
    assert policy.restricted and policy.describe() == "team:*, solo, odd\\*"
    admitted = ["team:a", "team:", "team:a/b", "solo", "odd*"]
    refused = ["team", "teamwork:a", "Team:a", "solo2", "sol", "odd", "odd*x", "global"]
    assert [policy.allows(scope) for scope in admitted] == [True] * len(admitted)
    assert [policy.allows(scope) for scope in refused] == [False] * len(refused)
    assert ScopePolicy.of(None) is UNRESTRICTED and not ScopePolicy.of([]).restricted
    assert ScopePolicy.of("solo") == ScopePolicy((("solo", False),), ("solo",))
    assert UNRESTRICTED.allows("anything") and UNRESTRICTED.clauses("sqlite") == []


@pytest.mark.parametrize("pattern", ["", " user:*", "a\nb", "x" * 513, "x" * 513 + "*"])
def test_bad_patterns_are_refused(pattern: str) -> None:
    with pytest.raises(InvalidInput):
        ScopePolicy.of([pattern])


LOOK_ALIKES = ["user:alice2", "user:alicebob", "user:alice%", "user:alice_x", "user:alice.b"]
LOOK_ALIKES += ["user:Alice", "user:alic", "user:alice-", "user:alice\\", "user:alice*"]


@pytest.mark.parametrize(
    ("pattern", "admitted", "refused"),
    [
        # A name and a star: the name and what lies under it, never a longer name.
        ("user:alice*", ["user:alice", "user:alice/notes", "user:alice:work"], LOOK_ALIKES),
        ("user:ada*", ["user:ada", "user:ada/notes"], ["user:adam", "user:ada2", "user:adab"]),
        ("ü*", ["ü", "ü/x"], ["üx", "ü2"]),
        # A star after a separator: every scope under it.
        ("user:*", ["user:alice", "user:alice2", "user:", "user:%"], ["user", "users:a"]),
        ("project:lantern/*", ["project:lantern/docs"], ["project:lantern", "project:lanterns"]),
        ("*", ["anything", "user:alice2"], []),
        # A star after any other character: the writer ended the prefix there.
        ("log:2024-*", ["log:2024-01", "log:2024-"], ["log:2024", "log:20241"]),
        ("user:alice%*", ["user:alice%", "user:alice%x"], ["user:alice", "user:alicex"]),
        ("user:al_*", ["user:al_", "user:al_x"], ["user:alx", "user:al"]),
        # Escaped stars are literal, anywhere.
        ("odd\\*", ["odd*"], ["odd", "odd*x", "oddx"]),
        ("a\\*b*", ["a*b", "a*b/c"], ["a*bc", "axb", "a"]),
        # % and _ are plain characters in exact scopes too.
        ("user:al%", ["user:al%"], ["user:alice", "user:al"]),
        ("user:al_ce", ["user:al_ce"], ["user:alice"]),
    ],
)
def test_a_pattern_admits_what_its_writer_meant(
    pattern: str, admitted: list[str], refused: list[str]
) -> None:
    policy = ScopePolicy.of(pattern)
    assert [s for s in admitted if not policy.allows(s)] == []
    assert [s for s in refused if policy.allows(s)] == []
    assert policy.describe() == pattern


@pytest.mark.parametrize("pattern", ["user:*/notes", "team:*:ops", "*a", "a**", "user:al*ce"])
def test_a_star_before_the_end_is_refused_as_ambiguous(pattern: str) -> None:
    with pytest.raises(InvalidInput) as refused:
        ScopePolicy.of(["solo", pattern])
    assert refused.value.message == (
        f"scope pattern {pattern!r} has a * before its end: a * matches only at the end of a "
        "pattern (write \\* for a literal star)"
    )


def test_the_sql_condition_agrees_with_allows(lt: Lantern, store_url: str) -> None:
    scopes = ["team:a", "team:", "team", "teamwork", "solo", "solo2", "odd*", "odd*x", "Team:a"]
    scopes += ["team:\U0010ffff", "team;", "ü", "team:%", "team_a"]
    scopes += ["user:alice", "user:alice/notes", "user:alice:w", *LOOK_ALIKES, "user:aliceb/x"]
    scopes += ["user:al%", "user:al_", "user:alx", "user:al%x"]
    for number, scope in enumerate(scopes):
        _add(lt, scope, f"Record {number}.")
    policy = ScopePolicy.of([*PATTERNS, "team:%", "ü*", "user:alice*", "user:al%*", "user:al_"])
    with Lantern.open(store_url, scopes=policy) as confined:
        listed = {r.scope for r in confined.memory.list(status="all", limit=100)}
        # The same patterns as filters, on an unrestricted store.
        filtered = {r.scope for r in lt.memory.list(scope=policy.written, limit=100)}
    assert listed == filtered == {scope for scope in scopes if policy.allows(scope)}
    assert listed == {
        *("team:a", "team:", "solo", "odd*", "team:\U0010ffff", "team:%", "ü"),
        *("user:alice", "user:alice/notes", "user:alice:w", "user:al%", "user:al%x", "user:al_"),
    }


# --- reading ----------------------------------------------------------------------------------


def test_listings_and_searches_hold_only_records_inside(confined: Lantern, world: World) -> None:
    inside, outside = _ids(world.inside), _ids(world.outside)
    everything = confined.memory.list(status="all", include_expired=True, limit=1000)
    assert _ids(everything) == inside
    outside_scopes = ["other", "team", "teamwork:*", "odd\\*x", "solo2"]
    assert confined.memory.list(scope=outside_scopes, status="all", include_expired=True) == []
    assert _ids(confined.memory.list(scope="*", status="all", include_expired=True)) == inside
    found = confined.memory.search("deploys", status="all", include_expired=True, limit=1000)
    assert _ids(found) == {r.id for r in world.inside if "deploys" in r.content}
    assert not _ids(confined.memory.search("other", status="all", include_expired=True)) & outside


def test_a_cursor_pages_through_the_records_inside_only(confined: Lantern, world: World) -> None:
    seen: list[str] = []
    page = confined.memory.list(status="all", include_expired=True, limit=2)
    while True:
        seen += [record.id for record in page]
        if page.next_cursor is None:
            break
        page = confined.memory.list(
            status="all", include_expired=True, limit=2, after=page.next_cursor
        )
    assert sorted(seen) == sorted(_ids(world.inside))
    policy_order = confined.memory.search(
        "deploys", order="policy", status="all", include_expired=True, limit=1
    )
    following = confined.memory.search(
        "deploys",
        order="policy",
        status="all",
        include_expired=True,
        after=policy_order.next_cursor,
    )
    assert not _ids(following) & _ids(world.outside)


def test_citing_check_refs_and_expire_see_the_scopes_only(
    lt: Lantern, confined: Lantern, world: World
) -> None:
    alpha, other = world.inside[0].id, world.outside[0].id
    assert _ids(lt.memory.citing(f"chunk:{world.chunk}")) == {alpha, other}
    assert _ids(confined.memory.citing(f"chunk:{world.chunk}")) == {alpha}
    assert {d.record_id for d in lt.memory.check_refs()} == {alpha, other}
    assert [d.record_id for d in confined.memory.check_refs()] == [alpha]
    assert _ids(confined.memory.expire(dry_run=True)) == {world.inside[1].id}
    assert _ids(confined.memory.expire()) == {world.inside[1].id}
    assert lt.memory.get(world.outside[1].id).status == "active"  # expired, but outside


@pytest.mark.parametrize(
    "operation",
    ["get", "chain", "history", "update", "archive", "restore", "supersede", "forget", "cite"],
)
def test_a_record_outside_is_an_unknown_id(
    lt: Lantern, confined: Lantern, world: World, operation: str
) -> None:
    calls: dict[str, Callable[[str], object]] = {
        "get": confined.memory.get,
        "chain": confined.memory.chain,
        "history": confined.memory.history,
        "update": lambda rid: confined.memory.update(rid, priority=1),
        "archive": confined.memory.archive,
        "restore": confined.memory.restore,
        "supersede": lambda rid: confined.memory.supersede(rid, content="Taken over."),
        "forget": confined.memory.forget,
        "cite": lambda rid: confined.memory.add(
            kind="fact", scope="solo", content="Replaces one outside.", supersedes_id=rid
        ),
    }
    before = _snapshot(lt)
    for record in world.outside:
        _same_as_unknown(calls[operation], record.id)
    assert _snapshot(lt) == before


def test_supersede_chains_and_messages_stop_at_the_scopes(confined: Lantern, world: World) -> None:
    replaced = world.replaced_by_outside
    chain = confined.memory.chain(replaced.id)
    assert chain.record == replaced and chain.replaced_by == (OUTSIDE_SCOPES,)
    assert chain.replaces == ()
    # The id of a record outside is never shown: the placeholder says one is there.
    replacing = confined.memory.chain(world.replacing_outside.id)
    assert replacing.replaces == (OUTSIDE_SCOPES,)
    assert replacing.record.supersedes_id == OUTSIDE_SCOPES
    assert confined.memory.get(world.replacing_outside.id).supersedes_id == OUTSIDE_SCOPES
    [created] = confined.memory.history(world.replacing_outside.id)
    assert created.changes["after"]["supersedes_id"] == OUTSIDE_SCOPES
    superseded = confined.memory.history(replaced.id)[-1]
    assert superseded.changes["superseded_by"] == OUTSIDE_SCOPES
    attempts: list[Callable[[], object]] = [
        lambda: confined.memory.update(replaced.id, priority=1),
        lambda: confined.memory.archive(replaced.id),
        lambda: confined.memory.restore(replaced.id),
        lambda: confined.memory.supersede(replaced.id, content="Again."),
    ]
    for attempt in attempts:
        with pytest.raises(Conflict) as refused:
            attempt()
        assert world.successor_outside.id not in refused.value.message
        assert "a record outside the scopes this store is restricted to" in refused.value.message
    # A write of a visible record keeps what is stored: the link outside is unchanged.
    updated = confined.memory.update(world.replacing_outside.id, priority=7)
    assert updated.supersedes_id == OUTSIDE_SCOPES
    with Lantern.open(confined.location.url) as whole:
        stored = whole.memory.get(world.replacing_outside.id)
    assert stored.supersedes_id == world.predecessor_outside.id and stored.priority == 7


def test_what_a_forget_left_is_visible_inside_only(confined: Lantern, world: World) -> None:
    [entry] = confined.memory.history(world.forgotten_inside)
    assert entry.event == "forgotten"
    _same_as_unknown(confined.memory.history, world.forgotten_outside)
    with pytest.raises(NotFound, match="was already forgotten"):
        confined.memory.forget(world.forgotten_inside)
    _same_as_unknown(confined.memory.forget, world.forgotten_outside)


# --- writing ----------------------------------------------------------------------------------


def test_writes_inside_work(lt: Lantern, confined: Lantern, world: World) -> None:
    added = confined.memory.add(kind="goal", scope="team:new", content="A new goal.")
    assert lt.memory.get(added.id) == added
    assert confined.memory.update(added.id, priority=90).priority == 90
    assert confined.memory.archive(added.id).status == "archived"
    assert confined.memory.restore(added.id).status == "active"
    successor = confined.memory.supersede(added.id, scope="solo", content="A goal, moved.")
    assert confined.memory.chain(successor.id).replaces == (added.id,)
    assert [e.event for e in confined.memory.history(added.id)][-1] == "superseded"
    plain = confined.memory.add(kind="fact", scope="odd*", content="To forget.")
    assert confined.memory.forget(plain.id).id == plain.id


def test_writes_outside_are_refused_and_change_nothing(
    lt: Lantern, confined: Lantern, world: World
) -> None:
    before = _snapshot(lt)
    with pytest.raises(PolicyRefused) as refused:
        confined.memory.add(kind="fact", scope="other", content="Sneaking in.")
    assert refused.value.exit_code == 7
    assert refused.value.message == (
        "scope 'other' is outside the scopes this store is restricted to (team:*, solo, odd\\*)"
    )
    with pytest.raises(PolicyRefused, match=r"^record 1: scope 'team'"):
        confined.memory.add_many(
            [
                {"kind": "fact", "scope": "solo", "content": "Fine."},
                {"kind": "fact", "scope": "team", "content": "Not fine."},
            ]
        )
    with pytest.raises(PolicyRefused, match="scope 'solo2'"):
        confined.memory.supersede(world.inside[2].id, scope="solo2")
    # The id of a record outside is the same whoever computes it: still no way to touch it.
    twin = memory_id("other", "fact", world.outside[0].content)
    assert twin == world.outside[0].id
    with pytest.raises(PolicyRefused):
        confined.memory.get_or_add(kind="fact", scope="other", content=world.outside[0].content)
    assert _snapshot(lt) == before


def test_forget_refuses_to_rewrite_a_successor_outside(
    lt: Lantern, confined: Lantern, world: World
) -> None:
    before = _snapshot(lt)
    with pytest.raises(PolicyRefused, match="outside the allowed scopes"):
        confined.memory.forget(world.replaced_by_outside.id)
    assert _snapshot(lt) == before


def test_whole_store_operations_are_refused(confined: Lantern) -> None:
    for call in (
        confined.inspect,
        lambda: confined.export_jsonl(io.BytesIO()),
        lambda: confined.import_jsonl(io.BytesIO(b'{"type":"lantern_export","format":1}\n')),
        confined.upgrade,
        confined.check,
        confined.rebuild_index,
        lambda: confined.backup(confined.location.path or "/nonexistent/copy.db"),
    ):
        with pytest.raises(PolicyRefused, match="whole store"):
            call()


def test_evidence_is_not_confined(confined: Lantern, world: World) -> None:
    [hit] = confined.evidence.search("checklist")
    assert hit.chunk_id == world.chunk
    assert confined.evidence.get_chunk(world.chunk).chunk.id == world.chunk


# --- read-only --------------------------------------------------------------------------------


def test_a_read_only_store_reads_and_refuses_every_write(lt: Lantern, store_url: str) -> None:
    record = _add(lt, "team:a", "Read me, do not change me.")
    lt.evidence.ingest_text("tool://run/1", "Some output.")
    before = [*_snapshot(lt), table_rows(lt, "sources", "id"), table_rows(lt, "chunks", "id")]
    with Lantern.open(store_url, read_only=True) as frozen:
        assert frozen.memory.get(record.id) == record
        assert _ids(frozen.memory.search("read")) == {record.id}
        assert frozen.evidence.get_source("tool://run/1").chunk_count == 1
        assert frozen.memory.expire(dry_run=True) == []
        writes: list[Callable[[], object]] = [
            lambda: frozen.memory.add(kind="fact", scope="x", content="New."),
            lambda: frozen.memory.update(record.id, priority=1),
            lambda: frozen.memory.archive(record.id),
            lambda: frozen.memory.supersede(record.id, content="Other."),
            lambda: frozen.memory.forget(record.id),
            frozen.memory.expire,
            lambda: frozen.evidence.ingest_text("tool://run/2", "More output."),
            lambda: frozen.evidence.remove_source("tool://run/1"),
            lambda: frozen.import_jsonl(io.BytesIO(b'{"type":"lantern_export","format":1}\n')),
            frozen.upgrade,
        ]
        for write in writes:
            with pytest.raises(PolicyRefused, match="read-only"):
                write()
        # Behind the refusal, the database connections themselves refuse to write.
        with pytest.raises(LanternError), frozen.store.read() as conn:
            conn.execute(text("DELETE FROM memory_records"))
    after = [*_snapshot(lt), table_rows(lt, "sources", "id"), table_rows(lt, "chunks", "id")]
    assert after == before


def test_read_only_never_creates_a_store(tmp_path: Path) -> None:
    missing = tmp_path / "nowhere" / "lantern.db"
    with pytest.raises(NoStore, match=r"no Lantern store at .*nothing is there"):
        Lantern.open(missing, read_only=True)
    assert not missing.parent.exists()


def test_read_only_refuses_an_empty_database(store_url: str) -> None:
    if "://" not in store_url:
        Path(store_url).parent.mkdir(parents=True)
        Path(store_url).touch()
    with pytest.raises(NoStore, match=r"no Lantern store at .*it is empty"):
        Lantern.open(store_url, read_only=True)
    with Lantern.open(store_url) as created:  # the empty database is left as it was
        assert created.memory.list() == []
