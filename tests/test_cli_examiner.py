"""``patent-demo search … --before/--classification/--country/--kind`` and ``patent-demo labels report``
on corpora built from the real samples.

Tests: patent_demo/cli/search_cmd.py, patent_demo/cli/labels_cmd.py
"""

from __future__ import annotations

import pytest

from patent_demo.cli import main
from patent_demo.data.corpus import Corpus
from patent_demo.filters import prior_art_date
from patent_demo.metrics import read_run
from tests.conftest import CKPT


def test_search_text_with_cutoff_and_class(text_corpus, tmp_path):
    corpus = Corpus.load(text_corpus)

    def eligible_for(q):
        cut, sub = prior_art_date(q), q.codes["ipc"][0][:4]
        return {
            p.id
            for p in corpus
            if (
                p.date
                and p.date < cut
                or min([d for d in (p.priority_date, p.filing_date) if d] or ["9"]) < cut
            )
            and any(c.startswith(sub) for c in p.codes.get("ipc", []))
        }  # prior art: published before the query's own date, or filed (priority, else filing) before it

    q = next(p for p in corpus if p.codes.get("ipc") and p.text and len(eligible_for(p)) >= 5)
    tsv = tmp_path / "q.tsv"
    tsv.write_text(f"{q.id}\t{q.title}. {q.text}\n")
    run = tmp_path / "r.trec"
    sub = q.codes["ipc"][0][:4]
    args = [
        "search",
        "text",
        "--corpus",
        str(text_corpus),
        "--model",
        "bm25",
        "--queries",
        str(tsv),
        "--k",
        "20",
        "--cache-dir",
        str(tmp_path / "c"),
        "--before",
        "own",
        "--classification",
        sub,
        "--run",
        str(run),
    ]
    assert main(args) == 0
    ranked = read_run(run)[q.id]
    assert ranked and set(ranked) <= eligible_for(q) and q.id not in ranked
    assert main([*args[:-6], "--before", "2021-02-30"]) == 2  # a bad date: one-line error


def test_search_drawings_with_cutoff(dp2, tmp_path, capsys):
    corpus = Corpus.load(dp2)
    query = corpus.image_path(corpus["USD0739807"].figures[0])
    before = "2015-01-01"
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
        "--before",
        before,
        "--run",
        str(run),
    ]
    assert main(args) == 0
    ranked = read_run(run)[query.stem]
    older = {p.id for p in corpus if p.figures and p.date and p.date < before}
    assert len(ranked) == min(5, len(older)) and set(ranked) <= older
    assert "USD0739807" not in ranked or corpus["USD0739807"].date < before


def test_labels_report_command(tmp_path, capsys):
    from patent_demo.labels.store import Label, LabelStore, text_query_id

    store = LabelStore(tmp_path / "labels.sqlite")
    qid = text_query_id("a pump")
    store.add(Label("ann", qid, "text", "US1", "bm25", 1, 1.0, "relevant", query_text="a pump", category="X"))
    store.close()
    assert main(["labels", "report", "--labels", str(tmp_path / "labels.sqlite")]) == 0
    assert qid in capsys.readouterr().out
    assert (
        main(
            [
                "labels",
                "report",
                "--labels",
                str(tmp_path / "labels.sqlite"),
                "--query",
                qid,
                "--out",
                str(tmp_path / "out"),
            ]
        )
        == 0
    )
    assert (
        (tmp_path / "out" / f"search_report_{qid}.csv").read_text().splitlines()[1].startswith("X,,US1")
    )  # category, then the date category (E / P, none here)
    with pytest.raises(SystemExit):
        main(["labels", "report"])  # --labels is required


def test_corpus_build_split_sheets_on_real_sheets(tmp_path, capsys):
    from tests.conftest import require_shared

    src = require_shared("deeppatent2_segmentor_samples") / "images"
    out = tmp_path / "sheets"
    assert (
        main(
            [
                "corpus",
                "build",
                "--source",
                "deeppatent2",
                str(src),
                "--out",
                str(out),
                "--split-sheets",
                "--quiet",
            ]
        )
        == 0
    )
    printed = capsys.readouterr().out
    corpus = Corpus.load(out)
    n = sum(len(p.figures) for p in corpus)
    assert f"{n} figures now" in printed and n > 15  # 15 sheets, most of them hold two or more figures
    assert all(corpus.image_path(f).is_file() for _, f in corpus.figures())
    split = [f for _, f in corpus.figures() if f.path.startswith("figures/")]
    assert split and all(" part " in f.label for f in split)
