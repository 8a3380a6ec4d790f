"""What examiner labels buy: learning curves of the shipped drawing head retrained from a simulated examiner's
labels on real USPC drawings, scored on the test split (never labelled), against zero-shot and the fully
supervised ceiling.

::

    python -m train.loop.curves --corpus runs/uspc2007 --labels-dir runs/loop --simulate --out docs/loop.json
    python -m train.loop.curves --corpus runs/uspc2007 --labels-dir runs/loop-quick --simulate --quick \\
        --out runs/loop-quick/loop.json                                 # 3 points, for CI

1. **Labels** (``--simulate``): for each strategy the simulated examiner (``scripts/examiner_sim.py --serve``)
   drives the app over the corpus, searching with zero-shot (the model with no labels) and judging 10 hits a
   query through ``/label`` into ``LABELS_DIR/labels-<strategy>.sqlite``, on the first ``max(budgets)``
   training queries of one seeded order. Without ``--simulate`` the stores must exist.
2. **Points**: for each strategy, budget ``B`` (labelled queries) and seed, the first ``B`` labelled queries
   of that seed's order (nested: 25 of seed s are among its 50) train a head with ``train.labels.head``
   (from PCA whitening, step and trunk weight chosen on USPC val), scored once on USPC test: subclass and
   main mAP, each seed's paired bootstrap interval against zero-shot (``B = 0`` is zero-shot itself).
3. **Ceiling**: ``train.hmcl.heads``'s ``hmcl-paper-mix`` with every train drawing's USPC class (the fully
   supervised head the app ships), same seeds.
4. **Summary**: the smallest budget at which every seed's subclass *and* main interval lies above 0
   ("met"), the smallest at which the mean test subclass and main mAP reach 90 % of the ceiling's, and the
   strategies compared at equal numbers of judgements (paired bootstrap, per seed).

The strategies were fixed before any test figure was computed; nothing here is chosen on test.
"""

from __future__ import annotations

import argparse
import json
import logging
import random
import shlex
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import torch

from patent_demo.data.corpus import Corpus
from patent_demo.drawing.trunk import evaluate, whitening
from patent_demo.labels.store import LabelStore
from patent_demo.metrics import paired_bootstrap
from patent_demo.text.precision import cpu_name
from train.hmcl.heads import train_head
from train.labels.data import read_rows
from train.labels.head import Pair, add_head_args, fit_from_pairs, guarded_pairs, load_features, weights_of

log = logging.getLogger("train.loop.curves")
PROG = "train.loop.curves"
ROOT = Path(__file__).resolve().parents[2]
BUDGETS = (0, 25, 50, 100, 200, 400)
QUICK_BUDGETS = (0, 10, 25)
METRICS = ("subclass_map", "main_map")
CEILING = "hmcl-paper-mix"


def simulate(args, strategy: str, store: Path) -> dict:
    """Run the simulated examiner against the app (a child process) for one strategy."""
    out = store.with_suffix(".sim.json")
    cmd = [
        sys.executable,
        str(ROOT / "scripts" / "examiner_sim.py"),
        "--serve",
        "--labels",
        str(store),
        "--corpus",
        args.corpus,
        "--cache-dir",
        args.cache_dir,
        "--app-args=--no-warmup",
        "--queries",
        str(max(args.budgets)),
        "--strategy",
        strategy,
        "--k",
        str(args.k),
        "--annotator",
        f"sim-{strategy}",
        "--model",
        "zero-shot",
        "--out",
        str(out),
    ]
    log.info("simulated examiner: %s", shlex.join(cmd))
    subprocess.run(cmd, check=True)
    return json.loads(out.read_text(encoding="utf-8"))


