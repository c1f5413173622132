"""The command line as a person and a script meet it: where `--db` goes, `--json` on every
command, usage errors, messages in the CLI's own words, free text that starts with `-`, help
examples that run, hints on a terminal and quiet on a pipe."""

from __future__ import annotations

import json
import re
from pathlib import Path

import click
import pytest
from click.testing import CliRunner, Result

from lantern.cli import cli
from tests.helpers import command_at, command_paths

# Commands that never open a store: they take no --db.
NO_STORE = {("mcp", "token", "add"), ("mcp", "token", "list"), ("mcp", "token", "revoke")}


def _invoke(*args: str, input: str | None = None) -> Result:
    return CliRunner().invoke(cli, list(args), input=input, prog_name="lantern")


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


# --- --json on every command, and usage errors -------------------------------------------------


def test_every_command_takes_json() -> None:
    for path in command_paths(cli):
        names = {param.name for param in command_at(cli, path).params}
        assert "as_json" in names, path
    assert "as_json" in {param.name for param in command_at(cli, ("mcp",)).params}


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ["memory", "add", "--urgency", "abc", "--json", "x"],
            "Invalid value for '--urgency': 'abc' is not a valid integer",
        ),
        # Parsing stops at the unknown option, before --json is read.
        (["memory", "list", "--json", "--bogus"], "No such option '--bogus'"),
        (["--bogus", "memory", "list", "--json"], "No such option '--bogus'"),
        (["memory", "lst", "--json"], "No such command 'lst'. Did you mean 'list'?"),
        (["memory", "add", "--json"], "Missing argument 'CONTENT'"),
        (["export", "--json", "--scope"], "Option '--scope' requires an argument"),
        (["mcp", "--json"], "--json goes with --print-config (which prints JSON either way)"),
    ],
)
def test_a_usage_error_is_one_line_and_with_json_the_error_object(
    tmp_path: Path, args: list[str], message: str
) -> None:
    result = _invoke("--db", str(tmp_path / "t.db"), *args)
    assert result.exit_code == 2
    assert _error(result) == {"code": "usage", "message": message}
    assert result.stderr.count("\n") == 1
    assert result.stderr.startswith(f"Error: {message} (see 'lantern")
    assert not (tmp_path / "t.db").exists()


def test_a_usage_error_without_json_prints_nothing_on_stdout() -> None:
    result = _invoke("memory", "list", "--limit", "many")
    assert (result.exit_code, result.stdout) == (2, "")
    assert result.stderr == (
        "Error: Invalid value for '--limit': 'many' is not a valid integer "
        "(see 'lantern memory list --help')\n"
    )
    # A word after -- is an argument, even one that reads --json.
    quoted = _invoke("memory", "add", "--bogus", "--", "--json")
    assert (quoted.exit_code, quoted.stdout) == (2, "")


def test_a_group_without_a_command_shows_its_help() -> None:
    result = _invoke("memory")
    assert "Usage: lantern memory [OPTIONS] COMMAND [ARGS]..." in result.output


def test_export_and_print_config_take_json(tmp_path: Path) -> None:
    store = str(tmp_path / "t.db")
    _invoke("--db", store, "memory", "add", "--kind", "fact", "Exported.")
    plain = _invoke("--db", store, "export")
    with_json = _invoke("--db", store, "export", "--json")
    assert with_json.exit_code == 0
    assert with_json.stdout == plain.stdout
    lines = [json.loads(line) for line in with_json.stdout.splitlines()]
    assert [line["type"] for line in lines] == ["lantern_export", "memory", "history"]
    missing = _invoke("--db", str(tmp_path / "none.db"), "export", "--json")
    assert (missing.exit_code, _error(missing)["code"]) == (8, "no_store")
    config = _invoke("--db", store, "mcp", "--print-config", "--json")
    assert config.exit_code == 0
    assert config.stdout == _invoke("--db", store, "mcp", "--print-config").stdout
    assert json.loads(config.stdout)["mcpServers"]["lantern"]["args"][-1] == "mcp"
    bad = _invoke("--db", store, "mcp", "--print-config", "--json", "--scope", "")
    assert bad.exit_code == 1 and _error(bad)["code"] == "invalid_input"


