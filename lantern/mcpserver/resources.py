"""MCP resources: a memory record, its history, a source and a chunk, by URI.

A resource is read through the tool that shows the same thing (`lantern://memory/{id}` is
`lantern_memory_show` with that id), so it holds the same JSON, passes the same checks and the
same scope confinement: a record outside a client's scopes is a resource that does not exist.
`resources/list` offers the records a client would look at first, in pages: the active records
of its scopes in the list order (higher priority and urgency first, then the most recently
updated), 50 at a time.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from lantern.api import Lantern
    from lantern.memory.records import MemoryRecord

SCHEME = "lantern"
LIST_PAGE = 50
MIME_TYPE = "application/json"


@dataclass(frozen=True, slots=True)
class Template:
    """A family of resources: its URI template, and the tool that reads one."""

    uri_template: str
    name: str
    title: str
    description: str
    tool: str
    pattern: re.Pattern[str]


def _template(path: str, name: str, title: str, description: str, tool: str) -> Template:
    uri_template = f"{SCHEME}://{path}"
    pattern = re.compile(re.escape(uri_template).replace(re.escape("{id}"), "(?P<id>[^/?#]+)"))
    return Template(uri_template, name, title, description, tool, pattern)


TEMPLATES = (
    _template(
        "memory/{id}",
        "memory-record",
        "Memory record",
        "A memory record, as lantern_memory_show returns it.",
        "lantern_memory_show",
    ),
    _template(
        "memory/{id}/history",
        "memory-history",
        "Memory record history",
        "Every recorded change to a memory record, as lantern_memory_history returns it.",
        "lantern_memory_history",
    ),
    _template(
        "source/{id}",
        "evidence-source",
        "Evidence source",
        "An evidence source with the first page of its chunks, as lantern_source_show returns it.",
        "lantern_source_show",
    ),
    _template(
        "chunk/{id}",
        "evidence-chunk",
        "Evidence chunk",
        "An evidence chunk with its source, as lantern_chunk_show returns it.",
        "lantern_chunk_show",
    ),
)


def parse(uri: str) -> tuple[Template, str] | None:
    """The template a URI belongs to and the id in it, or None for a URI that is no resource."""
    for template in TEMPLATES:
        found = template.pattern.fullmatch(uri)
        if found is not None:
            return template, found["id"]
    return None


def record_uri(record_id: str) -> str:
    return f"{SCHEME}://memory/{record_id}"


def recent(lt: Lantern, cursor: str | None) -> tuple[list[dict[str, Any]], str | None]:
    """A page of the active records the client may see, as resource entries, and the cursor of
    the next page (the listing's own)."""
    page = lt.memory.list(status="active", limit=LIST_PAGE, after=cursor)
    return [_entry(record) for record in page], page.next_cursor


def _entry(record: MemoryRecord) -> dict[str, Any]:
    headline = " ".join(record.content.split())
    if len(headline) > 80:
        headline = headline[:79] + "…"
    return {
        "uri": record_uri(record.id),
        "name": record.id,
        "title": headline,
        "description": f"{record.kind} in {record.scope}, priority {record.priority}, "
        f"urgency {record.urgency}",
        "mime_type": MIME_TYPE,
    }
