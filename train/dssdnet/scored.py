"""DSSDNet's domain pretraining on human-scored phrase pairs (USPPM): the ablation ladder in miniature and
its report (``docs/results_usppm.md`` / ``.json``).

    python -m train.dssdnet.scored --out runs/usppm-ablation --table docs/results_usppm \\
        --main runs/usppm/dssdnet-s0 runs/usppm/dssdnet-s1 runs/usppm/dssdnet-s2 -- --train-layers 2 --epochs 1

Every ablation run is one ``train.dssdnet`` call on the same data (``--scored-pairs``, ``--scored-split``),
a variant's flags on top (:data:`VARIANTS`), then whatever follows ``--`` (the miniature budget), all in
one process so that the frozen layers' features are computed once and shared. A finished run is reused.
``--main`` names the full-budget runs (one per seed) reported as the model. Every figure is computed
from the runs' ``run.<split>.json`` against the split's human scores: Pearson and Spearman; the
difference of each variant to ``dssdnet`` with a paired bootstrap resampling *anchors* (the pairs of one
anchor are not independent); the untrained baseline is the packaged MiniLM bi-encoder's cosine.
Choices are made on validation; test is reported beside it and never used to choose.
"""

from __future__ import annotations

import argparse
import json
import logging
import shlex
import sys
import time
from pathlib import Path

import numpy as np

from patent_demo import checkpoint
from patent_demo.reports.rerank import VARIANTS, scored_markdown
from patent_demo.text.scored import biencoder_scores, bootstrap_correlation_diff, correlations

log = logging.getLogger("train.dssdnet.scored")
USPPM = (
    "../shared/data/usppm_phrase_matching/train.csv"  # relative to the repository, as every command is run
)
SPLIT = "splits/usppm.json"
TARGET = 0.78  # Pearson on anchors never trained on

SPLITS = ("val", "test")


def run_dir(out: Path, variant: str, seed: int) -> Path:
    return out / variant / f"seed{seed}"


def finished(path: Path) -> bool:
    return (path / checkpoint.CONFIG).is_file() and all((path / f"run.{s}.json").is_file() for s in SPLITS)


def split_truth(csv: str, split_file: str) -> dict[str, dict]:
    """Per split: pair ids -> (label, anchor), in the order the runs scored them."""
    from train.dssdnet.data import scored_task

    task = scored_task(csv, split_file)
    return {s: {p.doc_id: (p.y, p.qid) for p in task.pairs[s]} for s in SPLITS}, task


def _scores(path: Path, split: str, ids: list[str]) -> np.ndarray:
    data = json.loads((path / f"run.{split}.json").read_text(encoding="utf-8"))
    by_id = dict(zip(data["ids"], data["scores"], strict=True))
    return np.asarray([by_id[i] for i in ids], dtype=np.float64)


def report(
    main_runs: list[Path], ablation: dict[str, list[Path]], csv: str, split_file: str, n_boot: int
) -> dict:
    truth, task = split_truth(csv, split_file)
    out: dict = {"data": str(csv), "split_file": str(split_file), "target_pearson": TARGET, "splits": {}}
    for s in SPLITS:
        ids = list(truth[s])
        labels = [truth[s][i][0] for i in ids]
        groups = [truth[s][i][1] for i in ids]
        base = biencoder_scores(task.pairs[s])
        entry = {"pairs": len(ids), "anchors": len(set(groups)), "biencoder": correlations(base, labels)}
        if main_runs:
            per_seed = [correlations(_scores(p, s, ids), labels) for p in main_runs]
            mean_scores = np.mean([_scores(p, s, ids) for p in main_runs], axis=0)
            entry["main"] = {
                **{m: _mean_std([r[m] for r in per_seed]) for m in ("pearson", "spearman")},
                "seeds": per_seed,
                "minus_biencoder": {
                    m: bootstrap_correlation_diff(mean_scores, base, labels, groups, m, n_boot)
                    for m in ("pearson", "spearman")
                },
            }
        ref = [_scores(p, s, ids) for p in ablation.get("dssdnet", [])]
        entry["ablation"] = {}
        for v, paths in ablation.items():
            if not paths:
                continue
            sc = [_scores(p, s, ids) for p in paths]
            row = {m: _mean_std([correlations(x, labels)[m] for x in sc]) for m in ("pearson", "spearman")}
            if ref and v != "dssdnet":
                row["minus_dssdnet"] = bootstrap_correlation_diff(
                    np.mean(sc, axis=0), np.mean(ref, axis=0), labels, groups, "pearson", n_boot
                )
            entry["ablation"][v] = row
        out["splits"][s] = entry
    out["main_runs"] = [_run_info(p) for p in main_runs]
    out["ablation_runs"] = {v: [_run_info(p) for p in ps] for v, ps in ablation.items() if ps}
    if main_runs:
        val, test = out["splits"]["val"]["main"]["pearson"][0], out["splits"]["test"]["main"]["pearson"][0]
        out["target"] = {"val_pearson": val, "test_pearson": test, "met": bool(test >= TARGET)}
    return out


