"""Evaluate a drawing encoder (a checkpoint directory or a zero-shot encoder) on a corpus split.

    python -m train.score_drawings --model checkpoints/hmcl-lite-clip --split test --out results.json
    python -m train.score_drawings --model lite-clip --image-size 128 --redbook ../shared/data/impact_design_patent_samples

Reports mAP over all relevant gallery items and nDCG@k at patent, subclass and main-class level (plus
the graded ``hier_ndcg@k``), a per-subclass breakdown and the silhouette of the embeddings by subclass,
as JSON (see ``patent_demo.drawing.protocol.evaluate_drawings`` and ``patent_demo.metrics.drawing_metrics``).

Protocols: ``queries`` (the demo corpus: one query figure per patent, the gallery every other figure of
the split) and ``all`` (every figure a query against all other figures; the default for a corpus
without a test split, such as ``--redbook``, whose drawing pages carry no marked query view). The split
fallback is ``patent_demo.drawing.protocol.resolve_split``, shared with the app's Error-analysis tab.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
from collections.abc import Sequence
from pathlib import Path

from patent_demo.data.corpus import Corpus
from patent_demo.drawing.finetune import load_encoder
from patent_demo.drawing.protocol import PROTOCOLS, evaluate_drawings, resolve_split, small_split_warning
from train.config_file import apply_config

log = logging.getLogger("train.score_drawings")


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m train.score_drawings", description=__doc__.split("\n\n")[0])
    a = p.add_argument
    a(
        "--config",
        default=None,
        help="JSON file of setting defaults (keys: flag names with '_'); flags override it",
    )
    a("--model", default="lite-clip", help="a checkpoint directory, or an encoder name for zero-shot weights")
    a(
        "--image-size",
        type=int,
        default=None,
        help="input size of a zero-shot encoder (a checkpoint keeps its own)",
    )
    src = p.add_mutually_exclusive_group()
    src.add_argument("--corpus", default=None, help="corpus directory (manifest.jsonl + splits.json)")
    src.add_argument(
        "--redbook", default=None, help="folder of USPTO Red Book grants; every drawing page is a figure"
    )
    src.add_argument(
        "--demo-patents",
        type=int,
        default=400,
        help="patents of the generated demo corpus (the default source)",
    )
    a("--demo-seed", type=int, default=0, help="seed of the generated demo corpus")
    a("--demo-size", type=int, default=256, help="drawing size of the generated demo corpus")
    a("--cache-dir", default="cache", help="where the generated demo corpus is cached")
    a("--split", default="test", help="split to evaluate; 'all' for every patent (also without a test split)")
    a(
        "--protocol",
        choices=PROTOCOLS,
        default=None,
        help="queries or all (default: queries where the corpus marks query views, else all)",
    )
    a("--k", type=int, nargs="+", default=[10], help="nDCG cut-offs")
    a("--batch-size", type=int, default=64, help="figures per embedding batch")
    a("--device", default="cpu", help="cpu, cuda or cuda:N")
    a("--threads", type=int, default=None, help="torch CPU threads (default: torch's choice)")
    a("--no-silhouette", action="store_true", help="skip the silhouette score")
    a("--out", default=None, help="write the JSON result here (else it goes to stdout)")
    a(
        "--record",
        nargs="?",
        const="",
        default=None,
        metavar="KEY",
        help="store the summary in the checkpoint's config.json and metrics.json under KEY (dots nest: after.test; "
        "default: real_validation with --redbook, after.test otherwise)",
    )
    a(
        "--record-file",
        default=None,
        help="with --record: write into this JSON instead of a checkpoint (the zero-shot figures, "
        "patent_demo/configs/zero_shot_metrics.json)",
    )
    return p


def load_eval_corpus(args: argparse.Namespace) -> Corpus:
    if args.corpus:
        return Corpus.load(args.corpus, validate=False)
    if args.redbook:
        from patent_demo.data.loaders.uspto import load_redbook

        return load_redbook(args.redbook)
    from patent_demo.data.democorpus import ensure_demo_corpus

    return ensure_demo_corpus(
        args.cache_dir, patents=args.demo_patents, seed=args.demo_seed, size=args.demo_size
    )


def record(
    checkpoint: Path,
    key: str,
    result: dict,
    corpus: Corpus,
    image_size: int,
    protocol: str,
    files: list[Path] | None = None,
) -> None:
    """Write the evaluation summary into a checkpoint's ``config.json`` and ``metrics.json`` under ``key``
    (or into ``files``: the zero-shot model's figures file, which has no checkpoint)."""
    from patent_demo.checkpoint import write_json
    from patent_demo.drawing.protocol import validation_summary

    if files is None and not (checkpoint / "config.json").is_file():
        raise SystemExit(f"--record needs a checkpoint directory (or --record-file), got {checkpoint}")
    split = result.get("split")
    what = (
        "every page against all others"
        if protocol == "all" and split is None
        else f"split {split}, every drawing against all others of it"
        if protocol == "all"
        else f"split {split}"
    )
    summary = validation_summary(result, f"{corpus.name or corpus.root} ({what})", image_size)
    for path in files or [checkpoint / fname for fname in ("config.json", "metrics.json")]:
        data = json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}
        *parents, last = key.split(".")  # "after.test": the layout train.hmcl writes its test figures in
        node = data
        for part in parents:
            node = node.setdefault(part, {})
        node[last] = summary
        write_json(path, data)
    log.info("recorded %s in %s", key, checkpoint)


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    """Defaults < ``--config`` < command line; unknown config keys (and ``model``) are errors."""
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser()
    apply_config(parser, argv)
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    logging.basicConfig(level=logging.WARNING, format="%(asctime)s %(message)s", datefmt="%H:%M:%S")
    log.setLevel(logging.INFO)
    args = parse_args(argv)
    if args.threads:
        import torch

        torch.set_num_threads(args.threads)
    corpus = load_eval_corpus(args)
    split, protocol = resolve_split(corpus, args.split, args.protocol)
    warning = small_split_warning(corpus, split)
    if warning:
        log.warning(warning)
    model, eval_tf, config = load_encoder(args.model, device=args.device, image_size=args.image_size)
    result = evaluate_drawings(
        model,
        eval_tf,
        corpus,
        split,
        ks=args.k,
        protocol=protocol,
        batch_size=args.batch_size,
        silhouette=not args.no_silhouette,
        per_query=args.record is not None,
    )
    if args.record is not None:
        key = args.record or ("real_validation" if args.redbook else f"after.{split or 'all'}")
        files = [Path(args.record_file)] if args.record_file else None
        record(Path(args.model), key, result, corpus, eval_tf.size, protocol, files)
    result = {
        "model": str(args.model),
        "kind": config.get("kind"),
        "encoder": (config.get("model") or {}).get("name"),
        "image_size": eval_tf.size,
        "corpus": corpus.name or str(corpus.root),
        **result,
        "split": split or "all",
    }
    text = json.dumps(result, indent=1, sort_keys=True)
    m = result["metrics"]
    log.info(
        "%s on %s (%s, %s): patent mAP %.4f, subclass mAP %.4f, main mAP %.4f",
        args.model,
        result["corpus"],
        split or "all",
        protocol,
        m["patent_map"] or float("nan"),
        m["subclass_map"] or float("nan"),
        m["main_map"] or float("nan"),
    )
    if args.out:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text(text + "\n", encoding="utf-8")
    else:
        sys.stdout.write(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
