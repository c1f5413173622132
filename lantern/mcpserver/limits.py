"""What one client of `lantern mcp --http` may hold at once, so that none can starve the others.

Every token has its own allowance, counted here between the token check and the SDK's session
manager (`TokenLimits`):

- **open sessions** (`Limits.sessions_per_token`): a request that would open another session
  (one without an `Mcp-Session-Id`) is refused while the token holds that many, counting the
  openings in flight;
- **requests at once** (`Limits.requests_per_token`): a POST (a call, a message) is refused
  while that many of the token's are being served. A GET (a session's stream of server
  messages) is not a request in this sense: each session holds at most one, and sessions are
  counted already; nor is a DELETE, which ends a session and so frees what it held.

A refusal is `429 Too Many Requests` with `Retry-After` (seconds) and a JSON-RPC error body,
for that token only: every other token is served as before. A session ends when its client
deletes it, or when no request of it has been in flight for `Limits.session_idle_minutes` (the
SDK's manager closes it then, and its memory goes with it). The ledger follows the manager:
it forgets a session that the manager answers 404 for, one its client deleted, and one idle a
second longer than the manager lets one be, so a token is never refused for a session that is
gone, and never holds more than its allowance.

Refusals of every kind (a foreign Host, no token, a limit, a slow request closed) are counted
by `Refusals` (`lantern.serving.refusals`, shared with the web view), which logs one line per
interval with the counts, never one line each: a
flood of bad requests cannot fill the log.
"""

from __future__ import annotations

import json
import logging
import math
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from lantern.serving.refusals import Refusals

SESSION_HEADER = b"mcp-session-id"
TOO_MANY = -32000
"""The JSON-RPC error code of a 429 (a server error of JSON-RPC's own range)."""
SESSION_GRACE = 1.0
"""Seconds the ledger waits past the idle timeout before it takes a session for closed."""


@dataclass(frozen=True, slots=True)
class Limits:
    """The limits of `lantern mcp --http`, with their documented defaults (docs/mcp.md)."""

    sessions_per_token: int = 32
    requests_per_token: int = 32
    session_idle_minutes: float = 5.0
    max_sessions: int = 10_000
    """Sessions of every token together (the SDK's own cap)."""
    max_connections: int = 1_024
    request_timeout: float = 5.0
    """Seconds a client has to send a request's headers, or the next part of its body."""
    log_interval: float = 10.0
    """Seconds between two lines of refusals, at most."""

    @property
    def session_idle_seconds(self) -> float:
        return self.session_idle_minutes * 60


DEFAULT_LIMITS = Limits()


REFUSED_STATUSES = {
    401: "without a valid token",
    403: "from a foreign origin",
    404: "for an unknown session",
    413: "with a body too large",
    421: "naming another host",
    429: "over a token's limits",
    503: "past the server's session cap",
}


class CountingRefusals:
    """ASGI middleware, outermost: counts the refusals any layer below answers (by status)."""

    def __init__(self, app: ASGIApp, refusals: Refusals) -> None:
        self._app = app
        self._refusals = refusals

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self._app(scope, receive, send)
            return

        async def counted(message: Message) -> None:
            if message["type"] == "http.response.start":
                reason = REFUSED_STATUSES.get(message["status"])
                if reason is not None:
                    self._refusals.count(reason)
            await send(message)

        await self._app(scope, receive, counted)


class SilencedLogs(logging.Filter):
    """Drops the SDK's and uvicorn's line-per-request warnings about refused requests (counted
    by `Refusals` instead): a flood of them would fill the log."""

    MESSAGES = (
        "Rejecting request for session",  # another token's session id: answered 404
        "Refusing to open a new session",  # the server's cap: answered 503
        "Invalid Host header",
        "Invalid Origin header",
        "Invalid HTTP request received.",  # malformed HTTP: answered 400 by uvicorn
        "Exceeded concurrency limit.",
    )

    def __init__(self, refusals: Refusals) -> None:
        super().__init__()
        self._refusals = refusals

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        if not any(message.startswith(prefix) for prefix in self.MESSAGES):
            return True
        if message.startswith("Invalid HTTP request"):
            self._refusals.count("malformed")
        return False

    def install(self) -> Callable[[], None]:
        """Add this filter to the loggers that say such things; the function that removes it."""
        names = (
            "mcp.server.streamable_http_manager",
            "mcp.server.transport_security",
            "uvicorn.error",
        )
        loggers = [logging.getLogger(name) for name in names]
        for logger in loggers:
            logger.addFilter(self)

        def remove() -> None:
            for logger in loggers:
                logger.removeFilter(self)

        return remove


@dataclass(slots=True)
class _Session:
    token: str
    in_flight: int = 0
    idle_since: float = field(default_factory=time.monotonic)


