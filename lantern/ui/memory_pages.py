"""The memory pages: the list with every filter of `memory list`, a search with its ranks, one
record with its history, chain and evidence, and the changes across the store."""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass
from typing import Any

from lantern.errors import NotFound
from lantern.memory.records import HistoryEntry, MemoryRecord, order_keys
from lantern.ui import fields
from lantern.ui.fields import CHANGES_FILTERS, MEMORY_FILTERS, MEMORY_SEARCH, Params
from lantern.ui.text import FieldChange, field_changes, preview, ref_label
from lantern.ui.views import Command, Site, View, href, id_path, needs_query, twin_href

LIST_LIMIT = 50
SEARCH_LIMIT = 20
CHANGES_LIMIT = 50
MAX_SHOWN_REFS = 200
"""References of one record looked up in the store; more are listed without their evidence."""
CITED_TEXT_CHARS = 2_000
_DIFF_MAX_WORDS = 4_000


def memory_list(site: Site, params: Params) -> View:
    filters = fields.read(params, MEMORY_FILTERS)
    paging = _paging(params, LIST_LIMIT)
    explain = _flag(params, "explain")
    page = site.lantern.memory.list(**paging, **filters)
    words = ["memory", "list", *site.fenced(filters), *fields.cli_words(filters, MEMORY_FILTERS)]
    words += _paging_words(paging)
    words += ["--explain"] if explain else []
    pairs = fields.query_pairs(filters, MEMORY_FILTERS) + _kept(paging, LIST_LIMIT, explain)
    rendered = [_record_json(record, explain) for record in page]
    return View(
        "memory_list.html",
        "Memory records",
        {
            "filters": MEMORY_FILTERS,
            "values": filters,
            "limit": paging["limit"],
            "explain": explain,
            "rows": [record_row(record) for record in page],
            "first_href": None if _at_start(paging) else href("/memory", pairs),
            "next_href": _next(page.next_cursor, "/memory", pairs),
        },
        twins={"": lambda: {"records": rendered, "next_cursor": page.next_cursor}},
        commands=[
            Command(
                "this page",
                site.command([*words, "--with-cursor", "--json"]),
                twin_href("/memory", _here(pairs, paging)),
            )
        ],
    )


def memory_search(site: Site, params: Params) -> View:
    filters = fields.read(params, MEMORY_FILTERS)
    choices = fields.read(params, MEMORY_SEARCH)
    query = fields.text(params, "q")
    paging = _paging(params, SEARCH_LIMIT)
    pairs = [("q", query or ""), *fields.query_pairs(choices, MEMORY_SEARCH)]
    pairs += fields.query_pairs(filters, MEMORY_FILTERS) + _kept(paging, SEARCH_LIMIT, False)
    context: dict[str, Any] = {
        "filters": MEMORY_FILTERS,
        "choices": MEMORY_SEARCH,
        "values": {**filters, **choices},
        "query": query or "",
        "limit": paging["limit"],
        "hits": None,
        "origin_keys": [],
        "explain_keys": [],
        "first_href": None,
        "next_href": None,
    }
    view = View("memory_search.html", "Search memory", context)
    if query is None:
        view.twins[""] = needs_query
        return view
    order = choices.get("order", "relevance")
    by_relevance = order == "relevance"
    matches = site.lantern.memory.search(
        query, mode=choices.get("mode"), order=order, **paging, **filters
    )
    rendered = [m.to_json(explain=True, by_relevance=by_relevance) for m in matches]
    hits = []
    for match, data in zip(matches, rendered, strict=True):
        origin = _after_key(data, "score")
        row = record_row(match.record)
        hits.append(
            {"row": row, "score": match.score, "origin": origin, "explain": data["explain"]}
        )
    if hits:
        context["origin_keys"] = list(hits[0]["origin"])
        context["explain_keys"] = list(hits[0]["explain"])
    context["hits"] = hits
    context["first_href"] = None if _at_start(paging) else href("/memory/search", pairs)
    context["next_href"] = _next(matches.next_cursor, "/memory/search", pairs)
    words = ["memory", "search", *site.fenced(filters), *fields.cli_words(choices, MEMORY_SEARCH)]
    words += [*fields.cli_words(filters, MEMORY_FILTERS), *_paging_words(paging, SEARCH_LIMIT)]
    twin: dict[str, Any] = {"records": rendered, "next_cursor": matches.next_cursor}
    if matches.summary is not None:
        twin["search"] = matches.summary.to_json()
    view.twins[""] = lambda: twin
    view.commands.append(
        Command(
            "this page",
            site.command([*words, "--explain", "--with-cursor", "--json", "--", query]),
            twin_href("/memory/search", _here(pairs, paging)),
        )
    )
    return view


