"""One drawing-evaluation protocol: ``patent-demo evaluate drawings``, ``train.score_drawings`` and the app's
Error-analysis tab (``patent_demo.analysis.evaluate``) score the same queries with the same figures on one real
USPC corpus built with a committed-style split file; a split of fewer than 10 patents is warned about.

Tests: patent_demo/drawing/protocol.py
"""

from __future__ import annotations

import json

import pytest

from patent_demo import analysis
from patent_demo.cli import main as cli_main
from patent_demo.data.build import build_corpus
from patent_demo.data.corpus import Corpus
from patent_demo.registry import ZERO_SHOT
from patent_demo.workbench import Workbench, WorkbenchConfig
from tests.conftest import two_member_subclasses

KEYS = ("patent_map", "subclass_map", "main_map", "hier_ndcg@10", "num_queries")


@pytest.fixture(scope="module")
def uspc(tmp_path_factory):
    """24 real USPC drawings of 12 two-member subclasses; whole subclasses alternate between test and
    train, so the 12-patent test split holds 6 subclass pairs."""
    src, subs = two_member_subclasses(12)
    tmp = tmp_path_factory.mktemp("protocol")
    table = tmp / "table.tsv"
    table.write_text("".join("\t".join(r) + "\n" for pair in subs for r in pair), encoding="utf-8")
    splits = {"train": [], "val": [], "test": []}
    for i, pair in enumerate(subs):
        splits["test" if i % 2 == 0 else "train"] += [r[0] for r in pair]
    (tmp / "splits.json").write_text(json.dumps(splits))
    out = tmp / "corpus"
    summary = build_corpus(
        "images", src, out, metadata=table, splits_file=tmp / "splits.json", progress=False
    )
    assert f"splits    train 12, val 0, test 12 (from {tmp / 'splits.json'})" in summary.to_text()
    assert Corpus.load(out).meta["splits"]["by"] == "file"
    return out


def test_cli_train_evaluate_and_app_score_one_protocol(uspc, tmp_path, capsys):
    from train.score_drawings import main as train_main

    cli_json, train_json = tmp_path / "cli.json", tmp_path / "train.json"
    args = [
        "evaluate",
        "drawings",
        "--corpus",
        str(uspc),
        "--model",
        ZERO_SHOT,
        "--checkpoints",
        str(tmp_path / "none"),
        "--json",
        str(cli_json),
    ]
    assert cli_main(args) == 0
    assert "warning" not in capsys.readouterr().err
    assert (
        train_main(
            ["--model", "lite-trunk", "--corpus", str(uspc), "--no-silhouette", "--out", str(train_json)]
        )
        == 0
    )
    wb = Workbench(
        WorkbenchConfig(cache_dir=tmp_path / "cache", checkpoint_dirs=()),
        corpus=Corpus.load(uspc),
        progress=False,
    )
    app, _ = analysis.evaluate(wb, ZERO_SHOT, k=10)
    cli, train = json.loads(cli_json.read_text()), json.loads(train_json.read_text())
    assert cli["split"] == train["split"] == "test" and cli["protocol"] == train["protocol"] == "all"
    assert cli["metrics"]["num_queries"] == 12
    for k in KEYS:
        assert cli["metrics"][k] == pytest.approx(train["metrics"][k], abs=1e-6), k
        assert cli["metrics"][k] == pytest.approx(app[k], abs=1e-4), k
    # one drawing per patent: no same-patent positive, so patent mAP is undefined, not equal to the others
    assert cli["metrics"]["patent_map"] is None


def test_a_split_of_fewer_than_10_patents_is_warned_about(uspc, tmp_path, capsys):
    corpus = Corpus.load(uspc)
    corpus.splits = {"train": corpus.splits["train"], "val": [], "test": corpus.splits["test"][:4]}
    small = tmp_path / "small"
    corpus.save(small)
    args = [
        "evaluate",
        "drawings",
        "--corpus",
        str(small),
        "--model",
        ZERO_SHOT,
        "--checkpoints",
        str(tmp_path),
    ]
    assert cli_main(args) == 0
    err = capsys.readouterr().err
    assert "warning: split 'test' holds only 4 patents (fewer than 10)" in err
    assert "Score the whole corpus with --split all" in err
