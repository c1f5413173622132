"""The MCP reference memory server's knowledge graph (`memory.jsonl`), in and out.

The file holds one JSON object a line: `{"type":"entity","name","entityType","observations"}`
and `{"type":"relation","from","to","relationType"}`. It maps onto Lantern as follows
(docs/entities.md, "Importers"), all in one scope (`global` unless told):

* an entity becomes a Lantern entity of kind `entityType` made a kind (lowercase, other
  characters than letters, digits, `_` and `-` made `_`: `software project` is
  `software_project`) and its name, and one `fact` record, `NAME is a TYPE`, linked to it and
  citing `{"type":"mcp-memory","entity":NAME,"entityType":TYPE,"position":N}`, so that an
  entity without observations is kept too, with its name and type exactly as written;
* each observation becomes an `observation` record, `NAME: OBSERVATION`, linked to the entity
  and citing `{"type":"mcp-memory","entity":NAME,"position":N}`;
* each relation becomes a `fact` record, `FROM RELATION TO`, linked to both entities and
  citing `{"type":"mcp-memory","from","relationType","to","position":N}`.

A record's id comes from its scope, kind and content, as for every record, so importing the
same file again changes nothing. The export writes the graph of a store's active records back:
the entities their links name (name and type as the import found them, else the entity's own),
each with the content of the records linked to it as its observations (without the `NAME: `
the import put before them), and the relations their references hold, in the order of the
file they came from, the last line ending with a newline when the file's last line did; so a
file imported and exported again comes back byte for byte.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import IO, Any

from sqlalchemy import select

from lantern import validation
from lantern.entities import links
from lantern.entities import names as entity_names
from lantern.errors import InvalidInput, LanternError
from lantern.memory.filters import scope_clause
from lantern.memory.repository import MemoryRepository
from lantern.memory.rows import row_to_record
from lantern.store.engine import Store
from lantern.store.models import memory_records
from lantern.transfer.foreign import ForeignImport, json_object, read_text, without_vector

REF_TYPE = "mcp-memory"
_NOT_KIND = re.compile(r"[^a-z0-9_-]+")


@dataclass(slots=True)
class _Entity:
    name: str
    type: str
    observations: list[str]
    line: int
    entity: entity_names.EntityName


@dataclass(slots=True)
class _Graph:
    entities: dict[str, _Entity] = field(default_factory=dict)
    relations: list[tuple[str, str, str]] = field(default_factory=list)
    last: tuple[str, int] | None = None
    """The file's last line: `("entity", position)` or `("relation", position)`."""
    final_newline: bool = False
    """Whether the file ends with a newline (the reference server writes none; an editor
    usually adds one)."""


def kind_of(entity_type: str) -> str:
    """The Lantern kind of an `entityType`."""
    made = _NOT_KIND.sub("_", entity_type.strip().lower()).strip("_-")[:64].strip("_-")
    if not made:
        return "entity"
    return made if made[0].isalpha() else "x_" + made[:62]


def _article(word: str) -> str:
    return "an" if word[:1].lower() in "aeiou" else "a"


def parse(text: str) -> _Graph:
    """The graph in the file, every line checked; `InvalidInput` names the first bad line."""
    graph = _Graph()
    for number, line in enumerate(text.split("\n"), start=1):
        if not line.strip():
            continue
        try:
            _read_line(graph, line, number)
        except InvalidInput as exc:
            raise exc.at(f"line {number}: ", line=number) from exc
    graph.final_newline = text.endswith("\n")
    return graph


