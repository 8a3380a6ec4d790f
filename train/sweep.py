"""Variants x seeds of either model, run (or reused) and written as tables: the one runner.

    python -m train.sweep hmcl --config train/configs/hmcl-lite.json --seeds 0 1 2 \\
        --out runs/results --table docs/results_hmcl_table -- --steps 60 --image-size 96
    python -m train.sweep hmcl --config train/configs/hmcl-real.json --seeds 0 1 2 \\
        --out runs/real --table docs/results_hmcl_real
    python -m train.sweep dssdnet --datasets demo cs3245 --seeds 0 1 2 --out runs/ablation \\
        --table docs/results_dssdnet_ablation -- --epochs 3 --k-rerank 100

Every run is one ``train.hmcl`` / ``train.dssdnet`` call: a variant's flags on top of the config (or the
dataset's data options), then whatever follows ``--``. A run whose directory already holds final metrics is
reused, so an interrupted sweep is finished by running the same command again. ``--table PREFIX`` writes
``PREFIX.md`` and ``PREFIX.json``: mean ± std over seeds (sample std).

**hmcl**: the config's feed picks the variants (``IMAGES`` or ``CACHED``). End to end on a corpus: each run
evaluated on ``--split`` (true labels); ``--redbook DIR`` also evaluates every run on Red Book pages (every
page against all others) for a second table. Cached real drawings: every run validated on the Red Book pages
at its training size and, as rows ``<variant>@<size>``, at each of ``--sizes``; micro (pages) and macro
(patents) means and a paired cluster bootstrap against ``--reference``; ``--collect RUN_DIR...`` instead
lists single finished runs with their settings.

**dssdnet**: the ablation ladder BERT(C), DS_SD, DS_SD_MR, DSSDNet per dataset against BM25 (runs in
``OUT/<dataset>/<variant>/seed<S>``; text after ``<!-- notes -->`` in an existing markdown file is kept).
"""

from __future__ import annotations

import argparse
import json
import logging
import shlex
import sys
from collections.abc import Sequence
from pathlib import Path

from patent_demo.drawing.transforms import SCAN_CHOICES
from patent_demo.reports.tables import (
    cell,
    interval_cell,
    markdown_table,
    seed_stats,
    summarise_against,
    write_table,
)
from train.dssdnet.summary import (
    LADDER_DATASETS,
    LADDER_VARIANTS,
    ladder_aggregate,
    ladder_finished,
    ladder_markdown,
    ladder_run_dir,
)

log = logging.getLogger("train.sweep")
NOTES_MARK = "<!-- notes -->"

# -- the variants: train.hmcl flags on top of the config -------------------------------------------------------
# IMAGES: end to end on a corpus (train/configs/hmcl-lite.json): zero-shot (no training, no seed), cl (Eq. 1, no
# text), hmcl (Eqs. 2-4, no text), hmcl-text (plus Eq. 5), hmcl-shuffled (labels permuted, no text).
# CACHED: cached real and generated drawings (train/configs/hmcl-real.json): zero-shot at three sizes, the
# whitened projection (no training), CL, HMCL, HMCL + text, the shuffled control, other sizes, scan-like
# augmentations, one kind of training drawings, the package projection init.
IMAGES: dict[str, list[str]] = {
    "zero-shot": [],
    "cl": ["--loss", "cl", "--text-weight", "0"],
    "hmcl": ["--loss", "hmcl", "--text-weight", "0"],
    "hmcl-text": ["--loss", "hmcl"],
    "hmcl-shuffled": ["--loss", "hmcl", "--text-weight", "0", "--shuffle-labels"],
}
IMAGE_COLUMNS = (
    "patent_map",
    "patent_ndcg@10",
    "subclass_map",
    "subclass_ndcg@10",
    "main_map",
    "main_ndcg@10",
    "hier_ndcg@10",
    "silhouette",
)


