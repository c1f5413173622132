"""A command loads only what it needs: import time is most of a CLI call's cost.

Timing is the benchmark's job (bench/run.py, "process rows"); this pins the cause instead:
which heavy modules a common command pulls in.
"""

from __future__ import annotations

import gc
import json
from pathlib import Path

from lantern.loading import loading
from tests.helpers import python_output

_SCRIPT = """
import json, sys
from lantern.cli import cli
try:
    cli.main(["--db", sys.argv[1], *sys.argv[2:]], standalone_mode=False)
except SystemExit:
    pass
print(json.dumps(sorted(sys.modules)))
"""

# Needed only by migrations, the MCP server, PostgreSQL stores, evidence or whole-store work.
NOT_FOR_MEMORY = (
    "alembic",
    "mcp",
    "psycopg",
    "sqlalchemy.dialects.postgresql",
    "pathspec",
    "lantern.evidence",
    "lantern.cli.evidence",
    "lantern.cli.transfer",
    "lantern.maintenance",
    "lantern.transfer",
    "lantern.mcpserver",
    # Embeddings load only when vectors are asked for.
    "lantern.embeddings",
    *("numpy", "onnxruntime", "tokenizers"),
)
EMBEDDING_LIBRARIES = ("numpy", "onnxruntime", "tokenizers")


def _modules_after(tmp_path: Path, *args: str) -> set[str]:
    output = python_output(_SCRIPT, str(tmp_path / "store.db"), *args)
    return set(json.loads(output.splitlines()[-1]))


def test_memory_commands_load_no_migration_server_or_evidence_code(tmp_path: Path) -> None:
    _modules_after(tmp_path, "memory", "add", "--kind", "fact", "first")  # creates the store
    for args in (("memory", "list", "--json"), ("memory", "add", "--kind", "goal", "second")):
        loaded = _modules_after(tmp_path, *args)
        assert sorted(loaded & set(NOT_FOR_MEMORY)) == [], args


def test_searching_a_store_without_vectors_loads_no_embedding_code(tmp_path: Path) -> None:
    # The default mode is hybrid only where there are vectors: here it is any, and costs what
    # it did before (not even the registry of installed providers is read).
    _modules_after(tmp_path, "memory", "add", "--kind", "fact", "first")
    _modules_after(tmp_path, "ingest", "-", "--uri", "note:x")
    for args in (("memory", "search", "first"), ("search", "first")):
        loaded = _modules_after(tmp_path, *args)
        assert sorted(loaded & {*EMBEDDING_LIBRARIES, "lantern.embeddings"}) == [], args


def test_import_and_help_load_no_embedding_library() -> None:
    script = (
        "import json, sys\n"
        "import lantern\n"
        "from lantern.cli import cli\n"
        "try:\n"
        "    cli.main(['--help'], standalone_mode=False)\n"
        "except SystemExit:\n"
        "    pass\n"
        "print(json.dumps(sorted(sys.modules)))\n"
    )
    loaded = set(json.loads(python_output(script).splitlines()[-1]))
    assert sorted(loaded & {*EMBEDDING_LIBRARIES, "lantern.embeddings"}) == []


def test_the_embeddings_package_defers_its_libraries() -> None:
    # Choosing a provider and reading stored vectors' metadata must not cost numpy's import.
    script = (
        "import json, sys\n"
        "import lantern.embeddings.hashing, lantern.embeddings.minilm\n"
        "import lantern.embeddings.remote, lantern.embeddings.vectors\n"
        "from lantern.embeddings.registry import resolve_provider\n"
        "resolve_provider('minilm'), resolve_provider('hashing')\n"
        "print(json.dumps(sorted(sys.modules)))\n"
    )
    loaded = set(json.loads(python_output(script).splitlines()[-1]))
    assert sorted(loaded & set(EMBEDDING_LIBRARIES)) == []


def test_loading_pauses_the_collector_only_while_code_loads() -> None:
    assert gc.isenabled()
    with loading():
        assert not gc.isenabled()
    assert gc.isenabled()
    gc.disable()
    try:
        with loading():
            pass
        assert not gc.isenabled()  # a collector paused by someone else stays paused
    finally:
        gc.enable()


def test_commands_run_with_the_collector_on(tmp_path: Path) -> None:
    script = (
        "import gc, sys\n"
        "from lantern.cli import cli\n"
        "from lantern.cli import context\n"
        "opened = context.open_lantern\n"
        "def checked(*args, **kwargs):\n"
        "    lantern = opened(*args, **kwargs)\n"
        "    assert gc.isenabled(), 'the collector is paused while the command runs'\n"
        "    print('checked')\n"
        "    return lantern\n"
        "context.open_lantern = checked\n"
        "cli.main(['--db', sys.argv[1], 'memory', 'add', '--kind', 'fact', 'x'], "
        "standalone_mode=False)\n"
    )
    assert "checked" in python_output(script, str(tmp_path / "store.db"))
