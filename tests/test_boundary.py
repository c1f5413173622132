"""One error boundary for Python callers: every public method, given an argument of the wrong
type, raises a `LanternError` naming it, never a bare TypeError, and changes nothing.

The methods and their parameters are found by introspection (the facade's public methods and
those of every checked repository it exposes), so a new method or parameter is covered as soon
as it exists; a new required parameter needs a valid value in `VALID` below, and the test says
so when one is missing.
"""

from __future__ import annotations

import inspect
import io
import sqlite3
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from lantern.api import Lantern
from lantern.boundary import checked
from lantern.embeddings.hashing import HashingProvider
from lantern.errors import InvalidInput, LanternError, Param, Term
from lantern.memory.scopes import ScopePolicy

# --- the public surface, by introspection ----------------------------------------------------


def _public_methods(cls: type) -> list[str]:
    return [
        name
        for name in dir(cls)
        if not name.startswith("_")
        and callable(inspect.getattr_static(cls, name).__get__(None, cls))
        and not isinstance(inspect.getattr_static(cls, name), property)
        and (
            inspect.isfunction(inspect.getattr_static(cls, name))
            or isinstance(inspect.getattr_static(cls, name), classmethod | staticmethod)
        )
    ]


def _surfaces(lt: Lantern) -> dict[str, object]:
    """The facade and every checked object it exposes as a public attribute (set on the
    instance, or a property)."""
    found: dict[str, object] = {"lt": lt}
    for name in dir(lt):
        if name.startswith("_"):
            continue
        value = getattr(lt, name)
        if getattr(type(value), "__lantern_boundary__", False):
            found[f"lt.{name}"] = value
    return found


# --- wrong values, judged from the annotation's text alone ------------------------------------


class _Opaque:
    """A value no parameter takes: not text, number, container, file or callable."""

    def __repr__(self) -> str:
        return "<opaque>"


def _spelled_out(method: Callable[..., Any], annotation: object) -> str:
    """The annotation with a type alias (`Refs`) replaced by what it stands for, so that the
    words below see its parts."""
    namespace = getattr(inspect.unwrap(method), "__globals__", {})
    alias = namespace.get(annotation) if isinstance(annotation, str) else None
    return str(alias) if alias is not None and not isinstance(alias, type) else str(annotation)


def _wrong_values(annotation: str) -> list[object]:
    """Values the annotation does not admit, decided without the checker under test."""
    wrong: list[object] = [_Opaque(), 1j]
    shallow = "Iterable" in annotation
    if "None" not in annotation:
        wrong.append(None)
    if "str" not in annotation and not shallow:
        wrong.append("text")
    if "int" not in annotation and "float" not in annotation:
        wrong.append(7)
    if "bool" not in annotation:
        wrong.append(True)
    if "float" not in annotation:
        wrong.append(2.5)
    if "Sequence[str" in annotation:
        wrong += [[_Opaque()], ["fine", 5]]
    elif not shallow and "Sequence" not in annotation and "Mapping" not in annotation:
        wrong.append(["text"])
    if "Mapping" in annotation:
        wrong.append({5: "not a text key"})
    elif not shallow:
        wrong.append({"key": "value"})
    if shallow:
        wrong.append([_Opaque()])  # read by the method, which must refuse it in its own words
    return wrong


# --- valid values for the required parameters --------------------------------------------------


def _valid(store: Path, lt: Lantern, record_id: str, chunk_id: str) -> dict[str, Callable[[], Any]]:
    return {
        "kind": lambda: "fact",
        "content": lambda: "a valid content",
        "record_id": lambda: record_id,
        "old_id": lambda: record_id,
        "records": lambda: [{"kind": "fact", "content": "another"}],
        "entities": lambda: ["person:Ada"],
        "entity": lambda: "person:Ada",
        "query": lambda: "valid",
        "ref": lambda: "chunk:" + chunk_id,
        "refs": lambda: ["chunk:" + chunk_id],
        "chunk_ref": lambda: chunk_id,
        "chunk_id": lambda: chunk_id,
        "uri": lambda: "file:///boundary.txt",
        "text": lambda: "some text",
        "paths": lambda: [str(store.parent / "nothing-here")],
        "provider": HashingProvider,
        "out": io.BytesIO,
        "source": lambda: io.BytesIO(b""),
        "target": lambda: str(store.parent / "backup.db"),
        "scopes": lambda: ScopePolicy.of(None),
        "db": lambda: lt.location.url,
        "read_only": lambda: False,
        "scope": lambda: "global",
        "dialect": lambda: "sqlite",
        "patterns": lambda: None,
    }


