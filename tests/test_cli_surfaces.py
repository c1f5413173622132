"""The command line as a person and a script meet it: where `--db` goes, `--json` on every
command, usage errors, messages in the CLI's own words, free text that starts with `-`, help
examples that run, hints on a terminal and quiet on a pipe."""

from __future__ import annotations

import json
from pathlib import Path

import click
import pytest
from click.testing import CliRunner, Result

from lantern.cli import cli
from tests.helpers import command_at, command_paths

# Commands that never open a store: they take no --db.
NO_STORE = {("mcp", "token", "add"), ("mcp", "token", "list"), ("mcp", "token", "revoke")}


def _invoke(*args: str, input: str | None = None) -> Result:
    return CliRunner().invoke(cli, list(args), input=input)


def _error(result: Result) -> dict[str, str]:
    parsed: dict[str, dict[str, str]] = json.loads(result.stdout)
    return parsed["error"]


# --- --db after the command word ---------------------------------------------------------------


def test_every_command_that_opens_a_store_takes_db_after_its_name() -> None:
    for path in command_paths(cli):
        names = {param.name for param in command_at(cli, path).params}
        assert ("db" in names) == (path not in NO_STORE), path


def test_db_after_the_subcommand_is_the_store_used(tmp_path: Path) -> None:
    store = str(tmp_path / "t.db")
    added = _invoke("memory", "add", "--db", store, "--kind", "fact", "Kept here.")
    assert added.exit_code == 0, added.output
    listed = _invoke("memory", "list", "--db", store, "--json")
    assert [record["content"] for record in json.loads(listed.stdout)] == ["Kept here."]
    # Given on both sides, the one after the command word wins, as a repeated option does.
    other = tmp_path / "other.db"
    both = _invoke("--db", str(other), "memory", "list", "--db", store, "--json")
    assert [record["id"] for record in json.loads(both.stdout)] == [
        json.loads(listed.stdout)[0]["id"]
    ]
    assert not other.exists()
    status = _invoke("db", "status", "--json", "--db", store)
    assert json.loads(status.stdout)["path"] == store
    config = _invoke("mcp", "--print-config", "--db", store)
    assert json.loads(config.stdout)["mcpServers"]["lantern"]["env"]["LANTERN_DB"] == store


def test_db_after_the_subcommand_in_a_real_process(tmp_path: Path) -> None:
    from tests.helpers import lantern_process

    store = str(tmp_path / "t.db")
    added = lantern_process("memory", "add", "--kind", "goal", "Ship it.", "--db", store)
    assert added.returncode == 0, added.stderr
    shown = lantern_process("memory", "show", added.stdout.strip(), "--db", store, "--json")
    assert json.loads(shown.stdout)["content"] == "Ship it."


def test_db_is_documented_in_each_commands_help() -> None:
    help_text = _invoke("memory", "list", "--help").stdout
    assert "--db PATH_OR_URL" in help_text
    assert isinstance(command_at(cli, ("memory",)), click.Group)
    assert "--db" not in _invoke("mcp", "token", "list", "--help").stdout


def test_a_missing_db_value_after_the_command_is_a_usage_error(tmp_path: Path) -> None:
    result = _invoke("memory", "list", "--db")
    assert result.exit_code == 2


@pytest.mark.parametrize("where", ["before", "after"])
def test_db_names_a_postgres_store_after_the_command(where: str, store_url: str) -> None:
    args = ["memory", "add", "--kind", "fact", "On either engine."]
    argv = ["--db", store_url, *args] if where == "before" else [*args, "--db", store_url]
    assert _invoke(*argv).exit_code == 0
    listed = _invoke("memory", "list", "--json", "--db", store_url)
    assert [record["content"] for record in json.loads(listed.stdout)] == ["On either engine."]
