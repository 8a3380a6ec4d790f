"""Variants x seeds of drawing-encoder training, summarised as a mean ± std table (markdown and JSON).

    python -m train.hmcl_runner --config train/configs/hmcl-lite.json --seeds 0 1 2 \\
        --out runs/results --table docs/results_hmcl_table -- --steps 60 --image-size 96

Variants (each a set of ``train.hmcl`` flags on top of the config; arguments after ``--`` go to every run):

``zero-shot``      no training: the encoder's pretrained weights (evaluated once; it has no seed)
``cl``             plain contrastive loss (Eq. 1), no text term
``hmcl``           HMCL (Eqs. 2-4), no text term
``hmcl-text``      HMCL plus the image-text term (Eq. 5, lambda from the config, 0.2 by default)
``hmcl-shuffled``  HMCL on Locarno labels permuted across training patents (class sizes kept), no text

Every run is evaluated on ``--split`` (true labels) after training; runs whose directory already holds
final metrics are reused, so an interrupted table can be finished by running the same command again.
With ``--redbook DIR`` every run (and zero-shot) is also evaluated on real USPTO drawing pages, each page
a query against all other pages (``<run>/redbook.json``), and a second table is written.
The std is the sample standard deviation over seeds (0 for a single value).
"""

from __future__ import annotations

import argparse
import json
import logging
import math
import sys
from collections.abc import Sequence
from pathlib import Path

import torch

log = logging.getLogger("train.hmcl_runner")

VARIANTS: dict[str, list[str]] = {
    "zero-shot": [],
    "cl": ["--loss", "cl", "--text-weight", "0"],
    "hmcl": ["--loss", "hmcl", "--text-weight", "0"],
    "hmcl-text": ["--loss", "hmcl"],
    "hmcl-shuffled": ["--loss", "hmcl", "--text-weight", "0", "--shuffle-labels"],
}
COLUMNS = (
    "patent_map", "patent_ndcg@10", "subclass_map", "subclass_ndcg@10", "main_map", "main_ndcg@10",
    "hier_ndcg@10", "silhouette",
)  # fmt: skip


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m train.hmcl_runner", description=__doc__.split("\n\n")[0])
    a = p.add_argument
    a("--config", default="train/configs/hmcl-lite.json", help="train.hmcl config shared by every run")
    a("--variants", nargs="+", default=list(VARIANTS), choices=list(VARIANTS), help="variants to run")
    a("--seeds", type=int, nargs="+", default=[0, 1, 2], help="seeds of each trained variant")
    a("--split", default="test", help="split the table reports (evaluated with true labels)")
    a("--out", default="runs/results", help="parent directory of the run directories")
    a("--table", default="runs/results/table", help="write <table>.md and <table>.json")
    a("--redbook", default=None, help="also evaluate every run on this folder of Red Book grants (all pages)")
    a("extra", nargs=argparse.REMAINDER, help="after '--': flags passed to every train.hmcl run")
    return p


def mean_std(values: Sequence[float]) -> tuple[float, float]:
    """Mean and sample standard deviation (ddof = 1; 0 for one value); NaN for no values."""
    vals = [float(v) for v in values if v is not None and math.isfinite(float(v))]
    if not vals:
        return float("nan"), float("nan")
    m = math.fsum(vals) / len(vals)
    if len(vals) == 1:
        return m, 0.0
    return m, math.sqrt(math.fsum((v - m) ** 2 for v in vals) / (len(vals) - 1))


def _row(result: dict) -> dict[str, float | None]:
    row = {k: result["metrics"].get(k) for k in COLUMNS if k != "silhouette"}
    row["silhouette"] = result.get("silhouette")
    return row


def zero_shot(config_argv: list[str], split: str) -> dict:
    """Evaluate the config's encoder with its pretrained weights at the config's image size."""
    from patent_demo.drawing.evaluate import evaluate_drawings
    from patent_demo.drawing.finetune import load_encoder
    from train import hmcl

    args = hmcl.parse_args(config_argv)
    if args.threads:
        torch.set_num_threads(args.threads)
    corpus = hmcl.load_corpus(args)
    model, eval_tf, _ = load_encoder(args.encoder, image_size=args.image_size)
    return evaluate_drawings(model, eval_tf, corpus, split, ks=args.eval_k, batch_size=args.eval_batch_size)


def run_variant(variant: str, seed: int, base: list[str], out: Path, split: str) -> tuple[str, dict]:
    """Train one run (or reuse a finished one) and return (run directory name, its evaluation on ``split``)."""
    from patent_demo.checkpoint import load_metrics
    from train import hmcl

    name = f"{variant}-s{seed}"
    run_dir = out / name
    metrics = load_metrics(run_dir) if (run_dir / "metrics.json").is_file() else {}
    if split not in metrics.get("after", {}):
        argv = [*base, *VARIANTS[variant], "--seed", str(seed), "--out", str(out), "--name", name,
                "--eval-splits", split, "--skip-eval-before"]  # fmt: skip
        if hmcl.main(argv) != 0:
            raise RuntimeError(f"run {name} failed")
        metrics = load_metrics(run_dir)
    return name, metrics["after"][split]


