"""Pooling of the zero-shot trunk's last feature map on validation: mean (the trunk's own), GeM (p = 3)
and max, on the USPC val split and the Red Book pages, scored by the one protocol (``score_embeddings``).

    python bench/bench_pooling.py --json docs/bench/pooling_zero_shot.json
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

KEYS = ("patent_map", "subclass_map", "main_map", "hier_ndcg@10")


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--uspc", default="runs/uspc2007", help="the USPC corpus built with splits/uspc2007.json")
    p.add_argument("--redbook", default="../shared/data/impact_design_patent_samples")
    p.add_argument("--json", default=None)
    a = p.parse_args()
    import torch
    import torch.nn.functional as F

    from patent_demo.data.corpus import Corpus
    from patent_demo.data.loaders.uspto import load_redbook
    from patent_demo.drawing.encoders import create_encoder
    from patent_demo.drawing.protocol import drawing_protocol, score_embeddings

    torch.set_num_threads(1)
    model, _, tf = create_encoder("lite-trunk")
    trunk = model.visual.trunk.eval()
    pools = {
        "mean": lambda f: f.mean((2, 3)),
        "gem3": lambda f: f.clamp_min(1e-6).pow(3).mean((2, 3)).pow(1 / 3),
        "max": lambda f: f.amax((2, 3)),
    }
    out = {}
    for name, corpus, split in (
        ("uspc_val", Corpus.load(a.uspc, validate=False), "val"),
        ("redbook", load_redbook(a.redbook), None),
    ):
        items, _, selfs = drawing_protocol(corpus, split, "all")
        feats = {k: [] for k in pools}
        with torch.no_grad():
            for i in range(0, len(items), 16):
                x = torch.stack([tf(corpus.open_image(f)) for _, f in items[i : i + 16]])
                fmap = trunk.forward_features(x)
                for k, fn in pools.items():
                    feats[k].append(fn(fmap))
        out[name] = {}
        for k in pools:
            e = F.normalize(torch.cat(feats[k]), dim=1).numpy().astype(np.float64)
            m = score_embeddings(items, items, e, e, selfs, silhouette=False)["metrics"]
            out[name][k] = {key: m[key] for key in KEYS if m.get(key) is not None}
    print(json.dumps(out, indent=1))
    if a.json:
        Path(a.json).write_text(json.dumps(out, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
