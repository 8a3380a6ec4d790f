"""``patent-demo`` search, evaluate, qrels and models on corpora built from the shared real data."""

from __future__ import annotations

import importlib
import json
import subprocess
import sys
import tomllib

import numpy as np
import pytest

from patent_demo.cli import main
from patent_demo.cli.common import models
from patent_demo.data.corpus import Corpus, read_qrels
from patent_demo.metrics import read_run
from tests.conftest import CKPT, REPO_ROOT, require_shared


def test_console_script_is_registered():
    scripts = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())["project"]["scripts"]
    module, func = scripts["patent-demo"].split(":")
    assert getattr(importlib.import_module(module), func) is main
    out = subprocess.run(
        [sys.executable, "-m", "patent_demo.cli", "--help"],
        capture_output=True,
        text=True,
        cwd=REPO_ROOT,
        check=True,
    ).stdout
    for command in ("corpus", "search", "evaluate", "qrels", "models"):
        assert command in out


def test_models_lists_what_the_app_offers(capsys):
    assert main(["models", "--checkpoints", CKPT, "--json"]) == 0
    rows = {r["name"]: r for r in json.loads(capsys.readouterr().out)}
    assert {"zero-shot", "bm25", "dssdnet-untrained"} <= set(rows)
    hmcl = rows.get("hmcl-lite-clip")
    if hmcl is not None:  # the shipped checkpoint: figures from its metrics.json
        metrics = json.loads((REPO_ROOT / "checkpoints/hmcl-lite-clip/metrics.json").read_text())
        assert hmcl["measured"]["subclass_map"] == round(
            metrics["after"]["test"]["metrics"]["subclass_map"], 4
        )
        config = json.loads((REPO_ROOT / "checkpoints/hmcl-lite-clip/config.json").read_text())
        assert hmcl["image_size"] == config["model"]["image_size"] and hmcl["scheme"] == "locarno"
    assert rows["zero-shot"]["image_size"] == 224 and rows["zero-shot"]["kind"] == "zero-shot"
    assert main(["models", "--checkpoints", CKPT]) == 0
    assert "default: drawing" in capsys.readouterr().out


def test_qrels_convert_one_id_per_line(tmp_path, capsys):
    pos, neg = tmp_path / "q1-qrels+ve.txt", tmp_path / "q1-qrels-ve.txt"
    pos.write_text("US5960481\nUS5253496\n")
    neg.write_text("US6094768\n\n")
    out = tmp_path / "q1.qrels"
    assert main(["qrels", "convert", str(pos), str(neg), "--out", str(out)]) == 0
    assert read_qrels(out) == {"q1": {"US5960481": 1, "US5253496": 1, "US6094768": 0}}
    assert "1 queries, 3 judgements (2 relevant)" in capsys.readouterr().out
    bad = tmp_path / "q2-qrels+ve.txt"
    bad.write_text("US1 US2\n")
    assert main(["qrels", "convert", str(bad), "--out", str(out)]) == 2
    assert "one document id per line" in capsys.readouterr().err


def _baseline() -> str:
    """A trained drawing checkpoint to compare with when one ships, else the zero-shot model itself."""
    return next((m.key for m in models([CKPT]) if m.task == "drawing" and m.trained), "zero-shot")


def test_evaluate_drawings_per_query_per_patent_and_bootstrap(dp2, tmp_path, capsys):
    out = tmp_path / "eval.json"
    args = [
        "evaluate",
        "drawings",
        "--corpus",
        str(dp2),
        "--model",
        "zero-shot",
        "--split",
        "all",
        "--against",
        _baseline(),
        "--checkpoints",
        CKPT,
        "--json",
        str(out),
    ]
    assert main(args) == 0
    table = capsys.readouterr().out
    assert "every patent of the corpus" in table and "per patent" in table
    result = json.loads(out.read_text())
    assert result["num_queries"] == 13 and result["num_patents"] == 12
    # second computation: the per-query and per-patent means from the per-query values
    vals = np.array([np.nan if v is None else v for v in result["per_query"]["patent_map"]])
    assert result["summary"]["patent_map"]["per_query"] == pytest.approx(np.nanmean(vals))
    assert result["metrics"]["patent_map"] == pytest.approx(np.nanmean(vals))
    by_patent: dict[str, list[float]] = {}
    for v, p in zip(result["per_query"]["subclass_map"], result["query_patents"], strict=True):
        if v is not None:
            by_patent.setdefault(p, []).append(v)
    macro = np.mean([np.mean(v) for v in by_patent.values()])
    assert result["summary"]["subclass_map"]["per_patent"] == pytest.approx(macro)
    c = result["comparison"]["patent_map"]["per_patent"]
    assert c["low"] <= c["diff"] <= c["high"]
    diff = np.nanmean(
        vals - np.array([np.nan if v is None else v for v in result["baseline_per_query"]["patent_map"]])
    )
    assert c["diff"] == pytest.approx(diff)


