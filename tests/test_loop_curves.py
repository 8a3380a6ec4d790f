"""The examiner loop end to end on real USPC drawings (``../shared``): the simulated examiner works the real app
(a child process) through its API, ``train.loop.curves --quick`` draws three points of the learning curve
from its labels, ``train.retrain`` turns the same store into a retrained head checkpoint with its lineage,
and the app's Training tab, in Chromium, shows the curve and the retrained model beside its parent.

Tests: train/loop/curves.py, train/retrain.py, patent_demo/labels/loop.py, patent_demo/ui/handlers.py
"""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys

import pytest

from patent_demo.cli.main import main as cli
from patent_demo.data.corpus import Corpus
from patent_demo.labels import loop
from patent_demo.labels.store import LabelStore
from tests.conftest import REPO_ROOT, live_app, require_shared
from tests.support.browser import ARTIFACTS

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def quick(tmp_path_factory):
    """(tmp, corpus, the quick run's JSON) of ``train.loop.curves --quick --simulate`` on the USPC corpus."""
    src = require_shared("design_patents_2007_uspc_macaulay")
    tmp = tmp_path_factory.mktemp("loop")
    assert (
        cli(
            [
                "corpus",
                "build",
                "--source",
                "images",
                str(src),
                "--out",
                str(tmp / "uspc"),
                "--splits",
                str(REPO_ROOT / "splits" / "uspc2007.json"),
                "--quiet",
            ]
        )
        == 0
    )
    cmd = [
        sys.executable,
        "-m",
        "train.loop.curves",
        "--corpus",
        str(tmp / "uspc"),
        "--labels-dir",
        str(tmp / "labels"),
        "--cache-dir",
        str(tmp / "cache"),
        "--simulate",
        "--quick",
        "--threads",
        "2",
        "--out",
        str(tmp / "loop.json"),
    ]
    subprocess.run(cmd, cwd=REPO_ROOT, check=True, timeout=900)
    return tmp, Corpus.load(tmp / "uspc", validate=False), json.loads((tmp / "loop.json").read_text())


def test_the_examiner_labels_training_queries_only_through_the_app(quick):
    tmp, corpus, result = quick
    rows = (
        sqlite3.connect(tmp / "labels" / "labels-topk.sqlite")
        .execute(
            "SELECT annotator, query_patent_id, candidate_id, label, list_name FROM labels WHERE undone = 0"
        )
        .fetchall()
    )
    train = set(corpus.splits["train"])
    queries = {r[1] for r in rows}
    assert len(queries) == 25 and queries <= train  # max(quick budgets) training queries, nothing else
    assert len(rows) == 250 and {r[0] for r in rows} == {"sim-topk"} and {r[4] for r in rows} == {"hmcl"}
    assert all(r[1] != r[2] for r in rows)  # the query's own patent is never shown (the page's exclusion)
    sim = result["strategies"]["topk"]["simulation"]
    assert sim["queries"] == 25 and sim["judgements"] == 250 and sum(sim["grades"].values()) == 250


def test_quick_curve_points_against_zero_shot(quick):
    _, _, result = quick
    points = result["strategies"]["topk"]["points"]
    assert [p["budget"] for p in points] == [0, 10, 25]
    zero = points[0]
    assert zero["test"] == {k: result["zero_shot"]["test"][k] for k in ("subclass_map", "main_map")}
    assert zero["vs_zero_shot"]["subclass_map"]["diff"] == 0.0
    assert points[1]["judgements"] == 100 and points[2]["judgements"] == 250
    for p in points[1:]:  # val never chooses worse than the untrained head's best trunk mix
        assert 0.0 <= p["trunk_mix"] <= 1.0
        assert p["pairs_used"] <= p["judgements"]
        for k in ("subclass_map", "main_map"):
            ci = p["vs_zero_shot"][k]
            assert ci["low"] <= ci["diff"] <= ci["high"]
    assert result["setup"]["splits"] == {"train": 600, "val": 200, "test": 200}
    assert len(result["ceiling"]["runs"]) == 1
    # the page renders from this JSON without a gap
    md = loop.summary_markdown(result) + loop.curve_markdown(result)
    assert "fully supervised" in md and "nan" not in md


