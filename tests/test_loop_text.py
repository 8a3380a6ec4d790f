"""Tests: train/loop/text.py, train/loop/text_scores.py

The text learning curve of the examiner loop, on tiny hand-made data: the budget subsets are seeded and nested,
label rows are tied to their query patents, rows and candidates of validation and test queries never reach
training, the bootstrap figures are the hand-worked ones, and the fine-tune's command line is one
``train.dssdnet`` accepts."""

from __future__ import annotations

import argparse

import pytest

from patent_demo.data.corpus import Corpus, Patent
from patent_demo.text.precision import cpu_name
from train.loop import text as lt
from train.loop import text_scores as scores

IDS = [f"US{n}" for n in range(100, 130)]


def test_budget_subsets_are_seeded_nested_and_blind_to_the_input_order():
    for seed in (0, 1, 2):
        subsets = [lt.budget_subset(IDS, b, seed) for b in (0, 5, 10, 30, 40)]
        assert [len(s) for s in subsets] == [0, 5, 10, 30, 30]  # a budget past the pool takes the pool
        for small, large in zip(subsets, subsets[1:], strict=False):
            assert large[: len(small)] == small  # nested: a smaller budget is a prefix of a larger one
        assert lt.budget_subset(list(reversed(IDS)) + IDS[:3], 10, seed) == subsets[2]  # order, duplicates
        assert lt.budget_subset(IDS, 10, seed) == subsets[2]  # the same seed, the same subset
    assert lt.budget_subset(IDS, 10, 0) != lt.budget_subset(IDS, 10, 1)
    assert sorted(lt.budget_subset(IDS, 30, 0)) == IDS
    with pytest.raises(ValueError):
        lt.budget_subset(IDS, -1, 0)


def tiny_corpus() -> Corpus:
    pats = [
        Patent(
            p,
            title=f"Widget {p}",
            text=f"A widget numbered {p} with a frame, a lever and a spring {p}.",
            codes={"ipc": ["B65D 5/00"]},
        )
        for p in ("T1", "T2", "V1", "X1", "C1", "C2")
    ]
    return Corpus(".", pats, splits={"train": ["T1", "T2"], "val": ["V1"], "test": ["X1"]})


def row(qid: str, query: str, pos=(), neg=(), **extra) -> dict:
    return {
        "query_id": qid,
        "modality": "text",
        "query": query,
        "query_codes": {},
        "query_patent_id": "",
        "pos": [{"id": c, "grade": 2} for c in pos],
        "neg": [{"id": c, "grade": 0} for c in neg],
        **extra,
    }


def test_rows_are_tied_to_their_query_patents_and_val_test_never_train():
    from patent_demo.text.search import candidate_text

    corpus = tiny_corpus()
    text = {p.id: candidate_text(p) for p in corpus.patents}
    rows = [
        row(
            "q1", "  " + text["T1"].replace(" ", "  ") + " ", pos=["C1"], neg=["C2", "V1", "X1"]
        ),  # spaces differ
        row("q2", text["T2"], neg=["C1", "C2"]),
        row("q3", text["V1"], pos=["C1"], neg=["C2"]),  # a validation query
        row("q4", "a free text nobody filed", neg=["C1"]),
        row("q5", "typed", neg=["C2"], query_patent_id="X1"),  # a test query, recorded by the app
    ]
    patent_of = lt.query_patents(rows, corpus)
    assert patent_of == {"q1": "T1", "q2": "T2", "q3": "V1", "q5": "X1"}
    # a continuation with the very same text, earlier in the corpus: one query to the app; a training query wins
    twin = Patent("Z0", title=corpus["T2"].title, text=corpus["T2"].text)
    with_twin = Corpus(".", [twin, *corpus.patents], splits=corpus.splits)
    assert lt.query_patents(rows, with_twin)["q2"] == "Z0"
    assert lt.query_patents(rows, with_twin, prefer={"T1", "T2"})["q2"] == "T2"
    held = sorted(set(corpus.splits["val"]) | set(corpus.splits["test"]))

    kept, stats = lt.training_rows(rows, patent_of, ["T1", "V1", "X1"], corpus, held)
    assert [r["query_id"] for r in kept] == ["q1"]  # V1's and X1's rows are held out; T2 was not chosen
    assert [c["id"] for c in kept[0]["pos"]] == ["C1"] and [c["id"] for c in kept[0]["neg"]] == ["C2"]
    assert kept[0]["query_patent_id"] == "T1" and kept[0]["query_codes"] == {"ipc": ["B65D 5/00"]}
    assert stats["queries_held_out"] == 2 and stats["candidates_held_out"] == 2 and stats["pairs_used"] == 2
    assert rows[0]["query_patent_id"] == "" and rows[0]["query_codes"] == {}  # the input rows are not changed
    assert corpus.splits == tiny_corpus().splits  # nor the corpus's splits

    kept, stats = lt.training_rows(rows, patent_of, ["T1", "T2"], corpus, held)
    assert [r["query_id"] for r in kept] == ["q1", "q2"] and stats["pairs_used"] == 4

    # a row whose text is a held-out patent's (no patent id recorded) is held out by the guard's text match too
    sneaky = [row("q6", text["X1"], neg=["C1"])]
    kept, stats = lt.guard_rows(sneaky, corpus, held)
    assert kept == [] and stats["queries_held_out"] == 1


