"""Sizes of the two tiers, and small pieces the reliability tests share."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import pytest

from lantern.api import Lantern
from lantern.maintenance.health import HealthReport
from tests.helpers import REPO_ROOT


@dataclass(frozen=True, slots=True)
class Tier:
    """How hard one run attacks. The quick tier keeps CI within minutes on 2 cores."""

    name: str
    writers: int
    """Concurrent writer processes on one store."""
    writes: int
    """Writes each of them makes."""
    kills: int
    """Writers killed with SIGKILL at random moments."""
    upgrade_statement_stride: int
    """Upgrades are killed at every n-th statement boundary (the two generations starting at
    different ones, so that the quick tier's stride of 2 kills each parity once)."""
    upgrade_random_kills: int
    """Upgrades killed at random moments, besides the kills at statement boundaries."""
    examples: int
    """Hypothesis examples per generated-input property."""
    model_runs: int
    model_steps: int
    """Runs and steps of the stateful model of the memory lifecycle."""
    sequences: int
    """Random call sequences against a scope-confined store."""


QUICK = Tier(
    name="quick",
    writers=6,
    writes=500,
    kills=50,
    upgrade_statement_stride=3,
    upgrade_random_kills=5,
    examples=2_000,
    model_runs=200,
    model_steps=40,
    sequences=1_000,
)
LONG = Tier(
    name="long",
    writers=8,
    writes=5_000,
    kills=1_000,
    upgrade_statement_stride=1,
    upgrade_random_kills=200,
    examples=20_000,
    model_runs=5_000,
    model_steps=100,
    sequences=20_000,
)

# PostgreSQL answers each call over a socket (4-50 ms a call against SQLite's 0.5-7 ms here),
# so its quick tier runs smaller figures to fit the CI budget; its long tier is the full size.
POSTGRES_QUICK = replace(QUICK, writes=100, kills=15, examples=200, model_runs=50, sequences=150)


def is_postgres(store_url: str) -> bool:
    return "://" in store_url


def sized(tier: Tier, store_url: str) -> Tier:
    """The tier's figures for this engine (PostgreSQL's quick tier is smaller, see above)."""
    if tier.name == "quick" and is_postgres(store_url):
        return POSTGRES_QUICK
    return tier


def sqlite_only(store_url: str, why: str) -> Path:
    if is_postgres(store_url):
        pytest.skip(why)
    return Path(store_url)


def health(store_url: str) -> HealthReport:
    """`lantern db check` on the store, through the API."""
    with Lantern.open(store_url, require_current=False, create=False) as lt:
        return lt.check()


def assert_healthy(store_url: str) -> None:
    report = health(store_url)
    assert report.healthy, report.problems


def python_process(
    *args: str, env: dict[str, str] | None = None, **kwargs: Any
) -> subprocess.Popen[str]:
    """A Python subprocess that can import `lantern` and `tests`."""
    return subprocess.Popen(
        [sys.executable, *args],
        cwd=REPO_ROOT,
        env={**os.environ, "PYTHONPATH": str(REPO_ROOT), **(env or {})},
        text=True,
        **kwargs,
    )


def forked(body: Callable[[], None]) -> int:
    """Run `body` in a forked child (which never returns into pytest); its pid.

    Forking skips the interpreter start and imports (~0.5 s a process here), which is what lets
    the quick tier kill writers fifty times in seconds. The child leaves with `os._exit`, so no
    pytest machinery runs in it; the caller must hold no open database connection.
    """
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        code = 0
        try:
            body()
        except BaseException:  # the child reports through its exit code only
            import traceback

            traceback.print_exc()
            code = 70
        finally:
            os._exit(code)
    return pid


def kill(pid: int) -> int:
    """SIGKILL a child and reap it; its wait status."""
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGKILL)
    _pid, status = os.waitpid(pid, 0)
    return status


def killed_by_signal(status: int) -> bool:
    return os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGKILL
