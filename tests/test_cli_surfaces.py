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
    # `lantern ui` serves pages, whose JSON twins are the other commands' JSON.
    for path in (path for path in command_paths(cli) if path != ("ui",)):
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
        (["memory", "list", "--offset", "1", "--after", "c1_x"], "--offset or a cursor (--after)"),
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
    assert "give either an offset or a cursor (after), not both" in messages["cursor"]
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
    graph = home / ".mcp" / "memory.jsonl"  # the MCP reference memory server's file
    graph.parent.mkdir()
    graph.write_text(
        '{"type":"entity","name":"Ada","entityType":"person","observations":["Likes tea."]}\n'
    )
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


# --- quiet and hints ---------------------------------------------------------------------------


@pytest.fixture
def terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    """Stderr is a terminal, as for a person typing (the runner's own stderr is not)."""
    monkeypatch.setattr("lantern.cli.output.stderr_is_terminal", lambda: True)


def _store_with_three(tmp_path: Path) -> str:
    store = str(tmp_path / "t.db")
    for n in range(3):
        _invoke("--db", store, "memory", "add", "--kind", "fact", f"Deploy note {n}.")
    notes = tmp_path / "notes"
    notes.mkdir()
    for n in range(3):
        (notes / f"n{n}.md").write_text(f"# Note {n}\n\nHow to deploy, part {n}.\n")
    assert _invoke("--db", store, "ingest", str(notes)).exit_code == 0
    return store


@pytest.mark.usefixtures("terminal")
def test_a_page_that_stops_at_its_limit_says_how_to_go_on(tmp_path: Path) -> None:
    store = _store_with_three(tmp_path)
    listed = _invoke("--db", store, "memory", "list", "--limit", "2")
    assert listed.exit_code == 0
    [line] = listed.stderr.splitlines()
    assert re.fullmatch(
        r"lantern: 2 records shown, more match: --after c1_\S+ shows the next page", line
    )
    cursor = line.split("--after ")[1].split()[0]
    rest = _invoke("--db", store, "memory", "list", "--limit", "2", "--after", cursor)
    assert len(rest.stdout.splitlines()) == 1 and rest.stderr == ""
    offset = _invoke("--db", store, "memory", "list", "--limit", "1", "--offset", "1", "--json")
    assert offset.stderr == "lantern: 1 record shown, more match: --offset 2 shows the next page\n"
    found = _invoke("--db", store, "memory", "search", "deploy", "--limit", "1")
    assert "1 record shown, more match: --after c2_" in found.stderr
    hits = _invoke("--db", store, "search", "deploy", "--limit", "2")
    assert hits.stderr == "lantern: 2 chunks shown, more match: a --limit above 2 shows them\n"
    sources = _invoke("--db", store, "source", "list", "--limit", "2")
    assert sources.stderr == (
        "lantern: 2 sources shown, more match: --offset 2 shows the next page\n"
    )
    # All of it on one page: nothing to add.
    assert _invoke("--db", store, "memory", "list").stderr == ""
    assert _invoke("--db", store, "search", "deploy").stderr == ""
    # --with-cursor says where the next page starts, as it always did.
    with_cursor = _invoke("--db", store, "memory", "list", "--limit", "2", "--with-cursor")
    assert with_cursor.stderr.startswith("lantern: more after this page: --after c1_")


@pytest.mark.usefixtures("terminal")
def test_an_empty_result_says_so(tmp_path: Path) -> None:
    store = _store_with_three(tmp_path)
    cases = [
        (["memory", "list", "--scope", "nowhere"], "no records match"),
        (["memory", "search", "absent"], "no records match"),
        (["memory", "cites", "session:none"], "no records match"),
        (["search", "absent"], "no chunks match"),
        (["source", "list", "--kind", "log"], "no sources match"),
    ]
    for args, message in cases:
        result = _invoke("--db", store, *args)
        assert (result.exit_code, result.stdout, result.stderr) == (0, "", f"lantern: {message}\n")