def test_evaluate_drawings_without_a_test_split_says_so(dp2, tmp_path, capsys):
    corpus = Corpus.load(dp2)
    corpus.splits = {}
    (dp2 / "splits.json").rename(tmp_path / "splits.json")
    try:
        assert (
            main(
                ["evaluate", "drawings", "--corpus", str(dp2), "--model", "zero-shot", "--checkpoints", CKPT]
            )
            == 0
        )
    finally:
        (tmp_path / "splits.json").rename(dp2 / "splits.json")
    assert "no test split: every figure is evaluated against all others" in capsys.readouterr().out


def test_search_drawings_finds_the_query_patent(dp2, tmp_path, capsys):
    corpus = Corpus.load(dp2)
    patent = corpus["USD0739807"]
    query = corpus.image_path(patent.figures[0])
    run = tmp_path / "d.trec"
    args = [
        "search",
        "drawings",
        "--corpus",
        str(dp2),
        "--model",
        "zero-shot",
        "--query",
        str(query),
        "--k",
        "5",
        "--cache-dir",
        str(tmp_path / "cache"),
        "--checkpoints",
        CKPT,
    ]
    assert main([*args, "--run", str(run)]) == 0
    ranked = read_run(run)[query.stem]
    assert max(ranked, key=ranked.get) == "USD0739807" and len(ranked) == 5
    assert main(args) == 0
    table = capsys.readouterr().out
    assert table.splitlines()[1].split()[1:3] == ["1", "USD0739807"]


def test_search_and_evaluate_text_agree_with_ir_measures(text_corpus, tmp_path, capsys):
    ir_measures = pytest.importorskip("ir_measures")
    corpus = Corpus.load(text_corpus)
    test = set(corpus.splits["test"])
    qrels = {q: d for q, d in corpus.qrels.items() if q in test}
    tsv = tmp_path / "queries.tsv"
    from patent_demo.text.search import candidate_text

    tsv.write_text("".join(f"{q}\t{candidate_text(corpus[q])}\n" for q in sorted(qrels)))
    run = tmp_path / "bm25.trec"
    common = ["--corpus", str(text_corpus), "--model", "bm25", "--cache-dir", str(tmp_path / "cache")]
    assert main(["search", "text", *common, "--queries", str(tsv), "--k", "100", "--run", str(run)]) == 0
    out = tmp_path / "eval.json"
    assert main(["evaluate", "text", *common, "--json", str(out)]) == 0
    result = json.loads(out.read_text())
    assert result["num_queries"] == len(qrels) and "test split" in result["evaluated"]
    qrels_file = tmp_path / "test.qrels"
    qrels_file.write_text("".join(f"{q} 0 {d} {r}\n" for q, ds in qrels.items() for d, r in ds.items()))
    # the TREC run as written (BM25 scores, ties re-ordered by trec_eval's rules): recall over the whole list
    ref = ir_measures.calc_aggregate(
        [ir_measures.R @ 100],
        ir_measures.read_trec_qrels(str(qrels_file)),
        ir_measures.read_trec_run(str(run)),
    )
    assert result["summary"]["recall@100"]["per_query"] == pytest.approx(ref[ir_measures.R @ 100], abs=1e-6)