def redbook_eval(run_dir: Path, model_ref: str, image_size: int, folder: str, ks: Sequence[int]) -> dict:
    """Evaluate a run (or a zero-shot encoder name) on Red Book drawing pages, cached in ``redbook.json``."""
    cache = run_dir / "redbook.json"
    if cache.is_file():
        return json.loads(cache.read_text())
    from patent_demo.data.loaders.uspto import load_redbook
    from patent_demo.drawing.evaluate import evaluate_drawings
    from patent_demo.drawing.finetune import load_encoder

    corpus = load_redbook(folder)
    model, eval_tf, _ = load_encoder(model_ref, image_size=image_size)
    result = evaluate_drawings(model, eval_tf, corpus, None, ks=ks, protocol="all")
    cache.parent.mkdir(parents=True, exist_ok=True)
    cache.write_text(json.dumps(result, indent=1) + "\n")
    return result


def summarise(results: dict[str, dict[str, dict]]) -> dict:
    """{variant: {"n", "runs", "mean": {column: ...}, "std": {column: ...}}}."""
    summary = {}
    for variant, runs in results.items():
        rows = [_row(r) for r in runs.values()]
        stats = {col: mean_std([row[col] for row in rows]) for col in COLUMNS}
        summary[variant] = {
            "n": len(rows),
            "runs": sorted(runs),
            "mean": {c: s[0] for c, s in stats.items()},
            "std": {c: s[1] for c, s in stats.items()},
        }
    return summary


def format_table(summary: dict, caption: str) -> str:
    """Markdown: one row per variant, ``mean ± std`` per column."""
    head = "| variant | runs | " + " | ".join(COLUMNS) + " |"
    lines = [caption, "", head, "|" + "---|" * (len(COLUMNS) + 2)]
    for variant, entry in summary.items():
        cells = []
        for col in COLUMNS:
            m, s = entry["mean"][col], entry["std"][col]
            cells.append("n/a" if math.isnan(m) else f"{m:.3f} ± {s:.3f}")
        lines.append(f"| {variant} | {entry['n']} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    logging.basicConfig(level=logging.WARNING, format="%(asctime)s %(message)s", datefmt="%H:%M:%S")
    log.setLevel(logging.INFO)
    args = build_parser().parse_args(argv)
    extra = [a for a in args.extra if a != "--"]
    base = ["--config", args.config, *extra]
    out = Path(args.out)
    results: dict[str, dict[str, dict]] = {}
    for variant in args.variants:
        results[variant] = {}
        if variant == "zero-shot":
            cache = out / "zero-shot" / "metrics.json"
            if cache.is_file():
                results[variant]["zero-shot"] = json.loads(cache.read_text())
            else:
                res = zero_shot(base, args.split)
                cache.parent.mkdir(parents=True, exist_ok=True)
                cache.write_text(json.dumps(res, indent=1) + "\n")
                results[variant]["zero-shot"] = res
            continue
        for seed in args.seeds:
            name, res = run_variant(variant, seed, base, out, args.split)
            results[variant][name] = res
    summary = summarise(results)
    real = None
    if args.redbook:
        from train import hmcl

        cfg = hmcl.parse_args(base)
        real_results = {
            variant: {
                name: redbook_eval(
                    out / name,
                    cfg.encoder if variant == "zero-shot" else str(out / name),
                    cfg.image_size,
                    args.redbook,
                    cfg.eval_k,
                )
                for name in runs
            }
            for variant, runs in results.items()
        }
        real = summarise(real_results)
    caption = (
        f"Drawing retrieval on split `{args.split}`, mean ± std over seeds {args.seeds} "
        f"(config `{args.config}`, extra flags `{' '.join(extra) or 'none'}`)."
    )
    table = Path(args.table)
    table.parent.mkdir(parents=True, exist_ok=True)
    md = format_table(summary, caption)
    if real is not None:
        real_caption = (
            f"Real drawings `{args.redbook}`: every page a query against all other pages; same runs."
        )
        md += "\n" + format_table(real, real_caption)
    table.with_suffix(".md").write_text(md, encoding="utf-8")
    payload = {
        "caption": caption,
        "split": args.split,
        "seeds": args.seeds,
        "config": args.config,
        "extra": extra,
        "columns": list(COLUMNS),
        "summary": summary,
        "redbook": args.redbook,
        "redbook_summary": real,
    }
    table.with_suffix(".json").write_text(
        json.dumps(payload, indent=1, sort_keys=True) + "\n", encoding="utf-8"
    )
    log.info("wrote %s.md and .json\n%s", table, md)
    return 0


if __name__ == "__main__":
    sys.exit(main())
