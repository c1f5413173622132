"""What the SDK's transports need around them so that every request gets an answer, the same
over stdio and over HTTP.

JSON may carry a lone surrogate as an escape (`"\\ud800"`). The SDK parses each message with
pydantic's JSON parser, which refuses such a message: over stdio the request then got no answer
at all (the client waited), over HTTP a parse error. Python's own parser reads it, so a message
pydantic's parser refused is read again that way, and the request reaches the tools like any
other, where Lantern refuses the text as it refuses it from the CLI (a query of it finds
nothing): over stdio `RepairingReader` does it for each line, over HTTP `use_lenient_json` for
each request body. What neither parser reads (not JSON, nested too deep) stays the parse error
it was.

What goes back must then be encodable: a message that quotes such text has it escaped
(`clean_text`), because a string the SDK cannot encode would end the server's writer, and with
it the server.
"""

from __future__ import annotations

import json
from types import TracebackType
from typing import TYPE_CHECKING, Any

import pydantic_core
from mcp import types
from mcp.shared.message import SessionMessage
from pydantic import ValidationError

if TYPE_CHECKING:
    from mcp.shared._stream_protocols import ReadStream

Item = SessionMessage | Exception


class RepairingReader:
    """The transport's read stream, with the lines its JSON parser refused parsed again."""

    def __init__(self, inner: ReadStream[Item]) -> None:
        self._inner = inner

    @property
    def last_context(self) -> Any:
        # The SDK restores the sender's context from this, when the stream keeps one.
        return getattr(self._inner, "last_context", None)

    async def receive(self) -> Item:
        return repaired(await self._inner.receive())

    async def aclose(self) -> None:
        await self._inner.aclose()

    def __aiter__(self) -> RepairingReader:
        return self

    async def __anext__(self) -> Item:
        return repaired(await self._inner.__anext__())

    async def __aenter__(self) -> RepairingReader:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> bool | None:
        await self.aclose()
        return None


def repaired(item: Item) -> Item:
    """A message from a line only Python's JSON parser reads; anything else as it came."""
    if not isinstance(item, ValidationError):
        return item
    errors = item.errors()
    line = errors[0].get("input") if errors else None
    if not errors or errors[0]["type"] != "json_invalid" or not isinstance(line, str):
        return item
    try:
        parsed = json.loads(line)
    except (ValueError, RecursionError):  # not JSON after all, or nested too deep
        return item
    try:
        message = types.jsonrpc_message_adapter.validate_python(parsed, by_name=False)
    except ValueError:  # not a JSON-RPC message (ValidationError)
        return item
    return SessionMessage(message)


class _LenientJson:
    """`pydantic_core` as the SDK's HTTP transport uses it, with `from_json` reading what only
    Python's parser reads (`lenient_json`)."""

    def __getattr__(self, name: str) -> Any:
        return getattr(pydantic_core, name)

    @staticmethod
    def from_json(data: Any, *args: Any, **kwargs: Any) -> Any:
        return lenient_json(data, *args, **kwargs)


def lenient_json(data: Any, *args: Any, **kwargs: Any) -> Any:
    """`pydantic_core.from_json`, and where it refuses, Python's `json.loads` (which reads a
    lone surrogate escape); pydantic's error when neither reads it."""
    try:
        return pydantic_core.from_json(data, *args, **kwargs)
    except ValueError as refused:
        try:
            return json.loads(data)
        except (ValueError, RecursionError):
            raise refused from None


def use_lenient_json() -> None:
    """Make the SDK's Streamable HTTP transport parse request bodies with `lenient_json`.

    The transport calls `pydantic_core.from_json(body)` on its module's `pydantic_core`; that
    one name is replaced, in that module only (a test pins that the transport reads it so).
    """
    from mcp.server import streamable_http

    if not isinstance(getattr(streamable_http, "pydantic_core", None), _LenientJson):
        setattr(streamable_http, "pydantic_core", _LenientJson())  # noqa: B010


def clean_text(text: str) -> str:
    """Text that encodes as UTF-8: a lone surrogate becomes its escape (`\\ud800`)."""
    return text.encode("utf-8", "backslashreplace").decode("utf-8")
