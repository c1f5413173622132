"""Writer processes for the concurrency test: each prints one JSON line per acknowledged write.

    python -m tests.reliability.writers ROLE STORE COUNT TAG

Roles, all writing to one store at once:

* `api-memory`: `Lantern.memory.add`, and every fifth write an `update` of its previous record.
* `api-evidence`: `Lantern.evidence.ingest_text` of a source that chunks into several chunks.
* `cli`: the `lantern` command, run in this process for each write (`cli.main`), `memory add`
  and every fifth write `memory update --priority`: the CLI's parsing, store opening, error
  handling and rendering for each call, without paying an interpreter start per call.
* `cli-exec`: the installed `lantern` executable, a new process per call: `lantern import -`
  of a batch of 50 memory records (one transaction each).
* `mcp`: an MCP client (the SDK's, over stdio) of a `lantern mcp` server it starts:
  `lantern_memory_add`, and every fifth write `lantern_memory_update`.

An acknowledgement is printed only after the call returned successfully; every failure is
printed as an `error` line and counted, and the process goes on. The exit code is the number of
failures (capped at 100), so the test sees errors that never reached a JSON line too.
"""

from __future__ import annotations

import contextlib
import io
import json
import subprocess
import sys
from collections.abc import Iterator
from typing import Any

from lantern.api import Lantern
from lantern.errors import LanternError
from lantern.store.ids import memory_id
from tests.helpers import LANTERN_BIN

BATCH = 50
CREATED_AT = 1_800_000_000


def ack(**fields: Any) -> None:
    print(json.dumps(fields), flush=True)


def content(tag: str, n: int) -> str:
    return f"writer {tag} note {n}: concurrency keeps every word"


def api_memory(store: str, count: int, tag: str) -> int:
    failures = 0
    with Lantern.open(store) as lt:
        previous = None
        for n in range(count):
            try:
                if n % 5 == 4 and previous is not None:
                    record = lt.memory.update(previous, priority=n % 101)
                    ack(op="update", id=record.id, priority=record.priority)
                else:
                    record = lt.memory.add(kind="fact", scope=f"w:{tag}", content=content(tag, n))
                    previous = record.id
                    ack(op="add", id=record.id, priority=record.priority)
            except LanternError as exc:
                failures += 1
                ack(op="error", message=exc.message, code=exc.exit_code)
    return failures


def api_evidence(store: str, count: int, tag: str) -> int:
    failures = 0
    paragraphs = [f"## Part {p}\n\n" + f"paragraph {p} of writer {tag} " * 30 for p in range(4)]
    body = "# Notes\n\n" + "\n\n".join(paragraphs)
    with Lantern.open(store) as lt:
        for n in range(count):
            uri = f"tool://writer/{tag}/{n}"
            try:
                result = lt.evidence.ingest_text(uri, f"{body}\n\nserial {n}\n", kind="markdown")
                ack(op="ingest", uri=uri, id=result.source.id, chunks=result.source.chunk_count)
            except LanternError as exc:
                failures += 1
                ack(op="error", message=exc.message, code=exc.exit_code)
    return failures


@contextlib.contextmanager
def _captured() -> Iterator[tuple[io.StringIO, io.StringIO]]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        yield out, err


def cli(store: str, count: int, tag: str) -> int:
    from lantern.cli import cli as command

    failures = 0
    previous = None
    for n in range(count):
        if n % 5 == 4 and previous is not None:
            args = ["memory", "update", previous, "--priority", str(n % 101), "--json"]
        else:
            args = ["memory", "add", "--kind", "fact", "--scope", f"w:{tag}", "--json"]
            args.append(content(tag, n))
        with _captured() as (out, err):
            try:
                command.main(["--db", store, *args], prog_name="lantern", standalone_mode=False)
                code = 0
            except SystemExit as exc:
                code = int(exc.code or 0)
        if code != 0:
            failures += 1
            ack(op="error", message=err.getvalue().strip(), code=code)
            continue
        record = json.loads(out.getvalue())
        if args[1] == "add":
            previous = record["id"]
        ack(op=args[1], id=record["id"], priority=record["priority"])
    return failures


def cli_exec(store: str, count: int, tag: str) -> int:
    failures = 0
    for start in range(0, count, BATCH):
        lines = [json.dumps({"type": "lantern_export", "format": 1})]
        ids = []
        for n in range(start, min(start + BATCH, count)):
            text = content(tag, n)
            record_id = memory_id(f"w:{tag}", "fact", text)
            ids.append(record_id)
            lines.append(
                json.dumps(
                    {
                        "type": "memory",
                        "id": record_id,
                        "kind": "fact",
                        "content": text,
                        "scope": f"w:{tag}",
                        "priority": 50,
                        "urgency": 0,
                        "confidence": 1.0,
                        "status": "active",
                        "created_at": CREATED_AT,
                        "updated_at": CREATED_AT,
                        "expires_at": None,
                        "supersedes_id": None,
                        "source_refs": [],
                    }
                )
            )
        done = subprocess.run(
            [str(LANTERN_BIN), "--db", store, "import", "-", "--json"],
            input="\n".join(lines) + "\n",
            capture_output=True,
            text=True,
            check=False,
            timeout=300,
        )
        if done.returncode != 0:
            failures += 1
            ack(op="error", message=done.stderr.strip(), code=done.returncode)
            continue
        added = json.loads(done.stdout)["added"]["memory"]
        ack(op="import", ids=ids, added=added)
    return failures


def mcp(store: str, count: int, tag: str) -> int:
    from tests.reliability.mcp_client import mcp_server, text_of

    failures = 0
    previous = None
    with mcp_server(store) as server:
        for n in range(count):
            if n % 5 == 4 and previous is not None:
                op, arguments = "update", {"id": previous, "priority": n % 101}
            else:
                op = "add"
                arguments = {"kind": "fact", "scope": f"w:{tag}", "content": content(tag, n)}
            result = server.call(f"lantern_memory_{op}", arguments)
            if result.is_error or result.structured_content is None:
                failures += 1
                ack(op="error", message=" ".join(text_of(result)), code=None)
                continue
            record = result.structured_content
            if op == "add":
                previous = record["id"]
            ack(op=op, id=record["id"], priority=record["priority"])
        log = server.server_log().strip()
    if log:
        failures += 1
        ack(op="error", message=f"server log: {log[:500]}", code=None)
    return failures


ROLES = {
    "api-memory": api_memory,
    "api-evidence": api_evidence,
    "cli": cli,
    "cli-exec": cli_exec,
    "mcp": mcp,
}


def main() -> None:
    role, store, count, tag = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
    sys.exit(min(ROLES[role](store, count, tag), 100))


if __name__ == "__main__":
    main()