def _mean_std(values: list[float]) -> list[float]:
    return [float(np.mean(values)), float(np.std(values, ddof=1)) if len(values) > 1 else 0.0]


def _run_info(path: Path) -> dict:
    m = checkpoint.load_metrics(path)
    return {
        "dir": str(path),
        "epochs": m.get("epochs_run"),
        "train_seconds": m.get("train_seconds"),
        "history": m.get("history"),
        "command": (path / checkpoint.COMMAND).read_text(encoding="utf-8").strip(),
    }


def compare_scores(a: str, b: str, csv: str, n_boot: int) -> dict:
    """Model A minus model B in Pearson and Spearman on the same pairs, from two ``evaluate text --pairs
    --json`` files (their ``ids`` and ``scores``), anchors resampled: models whose weights are gone can still
    be compared on the pairs they scored."""
    from patent_demo.text.scored import read_scored_pairs

    ra, rb = (json.loads(Path(x).read_text(encoding="utf-8")) for x in (a, b))
    rows = {r.id: r for r in read_scored_pairs(csv)}
    by_id = dict(zip(rb["ids"], rb["scores"], strict=True))
    ids = ra["ids"]
    x, y = np.asarray(ra["scores"]), np.asarray([by_id[i] for i in ids])
    labels, groups = [rows[i].label for i in ids], [rows[i].anchor for i in ids]
    return {
        "a": ra.get("model", a),
        "b": rb.get("model", b),
        "pairs": len(ids),
        "anchors": len(set(groups)),
        "a_minus_b": {
            m: bootstrap_correlation_diff(x, y, labels, groups, m, n_boot) for m in ("pearson", "spearman")
        },
    }


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    p = argparse.ArgumentParser(prog="python -m train.dssdnet.scored", description=__doc__.split("\n\n")[0])
    p.add_argument("--data", default=USPPM, help="the scored-pair CSV")
    p.add_argument("--split", default=SPLIT, help="its committed anchor split")
    p.add_argument("--out", default="runs/usppm-ablation", help="folder of the ablation runs")
    p.add_argument(
        "--variants", nargs="+", default=list(VARIANTS), choices=list(VARIANTS), help="ablation rows"
    )
    p.add_argument("--seeds", type=int, nargs="+", default=[0], help="seeds of the ablation runs")
    p.add_argument(
        "--main", nargs="*", default=[], help="the full-budget runs reported as the model, one per seed"
    )
    p.add_argument("--aggregate-only", action="store_true", help="do not train; report the finished runs")
    p.add_argument("--bootstrap", type=int, default=2000, help="bootstrap resamples")
    p.add_argument("--table", default=None, help="write <table>.md and <table>.json")
    p.add_argument(
        "--compare",
        nargs=2,
        metavar=("A.json", "B.json"),
        default=None,
        help="do not train: A minus B on the pairs both scored (two evaluate text --pairs --json files)",
    )
    p.add_argument("extra", nargs=argparse.REMAINDER, help="after '--': flags passed to every ablation run")
    args = p.parse_args(argv)
    if args.compare:
        result = compare_scores(*args.compare, args.data, args.bootstrap)
        result["command"] = shlex.join(["python", "-m", "train.dssdnet.scored", *argv])
        print(json.dumps(result, indent=1))
        if args.table:
            Path(f"{args.table}.json").write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
        return 0
    if not logging.getLogger().handlers:
        logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s", datefmt="%H:%M:%S")
    extra = args.extra[1:] if args.extra[:1] == ["--"] else args.extra
    out = Path(args.out)
    if not args.aggregate_only:
        from train.dssdnet import main as dssdnet

        for seed in args.seeds:
            for v in args.variants:
                path = run_dir(out, v, seed)
                if finished(path):
                    log.info("%s: done, reused", path)
                    continue
                run_args = [
                    "--scored-pairs",
                    args.data,
                    "--scored-split",
                    args.split,
                    *VARIANTS[v][1],
                    "--seed",
                    str(seed),
                    "--eval-splits",
                    "val",
                    "test",
                    "--no-eval-before",
                    "--write-run",
                    "--out",
                    str(path),
                    *extra,
                ]
                log.info("[%s] %s", v, shlex.join(run_args))
                t0 = time.perf_counter()
                dssdnet.main(run_args)
                log.info("[%s] %.0f s", v, time.perf_counter() - t0)
    ablation = {
        v: [run_dir(out, v, s) for s in args.seeds if finished(run_dir(out, v, s))] for v in args.variants
    }
    result = report([Path(m) for m in args.main], ablation, args.data, args.split, args.bootstrap)
    command = shlex.join(["python", "-m", "train.dssdnet.scored", *argv])
    result["command"] = command
    md = scored_markdown(result, command)
    print(md)
    if args.table:
        from train.sweep import write_table

        write_table(args.table, md, result)
    return 0


if __name__ == "__main__":
    sys.exit(main())
