"""The before/after report: metric rows and regressions, move counts, markdown, figure and files."""

from __future__ import annotations

import json

import pytest

from patent_demo.labels.retrain_report import metric_rows, summarise, to_figure, to_markdown, write_report

QUERIES = [
    {
        "query_id": "img-aaaa",
        "kind": "drawing",
        "anchor_patent": "D1",
        "held_out": False,
        "items": [
            {"candidate": "D7", "label": "relevant", "grade": 2, "shown_rank": 9, "before": 9, "after": 3},
            {"candidate": "D8", "label": "partly", "grade": 1, "shown_rank": 4, "before": 4, "after": 6},
            {"candidate": "D2", "label": "not", "grade": 0, "shown_rank": 2, "before": 2, "after": 11},
        ],
    },
    {
        "query_id": "img-bbbb",
        "kind": "drawing",
        "anchor_patent": "D5",
        "held_out": True,
        "items": [
            {"candidate": "D6", "label": "relevant", "grade": 2, "shown_rank": 5, "before": 5, "after": 5},
            {"candidate": "D9", "label": "not", "grade": 0, "shown_rank": 1, "before": 1, "after": None},
        ],
    },
]


def test_metric_rows_order_levels_and_flag_regressions():
    before = {
        "main_map": 0.8,
        "patent_map": 0.5,
        "subclass_map": 0.6,
        "hier_ndcg@10": 0.55,
        "num_queries": 10,
    }
    after = {
        "main_map": 0.78,
        "patent_map": 0.52,
        "subclass_map": 0.595,
        "hier_ndcg@10": 0.55,
        "num_queries": 10,
    }
    rows = metric_rows(before, after, max_drop=0.01)
    assert [r["metric"] for r in rows] == ["patent_map", "subclass_map", "main_map", "hier_ndcg@10"]
    assert [r["regression"] for r in rows] == [False, False, True, False]
    assert rows[2]["delta"] == pytest.approx(-0.02, abs=1e-12)
    assert metric_rows({"map@5": float("nan")}, {"map@5": 0.5}) == [
        {"metric": "map@5", "before": None, "after": 0.5, "delta": None, "regression": False}
    ]


def test_summarise_counts_moves_the_right_way():
    s = summarise(QUERIES)
    assert s["trained"]["relevant"] == {
        "items": 2,
        "right_way": 1,
        "wrong_way": 1,
        "same": 0,
        "mean_before": 6.5,
        "mean_after": 4.5,
    }
    assert s["trained"]["not"] == {
        "items": 1,
        "right_way": 1,
        "wrong_way": 0,
        "same": 0,
        "mean_before": 2.0,
        "mean_after": 11.0,
    }
    # a rejected item that left the ranking moved the right way
    assert s["held_out"]["not"]["right_way"] == 1 and s["held_out"]["not"]["mean_after"] is None
    assert s["held_out"]["relevant"]["same"] == 1


def _report():
    rows = metric_rows({"patent_map": 0.5, "main_map": 0.8}, {"patent_map": 0.6, "main_map": 0.7}, 0.01)
    return {
        "title": "Retraining report: a → b",
        "checkpoint": "ck/b",
        "parent": "ck/a",
        "version": 2,
        "num_labels": 3,
        "command": "python -m train.retrain …",
        "leak_guard": {
            "drawing": {
                "rows": 2,
                "queries_used": 1,
                "queries_held_out": 1,
                "pairs_used": 3,
                "pairs_held_out": 2,
                "candidates_held_out": 4,
                "held_out_query_ids": ["img-bbbb"],
                "allowed_test": False,
            }
        },
        "queries": QUERIES,
        "summary": summarise(QUERIES),
        "metrics": {"split": "test", "rows": rows, "max_drop": 0.01, "regressions": ["main_map"]},
    }


def test_markdown_states_guard_ranks_and_regressions():
    md = to_markdown(_report())
    assert md.startswith("# Retraining report: a → b\n")
    assert (
        "- drawing labels: trained on 1 queries (3 judged pairs); held out 1 labelled test-split queries "
        "(2 judged pairs) and 4 judged candidates from test-split patents"
    ) in md
    assert "| `img-aaaa` | D1 | yes | D7 | relevant | 9 | 9 | 3 | ↑ 6 |" in md
    assert "| `img-aaaa` | D1 | yes | D8 | partly | 4 | 4 | 6 | ↓ 2 |" in md
    assert "| `img-bbbb` | D5 | no (test split) | D9 | not | 1 | 1 | – | – |" in md
    assert "| trained on | relevant / partly | 2 | 1 | 1 | 0 | 6.50 → 4.50 |" in md
    assert "| main_map | 0.8000 | 0.7000 | -0.1000 ⚠️ |" in md
    assert "**Regressions** (a fall of more than 0.01): main_map" in md


def test_figure_and_files(tmp_path):
    fig = to_figure(_report())
    markers = [t for t in fig.data if t.type == "scatter" and t.mode == "markers"]
    assert len(markers) == 9  # before and after for each of 5 items, one missing "after"
    bars = [t for t in fig.data if t.type == "bar"]
    assert [b.name for b in bars] == ["metrics before", "metrics after"] and list(bars[1].x) == [0.6, 0.7]
    paths = write_report(_report(), tmp_path / "r", include_plotlyjs=False)
    assert sorted(p.name for p in (tmp_path / "r").iterdir()) == ["report.html", "report.json", "report.md"]
    assert json.loads(paths["json"].read_text())["queries"][0]["items"][0]["after"] == 3
    assert "rank before → after" in paths["html"].read_text()
