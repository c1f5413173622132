"""Security properties: private files, no network, no link out of an ingested tree.

Two properties of the issue are proved elsewhere, and not repeated here:

* no user text reaches SQL except as a bound parameter: `test_generated_input.py` watches the
  text of every statement while thousands of generated command lines run (sort and filter
  fields are choices that the repositories check against fixed lists);
* `memory forget` leaves no copy of the content in the store files: `tests/
  test_memory_forget_files.py` searches the `.db`, `-wal` and `-shm` files byte by byte.
"""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
import textwrap
from pathlib import Path

from lantern.api import Lantern
from lantern.evidence.records import SkippedPath
from tests.helpers import LANTERN_BIN, REPO_ROOT
from tests.legacy_stores import build_legacy_store
from tests.reliability.conftest import Figures
from tests.reliability.mcp_client import mcp_server
from tests.reliability.test_hostile_stores import _commands, _healthy_store


def _with_umask_022() -> None:
    os.umask(0o022)


def test_files_and_directories_are_owner_only_under_umask_022(
    tmp_path: Path, figures: Figures
) -> None:
    home = tmp_path / "data"
    nested = tmp_path / "deep" / "er" / "store.db"
    legacy = tmp_path / "legacy" / "old.db"
    legacy.parent.mkdir()
    build_legacy_store(legacy, 2, wal_pending=True)
    legacy.chmod(0o600)
    env = {**os.environ, "XDG_DATA_HOME": str(home)}
    runs = [
        ["memory", "add", "--kind", "fact", "in the default store"],
        ["--db", str(nested), "memory", "add", "--kind", "fact", "in a nested store"],
        ["--db", str(nested), "db", "backup", str(tmp_path / "backups" / "copy.db")],
        ["--db", str(legacy), "db", "upgrade"],
    ]
    (tmp_path / "backups").mkdir(mode=0o700)
    for args in runs:
        done = subprocess.run(
            [str(LANTERN_BIN), *args],
            env=env,
            capture_output=True,
            text=True,
            check=False,
            preexec_fn=_with_umask_022,
        )
        assert done.returncode == 0, done.stderr
    # Hold the stores open so that their -wal and -shm files exist while they are looked at.
    stores = [home / "lantern" / "lantern.db", nested, legacy]
    opened = [Lantern.open(store) for store in stores]
    try:
        for lt in opened:
            lt.memory.list()
        files = [
            path
            for root in (home, tmp_path / "deep", tmp_path / "backups", legacy.parent)
            for path in root.rglob("*")
        ]
        wide = {
            str(p): oct(stat.S_IMODE(p.stat().st_mode)) for p in files if p.stat().st_mode & 0o077
        }
    finally:
        for lt in opened:
            lt.close()
    assert not wide, wide
    created_dirs = [home, home / "lantern", tmp_path / "deep", tmp_path / "deep" / "er"]
    assert all(stat.S_IMODE(d.stat().st_mode) == 0o700 for d in created_dirs)
    figures(
        f"umask 022: {len(files)} files and directories made by {len(runs)} commands (stores, "
        "-wal, -shm, db backup, upgrade backup, created directories): 0 readable or writable "
        "by group or others"
    )


_AUDIT = textwrap.dedent(
    """
    import json, sys

    events = []

    def hook(event, args):
        if event.startswith("socket."):
            events.append([event, repr(args)[:200]])

    sys.addaudithook(hook)

    import contextlib, io
    from lantern.cli import cli

    runs = json.loads(sys.argv[1])
    codes = []
    for args in runs:
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            try:
                cli.main(args, prog_name="lantern", standalone_mode=False)
                codes.append(0)
            except SystemExit as exc:
                codes.append(exc.code or 0)
            except Exception as exc:
                codes.append(repr(exc))
    commands_events = list(events)
    # The control: a socket made here must be seen, or the hook proves nothing.
    import socket

    socket.socket().close()
    print(json.dumps({"codes": codes, "events": commands_events, "control": events}))
    """
)


