"""Refused requests and closed connections, counted by reason and logged as one line per
interval: a flood of bad requests cannot fill the log."""

from __future__ import annotations

import logging
import resource
from collections import Counter

import anyio


class Refusals:
    """Refused requests and closed connections, counted by reason and logged as one line per
    interval (`flush`, called by `run` every `interval` seconds) on the logger `logger`."""

    def __init__(self, interval: float, logger: str = "lantern.mcp") -> None:
        self.interval = interval
        self._log = logging.getLogger(logger)
        self._counts: Counter[str] = Counter()
        self.total = 0

    def count(self, reason: str) -> None:
        self._counts[reason] += 1
        self.total += 1

    def flush(self) -> None:
        if not self._counts:
            return
        total = sum(self._counts.values())
        reasons = ", ".join(f"{n:,} {reason}" for reason, n in self._counts.most_common())
        self._log.warning(
            "refused %s in the last %g s: %s",
            f"{total:,} request{'s' if total != 1 else ''}",
            self.interval,
            reasons,
        )
        self._counts.clear()

    async def run(self) -> None:
        try:
            while True:
                await anyio.sleep(self.interval)
                self.flush()
        finally:
            self.flush()


def raise_file_limit(connections: int, logger: str = "lantern.mcp") -> None:
    """Let the process hold a file descriptor per connection allowed, and some for the store,
    when its hard limit allows (the soft limit is often 1,024)."""
    wanted = connections + 256
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft != resource.RLIM_INFINITY and soft < wanted:
        raised = wanted if hard == resource.RLIM_INFINITY else min(wanted, hard)
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (raised, hard))
        except (ValueError, OSError):
            logging.getLogger(logger).warning("cannot raise the open file limit to %d", raised)