def store_pairs(store: Path, corpus: Corpus) -> tuple[list[Pair], dict, dict[str, int]]:
    """The store's drawing labels as guarded pairs, the guard's counts and the judgements each query got."""
    s = LabelStore(store)
    try:
        with tempfile.TemporaryDirectory() as tmp:
            s.export_hmcl(Path(tmp) / "hmcl.jsonl")
            rows = read_rows(Path(tmp) / "hmcl.jsonl", "drawing")
    finally:
        s.close()
    made = {}  # training queries only: a curve's budget never counts a validation or test query
    train = set(corpus.splits.get("train", []))
    for row in rows:
        pid = str((row.get("anchor") or {}).get("patent_id") or "")
        if pid in train:
            made[pid] = len(row.get("positives") or []) + len(row.get("hard_negatives") or [])
    pairs, stats = guarded_pairs(rows, corpus)
    return pairs, stats, made


def take(
    pairs: Sequence[Pair], labelled: Sequence[str], budget: int, seed: int
) -> tuple[list[Pair], list[str]]:
    """The first ``budget`` of the ``labelled`` queries (what the examiner judged, whether or not the guard
    left a pair of theirs) in seed ``seed``'s order (nested over budgets), and the pairs they give."""
    queries = sorted(labelled)
    random.Random(seed).shuffle(queries)
    chosen = set(queries[:budget])
    return [p for p in pairs if p.query in chosen], queries[:budget]


def interval(a: dict, b: dict, key: str, n_boot: int) -> dict:
    return paired_bootstrap(a["per_query"][key], b["per_query"][key], n_boot=n_boot, seed=0)


def summary_over(points: list[dict], key: str) -> dict:
    v = np.array([p["test"][key] for p in points], dtype=np.float64)
    return {"mean": float(v.mean()), "std": float(v.std(ddof=1)) if len(v) > 1 else 0.0}


