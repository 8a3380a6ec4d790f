"""Query expansion (average QE over the top k) and database-side augmentation (DBA: each gallery item
averaged with its top k) on the USPC val split, for zero-shot and the shipped head, from the cached
trunk features of ``patent_demo.drawing.trunk.trunk_features`` (the query itself never counts as its own
neighbour).

    python bench/bench_qe.py --json docs/bench/qe_dba_uspc_val.json
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

KEYS = ("subclass_map", "main_map", "hier_ndcg@10")


def expand(e: np.ndarray, k: int) -> np.ndarray:
    """Each row averaged with its ``k`` nearest other rows, re-normalised (``k = 0``: unchanged)."""
    if k == 0:
        return e
    s = e @ e.T
    np.fill_diagonal(s, -np.inf)
    nn = np.argsort(-s, axis=1, kind="stable")[:, :k]
    out = e + e[nn].sum(axis=1)
    return out / np.linalg.norm(out, axis=1, keepdims=True)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--uspc", default="runs/uspc2007")
    p.add_argument("--head", default="checkpoints/hmcl-uspc")
    p.add_argument("--json", default=None)
    a = p.parse_args()
    import torch
    from safetensors.torch import load_file

    from patent_demo.data.corpus import Corpus
    from patent_demo.drawing.protocol import score_embeddings
    from patent_demo.drawing.trunk import trunk_features

    corpus = Corpus.load(a.uspc, validate=False)
    feats = trunk_features(corpus, 224, 4, {q.id for q in corpus.split("train")})
    index = {pid: i for i, pid in enumerate(feats["ids"])}
    val = corpus.split("val")
    items = [(q, q.figures[0]) for q in val]
    x = feats["clean"][[index[q.id] for q in val]]
    w = load_file(str(Path(a.head) / "model.safetensors"))
    models = {"zero-shot": x, "hmcl-uspc": x @ w["visual.head.proj.weight"].T + w["visual.head.proj.bias"]}
    out = {}
    for name, z in models.items():
        e = torch.nn.functional.normalize(z, dim=1).numpy().astype(np.float64)
        out[name] = {}
        for mode in ("none", "qe", "dba", "qe+dba"):
            for k in (0,) if mode == "none" else (1, 2, 3):
                g = expand(e, k) if "dba" in mode else e
                q = expand(g if "dba" in mode else e, k) if "qe" in mode else g
                m = score_embeddings(items, items, q, g, np.arange(len(items)), silhouette=False)["metrics"]
                out[name][f"{mode}-{k}"] = {key: round(m[key], 4) for key in KEYS}
    print(json.dumps(out, indent=1))
    if a.json:
        Path(a.json).write_text(json.dumps(out, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
