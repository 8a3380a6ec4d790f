"""``train/dssdnet/scored.py``: the scored-pair ablation runner and its report, on a tiny random BERT."""

import json

import numpy as np
import pytest

from patent_demo.text.scored import pearson
from train.dssdnet import main as dssdnet
from train.dssdnet import scored as dssdnet_scored


def test_ablation_rows_and_main_rows_are_computed_from_the_runs_scores(tmp_path, scored_csv):
    csv_path, split_path = scored_csv
    main_dir = tmp_path / "main"
    assert (
        dssdnet.main(
            [
                "--tiny",
                "--scored-pairs",
                str(csv_path),
                "--scored-split",
                str(split_path),
                "--epochs",
                "1",
                "--eval-splits",
                "val",
                "test",
                "--write-run",
                "--threads",
                "1",
                "--out",
                str(main_dir),
            ]
        )
        == 0
    )
    table = tmp_path / "table"
    argv = [
        "--data",
        str(csv_path),
        "--split",
        str(split_path),
        "--out",
        str(tmp_path / "abl"),
        "--variants",
        "dssdnet",
        "no-gate",
        "no-context",
        "--main",
        str(main_dir),
        "--bootstrap",
        "200",
        "--table",
        str(table),
        "--",
        "--tiny",
        "--epochs",
        "1",
        "--threads",
        "1",
    ]
    assert dssdnet_scored.main(argv) == 0
    result = json.loads(table.with_suffix(".json").read_text())
    test = result["splits"]["test"]
    assert set(test["ablation"]) == {"dssdnet", "no-gate", "no-context"}
    assert (
        "minus_dssdnet" in test["ablation"]["no-gate"] and "minus_dssdnet" not in test["ablation"]["dssdnet"]
    )
    # the main row's Pearson is the correlation of the saved scores with the split's labels
    saved = json.loads((main_dir / "run.test.json").read_text())
    rows = [line.split(",") for line in csv_path.read_text().splitlines()[1:]]
    label = {r[0]: float(r[-1]) for r in rows}
    expected = pearson(saved["scores"], [label[i] for i in saved["ids"]])
    assert test["main"]["pearson"][0] == pytest.approx(expected, abs=1e-9)
    assert np.isfinite(test["biencoder"]["pearson"])
    md = table.with_suffix(".md").read_text()
    assert "| no-context | CPC context off" in md and "Target: test Pearson ≥ 0.78" in md
    # a second call reuses the finished runs
    assert dssdnet_scored.finished(dssdnet_scored.run_dir(tmp_path / "abl", "no-gate", 0))


def test_compare_two_score_files_on_the_pairs_both_scored(tmp_path, scored_csv):
    """``--compare A.json B.json``: A minus B in Pearson is the difference of the two files' correlations with
    the labels, over the pairs of A (B's scores matched by id, whatever its order)."""
    csv_path, _ = scored_csv
    rows = [line.split(",") for line in csv_path.read_text().splitlines()[1:]]
    ids, labels = [r[0] for r in rows], [float(r[-1]) for r in rows]
    rng = np.random.default_rng(0)
    a = [y + 0.1 * rng.normal() for y in labels]
    b = [y + 0.5 * rng.normal() for y in labels]
    (tmp_path / "a.json").write_text(json.dumps({"model": "a", "ids": ids, "scores": a}))
    (tmp_path / "b.json").write_text(json.dumps({"model": "b", "ids": ids[::-1], "scores": b[::-1]}))
    table = tmp_path / "cmp"
    assert (
        dssdnet_scored.main(
            [
                "--data",
                str(csv_path),
                "--compare",
                str(tmp_path / "a.json"),
                str(tmp_path / "b.json"),
                "--bootstrap",
                "200",
                "--table",
                str(table),
            ]
        )
        == 0
    )
    result = json.loads(table.with_suffix(".json").read_text())
    diff = result["a_minus_b"]["pearson"]
    assert diff["diff"] == pytest.approx(pearson(a, labels) - pearson(b, labels), abs=1e-9)
    assert diff["low"] <= diff["diff"] <= diff["high"] and result["pairs"] == len(ids)