def test_a_usage_error_in_a_real_process_is_one_line() -> None:
    from tests.helpers import lantern_process

    done = lantern_process("memory", "add", "--urgency", "abc", "--json", "x")
    assert done.returncode == 2
    assert json.loads(done.stdout)["error"]["code"] == "usage"
    assert len(done.stderr.splitlines()) == 1


# --- messages in each surface's own words ------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["memory", "list", "--min-priority", "500"], "--min-priority must be an integer"),
        (["memory", "list", "--min-confidence", "2"], "--min-confidence must be a number"),
        (["memory", "list", "--updated-since", "soon"], "--updated-since must be unix seconds"),
        (["memory", "list", "--offset", "1", "--after", "c1_x"], "give either --offset or --after"),
        (["memory", "add", "--kind", "fact", "--expires-at", "x", "y"], "--expires-at must be"),
        (["memory", "add", "--kind", "fact", " "], "CONTENT must not be empty"),
        (
            ["memory", "add", "--kind", "fact", "--source-ref", "chunk:chk_0000000000000001", "y"],
            "(store it anyway with --allow-dangling)",
        ),
        (["memory", "update", "{id}", "--expires-at", "1", "--no-expiry"], "--expires-at or "),
        (
            ["memory", "supersede", "{id}", "--content", "Stored once."],
            "or use lantern memory update for the other fields",
        ),
        (["search", "--raw", "a AND ("], "search again without --raw to search for the words"),
        (["ingest", "-", "--uri", "x", "--chunk-size", "5"], "--chunk-size must be an integer"),
        (["source", "list", "--uri-prefix", " "], "--uri-prefix filter must be non-empty"),
        (["search", "x", "--since", "soon"], "--since must be unix seconds"),
    ],
)
def test_cli_messages_name_the_options_typed(tmp_path: Path, args: list[str], message: str) -> None:
    store = str(tmp_path / "t.db")
    record = _invoke("--db", store, "memory", "add", "--kind", "fact", "Stored once.").stdout
    argv = [arg.replace("{id}", record.strip()) for arg in args]
    result = _invoke("--db", store, *argv, "--json", input="text")
    assert result.exit_code == 1, result.output
    assert message in result.stderr
    assert message in _error(result)["message"]
    for python_name in ("min_priority", "_since", "expires_at", "allow_dangling", "memory.update"):
        assert python_name not in result.stderr


def test_python_callers_read_their_own_names(tmp_path: Path) -> None:
    from lantern.api import Lantern
    from lantern.errors import InvalidInput

    with Lantern.open(tmp_path / "t.db", create=True) as lt:
        with pytest.raises(InvalidInput) as refused:
            lt.memory.list(min_priority=500)
        assert refused.value.message.startswith("min_priority must be an integer")
        with pytest.raises(InvalidInput) as dangling:
            lt.memory.add(kind="fact", content="x", source_refs=["chunk:chk_0000000000000001"])
        assert "(store it anyway with allow_dangling=True)" in dangling.value.message
        stored = lt.memory.add(kind="fact", content="y")
        with pytest.raises(InvalidInput) as same:
            lt.memory.supersede(stored.id, content="y")
        assert "or use memory.update() for the other fields" in same.value.message


