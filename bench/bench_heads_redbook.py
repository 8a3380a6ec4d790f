"""Cross-scheme transfer: every head ``train.hmcl.heads`` trained on the USPC train split (``--save-heads``),
scored on the Red Book validation pages (Locarno), every page against all others, beside zero-shot.

    python bench/bench_heads_redbook.py --heads runs/heads --json docs/bench/heads_redbook.json [--mix]

With ``--mix`` every head is also scored beside the trunk (``encoders.trunk_mix``) at each trunk weight of
``train.hmcl.heads.MIX_GRID`` (rows ``VARIANT@alpha``): these 20 patents are the Locarno validation set, so
the weight a Locarno corpus gets is chosen here.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import defaultdict
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

KEYS = ("patent_map", "subclass_map", "main_map", "hier_ndcg@10")


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--heads", default="runs/heads")
    p.add_argument("--redbook", default="../shared/data/impact_design_patent_samples")
    p.add_argument("--json", default=None)
    p.add_argument(
        "--mix", action="store_true", help="also every head beside the trunk at each MIX_GRID weight"
    )
    a = p.parse_args()
    import torch
    from safetensors.torch import load_file

    from patent_demo.drawing.encoders import trunk_mix
    from patent_demo.drawing.protocol import score_embeddings
    from patent_demo.drawing.trunk import RedBookSplit

    torch.set_num_threads(1)
    pages = RedBookSplit(a.redbook, 224, "cache")  # every page, trunk features (cached), the `all` protocol
    items, selfs, x = pages.items, np.arange(len(pages.items)), pages.clean

    def score(z: torch.Tensor) -> dict:
        e = torch.nn.functional.normalize(z, dim=1).numpy().astype(np.float64)  # (a mix is unit already)
        m = score_embeddings(items, items, e, e, selfs, silhouette=False)["metrics"]
        return {k: m[k] for k in KEYS}

    runs = defaultdict(list)
    runs["zero-shot"].append(score(x))
    for f in sorted(Path(a.heads).glob("*.safetensors")):
        variant = f.stem.rsplit("-", 1)[0]
        h = load_file(str(f))
        z = x @ h["weight"].T + h["bias"]
        runs[variant].append(score(z))
        if a.mix:
            from patent_demo.drawing.trunk import MIX_GRID

            for alpha in MIX_GRID[:-1]:  # 1.0 is the trunk alone, the zero-shot row
                runs[f"{variant}@{alpha:.1f}"].append(score(trunk_mix(x, z, alpha)))
    out = {
        v: {
            k: {
                "mean": float(np.mean([r[k] for r in rs])),
                "std": float(np.std([r[k] for r in rs], ddof=1)) if len(rs) > 1 else 0.0,
                "n": len(rs),
            }
            for k in KEYS
        }
        for v, rs in runs.items()
    }
    for v, m in out.items():
        print(f"{v:22s} " + " ".join(f"{k} {m[k]['mean']:.3f}±{m[k]['std']:.3f}" for k in KEYS))
    if a.json:
        Path(a.json).write_text(json.dumps(out, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
