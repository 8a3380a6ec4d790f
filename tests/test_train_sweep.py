"""``train.sweep`` (the one runner of both models): mean ± std and bootstrap tables, a
tiny end-to-end HMCL sweep through the entry point (runs reused on a second call), the DSSDNet ladder's
aggregation, and the earlier command names failing with the one to type."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

from patent_demo import checkpoint
from patent_demo.reports.tables import mean_std, summarise_against
from train import sweep

REPO = Path(__file__).resolve().parents[1]


def test_mean_std_and_the_end_to_end_table():
    assert mean_std([1.0, 2.0, 3.0]) == (2.0, 1.0)
    assert mean_std([0.5, None, float("nan")]) == (0.5, 0.0)
    assert all(math.isnan(x) for x in mean_std([None]))
    results = {
        "cl": {
            "cl-s0": {"metrics": {"patent_map": 0.25}, "silhouette": 0.1},
            "cl-s1": {"metrics": {"patent_map": 0.75}, "silhouette": None},
        },
    }
    summary = sweep.image_summary(results)
    assert summary["cl"]["n"] == 2 and summary["cl"]["mean"]["patent_map"] == 0.5
    assert summary["cl"]["runs"] == ["cl-s0", "cl-s1"]
    assert summary["cl"]["std"]["patent_map"] == pytest.approx(math.sqrt(0.125), abs=1e-15)
    row = sweep.image_table(summary, "caption").splitlines()[-1]
    assert row.startswith("| cl | 2 | 0.500 ± 0.354 | n/a |") and row.endswith("| 0.100 ± 0.000 |")


def test_cached_summary_bootstraps_seed_means_against_the_reference():
    from patent_demo.metrics import paired_bootstrap

    rng = np.random.default_rng(0)
    cols = sweep.CACHED_COLUMNS
    groups = [f"P{i // 3}" for i in range(12)]

    def result(scale):
        pq = {c: (rng.random(12) * scale).tolist() for c in cols}
        return {
            "metrics": {c: float(np.mean(v)) for c, v in pq.items()},
            "macro": {c: float(np.mean(v)) / 2 for c, v in pq.items()},
            "per_query": pq,
            "query_patents": groups,
        }

    results = {
        "zero-shot-224": {"zero-shot-224": result(1.0)},
        "hmcl": {"hmcl-s0": result(1.0), "hmcl-s1": result(2.0)},
    }
    summary = summarise_against(results, "zero-shot-224", cols, 200)
    assert summary["zero-shot-224"]["bootstrap"] == {}
    h = summary["hmcl"]
    assert h["n"] == 2 and h["runs"] == ["hmcl-s0", "hmcl-s1"]
    seed_mean = np.mean([results["hmcl"][n]["per_query"]["patent_map"] for n in h["runs"]], axis=0)
    ref = results["zero-shot-224"]["zero-shot-224"]["per_query"]["patent_map"]
    assert h["bootstrap"]["patent_map"] == paired_bootstrap(seed_mean, ref, groups, 200, seed=0)
    md = sweep.cached_table(summary, "zero-shot-224", "cap")
    assert md.startswith("cap\n\n| variant | runs | patent_map (pages)") and "| hmcl | 2 |" in md
    assert md.splitlines()[-1].endswith(" |") and "[" in md.splitlines()[-1]


def test_tiny_hmcl_sweep_writes_and_reuses(tmp_path):
    out, table = tmp_path / "runs", tmp_path / "table"
    argv = [
        "hmcl",
        "--variants",
        "cl",
        "--seeds",
        "0",
        "--out",
        str(out),
        "--table",
        str(table),
        "--",
        "--tiny",
        "--steps",
        "2",
        "--threads",
        "1",
        "--cache-dir",
        str(tmp_path / "cache"),
    ]
    assert sweep.main(argv) == 0
    payload = json.loads(table.with_suffix(".json").read_text())
    assert payload["summary"]["cl"]["runs"] == ["cl-s0"] and payload["split"] == "test"
    assert "| cl | 1 |" in table.with_suffix(".md").read_text()
    mtime = (out / "cl-s0" / "model.safetensors").stat().st_mtime_ns
    assert sweep.main(argv) == 0  # finished runs are reused, not trained again
    assert (out / "cl-s0" / "model.safetensors").stat().st_mtime_ns == mtime
    with pytest.raises(SystemExit, match="not variants of the end-to-end feed"):
        sweep.main(["hmcl", "--variants", "whitened", "--out", str(out), "--", "--tiny"])


def test_dssdnet_ladder_aggregates_finished_runs(tmp_path):
    from train.dssdnet.summary import ladder_aggregate, ladder_markdown, ladder_run_dir

    for seed, r in ((0, 0.4), (1, 0.6)):
        d = ladder_run_dir(tmp_path, "demo", "dssdnet", seed)
        d.mkdir(parents=True)
        checkpoint.write_json(d / checkpoint.CONFIG, {"kind": "dssdnet"})
        after = {f"{m}@10": r for m in ("recall", "map", "map_retrieved", "ndcg")}
        checkpoint.write_json(
            d / checkpoint.METRICS,
            {"after": after, "bm25": {k: 0.3 for k in after}, "evaluation": {"queries": 5, "library": 9}},
        )
        (d / checkpoint.COMMAND).write_text(f"python -m train.dssdnet --seed {seed}\n")
    result = ladder_aggregate(tmp_path, ["demo"], ["bert_c", "dssdnet"], [0, 1])
    agg = result["demo"]["variants"]["dssdnet"]["recall@10"]
    assert agg[0] == pytest.approx(0.5) and agg[1] == pytest.approx(math.sqrt(0.02))
    assert "bert_c" not in result["demo"]["variants"]
    md = ladder_markdown(result, [0, 1])
    assert "| BM25 | 0.300 |" in md and "| DSSDNet | 0.500 ± 0.141 |" in md
    table = tmp_path / "ladder"
    table.with_suffix(".md").write_text("old\n<!-- notes -->\nkept notes\n")
    assert (
        sweep.main(
            [
                "dssdnet",
                "--aggregate-only",
                "--variants",
                "dssdnet",
                "--seeds",
                "0",
                "1",
                "--out",
                str(tmp_path),
                "--table",
                str(table),
            ]
        )
        == 0
    )
    text = table.with_suffix(".md").read_text()
    assert "python -m train.sweep dssdnet" in text and text.endswith("<!-- notes -->\nkept notes\n")
    assert (
        json.loads(table.with_suffix(".json").read_text())["datasets"]["demo"]["runs"]["dssdnet"][1]["seed"]
        == 1
    )