def memory_record(site: Site, params: Params, record_id: str) -> View:
    memory = site.lantern.memory
    chain = memory.chain(record_id)
    entries = memory.history(record_id)
    record = chain.record
    entities = [entity.to_json() for entity in memory.entities(record.id)]
    path = id_path("/memory", record.id)
    return View(
        "memory_record.html",
        f"Memory {record.id}",
        {
            "record": record,
            "fields": _fields(record),
            "replaces": list(reversed(chain.replaces)),
            "replaced_by": list(chain.replaced_by),
            "history": [history_item(entry) for entry in entries],
            "cited": _cited(site, record),
            "more_refs": max(0, len(record.source_refs) - MAX_SHOWN_REFS),
            "entities": entities,
        },
        twins={
            "": lambda: {**chain.to_json(), "entities": entities},
            "history": lambda: [entry.to_json() for entry in entries],
        },
        commands=[
            Command(
                "the record and its chain",
                site.command(["memory", "show", record.id, "--chain", "--json"]),
                twin_href(path, []),
            ),
            Command(
                "its history",
                site.command(["memory", "history", record.id, "--json"]),
                twin_href(path, [], "history"),
            ),
        ],
    )


def changes(site: Site, params: Params) -> View:
    filters = fields.read(params, CHANGES_FILTERS)
    limit = fields.integer(params, "limit", CHANGES_LIMIT)
    after = fields.text(params, "after")
    page = site.lantern.memory.changes(limit=limit, after=after, **filters)
    words = [
        "memory",
        "changes",
        *site.fenced(filters),
        *fields.cli_words(filters, CHANGES_FILTERS),
    ]
    pairs = fields.query_pairs(filters, CHANGES_FILTERS)
    if limit != CHANGES_LIMIT:
        words += ["--limit", str(limit)]
        pairs.append(("limit", str(limit)))
    here = [*pairs, *([("after", after)] if after else [])]
    words += ["--after", after] if after else []
    return View(
        "changes.html",
        "Changes",
        {
            "filters": CHANGES_FILTERS,
            "values": filters,
            "limit": limit,
            "history": [history_item(entry) for entry in page],
            "first_href": href("/changes", pairs) if after else None,
            "next_href": _next(page.next_cursor, "/changes", pairs),
        },
        twins={
            "": lambda: {
                "entries": [entry.to_json() for entry in page],
                "next_cursor": page.next_cursor,
            }
        },
        commands=[
            Command(
                "this page",
                site.command([*words, "--with-cursor", "--json"]),
                twin_href("/changes", here),
            )
        ],
    )


# --- the parts of a record page ----------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Cited:
    """One reference of a record, with the evidence it names when that is in the store."""

    label: str
    type: str
    id: str | None
    href: str | None
    found: Any
    """The chunk (`ChunkDetail`) or source (`Source`) named, None when it names nothing."""
    dangling: bool
    """A source or chunk reference naming nothing in the store (`memory check-refs`)."""
    text: str | None = None


def _cited(site: Site, record: MemoryRecord) -> list[Cited]:
    found: list[Cited] = []
    for ref in record.source_refs[:MAX_SHOWN_REFS]:
        ref_type = str(ref.get("type"))
        ref_id = ref.get("id")
        label = ref_label(ref)
        if not isinstance(ref_id, str) or ref_type not in ("chunk", "source"):
            found.append(Cited(label, ref_type, None, None, None, False))
            continue
        try:
            if ref_type == "chunk":
                detail = site.lantern.evidence.get_chunk(ref_id)
                text = detail.chunk.text
                cut = text if len(text) <= CITED_TEXT_CHARS else text[:CITED_TEXT_CHARS] + "…"
                link = id_path("/chunks", detail.chunk.id)
                found.append(Cited(label, ref_type, ref_id, link, detail, False, cut))
            else:
                source = site.lantern.evidence.get_source(ref_id, with_chunks=False)
                link = id_path("/sources", source.id)
                found.append(Cited(label, ref_type, ref_id, link, source, False))
        except NotFound:
            found.append(Cited(label, ref_type, ref_id, None, None, True))
    return found


