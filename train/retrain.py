"""Retrain from examiner labels in one command: export, fine-tune, re-index, evaluate, report.

::

    python -m train.retrain --labels data/labels.sqlite --from checkpoints/hmcl-lite-clip \\
        --out checkpoints/hmcl-lite-clip-v2 [--text-from checkpoints/dssdnet-minilm] [--steps 60]

1. **Export** the label database (``LabelStore``) to ``OUT/labels/`` (``hmcl.jsonl``, ``dssdnet.jsonl``,
   ``qrels.txt``), resolving every judgement (adjudicated labels win, else the majority).
2. **Leak guard**: labels whose query is a test-split patent (or a drawing whose bytes match a test
   figure, or an abstract that is a test patent's text) and judged candidates from test-split
   patents stay out of training unless ``--allow-test-labels``; the report says how many.
3. **Fine-tune** what ships: a head checkpoint (``lite-head``, e.g. ``checkpoints/hmcl-uspc``; or
   ``--from zero-shot``) is retrained on cached trunk features from the judged pairs by ``train.labels.head``
   (relevant / partly as positives, not relevant as hard negatives, the HMCL loss it was trained with, step
   and trunk weight chosen on validation; validation-split candidates stay out too); any other HMCL
   checkpoint is fine-tuned with ``train.hmcl --init-from --labels`` (judged pairs become extra positives
   and hard negatives; the GPU path: ``--device cuda``, bf16, ``torchrun``); with ``--text-from``, the re-ranker with
   ``train.dssdnet --init-from --labels``. The new checkpoints carry ``version`` (parent + 1),
   ``num_labels`` and ``parent`` in ``config.json``, so the app lists them with those.
4. **Re-index**: the corpus is embedded with the new encoder into the app's index cache (the key the
   app looks up) and into ``OUT/index``.
5. **Report** (``OUT/report/report.{md,json,html}``): for every labelled query, the rank of each judged
   candidate under the old and the new model (the app's own ``Workbench`` ranking over the whole
   corpus), and the test-split metrics at patent, subclass and main-class level before and after,
   with regressions flagged.

The corpus is the app's: ``--corpus DIR``, else the built-in one with the app's defaults
(``--demo-patents 300 --demo-size 160`` under ``--cache-dir cache``).
"""

from __future__ import annotations

import argparse
import shlex
import sys
from collections.abc import Sequence
from pathlib import Path

from patent_demo.checkpoint import STATE, load_config, load_metrics
from patent_demo.data.corpus import Corpus
from patent_demo.labels.retrain_report import metric_rows, summarise, to_markdown, write_report
from patent_demo.request import DrawingRequest, TextRequest
from train.labels.data import guard_dssdnet_rows, guard_hmcl_rows, read_rows, write_rows
from train.labels.head import add_head_args, retrain_head

# settings of the parent's training run that a fine-tune keeps unless given here
INHERITED = (
    "loss",
    "pairs",
    "text_weight",
    "tau",
    "weights",
    "train_blocks",
    "batch_patents",
    "subclass_fraction",
    "main_fraction",
    "weight_decay",
    "min_lr_ratio",
    "grad_clip",
    "train_split",
)


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m train.retrain", description=__doc__.split("\n\n")[0])
    a = p.add_argument
    a("--labels", required=True, help="the app's label database (labels.sqlite)")
    a(
        "--labels-root",
        default=None,
        help="folder of the query drawings' paths (default: the database's folder)",
    )
    a("--from", dest="parent", required=True, help="the HMCL checkpoint to fine-tune (the current model)")
    a("--out", required=True, help="the new checkpoint directory (its name is the model's key in the app)")
    a("--text-from", default=None, help="also fine-tune this DSSDNet checkpoint on the text labels")
    a("--text-out", default=None, help="the new re-ranker directory (default: <text-from>-v<version>)")
    a("--corpus", default=None, help="corpus directory (default: the app's built-in corpus)")
    a(
        "--demo-patents",
        type=int,
        default=300,
        help="size of the built-in corpus (as the app's --demo-patents)",
    )
    a(
        "--demo-size",
        type=int,
        default=160,
        help="drawing size of the built-in corpus (as the app's --demo-size)",
    )
    a("--demo-seed", type=int, default=0, help="seed of the built-in corpus")
    a("--cache-dir", default="cache", help="the app's cache folder (corpus, indexes)")
    a("--allow-test-labels", action="store_true", help="train on labels of test-split queries/candidates too")
    a("--test-split", default="test", help="the split evaluated and guarded against leaks")
    # drawing fine-tune
    a("--steps", type=int, default=60, help="optimiser steps of the drawing fine-tune")
    a("--lr", type=float, default=1e-4, help="peak learning rate of the drawing fine-tune")
    a("--warmup-steps", type=int, default=5, help="warm-up steps")
    a("--batch-patents", type=int, default=None, help="corpus patents per batch (default: the parent's)")
    a("--train-blocks", type=int, default=None, help="vision blocks that train (default: the parent's)")
    a(
        "--label-weights",
        type=float,
        nargs=2,
        default=None,
        metavar=("S_REL", "S_PARTLY"),
        help="h of a pair judged relevant / partly (default: the parent's s_p and s_s)",
    )
    a("--label-groups", type=int, default=4, help="labelled queries per batch")
    a("--label-positives", type=int, default=2, help="judged-relevant figures per labelled query in a batch")
    a(
        "--label-negatives",
        type=int,
        default=2,
        help="judged-not-relevant figures per labelled query in a batch",
    )
    a("--eval-k", type=int, nargs="+", default=[10], help="nDCG cut-offs")
    a("--eval-batch-size", type=int, default=64, help="figures per batch when embedding")
    # text fine-tune
    a("--text-steps", type=int, default=30, help="optimiser steps of the re-ranker fine-tune")
    a("--text-lr", type=float, default=2e-5, help="learning rate of the re-ranker fine-tune")
    a("--text-args", default="", help="further train.dssdnet arguments, one shell-quoted string")
    # run
    a("--seed", type=int, default=0, help="seed of sampling and augmentation")
    a("--device", default="auto", help="auto, cpu, cuda")
    a("--threads", type=int, default=None, help="torch CPU threads")
    a("--max-drop", type=float, default=0.01, help="a test metric falling by more than this is a regression")
    a("--fail-on-regression", action="store_true", help="exit with status 3 when a test metric regressed")
    a("--no-index-copy", action="store_true", help="do not keep a copy of the index in OUT/index")
    a("--report-dir", default=None, help="where the report goes (default: OUT/report)")
    add_head_args(p.add_argument_group("head checkpoints (train.labels.head)"))
    return p


