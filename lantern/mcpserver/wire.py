"""What the SDK's stdio transport needs around it so that every request gets an answer.

JSON may carry a lone surrogate as an escape (`"\\ud800"`). The SDK parses each line with
pydantic's JSON parser, which refuses such a line, and the request then gets no answer at all:
the client waits. Python's own parser reads it, so `RepairingReader` reads a refused line again
that way, and the request reaches the tools like any other, where Lantern refuses the text as
it refuses it from the CLI (a query of it finds nothing).

What goes back must then be encodable: a message that quotes such text has it escaped
(`clean_text`), because a string the SDK cannot encode would end the server's writer, and with
it the server.
"""

from __future__ import annotations

import json
from types import TracebackType
from typing import TYPE_CHECKING, Any

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
        message = types.jsonrpc_message_adapter.validate_python(json.loads(line), by_name=False)
    except ValueError:  # not JSON after all, or not a JSON-RPC message (ValidationError)
        return item
    return SessionMessage(message)


def clean_text(text: str) -> str:
    """Text that encodes as UTF-8: a lone surrogate becomes its escape (`\\ud800`)."""
    return text.encode("utf-8", "backslashreplace").decode("utf-8")