def test_search_text_with_a_patsnap_xml_query(text_corpus, tmp_path, capsys):
    data = require_shared("cs3245_patsnap_corpus_qrels") / "patsnap-corpus" / "EP0049154B2.xml"
    args = [
        "search",
        "text",
        "--corpus",
        str(text_corpus),
        "--model",
        "bm25",
        "--query",
        str(data),
        "--k",
        "3",
        "--cache-dir",
        str(tmp_path / "cache"),
    ]
    assert main(args) == 0
    lines = capsys.readouterr().out.splitlines()
    # the query patent itself is left out; its US family member (same title) comes first
    assert len(lines) == 4 and all("EP0049154B2" not in line.split()[2] for line in lines[1:])
    top = Corpus.load(text_corpus)[lines[1].split()[2]]
    assert top.title == "In place gas cleaning of diffusion elements"


def test_unknown_model_and_raw_folder_are_one_line_errors(tmp_path, capsys):
    raw = require_shared("impact_design_patent_samples") / "patents"
    assert main(["evaluate", "drawings", "--corpus", str(raw), "--model", "zero-shot"]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "patent-demo corpus build --source redbook" in err
    assert main(["search", "text", "--corpus", str(raw), "--query", "x.txt"]) == 2
    assert main(["models", "--checkpoints", CKPT]) == 0
    capsys.readouterr()
    dp = tmp_path / "x"
    dp.mkdir()
    (dp / "manifest.jsonl").write_text("")
    assert main(["evaluate", "drawings", "--corpus", str(dp), "--model", "nope", "--checkpoints", CKPT]) == 2
    assert "unknown drawing model 'nope'" in capsys.readouterr().err


def test_app_refuses_a_raw_collection_in_one_line(tmp_path, capsys):
    import app

    raw = require_shared("impact_design_patent_samples") / "patents"
    assert app.main(["--corpus", str(raw), "--labels", str(tmp_path / "l.sqlite"), "--no-warmup"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and f"patent-demo corpus build --source redbook {raw}" in err


def test_evaluate_text_with_the_own_date_cut_off(text_corpus, tmp_path):
    """``evaluate text --before own`` scores what ``filters.evaluate_text_with_cutoff`` scores (itself checked
    against a naive filter-then-score), every query against all its citations: none is dropped, a cited
    document the cut-off hides counts as missed, and the output says how many were hidden."""
    from patent_demo.filters import evaluate_text_with_cutoff
    from patent_demo.text.bm25 import BM25Index
    from patent_demo.text.search import patent_query

    corpus = Corpus.load(text_corpus)
    test = set(corpus.splits["test"])
    qrels = {q: d for q, d in corpus.qrels.items() if q in test}
    out = tmp_path / "eval.json"
    args = [
        "evaluate",
        "text",
        "--corpus",
        str(text_corpus),
        "--model",
        "bm25",
        "--cache-dir",
        str(tmp_path / "c"),
        "--k",
        "10",
        "100",
        "--before",
        "own",
        "--json",
        str(out),
    ]
    assert main(args) == 0
    result = json.loads(out.read_text())
    assert "prior-art cut-off own" in result["evaluated"]
    queries = [patent_query(corpus[q]) for q in sorted(qrels)]
    ref = evaluate_text_with_cutoff(
        BM25Index.build(corpus.patents),
        None,
        queries,
        corpus,
        qrels,
        "own",
        ks=(10, 100),
        k_first=100,
        k_rerank=0,
    )
    assert result["num_queries"] == ref["num_queries"] == len(qrels)  # no query dropped
    assert sorted(result["queries"]) == sorted(qrels)
    cut = result["cutoff"]
    assert cut["relevant"] == sum(len(d) for d in qrels.values())
    assert cut["hidden"] == ref["hidden"] == sum(map(len, cut["hidden_per_query"].values())) > 0
    assert f"{cut['hidden']} of {cut['relevant']} relevant documents are not prior art" in result["evaluated"]
    recall = dict(zip(result["queries"], result["per_query"]["recall@100"], strict=True))
    for q, hidden in cut["hidden_per_query"].items():  # a hidden citation is never found
        assert set(hidden) <= set(qrels[q])
        assert recall[q] <= 1 - len(hidden) / len(qrels[q]) + 1e-12
    for key in ("recall@10", "map@100", "ndcg@10"):
        assert result["summary"][key]["per_query"] == pytest.approx(ref[key], abs=1e-9), key


def test_evaluate_text_scored_pairs_reports_pearson_and_spearman(tmp_path, scored_csv, capsys):
    """``evaluate text --pairs FILE.csv`` reads the USPPM file as shipped and reports Pearson and Spearman
    of a DSSDNet checkpoint (trained here on the file's training anchors) and of the bi-encoder baseline."""
    from patent_demo.text.scored import pearson, spearman
    from train.dssdnet import main as dssdnet

    csv_path, split_path = scored_csv
    ckpt = tmp_path / "ckpt"
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
                "--threads",
                "1",
                "--out",
                str(ckpt),
            ]
        )
        == 0
    )
    out = tmp_path / "eval.json"
    assert (
        main(
            [
                "evaluate",
                "text",
                "--pairs",
                str(csv_path),
                "--model",
                str(ckpt),
                "--against",
                "dense",
                "--split-file",
                str(split_path),
                "--split",
                "test",
                "--bootstrap",
                "100",
                "--json",
                str(out),
            ]
        )
        == 0
    )
    result = json.loads(out.read_text())
    anchors = set(json.loads(split_path.read_text())["test"])
    rows = [line.split(",") for line in csv_path.read_text().splitlines()[1:]]
    label = {r[0]: float(r[-1]) for r in rows if r[1] in anchors}
    assert sorted(result["ids"]) == sorted(label) and result["anchors"] == len(anchors)
    labels = [label[i] for i in result["ids"]]
    assert result["pearson"] == pytest.approx(pearson(result["scores"], labels), abs=1e-9)
    assert result["spearman"] == pytest.approx(spearman(result["scores"], labels), abs=1e-9)
    assert result["against"].startswith("dense") and "pearson" in result["comparison"]
    assert "Pearson" in capsys.readouterr().out
    bad = tmp_path / "bad.csv"
    bad.write_text("id,anchor,target,context,title,label\nx,a,b,A01,agri,2\n", encoding="utf-8")
    assert main(["evaluate", "text", "--pairs", str(bad), "--model", "dense"]) != 0
    assert "lies outside [0, 1]" in capsys.readouterr().err