def load_app_corpus(args: argparse.Namespace) -> Corpus:
    """The corpus the app serves with the same flags."""
    if args.corpus:
        return Corpus.load(args.corpus, validate=False).ensure_splits(seed=args.seed)  # as train.hmcl
    from patent_demo.data.democorpus import ensure_demo_corpus

    return ensure_demo_corpus(
        Path(args.cache_dir) / "democorpus",
        patents=args.demo_patents,
        seed=args.demo_seed,
        size=args.demo_size,
    )


def hmcl_argv(
    args: argparse.Namespace, parent_cfg: dict, corpus: Corpus, labels_file: Path, root: Path
) -> list[str]:
    """The ``train.hmcl`` command line of the fine-tune."""
    train = dict(parent_cfg.get("train") or {})
    if args.batch_patents is not None:
        train["batch_patents"] = args.batch_patents
    if args.train_blocks is not None:
        train["train_blocks"] = args.train_blocks
    argv = []
    for key in INHERITED:
        if key not in train or train[key] is None:
            continue
        value = train[key]
        argv += [
            f"--{key.replace('_', '-')}",
            *(str(v) for v in (value if isinstance(value, list) else [value])),
        ]
    out = Path(args.out)
    argv += [
        "--init-from",
        str(args.parent),
        "--labels",
        str(labels_file),
        "--labels-root",
        str(root),
        "--corpus",
        str(corpus.root),
        "--out",
        str(out.parent),
        "--name",
        out.name,
        "--steps",
        str(args.steps),
        "--lr",
        str(args.lr),
        "--warmup-steps",
        str(args.warmup_steps),
        "--seed",
        str(args.seed),
        "--device",
        args.device,
        "--eval-splits",
        args.test_split,
        "--eval-k",
        *map(str, args.eval_k),
        "--eval-batch-size",
        str(args.eval_batch_size),
        "--label-groups",
        str(args.label_groups),
        "--label-positives",
        str(args.label_positives),
        "--label-negatives",
        str(args.label_negatives),
        "--test-split",
        args.test_split,
        "--log-every",
        "10",
    ]
    if args.label_weights:
        argv += ["--label-weights", *map(str, args.label_weights)]
    if args.allow_test_labels:
        argv.append("--allow-test-labels")
    if args.threads:
        argv += ["--threads", str(args.threads)]
    return argv