def test_hints_are_for_a_terminal_only(tmp_path: Path) -> None:
    store = _store_with_three(tmp_path)
    for args in (["memory", "list", "--limit", "1"], ["search", "absent"]):
        assert _invoke("--db", store, *args).stderr == ""


def _stderr_on_a_terminal(*args: str) -> tuple[int, str, str]:
    """Run `lantern` with stdout on a pipe and stderr on a pseudo-terminal."""
    import os
    import pty
    import subprocess

    from tests.helpers import LANTERN_BIN

    leader, follower = pty.openpty()
    try:
        done = subprocess.run(
            [str(LANTERN_BIN), *args],
            stdout=subprocess.PIPE,
            stderr=follower,
            timeout=120,
            check=False,
        )
    finally:
        os.close(follower)
    received = b""
    while True:
        try:
            chunk = os.read(leader, 4096)
        except OSError:  # the terminal is closed once everything was read
            break
        if not chunk:
            break
        received += chunk
    os.close(leader)
    return done.returncode, done.stdout.decode(), received.decode().replace("\r\n", "\n")


def test_hints_in_a_real_process_on_a_terminal_and_on_a_pipe(tmp_path: Path) -> None:
    from tests.helpers import lantern_process

    store = _store_with_three(tmp_path)
    code, stdout, stderr = _stderr_on_a_terminal("--db", store, "memory", "list", "--limit", "1")
    assert code == 0 and len(stdout.splitlines()) == 1
    assert stderr.startswith("lantern: 1 record shown, more match: --after c1_")
    piped = lantern_process("--db", store, "memory", "list", "--limit", "1")
    assert piped.returncode == 0 and piped.stderr == ""


def test_ingest_skips_caches_and_can_be_quiet(tmp_path: Path) -> None:
    store = str(tmp_path / "t.db")
    project = tmp_path / "project"
    for cache in ("__pycache__", ".mypy_cache", ".pytest_cache", ".ruff_cache"):
        (project / "pkg" / cache).mkdir(parents=True)
        (project / "pkg" / cache / "state.txt").write_text("derived\n")
    (project / "build-cache").mkdir()
    (project / "build-cache" / "CACHEDIR.TAG").write_text(
        "Signature: 8a477f597d28d172789f06886806bc55\n"
    )
    (project / "pkg" / "module.py").write_text("def f():\n    return 1\n")
    result = _invoke("--db", store, "ingest", str(project), "--json")
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout)
    assert summary["added"] == 1
    skipped = {Path(item["path"]).name: item["reason"] for item in summary["skipped_paths"]}
    assert skipped == dict.fromkeys(
        ["build-cache", "__pycache__", ".mypy_cache", ".pytest_cache", ".ruff_cache"],
        "cache directory",
    )
    assert all(item["named"] is False for item in summary["skipped_paths"])
    assert result.stderr.count("lantern: skipped ") == 5
    quiet = _invoke("--db", store, "ingest", str(project), "--quiet")
    assert (quiet.exit_code, quiet.stderr) == (0, "")
    assert quiet.stdout.startswith("added 0, updated 0, unchanged 1, skipped 5, removed 0; ")


def test_a_named_file_that_is_skipped_fails_the_command(tmp_path: Path) -> None:
    store = str(tmp_path / "t.db")
    files = tmp_path / "files"
    files.mkdir()
    (files / "photo.png").write_bytes(b"\x89PNG\x00\x01")
    (files / "notes.md").write_text("# Notes\n")
    photo = str(files / "photo.png")
    result = _invoke("--db", store, "ingest", str(files / "notes.md"), photo)
    assert result.exit_code == 1
    assert result.stdout.startswith("added 1, updated 0, unchanged 0, skipped 1, removed 0; ")
    assert result.stderr.splitlines()[-1] == f"Error: {photo} was not ingested: binary"
    as_json = _invoke("--db", store, "ingest", str(files), photo, "--json", "-q")
    assert (as_json.exit_code, as_json.stderr) == (1, f"Error: {photo} was not ingested: binary\n")
    assert json.loads(as_json.stdout)["skipped_paths"] == [
        {"path": photo, "reason": "binary", "named": True}
    ]
    # Found by walking a directory, the same file is only reported.
    walked = _invoke("--db", store, "ingest", str(files), "--quiet")
    assert walked.exit_code == 0