@pytest.fixture(scope="module")
def retrained(quick):
    """A head retrained from the quick run's label store by ``train.retrain``, beside the shipped parent."""
    tmp, corpus, _ = quick
    out = tmp / "ck" / "hmcl-uspc-retrained"
    cmd = [
        sys.executable,
        "-m",
        "train.retrain",
        "--labels",
        str(tmp / "labels" / "labels-topk.sqlite"),
        "--from",
        str(REPO_ROOT / "checkpoints" / "hmcl-uspc"),
        "--corpus",
        str(tmp / "uspc"),
        "--cache-dir",
        str(tmp / "cache"),
        "--out",
        str(out),
        "--views",
        "1",
        "--head-steps",
        "50",
        "--threads",
        "2",
        "--no-index-copy",
    ]
    subprocess.run(cmd, cwd=REPO_ROOT, check=True, timeout=900)
    return out


def test_retrain_records_parent_labels_and_figures(retrained):
    cfg = json.loads((retrained / "config.json").read_text())
    metrics = json.loads((retrained / "metrics.json").read_text())
    assert cfg["parent"].endswith("checkpoints/hmcl-uspc") and cfg["version"] == 2
    assert 0 < cfg["num_labels"] <= 250 and cfg["train"]["leak_guard"]["test"]["queries_held_out"] == 0
    for phase in ("before", "after"):
        for where in ("val", "test"):
            assert 0 < metrics[phase][where]["metrics"]["subclass_map"] < 1
    # chosen on val: the retrained head is no worse there than its parent (the parent's head is step 0)
    after, before = metrics["after"]["val"]["metrics"], metrics["before"]["val"]["metrics"]
    assert after["subclass_map"] + after["main_map"] >= before["subclass_map"] + before["main_map"] - 1e-9
    report = json.loads((retrained / "report" / "report.json").read_text())
    assert report["parent"].endswith("hmcl-uspc") and len(report["queries"]) == 25


@pytest.mark.browser
def test_the_training_tab_shows_the_curve_and_the_retrained_model(quick, retrained, browser):
    from patent_demo.workbench import Workbench, WorkbenchConfig

    tmp, _, _ = quick
    wb = Workbench(
        WorkbenchConfig(
            cache_dir=tmp / "cache",
            corpus=tmp / "uspc",
            checkpoint_dirs=(REPO_ROOT / "checkpoints", retrained.parent),
        ),
        progress=False,
    )
    store = LabelStore(tmp / "labels" / "labels-topk.sqlite")
    try:
        with live_app(wb, store, store=store) as url:
            page = browser.new_page(viewport={"width": 1366, "height": 900})
            page.goto(url)
            page.get_by_role("tab", name="Training").click()
            page.locator("#tr-plot .js-plotly-plot").wait_for(timeout=30_000)
            summary = page.locator("#tr-summary").inner_text()
            assert "fully supervised" in summary and "labelled queries" in summary
            models = page.locator("#tr-models").inner_text()
            assert "hmcl-uspc-retrained" in models and "hmcl-uspc" in models
            cmd = page.locator("#tr-cmd").inner_text()
            assert "python -m train.retrain --labels" in cmd and "labels-topk.sqlite" in cmd
            page.screenshot(path=str(ARTIFACTS / "training-1366.png"), full_page=True)
            # the model list offers the retrained head with its lineage
            page.get_by_role("tab", name="Drawing search").click()
            page.locator("#d-model input").click()
            option = page.locator('[data-testid="dropdown-option"]', has_text="hmcl-uspc-retrained v2")
            option.first.wait_for(timeout=15_000)
            assert "retrained from hmcl-uspc" in option.first.inner_text()
    finally:
        store.close()
