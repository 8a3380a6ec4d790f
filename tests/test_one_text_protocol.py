"""One text-evaluation protocol: ``patent-demo corpus build`` of the cs3245 source, with no ``--splits``, takes
the committed query split (``splits/cs3245_text.json``) and saves the file's queries in their splits, so ``patent-demo evaluate text --corpus`` (the corpus's saved test
split) and ``--split-file splits/cs3245_text.json --split test`` (what ``docs/results_text.md`` and ``train``
score) evaluate the same queries and give the same figures; the rule that merges a query split into the
corpus's family splits, on a hand-worked case.

Tests: patent_demo/data/splits.py, patent_demo/data/build.py
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from patent_demo.cli import main as cli_main
from patent_demo.data.corpus import Corpus
from patent_demo.data.splits import is_query_split, with_query_splits
from tests.conftest import require_shared

SPLIT = Path(__file__).resolve().parents[1] / "splits" / "cs3245_text.json"


def test_query_split_fixes_query_families_and_keeps_the_draw_elsewhere():
    family_of = {"q1": "A", "a2": "A", "q2": "B", "b2": "B", "c": "C", "d": "D"}
    drawn = {"train": ["q1", "a2", "c"], "val": ["d"], "test": ["q2", "b2"]}
    out = with_query_splits({"train": [], "val": [], "test": ["q1", "elsewhere"]}, family_of, drawn)
    # q1's family goes to test with it; the other families keep the draw; a query not in the corpus is ignored
    assert out == {"train": ["c"], "val": ["d"], "test": ["a2", "b2", "q1", "q2"]}
    with pytest.raises(ValueError, match="family A holds queries of the train and test splits"):
        with_query_splits({"train": ["q1"], "test": ["a2"]}, family_of, drawn)
    assert is_query_split(json.loads(SPLIT.read_text(encoding="utf-8")))
    assert not is_query_split({"train": ["a"], "val": [], "test": []})


@pytest.fixture(scope="module")
def cs3245(tmp_path_factory):
    src = require_shared("cs3245_patsnap_corpus_qrels")
    out = tmp_path_factory.mktemp("cs3245") / "corpus"
    assert cli_main(["corpus", "build", "--source", "text", str(src), "--out", str(out), "--quiet"]) == 0
    return Corpus.load(out)


def test_the_cli_build_names_the_committed_split_and_none_draws_by_family(cs3245, tmp_path, capsys):
    rule = json.loads((cs3245.root / "corpus.json").read_text(encoding="utf-8"))["splits"]
    assert rule["by"] == "file" and rule["file"].endswith("splits/cs3245_text.json")
    src = require_shared("cs3245_patsnap_corpus_qrels")
    out = tmp_path / "drawn"
    assert (
        cli_main(
            [
                "corpus",
                "build",
                "--source",
                "text",
                str(src),
                "--out",
                str(out),
                "--quiet",
                "--splits",
                "none",
            ]
        )
        == 0
    )
    assert "by family" in capsys.readouterr().out


def test_corpus_saved_split_holds_the_committed_queries(cs3245):
    committed = json.loads(SPLIT.read_text(encoding="utf-8"))
    for name in ("train", "val", "test"):
        assert {p.id for p in cs3245.split(name)} & set(cs3245.qrels) == set(committed[name])


def test_cli_corpus_split_and_committed_split_give_one_answer(cs3245, tmp_path, capsys):
    a, b = tmp_path / "corpus.json", tmp_path / "file.json"
    assert (
        cli_main(["evaluate", "text", "--corpus", str(cs3245.root), "--model", "bm25", "--json", str(a)]) == 0
    )
    assert (
        cli_main(
            [
                "evaluate",
                "text",
                "--corpus",
                str(cs3245.root),
                "--model",
                "bm25",
                "--split-file",
                str(SPLIT),
                "--split",
                "test",
                "--json",
                str(b),
            ]
        )
        == 0
    )
    ra, rb = (json.loads(p.read_text(encoding="utf-8")) for p in (a, b))
    assert ra["num_queries"] == rb["num_queries"] == 59
    assert ra["summary"]["map@10"] == rb["summary"]["map@10"]
    assert ra["summary"]["recall@100"] == rb["summary"]["recall@100"]
