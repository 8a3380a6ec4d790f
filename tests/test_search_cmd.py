"""``patent-demo search drawings --feedback QRELS`` on a corpus built from the shared DeepPatent2 sample: a
query with qrels lines ranks with its refined query (checked against Rocchio written out here over the
index's stored vectors), a query without ranks as before, and a bad qrels file is a one-line error."""

from __future__ import annotations

import numpy as np
import pytest

from patent_demo.cli import main
from patent_demo.cli.main import build_parser
from patent_demo.data.corpus import Corpus
from patent_demo.metrics import read_run
from patent_demo.search.feedback import Feedback
from tests.conftest import CKPT


def _args(dp2, tmp_path, queries: list[str], k: int) -> list[str]:
    return [
        "search",
        "drawings",
        "--corpus",
        str(dp2),
        "--model",
        "zero-shot",
        "--query",
        *queries,
        "--k",
        str(k),
        "--cache-dir",
        str(tmp_path / "cache"),
        "--checkpoints",
        CKPT,
    ]


def _order(ranked: dict[str, float]) -> list[str]:
    return sorted(ranked, key=lambda d: -ranked[d])


def test_feedback_ranks_judged_queries_with_the_refined_query_and_the_others_as_before(dp2, tmp_path, capsys):
    from patent_demo.cli.common import resolve_model
    from patent_demo.cli.search_cmd import drawing_workbench
    from patent_demo.request import DrawingRequest

    corpus = Corpus.load(dp2)
    k = len(corpus.patents)
    a, b = (corpus.image_path(p.figures[0]) for p in corpus.patents[:2])
    base = _args(dp2, tmp_path, [str(a), str(b)], k)
    assert main([*base, "--run", str(tmp_path / "before.trec")]) == 0
    before = read_run(tmp_path / "before.trec")
    first = _order(before[a.stem])
    rel, nonrel = first[1], first[2]
    qrels = tmp_path / "fb.qrels"
    qrels.write_text(f"{a.stem} 0 {rel} 1\n{a.stem} 0 {nonrel} 0\n")
    capsys.readouterr()
    assert main([*base, "--feedback", str(qrels), "--run", str(tmp_path / "after.trec")]) == 0
    err = capsys.readouterr().err
    assert f"{a.stem}: refined with 1 relevant and 1 not relevant" in err and b.stem + ": refined" not in err
    after = read_run(tmp_path / "after.trec")
    assert after[b.stem] == before[b.stem]  # no qrels lines: ranked as before

    # the refined ranking, written out: each judged patent's vector by the config's rule (its best figure or
    # the mean of its unit figures), Rocchio, patents by best figure
    ns = build_parser().parse_args(base)
    spec = resolve_model("zero-shot", "drawing", [CKPT], corpus)
    wb = drawing_workbench(ns, corpus, spec)
    q = wb.search_drawing(DrawingRequest.build(wb, a, spec.key, k)).query_embedding
    index = wb.index(spec)
    emb, pids = np.asarray(index.embeddings), list(index.patent_ids)

    w = Feedback.load()

    def vector(pid):
        rows = [i for i, p in enumerate(pids) if p == pid]
        if w.hits == "mean":
            return np.mean([emb[r] / np.linalg.norm(emb[r]) for r in rows], axis=0)
        best = emb[max(rows, key=lambda r: float(emb[r] @ q))]
        return best / np.linalg.norm(best)

    want = q / np.linalg.norm(q) + w.beta * vector(rel) - w.gamma * vector(nonrel)
    scores = {p: max(float(emb[i] @ want) for i, x in enumerate(pids) if x == p) for p in set(pids)}
    assert _order(after[a.stem]) == sorted(scores, key=lambda p: -scores[p])
    assert after[a.stem] != before[a.stem]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("q1 USD1 1\n", "a qrels line is 'qid 0 docid rel'"),
        ("q1 0 USD1 yes\n", "a qrels line is 'qid 0 docid rel'"),
        ("q1 0 NOT-A-PATENT 1\n", "not patents of the corpus"),
    ],
)
def test_a_bad_qrels_file_is_a_one_line_error(dp2, tmp_path, capsys, text, message):
    corpus = Corpus.load(dp2)
    qrels = tmp_path / "bad.qrels"
    qrels.write_text(text)
    query = str(corpus.image_path(corpus.patents[0].figures[0]))
    assert main([*_args(dp2, tmp_path, [query], 3), "--feedback", str(qrels)]) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1 and "Traceback" not in err
    assert main([*_args(dp2, tmp_path, [query], 3), "--feedback", str(tmp_path / "missing")]) == 2
    assert "qrels file" in capsys.readouterr().err
