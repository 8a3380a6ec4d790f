"""Command line: ``python -m patent_demo.data.democorpus OUT --patents 1000 --seed 0 --size 256``."""

from __future__ import annotations

import argparse
import sys
import time

from patent_demo.data.democorpus.build import build_corpus


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m patent_demo.data.democorpus", description="Generate the demo design-patent corpus."
    )
    parser.add_argument(
        "out", help="output directory (manifest.jsonl, splits.json, qrels.txt, protocol.json, images/)"
    )
    parser.add_argument("--patents", type=int, default=1000, help="number of patents to generate")
    parser.add_argument(
        "--seed", type=int, default=0, help="random seed; the same seed gives byte-identical files"
    )
    parser.add_argument("--size", type=int, default=256, help="drawing size in pixels (square)")
    parser.add_argument("--workers", type=int, default=2, help="render processes")
    parser.add_argument(
        "--types", type=int, default=None, help="number of object types to use (default: by corpus size)"
    )
    args = parser.parse_args(argv)
    start = time.perf_counter()
    corpus = build_corpus(
        args.out,
        patents=args.patents,
        seed=args.seed,
        size=args.size,
        workers=args.workers,
        n_types=args.types,
    )
    seconds = time.perf_counter() - start
    n_fig = sum(len(p.figures) for p in corpus)
    sizes = {k: len(v) for k, v in corpus.splits.items()}
    print(
        f"wrote {len(corpus)} patents, {n_fig} drawings to {args.out} in {seconds:.1f} s; splits {sizes}; {len(corpus.qrels)} text queries"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