def _read_line(graph: _Graph, line: str, number: int) -> None:
    item = json_object(line)
    kind = item.get("type")
    if kind == "entity":
        name, entity_type = _text(item, "name"), _text(item, "entityType")
        observations = item.get("observations")
        if not isinstance(observations, list) or not all(
            isinstance(o, str) and o.strip() for o in observations
        ):
            raise InvalidInput("observations must be a list of non-empty strings")
        if name in graph.entities:
            raise InvalidInput(
                f"entity {name!r} appears twice (first on line {graph.entities[name].line})"
            )
        entity = entity_names.make(kind_of(entity_type), name)
        graph.entities[name] = _Entity(name, entity_type, list(observations), number, entity)
        graph.last = ("entity", len(graph.entities) - 1)
    elif kind == "relation":
        graph.relations.append(
            (_text(item, "from"), _text(item, "relationType"), _text(item, "to"))
        )
        graph.last = ("relation", len(graph.relations) - 1)
    else:
        raise InvalidInput(f'type must be "entity" or "relation"; got {kind!r}')


def _text(item: dict[str, Any], key: str) -> str:
    value = item.get(key)
    if not isinstance(value, str) or not value.strip():
        raise InvalidInput(f"{key} must be a non-empty string")
    return value


def records(graph: _Graph, scope: str) -> list[dict[str, Any]]:
    """The memory records (with their entities) that hold the graph.

    The record of the file's last line also says, when the file ends with a newline,
    `"final_newline": true`, so that the export ends as the file did.
    """
    ending = {"final_newline": True} if graph.final_newline else {}
    found: list[dict[str, Any]] = []
    for position, item in enumerate(graph.entities.values()):
        ref = {"type": REF_TYPE, "entity": item.name, "entityType": item.type, "position": position}
        if graph.last == ("entity", position):
            ref |= ending
        found.append(
            {
                "kind": "fact",
                "scope": scope,
                "content": f"{item.name} is {_article(item.type)} {item.type}",
                "source_refs": [ref],
                "entities": [str(item.entity)],
            }
        )
        for index, observation in enumerate(item.observations):
            found.append(
                {
                    "kind": "observation",
                    "scope": scope,
                    "content": f"{item.name}: {observation}",
                    "source_refs": [{"type": REF_TYPE, "entity": item.name, "position": index}],
                    "entities": [str(item.entity)],
                }
            )
    for position, (start, relation, end) in enumerate(graph.relations):
        ends = [str(graph.entities[n].entity) for n in (start, end) if n in graph.entities]
        ref = {"type": REF_TYPE, "from": start, "relationType": relation, "to": end}
        found.append(
            {
                "kind": "fact",
                "scope": scope,
                "content": f"{start} {relation} {end}",
                "source_refs": [
                    {**ref, "position": position}
                    | (ending if graph.last == ("relation", position) else {})
                ],
                "entities": list(dict.fromkeys(ends)),
            }
        )
    return found


def import_graph(
    store: Store,
    memory: MemoryRepository,
    source: IO[bytes],
    *,
    scope: str = "global",
    dry_run: bool = False,
) -> ForeignImport:
    """Store the graph of a `memory.jsonl` file as entities and memory records, all or nothing."""
    checked_scope = validation.scope(scope)
    graph = parse(read_text(source, "memory.jsonl"))
    wanted = records(graph, checked_scope)
    try:
        results = memory.add_many(wanted, allow_dangling=True, dry_run=dry_run)
    except LanternError as exc:
        raise _located(exc, wanted, graph) from exc
    created = [record.id for record, made in results if made]
    added = len(created)
    return ForeignImport(
        format=REF_TYPE,
        dry_run=dry_run,
        read={
            "entities": len(graph.entities),
            "observations": sum(len(e.observations) for e in graph.entities.values()),
            "relations": len(graph.relations),
        },
        added=added,
        present=len(results) - added,
        without_vector=without_vector(store, created, dry_run=dry_run),
    )


def _located(exc: LanternError, wanted: list[dict[str, Any]], graph: _Graph) -> LanternError:
    """An error of `add_many` about one of the records (its `index`), told by the line of the
    file that record came from (or the relation, for a relation's record)."""
    if not isinstance(exc, InvalidInput) or exc.index is None:
        return exc
    ref = wanted[exc.index]["source_refs"][0]
    name = ref.get("entity")
    if name in graph.entities:
        line = graph.entities[name].line
        return exc.moved(f"line {line}: ", line=line)
    return exc.moved(f"relation {ref.get('position', 0) + 1}: ")


