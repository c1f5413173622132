"""Lantern: a local-first, inspectable memory substrate for AI agents.

`from lantern import Lantern` is the entry point. Names are imported on first use so that the
`lantern` command can show its help without loading SQLAlchemy.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

_EXPORTS = {
    "Lantern": "lantern.api",
    "StoreStatus": "lantern.api",
    "MemoryRecord": "lantern.memory.records",
    "LanternError": "lantern.errors",
}

if TYPE_CHECKING:
    from lantern.api import Lantern, StoreStatus
    from lantern.errors import LanternError
    from lantern.memory.records import MemoryRecord

__all__ = ["Lantern", "LanternError", "MemoryRecord", "StoreStatus", "__version__"]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'lantern' has no attribute {name!r}")
    return getattr(import_module(module), name)
