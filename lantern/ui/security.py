"""The gate of the web view: every request shows the token, every response forbids scripts.

The view serves whatever a store holds to whoever can reach its port, so (as Jupyter does) it
starts with a random token, printed in the URL it gives at start, and answers 403 to any
request without it. The token comes in one of three ways:

* `?token=...` in the URL: the first visit. The answer is a redirect to the same page without
  it, setting an HttpOnly, SameSite=Strict cookie that carries it from then on (named after the
  token, so two views on one host do not overwrite each other's);
* that cookie;
* `Authorization: Bearer ...`, for scripts that fetch the JSON twins.

Besides the token: only GET and HEAD are answered (nothing here writes), only requests whose
`Host` is exactly a loopback name or the host the view was started on, with or without a port
(a page elsewhere that points its own name at 127.0.0.1 gets nothing, and so does
`localhost:8765@evil.example`), and whose `Origin`, when there is one, names such a host too;
the redirect that takes the token out of the URL never leaves this server (`same_origin`);
and every response, refusals included, carries a
Content-Security-Policy that allows no script at all, no frame, no plugin, no form sent
elsewhere, and styles and images from the view itself only. Stored text is escaped by the
templates; this policy is the second wall, should an escape ever be missed.
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Iterable
from http.cookies import CookieError, SimpleCookie
from urllib.parse import parse_qsl, quote, urlencode

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from lantern.validation import http_host, http_origin

CONTENT_SECURITY_POLICY = (
    "default-src 'none'; style-src 'self'; img-src 'self'; form-action 'self'; "
    "base-uri 'none'; frame-ancestors 'none'"
)
SECURITY_HEADERS: tuple[tuple[bytes, bytes], ...] = (
    (b"content-security-policy", CONTENT_SECURITY_POLICY.encode()),
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"no-referrer"),
    (b"x-frame-options", b"DENY"),
    (b"cross-origin-opener-policy", b"same-origin"),
    (b"cross-origin-resource-policy", b"same-origin"),
    (b"cache-control", b"no-store"),
)
LOOPBACK_HOSTS = frozenset({"127.0.0.1", "localhost", "::1"})
"""Host names as `validation.http_host` reads them (an IPv6 address without brackets)."""
FORBIDDEN_TEXT = (
    "403 Forbidden: this Lantern view needs the token it printed when it started; "
    "open the URL `lantern ui` printed.\n"
)


def cookie_name(token: str) -> str:
    """The cookie that carries this token: named after its hash, never after the token."""
    return "lantern-ui-" + hashlib.sha256(token.encode()).hexdigest()[:12]


class Gate:
    """ASGI middleware: refuses what is not allowed, and adds the security headers."""

    def __init__(self, app: ASGIApp, *, token: str, hosts: Iterable[str] = ()) -> None:
        self._app = app
        self._token = token.encode()
        self._cookie = cookie_name(token)
        self._hosts = LOOPBACK_HOSTS | {host.strip("[]").lower() for host in hosts}

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await self._app(scope, receive, send)
            return
        if scope["type"] != "http":
            await _answer(send, 403, FORBIDDEN_TEXT)
            return
        headers = _headers(scope)
        if http_host(headers.get("host")) not in self._hosts:
            await _answer(send, 403, "403 Forbidden: unknown host name\n")
            return
        if "origin" in headers and http_origin(headers["origin"]) not in self._hosts:
            await _answer(send, 403, "403 Forbidden: a page of another site sent this request\n")
            return
        if scope["method"] not in ("GET", "HEAD"):
            await _answer(send, 405, "405 Method Not Allowed: this view only reads\n")
            return
        query = parse_qsl(scope.get("query_string", b"").decode("latin-1"), True)
        given = [value for name, value in query if name == "token"]
        if given:
            if not self._valid(given[-1]):
                await _answer(send, 403, FORBIDDEN_TEXT)
                return
            kept = urlencode([(name, value) for name, value in query if name != "token"])
            location = same_origin(scope.get("root_path", "") + scope["path"])
            location += f"?{kept}" if kept else ""
            cookie = f"{self._cookie}={given[-1]}; HttpOnly; SameSite=Strict; Path=/"
            moved = [(b"location", location.encode("latin-1"))]
            await _answer(send, 303, "", extra=moved, cookie=cookie)
            return
        if not (self._valid(_bearer(headers)) or self._valid(_cookie(headers, self._cookie))):
            await _answer(send, 403, FORBIDDEN_TEXT)
            return

        async def guarded(message: Message) -> None:
            if message["type"] == "http.response.start":
                message["headers"] = [*_without_security(message["headers"]), *SECURITY_HEADERS]
            await send(message)

        await self._app(scope, receive, guarded)

    def _valid(self, candidate: str | None) -> bool:
        if not candidate:
            return False
        return hmac.compare_digest(candidate.encode("utf-8", "replace"), self._token)


def _headers(scope: Scope) -> dict[str, str]:
    return {
        name.decode("latin-1").lower(): value.decode("latin-1") for name, value in scope["headers"]
    }


def same_origin(path: str) -> str:
    """`path` as a redirect that stays on this server: percent-encoded (a backslash becomes
    `%5C`, which no browser reads as a separator) and starting with exactly one slash, so that
    `//evil.example/x` (decoded from `/%2F%2Fevil.example/x` too) is the path `/evil.example/x`
    here, never the network path `//evil.example/x`, another site."""
    return "/" + quote(path, safe="/").lstrip("/")


def _bearer(headers: dict[str, str]) -> str | None:
    scheme, _, value = headers.get("authorization", "").partition(" ")
    return value.strip() if scheme.lower() == "bearer" else None


def _cookie(headers: dict[str, str], name: str) -> str | None:
    jar: SimpleCookie = SimpleCookie()
    try:
        jar.load(headers.get("cookie", ""))
    except CookieError:  # a malformed Cookie header carries no token
        return None
    morsel = jar.get(name)
    return None if morsel is None else morsel.value


def _without_security(headers: Iterable[tuple[bytes, bytes]]) -> list[tuple[bytes, bytes]]:
    names = {name for name, _ in SECURITY_HEADERS}
    return [(name, value) for name, value in headers if name.lower() not in names]


async def _answer(
    send: Send,
    status: int,
    body: str,
    *,
    extra: Iterable[tuple[bytes, bytes]] = (),
    cookie: str | None = None,
) -> None:
    data = body.encode()
    headers = [
        (b"content-type", b"text/plain; charset=utf-8"),
        (b"content-length", str(len(data)).encode()),
        *extra,
        *SECURITY_HEADERS,
    ]
    if status == 405:
        headers.append((b"allow", b"GET, HEAD"))
    if cookie is not None:
        headers.append((b"set-cookie", cookie.encode("latin-1")))
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": data})
