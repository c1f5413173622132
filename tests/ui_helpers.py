"""Running the web view for tests: the real `lantern ui` process, and a headless browser.

The browser is Debian's chromium, driven through its chromedriver by Selenium; nothing is
downloaded at run time. Where chromium is missing the browser tests are skipped with the
reason, except in CI (CI=true), where .ci/run installs it and its absence fails them.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

from tests.helpers import LANTERN_BIN

CHROMIUM = Path("/usr/bin/chromium")
CHROMEDRIVER = Path("/usr/bin/chromedriver")


@dataclass(frozen=True)
class Running:
    """A `lantern ui` process: the URL it printed (with its token), and its address."""

    url: str
    base: str
    token: str
    process: subprocess.Popen[str]


@contextmanager
def serve(db: Path | str, *args: str, timeout: float = 30) -> Iterator[Running]:
    """`lantern --db DB ui --port 0 ARGS`, until the block ends; the URL is its first line."""
    process = subprocess.Popen(
        [str(LANTERN_BIN), "--db", str(db), "ui", "--port", "0", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ},
    )
    try:
        assert process.stdout is not None
        deadline = time.monotonic() + timeout
        line = process.stdout.readline().strip()
        if not line.startswith("http://") or time.monotonic() > deadline:
            process.kill()
            _, errors = process.communicate(timeout=10)
            raise AssertionError(f"lantern ui did not start: {line!r} {errors}")
        parts = urlsplit(line)
        token = parts.query.removeprefix("token=")
        yield Running(line, f"{parts.scheme}://{parts.netloc}", token, process)
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=10)
        for stream in (process.stdout, process.stderr):
            if stream is not None:
                stream.close()


def browser_or_skip() -> Any:
    """A headless chromium under Selenium, or a skip (a failure in CI) saying what is missing."""
    missing = [str(p) for p in (CHROMIUM, CHROMEDRIVER) if not p.exists()]
    if missing or shutil.which("chromium") is None:
        reason = (
            f"the browser tests need Debian's chromium and chromium-driver ({', '.join(missing)} "
            "missing): apt-get install chromium chromium-driver"
        )
        if os.environ.get("CI"):
            pytest.fail(reason)
        pytest.skip(reason)
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = str(CHROMIUM)
    for argument in (
        "--headless=new",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--window-size=1280,900",
        "--hide-scrollbars",
        "--force-device-scale-factor=1",
        "--lang=en-US",
    ):
        options.add_argument(argument)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    return webdriver.Chrome(service=Service(str(CHROMEDRIVER)), options=options)


def full_page_png(driver: Any, path: Path, width: int = 1280, max_height: int = 2400) -> None:
    """A screenshot of the whole page (up to `max_height` pixels), as a person scrolls it."""
    height = driver.execute_script("return document.documentElement.scrollHeight")
    height = min(max(int(height), 400), max_height)
    driver.execute_cdp_cmd(
        "Emulation.setDeviceMetricsOverride",
        {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": False},
    )
    try:
        path.write_bytes(driver.get_screenshot_as_png())
    finally:
        driver.execute_cdp_cmd("Emulation.clearDeviceMetricsOverride", {})
