"""``patent-demo search/evaluate text --model bm25|dense|hybrid|dssdnet|fused`` on a 60-patent slice of the
real cs3245 corpus: the dense list equals a brute-force numpy ranking of the packaged MiniLM's
embeddings, the hybrid list equals ``hybrid_fusion`` of the two first stages, and the evaluation scores
what the search returns, through the real entry point.

Tests: patent_demo/text/lists.py, patent_demo/cli/search_cmd.py, patent_demo/cli/evaluate_cmd.py
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from patent_demo.cli.main import main
from patent_demo.data.corpus import Corpus

pytestmark = (
    pytest.mark.slow
)  # the packaged MiniLM encodes a 60-patent corpus (about a minute on 2 shared cores)


def _run(path):
    run = {}
    for line in path.read_text().splitlines():
        q, _, d, r, s, _ = line.split()
        run.setdefault(q, []).append((int(r), d, float(s)))
    return {q: [d for _, d, _ in sorted(v)] for q, v in run.items()}


def test_dense_and_hybrid_lists_from_the_cli(small_text_corpus, tmp_path):
    from patent_demo.text.dense import TextEncoder, dense_text
    from patent_demo.text.hybrid import hybrid_fusion, load_hybrid_settings
    from patent_demo.text.search import candidate_text

    corpus = Corpus.load(small_text_corpus)
    qids = sorted(corpus.qrels)
    tsv = tmp_path / "q.tsv"
    tsv.write_text("".join(f"{q}\t{candidate_text(corpus[q])}\n" for q in qids))
    common = [
        "--corpus",
        str(small_text_corpus),
        "--cache-dir",
        str(tmp_path / "cache"),
        "--checkpoints",
        str(tmp_path),
    ]
    for name in ("bm25", "dense", "hybrid"):
        assert (
            main(
                [
                    "search",
                    "text",
                    *common,
                    "--model",
                    name,
                    "--queries",
                    str(tsv),
                    "--k",
                    "10",
                    "--run",
                    str(tmp_path / f"{name}.trec"),
                ]
            )
            == 0
        )
    runs = {n: _run(tmp_path / f"{n}.trec") for n in ("bm25", "dense", "hybrid")}
    enc = TextEncoder(precision="auto")
    docs = enc.encode([dense_text(p) for p in corpus.patents])
    ids = [p.id for p in corpus.patents]
    qv = enc.encode([candidate_text(corpus[q]) for q in qids])
    sims = qv @ docs.T
    for i, q in enumerate(qids):
        order = [ids[j] for j in np.argsort(-sims[i], kind="stable") if ids[j] != q][:10]
        top = sims[i][[ids.index(d) for d in order]]
        got = runs["dense"][q]
        np.testing.assert_allclose(
            sims[i][[ids.index(d) for d in got]], top, atol=2e-2 if enc.precision == "bf16" else 1e-5
        )
        if enc.precision == "fp32" and np.all(
            np.diff(top) < -1e-6
        ):  # no ties: the same ids in the same order
            assert got == order
    from patent_demo.results import Results
    from patent_demo.text.bm25 import BM25Index

    bm25 = BM25Index.build(corpus.patents)
    settings = load_hybrid_settings()
    for i, q in enumerate(qids[:3]):
        b = bm25.search(candidate_text(corpus[q]), k=len(ids))
        keep = [j for j, d in enumerate(b.ids) if d != q]
        b = Results([b.ids[j] for j in keep], b.scores[keep])
        order = [j for j in np.argsort(-sims[i], kind="stable") if ids[j] != q]
        d = Results([ids[j] for j in order], sims[i][order])
        assert runs["hybrid"][q] == hybrid_fusion(b, d, settings.weight, settings.method).ids[:10]
    out = tmp_path / "eval.json"
    assert (
        main(
            [
                "evaluate",
                "text",
                *common,
                "--model",
                "dense",
                "--against",
                "bm25",
                "--split",
                "all",
                "--k",
                "10",
                "--json",
                str(out),
            ]
        )
        == 0
    )
    result = json.loads(out.read_text())
    assert result["model"] == "dense" and result["against"] == "bm25" and result["num_queries"] == len(qids)
    from patent_demo.metrics import evaluate_run

    want = evaluate_run(runs["dense"], corpus.qrels, [10])
    assert result["summary"]["recall@10"]["per_query"] == pytest.approx(want["recall@10"], abs=1e-9)


def test_a_checkpoint_without_a_hybrid_fusion_weight_says_so(small_text_corpus, tmp_path, capsys):
    from tests.conftest import REPO_ROOT

    out = tmp_path / "eval.json"
    args = [
        "evaluate",
        "text",
        "--corpus",
        str(small_text_corpus),
        "--cache-dir",
        str(tmp_path / "cache"),
        "--model",
        "fused",
        "--reranker",
        "dssdnet-minilm",
        "--checkpoints",
        str(REPO_ROOT / "checkpoints"),
        "--split",
        "all",
        "--candidates",
        "10",
        "--k",
        "10",
        "--json",
        str(out),
    ]
    assert main(args) == 0
    err = capsys.readouterr().err
    assert "records no fusion weight tuned on the hybrid top 10: the fused list uses an untuned 0.5" in err
    assert json.loads(out.read_text())["model"] == "fused:dssdnet-minilm"
