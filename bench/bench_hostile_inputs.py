"""Hostile inputs to the parsers: how long a 200 kB classification code takes, and how much memory a
tiny image with a huge padded canvas costs.

    python bench/bench_hostile_inputs.py

Prints, for each input, the median wall time of 20 parses (each one raises the cap's ``ValueError``;
``parse_query_codes`` is the app's entry point for typed codes), and for the drawings (a 109-byte
30000 x 1 PNG and a 1 x 100000 PNG) the time to refuse them and the process's peak resident memory
before and after (``ru_maxrss``; the canvas check runs before the canvas is allocated).
"""

from __future__ import annotations

import io
import resource
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from PIL import Image  # noqa: E402

from patent_demo import taxonomy  # noqa: E402
from patent_demo.drawing.imageio import DrawingError, load_drawing  # noqa: E402
from patent_demo.workbench import parse_query_codes  # noqa: E402

CODES = {
    "200 kB of spaces + '06-01'": " " * 200_000 + "06-01",
    "'A47C' + 200 kB of spaces + '-'": "A47C" + " " * 200_000 + "-",
    "200 kB of NBSP/tab": "\u00a0\t" * 100_000,
}


def _median_ms(fn, n: int = 20) -> float:
    times = []
    for _ in range(n):
        t = time.perf_counter()
        try:
            fn()
        except ValueError:
            pass
        times.append((time.perf_counter() - t) * 1000)
    return statistics.median(times)


def main() -> int:
    print("code parsing (median of 20, ms):")
    for label, code in CODES.items():
        per_scheme = {
            s: _median_ms(lambda s=s, c=code: taxonomy.parse(s, c)) for s in ("locarno", "ipc", "uspc")
        }
        typed = _median_ms(lambda c=code: parse_query_codes(c))
        cells = "  ".join(f"{s} {v:.3f}" for s, v in per_scheme.items())
        print(f"  {label:34s} {cells}  parse_query_codes {typed:.3f}")
    print("drawings with a huge padded canvas:")
    for size in ((30_000, 1), (1, 100_000)):
        buf = io.BytesIO()
        Image.new("L", size, 0).save(buf, format="PNG")
        data = buf.getvalue()
        before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        t = time.perf_counter()
        try:
            load_drawing(data)
            outcome = "loaded"
        except DrawingError:
            outcome = "refused"
        ms = (time.perf_counter() - t) * 1000
        after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        print(f"  {size[0]}x{size[1]} PNG ({len(data)} bytes): {outcome} in {ms:.1f} ms, "
              f"peak RSS {before:.0f} -> {after:.0f} MB (+{after - before:.0f})")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