def _snapshot(lt: Lantern) -> bytes:
    """Everything the store holds (an export, its header's time left out) and its settings."""
    out = io.BytesIO()
    lt.export_jsonl(out)
    lines = out.getvalue().splitlines()[1:]
    return b"\n".join(lines) + repr(lt.embedding_settings()).encode()


def _close(result: object) -> None:
    if isinstance(result, Lantern) and result is not None:
        result.close()


@pytest.fixture
def store(lt: Lantern, tmp_path: Path) -> Iterator[tuple[Lantern, str, str]]:
    record = lt.memory.add(kind="fact", content="the record under test", entities=["person:Ada"])
    ingested = lt.evidence.ingest_text("file:///doc.md", "# Doc\n\nAda wrote it.\n")
    chunks = lt.evidence.get_source(ingested.source.id).chunks
    assert chunks
    chunk = chunks[0].id
    lt.entities.attach_entities(chunk, ["person:Ada"])
    yield lt, record.id, chunk


def test_every_public_method_refuses_wrong_types_with_a_lantern_error(
    store: tuple[Lantern, str, str], tmp_path: Path
) -> None:
    lt, record_id, chunk_id = store
    path = lt.location.path or tmp_path / "store.db"
    valid = _valid(path, lt, record_id, chunk_id)
    before = _snapshot(lt)
    escaped: list[str] = []
    unnamed: list[str] = []
    calls = 0
    surfaces = _surfaces(lt)
    assert {"lt", "lt.memory", "lt.evidence", "lt.entities", "lt.scopes"} <= set(surfaces)
    for label, target in surfaces.items():
        for method_name in _public_methods(type(target)):
            method = getattr(target, method_name)
            parameters = list(inspect.signature(method).parameters.values())
            required = [p for p in parameters if p.default is p.empty]
            missing = [p.name for p in required if p.name not in valid]
            assert not missing, f"{label}.{method_name}: give VALID values for {missing}"
            for parameter in parameters:
                for wrong in _wrong_values(_spelled_out(method, parameter.annotation)):
                    arguments = {p.name: valid[p.name]() for p in required}
                    arguments[parameter.name] = wrong
                    call = f"{label}.{method_name}({parameter.name}={wrong!r})"
                    calls += 1
                    try:
                        _close(method(**arguments))
                    except LanternError as exc:
                        named = exc.argument if isinstance(exc, InvalidInput) else None
                        if named is not None and named != parameter.name:
                            unnamed.append(f"{call}: names {named}")
                    except Exception as exc:  # the defect this test exists to find
                        escaped.append(f"{call}: {type(exc).__name__}: {exc}")
                    else:
                        escaped.append(f"{call}: accepted")
    assert calls > 500
    assert escaped == []
    assert unnamed == []
    assert _snapshot(lt) == before


