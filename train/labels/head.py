"""The shipped HMCL head retrained from examiner labels, on cached trunk features.

What the app ships on USPC corpora is a linear head on the frozen, packaged EfficientNet-Lite0 trunk
(``checkpoints/hmcl-uspc``, made by ``train.hmcl.heads``). Examiner judgements retrain that head:

* **pairs**: the app's drawing labels, exported and leak-guarded (``train.labels.data``): a query is a
  corpus drawing (the app records its patent when the uploaded file is one); queries of the test split
  and judged candidates of the test *and* validation splits never train (they are the galleries the
  figures are measured on); a judged pair is ``(query, candidate, grade)``;
* **relevance** (HMCL Eq. 2 with the parent's weights ``s_p / s_s / s_m``): ``s_p`` between two augmented
  views of one drawing (the instance term, which keeps what tells one drawing from another), ``s_s`` for a
  pair judged relevant, ``s_m`` for partly, 0 for not relevant (a hard negative: it stays in every
  denominator); judgements carry over as the classification they stand for (drawings joined by pairs judged
  relevant share a subclass, joined by relevant or partly a class: two hits judged relevant for one query are
  positives of each other), a pair judged directly keeps its judgement; every other pair is an in-batch
  negative;
* **the step loop** is HMCL's (``train.hmcl.loop.fit``, ``hmcl_loss`` at ``tau``), one full batch a step
  holding every drawing the labels touch, two of its cached augmented views; the head starts from the
  parent's (``--from`` a head checkpoint) or from PCA whitening of the train drawings (``--from zero-shot``);
* **chosen on validation**: the step and the trunk weight of ``encoders.trunk_mix`` (``hmcl_heads.MIX_GRID``,
  1 = the trunk alone) with the best USPC val ``subclass_map + main_map``; test is scored once, after.

::

    python -m train.labels.head --corpus runs/uspc2007 --labels-rows OUT/labels/hmcl.jsonl \\
        --from checkpoints/hmcl-uspc --out checkpoints/hmcl-uspc-v2

``train.retrain`` calls :func:`retrain_head` when its ``--from`` is a head checkpoint; ``train.loop.curves``
calls :func:`fit_from_pairs` for every point of the learning curves.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import torch

from patent_demo.data.corpus import Corpus
from patent_demo.drawing.trunk import (
    KEYS,
    MIX_GRID,
    Split,
    evaluate,
    selection_score,
    trunk_features,
    whitening,
)
from patent_demo.hierarchy import HMCLWeights
from train.hmcl.heads import LinearHead
from train.hmcl.loop import Step, fit
from train.labels.data import guard_hmcl_rows, read_rows

log = logging.getLogger("train.labels.head")
PROG = "train.labels.head"


@dataclass(frozen=True)
class Pair:
    query: str  # patent ids (the first figure of each: one drawing a patent in the USPC corpus)
    candidate: str
    grade: int  # 2 relevant, 1 partly, 0 not


def pairs_of(rows: Sequence[dict]) -> list[Pair]:
    """The judged pairs of exported HMCL rows (``LabelStore.export_hmcl``) whose query is a corpus drawing."""
    out = []
    for row in rows:
        q = str((row.get("anchor") or {}).get("patent_id") or "")
        if not q:
            continue
        out += [Pair(q, str(it["patent_id"]), int(it.get("grade", 2))) for it in row.get("positives") or []]
        out += [Pair(q, str(it["patent_id"]), 0) for it in row.get("hard_negatives") or []]
    return [p for p in out if p.query != p.candidate]


def guarded_pairs(rows: Sequence[dict], corpus: Corpus) -> tuple[list[Pair], dict]:
    """The leak guard twice: test-split queries and candidates out, then validation-split candidates (and
    queries) out, so neither gallery the head is chosen or scored on ever trains it."""
    kept, test_stats = guard_hmcl_rows(rows, corpus, "test")
    kept, val_stats = guard_hmcl_rows(kept, corpus, "val")
    pairs = pairs_of(kept)
    stats = {
        "rows": len(rows),
        "test": test_stats.to_dict(),
        "val": val_stats.to_dict(),
        "pairs": len(pairs),
        "queries": len({p.query for p in pairs}),
    }
    return pairs, stats


def components(ids: Sequence[str], edges: Sequence[tuple[str, str]]) -> torch.Tensor:
    """The connected component of every id under ``edges`` (union-find), as ``[n]`` labels."""
    parent = list(range(len(ids)))
    at = {pid: i for i, pid in enumerate(ids)}

    def find(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    for a, b in edges:
        ra, rb = find(at[a]), find(at[b])
        if ra != rb:
            parent[max(ra, rb)] = min(ra, rb)
    return torch.tensor([find(i) for i in range(len(ids))])


def relevance(pairs: Sequence[Pair], weights: tuple[float, float, float]) -> tuple[list[str], torch.Tensor]:
    """The drawings the pairs touch (queries first, in order of appearance) and their relevance ``h [n, n]``
    over one view each (the instance term is added by :func:`label_batch_h` for two views).

    Judgements carry over as the classification they stand for: drawings joined by pairs judged relevant
    share a subclass (``s_s``), drawings joined by pairs judged relevant or partly share a main class
    (``s_m``), so two hits judged relevant for one query, or a hit of a hit, are positives of each other.
    A pair judged directly keeps its own judgement (``s_s`` / ``s_m`` / 0 for not relevant); the later of
    two judgements of one pair wins."""
    s_p, s_s, s_m = weights
    grade_w = {2: s_s, 1: s_m, 0: 0.0}
    ids = list(dict.fromkeys([p.query for p in pairs] + [p.candidate for p in pairs]))
    at = {pid: i for i, pid in enumerate(ids)}
    said: dict[frozenset, tuple[str, str, int]] = {}
    for p in pairs:  # a later judgement of the same pair (either way round) wins
        said[frozenset((p.query, p.candidate))] = (p.query, p.candidate, p.grade)
    sub = components(ids, [(a, b) for a, b, g in said.values() if g >= 2])
    main = components(ids, [(a, b) for a, b, g in said.values() if g >= 1])
    same_sub = sub[:, None] == sub[None, :]
    same_main = main[:, None] == main[None, :]
    h = torch.where(same_sub, s_s, torch.where(same_main, s_m, 0.0))
    for a, b, g in said.values():
        h[at[a], at[b]] = h[at[b], at[a]] = grade_w[g]
    h.fill_diagonal_(0.0)
    return ids, h


def label_batch_h(h: torch.Tensor, s_p: float) -> torch.Tensor:
    """``h`` of a batch with two views of each drawing (``[v1; v2]``): the pair weights in all four blocks and
    ``s_p`` between the two views of one drawing."""
    n = h.shape[0]
    big = h.repeat(2, 2)
    idx = torch.arange(n)
    big[idx, idx + n] = big[idx + n, idx] = s_p
    return big


def fit_from_pairs(
    pairs: Sequence[Pair],
    feats: dict,
    va: Split,
    init: tuple[torch.Tensor, torch.Tensor],
    weights,
    args,
    seed: int,
) -> dict:
    """Train the head on the pairs; returns the best-on-val ``{"step", "alpha", "head", "val", "curve"}``."""
    g = torch.Generator().manual_seed(seed)
    ids, h = relevance(pairs, weights)
    row = {pid: i for i, pid in enumerate(feats["ids"])}
    missing = [pid for pid in ids if pid not in row]
    if missing:
        raise ValueError(f"{len(missing)} judged drawings are not in the corpus features (e.g. {missing[0]})")
    rows = torch.tensor([row[pid] for pid in ids])
    clean, views = feats["clean"][rows], feats["views"][rows]
    have_views = ~torch.isnan(views).any(dim=2)  # [n, V]: candidates outside train have no augmented views
    pool = torch.cat([clean[:, None], torch.nan_to_num(views)], dim=1)  # [n, V + 1, D]
    allowed = torch.cat([torch.ones(len(ids), 1, dtype=torch.bool), have_views], dim=1)
    module = LinearHead(init[0], init[1], label_batch_h(h, weights[0]), args.tau)
    opt = torch.optim.AdamW([module.w, module.b], lr=args.head_lr, weight_decay=args.weight_decay)
    n = len(ids)

    def best_alpha(head) -> tuple[float, dict]:
        scored = [(a, evaluate(va, head, alpha=a)) for a in MIX_GRID]
        return max(scored, key=lambda ar: (selection_score(ar[1]), -ar[0]))

    alpha0, val0 = best_alpha(init)
    best = {"step": 0, "val": val0, "head": (init[0].clone(), init[1].clone()), "alpha": alpha0}
    curve = [(0, val0["metrics"]["subclass_map"], val0["metrics"]["main_map"], alpha0)]

    def steps():
        for _ in range(args.head_steps):
            scores = torch.rand(allowed.shape, generator=g).masked_fill(~allowed, -1.0)
            pick = scores.topk(2, dim=1).indices  # two distinct views of each drawing (clean among them)
            x = torch.cat([pool[torch.arange(n), pick[:, 0]], pool[torch.arange(n), pick[:, 1]]])
            yield Step((x,), {}, 2 * n)

    def after_step(step: int) -> bool:
        nonlocal best
        if step % args.eval_every == 0 or step == args.head_steps:
            head = module.head()
            alpha, res = best_alpha(head)
            curve.append((step, res["metrics"]["subclass_map"], res["metrics"]["main_map"], alpha))
            if selection_score(res) > selection_score(best["val"]):
                best = {"step": step, "val": res, "head": head, "alpha": alpha}
        return False

    fit(module, steps(), opt, total=args.head_steps, log_every=args.head_steps + 1, after_step=after_step)
    return best | {"curve": curve, "drawings": n}


# -- one retraining: labels -> a new head checkpoint -------------------------------------------------------------
def parent_head(
    parent: str, feats: dict, tr: Split, dim: int
) -> tuple[tuple[torch.Tensor, torch.Tensor], dict]:
    """The head to start from and the parent's config: a head checkpoint's weights, or (``zero-shot``) the
    PCA whitening of the train drawings (the untrained head of ``train.hmcl.heads``)."""
    if parent == "zero-shot":
        return whitening(tr.clean, dim), {"train": {}}
    from safetensors.torch import load_file

    from patent_demo.checkpoint import load_config

    cfg = load_config(parent)
    if (cfg.get("model") or {}).get("name") != "lite-head":
        raise SystemExit(f"{parent} is not a head checkpoint (model {cfg.get('model')}); use train.retrain")
    state = load_file(str(Path(parent) / "model.safetensors"))
    return (state["visual.head.proj.weight"].float(), state["visual.head.proj.bias"].float()), cfg


def weights_of(cfg: dict) -> tuple[float, float, float]:
    """The parent's HMCL weights (``s_p, s_s, s_m``), else the paper's (``hierarchy.HMCLWeights``)."""
    t = cfg.get("train") or {}
    if all(t.get(k) is not None for k in ("s_p", "s_s", "s_m")):
        return float(t["s_p"]), float(t["s_s"]), float(t["s_m"])
    return HMCLWeights().as_tuple()


def load_features(corpus: Corpus, args) -> tuple[dict, Split, Split, Split]:
    train_ids = {p.id for p in corpus.split("train")}
    feats = trunk_features(corpus, args.image_size, args.views, train_ids, args.cache_dir)
    index = {pid: i for i, pid in enumerate(feats["ids"])}
    return feats, *(Split(corpus, s, feats, index) for s in ("train", "val", "test"))


def retrain_head(args, corpus: Corpus, rows: Sequence[dict], argv: Sequence[str]) -> dict:
    """Train a head from the labels and write it as a checkpoint at ``args.out`` recording its parent, its
    label count and its validation (and test) figures; returns what it wrote to ``metrics.json``."""
    from patent_demo.checkpoint import save_checkpoint

    t0 = time.perf_counter()
    torch.set_num_threads(args.threads)
    feats, tr, va, te = load_features(corpus, args)
    init, parent_cfg = parent_head(args.parent, feats, tr, args.dim)
    weights = weights_of(parent_cfg)
    pairs, stats = guarded_pairs(rows, corpus)
    if not pairs:
        raise SystemExit(f"no drawing labels to train on after the leak guard: {json.dumps(stats)}")
    best = fit_from_pairs(pairs, feats, va, init, weights, args, args.seed)
    before_alpha = (parent_cfg.get("model") or {}).get("trunk_mix") if args.parent != "zero-shot" else None
    before = {
        "val": evaluate(va, init if args.parent != "zero-shot" else None, alpha=before_alpha),
        "test": evaluate(te, init if args.parent != "zero-shot" else None, alpha=before_alpha),
    }
    after = {"val": best["val"], "test": evaluate(te, best["head"], alpha=best["alpha"])}

    def block(res: dict, where: str) -> dict:
        return {
            where: {"metrics": res[where]["metrics"], "num_queries": len(res[where]["per_query"][KEYS[0]])}
        }

    version = int(parent_cfg.get("version") or 1) + 1
    model = {"name": "lite-head", "image_size": args.image_size, "trunk_mix": best["alpha"]}
    train = {
        "script": PROG,
        "parent": str(args.parent),
        "labels": str(args.labels_rows),
        "num_labels": len(pairs),
        "labelled_queries": stats["queries"],
        "leak_guard": stats,
        "best_step": best["step"],
        "trunk_mix": best["alpha"],
        "s_p": weights[0],
        "s_s": weights[1],
        "s_m": weights[2],
        "steps": args.head_steps,
        "lr": args.head_lr,
        "tau": args.tau,
        "seed": args.seed,
        "chosen_on": "USPC val (subclass_map + main_map)",
        "seconds": round(time.perf_counter() - t0, 1),
    }
    config = {
        "kind": "hmcl",
        "model": model,
        "base": "default",
        "delta": True,
        "scheme": "uspc",
        "parent": str(args.parent),
        "version": version,
        "num_labels": len(pairs),
        "train": train,
    }
    metrics = {
        "validation": {"uspc": {"metrics": best["val"]["metrics"]}},
        "test": {"uspc": {"metrics": after["test"]["metrics"]}},
        "before": {**block(before, "val"), **block(before, "test")},
        "after": {**block(after, "val"), **block(after, "test")},
    }
    state = {"visual.head.proj.weight": best["head"][0], "visual.head.proj.bias": best["head"][1]}
    save_checkpoint(args.out, state, config, metrics=metrics, command=["python", "-m", PROG, *argv])
    log.info(
        "head from %d pairs of %d queries: val sub %.3f main %.3f (step %d, trunk %.1f) in %.0f s -> %s",
        len(pairs),
        stats["queries"],
        best["val"]["metrics"]["subclass_map"],
        best["val"]["metrics"]["main_map"],
        best["step"],
        best["alpha"],
        time.perf_counter() - t0,
        args.out,
    )
    return metrics


def add_head_args(p: argparse.ArgumentParser) -> None:
    """The head options ``train.retrain`` and ``train.loop.curves`` share."""
    a = p.add_argument
    a("--image-size", type=int, default=224, help="trunk input size (as the shipped head)")
    a("--views", type=int, default=4, help="cached augmented views per train drawing")
    a("--dim", type=int, default=256, help="head output dimension (zero-shot parent)")
    a("--head-steps", type=int, default=300, help="full-batch steps of the head")
    a("--head-lr", type=float, default=3e-4, help="AdamW learning rate of the head (as hmcl-uspc)")
    a("--weight-decay", type=float, default=1e-4, help="AdamW weight decay")
    a("--tau", type=float, default=0.1, help="temperature of HMCL Eq. 4")
    a("--eval-every", type=int, default=25, help="val evaluation interval (the best val step is kept)")


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog=f"python -m {PROG}", description=__doc__.split("\n\n")[0])
    a = p.add_argument
    a(
        "--corpus",
        required=True,
        help="the USPC corpus the labels were made on (built with splits/uspc2007.json)",
    )
    a("--labels-rows", required=True, help="the app's HMCL export (hmcl.jsonl of LabelStore.export_hmcl)")
    a("--from", dest="parent", default="zero-shot", help="the head checkpoint to start from, or zero-shot")
    a("--out", required=True, help="the new checkpoint directory")
    a("--cache-dir", default="cache", help="where trunk features are cached")
    a("--seed", type=int, default=0, help="seed of the view sampling")
    a("--threads", type=int, default=2, help="torch CPU threads")
    add_head_args(p)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s", datefmt="%H:%M:%S")
    argv = list(sys.argv[1:] if argv is None else argv)
    args = build_parser().parse_args(argv)
    corpus = Corpus.load(args.corpus, validate=False)
    retrain_head(args, corpus, read_rows(args.labels_rows, "drawing"), argv)
    return 0


if __name__ == "__main__":
    sys.exit(main())