def drawing_ranks(wb, rows: Sequence[dict], held: set[str], root: Path, old: str, new: str) -> list[dict]:
    """Per labelled drawing query, each judged candidate's patent rank (from 1, over the whole corpus,
    the app's ``Workbench.search_drawing`` grouped by patent) under the ``old`` and ``new`` model."""
    n = len(wb.corpus)
    out = []
    for row in rows:
        anchor = row["anchor"]
        path = root / anchor["image_file"]
        ranks = {}
        for phase, model in (("before", old), ("after", new)):
            res = wb.search_drawing(DrawingRequest.build(wb, path, model, k=n, per_patent=True))
            ranks[phase] = {h.patent_id: h.rank for h in res.hits}
        items = []
        for key, default in (("positives", None), ("hard_negatives", 0)):
            for it in row.get(key) or []:
                grade = int(it.get("grade", default)) if default is None else 0
                pid = it["patent_id"]
                items.append(
                    {
                        "candidate": pid,
                        "label": {2: "relevant", 1: "partly"}.get(grade, "not"),
                        "grade": grade,
                        "shown_rank": it.get("rank"),
                        "before": ranks["before"].get(pid),
                        "after": ranks["after"].get(pid),
                    }
                )
        out.append(
            {
                "query_id": row["query_id"],
                "kind": "drawing",
                "anchor_patent": anchor.get("patent_id", ""),
                "image_file": anchor["image_file"],
                "held_out": row["query_id"] in held,
                "items": items,
            }
        )
    return out


def text_ranks(wb, rows: Sequence[dict], held: set[str], old: str, new: str) -> list[dict]:
    """Per labelled text query, each judged candidate's rank in the re-ranked BM25 candidates (None when
    BM25 does not retrieve it) under the ``old`` and ``new`` re-ranker."""
    out = []
    k = wb.config.bm25_candidates
    for row in rows:
        ranks = {}
        for phase, model in (("before", old), ("after", new)):
            dss = wb.search_text(
                TextRequest.build(row["query"], row.get("query_codes") or {}, model, k)
            ).lists["dssdnet"]
            ranks[phase] = {pid: r for r, pid in enumerate(dss.ids, 1)}
        items = [
            {
                "candidate": it["id"],
                "label": {2: "relevant", 1: "partly"}.get(int(it.get("grade", 0)), "not"),
                "grade": int(it.get("grade", 0)),
                "shown_rank": it.get("rank"),
                "before": ranks["before"].get(it["id"]),
                "after": ranks["after"].get(it["id"]),
            }
            for it in [*(row.get("pos") or []), *(row.get("neg") or [])]
        ]
        out.append(
            {
                "query_id": row["query_id"],
                "kind": "text",
                "anchor_patent": row.get("query_patent_id", ""),
                "held_out": row["query_id"] in held,
                "items": items,
            }
        )
    return out


def _metrics(directory: Path, split: str, max_drop: float) -> dict | None:
    m = load_metrics(directory)
    before, after = m.get("before") or {}, m.get("after") or {}
    if split in before and split in after:  # train.hmcl: per split, {"metrics": {...}, ...}
        before, after = before[split].get("metrics", {}), after[split].get("metrics", {})
    if not before or not after:
        return None
    rows = metric_rows(before, after, max_drop)
    return {
        "split": split,
        "rows": rows,
        "max_drop": max_drop,
        "regressions": [r["metric"] for r in rows if r["regression"]],
    }


