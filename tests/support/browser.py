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
    """Turn off the two checkboxes the page ticks on load (the query's own patent left out, one hit per
    family): these tests label a corpus drawing's own patent at #1 and compare with the plain lists."""
    page.locator("#filters").get_by_text("Search filters").click()
    for elem in ("#f-exclude", "#f-family"):
        box = page.locator(f"{elem} input")
        page.wait_for_function("e => e.checked", arg=box.element_handle(), timeout=20_000)
        box.uncheck()