def _fields(record: MemoryRecord) -> list[tuple[str, Any]]:
    """Every field of the record's JSON but its content and references, shown apart."""
    return [
        (name, value)
        for name, value in record.to_json().items()
        if name not in ("content", "source_refs")
    ]


@dataclass(frozen=True, slots=True)
class Word:
    text: str
    op: str
    """`same`, `del` or `ins`."""


def history_item(entry: HistoryEntry) -> dict[str, Any]:
    changes = entry.to_json()["changes"]  # plain lists and dicts, as the JSON twin has them
    changed = field_changes(changes)
    return {
        "entry": entry,
        "changes": changed,
        "created": bool(changed) and not any(change.has_before for change in changed),
        "content_diff": _content_diff(changed),
        "extra": {k: v for k, v in changes.items() if k not in ("before", "after")},
    }


def _content_diff(changed: list[FieldChange]) -> list[Word] | None:
    """The words that left and came into the content, when both versions are known."""
    for change in changed:
        if change.name != "content":
            continue
        if not (isinstance(change.before, str) and isinstance(change.after, str)):
            return None
        old = re.findall(r"\s+|\S+", change.before)
        new = re.findall(r"\s+|\S+", change.after)
        if len(old) + len(new) > 2 * _DIFF_MAX_WORDS:
            return None
        words: list[Word] = []
        matcher = difflib.SequenceMatcher(None, old, new, autojunk=False)
        for op, a1, a2, b1, b2 in matcher.get_opcodes():
            if op == "equal":
                words.append(Word("".join(old[a1:a2]), "same"))
                continue
            if a2 > a1:
                words.append(Word("".join(old[a1:a2]), "del"))
            if b2 > b1:
                words.append(Word("".join(new[b1:b2]), "ins"))
        return words
    return None


# --- shared ------------------------------------------------------------------------------------


def record_row(record: MemoryRecord) -> dict[str, Any]:
    return {
        "record": record,
        "href": id_path("/memory", record.id),
        "preview": preview(record.content),
        "keys": order_keys(record),
    }


def _record_json(record: MemoryRecord, explain: bool) -> dict[str, Any]:
    rendered = record.to_json()
    if explain:
        rendered["explain"] = order_keys(record)
    return rendered


def _after_key(data: dict[str, Any], key: str) -> dict[str, Any]:
    """The keys of a hit's JSON after `key`: where it came from, whatever a mode adds there."""
    names = list(data)
    return {name: data[name] for name in names[names.index(key) + 1 :]}


def _paging(params: Params, default_limit: int) -> dict[str, Any]:
    return {
        "limit": fields.integer(params, "limit", default_limit),
        "offset": fields.integer(params, "offset", 0),
        "after": fields.text(params, "after"),
    }


def _paging_words(paging: dict[str, Any], default_limit: int = LIST_LIMIT) -> list[str]:
    words: list[str] = []
    if paging["limit"] != default_limit:
        words += ["--limit", str(paging["limit"])]
    if paging["offset"]:
        words += ["--offset", str(paging["offset"])]
    if paging["after"]:
        words += ["--after", paging["after"]]
    return words


def _kept(paging: dict[str, Any], default_limit: int, explain: bool) -> list[tuple[str, str]]:
    """The parameters a next page keeps: its size, and whether it explains."""
    pairs = [] if paging["limit"] == default_limit else [("limit", str(paging["limit"]))]
    return pairs + ([("explain", "1")] if explain else [])


def _here(pairs: list[tuple[str, str]], paging: dict[str, Any]) -> list[tuple[str, str]]:
    here = list(pairs)
    if paging["offset"]:
        here.append(("offset", str(paging["offset"])))
    if paging["after"]:
        here.append(("after", paging["after"]))
    return here


def _at_start(paging: dict[str, Any]) -> bool:
    return not paging["offset"] and not paging["after"]


def _next(cursor: str | None, path: str, pairs: list[tuple[str, str]]) -> str | None:
    return None if cursor is None else href(path, [*pairs, ("after", cursor)])


def _flag(params: Params, name: str) -> bool:
    return any(value in ("1", "on", "true", "yes") for value in params.get(name, ()))