def test_bootstrap_figures_are_the_hand_worked_ones():
    a = {"map@10": [0.5, 0.5, 0.5, 0.5], "recall@100": [1.0, 0.0, 1.0, 0.0]}
    b = {"map@10": [0.25, 0.25, 0.25, 0.25], "recall@100": [1.0, 0.0, 1.0, 0.0]}
    out = scores.compare(a, b, n_boot=2000)
    # every per-query difference is 0.25 (or 0): every resample has that mean, so the interval is a point
    assert out["map@10"] == {"diff": 0.25, "low": 0.25, "high": 0.25, "p_le_0": 0.0}
    assert out["recall@100"] == {"diff": 0.0, "low": 0.0, "high": 0.0, "p_le_0": 1.0}
    # differences 1 and 0: the observed mean 0.5, resample means in {0, 0.5, 1}, the interval [0, 1]
    one = scores.compare(
        {"map@10": [1.0, 0.0], "recall@100": [0.0, 0.0]},
        {"map@10": [0.0, 0.0], "recall@100": [0.0, 0.0]},
        n_boot=2000,
    )
    assert one["map@10"]["diff"] == 0.5 and one["map@10"]["low"] == 0.0 and one["map@10"]["high"] == 1.0
    assert 0.2 < one["map@10"]["p_le_0"] < 0.3  # P(both resampled queries are the zero one) = 1/4
    assert scores.means(a) == {"map@10": 0.5, "recall@100": 0.5}
    assert scores.pick(a, [1, 2]) == {"map@10": [0.5, 0.5], "recall@100": [0.0, 1.0]}


def test_a_point_is_summarised_against_zero_and_the_hybrid():
    hybrid = {"map@10": [0.2, 0.4, 0.0], "recall@100": [1.0, 0.5, 0.0]}
    zero = {
        "dssdnet": {"map@10": [0.1, 0.3, 0.0], "recall@100": [1.0, 0.5, 0.0]},
        "fused": {"map@10": [0.2, 0.5, 0.0], "recall@100": [1.0, 0.5, 0.0]},
    }
    point = {
        "dssdnet": {"map@10": [0.4, 0.3, 0.2], "recall@100": [1.0, 0.5, 0.0]},
        "fused": {"map@10": [0.2, 0.5, 0.3], "recall@100": [1.0, 0.5, 0.0]},
    }
    s = scores.summarise(point, zero, hybrid, 500)
    assert s["test"]["map@10"] == pytest.approx(0.3) and s["fused"]["map@10"] == pytest.approx(1.0 / 3)
    assert s["vs_zero"]["map@10"]["diff"] == pytest.approx(0.5 / 3)  # (0.3 + 0 + 0.2) / 3
    assert s["vs_hybrid"]["map@10"]["diff"] == pytest.approx(0.1)  # (0.2 - 0.1 + 0.2) / 3
    assert s["fused_vs_zero"]["map@10"]["diff"] == pytest.approx(0.1)
    assert s["vs_zero"]["recall@100"]["diff"] == 0.0
    only = scores.summarise(point, zero, hybrid, 500, index=[0])
    assert only["vs_zero"]["map@10"]["diff"] == pytest.approx(0.3) and only["test"][
        "map@10"
    ] == pytest.approx(0.4)


def test_the_finetune_command_line_is_one_train_dssdnet_accepts(tmp_path):
    from train.dssdnet.args import parse_args

    args = lt.build_parser().parse_args(["--corpus", "C", "--labels", "L", "--split-file", "S", "--out", "O"])
    assert args.budgets == [0, 25, 50, 118] and args.seeds == [0, 1, 2] and args.depth == 30
    argv = lt.finetune_argv(args, tmp_path / "rows.jsonl", tmp_path / "ckpt", 2)
    parsed = parse_args(argv)
    assert parsed.init_from == lt.DEFAULT_PARENT and parsed.labels == str(tmp_path / "rows.jsonl")
    assert parsed.max_steps == 60 and parsed.max_length == 128 and parsed.threads == 1 and parsed.seed == 2
    assert parsed.val_fraction == 0 and parsed.test_fraction == 0 and parsed.split_file == "S"
    assert isinstance(lt.settings(args), dict) and cpu_name()
    assert isinstance(args, argparse.Namespace)
