"""The examples of the README and of every page of the manual run, and print what they show.

Each page runs in page order against a store of its own (`LANTERN_DB` under an isolated home
directory, `lantern` from this environment first on PATH), so that an example can use what the
examples above it stored. `tests/doc_examples.py` says which blocks run and how outputs are
compared; a block that cannot run here is marked `<!-- not run: REASON -->` and reported as a
skipped test with that reason.
"""

from __future__ import annotations

import os
import re
import select
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from lantern.store.ids import chunk_id, source_id
from tests.doc_examples import (
    DOC_HOME,
    STORED_ID,
    Command,
    Example,
    examples,
    mismatch,
    unportable,
)
from tests.helpers import REPO_ROOT

TIMEOUT = 120


def _pages() -> list[Path]:
    config = yaml.safe_load((REPO_ROOT / "mkdocs.yml").read_text(encoding="utf-8"))
    pages: list[Path] = [REPO_ROOT / "README.md"]

    def walk(entries: list[object]) -> None:
        for entry in entries:
            if isinstance(entry, str):
                pages.append(REPO_ROOT / "docs" / entry)
            elif isinstance(entry, dict):
                for value in entry.values():
                    walk(value if isinstance(value, list) else [value])

    walk(config["nav"])
    return pages


PAGES = _pages()


def _name(page: Path) -> str:
    return page.relative_to(REPO_ROOT).as_posix()


