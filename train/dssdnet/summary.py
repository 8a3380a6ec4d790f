"""DSSDNet tables from finished ``train.dssdnet`` runs: BM25 vs pure DSSDNet vs the fused list on a corpus task
(``python -m train.dssdnet.summary``), and the ablation ladder ``train.sweep dssdnet`` writes (``ladder_*``).

Each run directory (one seed) must hold ``bm25.<split>.txt`` and ``run.<split>.txt`` for the
validation and test splits (``train.dssdnet --eval-split val test --write-run``). Per seed, the BM25
weight of the fusion (``patent_demo.text.fusion.tune_fusion_weight``) is tuned on the validation
queries only and applied to the test queries. Printed and written: mean ± std over seeds of each
list's test metrics, and a paired bootstrap interval (queries resampled; each query's metric averaged
over the seeds) of the difference to BM25.

Example::

    python -m train.dssdnet.summary --runs runs/ipc-L2/cs3245/dssdnet/seed* --json docs/results_dssdnet_ipc.json \\
        --md docs/results_dssdnet_ipc.md -- --text-corpus ../shared/data/cs3245_patsnap_corpus_qrels/patsnap_docs.jsonl \\
        --pairs ../shared/data/cs3245_patsnap_corpus_qrels/in_corpus_citation_pairs.tsv

Everything after ``--`` names the data exactly as the training runs did (``train.dssdnet``'s data
options), so the qrels are those the runs were evaluated on.
"""

from __future__ import annotations

import argparse
import logging
import shlex
import statistics
import sys
from pathlib import Path

import numpy as np

from patent_demo import checkpoint
from patent_demo.metrics import paired_bootstrap, per_query_metrics
from patent_demo.metrics.bootstrap import interval
from patent_demo.reports.rerank import LISTS, METRICS, citation_markdown
from patent_demo.results import Results
from patent_demo.text.fusion import FUSION_METRICS, fuse_run, tune_fusion_weight
from patent_demo.text.tasks import corpus_task
from train.dssdnet import data as dssdnet_data
from train.dssdnet.args import parse_args as train_args
from train.dssdnet.main import VARIANT_FLAGS

log = logging.getLogger("train.dssdnet.summary")


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m train.dssdnet.summary", description=__doc__.split("\n\n")[0])
    p.add_argument("--runs", nargs="+", required=True, help="run directories, one per seed")
    p.add_argument("--bootstrap", type=int, default=10000, help="bootstrap resamples")
    p.add_argument("--json", default=None, help="write the figures here")
    p.add_argument("--md", default=None, help="write the markdown table here")
    p.add_argument(
        "--ship",
        default=None,
        help="copy the run with the best validation objective (DSSDNet's, never the test's) to this checkpoint "
        "directory, with its tuned fusion weight in metrics.json and the scheme in config.json",
    )
    p.add_argument("data", nargs=argparse.REMAINDER, help="after --: the training runs' data options")
    return p


def read_ranked(path: Path) -> dict[str, Results]:
    """A TREC run file as lists in its rank column's order (so ties keep the order they were ranked in;
    ``metrics.read_run`` re-sorts by score as trec_eval does, which reorders tied duplicates)."""
    rows: dict[str, list[tuple[int, str, float]]] = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        parts = line.split()
        if len(parts) == 6:
            rows.setdefault(parts[0], []).append((int(parts[3]), parts[2], float(parts[4])))
    return {q: Results([d for _, d, _ in sorted(r)], [s for _, _, s in sorted(r)]) for q, r in rows.items()}


def split_lists(run_dir: Path, split: str, k_rerank: int) -> tuple[dict, dict]:
    """(BM25 run, re-ranker scores of each query's BM25 top ``k_rerank``) of one split of one run."""
    bm25 = read_ranked(run_dir / f"bm25.{split}.txt")
    rerun = read_ranked(run_dir / f"run.{split}.txt")
    head = {}
    for q, first in bm25.items():
        ids = first.ids[:k_rerank]
        score = dict(zip(rerun[q].ids, rerun[q].scores.tolist(), strict=True))
        head[q] = Results(
            [d for d in rerun[q].ids if d in set(ids)], [score[d] for d in rerun[q].ids if d in set(ids)]
        )
    return bm25, head


