"""Cached trunk features of a corpus for ``train.hmcl_uspc``: the packaged EfficientNet-Lite0 trunk runs
once per drawing (and per augmented view), so a head trains in seconds on the CPU.

``trunk_features(corpus, size, views, ...)`` returns ``{"ids": [N], "clean": [N, 1280], "flip": [N, 1280],
"views": [N, V, 1280]}`` (pooled, un-normalised trunk outputs, float32; ``views`` of the train split only,
NaN elsewhere), cached under ``cache_dir`` keyed by everything it depends on.
"""

from __future__ import annotations

import hashlib
import json
import logging
from pathlib import Path

import torch

from patent_demo.data.corpus import Corpus
from patent_demo.drawing.encoders import create_encoder
from patent_demo.drawing.transforms import AugmentConfig

log = logging.getLogger("train.hmcl_uspc")
TRUNK = "lite-trunk"


def _key(corpus: Corpus, size: int, views: int, seed: int, ids: list[str]) -> str:
    h = hashlib.sha1(json.dumps([str(corpus.root), size, views, seed, TRUNK, ids]).encode()).hexdigest()
    return h[:16]


@torch.no_grad()
def trunk_features(
    corpus: Corpus, size: int, views: int, train_ids: set[str], cache_dir: str | Path = "cache", seed: int = 0,
    batch_size: int = 32,
) -> dict:  # fmt: skip
    """Pooled trunk features of every first figure of ``corpus`` at ``size`` px: clean, mirrored, and
    ``views`` augmented views (``DrawingTrainTransform``, seeded) of the patents in ``train_ids``."""
    ids = [p.id for p in corpus.patents]
    path = Path(cache_dir) / f"uspc-trunk-{size}-{views}-{_key(corpus, size, views, seed, ids)}.pt"
    if path.is_file():
        return torch.load(path, weights_only=True) | {"ids": ids}
    model, train_tf, eval_tf = create_encoder(TRUNK, image_size=size, augment=AugmentConfig())
    trunk = model.visual.eval()
    gen = torch.Generator().manual_seed(seed)
    clean, flip, aug = [], [], []
    patents = corpus.patents
    for start in range(0, len(patents), batch_size):
        chunk = patents[start : start + batch_size]
        images = [corpus.open_image(p.figures[0]) for p in chunk]
        x = torch.stack([eval_tf(im) for im in images])
        clean.append(trunk(x))
        flip.append(trunk(torch.flip(x, dims=[3])))
        v = torch.full((len(chunk), views, clean[-1].shape[1]), float("nan"))
        rows = [i for i, p in enumerate(chunk) if p.id in train_ids]
        if rows and views:
            xs = torch.stack([train_tf(images[i], generator=gen) for i in rows for _ in range(views)])
            v[rows] = trunk(xs).reshape(len(rows), views, -1)
        aug.append(v)
        log.info("trunk features %d px: %d / %d", size, start + len(chunk), len(patents))
    out = {"clean": torch.cat(clean), "flip": torch.cat(flip), "views": torch.cat(aug)}
    path.parent.mkdir(parents=True, exist_ok=True)
    torch.save(out, path.with_suffix(".tmp"))
    path.with_suffix(".tmp").replace(path)
    return out | {"ids": ids}


def main() -> None:
    """``python -m train.hmcl_uspc_data CORPUS SIZE VIEWS``: fill the cache (for running in the background)."""
    import sys

    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s", datefmt="%H:%M:%S")
    torch.set_num_threads(1)
    corpus = Corpus.load(sys.argv[1], validate=False)
    trunk_features(corpus, int(sys.argv[2]), int(sys.argv[3]), {p.id for p in corpus.split("train")})


if __name__ == "__main__":
    main()