def test_mcp_messages_and_descriptions_name_no_cli_option(tmp_path: Path) -> None:
    import re

    from tests.mcp_helpers import running, server_parameters

    store = str(tmp_path / "t.db")
    assert _invoke("--db", store, "db", "upgrade").exit_code == 0
    cli_words = re.compile(r"(?<![\w-])--[a-z]|lantern (memory|ingest|search|source|chunk) ")
    with running(server_parameters(store, home=tmp_path / "home")) as client:
        listed = json.dumps([tool.model_dump(mode="json") for tool in client.tools().values()])
        assert not cli_words.search(listed), cli_words.search(listed)
        stored = client.ok("lantern_memory_add", {"kind": "fact", "content": "Stored once."})
        messages = {
            "allow": client.error(
                "lantern_memory_add",
                {"kind": "fact", "content": "x", "source_refs": ["chunk:chk_0000000000000001"]},
            ),
            "raw": client.error("lantern_search", {"query": "a AND (", "raw": True}),
            "update": client.error(
                "lantern_memory_supersede", {"old_id": stored["id"], "content": "Stored once."}
            ),
            "expiry": client.error(
                "lantern_memory_update", {"id": stored["id"], "expires_at": 1, "no_expiry": True}
            ),
            "cursor": client.error("lantern_memory_list", {"offset": 1, "after": "c1_x"}),
        }
    assert '(store it anyway with "allow_dangling": true)' in messages["allow"]
    assert 'search again with "raw": false to search for the words' in messages["raw"]
    assert "or use the tool lantern_memory_update for the other fields" in messages["update"]
    assert "give either expires_at or no_expiry, not both" in messages["expiry"]
    assert "give either offset or after, not both" in messages["cursor"]
    for message in messages.values():
        assert not cli_words.search(message), message


# --- free text that begins with - --------------------------------------------------------------


def test_queries_and_content_that_begin_with_a_dash(tmp_path: Path) -> None:
    store = str(tmp_path / "t.db")
    text = "Run the build with -spawn and -j4; see --verbose."
    ingested = _invoke("--db", store, "ingest", "-", "--uri", "note://build", input=text)
    assert ingested.exit_code == 0, ingested.output
    found = _invoke("search", "-spawn", "--db", store, "--json")
    assert found.exit_code == 0, found.output
    assert [hit["uri"] for hit in json.loads(found.stdout)] == ["note://build"]
    # Among other words and options, in any order; a negative number is text too.
    mixed = _invoke("--db", store, "search", "build", "--limit", "5", "-j4", "--json", "-1")
    assert mixed.exit_code == 0, mixed.output
    assert len(json.loads(mixed.stdout)) == 1
    # A --word is an option: a typo is reported, and after -- it is text.
    typo = _invoke("--db", store, "search", "--limt", "5", "build")
    assert typo.exit_code == 2
    assert "No such option '--limt' (text that starts with -- goes after --)" in typo.stderr
    quoted = _invoke("--db", store, "search", "--json", "--", "--verbose")
    assert [hit["uri"] for hit in json.loads(quoted.stdout)] == ["note://build"]
    added = _invoke("--db", store, "memory", "add", "--kind", "fact", "- a list item", "--json")
    assert json.loads(added.stdout)["content"] == "- a list item"
    matched = _invoke("--db", store, "memory", "search", "-item", "--json")
    assert [m["content"] for m in json.loads(matched.stdout)] == ["- a list item"]
    # `-h` is still help, and a missing option value is still Click's error.
    assert _invoke("search", "-h").stdout.startswith("Usage: lantern search")
    missing = _invoke("--db", store, "search", "-spawn", "--limit")
    assert missing.exit_code == 2 and "'--limit' requires an argument" in missing.stderr


def test_a_dash_query_in_a_real_process(tmp_path: Path) -> None:
    from tests.helpers import lantern_process

    store = str(tmp_path / "t.db")
    lantern_process("--db", store, "memory", "add", "--kind", "fact", "Use -O2 for speed.")
    done = lantern_process("--db", store, "memory", "search", "-O2", "--json")
    assert done.returncode == 0, done.stderr
    assert [m["content"] for m in json.loads(done.stdout)] == ["Use -O2 for speed."]


# --- help examples, verbatim and runnable -------------------------------------------------------


def _help_examples(width: int) -> dict[tuple[str, ...], list[str]]:
    """Every command's examples as its help shows them at `width` columns: the paragraphs
    that start with a `lantern` command line (or pipe into one), lines as printed."""
    from tests.helpers import subcommands

    found: dict[tuple[str, ...], list[str]] = {}

    def walk(command: click.Command, path: tuple[str, ...]) -> None:
        ctx = click.Context(
            command,
            info_name=" ".join(("lantern", *path)),
            terminal_width=width,
            max_content_width=width,
        )
        for paragraph in command.get_help(ctx).split("\n\n"):
            first = paragraph.strip().splitlines()[0] if paragraph.strip() else ""
            if first.startswith("lantern ") or "| lantern " in first:
                found.setdefault(path, []).append(paragraph)
        if isinstance(command, click.Group):
            for name, sub in sorted(subcommands(command).items()):
                walk(sub, (*path, name))

    walk(cli, ())
    return found