def test_the_refusal_names_the_argument_in_python_words(store: tuple[Lantern, str, str]) -> None:
    lt, record_id, _chunk = store
    with pytest.raises(InvalidInput) as caught:
        lt.memory.add(kind="fact", content="x", entities=5)  # type: ignore[arg-type]
    assert caught.value.message == "entities must be text, a list of strings or None, not int"
    assert caught.value.argument == "entities"
    with pytest.raises(InvalidInput, match=r"^entities\[1\] must be text, not int$"):
        lt.memory.add(kind="fact", content="x", entities=["person:Ada", 5])  # type: ignore[list-item]
    with pytest.raises(InvalidInput, match=r"^entity must be text, a list of strings or None"):
        lt.evidence.search("x", entity=5)  # type: ignore[arg-type]
    with pytest.raises(InvalidInput, match=r"^record_id must be text, not int$"):
        lt.memory.get(5)  # type: ignore[arg-type]
    with pytest.raises(InvalidInput, match=r"^kind is required by add\(\)$"):
        lt.memory.add(content="x")  # type: ignore[call-arg]
    with pytest.raises(InvalidInput, match=r"^add\(\) takes no argument 'colour'$"):
        lt.memory.add(kind="fact", content="x", colour="red")  # type: ignore[call-arg]
    assert list(lt.memory.list(status="all")) == [lt.memory.get(record_id)]


def test_a_batch_error_says_which_record_and_argument(lt: Lantern) -> None:
    good = {"kind": "fact", "content": "fine"}
    with pytest.raises(InvalidInput) as caught:
        lt.memory.add_many([good, {"kind": "fact", "content": "x", "entities": 5}])
    error = caught.value
    assert error.message == "record 1: entities must be text, a list of strings or None, not int"
    assert (error.argument, error.index, error.line) == ("entities", 1, None)
    with pytest.raises(InvalidInput) as caught:
        lt.memory.add_many([good, {"kind": "fact", "content": "x", "priority": 101}])
    assert caught.value.message == "record 1: priority must be an integer from 0 to 100; got 101"
    assert caught.value.index == 1
    with pytest.raises(InvalidInput, match=r"^record 0: unknown field\(s\) 5, a$"):
        lt.memory.add_many([{"kind": "fact", "content": "x", 5: 1, "a": 2}])  # type: ignore[dict-item]
    assert list(lt.memory.list(status="all")) == []


def test_a_located_error_keeps_the_surface_s_own_words(lt: Lantern) -> None:
    def dashed(term: Term) -> str | None:
        return "--" + term.name.replace("_", "-") if isinstance(term, Param) else None

    with pytest.raises(InvalidInput) as caught:
        lt.memory.add_many([{"kind": "fact", "content": "x", "expires_at": "soon"}])
    assert caught.value.spelled(dashed).startswith("record 0: --expires-at must be unix seconds")
    with pytest.raises(InvalidInput) as caught:
        lt.memory.add_many([{"kind": "fact", "content": "x", "entities": 5}])
    assert caught.value.spelled(dashed).startswith("record 0: --entities must be text")


def test_the_mcp_memory_importer_tells_the_line_from_the_error_s_index(lt: Lantern) -> None:
    graph = (
        b'{"type":"entity","name":"Ada","entityType":"person","observations":["fine"]}\n'
        b'{"type":"entity","name":"Bob","entityType":"person","observations":["x\\u0000y"]}\n'
    )
    with pytest.raises(InvalidInput) as caught:
        lt.import_mcp_memory(io.BytesIO(graph))
    assert caught.value.message.startswith("line 2: content must not contain NUL")
    assert (caught.value.line, caught.value.index, caught.value.argument) == (2, None, None)
    assert list(lt.memory.list(status="all")) == []


def test_checked_classes_are_marked() -> None:
    from lantern.entities.repository import EntityRepository
    from lantern.evidence.repository import EvidenceRepository
    from lantern.memory.repository import MemoryRepository

    for cls in (Lantern, MemoryRepository, EvidenceRepository, EntityRepository, ScopePolicy):
        assert getattr(cls, "__lantern_boundary__", False), cls
    assert checked(Lantern) is Lantern  # applying it twice changes nothing


def test_sqlite_snapshot_helper_sees_a_change(store: tuple[Lantern, str, str]) -> None:
    # The store comparison above can fail: a write shows in the snapshot.
    lt, record_id, _chunk = store
    before = _snapshot(lt)
    lt.memory.archive(record_id)
    assert _snapshot(lt) != before
    if lt.location.path is not None:
        with sqlite3.connect(lt.location.path) as conn:
            assert conn.execute("SELECT status FROM memory_records").fetchone() == ("archived",)
