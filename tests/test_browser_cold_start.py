"""A cold start as the examiner sees it, on the 20 real Red Book patents (the corpus built with the project's
CLI, the real models, the app served with its background warm-up and driven in Debian's chromium): while
the indexes build, the line under the heading shows each build with a progress bar and the time left; a
drawing search sent during the build of its model's index waits and answers once it is built (it was
refused before, "search again in a moment"); a text search sent before the dense index is built answers at
once with BM25's list, the cursor on it, and says what follows; once the dense index is built a text search
fills every list.

The two builds are held at their first batch (the real encoders, gated) so that the page is seen while they
run, whatever the machine's speed. The cold start's timings on the full real corpus are measured by
``bench/bench_cold_start.py`` (docs/benchmarks.md). Screenshots go to ``test-artifacts/cold-*.png``.

Tests: patent_demo/builds.py, patent_demo/workbench.py, patent_demo/search/, patent_demo/ui/handlers.py
"""

from __future__ import annotations

import threading

import pytest

from patent_demo.cli.main import main as cli
from patent_demo.labels.store import LabelStore
from patent_demo.registry import default_drawing_encoder
from patent_demo.search.text import BM25_ONLY
from patent_demo.text.dense import default_text_encoder
from patent_demo.workbench import Workbench, WorkbenchConfig
from tests.conftest import live_app, require_shared
from tests.support.browser import ARTIFACTS, wait_text

pytestmark = [pytest.mark.browser, pytest.mark.slow]
QUERY = "USD0913174-20210316"


class Gated:
    """An encoder whose ``encode`` waits for ``gate`` (then encodes as the real one does)."""

    def __init__(self, inner, gate: threading.Event) -> None:
        self.inner, self.gate = inner, gate

    def __getattr__(self, name):
        return getattr(self.inner, name)

    def encode(self, *args, **kwargs):
        self.gate.wait(120)
        return self.inner.encode(*args, **kwargs)


def test_a_cold_start_shows_its_builds_and_answers_drawings_and_texts_as_soon_as_it_can(browser, tmp_path):
    src = require_shared("impact_design_patent_samples") / "patents"
    assert (
        cli(
            ["corpus", "build", "--source", "redbook", "--out", str(tmp_path / "corpus"), str(src), "--quiet"]
        )
        == 0
    )
    drawings, texts = threading.Event(), threading.Event()

    def text_encoder():
        enc, hybrid = default_text_encoder(())
        return Gated(enc, texts), hybrid

    wb = Workbench(
        WorkbenchConfig(cache_dir=tmp_path / "cache", corpus=tmp_path / "corpus", checkpoint_dirs=()),
        drawing_encoder_factory=lambda spec: Gated(default_drawing_encoder(spec), drawings),
        text_encoder_factory=text_encoder,
        progress=False,
    )
    store = LabelStore(tmp_path / "labels.sqlite")
    warm = wb.warm_up_background()
    try:
        with live_app(wb, store) as url:
            page = browser.new_page(viewport={"width": 1366, "height": 900})
            page.goto(url)
            page.locator("#annotator textarea, #annotator input").first.fill("cold")
            status = page.locator("#index-status")
            status.locator("progress").first.wait_for(timeout=30_000)
            line = status.inner_text()
            assert (
                "embedding 106 drawings with" in line
                and "0 of 106 drawings · 0 % · estimating the time left" in line
            ), line
            assert "then the dense text index" in line, line
            page.screenshot(path=str(ARTIFACTS / "cold-building.png"), full_page=True)

            # a drawing search sent while its index builds waits for it, then answers
            page.locator("#d-file input[type=file]").set_input_files(str(src / QUERY / f"{QUERY}-D00002.TIF"))
            page.locator("#d-query img").wait_for(timeout=30_000)
            page.locator("#d-search").click()
            page.wait_for_timeout(2_000)
            assert "results with" not in page.locator("#d-status").inner_text()  # still waiting, not refused
            assert "⚠️" not in page.locator("#d-status").inner_text()
            drawings.set()
            wait_text(page, "#d-status", "results with", 120_000)
            assert page.locator("#d-gallery .thumbnail-item").count() == 10

            # a text search before the dense index is built: BM25 alone, at once, and what follows
            page.get_by_role("tab", name="Text search").click()
            page.locator("#t-text textarea").fill("a shoe with a sole and a heel")
            page.locator("#t-search").click()
            t_status = page.locator("#t-status")
            t_status.get_by_text(BM25_ONLY).wait_for(timeout=60_000)
            said = t_status.inner_text()
            assert said.startswith("BM25 found ") and "the dense text index is being built" in said, said
            assert "re-ranked" not in said
            wait_text(page, "#l-cursor", "bm25 #1 · ")  # the cursor on BM25
            page.screenshot(path=str(ARTIFACTS / "cold-bm25-first.png"), full_page=True)

            texts.set()  # the dense index builds; then every list
            page.wait_for_function(
                "() => !document.querySelector('#index-status').innerText.includes('patent texts')"
                " && !document.querySelector('#index-status').innerText.includes('the dense text index')",
                timeout=180_000,
            )
            page.locator("#t-search").click()
            t_status.get_by_text("re-ranked the hybrid top").wait_for(timeout=120_000)
            assert BM25_ONLY not in t_status.inner_text()
            page.close()
    finally:
        drawings.set()
        texts.set()
        warm.join(300)
        store.close()