def _command_line(paragraph: str) -> str:
    """An example as one shell command line: continuation lines joined."""
    return " ".join(line.strip().removesuffix("\\").strip() for line in paragraph.splitlines())


def test_help_examples_are_kept_verbatim_at_any_width() -> None:
    narrow, wide = _help_examples(40), _help_examples(200)
    assert narrow == wide
    assert sum(len(examples) for examples in wide.values()) >= 30
    continued = [e for examples in wide.values() for e in examples if "\\\n" in e]
    assert continued, "an example that continues on a second line"
    for example in continued:
        # The backslash ends its line, and the next line is the rest of the command.
        assert all(line.rstrip().endswith("\\") for line in example.splitlines()[:-1])


def _shell_words(command_line: str, home: Path, cwd: Path) -> tuple[list[str], str | None]:
    """The arguments bash gives `lantern` for an example (quotes, ~ and $(...) expanded),
    and the file its output is redirected to, if any."""
    import subprocess

    command = command_line.rsplit("| ", 1)[-1]
    target = None
    redirect = re.search(r"\s>\s*(\S+)$", command)
    if redirect:
        target = redirect.group(1)
        command = command[: redirect.start()]
    assert command.startswith("lantern "), command
    done = subprocess.run(
        ["bash", "-c", "printf '%s\\0' " + command.removeprefix("lantern ")],
        capture_output=True,
        text=True,
        check=True,
        cwd=cwd,
        env={"HOME": str(home), "PATH": "/usr/bin:/bin"},
    )
    return done.stdout.split("\0")[:-1], target


def _parse_only(argv: list[str]) -> click.Command:
    """The command an argument list reaches, parsed as `lantern` parses it, without running
    anything; a usage error raises."""
    command: click.Command = cli
    ctx: click.Context | None = None
    name, args = "lantern", argv
    while True:
        ctx = click.Context(command, info_name=name, parent=ctx, **command.context_settings)
        if isinstance(command, click.Group):
            rest = click.Command.parse_args(command, ctx, args)
            if not rest:
                return command
            found_name, found, args = command.resolve_command(ctx, rest)
            assert found is not None and found_name is not None
            command, name = found, found_name
        else:
            command.parse_args(ctx, args)
            return command


def test_every_help_example_parses(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir(parents=True, exist_ok=True)
    runs_itself = command_at(cli, ("mcp",))
    for examples in _help_examples(100).values():
        for example in examples:
            argv, _target = _shell_words(_command_line(example), home, tmp_path)
            reached = _parse_only(argv)
            assert not isinstance(reached, click.Group) or reached is runs_itself, argv


# A few examples run for real, in this order, in one home directory and store.
RUN = [
    ("ingest",),
    ("search",),
    ("memory", "add"),
    ("memory", "list"),
    ("memory", "search"),
    ("export",),
    ("import",),
    ("inspect",),
    ("source", "list"),
    ("db", "status"),
    ("db", "check"),
]


def test_a_few_help_examples_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    home = tmp_path / "home"
    notes = home / "notes"
    notes.mkdir(parents=True)
    (notes / "release.md").write_text("# Release checklist\n\nTag it, then deploy.\n")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("LANTERN_DB", str(tmp_path / "store.db"))
    examples = _help_examples(100)
    ran = 0
    for path in RUN:
        for example in examples[path]:
            argv, target = _shell_words(_command_line(example), home, tmp_path)
            if "--uri-prefix" in argv:
                continue  # names a file of another home
            stdin = "collected 1 item\n" if "-" in argv else None
            result = CliRunner().invoke(cli, argv, input=stdin)
            assert result.exit_code == 0, (argv, result.output)
            if target is not None:
                (tmp_path / target).write_text(result.stdout)
            ran += 1
    assert ran >= 12