class Session:
    """One page's shell: an isolated home with its own store, and what its examples stored.

    The commands of a page run one after the other in one `bash`, as a reader would type them
    into one terminal: a variable or a directory set by one is there for the next. They run as
    written; only what they print is made to read as the page shows it.
    """

    def __init__(self, tmp_path: Path) -> None:
        self.home = tmp_path / "home"
        self.home.mkdir()
        self.store = self.home / ".local" / "share" / "lantern" / "lantern.db"
        env = {
            name: value
            for name, value in os.environ.items()
            if not name.startswith(("LANTERN_", "XDG_", "PYTHON"))
        }
        env.update(
            HOME=str(self.home),
            LANTERN_DB=str(self.store),
            PATH=f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}",
            PYTHONUNBUFFERED="1",
            PYTHONIOENCODING="utf-8",
            LC_ALL="C.UTF-8",
            TZ="UTC",
        )
        self.env = env
        # Evidence ids derived from paths under the test's home, and the ids the same files
        # get under /home/ada, which the pages show.
        self.to_doc: dict[str, str] = {}
        # The ids that the page's commands printed so far, as this machine printed them: what
        # a reader of the page has to use in a later command.
        self.produced: set[str] = set()
        self.bash = subprocess.Popen(
            ["bash", "--noprofile", "--norc"],
            cwd=self.home,
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        self.shell("_doc_rc=0")

    def close(self) -> None:
        if self.bash.poll() is None:
            os.killpg(self.bash.pid, signal.SIGKILL)
        self.bash.wait()
        for stream in (self.bash.stdin, self.bash.stdout):
            if stream is not None:
                stream.close()

    def as_documented(self, text: str) -> str:
        for real, doc in self.to_doc.items():
            text = text.replace(real, doc)
        return text.replace(str(self.home), DOC_HOME)

    def learn_ids(self) -> None:
        if not self.store.exists():
            return
        conn = sqlite3.connect(f"file:{self.store}?mode=ro", uri=True)
        try:
            sources = conn.execute("SELECT id, uri FROM sources").fetchall()
            chunks = conn.execute("SELECT id, source_id, ordinal, text FROM chunks").fetchall()
        finally:
            conn.close()
        home = str(self.home)
        documented = {
            sid: source_id(uri.replace(home, DOC_HOME)) for sid, uri in sources if home in uri
        }
        self.to_doc.update(documented)
        for cid, sid, ordinal, text in chunks:
            if sid in documented:
                self.to_doc[cid] = chunk_id(documented[sid], ordinal, text)

    def shell(self, command: str) -> tuple[int, str]:
        """Run one command (its stdin is empty); its exit code and what it printed."""
        assert self.bash.stdin is not None and self.bash.stdout is not None
        # `$?` is the previous command's exit code, as in a terminal.
        script = (
            f"{{ (exit $_doc_rc); {command}\n}} </dev/null; _doc_rc=$?; "
            f"printf '\\n{_END}%d{_END}\\n' $_doc_rc\n"
        )
        self.bash.stdin.write(script.encode())
        self.bash.stdin.flush()
        received = b""
        ending = re.compile(rb"\n" + _END.encode() + rb"(\d+)" + _END.encode() + rb"\n$")
        deadline = time.monotonic() + TIMEOUT
        while not (found := ending.search(received)):
            ready, _, _ = select.select([self.bash.stdout], [], [], deadline - time.monotonic())
            chunk = os.read(self.bash.stdout.fileno(), 65536) if ready else b""
            if not chunk:
                text = received.decode("utf-8", "replace")
                raise AssertionError(f"the shell stopped or timed out running {command!r}:\n{text}")
            received += chunk
        self.learn_ids()
        output = received[: found.start()].decode("utf-8", "replace")
        self.produced.update(STORED_ID.findall(output))
        return int(found.group(1)), self.as_documented(output)

    def python(self, example: Example) -> tuple[int, str]:
        ran = subprocess.run(
            [sys.executable, "-c", example.body],
            cwd=self.home,
            env=self.env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            timeout=TIMEOUT,
            check=False,
        )
        self.learn_ids()
        self.produced.update(STORED_ID.findall(ran.stdout))
        return ran.returncode, self.as_documented(ran.stdout)


_END = "\x1edoc-example-end\x1e"


def _run(session: Session, example: Example) -> None:
    if example.language == "python":
        if (why := unportable(example.body, session.produced)) is not None:
            pytest.fail(
                f"{example.where}: the Python example cannot run as written: {why}", pytrace=False
            )
        code, output = session.python(example)
        if code != 0:
            pytest.fail(f"{example.where}: the Python example failed:\n{output}", pytrace=False)
        return
    for index, command in enumerate(example.commands):
        where = f"{example.name}:{command.line}: {command.text}"
        if (why := unportable(command.text, session.produced)) is not None:
            pytest.fail(f"{where}\ncannot run as written: {why}", pytrace=False)
        code, output = session.shell(command.text)
        following = example.commands[index + 1 : index + 2]
        states_exit = example.language == "console" and _is_exit_check(following)
        if code != 0 and not states_exit:
            pytest.fail(f"{where}\nexited with {code}:\n{output}", pytrace=False)
        if command.compare and (difference := mismatch(command.output, output)) is not None:
            pytest.fail(f"{where}\n{difference}", pytrace=False)


def _is_exit_check(commands: list[Command]) -> bool:
    return bool(commands) and commands[0].text.strip() == "echo $?"


@pytest.mark.parametrize("page", PAGES, ids=[_name(page) for page in PAGES])
def test_examples_run(page: Path, tmp_path: Path) -> None:
    session = Session(tmp_path)
    try:
        for example in examples(page, _name(page)):
            if example.skipped is None:
                _run(session, example)
    finally:
        session.close()


NOT_RUN = [example for page in PAGES for example in examples(page, _name(page)) if example.skipped]


@pytest.mark.parametrize("example", NOT_RUN, ids=[example.where for example in NOT_RUN])
def test_examples_not_run(example: Example) -> None:
    """Listed among the skipped tests of every run, with the reason the page gives; a reader
    can still paste its commands, so they too name only what the reader has (the ids the
    block's own outputs show, and placeholders)."""
    shown: set[str] = set()
    for command in example.commands or [Command(example.line, example.body)]:
        if (why := unportable(command.text, shown)) is not None:
            pytest.fail(f"{example.name}:{command.line}: {command.text}\n{why}", pytrace=False)
        shown.update(STORED_ID.findall("\n".join(command.output)))
    pytest.skip(f"{example.where}: not run: {example.skipped}")


def test_every_page_of_the_manual_is_in_the_navigation() -> None:
    docs = REPO_ROOT / "docs"
    on_disk = set(docs.rglob("*.md"))
    assert on_disk == set(PAGES[1:])


@pytest.mark.parametrize(
    ("command", "problem"),
    [
        ("lantern source show file:///home/ada/notes/release.md", "names /home/ada"),
        ("lantern chunk show chk_4dc5b236f1657f17 --context 1", "names chk_4dc5b236f1657f17"),
        ("lantern source remove src_9f68a3274a855261", "names src_9f68a3274a855261"),
        ("lantern memory history mem_5757c89809963789", "names mem_5757c89809963789"),
        ("lantern memory history mem_5757c89809963788", None),
        ("lantern source show file://$HOME/notes/release.md", None),
        ('lantern chunk show "$chunk" --context 1', None),
        ("lantern chunk show chk_0123456789abcdef", None),
        ("lantern memory show mem_00000000000000ff", None),
    ],
)
def test_a_command_names_only_what_a_reader_has(command: str, problem: str | None) -> None:
    produced = {"mem_5757c89809963788"}
    why = unportable(command, produced)
    if problem is None:
        assert why is None
    else:
        assert why is not None and problem in why


def test_commands_run_as_written_and_only_outputs_read_as_documented(tmp_path: Path) -> None:
    session = Session(tmp_path)
    try:
        code, _ = session.shell(
            "mkdir -p ~/notes && printf '# Notes\\n\\nRoll back.\\n' > ~/notes/a.md"
            " && lantern ingest -q ~/notes"
        )
        assert code == 0
        code, shown = session.shell("lantern search roll --ids")
        # The page shows the id the chunk has under /home/ada; this machine's is another.
        documented = shown.strip()
        assert code == 0 and documented in session.to_doc.values()
        assert documented not in session.produced and len(session.produced) == 1
        code, output = session.shell(f"lantern chunk show {documented}")
        assert code == 1 and f"no chunk with id '{documented}'" in output
        code, output = session.shell(
            'chunk=$(lantern search roll --ids); lantern chunk show "$chunk"'
        )
        assert code == 0 and f"{DOC_HOME}/notes/a.md" in output
        assert session.shell("echo ~")[1] == f"{DOC_HOME}\n"
    finally:
        session.close()