def test_no_command_opens_a_network_socket(tmp_path: Path, figures: Figures) -> None:
    store = tmp_path / "store.db"
    (tmp_path / "copies").mkdir()
    ids = _healthy_store(store, tmp_path)
    commands = _commands(ids, tmp_path)
    runs = [["--db", str(store), *command, *args] for command, (_kind, args) in commands.items()]
    done = subprocess.run(
        [sys.executable, "-c", _AUDIT, json.dumps(runs)],
        cwd=REPO_ROOT,
        env={**os.environ, "PYTHONPATH": str(REPO_ROOT)},
        capture_output=True,
        text=True,
        check=True,
    )
    result = json.loads(done.stdout)
    assert all(isinstance(code, int) for code in result["codes"]), result["codes"]
    assert result["events"] == []
    assert [event for event, _args in result["control"]] == ["socket.__new__"]
    figures(
        f"{len(runs)} commands run under an audit hook for socket.* events: "
        f"{len(result['events'])} events (no socket created, bound or connected; the control "
        "socket made afterwards was seen)"
    )


_AUDITED_SERVER = textwrap.dedent(
    """
    import atexit, json, socket, sys

    events = []

    def hook(event, args):
        # asyncio's event loop wakes itself through a local socket pair (AF_UNIX): not network.
        if event == "socket.__new__" and args[1] == socket.AF_UNIX:
            return
        if event.startswith("socket."):
            events.append([event, repr(args)[:200]])

    sys.addaudithook(hook)
    report = sys.argv[1]
    atexit.register(lambda: open(report, "w").write(json.dumps(events)))
    from lantern.cli import main

    sys.argv = ["lantern", "mcp"]
    main()
    """
)


def test_the_mcp_server_opens_no_network_socket(tmp_path: Path, figures: Figures) -> None:
    store = tmp_path / "store.db"
    report = tmp_path / "events.json"
    command = [sys.executable, "-c", _AUDITED_SERVER, str(report)]
    with mcp_server(str(store), command=command) as server:
        added = server.call("lantern_memory_add", {"kind": "fact", "content": "over stdio"})
        assert not added.is_error
        assert not server.call("lantern_memory_search", {"query": "stdio"}).is_error
        assert not server.call("lantern_ingest_text", {"uri": "tool://x", "text": "t"}).is_error
    events = json.loads(report.read_text())
    assert events == []
    figures(
        "lantern mcp under an audit hook, serving add, search and ingest calls: 0 socket "
        "events besides asyncio's own local socket pair"
    )


def test_ingest_never_follows_a_link_out_of_the_tree(tmp_path: Path, figures: Figures) -> None:
    """A directory swapped for a link in the middle of an ingest is not followed either."""
    tree = tmp_path / "tree"
    (tree / "sub").mkdir(parents=True)
    outside = tmp_path / "outside"
    outside.mkdir()
    (tree / "a.md").write_text("# A\n\nalpha\n")
    (tree / "sub" / "b.md").write_text("# B\n\nbravo\n")
    (outside / "b.md").write_text("# Secret\n\nxyzzysecret\n")
    (outside / "c.md").write_text("# Secret\n\nxyzzysecret\n")
    (tree / "link.md").symlink_to(outside / "c.md")
    (tree / "linked-dir").symlink_to(outside, target_is_directory=True)

    def swap(done: int, _total: int) -> None:
        # After the first file is read, and before the next: `sub` becomes a link outside.
        if done == 1:
            shutil.rmtree(tree / "sub")
            (tree / "sub").symlink_to(outside, target_is_directory=True)

    with Lantern.open(tmp_path / "store.db") as lt:
        summary = lt.evidence.ingest_path([tree], progress=swap)
        assert lt.evidence.search("xyzzysecret") == []
        uris = [source.uri for source in lt.evidence.list_sources()]
    assert uris == [f"file://{tree}/a.md"]
    assert set(summary.skipped_paths) == {
        SkippedPath(str(tree / "link.md"), "symlink to outside the directory (not followed)"),
        SkippedPath(str(tree / "linked-dir"), "symlink to outside the directory (not followed)"),
        SkippedPath(str(tree / "sub" / "b.md"), "symlink (not followed)"),
    }
    figures(
        "ingest of a tree with links out of it, and a directory swapped for a link mid-ingest: "
        f"{len(summary.skipped_paths)} paths skipped and reported, 0 files read from outside"
    )
