"""Connections of `lantern mcp --http` and `lantern ui` that hold a socket without sending a
request are closed.

Uvicorn keeps a connection open for as long as its client takes to send a request: one that
sends half a header, or nothing, holds a file descriptor forever, and before the token is even
read (the token is a header). `guarded_protocol` makes uvicorn's h11 protocol close them:

- a request's line and headers must have arrived `request_timeout` seconds after the connection
  opened, or after the previous response ended (keep-alive), whatever was sent meanwhile;
- while a request's body arrives, each part must follow the previous one within
  `request_timeout`;
- a request answered before its body was read (a refusal: no token, a foreign Host) has
  `request_timeout` to send the rest, which is read and dropped, with no more time for each
  part: a client cannot keep a connection by dripping a body nobody reads;
- at most `max_connections` connections are open: a connection beyond them makes room by
  closing the oldest one that is waiting for a request, or is closed itself when every
  connection is serving one.

A request that has arrived whole is never timed: a tool call may run, and a session's stream of
server messages may stay open, as long as they need. Each connection closed here is counted as
a refusal (`lantern.serving.refusals.Refusals`), never logged on its own.
"""

from __future__ import annotations

import asyncio
import itertools
import math
from dataclasses import dataclass
from typing import Any, Protocol

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol

from lantern.serving.refusals import Refusals

TIMED_OUT = "closed after a request that did not arrive in time"
CROWDED = "closed past the connection cap"


class ConnectionLimits(Protocol):
    """What the guard reads of a server's limits."""

    @property
    def max_connections(self) -> int: ...

    @property
    def request_timeout(self) -> float:
        """Seconds a client has to send a request's headers, or the next part of its body."""
        ...


@dataclass(frozen=True, slots=True)
class ServerLimits:
    """The connection limits of `lantern ui`, with their documented defaults (docs/ui.md), the
    same as `lantern mcp --http`'s."""

    max_connections: int = 1_024
    request_timeout: float = 5.0
    log_interval: float = 10.0
    """Seconds between two lines of refusals, at most."""


def uvicorn_options(limits: ConnectionLimits, refusals: Refusals) -> dict[str, Any]:
    """The options of `uvicorn.Config` that guard a server's connections: the guarded
    protocol, and keep-alive connections closed once they have waited as long."""
    return {
        "http": guarded_protocol(limits, refusals),
        "timeout_keep_alive": max(1, math.ceil(limits.request_timeout)),
    }


def guarded_protocol(limits: ConnectionLimits, refusals: Refusals) -> type[H11Protocol]:
    """Uvicorn's h11 protocol with the deadlines and the cap of `limits`."""
    opened = itertools.count()  # the order connections were accepted in

    class GuardedProtocol(H11Protocol):
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            self._deadline: asyncio.TimerHandle | None = None
            self._order = next(opened)
            self._served = 0
            self._draining = False

        def connection_made(self, transport: asyncio.BaseTransport) -> None:
            super().connection_made(transport)  # type: ignore[arg-type]
            if len(self.connections) > limits.max_connections and not _make_room(self):
                refusals.count(CROWDED)
                self.transport.close()
                return
            self._arm()

        def connection_lost(self, exc: Exception | None) -> None:
            self._disarm()
            super().connection_lost(exc)

        def data_received(self, data: bytes) -> None:
            super().data_received(data)
            state = self.conn.their_state
            if self._draining:
                if state is h11.SEND_BODY:
                    return  # the rest of a refused body: its one deadline stands
                self._draining = False
                if state is h11.IDLE:
                    self._arm()  # the next request
                    return
            if state is h11.SEND_BODY:
                self._arm()  # the body moves: its next part has as long again
            elif state is not h11.IDLE:
                self._disarm()  # the request is here whole (or the connection is done)

        def on_response_complete(self) -> None:
            self._served += 1
            super().on_response_complete()
            if self.transport.is_closing():
                return
            if self.conn.our_state is h11.DONE and self.conn.their_state is h11.SEND_BODY:
                # Answered before its body was read: the rest is dropped as it comes, and
                # must all have come by one deadline.
                self._draining = True
                self._arm()
            elif self.conn.their_state in (h11.IDLE, h11.SEND_BODY):
                self._arm()  # the next request (or the rest of one sent ahead) is awaited

        def waiting(self) -> bool:
            """Whether this connection is open and waits for a request (serving none)."""
            return (
                not self.transport.is_closing()
                and self.conn.their_state is h11.IDLE
                and (self.cycle is None or self.cycle.response_complete)
            )

        def _arm(self) -> None:
            self._disarm()
            self._deadline = self.loop.call_later(limits.request_timeout, self._expire)

        def _disarm(self) -> None:
            if self._deadline is not None:
                self._deadline.cancel()
                self._deadline = None

        def _expire(self) -> None:
            self._deadline = None
            state = self.conn.their_state
            if self.transport.is_closing() or state not in (h11.IDLE, h11.SEND_BODY):
                return
            if self.flow.read_paused:
                self._arm()  # the server stopped reading (its buffer is full): not the client
            elif state is h11.IDLE and self._served and not self.conn.trailing_data[0]:
                self.transport.close()  # kept alive and unused since: closed as uvicorn would
            else:
                refusals.count(TIMED_OUT)
                self.transport.close()

    def _make_room(newcomer: GuardedProtocol) -> bool:
        """Close the oldest connection waiting for a request; False when there is none."""
        waiting = [
            c
            for c in newcomer.connections
            if isinstance(c, GuardedProtocol) and c is not newcomer and c.waiting()
        ]
        if not waiting:
            return False
        oldest = min(waiting, key=lambda c: c._order)
        refusals.count(CROWDED)
        oldest._disarm()
        oldest.transport.close()
        return True

    return GuardedProtocol