def run(args) -> dict:
    torch.set_num_threads(args.threads)
    corpus = Corpus.load(args.corpus, validate=False)
    feats, tr, va, te = load_features(corpus, args)
    init = whitening(tr.clean, args.dim)
    weights = weights_of({})
    zs = {"val": evaluate(va, None), "test": evaluate(te, None)}
    result: dict = {
        "setup": {
            "corpus": str(args.corpus),
            "splits": {"train": len(tr.patents), "val": len(va.patents), "test": len(te.patents)},
            "budgets": list(args.budgets),
            "seeds": list(args.seeds),
            "k": args.k,
            "strategies": list(args.strategies),
            "weights": list(weights),
            "steps": args.head_steps,
            "lr": args.head_lr,
            "tau": args.tau,
            "examiner_model": "zero-shot",
            "cpu": cpu_name(),
            "threads": args.threads,
            "quick": args.quick,
        },
        "zero_shot": {"val": zs["val"]["metrics"], "test": zs["test"]["metrics"]},
        "strategies": {},
    }
    per_query: dict = {}  # (strategy, budget, seed) -> test result, for the comparisons
    for strategy in args.strategies:
        store = Path(args.labels_dir) / f"labels-{strategy}.sqlite"
        sim = simulate(args, strategy, store) if args.simulate else None
        if not store.is_file():
            raise SystemExit(f"{store} not found: run with --simulate (or scripts/examiner_sim.py) first")
        if sim is None and store.with_suffix(".sim.json").is_file():  # what the examiner run recorded
            sim = json.loads(store.with_suffix(".sim.json").read_text(encoding="utf-8"))
        pairs, stats, made = store_pairs(store, corpus)
        labelled = len(made)
        entry = {
            "store": str(store),
            "simulation": sim,
            "leak_guard": stats,
            "labelled_queries": labelled,
            "points": [],
            "budgets": [b for b in args.budgets if b <= labelled],
        }
        for budget in entry["budgets"]:  # a budget past what the examiner labelled is not a point
            for seed in args.seeds if budget else [None]:
                t0 = time.perf_counter()
                if not budget:
                    test, val, step, alpha, used, queries = zs["test"], zs["val"], 0, 1.0, [], []
                else:
                    used, queries = take(pairs, list(made), budget, seed)
                    best = fit_from_pairs(used, feats, va, init, weights, args, seed)
                    val, step, alpha = best["val"], best["step"], best["alpha"]
                    test = evaluate(te, best["head"], alpha=alpha)
                per_query[(strategy, budget, seed)] = test
                point = {
                    "queries": len(queries) if budget else 0,
                    "budget": budget,
                    "seed": seed,
                    "judgements": sum(made.get(q, 0) for q in queries),
                    "pairs_used": len(used),
                    "relevant_pairs": sum(p.grade == 2 for p in used),
                    "partly_pairs": sum(p.grade == 1 for p in used),
                    "best_step": step,
                    "trunk_mix": alpha,
                    "val": {k: val["metrics"][k] for k in METRICS},
                    "test": {k: test["metrics"][k] for k in METRICS},
                    "vs_zero_shot": {k: interval(test, zs["test"], k, args.bootstrap) for k in METRICS},
                    "seconds": round(time.perf_counter() - t0, 1),
                }
                entry["points"].append(point)
                log.info(
                    "%s B=%d seed=%s: %d judgements, val sub %.3f main %.3f | test sub %.3f main %.3f "
                    "(step %d, trunk %.1f, %.0f s)",
                    strategy,
                    budget,
                    seed,
                    point["judgements"],
                    point["val"]["subclass_map"],
                    point["val"]["main_map"],
                    point["test"]["subclass_map"],
                    point["test"]["main_map"],
                    step,
                    alpha,
                    point["seconds"],
                )
        result["strategies"][strategy] = entry

    # the fully supervised ceiling: the shipped recipe on every train label
    ceiling_args = argparse.Namespace(
        dim=args.dim,
        steps=args.ceiling_steps,
        lr=args.head_lr,
        eval_every=args.eval_every,
        weight_decay=args.weight_decay,
        tau=args.tau,
        weights=weights,
        text_weight=0.0,
        hierarchy="uspc",
    )
    runs = []
    for seed in args.seeds:
        t0 = time.perf_counter()
        best = train_head(CEILING, seed, tr, va, ceiling_args, None)
        test = evaluate(te, best["head"], alpha=best["alpha"])
        runs.append(
            {
                "seed": seed,
                "best_step": best["step"],
                "trunk_mix": best["alpha"],
                "val": {k: best["val"]["metrics"][k] for k in METRICS},
                "test": {k: test["metrics"][k] for k in METRICS},
                "vs_zero_shot": {k: interval(test, zs["test"], k, args.bootstrap) for k in METRICS},
                "seconds": round(time.perf_counter() - t0, 1),
            }
        )
        log.info(
            "ceiling seed %d: test sub %.3f main %.3f",
            seed,
            runs[-1]["test"]["subclass_map"],
            runs[-1]["test"]["main_map"],
        )
    result["ceiling"] = {
        "variant": CEILING,
        "labelled_queries": len(tr.patents),
        "runs": runs,
        "test": {k: summary_over(runs, k) for k in METRICS},
    }
    result["summary"] = summarise(result, per_query, args)
    return result


