"""The line beside each text list (``patent_demo.text.measured.list_note``): its validation MAP@10 against
the default list's on the same queries, and a plain note when it is below the default on validation.

Tests: patent_demo/text/measured.py"""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

from patent_demo.text.measured import list_note

RESULTS = {
    "queries": {"val": 59, "test": 59},
    "lists": {
        s: {n: {"map@10": {"mean": v}} for n, v in vals.items()}
        for s, vals in {"val": {"bm25": 0.38, "hybrid": 0.40}, "test": {"bm25": 0.22, "hybrid": 0.27}}.items()
    },
    "rerank": [
        {
            "checkpoint": "checkpoints/ck",
            "k_rerank": 100,
            "splits": {
                "val": {
                    "queries": 18,
                    "summary": {
                        "hybrid": {"map@10": 0.42},
                        "dssdnet": {"map@10": 0.33},
                        "fused": {"map@10": 0.43},
                    },
                    "bootstrap": {"dssdnet - hybrid": {"diff": -0.097, "low": -0.255, "high": 0.032}},
                },
                "test": {"queries": 16, "summary": {"hybrid": {"map@10": 0.41}, "dssdnet": {"map@10": 0.30}}},
            },
        }
    ],
}
SPEC = SimpleNamespace(key="ck", path=Path("checkpoints/ck"), metrics={}, trained=True)


def test_a_list_below_the_default_says_so_with_the_same_queries_figures():
    note = list_note("dssdnet", SPEC, default="hybrid", results=RESULTS)
    assert "validation 0.330 against 0.420 for hybrid (18 queries)" in note
    assert "test 0.300 against 0.410 for hybrid (16 queries)" in note
    assert (
        "below the default list (hybrid) on validation, difference -0.097, 95 % interval [-0.255, +0.032]"
        in note
    )
    assert "below" not in list_note("fused", SPEC, default="hybrid", results=RESULTS)


def test_the_default_list_follows_default_text_list_and_unmeasured_lists_say_so():
    assert "the default list" in list_note("hybrid", SPEC, default="hybrid", results=RESULTS)
    assert "validation 0.380 against 0.400 for hybrid (59 queries)" in list_note(
        "bm25", SPEC, "hybrid", RESULTS
    )
    as_default = list_note("dssdnet", SPEC, default="dssdnet", results=RESULTS)
    assert "the default list" in as_default and "below" not in as_default
    assert "below the default list (dssdnet)" not in list_note(
        "hybrid", SPEC, default="dssdnet", results=RESULTS
    )
    other = SimpleNamespace(key="other", path=Path("x/other"), metrics={}, trained=False)
    note = list_note("dssdnet", other, default="hybrid", results=RESULTS)
    assert "not measured on the cs3245 split with other" in note and "untrained head" in note


def test_a_checkpoint_that_reranks_a_validated_depth_says_which(tmp_path):
    """Figures measured at depth 100 for a checkpoint the app re-ranks to its validated depth: the line says both."""
    ck = tmp_path / "ck"
    ck.mkdir()
    (ck / "metrics.json").write_text('{"rerank_depth": {"depth": 30}}')
    spec = SimpleNamespace(key="ck", path=ck, metrics={}, trained=True)
    note = list_note("dssdnet", spec, default="hybrid", results=RESULTS)
    assert "ck re-ranking the hybrid top 100; the app re-ranks the top 30, chosen on validation" in note
    assert "the app re-ranks" not in list_note("dssdnet", SPEC, default="hybrid", results=RESULTS)
