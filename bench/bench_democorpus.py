"""Time the demo-corpus generator: ``python bench/bench_democorpus.py [--patents 1000] [--workers 2]``.

Prints total seconds, patents/s and drawings/s for one build into a temporary directory, with the load
average at the start (other processes on the machine slow the figures down).
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from patent_demo.data.democorpus.build import build_corpus  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--patents", type=int, default=1000, help="patents to generate")
    parser.add_argument("--workers", type=int, default=2, help="render processes")
    parser.add_argument("--size", type=int, default=256, help="drawing size in pixels")
    parser.add_argument("--seed", type=int, default=0, help="random seed")
    args = parser.parse_args(argv)
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    with tempfile.TemporaryDirectory() as tmp:
        start, cpu0 = time.perf_counter(), time.process_time()
        corpus = build_corpus(
            Path(tmp) / "c", patents=args.patents, seed=args.seed, size=args.size, workers=args.workers
        )
        seconds = time.perf_counter() - start
        drawings = sum(len(p.figures) for p in corpus)
        megabytes = sum(f.stat().st_size for f in Path(tmp).rglob("*.png")) / 1e6
    print(
        f"democorpus: {args.patents} patents, {drawings} drawings at {args.size}px, {args.workers} workers, load avg {load:.1f}"
    )
    print(
        f"total {seconds:.1f} s  |  {args.patents / seconds:.1f} patents/s  |  {drawings / seconds:.1f} drawings/s  |  {megabytes:.1f} MB of PNG"
    )
    print(f"main process CPU {time.process_time() - cpu0:.1f} s; os.cpu_count() = {os.cpu_count()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
