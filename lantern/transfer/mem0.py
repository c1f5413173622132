"""Memories exported from mem0: the JSON its `get_all()` returns.

That is `{"results": [...]}` (mem0 1.x; a `relations` list beside it when its graph store is
on) or, from older versions and the platform's v1 API, the list itself. Each memory has an
`id`, the text in `memory`, a `hash`, `metadata` (an object or null), `created_at` and
`updated_at` (ISO-8601 text or null), and the ids it belongs to, `user_id`, `agent_id` and
`run_id`, with `actor_id` and `role` for memories taken from a conversation.

Mapping (docs/entities.md, "Importers"):

* scope: `user:USER_ID` when the memory has a user id, else `agent:AGENT_ID`, else
  `run:RUN_ID`, else the scope given (`global` by default);
* kind: `task_state` for mem0's procedural memories (`metadata.memory_type`
  `procedural_memory`); else by the memory's `categories` (or `metadata.categories`), mem0's
  own category names included (`CATEGORY_KINDS`): `preference` for `user_preferences` (and
  `preference`, `preferences`), `observation` for `milestones`; `fact` otherwise (mem0's other
  categories, `food`, `travel`, `health` and the like, say what a memory is about, not what
  kind of statement it is);
* content: the `memory` text;
* everything else mem0 knew (its id, hash, metadata, times and ids) is kept in one reference,
  `{"type": "mem0", "id": ..., ...}`, so nothing is lost and `memory list --cites mem0:ID`
  finds a memory by its mem0 id.

Graph relations are not memories: they are counted as ignored. Importing the same file again
changes nothing (a record is identified by its scope, kind and content).
"""

from __future__ import annotations

import json
import re
from typing import IO, Any

from lantern import validation
from lantern.errors import InvalidInput
from lantern.memory.repository import MemoryRepository
from lantern.store.engine import Store
from lantern.transfer.foreign import ForeignImport, read_text, without_vector

REF_TYPE = "mem0"
_LEFT_OUT = frozenset({"memory", "score"})
"""Fields not kept in the reference: the text is the content, a score belongs to a search."""

CATEGORY_KINDS: dict[str, str] = {
    "user_preferences": "preference",
    "preference": "preference",
    "preferences": "preference",
    "milestones": "observation",
}
"""The categories that say what kind of statement a memory is (compared in lowercase).

mem0 tags memories with categories from a project's list; its default list has fifteen:
`personal_details`, `family`, `professional_details`, `sports`, `travel`, `food`, `music`,
`health`, `technology`, `hobbies`, `fashion`, `entertainment`, `milestones`,
`user_preferences` and `misc`. Two of them name a kind: `user_preferences` (what the user
likes) and `milestones` (an event that happened). The others name a topic, and a memory of
any topic is a `fact` unless another of its categories says more. The categories themselves
stay in the memory's reference.
"""
_KIND_ORDER = ("preference", "observation")
"""When categories name several kinds, the first of these wins."""


def memories(text: str) -> tuple[list[tuple[int, dict[str, Any]]], int]:
    """The memories of the file, each with the line it starts on, and the number of graph
    relations beside them."""
    try:
        document = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InvalidInput(f"line {exc.lineno}: not valid JSON ({exc.msg})") from exc
    relations = 0
    if isinstance(document, dict):
        items = document.get("results")
        if not isinstance(items, list):
            raise InvalidInput('not a mem0 export: expected {"results": [...]} or a list')
        found = document.get("relations")
        relations = len(found) if isinstance(found, list) else 0
        start = text.find("[", re.search(r'"results"\s*:', text).end())  # type: ignore[union-attr]
    elif isinstance(document, list):
        items = document
        start = text.find("[")
    else:
        raise InvalidInput('not a mem0 export: expected {"results": [...]} or a list')
    return list(zip(_lines(text, start, len(items)), items, strict=True)), relations


def _lines(text: str, start: int, count: int) -> list[int]:
    """The line on which each of the `count` elements of the array at `start` begins."""
    decoder = json.JSONDecoder()
    lines: list[int] = []
    at = start + 1
    for _ in range(count):
        while text[at] in " \t\r\n,":
            at += 1
        lines.append(text.count("\n", 0, at) + 1)
        _value, at = decoder.raw_decode(text, at)
    return lines


def record(item: object, default_scope: str) -> dict[str, Any]:
    """The memory record `add_many` takes for one mem0 memory."""
    if not isinstance(item, dict):
        raise InvalidInput("a memory must be a JSON object")
    memory_id, content = item.get("id"), item.get("memory")
    if not isinstance(memory_id, str) or not memory_id.strip():
        raise InvalidInput("a memory needs its mem0 id (a string)")
    if not isinstance(content, str) or not content.strip():
        raise InvalidInput(f"memory {memory_id}: memory must be non-empty text")
    metadata = item.get("metadata")
    if metadata is not None and not isinstance(metadata, dict):
        raise InvalidInput(f"memory {memory_id}: metadata must be an object or null")
    for key in ("user_id", "agent_id", "run_id", "actor_id", "role", "created_at", "updated_at"):
        if item.get(key) is not None and not isinstance(item[key], str):
            raise InvalidInput(f"memory {memory_id}: {key} must be a string or null")
    scope = default_scope
    for key, prefix in (("user_id", "user"), ("agent_id", "agent"), ("run_id", "run")):
        if item.get(key):
            scope = f"{prefix}:{item[key]}"
            break
    ref = {
        "type": REF_TYPE,
        **{k: v for k, v in item.items() if k not in _LEFT_OUT and k != "type"},
    }
    if "type" in item:
        ref["mem0_type"] = item["type"]
    try:
        return {
            "kind": _kind(item, metadata or {}),
            "content": content,
            "scope": validation.scope(scope),
            "source_refs": [validation.source_ref(ref)],
        }
    except InvalidInput as exc:
        raise exc.at(f"memory {memory_id}: ") from exc


def _kind(item: dict[str, Any], metadata: dict[str, Any]) -> str:
    if metadata.get("memory_type") == "procedural_memory":
        return "task_state"
    categories = item.get("categories") or metadata.get("categories") or []
    if isinstance(categories, str):
        categories = [categories]
    if not isinstance(categories, list):
        return "fact"
    named = {CATEGORY_KINDS.get(c.strip().lower()) for c in categories if isinstance(c, str)}
    return next((kind for kind in _KIND_ORDER if kind in named), "fact")


def import_memories(
    store: Store,
    memory: MemoryRepository,
    source: IO[bytes],
    *,
    scope: str = "global",
    dry_run: bool = False,
) -> ForeignImport:
    """Store the memories of a mem0 export as memory records, all or nothing."""
    default_scope = validation.scope(scope)
    found, relations = memories(read_text(source, "mem0"))
    wanted: list[dict[str, Any]] = []
    for line, item in found:
        try:
            wanted.append(record(item, default_scope))
        except InvalidInput as exc:
            raise exc.at(f"line {line}: ", line=line) from exc
    try:
        results = memory.add_many(wanted, allow_dangling=True, dry_run=dry_run)
    except InvalidInput as exc:
        if exc.index is None:
            raise
        line = found[exc.index][0]
        raise exc.moved(f"line {line}: ", line=line) from exc
    created = [record.id for record, made in results if made]
    added = len(created)
    return ForeignImport(
        format=REF_TYPE,
        dry_run=dry_run,
        read={"memories": len(found)},
        added=added,
        present=len(results) - added,
        without_vector=without_vector(store, created, dry_run=dry_run),
        ignored={"relations": relations} if relations else {},
    )
