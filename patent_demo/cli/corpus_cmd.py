"""``patent-demo corpus build|info``."""

from __future__ import annotations

import argparse
import json

from patent_demo.data.sources import KINDS


def add_parser(sub) -> None:
    p = sub.add_parser("corpus", help="build a corpus from a raw collection, or describe one")
    cs = p.add_subparsers(dest="corpus_command", required=True, metavar="SUBCOMMAND")

    b = cs.add_parser(
        "build",
        help="build a corpus directory from a raw collection (never writes into it)",
        description="Build a corpus directory from a raw collection. The source is only read; the "
        "corpus records where its images are, writes a PNG thumbnail of every figure, draws "
        "train/val/test once by family and saves them. Started again with the same arguments it "
        "resumes where it stopped.",
    )
    b.add_argument(
        "--source",
        required=True,
        choices=KINDS,
        help="redbook: USPTO Red Book folders, weekly .tar archives or weekly grant XML; images: "
        "drawings + a CSV/TSV of id, code(s), title; deeppatent2: DeepPatent2 figures "
        "(+ JSON records); text: a JSONL of patents + citation/family pair TSVs",
    )
    b.add_argument("src", help="the collection: a folder (or one archive / XML / JSONL file)")
    b.add_argument("--out", required=True, help="the corpus directory to write")
    b.add_argument(
        "--images", default=None, help="redbook weekly XML: the folder of drawing pages (default: beside it)"
    )
    b.add_argument(
        "--metadata", default=None, help="images: the CSV/TSV table (default: the one table in SRC)"
    )
    b.add_argument(
        "--scheme",
        default=None,
        choices=("locarno", "uspc", "ipc", "cpc"),
        help="images: the scheme of the code column (default: from the header or the codes' shape)",
    )
    b.add_argument("--seed", type=int, default=0, help="seed of the family split (default 0)")
    b.add_argument(
        "--split",
        type=float,
        nargs=3,
        default=(0.7, 0.15, 0.15),
        metavar=("TRAIN", "VAL", "TEST"),
        help="split fractions (default 0.7 0.15 0.15)",
    )
    b.add_argument(
        "--splits",
        default=None,
        metavar="FILE",
        help="a committed split file (JSON train/val/test id lists, e.g. splits/uspc2007.json) "
        "saved instead of drawing a split by family; default: the committed file of a known source "
        "(splits/cs3245_text.json for cs3245_patsnap_corpus_qrels, splits/uspc2007.json for "
        "design_patents_2007_uspc_macaulay) when it matches the corpus; 'none' draws by family",
    )
    b.add_argument("--thumb-size", type=int, default=384, help="longer side of the thumbnails in pixels")
    b.add_argument("--workers", type=int, default=1, help="processes writing thumbnails (default 1)")
    b.add_argument("--restart", action="store_true", help="forget an earlier, unfinished build in --out")
    b.add_argument(
        "--split-sheets",
        action="store_true",
        help="cut drawing sheets holding several figures into one image per figure "
        "(patent_demo.drawing.sheets; written under OUT/figures)",
    )
    b.add_argument("--quiet", action="store_true", help="no progress bar")
    b.add_argument("--json", default=None, help="also write the summary as JSON here")
    b.set_defaults(handler=run_build)

    i = cs.add_parser(
        "info",
        help="the summary of a built corpus",
        description="The summary of a built "
        "corpus: source, patents, figures, codes by scheme, splits and what the build skipped.",
    )
    i.add_argument("corpus", help="a corpus directory")
    i.add_argument("--json", action="store_true", help="print JSON instead of text")
    i.add_argument(
        "--cache-dir",
        default=None,
        help="the app's cache folder: also say which index kind each built index of this corpus "
        "runs and its measured recall (default: the project's cache/)",
    )
    i.set_defaults(handler=run_info)


def run_build(args: argparse.Namespace) -> int:
    from functools import partial

    from patent_demo.data.build import BuildError, build_corpus
    from patent_demo.data.real import committed_splits, known_part, mark_issued

    build = partial(
        build_corpus,
        args.source,
        args.src,
        args.out,
        images=args.images,
        metadata=args.metadata,
        scheme=args.scheme,
        seed=args.seed,
        fractions=tuple(args.split),
        thumb_size=args.thumb_size,
        workers=args.workers,
        progress=not args.quiet,
        restart=args.restart,
    )
    if args.splits is None and (known := committed_splits(args.source, args.src)) is not None:
        try:  # the committed split of this source: every tool scores the same queries
            summary = build(splits_file=known)
        except BuildError as err:
            if "does not match the corpus" not in str(err):
                raise
            summary = build()  # a subset, or other data than the file's: split by family
    else:
        summary = build(splits_file=None if args.splits in (None, "none") else args.splits)
    print(summary.to_text())
    if (part := known_part(args.source, args.src)) is not None and part.issued:  # its month of grant
        from patent_demo.data.corpus import Corpus

        corpus = Corpus.load(args.out, validate=False)
        n = mark_issued(corpus.patents, part)
        corpus.save(args.out)
        print(f"  issued    {part.issued} on {n:,} undated records (the month of grant its source gives)")
    if args.split_sheets:
        from patent_demo.data.corpus import Corpus
        from patent_demo.drawing.sheets import split_corpus_sheets

        corpus, counts = split_corpus_sheets(Corpus.load(args.out, validate=False), args.out)
        corpus.save(args.out)
        print(
            f"sheets: {counts['split']} of {counts['sheets']} drawings split, {counts['figures']} figures now"
        )
    if args.json:
        with open(args.json, "w", encoding="utf-8") as fh:
            json.dump(summary.to_dict(), fh, indent=1)
    return 0


def run_info(args: argparse.Namespace) -> int:
    from patent_demo.cli.common import project_path
    from patent_demo.data.build import corpus_summary

    summary = corpus_summary(args.corpus)
    indexes = index_lines(args.corpus, args.cache_dir or project_path("cache"))
    if args.json:
        print(json.dumps(summary.to_dict() | {"indexes": indexes}, indent=1))
    else:
        print(summary.to_text())
        for row in indexes:
            print(f"  index     {row['what']} ({row['model']}): {row['description']}")
    return 0


def index_lines(corpus_dir: str, cache_dir: str) -> list[dict]:
    """The built drawing and dense text indexes of a corpus under ``cache_dir``: which kind each runs and
    its measured recall (``patent_demo.index.scale.describe_index``), read from their ``params.json``."""
    from pathlib import Path
    from types import SimpleNamespace

    from patent_demo.data.corpus import Corpus
    from patent_demo.index.scale import describe_index
    from patent_demo.workbench import corpus_fingerprint

    fp = corpus_fingerprint(Corpus.load(corpus_dir, validate=False))
    out = []
    for what, sub in (("drawing", "index"), ("text", "dense")):
        for params in sorted((Path(cache_dir) / sub / fp).glob("*/params.json")):
            meta = json.loads(params.read_text(encoding="utf-8"))
            index = SimpleNamespace(
                kind=meta["kind"], params=meta["params"], count=meta["count"], dim=meta["dim"]
            )
            out.append(
                {
                    "what": what,
                    "model": meta.get("model") or params.parent.name,
                    "path": str(params.parent),
                    "kind": meta["kind"],
                    "description": describe_index(index),
                }
            )
    return out
