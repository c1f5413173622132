"""Loading code with the cyclic garbage collector paused.

A short command spends most of its time importing: SQLAlchemy alone makes a few hundred
thousand objects, all of which live until the process ends. The collector runs many times
meanwhile and frees nothing, which costs about a tenth of a `lantern memory list` (and of the
MCP server's start). It is paused while code loads and resumes before any work is done, so a
long command (an ingest, an export, the MCP server) collects as usual.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def loading() -> Iterator[None]:
    """Run the block (imports) without cyclic collection; a paused collector stays paused."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()