# --- export -----------------------------------------------------------------------------------


def export_graph(store: Store, out: IO[bytes], *, scope: str | Iterable[str] | None = None) -> int:
    """Write the graph of the active records (of some scopes) as `memory.jsonl`; the number of
    lines written."""
    patterns = [pair for value in _as_list(scope) for pair in validation.scope_pattern(value)]
    statement = select(memory_records).where(memory_records.c.status == "active")
    with store.read() as conn:
        if patterns:
            statement = statement.where(scope_clause(conn.dialect.name, patterns))
        stored = [row_to_record(row) for row in conn.execute(statement)]
        linked = links.of_records(conn, [record.id for record in stored])
    graph_entities: dict[str, dict[str, Any]] = {}
    relations: list[tuple[tuple[Any, ...], JSONLine, bool]] = []
    observations: list[tuple[str, tuple[Any, ...], str]] = []
    for record in stored:
        ref = next((r for r in record.source_refs if r.get("type") == REF_TYPE), None)
        refs = linked.get(record.id, [])
        for entity in refs:
            graph_entities.setdefault(
                entity.id,
                {
                    "name": entity.name,
                    "entityType": entity.kind,
                    "order": (1, entity.kind, entity.name),
                    "final_newline": False,
                },
            )
        if (
            ref is not None
            and isinstance(ref.get("entityType"), str)
            and isinstance(ref.get("entity"), str)
        ):
            for entity in refs[:1]:
                graph_entities[entity.id] = {
                    "name": ref["entity"],
                    "entityType": ref["entityType"],
                    "order": (0, record.created_at, _position(ref), record.id),
                    "final_newline": ref.get("final_newline") is True,
                }
            continue
        if ref is not None and all(
            isinstance(ref.get(k), str) for k in ("from", "relationType", "to")
        ):
            line = {
                "type": "relation",
                "from": ref["from"],
                "to": ref["to"],
                "relationType": ref["relationType"],
            }
            order = (record.created_at, _position(ref), record.id)
            relations.append((order, line, ref.get("final_newline") is True))
            continue
        for entity in refs:
            at = _position(ref) if ref is not None and ref.get("entity") is not None else 1 << 62
            observations.append((entity.id, (record.created_at, at, record.id), record.content))
    by_entity: dict[str, list[tuple[tuple[Any, ...], str]]] = {}
    for entity_id, order, content in observations:
        by_entity.setdefault(entity_id, []).append((order, content))
    lines: list[JSONLine] = []
    final_newline = False
    for entity_id, item in sorted(graph_entities.items(), key=lambda pair: pair[1]["order"]):
        name = item["name"]
        said = [content for _order, content in sorted(by_entity.get(entity_id, []))]
        lines.append(
            {
                "type": "entity",
                "name": name,
                "entityType": item["entityType"],
                "observations": [
                    text[len(name) + 2 :] if text.startswith(f"{name}: ") else text for text in said
                ],
            }
        )
        final_newline = item["final_newline"]
    for _order, line, ends in sorted(relations, key=lambda found: found[0]):
        lines.append(line)
        final_newline = ends
    rendered = "\n".join(
        json.dumps(line, ensure_ascii=False, separators=(",", ":")) for line in lines
    )
    # Lines are joined as the reference server joins them; the last one ends with a newline
    # when the file it came from did.
    out.write((rendered + ("\n" if final_newline else "")).encode("utf-8"))
    return len(lines)


JSONLine = dict[str, Any]


def _position(ref: Any) -> int:
    value = ref.get("position") if ref is not None else None
    return value if isinstance(value, int) and not isinstance(value, bool) else 1 << 62


def _as_list(value: str | Iterable[str] | None) -> list[str]:
    if value is None:
        return []
    return [value] if isinstance(value, str) else list(value)
