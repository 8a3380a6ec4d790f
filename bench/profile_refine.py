"""Where a refine's time goes: ``DenseIndex.search_patents`` with the refined vector alone, then cProfile of
five ``Workbench.search_drawing(req, vector)`` calls on the demo corpus (``cache/real``).

    python bench/profile_refine.py > docs/bench/bench_refine_profile.log
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import cProfile
import pstats
import time

from patent_demo.request import DrawingRequest
from patent_demo.search.feedback import Feedback, refine_from_labels
from patent_demo.workbench import Workbench, WorkbenchConfig

wb = Workbench(WorkbenchConfig(cache_dir=Path("cache"), corpus=Path("cache/real")), progress=False)
spec = wb.default_drawing_model()
index = wb.index(spec)
fig = (
    wb.corpus.patents[0].figures[0]
    if wb.corpus.patents[0].figures
    else next(f for p in wb.corpus.patents for f in p.figures)
)
req = DrawingRequest.build(wb, wb.corpus.image_path(fig), spec.key, 10)
res = wb.search_drawing(req)
v = refine_from_labels(
    res.query_embedding, index, {h.patent_id: i % 2 for i, h in enumerate(res.hits)}, Feedback.load()
).vector
wb.search_drawing(req, v)
for _ in range(3):
    t = time.perf_counter()
    index.search_patents(v, 10)
    print("index.search_patents ms", (time.perf_counter() - t) * 1000)
pr = cProfile.Profile()
pr.enable()
for _ in range(5):
    wb.search_drawing(req, v)
pr.disable()
pstats.Stats(pr).sort_stats("cumulative").print_stats(18)