def report(run_dirs: list[Path], qrels: dict, n_boot: int) -> dict:
    ks = sorted({int(m.split("@")[1]) for m in METRICS})
    per_seed, per_query = [], {name: [] for name in LISTS}
    for d in run_dirs:
        ev = checkpoint.load_metrics(d).get("evaluation", {})
        k_rerank = int(ev.get("k_rerank") or 100)
        val_bm25, val_head = split_lists(d, "val", k_rerank)
        weight, rows = tune_fusion_weight(val_bm25, val_head, qrels["val"])
        test_bm25, test_head = split_lists(d, "test", k_rerank)
        from patent_demo.text.search import merge_head

        lists = {
            "bm25": test_bm25,
            "dssdnet": {q: merge_head(test_bm25[q], test_head[q]) for q in test_head},
            "fused": fuse_run(test_bm25, test_head, weight),
        }
        seed_metrics = {}
        for name, run in lists.items():
            pq = per_query_metrics(run, qrels["test"], ks)
            per_query[name].append(pq)
            seed_metrics[name] = {m: float(np.mean([v[m] for v in pq.values()])) for m in METRICS}
        per_seed.append(
            {"run": str(d), "weight": weight, "k_rerank": k_rerank, "tuning": rows, "test": seed_metrics}
        )
        log.info(
            "%s: BM25 weight %.2f (val); test %s",
            d,
            weight,
            {n: round(m["ndcg@10"], 4) for n, m in seed_metrics.items()},
        )
    out = {"seeds": len(run_dirs), "queries": len(per_query["bm25"][0]), "lists": {}, "bootstrap_vs_bm25": {}}
    for name in LISTS:
        out["lists"][name] = {
            m: [
                statistics.fmean(s["test"][name][m] for s in per_seed),
                statistics.stdev(s["test"][name][m] for s in per_seed) if len(per_seed) > 1 else 0.0,
            ]
            for m in METRICS
        }
    qids = sorted(per_query["bm25"][0])
    for name in ("dssdnet", "fused"):
        out["bootstrap_vs_bm25"][name] = {}
        for m in METRICS:
            model = np.array([np.mean([pq[q][m] for pq in per_query[name]]) for q in qids])
            base = np.array([np.mean([pq[q][m] for pq in per_query["bm25"]]) for q in qids])
            # one group per query, in sorted id order: the plain query bootstrap
            out["bootstrap_vs_bm25"][name][m] = interval(paired_bootstrap(model, base, qids, n_boot, seed=0))
    out["per_seed"] = per_seed
    out["fusion_objective"] = list(FUSION_METRICS)
    return out


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    args = build_parser().parse_args(argv)
    if not logging.getLogger().handlers:
        logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s", datefmt="%H:%M:%S")
    data_argv = args.data[1:] if args.data[:1] == ["--"] else args.data
    targs = train_args([*data_argv, "--out", "unused"])
    library, qrels = dssdnet_data.load_library(targs)
    task = corpus_task(
        library,
        qrels,
        targs.domain_scheme,
        targs.domain_level,
        targs.val_fraction,
        targs.test_fraction if targs.test_fraction is not None else 0.3,
        targs.max_queries,
    )
    result = report([Path(d) for d in args.runs], task.qrels, args.bootstrap)
    command = shlex.join(["python", "-m", "train.dssdnet.summary", *argv])
    result["command"] = command
    if args.json:
        checkpoint.write_json(args.json, result)
    text = citation_markdown(result, command)
    if args.md:
        checkpoint.write_text(args.md, text)
    log.info("\n%s", text)
    if args.ship:
        ship(result, Path(args.ship), command)
    return 0


def ship(result: dict, out: Path, command: str) -> Path:
    """Copy the best run by validation nDCG@10 of DSSDNet (ties: the first) to ``out``: weights, tokenizer,
    config (plus ``"scheme"``), metrics (plus ``"fusion"``: the weight tuned on that run's validation
    queries) and its command."""
    import shutil

    def val_score(entry: dict) -> float:
        m = checkpoint.load_metrics(entry["run"]).get("splits", {}).get("val", {}).get("after", {})
        return float(m.get("ndcg@10", float("-inf")))

    best = max(result["per_seed"], key=val_score)
    src = Path(best["run"])
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    for name in ("model.safetensors", "command.txt"):
        shutil.copy2(src / name, out / name)
    shutil.copytree(src / "tokenizer", out / "tokenizer")
    config = checkpoint.load_config(src)
    config["scheme"] = config["model"]["domain_scheme"]
    checkpoint.write_json(out / checkpoint.CONFIG, config)
    metrics = checkpoint.load_metrics(src)
    metrics["fusion"] = {
        "weight": best["weight"],
        "tuned_on": "val",
        "objective": list(FUSION_METRICS),
        "test": best["test"],
        "report": command,
        "selected_from": [s["run"] for s in result["per_seed"]],
        "selected_by": "validation nDCG@10 of the re-ranked list",
    }
    checkpoint.write_json(out / checkpoint.METRICS, metrics)
    log.info("shipped %s as %s (BM25 weight %.2f)", src, out, best["weight"])
    return out


