"""``python -m train.text.cutoff`` on a slice of cs3245: every query of the split is scored with and without
the own-date cut-off against all its citations (none dropped), the hidden citations are those the rule does
not admit, a hidden citation is never found, and our means equal ir_measures'."""

from __future__ import annotations

import json

import pytest

from patent_demo.data.corpus import Corpus
from train.text import cutoff


def test_cutoff_scores_every_query_against_all_citations(small_text_corpus, tmp_path):
    corpus = Corpus.load(small_text_corpus)
    qids = sorted(corpus.qrels)
    split = {"train": [], "val": qids[:6], "test": qids[6:12]}
    (tmp_path / "split.json").write_text(json.dumps(split))
    out = tmp_path / "cutoff.json"
    args = ["--corpus", str(small_text_corpus), "--split-file", str(tmp_path / "split.json")]
    assert (
        cutoff.main([*args, "--cache-dir", str(tmp_path / "c"), "--bootstrap", "200", "--out", str(out)]) == 0
    )
    r = json.loads(out.read_text())
    total_hidden = 0
    for s in ("val", "test"):
        x = r["splits"][s]
        assert x["queries"] == split[s]  # no query dropped
        assert x["relevant"] == sum(len(corpus.qrels[q]) for q in split[s])

        def own_date(p):  # the filing date, else the earliest priority, else publication
            return p.filing_date or min([d for d in (p.priority_date, p.filing_date) if d] or [p.date])

        def prior(d, q):  # naive: published before the query's date, or filed before it
            p, cut = corpus[d], own_date(corpus[q])
            return (
                bool(p.date)
                and p.date < cut
                or min([x for x in (p.priority_date, p.filing_date) if x] or ["9"]) < cut
            )

        hidden = {q: [d for d in corpus.qrels[q] if not prior(d, q)] for q in split[s]}
        assert x["hidden"] == sum(map(len, hidden.values()))
        total_hidden += x["hidden"]
        for name in cutoff.LISTS:
            for cut in ("none", "own", "priority"):
                row = x["lists"][name][cut]
                assert len(row["per_query"]["map@10"]) == len(split[s])
                for m in ("map@10", "recall@100"):
                    assert row["mean"][m] == pytest.approx(row["ir_measures"][m], abs=1e-9), (s, name, cut, m)
            recall = dict(zip(split[s], x["lists"][name]["own"]["per_query"]["recall@100"], strict=True))
            for q, h in hidden.items():
                assert recall[q] <= 1 - len(h) / len(corpus.qrels[q]) + 1e-12
    assert total_hidden > 0  # the slice has citations the cut-off hides
    both = r["comparison"]["hybrid"]["map@10"]["val+test"]
    assert both["queries"] == 12 and both["low"] <= both["diff"] <= both["high"]
    assert "python -m train.text.cutoff" in r["command"] and r["cpu"]
    # the date is chosen on val alone: the rule re-applied by hand to the val means
    val = r["splits"]["val"]["lists"][r["shipped"]]
    gain = {c: val[c]["mean"]["map@10"] - val["none"]["mean"]["map@10"] for c in ("own", "priority")}
    fit = [c for c in gain if val[c]["mean"]["recall@100"] - val["none"]["mean"]["recall@100"] >= -0.05]
    if fit:
        assert r["choice"]["chosen"] == max(fit, key=gain.get)
    assert r["choice"]["app"] == "filing" and r["choice"]["app_follows"] == (r["choice"]["chosen"] == "own")
    from patent_demo.reports.text import cutoff_markdown

    page = cutoff_markdown(r)
    assert "chosen on val" in page and "earliest priority date instead" in page