def summarise(result: dict, per_query: dict, args) -> dict:
    """Per strategy and budget: mean ± std over seeds, "met" when every seed's subclass and main intervals
    lie above 0, the share of the ceiling; the first budget met and the first at 90 % of the ceiling; the
    strategies against each other at equal judgements."""
    ceiling = {k: result["ceiling"]["test"][k]["mean"] for k in METRICS}
    zero = result["zero_shot"]["test"]
    out: dict = {"ceiling": ceiling, "zero_shot": {k: zero[k] for k in METRICS}, "strategies": {}}
    for strategy, entry in result["strategies"].items():
        rows = []
        for budget in entry["budgets"]:
            pts = [p for p in entry["points"] if p["budget"] == budget]
            met = bool(budget) and all(p["vs_zero_shot"][k]["low"] > 0 for p in pts for k in METRICS)
            row = {
                "budget": budget,
                "judgements": float(np.mean([p["judgements"] for p in pts])),
                "test": {k: summary_over(pts, k) for k in METRICS},
                "met": met,
                "share_of_ceiling": {k: summary_over(pts, k)["mean"] / ceiling[k] for k in METRICS},
                "share_of_gain": {
                    k: (summary_over(pts, k)["mean"] - zero[k]) / (ceiling[k] - zero[k])
                    if ceiling[k] != zero[k]
                    else None
                    for k in METRICS
                },
            }
            rows.append(row)
        first_met = next((r["budget"] for r in rows if r["met"]), None)
        first_90 = next(
            (
                r["budget"]
                for r in rows
                if r["budget"] and all(r["share_of_ceiling"][k] >= 0.9 for k in METRICS)
            ),
            None,
        )
        out["strategies"][strategy] = {
            "rows": rows,
            "first_budget_met": first_met,
            "first_budget_90": first_90,
        }
    names = list(result["strategies"])
    if len(names) >= 2:  # each other strategy against the first (topk), same test queries, per seed
        base = names[0]
        comp = {}
        for other in names[1:]:
            shared = [
                b
                for b in result["strategies"][other]["budgets"]
                if b and b in result["strategies"][base]["budgets"]
            ]
            for budget in shared:
                comp[f"{other} - {base} @ {budget}"] = {
                    k: [
                        paired_bootstrap(
                            per_query[(other, budget, s)]["per_query"][k],
                            per_query[(base, budget, s)]["per_query"][k],
                            n_boot=args.bootstrap,
                            seed=0,
                        )
                        for s in args.seeds
                    ]
                    for k in METRICS
                }
        out["equal_judgements"] = comp
    return out


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog=f"python -m {PROG}", description=__doc__.split("\n\n")[0])
    a = p.add_argument
    a("--corpus", required=True, help="the USPC 2007 corpus built with --splits splits/uspc2007.json")
    a("--labels-dir", required=True, help="where the label stores are (labels-<strategy>.sqlite)")
    a(
        "--simulate",
        action="store_true",
        help="make the labels first with the simulated examiner through the app",
    )
    a("--strategies", nargs="+", default=["topk", "spread"], help="which hits the examiner judges")
    a(
        "--budgets",
        type=int,
        nargs="+",
        default=list(BUDGETS),
        help="labelled queries per point (0: zero-shot)",
    )
    a("--seeds", type=int, nargs="+", default=[0, 1, 2], help="seeds (query subset and view sampling)")
    a("--k", type=int, default=10, help="judgements per query")
    a("--ceiling-steps", type=int, default=600, help="steps of the fully supervised ceiling (as hmcl-uspc)")
    a("--bootstrap", type=int, default=2000, help="bootstrap resamples")
    a("--cache-dir", default="cache", help="the app's cache (indexes, trunk features)")
    a("--threads", type=int, default=2, help="torch CPU threads")
    a(
        "--quick",
        action="store_true",
        help=f"budgets {QUICK_BUDGETS}, one seed, one strategy, short steps (CI)",
    )
    a("--out", required=True, help="the results JSON")
    add_head_args(p)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s", datefmt="%H:%M:%S")
    argv = list(sys.argv[1:] if argv is None else argv)
    args = build_parser().parse_args(argv)
    if args.quick:
        args.budgets, args.seeds, args.strategies = list(QUICK_BUDGETS), [0], args.strategies[:1]
        args.head_steps, args.ceiling_steps, args.views, args.bootstrap = 100, 100, 1, 500
    t0 = time.perf_counter()
    result = run(args)
    result["command"] = f"python -m {PROG} " + shlex.join(argv)
    result["seconds"] = round(time.perf_counter() - t0, 1)
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(result, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    log.info("wrote %s in %.0f s", args.out, result["seconds"])
    return 0


if __name__ == "__main__":
    sys.exit(main())
