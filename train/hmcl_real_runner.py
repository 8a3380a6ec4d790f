"""Variants x seeds of ``train.hmcl_real`` on the real validation pages, summarised as tables (markdown, JSON).

    python -m train.hmcl_real_runner --config train/configs/hmcl-real.json --seeds 0 1 2 \\
        --out runs/real --table docs/results_hmcl_real

Variants (``train.hmcl_real`` flags on top of the config; arguments after ``--`` go to every run):

``zero-shot-128`` / ``-160`` / ``-224``  the pretrained encoder at that input size (no seed)
``whitened``        no training: the projection set to the whitening of the training drawings' pooled
                    features (``--init-projection whiten``, the start of every trained run of the config);
                    ``whitened-real-only`` / ``whitened-scan-all``: from the real drawings only / with the
                    scan-like augmentations of the generated ones
``cl``              plain contrastive loss (Eq. 1), no text term
``hmcl``            HMCL (Eqs. 2-4), no text term
``hmcl-text``       HMCL plus the image-text term (Eq. 5)
``hmcl-shuffled``   HMCL + text on subclasses permuted across training patents (the label-shuffle control)
``hmcl-text-160`` / ``-224``  HMCL + text at 160 / 224 px
``hmcl-text-scan-<choice>``   HMCL + text with one scan-like augmentation of the generated drawings
``hmcl-text-real-only`` / ``-generated-only``  HMCL + text on one kind of training drawings
``hmcl-text-package-init`` / ``cl-package-init``  from the package projection (no whitening), lr 3e-4

Every run is evaluated on the real validation pages (every page against all others), at its training size
and, as rows ``<variant>@<size>``, at each of ``--sizes`` (the vision tower is convolutional, so weights
trained at 128 px apply at 224 px). A finished run is
reused, so an interrupted table is finished by running the same command again. The table gives mean ±
std over seeds (sample std) of page-level (micro) and per-patent (macro) means, and a paired cluster
bootstrap (patents resampled) of each variant's seed-averaged per-page scores against ``--reference``.
"""

from __future__ import annotations

import argparse
import json
import logging
import math
import sys
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from patent_demo.drawing.transforms import SCAN_CHOICES
from patent_demo.metrics import paired_bootstrap

log = logging.getLogger("train.hmcl_real_runner")

VARIANTS: dict[str, list[str]] = {
    "zero-shot-128": ["--steps", "0", "--image-size", "128", "--init-projection", "package"],
    "zero-shot-160": ["--steps", "0", "--image-size", "160", "--init-projection", "package"],
    "zero-shot-224": ["--steps", "0", "--image-size", "224", "--init-projection", "package"],
    "whitened": ["--steps", "0", "--init-projection", "whiten"],
    "whitened-real-only": ["--steps", "0", "--init-projection", "whiten", "--sources", "uspc", "deeppatent2"],
    "whitened-scan-all": ["--steps", "0", "--init-projection", "whiten", "--scan", "all"],
    "cl": ["--loss", "cl", "--text-weight", "0"],
    "hmcl": ["--loss", "hmcl", "--text-weight", "0"],
    "hmcl-text": ["--loss", "hmcl"],
    "hmcl-shuffled": ["--loss", "hmcl", "--shuffle-labels"],
    "hmcl-text-160": ["--loss", "hmcl", "--image-size", "160", "--views", "2"],
    "hmcl-text-224": ["--loss", "hmcl", "--image-size", "224", "--views", "2"],
    "hmcl-text-real-only": ["--loss", "hmcl", "--sources", "uspc", "deeppatent2"],
    "hmcl-text-generated-only": ["--loss", "hmcl", "--sources", "generated"],
    "hmcl-text-package-init": ["--loss", "hmcl", "--init-projection", "package", "--lr", "3e-4"],
    "cl-package-init": ["--loss", "cl", "--text-weight", "0", "--init-projection", "package", "--lr", "3e-4"],
    "hmcl-text-scan-all": ["--loss", "hmcl", "--scan", "all"],
    **{f"hmcl-text-scan-{c}": ["--loss", "hmcl", "--scan", c] for c in SCAN_CHOICES},
}
UNSEEDED = (
    "zero-shot-128",
    "zero-shot-160",
    "zero-shot-224",
    "whitened",
    "whitened-real-only",
    "whitened-scan-all",
)
COLUMNS = ("patent_map", "subclass_map", "main_map", "hier_ndcg@10")


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m train.hmcl_real_runner", description=__doc__.split("\n\n")[0])
    a = p.add_argument
    a("--config", default="train/configs/hmcl-real.json", help="train.hmcl_real config shared by every run")
    a("--variants", nargs="+", default=["zero-shot-128", "zero-shot-224", "cl", "hmcl-text", "hmcl-shuffled"],
      choices=list(VARIANTS), help="variants to run")  # fmt: skip
    a("--seeds", type=int, nargs="+", default=[0, 1, 2], help="seeds of each trained variant")
    a("--reference", default="zero-shot-224", help="variant the bootstrap intervals compare against")
    a("--out", default="runs/real", help="parent directory of the run directories")
    a("--table", default="runs/real/table", help="write <table>.md and <table>.json")
    a("--sizes", type=int, nargs="*", default=[224],
      help="also report every trained run at these input sizes (rows <variant>@<size>; weights trained at 128 px)")  # fmt: skip
    a("--bootstrap", type=int, default=2000, help="bootstrap resamples")
    a("--report-only", action="store_true", help="only summarise runs that exist")
    a("--collect", nargs="+", default=None, metavar="RUN_DIR",
      help="instead: one row per finished run directory (single runs, e.g. exploratory ones), with its command")  # fmt: skip
    a("extra", nargs=argparse.REMAINDER, help="after '--': flags passed to every train.hmcl_real run")
    return p


