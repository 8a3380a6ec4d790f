"""The untrained trunk at other input sizes, with and without mirror averaging: the zero-shot baseline's own
knobs, measured on validation only (the Red Book pages, Locarno; USPC val, USPC), never on a test split.

    python bench/bench_trunk_size.py --sizes 224 256 288 320 --json docs/bench/trunk_size.json

Each setting's embeddings are the packaged EfficientNet-Lite0 trunk's pooled features of the ink-cropped,
squared drawing at ``size`` px (``train.hmcl.features``: the Red Book pages by ``redbook_features``, the USPC
drawings by ``trunk_features``); ``+mirror`` averages them with those of the mirrored drawing. Every figure
is compared with the shipped zero-shot (224 px, no mirror) by a paired bootstrap (Red Book: pages grouped by
patent; USPC: one query per drawing).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

LEVELS = {"redbook": ("patent_map", "subclass_map", "main_map"), "uspc-val": ("subclass_map", "main_map")}


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--sizes", type=int, nargs="+", default=[224, 256, 288, 320])
    p.add_argument("--redbook", default="../shared/data/impact_design_patent_samples")
    p.add_argument(
        "--uspc-corpus", default="runs/uspc2007", help="the USPC corpus built with splits/uspc2007.json"
    )
    p.add_argument("--cache-dir", default="cache")
    p.add_argument("--bootstrap", type=int, default=2000)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--json", default=None)
    a = p.parse_args()
    import torch

    from patent_demo.data.corpus import Corpus
    from patent_demo.drawing.trunk import RedBookSplit, Split, evaluate, trunk_features
    from patent_demo.metrics import paired_bootstrap

    torch.set_num_threads(a.threads)
    uspc = Corpus.load(a.uspc_corpus, validate=False)
    train_ids = {q.id for q in uspc.split("train")}
    rows: dict = {}
    base: dict = {}
    for size in a.sizes:
        rb = RedBookSplit(a.redbook, size, a.cache_dir)
        feats = trunk_features(uspc, size, 0, train_ids, a.cache_dir)
        va = Split(uspc, "val", feats, {pid: i for i, pid in enumerate(feats["ids"])})
        for mirror in (False, True):
            name = f"{size}{' +mirror' if mirror else ''}"
            rows[name] = {}
            for where, split in (("redbook", rb), ("uspc-val", va)):
                res = evaluate(split, None, flip=mirror)
                if (size, mirror) == (224, False):
                    base[where] = res
                groups = [it[0].id for it in split.items] if where == "redbook" else None
                rows[name][where] = {
                    k: {
                        "value": res["metrics"][k],
                        "vs_224": paired_bootstrap(
                            res["per_query"][k],
                            base[where]["per_query"][k],
                            groups=groups,
                            n_boot=a.bootstrap,
                            seed=0,
                        ),
                    }
                    for k in LEVELS[where]
                }
            print(
                name.ljust(12),
                " | ".join(
                    f"{w} "
                    + " ".join(
                        f"{k.split('_')[0]} {v['value']:.3f} ({v['vs_224']['diff']:+.3f} "
                        f"[{v['vs_224']['low']:+.3f}, {v['vs_224']['high']:+.3f}])"
                        for k, v in r.items()
                    )
                    for w, r in rows[name].items()
                ),
                flush=True,
            )
    if a.json:
        out = {"command": "python bench/bench_trunk_size.py " + " ".join(sys.argv[1:]), "rows": rows}
        Path(a.json).write_text(json.dumps(out, indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
