"""What a refine costs beyond the original drawing search, on the demo corpus (``cache/real``).

    python bench/bench_refine.py --cache cache --queries 20 --repeats 5 | tee docs/bench/bench_refine.log

For each query drawing (corpus figures, spread over the corpus), the original search is
``Workbench.search_drawing`` (encode the drawing + rank patents by their best figure). A refine is what
``patent-demo search drawings --feedback`` and the app's refine do after it: the labelled hits' vectors
read from the index (``patent_demo.search.feedback.refine_from_labels``: each judged patent's best figure for
the query, from the stored embeddings; no re-encoding), the Rocchio query, and the search again with
that vector (``search_drawing(req, vector)``). Ten hits are labelled, alternately relevant and not.
Medians over queries of the median over repeats, in milliseconds; the target is a refine within 50 ms.
"""

from __future__ import annotations

import argparse
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

TARGET_MS = 50.0


def _cpu() -> str:
    try:
        out = subprocess.run(["lscpu"], capture_output=True, text=True, check=False).stdout
        return next(
            (ln.split(":", 1)[1].strip() for ln in out.splitlines() if ln.startswith("Model name")), ""
        )
    except OSError:
        return platform.processor()


def _ms(fn, repeats: int) -> tuple[float, object]:
    times, out = [], None
    for _ in range(repeats):
        t = time.perf_counter()
        out = fn()
        times.append((time.perf_counter() - t) * 1000.0)
    return statistics.median(times), out


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--cache", default="cache", help="the app's cache (the demo corpus in CACHE/real)")
    p.add_argument("--queries", type=int, default=20)
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--labels", type=int, default=10, help="hits labelled per query")
    a = p.parse_args()
    from patent_demo.request import DrawingRequest
    from patent_demo.search.feedback import Feedback, refine_from_labels
    from patent_demo.workbench import Workbench, WorkbenchConfig

    cache = Path(a.cache)
    wb = Workbench(WorkbenchConfig(cache_dir=cache, corpus=cache / "real"), progress=False)
    spec = wb.default_drawing_model()
    index = wb.index(spec)
    weights = Feedback.load()
    figures = [(pt, f) for pt in wb.corpus.patents for f in pt.figures]
    step = max(1, len(figures) // a.queries)
    picks = figures[::step][: a.queries]
    search_ms, refine_ms, vector_ms = [], [], []
    wb.search_drawing(DrawingRequest.build(wb, wb.corpus.image_path(picks[0][1]), spec.key, 10))  # warm
    for _, fig in picks:
        req = DrawingRequest.build(wb, wb.corpus.image_path(fig), spec.key, 10)
        t_search, res = _ms(lambda req=req: wb.search_drawing(req), a.repeats)
        labels = {h.patent_id: i % 2 for i, h in enumerate(res.hits[: a.labels])}

        def vector(res=res, labels=labels):
            return refine_from_labels(res.query_embedding, index, labels, weights).vector

        def refine(req=req, vector=vector):
            return wb.search_drawing(req, vector())

        t_vec, _ = _ms(vector, a.repeats)
        t_ref, _ = _ms(refine, a.repeats)
        search_ms.append(t_search)
        vector_ms.append(t_vec)
        refine_ms.append(t_ref)
    med = statistics.median
    print(f"corpus {cache / 'real'}: {len(wb.corpus)} patents, {index.count} figures ({index.kind} index)")
    print(f"model {spec.key}; weights beta {weights.beta:g}, gamma {weights.gamma:g}, hits {weights.hits}")
    print(f"CPU {_cpu()}; {a.queries} queries x {a.repeats} repeats, {a.labels} labels each")
    print(f"original search (encode + rank)          median {med(search_ms):8.2f} ms")
    print(f"refined vector (hit vectors + Rocchio)   median {med(vector_ms):8.2f} ms")
    print(
        f"refine (refined vector + search again)   median {med(refine_ms):8.2f} ms  (max {max(refine_ms):.2f})"
    )
    ok = med(refine_ms) <= TARGET_MS
    print(
        f"refine beyond the original search: {med(refine_ms):.2f} ms, target <= {TARGET_MS:g} ms: {'met' if ok else 'NOT met'}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
