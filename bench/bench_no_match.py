"""How well the "no good match" threshold separates unrelated from related searches, on real data.

Text: the 2,244 cs3245 patents (BM25 over title + abstract). Drawing: the 1,000 USPC-classed 2007
design drawings (zero-shot lite-clip, exact index). For each, the threshold is calibrated on 300
random items (seed 0; see ``patent_demo.calibration``), then measured on items not used for it:

* unrelated: held-out items searched with their class removed (the calibration's null search),
  the share flagged "no good match" (the threshold is now the 3 % quantile of judged related searches,
  see ``patent_demo.calibration``: expect a low share, and the app shows it only where false alarms
  stay at or under 5 %);
* related: searches that have a relevant document in the corpus, the share flagged (false alarms),
  and of the flagged / unflagged ones how often the top hit is relevant. Text: citing patents of the
  in-corpus citation pairs, top-1 over everything but the query; relevant = cited by the query.
  Drawing: patents whose USPC class-subclass has another patent; relevant = same class-subclass.

    python bench/bench_no_match.py [--text-only]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from patent_demo import calibration as cal  # noqa: E402
from patent_demo.data.corpus import Corpus, Figure, Patent  # noqa: E402

SHARED = ROOT.parent / "shared" / "data"


def text_bench() -> None:
    from patent_demo.data.loaders.textcorpus import load_text_corpus, qrels_from_pairs, read_pairs
    from patent_demo.text.bm25 import BM25Index
    from patent_demo.text.search import candidate_text

    root = SHARED / "cs3245_patsnap_corpus_qrels"
    corpus = load_text_corpus(root / "patsnap_docs.jsonl")
    qrels = qrels_from_pairs(read_pairs(root / "in_corpus_citation_pairs.tsv"))
    bm25 = BM25Index.build(corpus)
    t = time.perf_counter()
    th = cal.calibrate_text(bm25, corpus, samples=300, seed=0)
    took = time.perf_counter() - t
    used = {p.id for p in corpus if p.text or p.title}
    with_text = [p for p in corpus if (p.title or p.text).strip()]
    calib_ids = {with_text[i].id for i in cal._sample(len(with_text), 300, 0)}
    held = [p for p in with_text if p.id not in calib_ids]
    rng = np.random.default_rng(1)
    held = [held[i] for i in np.sort(rng.choice(len(held), size=300, replace=False))]
    null = cal.null_text_scores(bm25, corpus, held)
    flagged_null = float(np.mean(null <= th.threshold))
    weak, rel_weak, rel_strong = 0, [], []
    for qid, rel in sorted(qrels.items()):
        q = candidate_text(corpus[qid])
        res = bm25.search(q, k=2)
        ids = [d for d in res.ids if d != qid][:1]
        if not ids:
            continue
        s = cal.normalized_text_score(bm25, q, float(res.scores[res.ids.index(ids[0])]))
        hit = rel.get(ids[0], 0) > 0
        if th.is_weak(s):
            weak += 1
            rel_weak.append(hit)
        else:
            rel_strong.append(hit)
    n = len(rel_weak) + len(rel_strong)
    print(
        f"text (cs3245, {len(corpus)} patents, {len(used)} with text): threshold {th.threshold:.3f} "
        f"(null mean {th.null['mean']:.3f} ± {th.null['std']:.3f}, {took:.1f} s to calibrate)"
    )
    print(f"  unrelated held-out searches flagged: {flagged_null:.1%} of {len(held)}")
    print(
        f"  related searches (citing patents) flagged: {weak / n:.1%} of {n}; top-1 is a cited patent in "
        f"{np.mean(rel_strong):.1%} of the unflagged, {np.mean(rel_weak) if rel_weak else float('nan'):.1%} of the flagged"
    )


def drawing_bench() -> None:
    from patent_demo import taxonomy
    from patent_demo.drawing.embed import embed_figures
    from patent_demo.index.dense import DenseIndex
    from patent_demo.registry import builtin_models, default_drawing_encoder

    root = SHARED / "design_patents_2007_uspc_macaulay"
    patents = []
    for line in (root / "metadata_2007.txt").read_text().splitlines():
        pid, code, title = line.split("\t")[:3]
        cls, _, sub = code.partition("-")
        patents.append(
            Patent(
                pid,
                title=title,
                codes={"uspc": [taxonomy.normalize("uspc", f"{cls}/{sub}")]},
                figures=[Figure(f"images/{pid}.png")],
            )
        )
    corpus = Corpus(root, patents, name="uspc2007")
    spec = next(m for m in builtin_models() if m.task == "drawing")
    enc = default_drawing_encoder(spec)
    t = time.perf_counter()
    emb = embed_figures(
        enc.encode,
        (corpus.open_image(f) for _, f in corpus.figures()),
        batch_size=32,
        progress=False,
        total=len(patents),
    )
    print(f"drawing: embedded {len(patents)} drawings with {spec.label} in {time.perf_counter() - t:.0f} s")
    index = DenseIndex.build(emb, [f.path for _, f in corpus.figures()], [p.id for p in patents])
    th = cal.calibrate_drawing(index, corpus, samples=300, seed=0)
    calib = set(cal._sample(index.count, 300, 0).tolist())
    rest = np.array([i for i in range(index.count) if i not in calib])
    held = np.sort(np.random.default_rng(1).choice(rest, size=300, replace=False))
    null = cal.null_drawing_scores(index, corpus, held)
    sub = [p.codes["uspc"][0] for p in patents]
    counts = {s: sub.count(s) for s in set(sub)}
    s_all = index.embeddings @ index.embeddings.T
    np.fill_diagonal(s_all, -np.inf)
    rel_weak, rel_strong = [], []
    for i in range(len(patents)):
        if counts[sub[i]] < 2:
            continue
        j = int(np.argmax(s_all[i]))
        hit = sub[j] == sub[i]
        (rel_weak if th.is_weak(float(s_all[i, j])) else rel_strong).append(hit)
    n = len(rel_weak) + len(rel_strong)
    print(f"  threshold {th.threshold:.3f} (null mean {th.null['mean']:.3f} ± {th.null['std']:.3f})")
    print(f"  unrelated held-out searches flagged: {np.mean(null <= th.threshold):.1%} of {len(held)}")
    print(
        f"  related searches (class-subclass has another patent) flagged: {len(rel_weak) / n:.1%} of {n}; "
        f"top-1 same class-subclass in {np.mean(rel_strong):.1%} of the unflagged, "
        f"{np.mean(rel_weak) if rel_weak else float('nan'):.1%} of the flagged"
    )


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument(
        "--text-only", action="store_true", help="skip the drawing part (it embeds 1,000 drawings)"
    )
    args = ap.parse_args(argv)
    text_bench()
    if not args.text_only:
        drawing_bench()
    return 0


if __name__ == "__main__":
    sys.exit(main())