def mean_std(values: Sequence[float | None]) -> tuple[float, float]:
    """Mean and sample standard deviation (ddof 1; 0 for one value); NaN for no values."""
    vals = [float(v) for v in values if v is not None and math.isfinite(float(v))]
    if not vals:
        return float("nan"), float("nan")
    m = math.fsum(vals) / len(vals)
    if len(vals) == 1:
        return m, 0.0
    return m, math.sqrt(math.fsum((v - m) ** 2 for v in vals) / (len(vals) - 1))


def run_names(variant: str, seeds: Sequence[int]) -> list[str]:
    return [variant] if variant in UNSEEDED else [f"{variant}-s{s}" for s in seeds]


def ensure_run(
    variant: str, name: str, seed: int, base: list[str], out: Path, report_only: bool
) -> dict | None:
    """The run's ``metrics.json``, training it first unless it is done (or ``report_only``)."""
    from train import hmcl_real

    path = out / name / "metrics.json"
    if not (path.is_file() and "real_validation" in json.loads(path.read_text())):
        if report_only:
            return None
        argv = [*base, *VARIANTS[variant], "--seed", str(seed), "--out", str(out), "--name", name]
        if hmcl_real.main(argv) != 0:
            raise RuntimeError(f"run {name} failed")
    return json.loads(path.read_text())


def summarise(results: dict[str, dict[str, dict]], reference: str, n_boot: int) -> dict:
    """{variant: {"runs", "n", "mean", "std", "macro_mean", "macro_std", "bootstrap"}}."""
    ref = results.get(reference, {})
    ref_pq = _seed_mean(ref) if ref else None
    out = {}
    for variant, runs in results.items():
        if not runs:
            continue
        rows = list(runs.values())
        entry: dict = {"runs": sorted(runs), "n": len(rows), "mean": {}, "std": {}, "macro_mean": {},
                       "macro_std": {}, "bootstrap": {}}  # fmt: skip
        pq = _seed_mean(runs)
        groups = rows[0]["query_patents"]
        for col in COLUMNS:
            entry["mean"][col], entry["std"][col] = mean_std([r["metrics"].get(col) for r in rows])
            entry["macro_mean"][col], entry["macro_std"][col] = mean_std([r["macro"].get(col) for r in rows])
            if ref_pq is not None and variant != reference:
                entry["bootstrap"][col] = paired_bootstrap(pq[col], ref_pq[col], groups, n_boot, seed=0)
        out[variant] = entry
    return out


def _seed_mean(runs: dict[str, dict]) -> dict[str, np.ndarray]:
    """Per-query scores averaged over a variant's seeds (NaN where undefined)."""
    out = {}
    for col in COLUMNS:
        stack = np.asarray(
            [[np.nan if v is None else v for v in r["per_query"][col]] for r in runs.values()], dtype=float
        )
        out[col] = np.nanmean(stack, axis=0) if stack.size else stack
    return out


def _cell(m: float, s: float) -> str:
    return "n/a" if math.isnan(m) else f"{m:.3f} ± {s:.3f}"


