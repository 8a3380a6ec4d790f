"""``patent-demo search text --feedback QRELS`` and ``patent-demo evaluate text --feedback-depth N`` on a
slice of the real cs3245 corpus, through the real entry point: a query with qrels lines ranks with its
Rocchio-refined dense vector (checked against numpy on the dense index's own vectors), a query without lines
ranks as before, bad qrels get a clear message, and the evaluation's residual figures are those of the
searches it stands for.

Tests: patent_demo/cli/text_feedback.py, patent_demo/cli/search_cmd.py, patent_demo/cli/evaluate_cmd.py
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from patent_demo.cli.main import main
from patent_demo.data.corpus import Corpus

pytestmark = pytest.mark.slow  # the packaged MiniLM encodes a 60-patent corpus


def _run(path):
    run = {}
    for line in path.read_text().splitlines():
        q, _, d, r, s, _ = line.split()
        run.setdefault(q, []).append((int(r), d, float(s)))
    return {q: [(d, s) for _, d, s in sorted(v)] for q, v in run.items()}


@pytest.fixture(scope="module")
def setup(small_text_corpus, tmp_path_factory):
    """The corpus, its query TSV, the common flags (one index cache for the module) and the plain dense run."""
    from patent_demo.text.search import candidate_text

    tmp = tmp_path_factory.mktemp("fb")
    corpus = Corpus.load(small_text_corpus)
    qids = sorted(corpus.qrels)
    tsv = tmp / "q.tsv"
    tsv.write_text("".join(f"{q}\t{candidate_text(corpus[q])}\n" for q in qids))
    common = [
        "--corpus",
        str(small_text_corpus),
        "--cache-dir",
        str(tmp / "cache"),
        "--checkpoints",
        str(tmp),
    ]
    search = ["search", "text", *common, "--queries", str(tsv), "--k", "20"]
    assert main([*search, "--model", "dense", "--run", str(tmp / "base.trec")]) == 0
    return corpus, qids, common, search, tmp, _run(tmp / "base.trec")


def test_a_query_with_qrels_lines_ranks_with_its_refined_vector(setup, capsys):
    from patent_demo.search.feedback import refine
    from patent_demo.text.dense import TextEncoder, dense_text
    from patent_demo.text.feedback import TextFeedback
    from patent_demo.text.search import candidate_text

    corpus, qids, _, search, tmp, base = setup
    q = qids[0]
    cited = sorted(corpus.qrels[q])[0]
    seen_not = next(d for d, _ in base[q] if d not in corpus.qrels[q])
    qrels = tmp / "labels.qrels"
    qrels.write_text(f"# one query labelled\n{q} 0 {cited} 1\n{q} 0 {seen_not} 0\nNOT-A-QUERY 0 {cited} 1\n")
    capsys.readouterr()
    assert main([*search, "--model", "dense", "--feedback", str(qrels), "--run", str(tmp / "fb.trec")]) == 0
    err = capsys.readouterr().err
    assert "1 queries refined with 2 labels (1 relevant, 1 not)" in err
    assert "1 qids that are not queries of this run" in err and "NOT-A-QUERY" in err
    got = _run(tmp / "fb.trec")
    for other in qids[1:]:  # no lines: exactly as before
        assert got[other] == base[other]
    enc = TextEncoder(precision="auto")
    ids = [p.id for p in corpus.patents]
    docs = enc.encode([dense_text(p) for p in corpus.patents])
    w = TextFeedback.load().dense
    v = refine(
        enc.encode([candidate_text(corpus[q])])[0], docs[[ids.index(cited)]], docs[[ids.index(seen_not)]], w
    )
    sims = docs @ v.vector
    want = [ids[j] for j in np.argsort(-sims, kind="stable") if ids[j] != q][:20]
    tol = 2e-2 if enc.precision == "bf16" else 1e-5
    np.testing.assert_allclose([s for _, s in got[q]], sims[[ids.index(d) for d in want]], atol=tol)
    np.testing.assert_allclose([sims[ids.index(d)] for d, _ in got[q]], [s for _, s in got[q]], atol=tol)
    if w.beta > 0:  # the relevant patent is pulled up (or stays first)
        rank = [d for d, _ in got[q]].index(cited) if cited in dict(got[q]) else 99
        before = [d for d, _ in base[q]].index(cited) if cited in dict(base[q]) else 99
        assert rank <= before


def test_bad_feedback_gets_a_clear_message(setup, capsys):
    _, qids, _, search, tmp, _ = setup
    bad = tmp / "bad.qrels"
    bad.write_text(f"{qids[0]} 0 X\n")
    capsys.readouterr()
    assert main([*search, "--model", "dense", "--feedback", str(bad)]) == 2
    err = capsys.readouterr().err
    assert "bad.qrels:1: a qrels line is 'qid 0 docid rel'" in err and "Traceback" not in err
    assert main([*search, "--model", "dense", "--feedback", str(tmp / "missing.qrels")]) == 2
    assert "not found" in capsys.readouterr().err
    stranger = tmp / "stranger.qrels"
    stranger.write_text(f"{qids[0]} 0 NO-SUCH-PATENT 1\n")
    assert main([*search, "--model", "dense", "--feedback", str(stranger)]) == 2
    assert "1 judged ids are not patents of the corpus, e.g. 'NO-SUCH-PATENT'" in capsys.readouterr().err
    good = tmp / "good.qrels"
    good.write_text(f"{qids[0]} 0 {qids[1]} 1\n")
    assert main([*search, "--model", "bm25", "--feedback", str(good)]) == 2
    assert "the bm25 list has none" in capsys.readouterr().err


def test_evaluate_feedback_depth_scores_the_searches_on_the_residual_collection(setup, capsys):
    from patent_demo.metrics.text import per_query_metrics
    from patent_demo.search.feedback import residual

    corpus, qids, common, search, tmp, _ = setup
    out = tmp / "eval.json"
    args = ["evaluate", "text", *common, "--model", "dense", "--split", "all", "--k", "10"]
    assert main([*args, "--feedback-depth", "3", "--bootstrap", "500", "--json", str(out)]) == 0
    table = capsys.readouterr().out
    assert "residual collection" in table and "map@10" in table
    result = json.loads(out.read_text())
    res = result["residual"]
    # the same by hand: the plain dense run, the examiner's labels of its top 3, the --feedback run
    assert main([*search, "--model", "dense", "--k", "13", "--run", str(tmp / "b.trec")]) == 0
    before = {q: [d for d, _ in v] for q, v in _run(tmp / "b.trec").items()}
    labels = {q: {d: int(corpus.qrels[q].get(d, 0)) for d in v[:3]} for q, v in before.items()}
    (tmp / "l.qrels").write_text(
        "".join(f"{q} 0 {d} {r}\n" for q, lab in labels.items() for d, r in lab.items())
    )
    assert (
        main(
            [
                *search,
                "--model",
                "dense",
                "--k",
                "13",
                "--feedback",
                str(tmp / "l.qrels"),
                "--run",
                str(tmp / "a.trec"),
            ]
        )
        == 0
    )
    after = {q: [d for d, _ in v] for q, v in _run(tmp / "a.trec").items()}
    judged = {q: set(lab) for q, lab in labels.items()}
    rest = residual(corpus.qrels, judged)
    pb = per_query_metrics(residual(before, judged), rest, [10])
    pa = per_query_metrics(residual(after, judged), rest, [10])
    assert (
        res["queries"]
        == len(pb)
        == result["judged"]["queries"] - sum(1 for q in qids if not set(corpus.qrels[q]) - judged[q])
    )
    assert res["before"]["map@10"] == pytest.approx(np.mean([v["map@10"] for v in pb.values()]), abs=1e-9)
    assert res["after"]["map@10"] == pytest.approx(np.mean([v["map@10"] for v in pa.values()]), abs=1e-9)
    d = res["difference"]["map@10"]
    assert d["low"] <= d["diff"] <= d["high"]
    assert result["judged"]["relevant"] == sum(1 for lab in labels.values() for r in lab.values() if r >= 1)