class SessionLedger:
    """The open sessions of each token, as the session manager has them."""

    def __init__(self, idle_seconds: float, clock: Callable[[], float] = time.monotonic) -> None:
        self._idle = idle_seconds + SESSION_GRACE
        self._clock = clock
        self._sessions: dict[str, _Session] = {}
        self._opening: Counter[str] = Counter()

    def held(self, token: str) -> int:
        """The token's sessions, and its openings in flight."""
        self._prune()
        return sum(s.token == token for s in self._sessions.values()) + self._opening[token]

    def retry_after(self, token: str) -> int:
        """Seconds until the token's first idle session would be closed (at least 1)."""
        now = self._clock()
        waits = [
            self._idle - (now - s.idle_since)
            for s in self._sessions.values()
            if s.token == token and s.in_flight == 0
        ]
        return max(1, math.ceil(min(waits, default=self._idle)))

    def opening(self, token: str) -> None:
        self._opening[token] += 1

    def opened(self, token: str, session_id: str | None) -> None:
        """An opening request ended; `session_id` is the session it opened, if it did."""
        self._opening[token] -= 1
        if self._opening[token] <= 0:
            del self._opening[token]
        if session_id is not None:
            self._sessions[session_id] = _Session(token, 0, self._clock())

    def begin(self, session_id: str, token: str) -> bool:
        """A request of an open session starts; False when the ledger has no such session of
        this token (the manager answers it: 404)."""
        found = self._sessions.get(session_id)
        if found is None or found.token != token:
            return False
        found.in_flight += 1
        return True

    def end(self, session_id: str, *, gone: bool) -> None:
        """A request of an open session ended; `gone` when the session ended with it."""
        found = self._sessions.get(session_id)
        if found is None:
            return
        found.in_flight -= 1
        found.idle_since = self._clock()
        if gone:
            del self._sessions[session_id]

    def forget(self, session_id: str) -> None:
        self._sessions.pop(session_id, None)

    def __len__(self) -> int:
        self._prune()
        return len(self._sessions)

    def _prune(self) -> None:
        now = self._clock()
        stale = [
            sid
            for sid, s in self._sessions.items()
            if s.in_flight == 0 and now - s.idle_since > self._idle
        ]
        for sid in stale:
            del self._sessions[sid]


class TokenLimits:
    """ASGI middleware between the token check and the session manager: each token's sessions
    and requests at once, refused past its limits with 429 and `Retry-After`."""

    def __init__(self, app: ASGIApp, limits: Limits) -> None:
        self._app = app
        self._limits = limits
        self.sessions = SessionLedger(limits.session_idle_seconds)
        self._requests: Counter[str] = Counter()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        user = scope.get("user")
        if scope["type"] != "http" or not isinstance(user, AuthenticatedUser):
            await self._app(scope, receive, send)  # the route requires a token: not reached
            return
        token = user.access_token.subject or user.access_token.client_id
        counted = scope["method"] == "POST"
        if counted and self._requests[token] >= self._limits.requests_per_token:
            await _too_many(send, f"{self._limits.requests_per_token} requests at once", 1)
            return
        session_id = _header(scope, SESSION_HEADER)
        if counted:
            self._requests[token] += 1
        try:
            if session_id is None:
                await self._open(token, scope, receive, send)
            else:
                await self._serve(token, session_id, scope, receive, send)
        finally:
            if counted:
                self._requests[token] -= 1
                if self._requests[token] <= 0:
                    del self._requests[token]

    async def _open(self, token: str, scope: Scope, receive: Receive, send: Send) -> None:
        limit = self._limits.sessions_per_token
        if self.sessions.held(token) >= limit:
            retry = self.sessions.retry_after(token)
            await _too_many(send, f"{limit} open sessions: end one (DELETE) or wait", retry)
            return
        opened: list[str] = []

        async def watched(message: Message) -> None:
            if message["type"] == "http.response.start" and message["status"] < 400:
                found = _header(message, SESSION_HEADER)
                if found is not None:
                    opened.append(found)
            await send(message)

        self.sessions.opening(token)
        try:
            await self._app(scope, receive, watched)
        finally:
            self.sessions.opened(token, opened[0] if opened else None)

    async def _serve(
        self, token: str, session_id: str, scope: Scope, receive: Receive, send: Send
    ) -> None:
        if not self.sessions.begin(session_id, token):
            await self._app(scope, receive, send)
            return
        status: list[int] = []

        async def watched(message: Message) -> None:
            if message["type"] == "http.response.start":
                status.append(message["status"])
            await send(message)

        try:
            await self._app(scope, receive, watched)
        finally:
            answered = status[0] if status else None
            deleted = scope["method"] == "DELETE" and answered is not None and answered < 300
            self.sessions.end(session_id, gone=deleted or answered == 404)


def _header(message: Any, name: bytes) -> str | None:
    for key, value in message.get("headers", ()):
        if key.lower() == name:
            return str(value.decode("latin-1"))
    return None


async def _too_many(send: Send, what: str, retry_after: int) -> None:
    message = f"this token has {what} (retry after {retry_after} s)"
    error = {"jsonrpc": "2.0", "id": None, "error": {"code": TOO_MANY, "message": message}}
    body = json.dumps(error).encode()
    await send(
        {
            "type": "http.response.start",
            "status": 429,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(body)).encode()),
                (b"retry-after", str(retry_after).encode()),
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})
