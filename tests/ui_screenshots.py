"""Take the screenshots of the web view that the manual shows (docs/ui.md).

    python -m tests.ui_screenshots docs/images/ui

It builds the demonstration store of tests/ui_stores.py in a temporary directory, runs the real
`lantern ui` on it, and photographs each main page in headless chromium.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

from tests.ui_helpers import browser_or_skip, full_page_png, serve
from tests.ui_stores import build_demo_store


def pages(ids: dict[str, str]) -> dict[str, str]:
    """The main pages, by the name of their screenshot."""
    return {
        "overview": "/",
        "memory-list": "/memory?status=all",
        "memory-record": f"/memory/{ids['moved']}",
        "memory-search": "/memory/search?q=where+is+the+staging+server&status=all",
        "sources": "/sources",
        "chunk": f"/chunks/{ids['chat_chunk']}",
        "evidence-search": "/search?q=which+branch+do+we+deploy+from",
    }


def main(target: Path) -> None:
    target.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as work:
        store = Path(work) / "lantern.db"
        ids = build_demo_store(store, spread=True)
        with serve(store) as running:
            driver = browser_or_skip()
            try:
                driver.get(running.url)
                for name, path in pages(ids).items():
                    driver.get(running.base + path)
                    full_page_png(driver, target / f"{name}.png", max_height=1600)
                    print(target / f"{name}.png")
            finally:
                driver.quit()


if __name__ == "__main__":
    main(Path(sys.argv[1] if len(sys.argv) > 1 else "docs/images/ui"))
