"""What ``train.sweep`` runs: the variants of each model (flag sets on top of a config), the DSSDNet datasets,
and the per-model readers of finished runs.

* ``IMAGES``: ``train.hmcl`` end to end on a corpus (``train/configs/hmcl-lite.json``): ``zero-shot`` (no
  training, no seed), ``cl`` (Eq. 1, no text), ``hmcl`` (Eqs. 2-4, no text), ``hmcl-text`` (plus Eq. 5),
  ``hmcl-shuffled`` (labels permuted across training patents, no text).
* ``CACHED``: ``train.hmcl`` on cached real and generated drawings (``train/configs/hmcl-real.json``):
  zero-shot at 128 / 160 / 224 px, the whitened projection (no training), CL, HMCL, HMCL + text, the shuffled
  control, other sizes, scan-like augmentations, one kind of training drawings, the package projection init.
* ``DSSDNET_VARIANTS`` x ``DSSDNET_DATASETS``: the ablation ladder on the built-in corpus and cs3245.
"""

from __future__ import annotations

from pathlib import Path

from patent_demo import checkpoint
from patent_demo.drawing.transforms import SCAN_CHOICES
from train.dssdnet import VARIANT_FLAGS
from train.tables import mean_std

IMAGES: dict[str, list[str]] = {
    "zero-shot": [],
    "cl": ["--loss", "cl", "--text-weight", "0"],
    "hmcl": ["--loss", "hmcl", "--text-weight", "0"],
    "hmcl-text": ["--loss", "hmcl"],
    "hmcl-shuffled": ["--loss", "hmcl", "--text-weight", "0", "--shuffle-labels"],
}
IMAGE_COLUMNS = (
    "patent_map", "patent_ndcg@10", "subclass_map", "subclass_ndcg@10", "main_map", "main_ndcg@10",
    "hier_ndcg@10", "silhouette",
)  # fmt: skip


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


REPO = Path(__file__).resolve().parent.parent
CS3245 = REPO.parent / "shared" / "data" / "cs3245_patsnap_corpus_qrels"
DSSDNET_DATASETS = {
    "demo": ["--demo-patents", "400"],
    "cs3245": [
        "--text-corpus",
        str(CS3245 / "patsnap_docs.jsonl"),
        "--pairs",
        str(CS3245 / "in_corpus_citation_pairs.tsv"),
    ],
}
DSSDNET_TITLES = {
    "demo": "built-in corpus (400 generated design patents; Locarno subclass as the domain)",
    "cs3245": "cs3245 PatSnap corpus (2,244 patents; citing patent -> in-corpus cited patents; IPC subclass as the domain)",
}
DSSDNET_VARIANTS = ["bert_c", "ds_sd", "ds_sd_mr", "dssdnet"]
DSSDNET_METRICS = ("recall", "map", "map_retrieved", "ndcg")


def dssdnet_run_dir(out: Path, dataset: str, variant: str, seed: int) -> Path:
    return out / dataset / variant / f"seed{seed}"


def dssdnet_finished(path: Path) -> bool:
    return (path / checkpoint.CONFIG).is_file() and "after" in checkpoint.load_metrics(path)


def dssdnet_aggregate(out: Path, datasets, variants, seeds) -> dict:
    """``{dataset: {"bm25": {...}, "variants": {v: {metric: [mean, std]}}, "runs": [...], ...}}``."""
    result = {}
    for ds in datasets:
        runs = {
            v: [
                dssdnet_run_dir(out, ds, v, s)
                for s in seeds
                if dssdnet_finished(dssdnet_run_dir(out, ds, v, s))
            ]
            for v in variants
        }
        done = [p for ps in runs.values() for p in ps]
        if not done:
            continue
        first = checkpoint.load_metrics(done[0])
        entry = {"bm25": first["bm25"], "evaluation": first.get("evaluation", {}), "variants": {}, "runs": {}}
        for v, paths in runs.items():
            if not paths:
                continue
            ms = [checkpoint.load_metrics(p) for p in paths]
            keys = [k for k in ms[0]["after"] if "@" in k]
            entry["variants"][v] = {k: list(mean_std([m["after"][k] for m in ms])) for k in keys}
            entry["runs"][v] = [
                {"seed": int(p.name.removeprefix("seed")), "after": m["after"], "epochs": m.get("epochs_run"),
                 "stop_reason": m.get("stop_reason"), "train_seconds": m.get("train_seconds"), "cpu_seconds": m.get("cpu_seconds"),
                 "command": (p / checkpoint.COMMAND).read_text(encoding="utf-8").strip()}
                for p, m in zip(paths, ms, strict=True)
            ]  # fmt: skip
        result[ds] = entry
    return result


def _ks(entry: dict) -> list[int]:
    return sorted({int(k.split("@")[1]) for k in entry["bm25"] if "@" in k})


def dssdnet_markdown(result: dict, seeds) -> str:
    """Tables: one per dataset and cut-off group (k <= 50 and k >= 100), rows BM25 + variants."""
    lines = []
    for ds, entry in result.items():
        ev = entry["evaluation"]
        lines += [f"### {DSSDNET_TITLES.get(ds, ds)}", ""]
        lines.append(
            f"{ev.get('queries')} test queries over {ev.get('library')} documents; BM25 top {ev.get('k_first')}, "
            f"the first {ev.get('k_rerank')} re-ranked; mean ± std over seeds {', '.join(map(str, seeds))}."
        )
        lines.append("")
        ks = _ks(entry)
        for group in ([k for k in ks if k <= 50], [k for k in ks if k > 50]):
            if not group:
                continue
            header = ["model"] + [f"{name}@{k}" for k in group for name in ("R", "MAP", "MAP†", "nDCG")]
            lines.append("| " + " | ".join(header) + " |")
            lines.append("|" + "---|" * len(header))
            row = ["BM25"] + [f"{entry['bm25'][f'{m}@{k}']:.3f}" for k in group for m in DSSDNET_METRICS]
            lines.append("| " + " | ".join(row) + " |")
            for v in DSSDNET_VARIANTS:
                if v not in entry["variants"]:
                    continue
                agg = entry["variants"][v]
                cells = [
                    f"{agg[f'{m}@{k}'][0]:.3f} ± {agg[f'{m}@{k}'][1]:.3f}"
                    for k in group
                    for m in DSSDNET_METRICS
                ]
                lines.append("| " + " | ".join([VARIANT_FLAGS[v], *cells]) + " |")
            lines.append("")
    lines.append(
        "MAP: trec_eval AP@k; MAP†: the DSSDNet author's code (AP over the relevant documents retrieved in the top k)."
    )
    return "\n".join(lines) + "\n"