def test_evaluate_drawings_with_the_own_date_cut_off(redbook_cli, tmp_path, capsys):
    """``evaluate drawings --before own`` on the Red Book: both rankings with the query's own patent left out,
    the cut-off's hidden relevant figures counted by a second computation, a paired comparison per metric."""
    from patent_demo.data.corpus import Corpus
    from patent_demo.hierarchy import patent_hierarchy
    from patent_demo.prior_art import admits, prior_art_date

    corpus_dir, _, _ = redbook_cli
    out = tmp_path / "cut.json"
    args = ["evaluate", "drawings", "--corpus", str(corpus_dir), "--model", "zero-shot", "--split", "all"]
    assert (
        main([*args, "--before", "own", "--checkpoints", CKPT, "--bootstrap", "200", "--json", str(out)]) == 0
    )
    table = capsys.readouterr().out
    assert "cut-off own" in table and "relevant figures hidden" in table
    r = json.loads(out.read_text())
    corpus = Corpus.load(corpus_dir)
    figures = [(p, f) for p in corpus for f in p.figures]
    hidden = 0
    for qp, _qf in figures:
        for gp, _gf in figures:
            same = patent_hierarchy(gp.codes)[0] == patent_hierarchy(qp.codes)[0]
            if gp.id != qp.id and same and not admits(gp, prior_art_date(qp)):
                hidden += 1
    assert r["hidden"]["subclass"] == hidden > 0
    assert r["num_queries"] == len(figures) and set(r["comparison"]) == set(r["summary"]) >= {"subclass_map"}
    assert all(
        v is None for v in r["per_query"].get("patent_map", [])
    )  # its own patent is all that level holds
    assert main([*args, "--before", "own", "--against", "zero-shot", "--checkpoints", CKPT]) != 0
    assert "--before compares" in capsys.readouterr().err
