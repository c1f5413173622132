"""`lantern mcp --print-config`: the entry an MCP client's configuration needs to start Lantern.

Clients start servers from their own working directory with a bare environment, so everything
is absolute: the command is the path of the `lantern` executable that is running (or this
interpreter with `-m lantern` when there is none, as under `python -m lantern`), and the store
is resolved now to an absolute path or a full URL, passed as `LANTERN_DB`.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from lantern.store.location import ENV_VAR, resolve

SERVER_NAME = "lantern"


def client_config(db: str | None, *, scopes: Sequence[str], read_only: bool) -> dict[str, Any]:
    """`{"mcpServers": {"lantern": {"command", "args", "env"}}}`, the shape Claude Desktop and
    most other clients read."""
    location = resolve(db)
    command, prefix = launcher()
    args = [*prefix, "mcp"]
    for pattern in scopes:
        args += ["--scope", pattern]
    if read_only:
        args.append("--read-only")
    store = str(location.path) if location.path is not None else location.url
    entry = {"command": command, "args": args, "env": {ENV_VAR: store}}
    return {"mcpServers": {SERVER_NAME: entry}}


def launcher() -> tuple[str, list[str]]:
    """How to run this Lantern again: its executable, or this interpreter with `-m lantern`."""
    script = Path(sys.argv[0]) if sys.argv and sys.argv[0] else None
    if script is not None and script.stem == "lantern" and script.is_file():
        return str(script.absolute()), []
    return sys.executable, ["-m", "lantern"]
