"""Whole-application queries against single-view queries on the Red Book validation pages.

    python bench/bench_application.py --model zero-shot --json docs/bench/application_redbook.json

Each of the 20 Red Book patents is one application: its drawing pages are the views. The gallery is every
other patent (its pages); one gallery item per patent, scored by ``patent_demo.drawing.application``.
Single view: each page alone ranks the other patents by their best page (the mean over a patent's pages
is reported per page, as the page-level protocol does). Application: all pages of the patent at once,
aggregated by ``mean`` or ``max``. Subclass / main-class mAP and hierarchical nDCG@10 over patents
(``patent_demo.metrics.drawing_metrics``; the query's own patent is skipped).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from patent_demo.drawing.application import per_view_patent_scores  # noqa: E402
from patent_demo.hierarchy import patent_hierarchy  # noqa: E402
from patent_demo.metrics import ItemLabels, drawing_metrics  # noqa: E402

KEYS = ("subclass_map", "main_map", "hier_ndcg@10")


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--model", default="zero-shot", help="zero-shot or a checkpoint directory")
    p.add_argument("--redbook", default="../shared/data/impact_design_patent_samples")
    p.add_argument("--json", default=None)
    a = p.parse_args()
    import torch

    from patent_demo.data.loaders.uspto import load_redbook
    from patent_demo.drawing.embed import embed_corpus_figures
    from patent_demo.drawing.finetune import load_encoder

    torch.set_num_threads(1)
    corpus = load_redbook(a.redbook)
    model, tf, _ = load_encoder("lite-trunk" if a.model == "zero-shot" else a.model)
    items = [(pt, f) for pt in corpus.patents for f in pt.figures]
    emb = embed_corpus_figures(model, tf, corpus, items, 16, False)
    pids = [pt.id for pt, _ in items]
    patents = list(dict.fromkeys(pids))
    keys = {pt.id: patent_hierarchy(pt.codes) for pt in corpus.patents}
    gallery = ItemLabels(patents, [keys[x][0] for x in patents], [keys[x][1] for x in patents])
    _, page_scores = per_view_patent_scores(emb, emb, pids)  # [pages, P]
    out = {"model": a.model, "pages": len(items), "patents": len(patents)}
    q = ItemLabels(pids, [keys[x][0] for x in pids], [keys[x][1] for x in pids])
    ev = drawing_metrics(
        q, gallery, scores=page_scores, self_index=[patents.index(x) for x in pids], ks=(10,)
    )
    out["single_view"] = {k: float(ev.summary()[k]) for k in KEYS}
    for how in ("mean", "max"):
        rows = []
        for pt in patents:
            mask = np.array([x == pt for x in pids])
            s = page_scores[mask]
            rows.append(s.mean(0) if how == "mean" else s.max(0))
        ev = drawing_metrics(
            gallery, gallery, scores=np.stack(rows), self_index=list(range(len(patents))), ks=(10,)
        )
        out[f"application_{how}"] = {k: float(ev.summary()[k]) for k in KEYS}
    print(json.dumps(out, indent=1))
    if a.json:
        Path(a.json).parent.mkdir(parents=True, exist_ok=True)
        Path(a.json).write_text(json.dumps(out, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
