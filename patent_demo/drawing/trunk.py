"""Linear heads on the frozen, packaged EfficientNet-Lite0 trunk (``lite-trunk``): the trunk's pooled features
per drawing (clean, mirrored and augmented views, cached), the USPC and Red Book splits they are scored on,
MiniLM title features, PCA whitening, shrinkage LDA, and a head's embeddings and figures on a split.
"""

from __future__ import annotations

import hashlib
import json
import logging
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F

from patent_demo.atomic import atomic_write
from patent_demo.data.corpus import Corpus
from patent_demo.drawing.encoders import trunk_mix
from patent_demo.drawing.protocol import score_embeddings
from patent_demo.drawing.transforms import AugmentConfig
from patent_demo.hierarchy import factorize, patent_hierarchy

log = logging.getLogger(__name__)
TRUNK = "lite-trunk"
HEAD_ENCODER = "lite-head"  # the trunk with a trained linear head
MIX_GRID = tuple(i / 10 for i in range(11))  # the trunk's weight in a -mix head
KEYS = ("subclass_map", "main_map", "hier_ndcg@10", "subclass_ndcg@10", "main_ndcg@10")


def save_tensors(obj, path: Path) -> None:
    """``torch.save`` of ``obj`` to ``path``, written whole or not at all (a feature cache)."""
    atomic_write(path, lambda tmp: torch.save(obj, tmp))


# -- trunk features ------------------------------------------------------------------------------------------
@torch.no_grad()
def redbook_features(corpus: Corpus, items: list, size: int, cache_dir: str | Path = "cache") -> tuple:
    """Pooled trunk features ``(clean, mirrored)`` of the ``(patent, figure)`` items of a Red Book corpus at
    ``size`` px (the validation pages of a Locarno choice), cached under ``cache_dir``."""
    from patent_demo.drawing.encoders import create_encoder

    ids = [f"{p.id}/{f.path}" for p, f in items]
    key = hashlib.sha1(json.dumps([str(corpus.root), size, TRUNK, ids]).encode()).hexdigest()[:16]
    path = Path(cache_dir) / f"redbook-trunk-{size}-{key}.pt"
    if path.is_file():
        out = torch.load(path, weights_only=True)
        return out["clean"], out["flip"]
    model, _, eval_tf = create_encoder(TRUNK, image_size=size)
    trunk = model.visual.eval()
    clean, flip = [], []
    for start in range(0, len(items), 16):
        x = torch.stack([eval_tf(corpus.open_image(f)) for _, f in items[start : start + 16]])
        clean.append(trunk(x))
        flip.append(trunk(torch.flip(x, dims=[3])))
    out = {"clean": torch.cat(clean), "flip": torch.cat(flip)}
    save_tensors(out, path)
    return out["clean"], out["flip"]


def title_features(titles: list[str]) -> torch.Tensor:
    """MiniLM-L6 mean-pooled title features ``[N, 384]`` (the packaged text tower without its projection)."""
    from patent_demo.drawing.encoders import create_encoder, get_tokenizer

    model, _, _ = create_encoder(HEAD_ENCODER)
    model.text.proj = torch.nn.Identity()
    with torch.no_grad():
        return model.text(get_tokenizer(HEAD_ENCODER)(titles))


def _trunk_key(corpus: Corpus, size: int, views: int, seed: int, ids: list[str]) -> str:
    h = hashlib.sha1(json.dumps([str(corpus.root), size, views, seed, TRUNK, ids]).encode()).hexdigest()
    return h[:16]


@torch.no_grad()
def trunk_features(
    corpus: Corpus,
    size: int,
    views: int,
    train_ids: set[str],
    cache_dir: str | Path = "cache",
    seed: int = 0,
    batch_size: int = 32,
) -> dict:
    """Pooled trunk features of every first figure of ``corpus`` at ``size`` px: clean, mirrored, and
    ``views`` augmented views (``DrawingTrainTransform``, seeded) of the patents in ``train_ids``."""
    from patent_demo.drawing.encoders import create_encoder

    ids = [p.id for p in corpus.patents]
    path = Path(cache_dir) / f"uspc-trunk-{size}-{views}-{_trunk_key(corpus, size, views, seed, ids)}.pt"
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


# -- splits --------------------------------------------------------------------------------------------------
class Split:
    """One split's patents, their hierarchy ids and trunk features."""

    def __init__(self, corpus: Corpus, name: str, feats: dict, index: dict[str, int]) -> None:
        self.patents = corpus.split(name)
        rows = [index[p.id] for p in self.patents]
        self.items = [(p, p.figures[0]) for p in self.patents]
        self.clean = feats["clean"][rows]
        self.flip = feats["flip"][rows]
        self.views = feats["views"][rows]
        keys = [patent_hierarchy(p.codes) for p in self.patents]
        self.sub = torch.from_numpy(factorize([k[0] for k in keys]))
        self.main = torch.from_numpy(factorize([k[1] for k in keys]))
        self.titles = [p.title for p in self.patents]
        self.locarno: tuple[torch.Tensor, torch.Tensor] | None = None  # derived (subclass, main) ids

    def use_locarno(self, labels: dict[str, tuple[str, str]]) -> None:
        keys = [labels.get(p.id, ("", "")) for p in self.patents]
        self.locarno = (
            torch.from_numpy(factorize([k[0] for k in keys])),
            torch.from_numpy(factorize([k[1] for k in keys])),
        )


