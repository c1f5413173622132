"""The web view on a store of 100,000 records: how long its pages take, over real HTTP.

    python bench/ui_bench.py                # 100k records, about a minute
    python bench/ui_bench.py --records 10000

It builds the store of bench/run.py (the same generator, so the same data), starts the real
`lantern ui --port 0` on it, and times whole HTTP requests on the loopback: the first request
after the view started (cold: statements compiled, pages of the file read for the first time),
then the median and 95th percentile of later ones. Beside the list, the floor: the same first
page read by raw `sqlite3`. Nothing here asserts a time: the table is the result.
"""

from __future__ import annotations

import argparse
import http.client
import os
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from urllib.parse import urlsplit

from common import build_memory_store, percentiles

LANTERN = Path(sys.executable).with_name("lantern")
FIRST_PAGE_SQL = (
    "SELECT * FROM memory_records WHERE status = 'active' "
    "AND (expires_at IS NULL OR expires_at > ?) "
    "ORDER BY status, priority DESC, urgency DESC, updated_at DESC, id LIMIT 51"
)


def fetch(netloc: str, token: str, path: str) -> float:
    """Milliseconds of one GET, from connecting to the last byte of the body."""
    start = time.perf_counter()
    connection = http.client.HTTPConnection(netloc, timeout=60)
    connection.request("GET", path, headers={"Authorization": f"Bearer {token}"})
    response = connection.getresponse()
    body = response.read()
    connection.close()
    if response.status != 200:
        raise SystemExit(f"{path}: {response.status} {body[:200]!r}")
    return (time.perf_counter() - start) * 1000


def raw_first_page(path: Path) -> float:
    conn = sqlite3.connect(path)
    try:
        start = time.perf_counter()
        conn.execute(FIRST_PAGE_SQL, (int(time.time()),)).fetchall()
        return (time.perf_counter() - start) * 1000
    finally:
        conn.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=20)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as work:
        store = Path(work) / "lantern.db"
        started = time.perf_counter()
        build_memory_store(store, args.records)
        print(f"built {args.records} records in {time.perf_counter() - started:.1f} s")
        started = time.perf_counter()
        process = subprocess.Popen(
            [str(LANTERN), "--db", str(store), "ui", "--port", "0"],
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
            env={**os.environ},
        )
        try:
            assert process.stdout is not None
            url = urlsplit(process.stdout.readline().strip())
            startup = (time.perf_counter() - started) * 1000
            token = url.query.removeprefix("token=")
            some_id = sqlite3.connect(store).execute("SELECT id FROM memory_records").fetchone()[0]
            pages = {
                "memory list, first page (50)": "/memory",
                "memory list, first page as JSON": "/memory?format=json",
                "overview": "/",
                "memory search (any)": "/memory/search?q=deploy+branch+review",
                "changes, first page": "/changes",
                "a record page": f"/memory/{some_id}",
            }
            cold = {name: fetch(url.netloc, token, path) for name, path in pages.items()}
            rows = []
            for name, path in pages.items():
                samples = [fetch(url.netloc, token, path) for _ in range(args.repeat)]
                rows.append((name, cold[name], *percentiles(samples)))
        finally:
            process.terminate()
            process.wait(timeout=30)
        floor = percentiles([raw_first_page(store) for _ in range(args.repeat)])
    print(f"\nweb view on {args.records:,} records: whole HTTP requests on the loopback (ms)")
    print(f"{'page':<34} {'first':>9} {'p50':>9} {'p95':>9}")
    for name, first, p50, p95 in rows:
        print(f"{name:<34} {first:>9.1f} {p50:>9.1f} {p95:>9.1f}")
    print(f"{'raw sqlite3: the first page query':<34} {'':>9} {floor[0]:>9.2f} {floor[1]:>9.2f}")
    print(f"\nstart to URL printed: {startup:.0f} ms")


if __name__ == "__main__":
    main()
