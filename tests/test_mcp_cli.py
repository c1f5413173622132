"""The `lantern mcp` command around the server: `--print-config`, a missing or old SDK, bad
options, and the rest of the CLI never importing the SDK."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from lantern.cli import cli
from tests.helpers import LANTERN_BIN, REPO_ROOT, extra_hint, lantern_process, python_output


def test_print_config_names_this_executable_and_an_absolute_store(tmp_path: Path) -> None:
    printed = lantern_process(
        "--db", "rel/lantern.db", "mcp", "--scope", "team:*", "--scope", "solo", "--read-only",
        "--print-config", cwd=tmp_path,
    )  # fmt: skip
    assert printed.returncode == 0, printed.stderr
    assert printed.stderr == ""
    assert json.loads(printed.stdout) == {
        "mcpServers": {
            "lantern": {
                "command": str(LANTERN_BIN),
                "args": ["mcp", "--scope", "team:*", "--scope", "solo", "--read-only"],
                "env": {"LANTERN_DB": str(tmp_path / "rel" / "lantern.db")},
            }
        }
    }
    assert not (tmp_path / "rel").exists()  # printing a configuration creates no store


def test_print_config_takes_the_store_from_the_environment(store_url: str) -> None:
    printed = lantern_process("mcp", "--print-config", env={"LANTERN_DB": store_url})
    entry = json.loads(printed.stdout)["mcpServers"]["lantern"]
    assert entry["args"] == ["mcp"]
    assert entry["env"] == {"LANTERN_DB": store_url}


def test_print_config_without_an_executable_runs_the_module(store_url: str) -> None:
    # Click's runner leaves sys.argv[0] to pytest: there is no `lantern` script to name.
    result = CliRunner().invoke(cli, ["--db", store_url, "mcp", "--print-config"])
    assert result.exit_code == 0, result.output
    entry = json.loads(result.stdout)["mcpServers"]["lantern"]
    assert (entry["command"], entry["args"]) == (sys.executable, ["-m", "lantern", "mcp"])


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--scope", ""], "--scope must not be empty"),
        (["--scope", "a\nb"], "--scope must not have surrounding whitespace or line breaks"),
    ],
)
def test_bad_options_fail_before_anything_starts(args: list[str], message: str) -> None:
    result = CliRunner().invoke(cli, ["--db", "/nonexistent/x.db", "mcp", *args])
    assert result.exit_code == 1
    assert result.stderr.startswith(f"Error: {message}")
    assert result.stdout == ""


def test_without_the_sdk_the_command_says_what_to_install(tmp_path: Path) -> None:
    script = (
        "import sys; sys.modules['mcp'] = None; sys.argv = ['lantern', 'mcp']; "
        "from lantern.cli import main; main()"
    )
    ran = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env={"LANTERN_DB": str(tmp_path / "s.db"), "PATH": "", "PYTHONPATH": str(REPO_ROOT)},
        timeout=60,
        check=False,
    )
    assert ran.returncode == 1
    assert ran.stdout == ""
    assert ran.stderr == f"Error: the MCP server needs the MCP SDK: {extra_hint('mcp')}\n"
    assert not (tmp_path / "s.db").exists()


def test_an_sdk_older_than_version_2_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    # Version 1 has an `mcp` package, without the 2.x server API the server imports.
    monkeypatch.setattr("importlib.metadata.version", lambda name: "1.26.0")
    monkeypatch.delitem(sys.modules, "lantern.mcpserver.server", raising=False)
    monkeypatch.setitem(sys.modules, "mcp.server", None)
    result = CliRunner().invoke(cli, ["mcp"])
    assert result.exit_code == 1
    assert result.stderr == (
        "Error: the MCP server needs version 2 of the MCP SDK, found 1.26.0: "
        f"{extra_hint('mcp', upgrade=True)}\n"
    )


def test_other_commands_never_import_the_sdk(tmp_path: Path) -> None:
    script = """
import json, sys
from lantern.cli import cli
for args in (["memory", "list"], ["memory", "add", "--kind", "fact", "x"], ["--help"],
             ["mcp", "--help"], ["mcp", "--print-config"], ["search", "x"]):
    try:
        cli.main(["--db", sys.argv[1], *args], standalone_mode=False)
    except SystemExit:
        pass
heavy = ("mcp", "mcp_types", "jsonschema", "anyio", "lantern.mcpserver.server")
print(json.dumps(sorted(name for name in heavy if name in sys.modules)))
"""
    output = python_output(script, str(tmp_path / "s.db"))
    assert json.loads(output.splitlines()[-1]) == []