class RedBookSplit:
    """The Red Book validation pages as a split: every page of the 20 patents, trunk features (clean and
    mirrored) cached under ``cache_dir``; scored with the ``all`` protocol (every page against all others)."""

    def __init__(self, folder: str, size: int, cache_dir: str) -> None:
        from patent_demo.data.loaders.uspto import load_redbook
        from patent_demo.drawing.protocol import drawing_protocol

        corpus = load_redbook(folder)
        self.items, _, _ = drawing_protocol(corpus, None, "all")
        self.patents = sorted({p.id for p, _ in self.items})
        self.clean, self.flip = redbook_features(corpus, self.items, size, cache_dir)


# -- heads ---------------------------------------------------------------------------------------------------
def whitening(x: torch.Tensor, dim: int, eps: float = 1e-3) -> tuple[torch.Tensor, torch.Tensor]:
    """PCA whitening of ``x [N, 1280]`` to ``dim``: ``(W [dim, 1280], b [dim])`` with ``z = W x + b``."""
    x = x.double()
    mu = x.mean(0)
    u, s, vt = torch.linalg.svd(x - mu, full_matrices=False)
    var = s[:dim] ** 2 / (x.shape[0] - 1)
    w = vt[:dim] / torch.sqrt(var + eps * var.max())[:, None]
    if w.shape[0] < dim:  # fewer drawings than dimensions (tiny runs): zero rows
        w = torch.cat([w, w.new_zeros(dim - w.shape[0], w.shape[1])])
    return w.float(), (-(w @ mu)).float()


def lda(
    x: torch.Tensor, labels: torch.Tensor, dim: int, shrinkage: float
) -> tuple[torch.Tensor, torch.Tensor]:
    """Shrinkage LDA projection ``(W [dim, 1280], b [dim])`` of labelled ``x``; classes with one member only
    add to the within-class scatter as nothing (their deviation is 0) but still shape the between-class one."""
    from sklearn.discriminant_analysis import LinearDiscriminantAnalysis

    y = labels.numpy()
    keep = y >= 0
    k = min(dim, len(np.unique(y[keep])) - 1)
    model = LinearDiscriminantAnalysis(solver="eigen", shrinkage=shrinkage, n_components=k)
    model.fit(x[keep].numpy().astype(np.float64), y[keep])
    w = torch.from_numpy(model.scalings_[:, :k].T.copy()).float()
    w = torch.cat([w, torch.zeros(dim - k, w.shape[1])]) if k < dim else w
    mu = x.mean(0)
    return w, -(w @ mu)


def embed(
    head: tuple[torch.Tensor, torch.Tensor] | None, x: torch.Tensor, alpha: float | None = None
) -> np.ndarray:
    """Unit embeddings ``[N, D]`` of features ``x`` through a head (``None``: the trunk itself); with
    ``alpha`` the head's output beside the trunk's (``encoders.trunk_mix``)."""
    if head is None:
        return F.normalize(x, dim=1).numpy()
    z = x @ head[0].T + head[1]
    return (F.normalize(z, dim=1) if alpha is None else trunk_mix(x, z, alpha)).numpy()


def evaluate(split: Split | RedBookSplit, head, flip: bool = False, alpha: float | None = None) -> dict:
    x = (split.clean + split.flip) / 2 if flip else split.clean
    e = embed(head, x, alpha)
    res = score_embeddings(
        split.items, split.items, e, e, np.arange(len(e)), silhouette=False, per_query=True
    )
    keys = [*KEYS, *(["patent_map"] if res["metrics"].get("patent_map") is not None else [])]
    return {"metrics": res["metrics"], "per_query": {k: res["per_query"][k] for k in keys}}


def selection_score(res: dict) -> float:
    """What a step and a trunk weight are chosen by: subclass + main mAP, + patent mAP where a split has
    several drawings per patent (the Red Book pages), so a head may not buy classes with patents."""
    m = res["metrics"]
    return (m["subclass_map"] or 0.0) + (m["main_map"] or 0.0) + (m.get("patent_map") or 0.0)


def best_mix(split: Split, head) -> tuple[float, dict]:
    """The trunk weight of ``MIX_GRID`` with the best score on ``split`` (the lower weight on ties) and its result."""
    scored = [(a, evaluate(split, head, alpha=a)) for a in MIX_GRID]
    return max(scored, key=lambda ar: (selection_score(ar[1]), -ar[0]))
