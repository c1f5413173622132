"""The web view in a real headless browser: the real `lantern ui` process, Debian's chromium.

One browser for the module; each test starts its own view on its own store. What a test client
cannot show is checked here: that the browser runs no script of a hostile store, reports no
Content-Security-Policy violation, lays every page out within the window's width, and follows
the token from the printed URL to a cookie.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from lantern.api import Lantern
from tests.ui_helpers import browser_or_skip, serve
from tests.ui_stores import build_demo_store, build_hostile_store


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    driver = browser_or_skip()
    driver.set_page_load_timeout(60)
    try:
        yield driver
    finally:
        driver.quit()


def _problems(driver: Any) -> list[str]:
    """What the browser complained about since the last call: errors and CSP violations."""
    return [
        entry["message"]
        for entry in driver.get_log("browser")
        if entry["level"] == "SEVERE" or "Content Security Policy" in entry["message"]
    ]


def _within_width(driver: Any) -> bool:
    return bool(
        driver.execute_script(
            "return document.documentElement.scrollWidth <= window.innerWidth + 1"
        )
    )


def _no_alert(driver: Any) -> bool:
    from selenium.common.exceptions import NoAlertPresentException

    try:
        driver.switch_to.alert  # noqa: B018 - raises when there is none
    except NoAlertPresentException:
        return True
    return False


def _follow(driver: Any, element: Any) -> None:
    """Click a link or a submit button and wait for the next page: a click returns before the
    browser has left the current one, whose elements would otherwise still be found."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions
    from selenium.webdriver.support.wait import WebDriverWait

    leaving = driver.find_element(By.TAG_NAME, "html")
    element.click()
    WebDriverWait(driver, 10).until(expected_conditions.staleness_of(leaving))


def test_a_person_browses_the_demonstration_store(browser: Any, tmp_path: Path) -> None:
    from selenium.webdriver.common.by import By

    db = tmp_path / "demo.db"
    ids = build_demo_store(db)
    with serve(db) as view:
        browser.get(view.url)
        # The token in the URL became a cookie; the address no longer shows it.
        assert browser.current_url == view.base + "/"
        assert view.token not in browser.current_url
        assert browser.find_element(By.TAG_NAME, "h1").text == "Overview"
        assert browser.find_element(By.CSS_SELECTOR, ".card .big").text == "9"
        # The list, two records a page, followed to its end by the "Next page" links.
        browser.get(view.base + "/memory?status=all&limit=2")
        seen: list[str] = []
        while True:
            seen += [a.text for a in browser.find_elements(By.CSS_SELECTOR, "td.id a")]
            following = browser.find_elements(By.CSS_SELECTOR, "a[rel=next]")
            if not following:
                break
            _follow(browser, following[0])
        with Lantern.open(db, read_only=True, create=False) as lt:
            assert seen == [record.id for record in lt.memory.list(status="all", limit=100)]
        # A filter from the form: one kind ticked.
        browser.get(view.base + "/memory")
        browser.find_element(By.CSS_SELECTOR, "input[name=kind][value=constraint]").click()
        _follow(browser, browser.find_element(By.CSS_SELECTOR, "form.filters button[type=submit]"))
        assert [a.text for a in browser.find_elements(By.CSS_SELECTOR, "td.id a")] == [
            ids["deploy"]
        ]
        assert "--kind constraint" in browser.find_element(By.CSS_SELECTOR, "code.cli").text
        # A record, its chain, and the chunk it cites marked inside its source.
        _follow(browser, browser.find_element(By.LINK_TEXT, ids["deploy"]))
        assert browser.find_element(By.TAG_NAME, "h1").text == f"Memory {ids['deploy']}"
        _follow(browser, browser.find_element(By.PARTIAL_LINK_TEXT, "chunk #0"))
        marked = browser.find_element(By.CSS_SELECTOR, "mark#chunk").text
        assert marked.startswith("# Release checklist")
        # A search, with its ranks.
        browser.get(view.base + "/memory/search?q=where+is+the+staging+server&status=all")
        headers = [th.text for th in browser.find_elements(By.CSS_SELECTOR, "table.hits th")]
        assert headers[:3] == ["score", "mode", "keyword_rank"]
        assert {"semantic_rank", "similarity", "relevance", "status_rank"} <= set(headers)
        # The file:// source is shown, not linked.
        browser.get(view.base + "/sources")
        uris = browser.find_elements(By.CSS_SELECTOR, "span.uri")
        assert any(u.text.startswith("file:///home/ada/") for u in uris)
        assert not browser.find_elements(By.CSS_SELECTOR, "a[href^='file:']")
        assert _within_width(browser)
        assert _problems(browser) == []


def test_a_hostile_store_runs_no_script_and_breaks_no_layout(browser: Any, tmp_path: Path) -> None:
    from selenium.webdriver.common.by import By

    db = tmp_path / "hostile.db"
    ids = build_hostile_store(db)
    with serve(db) as view:
        browser.get(view.url)
        pages = [
            "/",
            "/memory?status=all&explain=1",
            f"/memory/{ids['record_0']}",
            f"/memory/{ids['record_1']}",
            f"/memory/{ids['zero_width']}",
            "/memory/search?q=window+pwned&status=all",
            "/changes",
            "/sources",
            f"/sources/{ids['source']}",
            f"/chunks/{ids['wide_chunk']}",
            "/search?q=window+pwned+script",
        ]
        for path in pages:
            browser.get(view.base + path)
            assert browser.execute_script("return typeof window.__pwned") == "undefined", path
            assert _no_alert(browser), path
            assert browser.find_elements(By.TAG_NAME, "script") == [], path
            assert _within_width(browser), path
            # The page's own structure stands: the navigation, the heading, the footer.
            assert browser.find_element(By.CSS_SELECTOR, "header.top nav").is_displayed(), path
            assert browser.find_element(By.TAG_NAME, "footer").is_displayed(), path
            assert _problems(browser) == [], path
        # What was stored is shown as text: the markup can be read on the page.
        browser.get(view.base + f"/memory/{ids['record_0']}")
        shown = browser.find_element(By.CSS_SELECTOR, ".content-box").text
        assert "<script>window.__pwned = 'script'</script>" in shown
        assert "U+202E" in shown


def test_a_wrong_or_missing_token_is_refused(browser: Any, tmp_path: Path) -> None:
    from selenium.webdriver.common.by import By

    db = tmp_path / "s.db"
    Lantern.open(db).close()
    with serve(db) as view:
        browser.get(view.base + "/")
        assert browser.find_element(By.TAG_NAME, "body").text.startswith("403 Forbidden")
        browser.get(view.base + "/memory?token=" + "x" * len(view.token))
        assert browser.find_element(By.TAG_NAME, "body").text.startswith("403 Forbidden")
        browser.get(view.url)
        assert browser.find_element(By.TAG_NAME, "h1").text == "Overview"
        assert "No records yet." in browser.find_element(By.TAG_NAME, "main").text