def test_standard_input_drops_the_line_break_a_shell_adds(tmp_path: Path) -> None:
    store = str(tmp_path / "t.db")
    added = _invoke(
        "--db", store, "memory", "add", "--kind", "fact", "-", "--json", input="Build with just.\n"
    )
    assert json.loads(added.stdout)["content"] == "Build with just."
    kept = _invoke(
        "--db", store, "memory", "add", "--kind", "fact", "-", "--json", input="Two lines.\n\n"
    )
    assert json.loads(kept.stdout)["content"] == "Two lines.\n"
    crlf = _invoke(
        "--db", store, "memory", "add", "--kind", "goal", "-", "--json", input="Done.\r\n"
    )
    assert json.loads(crlf.stdout)["content"] == "Done."
    record = json.loads(added.stdout)["id"]
    updated = _invoke(
        "--db",
        store,
        "memory",
        "update",
        record,
        "--content",
        "-",
        "--json",
        input="Build with make.\n",
    )
    assert json.loads(updated.stdout)["content"] == "Build with make."
    ingested = _invoke(
        "--db", store, "ingest", "-", "--uri", "tool://echo", "--json", input="hello\n"
    )
    assert json.loads(ingested.stdout)["bytes"] == len("hello")


def test_fractional_unix_times_are_whole_seconds(tmp_path: Path) -> None:
    store = str(tmp_path / "t.db")
    added = _invoke(
        "--db",
        store,
        "memory",
        "add",
        "--kind",
        "fact",
        "--expires-at",
        "4102444800.9",
        "x",
        "--json",
    )
    assert added.exit_code == 0, added.output
    assert json.loads(added.stdout)["expires_at"] == 4102444800
    since = _invoke("--db", store, "memory", "list", "--updated-since", "1.5", "--json")
    assert [r["content"] for r in json.loads(since.stdout)] == ["x"]
    later = _invoke("--db", store, "memory", "list", "--updated-since", "4102444800.5", "--json")
    assert json.loads(later.stdout) == []
    assert _invoke("--db", store, "search", "x", "--since", "0.25").exit_code == 0


def test_a_word_outside_a_vocabulary_is_a_usage_error(tmp_path: Path) -> None:
    store = str(tmp_path / "t.db")
    _invoke("--db", store, "memory", "add", "--kind", "fact", "x")
    for args in (
        ["memory", "list", "--status", "foo"],
        ["memory", "search", "x", "--status", "foo"],
        ["memory", "cites", "session:a", "--status", "foo"],
        ["memory", "list", "--kind", "opinion"],
        ["memory", "add", "--kind", "opinion", "y"],
    ):
        result = _invoke("--db", store, *args, "--json")
        assert result.exit_code == 2, args
        assert _error(result)["code"] == "usage"
        assert "is not one of" in result.stderr


def test_summaries_agree_in_number(tmp_path: Path) -> None:
    store = str(tmp_path / "t.db")
    (tmp_path / "one.md").write_text("# One\n\nShort.\n")
    ingested = _invoke("--db", store, "ingest", str(tmp_path / "one.md"))
    assert "; 1 chunk written, " in ingested.stdout
    listed = _invoke("--db", store, "source", "list")
    assert " 1 chunk  " in listed.stdout
    _invoke("--db", store, "memory", "add", "--kind", "fact", "x")
    exported = _invoke("--db", store, "export")
    assert exported.stderr == (
        "lantern: exported 1 source, 1 chunk, 1 memory record, 1 history entry, 1 entity scan\n"
    )
    (tmp_path / "two.md").write_text("# Two\n\nAlso short.\n")
    _invoke("--db", store, "ingest", str(tmp_path / "two.md"))
    assert "exported 2 sources, 2 chunks" in _invoke("--db", store, "export", "--evidence").stderr
    source_id = json.loads(_invoke("--db", store, "source", "list", "--json").stdout)[0]["id"]
    removed = _invoke("--db", store, "source", "remove", source_id)
    assert removed.stdout.endswith("and its 1 chunk\n")


