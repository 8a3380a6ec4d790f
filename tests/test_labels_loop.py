"""What the Training tab and ``docs/loop.md`` say about a learning-curve result (``patent_demo.labels.loop``,
``patent_demo.plots.learning_curve``), on a hand-made result whose figures are worked out here."""

from __future__ import annotations

import json

from patent_demo.labels import loop
from patent_demo.plots import learning_curve
from patent_demo.registry import read_checkpoint_spec


def ci(diff, low, high):
    return {"diff": diff, "low": low, "high": high, "p_le_0": 0.0}


def point(budget, seed, sub, main, low):
    return {
        "budget": budget,
        "seed": seed,
        "queries": budget,
        "judgements": 10 * budget,
        "test": {"subclass_map": sub, "main_map": main},
        "vs_zero_shot": {
            "subclass_map": ci(sub - 0.3, low, low + 0.1),
            "main_map": ci(main - 0.15, low, low + 0.1),
        },
    }


def result():
    points = [
        point(0, None, 0.3, 0.15, 0.0),
        point(25, 0, 0.32, 0.16, -0.01),
        point(25, 1, 0.34, 0.16, 0.01),
        point(50, 0, 0.36, 0.18, 0.02),
        point(50, 1, 0.38, 0.18, 0.03),
    ]
    rows = [
        {
            "budget": 0,
            "judgements": 0.0,
            "met": False,
            "test": {"subclass_map": {"mean": 0.3, "std": 0.0}, "main_map": {"mean": 0.15, "std": 0.0}},
        },
        {
            "budget": 25,
            "judgements": 250.0,
            "met": False,
            "test": {"subclass_map": {"mean": 0.33, "std": 0.014}, "main_map": {"mean": 0.16, "std": 0.0}},
        },
        {
            "budget": 50,
            "judgements": 500.0,
            "met": True,
            "test": {"subclass_map": {"mean": 0.37, "std": 0.014}, "main_map": {"mean": 0.18, "std": 0.0}},
        },
    ]
    return {
        "command": "python -m train.loop.curves --corpus C --labels-dir L --out O",
        "setup": {
            "splits": {"train": 600, "val": 200, "test": 200},
            "k": 10,
            "seeds": [0, 1],
            "cpu": "test CPU",
        },
        "strategies": {"topk": {"points": points}},
        "ceiling": {
            "variant": "hmcl-paper-mix",
            "labelled_queries": 600,
            "runs": [
                {"vs_zero_shot": {"subclass_map": ci(0.08, 0.02, 0.14), "main_map": ci(0.04, 0.02, 0.06)}}
            ],
            "test": {"subclass_map": {"mean": 0.38, "std": 0.0}, "main_map": {"mean": 0.19, "std": 0.0}},
        },
        "summary": {
            "ceiling": {"subclass_map": 0.38, "main_map": 0.19},
            "zero_shot": {"subclass_map": 0.3, "main_map": 0.15},
            "strategies": {"topk": {"rows": rows, "first_budget_met": 50, "first_budget_90": 50}},
        },
    }


def test_rows_give_each_seeds_interval_and_met_only_above_zero():
    rows = loop.curve_rows(result())
    assert [r[:3] for r in rows] == [["topk", 0, 0], ["topk", 25, 250], ["topk", 50, 500]]
    assert rows[0][5:] == ["—", "—", "not met"]
    assert rows[1][3] == "0.330 ± 0.014"
    assert rows[1][5] == "+0.020 [-0.010, +0.090]; +0.040 [+0.010, +0.110]"
    assert rows[1][7] == "not met" and rows[2][7] == "met"


def test_summary_and_table_state_the_budgets_and_the_ceiling():
    r = result()
    md = loop.summary_markdown(r)
    assert "from **50 labelled queries**" in md.split("top 10 of each search")[1].split("\n")[0]
    assert "0.380 / 0.190" in md and "0.300 / 0.150" in md and "test CPU" in md and r["command"] in md
    table = loop.curve_markdown(r)
    assert table.splitlines()[0].startswith("| strategy | labelled queries |")
    assert "| fully supervised (hmcl-paper-mix) | 600" in table and "+0.080 [+0.020, +0.140]" in table


def test_learning_curve_plots_every_strategy_with_its_reference_lines():
    fig = learning_curve(result())
    lines = [t for t in fig.data if t.name == "topk"]
    assert len(lines) == 2  # subclass and main
    assert list(lines[0].x) == [0.0, 250.0, 500.0] and list(lines[0].y) == [0.3, 0.33, 0.37]
    assert list(lines[1].y) == [0.15, 0.16, 0.18]
    hlines = [s for s in fig.layout.shapes]
    assert sorted(round(s.y0, 3) for s in hlines) == [0.15, 0.19, 0.3, 0.38]


def test_lineage_rows_and_the_command(tmp_path):
    ck = tmp_path / "hmcl-uspc-retrained"
    ck.mkdir()
    (ck / "config.json").write_text(
        json.dumps(
            {
                "kind": "hmcl",
                "model": {"name": "lite-head"},
                "version": 2,
                "parent": "/x/checkpoints/hmcl-uspc",
                "num_labels": 812,
            }
        )
    )
    (ck / "model.safetensors").write_bytes(b"")
    (ck / "metrics.json").write_text(
        json.dumps(
            {
                "before": {
                    "val": {"metrics": {"subclass_map": 0.47, "main_map": 0.2}},
                    "test": {"metrics": {"subclass_map": 0.38, "main_map": 0.19}},
                },
                "after": {
                    "val": {"metrics": {"subclass_map": 0.48, "main_map": 0.21}},
                    "test": {"metrics": {"subclass_map": 0.39, "main_map": 0.2}},
                },
            }
        )
    )
    spec = read_checkpoint_spec(ck)
    assert "v2, 812 labels, retrained from hmcl-uspc" in spec.label
    assert loop.lineage_rows([spec]) == [
        [
            "hmcl-uspc-retrained",
            "hmcl-uspc",
            812,
            "0.470 / 0.200 → 0.480 / 0.210",
            "0.380 / 0.190 → 0.390 / 0.200",
        ]
    ]
    assert loop.retrain_command(
        "my labels.sqlite", "checkpoints/hmcl-uspc", "runs/uspc", "checkpoints/x"
    ) == (
        "python -m train.retrain --labels 'my labels.sqlite' --from checkpoints/hmcl-uspc --corpus runs/uspc "
        "--out checkpoints/x"
    )


def test_an_absent_or_broken_results_file_reads_as_none(tmp_path):
    assert loop.read_results(tmp_path / "none.json") is None
    (tmp_path / "bad.json").write_text("{")
    assert loop.read_results(tmp_path / "bad.json") is None
    assert "No text learning curve" in loop.text_markdown(None)


def test_the_readme_headline_says_the_first_budget_met_and_the_text_verdict():
    text = {
        "points": [
            {"queries": 0, "seed": None},
            {"queries": 25, "seed": 0, "vs_zero": {"map@10": ci(0.01, -0.01, 0.03)}},
            {"queries": 50, "seed": 0, "vs_zero": {"map@10": ci(0.02, -0.02, 0.06)}},
        ]
    }
    md = loop.headline_markdown(result(), text)
    assert "from **50 labelled queries** (500 judgements); 90 % of the fully supervised head from 50" in md
    assert "up to 50 labelled queries): no budget's MAP@10 interval against no labels lies above 0" in md
    text["points"][2]["vs_zero"]["map@10"] = ci(0.05, 0.01, 0.09)
    assert "MAP@10 above no labels at 50 (seed 0)" in loop.headline_markdown(result(), text)
