"""The Starlette application: the routes, the templates, and how a page is answered.

Every page is a function of the open store and the request's query (`memory_pages`,
`evidence_pages`, `overview_pages`) that returns a `View`; this module renders it as HTML, or
with `?format=json` as its JSON twin (`&part=NAME` for the other parts of a page), printed as
the CLI prints it. A `LanternError` becomes an error page (or the CLI's JSON error object) with
a status that says what it was. The handlers are plain functions: Starlette runs them in its
thread pool, and the store's connections are made for that.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from jinja2 import Environment, PackageLoader, StrictUndefined, select_autoescape
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from lantern import __version__
from lantern.errors import InvalidInput, LanternError, NotFound, PolicyRefused
from lantern.memory.records import OUTSIDE_SCOPES
from lantern.ui import evidence_pages, memory_pages, overview_pages, text
from lantern.ui.fields import Params
from lantern.ui.security import Gate
from lantern.ui.views import Site, View

STATIC = Path(__file__).with_name("static")
NAVIGATION = (
    ("/", "Overview"),
    ("/memory", "Memory"),
    ("/memory/search", "Search memory"),
    ("/changes", "Changes"),
    ("/sources", "Evidence"),
    ("/search", "Search evidence"),
    ("/health", "Health"),
)
_STATUS = {NotFound: 404, InvalidInput: 400, PolicyRefused: 403}

Page = Callable[[Site, Params], View]
ItemPage = Callable[[Site, Params, str], View]


def templates() -> Environment:
    """The Jinja2 environment: every value escaped, an unknown name an error."""
    env = Environment(
        loader=PackageLoader("lantern.ui", "templates"),
        autoescape=select_autoescape(default=True, default_for_string=True),
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters.update(
        visible=text.visible,
        when=text.when,
        preview=text.preview,
        json_value=text.json_value,
        ref_label=text.ref_label,
    )
    env.globals.update(
        followable=text.followable,
        navigation=NAVIGATION,
        version=__version__,
        outside_scopes=OUTSIDE_SCOPES,
    )
    return env


def build_app(site: Site, *, token: str, hosts: tuple[str, ...] = ()) -> Gate:
    """The view of `site`'s store, behind the gate of `token`."""
    env = templates()
    policy = site.lantern.scopes.describe() if site.lantern.scopes.restricted else None
    store = site.lantern.location.display_url

    def answer(request: Request, make: Callable[[], View]) -> Response:
        params = _params(request)
        as_json = params.get("format", [""])[-1] == "json"
        part = params.get("part", [""])[-1]
        try:
            view = make()
            if as_json:
                if part not in view.twins:
                    raise NotFound(f"this page has no part {part!r}")
                return _json(view.twins[part]())
        except LanternError as exc:
            status = next((code for kind, code in _STATUS.items() if isinstance(exc, kind)), 500)
            if as_json:
                return _json({"error": {"code": exc.code, "message": exc.message}}, status)
            page = env.get_template("error.html").render(
                title="Error",
                error=exc,
                status=status,
                here=request.url.path,
                commands=[],
                policy=policy,
                store=store,
            )
            return HTMLResponse(page, status)
        html = env.get_template(view.template).render(
            title=view.title,
            commands=view.commands,
            here=request.url.path,
            policy=policy,
            store=store,
            **view.context,
        )
        return HTMLResponse(html)

    def page(make: Page) -> Callable[[Request], Response]:
        def endpoint(request: Request) -> Response:
            return answer(request, lambda: make(site, _params(request)))

        return endpoint

    def item(make: ItemPage, name: str) -> Callable[[Request], Response]:
        def endpoint(request: Request) -> Response:
            identifier = str(request.path_params[name])
            return answer(request, lambda: make(site, _params(request), identifier))

        return endpoint

    routes = [
        Route("/", page(overview_pages.overview)),
        Route("/health", page(overview_pages.health)),
        Route("/memory", page(memory_pages.memory_list)),
        Route("/memory/search", page(memory_pages.memory_search)),
        Route("/memory/{record_id:path}", item(memory_pages.memory_record, "record_id")),
        Route("/changes", page(memory_pages.changes)),
        Route("/sources", page(evidence_pages.sources)),
        Route("/sources/{source_id:path}", item(evidence_pages.source, "source_id")),
        Route("/chunks/{chunk_id:path}", item(evidence_pages.chunk, "chunk_id")),
        Route("/search", page(evidence_pages.search)),
        Mount("/static", StaticFiles(directory=STATIC), name="static"),
    ]
    app = Starlette(routes=routes)
    return Gate(app, token=token, hosts=hosts)


def _params(request: Request) -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for name, value in request.query_params.multi_items():
        found.setdefault(name, []).append(value)
    return found


def _json(value: Any, status: int = 200) -> Response:
    """JSON as the CLI prints it: indented by two, not ASCII-escaped, one final newline."""
    body = json.dumps(value, ensure_ascii=False, indent=2) + "\n"
    return Response(body, status, media_type="application/json")
