"""The ablation ladder: BERT(C), DS_SD, DS_SD_MR, DSSDNet x seeds, against BM25; mean ± std.

Each run is one ``train.dssdnet`` call (``--variant V --seed S --out OUT/<dataset>/<V>/seed<S>``,
plus the dataset's arguments and whatever follows ``--``); a run whose directory already holds
finished metrics is not repeated, so an interrupted runner picks up where it stopped. Results go
to a JSON file and a markdown file (tables per metric group; text after the line
``<!-- notes -->`` in an existing markdown file is kept).

Example::

    python -m train.dssdnet_runner --datasets demo cs3245 --seeds 0 1 2 --out runs/ablation \\
        --json docs/results_dssdnet_ablation.json --md docs/results_dssdnet_ablation.md -- --epochs 3 --k-rerank 100

The standard deviation is the sample one (n - 1) over seeds.
"""

from __future__ import annotations

import argparse
import logging
import shlex
import statistics
import sys
import time
from pathlib import Path

from patent_demo import checkpoint
from train import dssdnet

log = logging.getLogger("train.dssdnet_runner")

REPO = Path(__file__).resolve().parent.parent
CS3245 = REPO.parent / "shared" / "data" / "cs3245_patsnap_corpus_qrels"
DATASETS = {
    "demo": ["--demo-patents", "400"],
    "cs3245": [
        "--text-corpus",
        str(CS3245 / "patsnap_docs.jsonl"),
        "--pairs",
        str(CS3245 / "in_corpus_citation_pairs.tsv"),
    ],
}
DATASET_TITLES = {
    "demo": "built-in corpus (400 generated design patents; Locarno subclass as the domain)",
    "cs3245": "cs3245 PatSnap corpus (2,244 patents; citing patent -> in-corpus cited patents; IPC subclass as the domain)",
}
VARIANT_ORDER = ["bert_c", "ds_sd", "ds_sd_mr", "dssdnet"]
METRICS = ("recall", "map", "map_retrieved", "ndcg")
NOTES_MARK = "<!-- notes -->"


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m train.dssdnet_runner", description=__doc__.split("\n\n")[0])
    p.add_argument(
        "--datasets", nargs="+", default=["demo"], choices=sorted(DATASETS), help="datasets to run"
    )
    p.add_argument(
        "--variants", nargs="+", default=VARIANT_ORDER, choices=VARIANT_ORDER, help="variants of the ladder"
    )
    p.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2], help="training seeds")
    p.add_argument("--out", default="runs/dssdnet-ablation", help="folder of the run directories")
    p.add_argument("--json", default=None, help="write the aggregated results here")
    p.add_argument("--md", default=None, help="write the markdown tables here")
    p.add_argument("--aggregate-only", action="store_true", help="do not train; aggregate the finished runs")
    p.add_argument(
        "train_args", nargs=argparse.REMAINDER, help="after --: arguments passed to every train.dssdnet run"
    )
    return p


def run_dir(out: Path, dataset: str, variant: str, seed: int) -> Path:
    return out / dataset / variant / f"seed{seed}"


def finished(path: Path) -> bool:
    return (path / checkpoint.CONFIG).is_file() and "after" in checkpoint.load_metrics(path)


def mean_std(values: list[float]) -> tuple[float, float]:
    return statistics.fmean(values), (statistics.stdev(values) if len(values) > 1 else 0.0)


def aggregate(out: Path, datasets, variants, seeds) -> dict:
    """``{dataset: {"bm25": {...}, "variants": {v: {metric: [mean, std]}}, "runs": [...], ...}}``."""
    result = {}
    for ds in datasets:
        runs = {
            v: [run_dir(out, ds, v, s) for s in seeds if finished(run_dir(out, ds, v, s))] for v in variants
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


def markdown(result: dict, seeds) -> str:
    """Tables: one per dataset and cut-off group (k <= 50 and k >= 100), rows BM25 + variants."""
    lines = []
    for ds, entry in result.items():
        ev = entry["evaluation"]
        lines += [f"### {DATASET_TITLES.get(ds, ds)}", ""]
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
            row = ["BM25"] + [f"{entry['bm25'][f'{m}@{k}']:.3f}" for k in group for m in METRICS]
            lines.append("| " + " | ".join(row) + " |")
            for v in VARIANT_ORDER:
                if v not in entry["variants"]:
                    continue
                agg = entry["variants"][v]
                cells = [
                    f"{agg[f'{m}@{k}'][0]:.3f} ± {agg[f'{m}@{k}'][1]:.3f}" for k in group for m in METRICS
                ]
                lines.append("| " + " | ".join([dssdnet.VARIANT_FLAGS[v], *cells]) + " |")
            lines.append("")
    lines.append(
        "MAP: trec_eval AP@k; MAP†: the DSSDNet author's code (AP over the relevant documents retrieved in the top k)."
    )
    return "\n".join(lines) + "\n"


def write_outputs(result: dict, args, commands: dict) -> None:
    if args.json:
        payload = {"datasets": result, "seeds": args.seeds, "runner_command": commands["runner"]}
        checkpoint.write_json(args.json, payload)
    if args.md:
        path = Path(args.md)
        notes = ""
        if path.is_file() and NOTES_MARK in path.read_text(encoding="utf-8"):
            notes = path.read_text(encoding="utf-8").split(NOTES_MARK, 1)[1]
        text = "# DSSDNet ablation: BM25 vs BERT(C) vs DS_SD vs DS_SD_MR vs DSSDNet\n\n"
        text += f"Produced by:\n\n```\n{commands['runner']}\n```\n\n" + markdown(result, args.seeds)
        text += f"\n{NOTES_MARK}{notes or chr(10)}"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    args = build_parser().parse_args(argv)
    if not logging.getLogger().handlers:
        logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s", datefmt="%H:%M:%S")
    extra = args.train_args[1:] if args.train_args[:1] == ["--"] else args.train_args
    out = Path(args.out)
    commands = {"runner": shlex.join(["python", "-m", "train.dssdnet_runner", *argv])}
    if not args.aggregate_only:
        for ds in args.datasets:
            for seed in args.seeds:
                for v in args.variants:
                    path = run_dir(out, ds, v, seed)
                    if finished(path):
                        log.info("[runner] %s: done, skipped", path)
                        continue
                    run_args = [
                        *DATASETS[ds],
                        "--variant",
                        v,
                        "--seed",
                        str(seed),
                        "--out",
                        str(path),
                        "--no-eval-before",
                        *extra,
                    ]
                    log.info("[runner] %s", shlex.join(run_args))
                    t0 = time.perf_counter()
                    dssdnet.main(run_args)
                    log.info("[runner] %s: %.0f s", path, time.perf_counter() - t0)
                    result = aggregate(out, args.datasets, args.variants, args.seeds)
                    write_outputs(result, args, commands)
    result = aggregate(out, args.datasets, args.variants, args.seeds)
    write_outputs(result, args, commands)
    for ds, entry in result.items():
        for v, agg in entry["variants"].items():
            k = min(_ks(entry))
            r, m = agg[f"recall@{k}"], agg[f"map@{k}"]
            log.info(
                "%s %s: recall@%d %.4f ± %.4f, map@%d %.4f ± %.4f (bm25 %.4f, %.4f)", ds, v, k, r[0], r[1], k, m[0], m[1],
                entry["bm25"][f"recall@{k}"], entry["bm25"][f"map@{k}"],
            )  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