def mean_std(values: list[float]) -> tuple[float, float]:
    """Mean and sample standard deviation (n - 1; 0 for one value) of the seeds' figures."""
    return statistics.fmean(values), (statistics.stdev(values) if len(values) > 1 else 0.0)


# -- the ablation ladder of train.sweep dssdnet: BERT(C), DS_SD, DS_SD_MR, DSSDNet x seeds against BM25 -----------
REPO = Path(__file__).resolve().parents[2]
CS3245 = REPO.parent / "shared" / "data" / "cs3245_patsnap_corpus_qrels"
LADDER_DATASETS = {
    "demo": ["--demo-patents", "400"],
    "cs3245": [
        "--text-corpus",
        str(CS3245 / "patsnap_docs.jsonl"),
        "--pairs",
        str(CS3245 / "in_corpus_citation_pairs.tsv"),
    ],
}
LADDER_TITLES = {
    "demo": "built-in corpus (400 generated design patents; Locarno subclass as the domain)",
    "cs3245": "cs3245 PatSnap corpus (2,244 patents; citing patent -> in-corpus cited patents; IPC subclass as the domain)",
}
LADDER_VARIANTS = ["bert_c", "ds_sd", "ds_sd_mr", "dssdnet"]
LADDER_METRICS = ("recall", "map", "map_retrieved", "ndcg")


def ladder_run_dir(out: Path, dataset: str, variant: str, seed: int) -> Path:
    return out / dataset / variant / f"seed{seed}"


def ladder_finished(path: Path) -> bool:
    return (path / checkpoint.CONFIG).is_file() and "after" in checkpoint.load_metrics(path)


def ladder_aggregate(out: Path, datasets, variants, seeds) -> dict:
    """``{dataset: {"bm25": {...}, "variants": {v: {metric: [mean, std]}}, "runs": [...], ...}}``."""
    result = {}
    for ds in datasets:
        runs = {
            v: [
                ladder_run_dir(out, ds, v, s) for s in seeds if ladder_finished(ladder_run_dir(out, ds, v, s))
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
                {
                    "seed": int(p.name.removeprefix("seed")),
                    "after": m["after"],
                    "epochs": m.get("epochs_run"),
                    "stop_reason": m.get("stop_reason"),
                    "train_seconds": m.get("train_seconds"),
                    "cpu_seconds": m.get("cpu_seconds"),
                    "command": (p / checkpoint.COMMAND).read_text(encoding="utf-8").strip(),
                }
                for p, m in zip(paths, ms, strict=True)
            ]
        result[ds] = entry
    return result


def _ks(entry: dict) -> list[int]:
    return sorted({int(k.split("@")[1]) for k in entry["bm25"] if "@" in k})


def ladder_markdown(result: dict, seeds) -> str:
    """Tables: one per dataset and cut-off group (k <= 50 and k >= 100), rows BM25 + variants."""
    lines = []
    for ds, entry in result.items():
        ev = entry["evaluation"]
        lines += [f"### {LADDER_TITLES.get(ds, ds)}", ""]
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
            row = ["BM25"] + [f"{entry['bm25'][f'{m}@{k}']:.3f}" for k in group for m in LADDER_METRICS]
            lines.append("| " + " | ".join(row) + " |")
            for v in LADDER_VARIANTS:
                if v not in entry["variants"]:
                    continue
                agg = entry["variants"][v]
                cells = [
                    f"{agg[f'{m}@{k}'][0]:.3f} ± {agg[f'{m}@{k}'][1]:.3f}"
                    for k in group
                    for m in LADDER_METRICS
                ]
                lines.append("| " + " | ".join([VARIANT_FLAGS[v], *cells]) + " |")
            lines.append("")
    lines.append(
        "MAP: trec_eval AP@k; MAP†: the DSSDNet author's code (AP over the relevant documents retrieved in the top k)."
    )
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    sys.exit(main())
