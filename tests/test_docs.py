"""The documentation that is generated from the code stays current."""

from __future__ import annotations

import re
import subprocess
import sys
import tomllib

from lantern.cli.reference import render
from lantern.mcpserver.server import TOOLS
from tests.helpers import REPO_ROOT

NUMBERS = ("zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten")


def test_cli_reference_is_current() -> None:
    documented = (REPO_ROOT / "docs" / "reference" / "cli.md").read_text(encoding="utf-8")
    # In a process of its own, as the documented command runs: Click keeps each command's help
    # option once made, so contexts that other tests build would change what it prints here.
    generated = subprocess.run(
        [sys.executable, "-m", "lantern.cli.reference"],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert documented == generated, (
        "docs/reference/cli.md is out of date: run "
        "`python -m lantern.cli.reference > docs/reference/cli.md`"
    )


def test_every_command_has_an_example_in_its_help() -> None:
    text = render()
    for section in text.split("## `")[1:]:
        title = section.split("`", 1)[0]
        help_lines = section.split("```text", 1)[1].splitlines()[2:]
        examples = [line for line in help_lines if line.lstrip().startswith("lantern ")]
        assert examples, f"the help of `{title}` shows no example"


def test_ci_runs_the_readme_test_command() -> None:
    """`.ci/run` runs the README's test command in two halves (install, then pytest) so that
    the linters run in between: the halves must add up to the README's line."""
    script = (REPO_ROOT / ".ci" / "run").read_text(encoding="utf-8")
    install = next(
        line.split("=", 1)[1].strip("'")
        for line in script.splitlines()
        if line.startswith("install=")
    )
    assert 'eval "$install"' in script
    assert script.rstrip().endswith("\npytest")
    readme = (REPO_ROOT / "README.md").read_text(encoding="utf-8")
    assert f"\n{install} && pytest\n" in readme


def test_the_mcp_page_lists_the_servers_tools_and_counts_its_write_tools() -> None:
    """The Tools table names every tool the server has, marks the ones that write (what
    `--read-only` leaves out), and the restrictions count them right."""
    page = (REPO_ROOT / "docs" / "mcp.md").read_text(encoding="utf-8")
    rows = re.findall(r"^\| `(lantern_\w+)` \|.*\| (write|read-only)[^|]*\|$", page, re.M)
    assert rows == [(spec.name, "write" if spec.writes else "read-only") for spec in TOOLS]
    writes = sum(spec.writes for spec in TOOLS)
    said = re.findall(r"`--read-only` leaves the (\w+) write tools out", page)
    assert said == [NUMBERS[writes]], f"docs/mcp.md should say {NUMBERS[writes]} write tools"


def test_the_overview_installs_every_extra_of_a_feature() -> None:
    """Installing, in the overview, shows each extra a feature needs (`all` is every one of
    them at once)."""
    project = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    extras = set(project["project"]["optional-dependencies"]) - {"all"}
    page = (REPO_ROOT / "docs" / "index.md").read_text(encoding="utf-8")
    assert set(re.findall(r"^pip install '\.\[(\w+)\]'", page, re.M)) == extras


API_CLASSES = (
    "lantern.api.Lantern",
    "lantern.memory.repository.MemoryRepository",
    "lantern.evidence.repository.EvidenceRepository",
    "lantern.entities.repository.EntityRepository",
    "lantern.memory.scopes.ScopePolicy",
)
"""The facade and the repositories it exposes, as the Python API reference renders them."""


def _undocumented_parameters() -> dict[str, list[str]]:
    """For each public method of `API_CLASSES` (inherited ones too), the parameters its
    docstring's `Args:` section (Google style, as mkdocstrings reads it) does not describe."""
    import logging

    import griffe

    logging.getLogger("griffe").setLevel(logging.ERROR)
    package = griffe.load("lantern", search_paths=[str(REPO_ROOT)], docstring_parser="google")
    missing: dict[str, list[str]] = {}
    for path in API_CLASSES:
        cls = package[path.removeprefix("lantern.")]
        for name, member in cls.all_members.items():
            if name.startswith("_") or not member.is_function:
                continue
            wanted = [p.name for p in member.parameters if p.name not in ("self", "cls")]
            described: set[str] = set()
            if member.docstring is not None:
                for section in member.docstring.parsed:
                    if section.kind is griffe.DocstringSectionKind.parameters:
                        described |= {item.name for item in section.value if item.description}
            gaps = [p for p in wanted if p not in described]
            if gaps:
                missing[f"{path}.{name}"] = gaps
    return missing


def test_every_public_method_describes_its_parameters() -> None:
    """The reference shows each parameter's words only where an `Args:` section gives them."""
    assert _undocumented_parameters() == {}
