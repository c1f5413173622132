"""What is particular to PostgreSQL stores: the driver, the server, shared upgrades."""

from __future__ import annotations

import json
import subprocess
import sys

from lantern.api import Lantern
from lantern.store import migrations
from tests.helpers import extra_hint, lantern_process


def test_a_missing_driver_says_what_to_install() -> None:
    script = (
        "import sys\n"
        "sys.modules['psycopg'] = None\n"
        "from lantern.cli import main\n"
        "sys.argv = ['lantern', '--db', 'postgresql+psycopg://u@127.0.0.1/db', 'memory', 'list']\n"
        "main()\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=False, timeout=60
    )
    assert result.returncode == 1
    assert result.stderr.strip() == (
        f"Error: PostgreSQL support needs the psycopg driver: {extra_hint('postgres')}"
    )


def test_an_unreachable_server_is_one_line_with_the_password_hidden() -> None:
    result = lantern_process(
        "--db", "postgresql+psycopg://me:s3cret@127.0.0.1:1/lantern", "memory", "list"
    )
    assert result.returncode == 9  # store_unreachable: worth retrying, unlike a corrupt store
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: cannot connect to the store at ")
    assert "s3cret" not in result.stderr and "***" in result.stderr


def test_status_of_a_postgres_store(postgres_url: str) -> None:
    empty = lantern_process("--db", postgres_url, "db", "status", "--json")
    assert empty.returncode == 8 and "(it is empty)" in empty.stderr
    assert lantern_process("--db", postgres_url, "db", "upgrade").returncode == 0
    result = lantern_process("--db", postgres_url, "db", "status", "--json")
    assert result.returncode == 0, result.stderr
    status = json.loads(result.stdout)
    assert status["path"] is None and status["url"].startswith("postgresql+psycopg://")
    assert status["revision"] == migrations.HEAD and status["needs_upgrade"] is False
    assert isinstance(status["size_bytes"], int) and status["size_bytes"] > 0


def test_processes_creating_one_store_at_once_take_turns(store_url: str) -> None:
    """The advisory lock (PostgreSQL) or the write lock (SQLite) serialises concurrent upgrades."""
    script = "import sys\nfrom lantern import Lantern\nLantern.open(sys.argv[1]).close()\n"
    workers = [
        subprocess.Popen(
            [sys.executable, "-c", script, store_url], stderr=subprocess.PIPE, text=True
        )
        for _ in range(4)
    ]
    errors = [worker.communicate(timeout=120)[1] for worker in workers]
    assert [worker.returncode for worker in workers] == [0, 0, 0, 0], errors
    with Lantern.open(store_url) as lt:
        assert lt.status().revision == migrations.HEAD