# --- what the documentation promises -----------------------------------------------------------


def _free_port() -> int:
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
    return port


def test_an_unreachable_postgres_server_has_its_own_exit_code() -> None:
    pytest.importorskip("psycopg")
    from tests.helpers import lantern_process

    url = f"postgresql+psycopg://lantern:secret@127.0.0.1:{_free_port()}/lantern"
    result = _invoke("--db", url, "memory", "list", "--json")
    assert result.exit_code == 9
    error = _error(result)
    assert error["code"] == "store_unreachable"
    assert error["message"].startswith(
        "cannot connect to the store at postgresql+psycopg://lantern:***@127.0.0.1:"
    )
    assert "secret" not in result.output
    done = lantern_process("--db", url, "db", "status")
    assert done.returncode == 9 and done.stderr.startswith("Error: cannot connect to the store")


def test_a_database_the_server_does_not_know_is_unreachable_too(postgres_url: str) -> None:
    from sqlalchemy.engine import make_url

    url = make_url(postgres_url).set(database="no_such_database_here")
    result = _invoke("--db", url.render_as_string(hide_password=False), "inspect", "--json")
    assert (result.exit_code, _error(result)["code"]) == (9, "store_unreachable")


def test_print_config_says_when_it_prints_a_password(tmp_path: Path) -> None:
    with_password = f"postgresql+psycopg://ada:secret@127.0.0.1:{_free_port()}/lantern"
    printed = _invoke("--db", with_password, "mcp", "--print-config", "--json")
    assert printed.exit_code == 0
    assert json.loads(printed.stdout)["mcpServers"]["lantern"]["env"]["LANTERN_DB"] == (
        with_password
    )
    assert printed.stderr == (
        "lantern: this configuration holds the database password: keep it private, or move "
        "the password to ~/.pgpass and out of the URL\n"
    )
    plain_url = "postgresql+psycopg://ada@db.example/lantern"
    without = _invoke("--db", plain_url, "mcp", "--print-config")
    assert (without.exit_code, without.stderr) == (0, "")
    # Everywhere else the password is hidden.
    status = _invoke("--db", with_password, "db", "status")
    assert "secret" not in status.output


def test_shell_completion_as_documented() -> None:
    from tests.helpers import lantern_process

    script = lantern_process(env={"_LANTERN_COMPLETE": "bash_source"})
    assert script.returncode == 0 and "_lantern_completion" in script.stdout
    words = {"_LANTERN_COMPLETE": "bash_complete", "COMP_WORDS": "lantern mem", "COMP_CWORD": "1"}
    assert lantern_process(env=words).stdout.split() == ["plain,memory"]
    choices = {**words, "COMP_WORDS": "lantern memory list --status ", "COMP_CWORD": "4"}
    assert lantern_process(env=choices).stdout.split() == [
        "plain,active",
        "plain,archived",
        "plain,superseded",
        "plain,all",
    ]


def test_lantern_debug_lets_a_bug_show_its_traceback(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from lantern.memory.repository import MemoryRepository

    store = str(tmp_path / "t.db")
    _invoke("--db", store, "memory", "add", "--kind", "fact", "x")

    def broken(*_args: object, **_kwargs: object) -> None:
        raise RuntimeError("a bug")

    monkeypatch.setattr(MemoryRepository, "list", broken)
    quiet = _invoke("--db", store, "memory", "list")
    assert quiet.exit_code == 1
    assert quiet.stderr == (
        "Error: unexpected RuntimeError: a bug (set LANTERN_DEBUG=1 for a traceback, and "
        "please report it)\n"
    )
    monkeypatch.setenv("LANTERN_DEBUG", "1")
    loud = _invoke("--db", store, "memory", "list")
    assert isinstance(loud.exception, RuntimeError) and loud.exit_code == 1
