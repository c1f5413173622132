"""The evidence pages: sources by kind and URI, a source with its chunks, a chunk inside its
source's text, and the search of chunks with the ranks of each hit."""

from __future__ import annotations

from typing import Any

from lantern.evidence.records import Chunk
from lantern.ui import fields
from lantern.ui.fields import EVIDENCE_SEARCH, SOURCE_FILTERS, Params
from lantern.ui.text import marked_segments, preview
from lantern.ui.views import Command, Site, View, href, id_path, needs_query, twin_href

SOURCE_LIMIT = 100
CHUNK_PAGE = 100
SEARCH_LIMIT = 20
CONTEXT = 2
MAX_LIMIT = 10_000
CITING_SHOWN = 100


def sources(site: Site, params: Params) -> View:
    filters = fields.read(params, SOURCE_FILTERS)
    limit = fields.integer(params, "limit", SOURCE_LIMIT)
    offset = fields.integer(params, "offset", 0)
    # One more than shown tells whether a next page exists; the JSON twin holds the page only.
    asked = limit + 1 if 1 <= limit < MAX_LIMIT else limit
    found = site.lantern.evidence.list_sources(
        kind=filters.get("kind"), uri_prefix=filters.get("uri_prefix"), limit=asked, offset=offset
    )
    shown = found[:limit]
    pairs = fields.query_pairs(filters, SOURCE_FILTERS)
    words = ["source", "list", *fields.cli_words(filters, SOURCE_FILTERS)]
    if limit != SOURCE_LIMIT:
        pairs.append(("limit", str(limit)))
        words += ["--limit", str(limit)]
    if offset:
        words += ["--offset", str(offset)]
    return View(
        "sources.html",
        "Sources",
        {
            "filters": SOURCE_FILTERS,
            "values": filters,
            "limit": limit,
            "sources": [{"source": s, "href": id_path("/sources", s.id)} for s in shown],
            "first_href": href("/sources", pairs) if offset else None,
            "next_href": (
                href("/sources", [*pairs, ("offset", str(offset + limit))])
                if len(found) > limit
                else None
            ),
        },
        twins={"": lambda: [source.to_json() for source in shown]},
        commands=[
            Command(
                "this page",
                site.command([*words, "--json"]),
                twin_href("/sources", [*pairs, *([("offset", str(offset))] if offset else [])]),
            )
        ],
    )


def source(site: Site, params: Params, source_id: str) -> View:
    limit = fields.integer(params, "limit", CHUNK_PAGE)
    after_text = fields.text(params, "after")
    after = None if after_text is None else fields.integer(params, "after", 0)
    found = site.lantern.evidence.get_source(source_id, limit=limit, after=after)
    cited_by = site.lantern.cited_by(f"source:{found.id}", through_chunks=True)
    path = id_path("/sources", found.id)
    kept = [] if limit == CHUNK_PAGE else [("limit", str(limit))]
    words = ["source", "show", found.id, "--limit", str(limit)]
    words += ["--after", str(after)] if after is not None else []
    return View(
        "source.html",
        f"Source {found.id}",
        {
            "source": found,
            "chunks": [_chunk_row(chunk) for chunk in found.chunks or ()],
            "cited_by": [(record_id, id_path("/memory", record_id)) for record_id in cited_by],
            "first_href": href(path, kept) if after is not None else None,
            "next_href": (
                href(path, [*kept, ("after", str(found.next_cursor))])
                if found.next_cursor is not None
                else None
            ),
        },
        twins={"": lambda: found.shown_json(cited_by)},
        commands=[
            Command(
                "this page",
                site.command([*words, "--json"]),
                twin_href(path, [*kept, *([("after", str(after))] if after is not None else [])]),
            )
        ],
    )


def chunk(site: Site, params: Params, chunk_id: str) -> View:
    context = fields.integer(params, "context", CONTEXT)
    detail = site.lantern.evidence.get_chunk(chunk_id, context=context)
    item = detail.chunk
    cited_by = site.lantern.cited_by(f"chunk:{item.id}")
    citing = site.lantern.memory.citing(f"chunk:{item.id}", limit=CITING_SHOWN)
    path = id_path("/chunks", item.id)
    pairs = [] if context == CONTEXT else [("context", str(context))]
    return View(
        "chunk.html",
        f"Chunk {item.id}",
        {
            "detail": detail,
            "chunk": item,
            "source_href": id_path("/sources", detail.source.id),
            "before": [_chunk_row(c) for c in detail.before],
            "after": [_chunk_row(c) for c in detail.after],
            "context": context,
            "wider_href": href(path, [("context", str(context + 5))]),
            "citing": [
                {"record": r, "href": id_path("/memory", r.id), "preview": preview(r.content)}
                for r in citing
            ],
            "more_citing": len(cited_by) > len(citing),
        },
        twins={"": lambda: detail.shown_json(cited_by)},
        commands=[
            Command(
                "this page",
                site.command(["chunk", "show", item.id, "--context", str(context), "--json"]),
                twin_href(path, pairs),
            )
        ],
    )


def search(site: Site, params: Params) -> View:
    choices = fields.read(params, EVIDENCE_SEARCH)
    query = fields.text(params, "q")
    limit = fields.integer(params, "limit", SEARCH_LIMIT)
    context: dict[str, Any] = {
        "filters": EVIDENCE_SEARCH,
        "values": choices,
        "query": query or "",
        "limit": limit,
        "hits": None,
        "origin_keys": [],
    }
    view = View("search.html", "Search evidence", context)
    if query is None:
        view.twins[""] = needs_query
        return view
    hits = site.lantern.evidence.search(
        query,
        kind=choices.get("kind"),
        source=choices.get("source"),
        since=choices.get("since"),
        until=choices.get("until"),
        limit=limit,
        raw=bool(choices.get("raw")),
        mode=choices.get("mode"),
    )
    rendered = [hit.to_json() for hit in hits]
    rows: list[dict[str, Any]] = []
    for hit, data in zip(hits, rendered, strict=True):
        names = list(data)
        origin = {name: data[name] for name in names[names.index("snippet") + 1 :]}
        rows.append(
            {
                "hit": hit,
                "origin": origin,
                "segments": marked_segments(hit.snippet),
                "chunk_href": id_path("/chunks", hit.chunk_id),
                "source_href": id_path("/sources", hit.source_id),
            }
        )
    context["hits"] = rows
    context["origin_keys"] = list(rows[0]["origin"]) if rows else []
    words = ["search", *fields.cli_words(choices, EVIDENCE_SEARCH)]
    words += [] if limit == SEARCH_LIMIT else ["--limit", str(limit)]
    pairs = [("q", query), *fields.query_pairs(choices, EVIDENCE_SEARCH)]
    pairs += [] if limit == SEARCH_LIMIT else [("limit", str(limit))]
    view.twins[""] = lambda: rendered
    view.commands.append(
        Command(
            "this page",
            site.command([*words, "--explain", "--json", "--", query]),
            twin_href("/search", pairs),
        )
    )
    return view


def _chunk_row(item: Chunk) -> dict[str, Any]:
    return {"chunk": item, "href": id_path("/chunks", item.id), "preview": preview(item.text, 300)}