def _train_text(args, corpus: Corpus, train_rows: list[dict], labels_dir: Path, version: int) -> Path:
    from train.dssdnet import main as dssdnet

    if "--init-from" not in dssdnet.build_parser().format_help():
        raise SystemExit("--text-from needs train.dssdnet --init-from (fine-tuning a re-ranker checkpoint)")
    text_out = Path(args.text_out or f"{str(args.text_from).rstrip('/')}-v{version}")
    file = write_rows(labels_dir / "dssdnet.train.jsonl", train_rows)
    argv = [
        "--init-from",
        str(args.text_from),
        "--labels",
        str(file),
        "--corpus",
        str(corpus.root),
        "--out",
        str(text_out),
        "--max-steps",
        str(args.text_steps),
        "--lr",
        str(args.text_lr),
        "--seed",
        str(args.seed),
        "--val-fraction",
        "0",
        "--test-fraction",
        "0",
        "--eval-split",
        args.test_split,
        *shlex.split(args.text_args),
    ]
    if args.threads:
        argv += ["--threads", str(args.threads)]
    if dssdnet.main(argv) != 0:
        raise SystemExit("train.dssdnet failed")
    return text_out


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    args = build_parser().parse_args(argv)
    import torch

    from patent_demo.labels.store import LabelStore
    from patent_demo.workbench import Workbench, WorkbenchConfig
    from train.hmcl import main as hmcl

    if args.threads:
        torch.set_num_threads(args.threads)
    parent, out = Path(args.parent), Path(args.out)
    if parent.resolve() == out.resolve() or parent.name == out.name:
        raise SystemExit(
            f"--out {out} must have another name than --from {parent} (the app lists models by name)"
        )
    parent_cfg = {"model": {"name": "lite-head"}} if args.parent == "zero-shot" else load_config(parent)
    is_head = (parent_cfg.get("model") or {}).get("name") == "lite-head"
    corpus = load_app_corpus(args)
    labels_path = Path(args.labels)
    if not labels_path.is_file():
        raise SystemExit(f"label database {labels_path} not found")
    root = Path(args.labels_root or labels_path.parent)

    # 1-2. export and the leak guard
    labels_dir = out / "labels"
    store = LabelStore(labels_path)
    try:
        store.export_hmcl(labels_dir / "hmcl.jsonl")
        store.export_dssdnet(labels_dir / "dssdnet.jsonl", corpus=corpus)
        store.export_qrels(labels_dir / "qrels.txt")
    finally:
        store.close()
    d_rows = read_rows(labels_dir / "hmcl.jsonl")
    d_kept, d_stats = guard_hmcl_rows(d_rows, corpus, args.test_split, args.allow_test_labels)
    if not d_kept:
        raise SystemExit(
            f"no drawing labels to train on: {len(d_rows)} labelled drawing queries, "
            f"{d_stats.queries_held_out} of them on test-split queries (held out; --allow-test-labels overrides)"
        )
    # 3. fine-tune
    if is_head:  # the shipped head on cached trunk features
        head_args = argparse.Namespace(**vars(args), labels_rows=labels_dir / "hmcl.jsonl")
        head_args.threads = args.threads or 2
        retrain_head(
            head_args,
            corpus,
            d_kept,
            [
                "--corpus",
                str(corpus.root),
                "--labels-rows",
                str(labels_dir / "hmcl.jsonl"),
                "--from",
                str(args.parent),
                "--out",
                str(out),
            ],
        )
    elif hmcl.main(hmcl_argv(args, parent_cfg, corpus, labels_dir / "hmcl.jsonl", root)) != 0:
        raise SystemExit("train.hmcl failed")
    (out / STATE).unlink(missing_ok=True)  # a finished fine-tune needs no resume state
    new_cfg = load_config(out)

    t_rows = read_rows(labels_dir / "dssdnet.jsonl")
    t_kept, t_stats = guard_dssdnet_rows(t_rows, corpus, args.test_split, args.allow_test_labels)
    text_out = None
    if args.text_from and t_kept:
        text_out = _train_text(args, corpus, t_kept, labels_dir, int(new_cfg.get("version") or 2))
    elif args.text_from:
        print(
            f"--text-from: no text labels to train on ({len(t_rows)} labelled text queries, "
            f"{t_stats.queries_held_out} held out); the re-ranker is unchanged"
        )

    # 4. re-index in the app's cache (and a copy beside the checkpoint)
    dirs = tuple(
        dict.fromkeys(
            p.parent.resolve()
            for p in [parent, out, *([Path(args.text_from), text_out] if text_out else [])]
            if p.is_dir()
        )
    )
    wb = Workbench(
        WorkbenchConfig(
            cache_dir=Path(args.cache_dir), checkpoint_dirs=dirs, batch_size=args.eval_batch_size
        ),
        corpus=corpus,
        progress=False,
    )
    index = wb.index(wb.model(out.name, "drawing"))
    if not args.no_index_copy:
        index.save(out / "index")

    # 5. the report
    d_held = set(d_stats.held_out_query_ids)
    report = {
        "title": f"Retraining report: {parent.name} → {out.name}",
        "checkpoint": str(out),
        "parent": str(parent),
        "version": new_cfg.get("version"),
        "num_labels": new_cfg.get("num_labels"),
        "command": shlex.join(["python", "-m", "train.retrain", *argv]),
        "leak_guard": {"drawing": d_stats.to_dict()},
        "queries": drawing_ranks(wb, d_rows, d_held, root, parent.name, out.name),
        "metrics": _metrics(out, args.test_split, args.max_drop),
    }
    report["summary"] = summarise(report["queries"])
    if t_rows:
        report["leak_guard"]["text"] = t_stats.to_dict()
    if text_out is not None:
        text_old, text_new = Path(args.text_from).name, text_out.name
        queries = text_ranks(wb, t_rows, set(t_stats.held_out_query_ids), text_old, text_new)
        report["text"] = {
            "checkpoint": str(text_out),
            "queries": queries,
            "summary": summarise(queries),
            "metrics": _metrics(text_out, args.test_split, args.max_drop),
        }
    paths = write_report(report, args.report_dir or out / "report")
    print(to_markdown(report).split("## Drawing search")[0].strip())
    print(f"report: {paths['markdown']} · {paths['json']} · {paths['html']}")
    regressions = [
        *(report["metrics"] or {}).get("regressions", []),
        *((report.get("text") or {}).get("metrics") or {}).get("regressions", []),
    ]
    if regressions:
        print(f"warning: test metrics fell: {', '.join(regressions)}", file=sys.stderr)
        if args.fail_on_regression:
            return 3
    return 0


if __name__ == "__main__":
    sys.exit(main())