CACHED: dict[str, list[str]] = {
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
CACHED_UNSEEDED = (
    "zero-shot-128",
    "zero-shot-160",
    "zero-shot-224",
    "whitened",
    "whitened-real-only",
    "whitened-scan-all",
)
CACHED_COLUMNS = ("patent_map", "subclass_map", "main_map", "hier_ndcg@10")


def run_settings(train: dict) -> str:
    """The settings that tell single runs apart, from a run's ``config.json`` ``train`` section."""
    if not train:
        return ""
    parts = ["no training" if train.get("steps") == 0 else train.get("loss", "?")]
    parts.append(f"init {train.get('init_projection', 'package')}")
    if train.get("steps"):
        parts += [
            f"lr {train['lr']:g}",
            f"{train['steps']} steps",
            f"{train.get('train_blocks')} blocks",
            f"λ {train['text_weight']:g}",
            f"τ {train['tau']:g}",
        ]
        if train.get("loss") == "hmcl":
            parts.append("w " + "/".join(f"{w:g}" for w in train["weights"]))
        if train.get("subclass_fraction") != 0.5:
            parts.append(f"subclass share {train['subclass_fraction']:g}")
    parts.append("+".join(train.get("sources", [])))
    if train.get("scan"):
        parts.append("scan " + "+".join(train["scan"]))
    return ", ".join(parts)


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m train.sweep", description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="model", required=True)
    h = sub.add_parser("hmcl", help="train.hmcl variants x seeds")
    a = h.add_argument
    a("--config", default="train/configs/hmcl-lite.json", help="train.hmcl config shared by every run")
    a(
        "--variants",
        nargs="+",
        default=None,
        choices=sorted({*IMAGES, *CACHED}),
        help="variants to run (default: every end-to-end variant; cached: zero-shot-128/224, cl, hmcl-text, hmcl-shuffled)",
    )
    a("--seeds", type=int, nargs="+", default=[0, 1, 2], help="seeds of each trained variant")
    a("--split", default="test", help="end to end: the split the table reports (evaluated with true labels)")
    a("--redbook", default=None, help="end to end: also evaluate every run on this folder of Red Book grants")
    a(
        "--reference",
        default="zero-shot-224",
        help="cached: the variant the bootstrap intervals compare against",
    )
    a(
        "--sizes",
        type=int,
        nargs="*",
        default=[224],
        help="cached: also report every trained run at these sizes",
    )
    a("--bootstrap", type=int, default=2000, help="bootstrap resamples")
    a("--report-only", action="store_true", help="only summarise runs that exist")
    a(
        "--collect",
        nargs="+",
        default=None,
        metavar="RUN_DIR",
        help="cached: one row per finished run directory (single runs), with its command",
    )
    a("--out", default=None, help="parent of the run directories (default runs/results; cached runs/real)")
    a("--table", default=None, help="write <table>.md and <table>.json (default <out>/table)")
    a("extra", nargs=argparse.REMAINDER, help="after '--': flags passed to every train.hmcl run")
    d = sub.add_parser("dssdnet", help="train.dssdnet ablation ladder x seeds")
    a = d.add_argument
    a("--datasets", nargs="+", default=["demo"], choices=sorted(LADDER_DATASETS), help="datasets to run")
    a(
        "--variants",
        nargs="+",
        default=LADDER_VARIANTS,
        choices=LADDER_VARIANTS,
        help="variants of the ladder",
    )
    a("--seeds", type=int, nargs="+", default=[0, 1, 2], help="training seeds")
    a("--out", default="runs/dssdnet-ablation", help="folder of the run directories")
    a("--table", default=None, help="write <table>.md and <table>.json")
    a("--aggregate-only", action="store_true", help="do not train; aggregate the finished runs")
    a("extra", nargs=argparse.REMAINDER, help="after '--': arguments passed to every train.dssdnet run")
    return p


def _extra(args) -> list[str]:
    return args.extra[1:] if args.extra[:1] == ["--"] else [a for a in args.extra if a != "--"]


# -- hmcl ----------------------------------------------------------------------------------------------------
def _metrics(path: Path) -> dict:
    return json.loads(path.read_text()) if path.is_file() else {}


def hmcl_run(argv: list[str], out: Path, name: str, done, report_only: bool = False) -> dict | None:
    """The run's ``metrics.json``, training it first (``train.hmcl``) unless ``done(metrics)`` (or ``report_only``)."""
    from train.hmcl import main as hmcl

    metrics = _metrics(out / name / "metrics.json")
    if not done(metrics):
        if report_only:
            return None
        if hmcl.main([*argv, "--out", str(out), "--name", name]) != 0:
            raise RuntimeError(f"run {name} failed")
        metrics = _metrics(out / name / "metrics.json")
    return metrics


def zero_shot(base: list[str], split: str) -> dict:
    """The config's encoder with its pretrained weights at the config's image size, on ``split``."""
    import torch

    from patent_demo.drawing.finetune import load_encoder
    from patent_demo.drawing.protocol import evaluate_drawings
    from train.hmcl import main as hmcl
    from train.hmcl.data import load_corpus

    args = hmcl.parse_args(base)
    if args.threads:
        torch.set_num_threads(args.threads)
    model, eval_tf, _ = load_encoder(args.encoder, image_size=args.image_size)
    return evaluate_drawings(
        model, eval_tf, load_corpus(args), split, ks=args.eval_k, batch_size=args.eval_batch_size
    )


def redbook_eval(run_dir: Path, model_ref: str, image_size: int, folder: str, ks: Sequence[int]) -> dict:
    """A run (or a zero-shot encoder name) on Red Book drawing pages, cached in ``redbook.json``."""
    cache = run_dir / "redbook.json"
    if cache.is_file():
        return json.loads(cache.read_text())
    from patent_demo.data.loaders.uspto import load_redbook
    from patent_demo.drawing.finetune import load_encoder
    from patent_demo.drawing.protocol import evaluate_drawings

    model, eval_tf, _ = load_encoder(model_ref, image_size=image_size)
    result = evaluate_drawings(model, eval_tf, load_redbook(folder), None, ks=ks, protocol="all")
    cache.parent.mkdir(parents=True, exist_ok=True)
    cache.write_text(json.dumps(result, indent=1) + "\n")
    return result


def image_summary(results: dict[str, dict[str, dict]]) -> dict:
    """{variant: {"n", "runs", "mean", "std"}} of end-to-end evaluations (silhouette beside the metrics)."""
    out = {}
    for variant, runs in results.items():
        rows = [{**r["metrics"], "silhouette": r.get("silhouette")} for r in runs.values()]
        out[variant] = {**seed_stats(rows, IMAGE_COLUMNS), "runs": sorted(runs)}
    return out


def image_table(summary: dict, caption: str) -> str:
    rows = [
        [v, e["n"], *(cell(e["mean"][c], e["std"][c]) for c in IMAGE_COLUMNS)] for v, e in summary.items()
    ]
    return markdown_table(["variant", "runs", *IMAGE_COLUMNS], rows, caption)


def cached_table(summary: dict, reference: str, caption: str) -> str:
    cols = CACHED_COLUMNS
    head = ["variant", "runs", *[f"{c} (pages)" for c in cols], *[f"{c} (patents)" for c in cols[:3]]]
    head += [f"Δ {c} vs {reference} [95% CI]" for c in cols[:3]]
    rows = [
        [
            v,
            str(e["n"]),
            *(cell(e["mean"][c], e["std"][c]) for c in cols),
            *(cell(e["macro_mean"][c], e["macro_std"][c]) for c in cols[:3]),
            *(interval_cell(e["bootstrap"].get(c)) for c in cols[:3]),
        ]
        for v, e in summary.items()
    ]
    return markdown_table(head, rows, caption)


def sweep_images(args, base: list[str], cfg, out: Path) -> tuple[str, dict]:
    extra = _extra(args)
    results: dict[str, dict[str, dict]] = {}
    for variant in args.variants or list(IMAGES):
        results[variant] = {}
        if variant == "zero-shot":
            cache = out / "zero-shot" / "metrics.json"
            if not cache.is_file():
                cache.parent.mkdir(parents=True, exist_ok=True)
                cache.write_text(json.dumps(zero_shot(base, args.split), indent=1) + "\n")
            results[variant]["zero-shot"] = json.loads(cache.read_text())
            continue
        for seed in args.seeds:
            name = f"{variant}-s{seed}"
            argv = [
                *base,
                *IMAGES[variant],
                "--seed",
                str(seed),
                "--eval-splits",
                args.split,
                "--skip-eval-before",
            ]
            metrics = hmcl_run(argv, out, name, lambda m: args.split in m.get("after", {}))
            results[variant][name] = metrics["after"][args.split]
    summary, real = image_summary(results), None
    if args.redbook:
        real = image_summary(
            {
                v: {
                    n: redbook_eval(
                        out / n,
                        cfg.encoder if v == "zero-shot" else str(out / n),
                        cfg.image_size,
                        args.redbook,
                        cfg.eval_k,
                    )
                    for n in runs
                }
                for v, runs in results.items()
            }
        )
    caption = (
        f"Drawing retrieval on split `{args.split}`, mean ± std over seeds {args.seeds} "
        f"(config `{args.config}`, extra flags `{' '.join(extra) or 'none'}`)."
    )
    md = image_table(summary, caption)
    if real is not None:
        md += "\n" + image_table(
            real, f"Real drawings `{args.redbook}`: every page a query against all other pages; same runs."
        )
    payload = {
        "caption": caption,
        "split": args.split,
        "seeds": args.seeds,
        "config": args.config,
        "extra": extra,
        "columns": list(IMAGE_COLUMNS),
        "summary": summary,
        "redbook": args.redbook,
        "redbook_summary": real,
    }
    return md, payload


def sweep_cached(args, base: list[str], cfg, out: Path) -> tuple[str, dict]:
    from train.hmcl import features

    extra = _extra(args)
    results: dict[str, dict[str, dict]] = {}
    for variant in args.variants or ["zero-shot-128", "zero-shot-224", "cl", "hmcl-text", "hmcl-shuffled"]:
        results[variant] = {}
        at = {str(size): {} for size in args.sizes} if not variant.startswith("zero-shot") else {}
        seeds = args.seeds[:1] if variant in CACHED_UNSEEDED else args.seeds
        for seed in seeds:
            name = variant if variant in CACHED_UNSEEDED else f"{variant}-s{seed}"
            argv = [*base, *CACHED[variant], "--seed", str(seed)]
            metrics = hmcl_run(argv, out, name, lambda m: "real_validation" in m, args.report_only)
            if metrics is None:
                continue
            results[variant][name] = metrics["real_validation"]
            missing = [s for s in at if s not in metrics.get("real_validation_at", {})]
            if missing:
                metrics.setdefault("real_validation_at", {}).update(
                    features.revalidate(out / name, cfg, [int(s) for s in missing])
                )
            for size in at:
                at[size][name] = metrics["real_validation_at"][size]
        for size, runs in at.items():
            results[f"{variant}@{size}"] = runs
    summary = summarise_against(results, args.reference, CACHED_COLUMNS, args.bootstrap)
    caption = (
        f"Real validation: the Red Book samples (`impact_design_patent_samples`, 20 patents, 106 pages), every "
        f"page a query against all other pages. Mean ± std over seeds {args.seeds} (config `{args.config}`, "
        f"extra flags `{' '.join(extra) or 'none'}`); Δ: paired cluster bootstrap over patents of the "
        f"seed-averaged per-page scores against `{args.reference}`."
    )
    payload = {
        "caption": caption,
        "config": args.config,
        "extra": extra,
        "seeds": args.seeds,
        "reference": args.reference,
        "columns": list(CACHED_COLUMNS),
        "summary": summary,
    }
    return cached_table(summary, args.reference, caption), payload


def collect(run_dirs: Sequence[str], sizes: Sequence[int]) -> tuple[str, list[dict]]:
    """Markdown and rows of single finished cached-feed runs: their settings and figures at the training size
    and at ``sizes`` (each run's exact command is in the JSON rows and its ``command.txt``)."""
    rows, cells = [], []
    for d in map(Path, run_dirs):
        metrics = json.loads((d / "metrics.json").read_text())
        command = (d / "command.txt").read_text().strip() if (d / "command.txt").is_file() else ""
        config = json.loads((d / "config.json").read_text()) if (d / "config.json").is_file() else {}
        model, settings = config.get("model", {}), run_settings(config.get("train", {}))
        trained_at = model.get("train_image_size") or model.get("image_size") or "train"
        results = {str(trained_at): metrics["real_validation"]}
        results.update({s: metrics.get("real_validation_at", {}).get(s) for s in map(str, sizes)})
        for size, res in results.items():
            if res is None:
                continue
            row = {
                "run": d.name,
                "settings": settings,
                "size": size,
                "command": command,
                **{c: res["metrics"].get(c) for c in CACHED_COLUMNS},
            }
            rows.append(row)
            cells.append([d.name, settings, size, *(f"{row[c]:.3f}" for c in CACHED_COLUMNS[:3])])
    return markdown_table(["run", "settings", "px", *CACHED_COLUMNS[:3]], cells), rows


def main_hmcl(args) -> int:
    from train.hmcl import main as hmcl

    if args.collect:
        md, rows = collect(args.collect, args.sizes)
        table = Path(args.table or "runs/real/table")
        table.parent.mkdir(parents=True, exist_ok=True)
        table.with_suffix(".md").write_text(md, encoding="utf-8")
        table.with_suffix(".json").write_text(json.dumps(rows, indent=1) + "\n", encoding="utf-8")
        log.info("wrote %s.md and .json\n%s", table, md)
        return 0
    base = ["--config", args.config, *_extra(args)]
    cfg = hmcl.parse_args(base)
    variants = CACHED if cfg.cached else IMAGES
    wrong = [v for v in args.variants or [] if v not in variants]
    if wrong:
        raise SystemExit(
            f"variants {wrong} are not variants of the {'cached' if cfg.cached else 'end-to-end'} "
            f"feed of {args.config}; choose from {sorted(variants)}"
        )
    out = Path(args.out or ("runs/real" if cfg.cached else "runs/results"))
    md, payload = (sweep_cached if cfg.cached else sweep_images)(args, base, cfg, out)
    table = write_table(args.table or out / "table", md, payload)
    log.info("wrote %s.md and .json\n%s", table, md)
    return 0


# -- dssdnet -------------------------------------------------------------------------------------------------
def main_dssdnet(args, command: str) -> int:
    import time

    from train.dssdnet import main as dssdnet

    extra, out = _extra(args), Path(args.out)

    def write() -> dict:
        result = ladder_aggregate(out, args.datasets, args.variants, args.seeds)
        if args.table:
            path = Path(args.table).with_suffix(".md")
            notes = (
                path.read_text(encoding="utf-8").split(NOTES_MARK, 1)[1]
                if path.is_file() and NOTES_MARK in path.read_text(encoding="utf-8")
                else ""
            )
            text = "# DSSDNet ablation: BM25 vs BERT(C) vs DS_SD vs DS_SD_MR vs DSSDNet\n\n"
            text += f"Produced by:\n\n```\n{command}\n```\n\n" + ladder_markdown(result, args.seeds)
            text += f"\n{NOTES_MARK}{notes or chr(10)}"
            payload = {"datasets": result, "seeds": args.seeds, "runner_command": command}
            write_table(args.table, text, payload)
        return result

    if not args.aggregate_only:
        for ds in args.datasets:
            for seed in args.seeds:
                for v in args.variants:
                    path = ladder_run_dir(out, ds, v, seed)
                    if ladder_finished(path):
                        log.info("[sweep] %s: done, skipped", path)
                        continue
                    run_args = [
                        *LADDER_DATASETS[ds],
                        "--variant",
                        v,
                        "--seed",
                        str(seed),
                        "--out",
                        str(path),
                        "--no-eval-before",
                        *extra,
                    ]
                    log.info("[sweep] %s", shlex.join(run_args))
                    t0 = time.perf_counter()
                    dssdnet.main(run_args)
                    log.info("[sweep] %s: %.0f s", path, time.perf_counter() - t0)
                    write()
    for ds, entry in write().items():
        k = min(int(key.split("@")[1]) for key in entry["bm25"] if "@" in key)
        for v, agg in entry["variants"].items():
            r, m = agg[f"recall@{k}"], agg[f"map@{k}"]
            log.info(
                "%s %s: recall@%d %.4f ± %.4f, map@%d %.4f ± %.4f (bm25 %.4f, %.4f)",
                ds,
                v,
                k,
                r[0],
                r[1],
                k,
                m[0],
                m[1],
                entry["bm25"][f"recall@{k}"],
                entry["bm25"][f"map@{k}"],
            )
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if not logging.getLogger().handlers:
        logging.basicConfig(level=logging.WARNING, format="%(asctime)s %(message)s", datefmt="%H:%M:%S")
    log.setLevel(logging.INFO)
    args = build_parser().parse_args(argv)
    if args.model == "dssdnet":
        logging.getLogger("train.dssdnet").setLevel(logging.INFO)
        return main_dssdnet(args, shlex.join(["python", "-m", "train.sweep", *argv]))
    return main_hmcl(args)


if __name__ == "__main__":
    sys.exit(main())