def format_table(summary: dict, reference: str, caption: str) -> str:
    head = ["variant", "runs", *[f"{c} (pages)" for c in COLUMNS], *[f"{c} (patents)" for c in COLUMNS[:3]]]
    head += [f"Δ {c} vs {reference} [95% CI]" for c in COLUMNS[:3]]
    lines = [caption, "", "| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for variant, e in summary.items():
        cells = [variant, str(e["n"])]
        cells += [_cell(e["mean"][c], e["std"][c]) for c in COLUMNS]
        cells += [_cell(e["macro_mean"][c], e["macro_std"][c]) for c in COLUMNS[:3]]
        for c in COLUMNS[:3]:
            b = e["bootstrap"].get(c)
            cells.append("—" if not b else f"{b['diff']:+.3f} [{b['low']:+.3f}, {b['high']:+.3f}]")
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def _settings(train: dict) -> str:
    """The settings that tell single runs apart, from a run's ``config.json`` ``train`` section."""
    if not train:
        return ""
    parts = ["no training" if train.get("steps") == 0 else train.get("loss", "?")]
    parts.append(f"init {train.get('init_projection', 'package')}")
    if train.get("steps"):
        parts += [f"lr {train['lr']:g}", f"{train['steps']} steps", f"{train.get('train_blocks')} blocks",
                  f"λ {train['text_weight']:g}", f"τ {train['tau']:g}"]  # fmt: skip
        if train.get("loss") == "hmcl":
            parts.append("w " + "/".join(f"{w:g}" for w in train["weights"]))
        if train.get("subclass_fraction") != 0.5:
            parts.append(f"subclass share {train['subclass_fraction']:g}")
    parts.append("+".join(train.get("sources", [])))
    if train.get("scan"):
        parts.append("scan " + "+".join(train["scan"]))
    return ", ".join(parts)


def collect(run_dirs: Sequence[str], sizes: Sequence[int]) -> tuple[str, list[dict]]:
    """Markdown and rows of single finished runs: their settings and figures at the training size and at
    ``sizes`` (each run's exact command is in the JSON rows and its ``command.txt``)."""
    rows = []
    head = ["run", "settings", "px", *COLUMNS[:3]]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for d in run_dirs:
        d = Path(d)
        metrics = json.loads((d / "metrics.json").read_text())
        command = (d / "command.txt").read_text().strip() if (d / "command.txt").is_file() else ""
        config = json.loads((d / "config.json").read_text()) if (d / "config.json").is_file() else {}
        model, settings = config.get("model", {}), _settings(config.get("train", {}))
        trained_at = model.get("train_image_size") or model.get("image_size") or "train"
        results = {str(trained_at): metrics["real_validation"]}
        results.update({s: metrics.get("real_validation_at", {}).get(s) for s in map(str, sizes)})
        for size, res in results.items():
            if res is None:
                continue
            row = {"run": d.name, "settings": settings, "size": size, "command": command,
                   **{c: res["metrics"].get(c) for c in COLUMNS}}  # fmt: skip
            rows.append(row)
            cells = [d.name, settings, size, *(f"{row[c]:.3f}" for c in COLUMNS[:3])]
            lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n", rows


def main(argv: Sequence[str] | None = None) -> int:
    logging.basicConfig(level=logging.WARNING, format="%(asctime)s %(message)s", datefmt="%H:%M:%S")
    log.setLevel(logging.INFO)
    args = build_parser().parse_args(argv)
    if args.collect:
        md, rows = collect(args.collect, args.sizes)
        table = Path(args.table)
        table.parent.mkdir(parents=True, exist_ok=True)
        table.with_suffix(".md").write_text(md, encoding="utf-8")
        table.with_suffix(".json").write_text(json.dumps(rows, indent=1) + "\n", encoding="utf-8")
        log.info("wrote %s.md and .json\n%s", table, md)
        return 0
    extra = [a for a in args.extra if a != "--"]
    base = ["--config", args.config, *extra]
    out = Path(args.out)
    results: dict[str, dict[str, dict]] = {}
    for variant in args.variants:
        results[variant] = {}
        at = {str(size): {} for size in args.sizes} if not variant.startswith("zero-shot") else {}
        seeds = args.seeds[:1] if variant in UNSEEDED else args.seeds
        for seed, name in zip(seeds, run_names(variant, seeds), strict=True):
            metrics = ensure_run(variant, name, seed, base, out, args.report_only)
            if metrics is None:
                continue
            results[variant][name] = metrics["real_validation"]
            missing = [s for s in at if s not in metrics.get("real_validation_at", {})]
            if missing:
                from train import hmcl_real

                metrics.setdefault("real_validation_at", {}).update(
                    hmcl_real.revalidate(out / name, [int(s) for s in missing])
                )
            for size in at:
                at[size][name] = metrics["real_validation_at"][size]
        for size, runs in at.items():
            results[f"{variant}@{size}"] = runs
    summary = summarise(results, args.reference, args.bootstrap)
    caption = (
        f"Real validation: the Red Book samples (`impact_design_patent_samples`, 20 patents, 106 pages), every "
        f"page a query against all other pages. Mean ± std over seeds {args.seeds} (config `{args.config}`, "
        f"extra flags `{' '.join(extra) or 'none'}`); Δ: paired cluster bootstrap over patents of the "
        f"seed-averaged per-page scores against `{args.reference}`."
    )
    md = format_table(summary, args.reference, caption)
    table = Path(args.table)
    table.parent.mkdir(parents=True, exist_ok=True)
    table.with_suffix(".md").write_text(md, encoding="utf-8")
    payload = {"caption": caption, "config": args.config, "extra": extra, "seeds": args.seeds,
               "reference": args.reference, "columns": list(COLUMNS), "summary": summary}  # fmt: skip
    table.with_suffix(".json").write_text(
        json.dumps(payload, indent=1, sort_keys=True) + "\n", encoding="utf-8"
    )
    log.info("wrote %s.md and .json\n%s", table, md)
    return 0


if __name__ == "__main__":
    sys.exit(main())
