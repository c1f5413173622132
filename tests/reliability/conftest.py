"""The reliability suite: attacks on a real store, in two tiers, with figures in the CI log.

Every test here takes the `tier` fixture. The quick tier runs in the normal `pytest` run; the
long tier (the issue's full sizes) is marked `reliability_long`, which `addopts` deselects:

    pytest -m reliability_long tests/reliability      # the long tier alone

Each test reports what it did (writes attempted, acknowledged and found, kills, examples...)
through the `figures` fixture; the figures are printed in a section of the terminal summary, so
that they stand in every CI log, and attached to the test as a junit property.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from tests.reliability.tools import LONG, QUICK, Tier

FIGURES = pytest.StashKey[list[tuple[str, str]]]()

Figures = Callable[[str], None]


def pytest_configure(config: pytest.Config) -> None:
    config.stash[FIGURES] = []


@pytest.fixture(
    params=[
        pytest.param(QUICK, id="quick"),
        pytest.param(LONG, id="long", marks=pytest.mark.reliability_long),
    ]
)
def tier(request: pytest.FixtureRequest) -> Tier:
    """The sizes of one run: the quick tier (CI), or the long tier (`-m reliability_long`)."""
    selected: Tier = request.param
    return selected


@pytest.fixture
def figures(
    request: pytest.FixtureRequest, record_property: Callable[[str, object], None]
) -> Figures:
    """Record one line of figures for the terminal summary (and the junit report)."""
    lines = request.config.stash[FIGURES]
    count = 0

    def record(text: str) -> None:
        nonlocal count
        count += 1
        lines.append((request.node.nodeid, text))
        record_property(f"figures_{count}", text)

    return record


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    lines = terminalreporter.config.stash.get(FIGURES, [])
    if not lines:
        return
    terminalreporter.section("reliability figures")
    current = None
    for nodeid, text in lines:
        if nodeid != current:
            terminalreporter.write_line(nodeid.rsplit("/", 1)[-1])
            current = nodeid
        terminalreporter.write_line(f"    {text}")
