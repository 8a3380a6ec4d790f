"""HMCL where real labels exist: linear heads on the frozen, packaged EfficientNet-Lite0 trunk, trained on
the USPC train split of the 1,000 real 2007 design drawings (``splits/uspc2007.json``), chosen on USPC val,
scored once on USPC test; the variants x seeds sweep and the shipped head.

    python -m train.hmcl.heads --corpus runs/uspc2007 --out docs/results_hmcl_uspc.json \
        --ship checkpoints/hmcl-uspc

The trunk runs once per drawing (``patent_demo.drawing.trunk.trunk_features``: clean, mirrored and ``--views``
augmented views of each train drawing, cached); the trained variants run HMCL's one step loop
(``train.hmcl.loop.fit``) on a linear head ``z = W x + b`` (1280 -> 256, the ``lite-head`` encoder) on the
pooled features ``x``:

==================  ==========================================================================================
``zero-shot``       the trunk's own pooled features, nothing fitted (``lite-trunk``): the baseline
``pca-whiten``      head = PCA whitening fitted on the train drawings (no labels): the head's initialisation
``lda-subclass``    head = linear discriminant of the train USPC subclasses (shrinkage LDA, no training)
``lda-main``        the same for main classes
``cl``              whitening init, then contrastive training: the only positive is another augmented view
``hmcl-paper``      HMCL (Eq. 2-4), weights 1 / 0.35 / 0.2 per positive (the paper's form)
``hmcl-level``      HMCL with level-balanced weights (``losses.hmcl.level_balanced_weights``)
``hmcl-*-text``     the same plus the title text term of Eq. 5 (lambda 0.2; MiniLM titles)
``hmcl-*-shuffled`` the same HMCL with USPC labels shuffled over the train patents (a control)
``hmcl-*-mix``      the same HMCL head, its output beside the trunk's own features (``encoders.trunk_mix``)
                    with the weight ``alpha`` of the trunk chosen on val with the step (``MIX_GRID``; 1 is
                    the trunk alone, so on val it cannot fall below zero-shot)
==================  ==========================================================================================

Each step sees every train patent twice (two of its augmented views), so a step is one full batch of
``2 x 600`` items. The step count is chosen on val (``--eval-every``; the checkpoint of the best val
``subclass_map + main_map`` is kept). Per variant and seed the val and test figures are recorded; test
figures are only printed, never used to choose. Bootstrap intervals (``patent_demo.metrics.paired_bootstrap``)
compare each run's test queries with zero-shot's.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import torch

from patent_demo.data.corpus import Corpus
from patent_demo.drawing.trunk import (
    HEAD_ENCODER,
    KEYS,
    RedBookSplit,
    Split,
    best_mix,
    evaluate,
    lda,
    selection_score,
    title_features,
    trunk_features,
    whitening,
)
from patent_demo.hierarchy import HMCLWeights
from patent_demo.losses.hmcl import (
    LEVEL_MARKS,
    hierarchical_weights,
    hmcl_loss,
    image_text_loss,
    weights_from_levels,
)
from patent_demo.metrics import paired_bootstrap
from train.hmcl.loop import Step, fit

log = logging.getLogger("train.hmcl.heads")
PROG = "train.hmcl.heads"
VARIANTS = (
    "zero-shot",
    "pca-whiten",
    "lda-subclass",
    "lda-main",
    "cl",
    "hmcl-paper",
    "hmcl-level",
    "hmcl-paper-text",
    "hmcl-level-text",
    "hmcl-paper-shuffled",
    "hmcl-level-shuffled",
    "hmcl-paper-mix",
    "hmcl-level-mix",
)
FITTED = ("pca-whiten", "lda-subclass", "lda-main")


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog=f"python -m {PROG}", description=__doc__.split("\n\n")[0])
    a = p.add_argument
    a("--corpus", default=None, help="the USPC 2007 corpus built with --splits splits/uspc2007.json")
    a("--variants", nargs="+", default=list(VARIANTS), choices=VARIANTS, help="what to run")
    a("--seeds", type=int, nargs="+", default=[0, 1, 2], help="training seeds")
    a("--image-size", type=int, default=224, help="input size of the trunk")
    a("--views", type=int, default=4, help="augmented views cached per train drawing")
    a("--dim", type=int, default=256, help="head output dimension")
    a("--steps", type=int, default=300, help="full-batch training steps")
    a("--eval-every", type=int, default=25, help="val evaluation interval (the best val step is kept)")
    a("--lr", type=float, default=1e-3, help="AdamW learning rate")
    a("--weight-decay", type=float, default=1e-4, help="AdamW weight decay")
    a("--tau", type=float, default=0.1, help="temperature of Eq. 4")
    a(
        "--weights",
        type=float,
        nargs=3,
        default=HMCLWeights().as_tuple(),
        metavar=("S_P", "S_S", "S_M"),
        help="Eq. 2 weights: same patent, same subclass, same main class",
    )
    a(
        "--hierarchy",
        choices=("uspc", "locarno", "both"),
        default="uspc",
        help="the classes HMCL trains on: USPC, the Locarno classes derived from the titles (--locarno-labels), "
        "or both (a pair's relevance is the higher of the two)",
    )
    a(
        "--locarno-labels",
        default="splits/uspc2007_locarno.json",
        help="derived Locarno labels (train.hmcl.labels)",
    )
    a(
        "--select-on",
        choices=("uspc", "redbook"),
        default="uspc",
        help="where the step (and a -mix variant's trunk weight) is chosen: USPC val, or the Red Book pages "
        "(Locarno validation: every page against all others; patent + subclass + main mAP)",
    )
    a(
        "--redbook",
        default="../shared/data/impact_design_patent_samples",
        help="the Red Book validation patents",
    )
    a("--text-weight", type=float, default=0.2, help="lambda of the text term (Eq. 5) in the -text variants")
    a("--shrinkage", type=float, default=0.5, help="LDA covariance shrinkage")
    a("--bootstrap", type=int, default=2000, help="bootstrap resamples")
    a("--cache-dir", default="cache", help="where trunk features are cached")
    a("--threads", type=int, default=1, help="torch CPU threads")
    a(
        "--no-test",
        action="store_true",
        help="exploration on val: test is neither computed nor printed (choices are made with this flag on)",
    )
    a("--out", default=None, help="write the results JSON here")
    a("--ship", default=None, help="write the best-on-val run of --ship-variant as a checkpoint here")
    a("--ship-variant", default=None, help="variant to ship (default: the best on val of the trained ones)")
    a("--save-heads", default=None, help="save every run's head here (for --merge)")
    a(
        "--merge",
        nargs="+",
        default=None,
        metavar="JSON",
        help="merge result files of parallel runs (their heads in --save-heads) instead of training; with --ship "
        "the best-on-val run over all of them is shipped",
    )
    return p


# -- training ------------------------------------------------------------------------------------------------
class LinearHead(torch.nn.Module):
    """``z = W x + b`` from the whitening init, with the HMCL loss of relevance ``h`` (Eq. 4) and, given a
    text projection, the title term of Eq. 5; ``forward(x)`` returns the loss terms for ``fit``."""

    def __init__(self, w0, b0, h, tau, text_proj=None, text=None, text_weight=0.0, pid=None) -> None:
        super().__init__()
        self.w, self.b = torch.nn.Parameter(w0.clone()), torch.nn.Parameter(b0.clone())
        self.h, self.tau, self.text_proj = h, tau, text_proj
        self.text, self.text_weight, self.pid = text, text_weight, pid

    def head(self) -> tuple[torch.Tensor, torch.Tensor]:
        return self.w.detach().clone(), self.b.detach().clone()

    def forward(self, x: torch.Tensor) -> dict[str, torch.Tensor]:
        z = x @ self.w.T + self.b
        out = {"hmcl_loss": hmcl_loss(z, self.h, tau=self.tau)}
        if self.text_proj is not None:
            t = self.text_proj(self.text).repeat(2, 1)
            out["text_loss"] = self.text_weight * image_text_loss(z, t, 1 / 0.07, patent_ids=self.pid)
        return out


def pair_levels(tr: Split, hierarchy: str, shuffle: torch.Generator | None = None) -> torch.Tensor:
    """``[n, n]`` closest class level two train patents share (``LEVEL_MARKS``: subclass, main; 0 none), the higher
    over the hierarchies trained on (``uspc``, ``locarno``: the derived labels, ``both``); the diagonal 0.
    With ``shuffle`` the labels of each hierarchy are permuted over the patents (the control)."""
    hierarchies = {
        "uspc": [(tr.sub, tr.main)],
        "locarno": [tr.locarno],
        "both": [(tr.sub, tr.main), tr.locarno],
    }
    levels = []
    for sub, main in hierarchies[hierarchy]:
        if shuffle is not None:
            perm = torch.randperm(len(sub), generator=shuffle)
            sub, main = sub[perm], main[perm]
        levels.append(hierarchical_weights(torch.arange(len(sub)), sub, main, *LEVEL_MARKS))
    return torch.stack(levels).amax(0)


def level_weights(level: torch.Tensor, variant: str, weights: Sequence[float]) -> torch.Tensor:
    """Eq. 2 weights of a variant from a pair's closest shared level (``losses.hmcl.LEVEL_MARKS``; the higher
    of several hierarchies): ``cl`` keeps the patent only, ``hmcl-paper*`` the paper's form, the rest
    level-balanced (``losses.hmcl.level_balanced_weights``)."""
    s_p, s_s, s_m = weights
    if variant == "cl":
        return weights_from_levels(level, s_p, 0.0, 0.0)
    return weights_from_levels(level, s_p, s_s, s_m, balanced=not variant.startswith("hmcl-paper"))


def train_head(variant: str, seed: int, tr: Split, va: Split, args, text: torch.Tensor | None) -> dict:
    """Train one variant from the whitening init; the head at the best val step is returned."""
    g = torch.Generator().manual_seed(seed)
    w0, b0 = whitening(tr.clean, args.dim)
    text_proj = None
    if variant.endswith("-text"):
        text_proj = torch.nn.Linear(text.shape[1], args.dim)
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(seed)
            text_proj.reset_parameters()
    n = len(tr.patents)
    pid = torch.arange(n).repeat(2)
    shuffle = g if variant.endswith("-shuffled") else None
    same_patent = (pid[:, None] == pid[None, :]) & ~torch.eye(2 * n, dtype=torch.bool)  # the two views
    level = torch.where(same_patent, 1.0, pair_levels(tr, args.hierarchy, shuffle).repeat(2, 2))
    h = level_weights(level, variant, args.weights)
    module = LinearHead(w0, b0, h, args.tau, text_proj, text, args.text_weight, pid)
    params = [module.w, module.b] + (list(text_proj.parameters()) if text_proj is not None else [])
    opt = torch.optim.AdamW(params, lr=args.lr, weight_decay=args.weight_decay)
    pool = torch.cat([tr.clean[:, None], tr.views], dim=1)  # [n, V + 1, 1280]
    mixed = variant.endswith("-mix")

    def score_val(head) -> tuple[float | None, dict]:
        return best_mix(va, head) if mixed else (None, evaluate(va, head))

    alpha0, val0 = score_val((w0, b0))
    best = {"step": 0, "val": val0, "head": (w0.clone(), b0.clone()), "alpha": alpha0}
    curve = [(0, best["val"]["metrics"]["subclass_map"], best["val"]["metrics"]["main_map"])]

    def steps():  # every train patent twice (two of its augmented views): one full batch per step
        for _ in range(args.steps):
            pick = torch.stack([torch.randperm(pool.shape[1], generator=g)[:2] for _ in range(n)])
            x = torch.cat([pool[torch.arange(n), pick[:, 0]], pool[torch.arange(n), pick[:, 1]]])
            yield Step((x,), {}, 2 * n)

    def after_step(step: int) -> bool:
        nonlocal best
        if step % args.eval_every == 0:
            head = module.head()
            alpha, res = score_val(head)
            curve.append((step, res["metrics"]["subclass_map"], res["metrics"]["main_map"]))
            if selection_score(res) > selection_score(best["val"]):
                best = {"step": step, "val": res, "head": head, "alpha": alpha}
        return False

    fit(module, steps(), opt, total=args.steps, log_every=args.steps + 1, after_step=after_step)
    best["curve"] = curve
    return best


# -- the run -------------------------------------------------------------------------------------------------
def summarise(values: list[float]) -> dict:
    v = np.array([np.nan if x is None else x for x in values], dtype=np.float64)
    return {
        "mean": float(np.nanmean(v)),
        "std": float(np.nanstd(v, ddof=1)) if len(v) > 1 else 0.0,
        "values": [float(x) for x in v],
    }


def run(args) -> dict:
    torch.set_num_threads(args.threads)
    corpus = Corpus.load(args.corpus, validate=False)
    train_ids = {p.id for p in corpus.split("train")}
    feats = trunk_features(corpus, args.image_size, args.views, train_ids, args.cache_dir)
    index = {pid: i for i, pid in enumerate(feats["ids"])}
    tr, va, te = (Split(corpus, s, feats, index) for s in ("train", "val", "test"))
    if args.hierarchy != "uspc":
        from train.hmcl.labels import load as load_locarno

        tr.use_locarno(load_locarno(args.locarno_labels))
    if args.select_on == "redbook":  # Locarno validation: the Red Book pages choose the step and the weight
        va = RedBookSplit(args.redbook, args.image_size, args.cache_dir)
    text = title_features(tr.titles) if any(v.endswith("-text") for v in args.variants) else None
    results: dict = {
        "setup": {
            "corpus": str(corpus.root),
            "image_size": args.image_size,
            "views": args.views,
            "splits": {n: len(s.patents) for n, s in (("train", tr), ("val", va), ("test", te))},
            "args": {k: v for k, v in vars(args).items() if k not in ("out", "ship")},
        },
        "variants": {},
    }
    if args.no_test:  # exploration: score val twice, never test
        te = va
    zs_val, zs_test = evaluate(va, None), evaluate(te, None)
    results["zero_shot_flip"] = {"val": evaluate(va, None, flip=True)["metrics"]}
    heads: dict = {}
    for variant in args.variants:
        t0 = time.perf_counter()
        runs = []
        if variant == "zero-shot":
            runs.append({"seed": None, "val": zs_val, "test": zs_test, "head": None, "step": 0})
        elif variant in FITTED:
            if variant == "pca-whiten":
                head = whitening(tr.clean, args.dim)
            else:
                head = lda(
                    tr.clean, tr.sub if variant == "lda-subclass" else tr.main, args.dim, args.shrinkage
                )
            runs.append(
                {"seed": None, "val": evaluate(va, head), "test": evaluate(te, head), "head": head, "step": 0}
            )
        else:
            for seed in args.seeds:
                best = train_head(variant, seed, tr, va, args, text)
                runs.append(
                    {
                        "seed": seed,
                        "val": best["val"],
                        "test": evaluate(te, best["head"], alpha=best["alpha"]),
                        "head": best["head"],
                        "step": best["step"],
                        "curve": best["curve"],
                        "alpha": best["alpha"],
                    }
                )
        heads[variant] = runs
        entry = {"runs": [], "val": {}, "test": {}, "test_vs_zero_shot": {}}
        for r in runs:
            boot = {
                k: paired_bootstrap(
                    r["test"]["per_query"][k], zs_test["per_query"][k], n_boot=args.bootstrap, seed=0
                )
                for k in KEYS
            }
            entry["runs"].append(
                {
                    "seed": r["seed"],
                    "best_step": r["step"],
                    "curve": r.get("curve"),
                    "alpha": r.get("alpha"),
                    "val": r["val"]["metrics"],
                    "test": r["test"]["metrics"],
                    "test_vs_zero_shot": boot,
                }
            )
        for where in ("val", "test"):
            keys = [k for k in (*KEYS, "patent_map") if runs[0][where]["metrics"].get(k) is not None]
            entry[where] = {k: summarise([r[where]["metrics"][k] for r in runs]) for k in keys}
        entry["test_vs_zero_shot"] = {
            k: summarise([r["test_vs_zero_shot"][k]["diff"] for r in entry["runs"]]) for k in KEYS
        }
        results["variants"][variant] = entry
        v, t = entry["val"], entry["test"]
        if args.no_test:
            log.info(
                "%-16s val sub %.3f±%.3f main %.3f±%.3f hier %.3f steps %s (%.0fs)",
                variant,
                v["subclass_map"]["mean"],
                v["subclass_map"]["std"],
                v["main_map"]["mean"],
                v["main_map"]["std"],
                v["hier_ndcg@10"]["mean"],
                [r["step"] for r in runs],
                time.perf_counter() - t0,
            )
            continue
        log.info(
            "%-16s val sub %.3f main %.3f hier %.3f | test sub %.3f±%.3f main %.3f±%.3f hier %.3f (%.0fs)",
            variant,
            v["subclass_map"]["mean"],
            v["main_map"]["mean"],
            v["hier_ndcg@10"]["mean"],
            t["subclass_map"]["mean"],
            t["subclass_map"]["std"],
            t["main_map"]["mean"],
            t["main_map"]["std"],
            t["hier_ndcg@10"]["mean"],
            time.perf_counter() - t0,
        )
    if args.no_test:
        for entry in results["variants"].values():
            entry.pop("test")
            entry.pop("test_vs_zero_shot")
            for r in entry["runs"]:
                r.pop("test")
                r.pop("test_vs_zero_shot")
    results["_heads"] = heads
    results["_splits"] = (tr, va, te)
    return results


def best_variant(variants: dict, asked: str | None) -> str:
    """``asked``, else the trained variant (neither fitted nor shuffled) with the best mean val score."""
    trained = [v for v in variants if v not in ("zero-shot", *FITTED) and "shuffled" not in v]
    return asked or max(
        trained, key=lambda v: np.mean([selection_score({"metrics": r["val"]}) for r in variants[v]["runs"]])
    )


def choose_ship(results: dict, asked: str | None) -> tuple[str, dict]:
    """The variant (asked, else the trained one with the best mean val score) and its best-val run."""
    name = best_variant(results["variants"], asked)
    runs = results["_heads"][name]
    best = max(range(len(runs)), key=lambda i: selection_score(runs[i]["val"]))
    return name, runs[best]


def ship(directory: str, variant: str, chosen: dict, results: dict, argv: list[str]) -> None:
    """Write the chosen head as a ``lite-head`` delta checkpoint (head weight and bias only)."""
    from patent_demo.checkpoint import save_checkpoint

    w, b = chosen["head"]
    state = {"visual.head.proj.weight": w, "visual.head.proj.bias": b}
    zs = results["variants"].get("zero-shot")
    size = results["setup"]["image_size"]

    def summary(where: str) -> dict:
        m = chosen[where]["metrics"]
        return {
            "corpus": f"uspc2007 (split {where}, every drawing against all others of it)",
            "protocol": "all",
            "image_size": size,
            "num_queries": m.get("num_queries"),
            "metrics": m,
        }

    figures = {
        "uspc_val_zero_shot": zs and {k: zs["val"][k]["mean"] for k in KEYS},
        "uspc_test_zero_shot": zs and {k: zs["test"][k]["mean"] for k in KEYS},
    }
    s_p, s_s, s_m = results["setup"]["args"]["weights"]
    loss = "cl" if variant == "cl" else "hmcl"
    model = {"name": HEAD_ENCODER, "image_size": results["setup"]["image_size"]}
    if chosen.get("alpha") is not None:
        model["trunk_mix"] = chosen["alpha"]
    config = {
        "kind": "hmcl",
        "model": model,
        "base": "default",
        "delta": True,
        "default": True,
        "scheme": "uspc",
        "train": {
            "script": PROG,
            "variant": variant,
            "loss": loss,
            "seed": chosen["seed"],
            "best_step": chosen["step"],
            "trunk_mix": chosen.get("alpha"),
            "s_p": s_p,
            "s_s": 0.0 if loss == "cl" else s_s,
            "s_m": 0.0 if loss == "cl" else s_m,
            "data": "USPC 2007 train split (splits/uspc2007.json)",
            "chosen_on": "USPC val (subclass_map + main_map)",
            **results["setup"]["args"],
        },
        "uspc": figures,
    }
    metrics = {"validation": {"uspc": summary("val")}, "test": {"uspc": summary("test")}, "uspc": figures}
    save_checkpoint(directory, state, config, metrics=metrics, command=["python", "-m", *argv])


def save_heads(directory: str, heads: dict) -> None:
    from safetensors.torch import save_file

    Path(directory).mkdir(parents=True, exist_ok=True)
    for variant, runs in heads.items():
        for r in runs:
            if r["head"] is not None:
                w, b = r["head"]
                save_file(
                    {"weight": w.contiguous(), "bias": b.contiguous()},
                    str(Path(directory) / f"{variant}-{r['seed']}.safetensors"),
                )


def merge(args, argv: list[str]) -> dict:
    """One result from the JSONs of parallel runs (variants in file order; zero-shot from the first), and
    with ``--ship`` the best-on-val run over all trained variants shipped from ``--save-heads``."""
    from safetensors.torch import load_file

    parts = [json.loads(Path(f).read_text(encoding="utf-8")) for f in args.merge]
    results = {
        "setup": parts[0]["setup"],
        "zero_shot_flip": parts[0].get("zero_shot_flip"),
        "variants": {},
        "commands": [p["command"] for p in parts],
    }
    for part in parts:
        for name, entry in part["variants"].items():
            results["variants"].setdefault(name, entry)
    if args.ship:
        name = best_variant(results["variants"], args.ship_variant)
        run_ = max(results["variants"][name]["runs"], key=lambda r: selection_score({"metrics": r["val"]}))
        t = load_file(str(Path(args.save_heads) / f"{name}-{run_['seed']}.safetensors"))
        chosen = {
            "head": (t["weight"], t["bias"]),
            "seed": run_["seed"],
            "step": run_["best_step"],
            "alpha": run_.get("alpha"),
            "val": {"metrics": run_["val"]},
            "test": {"metrics": run_["test"]},
        }
        ship(args.ship, name, chosen, results, [PROG, *argv])
        results["shipped"] = {
            "dir": args.ship,
            "variant": name,
            "seed": run_["seed"],
            "val": run_["val"],
            "test": run_["test"],
        }
    results["command"] = (
        f"python -m {PROG} " + " ".join(argv) + " (merging: " + "; ".join(results["commands"]) + ")"
    )
    return results


def main(argv: Sequence[str] | None = None) -> int:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s", datefmt="%H:%M:%S")
    argv = list(sys.argv[1:] if argv is None else argv)
    args = build_parser().parse_args(argv)
    if args.merge:
        results = merge(args, argv)
        if args.out:
            Path(args.out).write_text(json.dumps(results, indent=1, sort_keys=True) + "\n", encoding="utf-8")
        return 0
    if not args.corpus:
        raise SystemExit("--corpus is required (unless --merge)")
    results = run(args)
    if args.save_heads:
        save_heads(args.save_heads, results["_heads"])
    if args.ship and args.no_test:
        raise SystemExit("--ship needs the test figures: run without --no-test")
    if args.ship:
        variant, chosen = choose_ship(results, args.ship_variant)
        ship(args.ship, variant, chosen, results, [PROG, *argv])
        results["shipped"] = {
            "dir": args.ship,
            "variant": variant,
            "seed": chosen["seed"],
            "val": chosen["val"]["metrics"],
            "test": chosen["test"]["metrics"],
        }
        log.info("shipped %s seed %s to %s", variant, chosen["seed"], args.ship)
    results.pop("_heads")
    results.pop("_splits")
    results["command"] = f"python -m {PROG} " + " ".join(argv)
    if args.out:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text(json.dumps(results, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
