"""The chromium the browser tests drive through Playwright (Debian's, at ``/usr/bin/chromium``), where their
screenshots go, and the steps several of them share on the app's page."""

from __future__ import annotations

from pathlib import Path

CHROMIUM = Path("/usr/bin/chromium")
ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts"
ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]


def untick_exclusions(page) -> None:
    """Turn off the three checkboxes the page ticks on load (the own-date cut-off, the query's own patent left
    out, one hit per family): these tests label a corpus drawing's own patent at #1 and compare with the
    plain lists."""
    untick_own_date(page)
    page.locator("#filters").get_by_text("Search filters").click()
    for elem in ("#f-exclude", "#f-family"):
        box = page.locator(f"{elem} input")
        page.wait_for_function("e => e.checked", arg=box.element_handle(), timeout=20_000)
        box.uncheck()


def untick_own_date(page) -> None:
    """Turn off the own-date cut-off the page ticks on load (one click, above the filter panel): for tests
    whose corpus drawing queries look for later patents too."""
    box = page.locator("#f-own input")
    page.wait_for_function("e => e.checked", arg=box.element_handle(), timeout=20_000)
    box.uncheck()


def wait_text(page, selector: str, text: str, timeout: int = 30_000) -> None:
    """Wait until the element ``selector`` shows ``text``; on a timeout, fail with what it shows instead."""
    try:
        page.locator(selector).get_by_text(text).wait_for(timeout=timeout)
    except Exception as err:  # noqa: BLE001 - the failure says what the page showed
        shown = page.locator(selector).all_inner_texts()
        raise AssertionError(f"{selector} never showed {text!r}; it shows {shown!r}") from err


def fill_mounted(page, selector: str, text: str, holds: str) -> None:
    """Type ``text`` into a text box that an accordion renders when opened: wait for the box to be shown and
    to hold ``holds`` (its value given by the server), type, and check the box keeps what was typed for half
    a second; if the server's value came back (CI saw it once, just after the box first showed: the opened
    accordion's box drawn again), type again, at most three times."""
    area = page.locator(selector)
    area.wait_for(state="visible", timeout=30_000)
    page.wait_for_function(
        "([s, t]) => document.querySelector(s).value.includes(t)", arg=[selector, holds], timeout=30_000
    )
    for _ in range(3):
        area.fill(text)
        page.wait_for_timeout(500)
        if area.input_value() == text:
            return
    raise AssertionError(f"{selector} does not keep what was typed; it holds {area.input_value()[:80]!r}")
