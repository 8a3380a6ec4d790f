"""Background warm-up: every drawing model's index is built in a thread while searches with a ready model
go on; the status line names the models still building and is empty once all are ready.

Tests: patent_demo/workbench.py, patent_demo/registry.py
"""

from __future__ import annotations

import threading

from patent_demo.registry import ZERO_SHOT
from patent_demo.request import DrawingRequest
from tests.support.tiny import PixelEncoder, make_workbench


def test_warm_up_builds_every_model_without_blocking_a_ready_one(tmp_path):
    wb, fast = make_workbench(tmp_path)
    wb.index(ZERO_SHOT)  # the default model is ready
    gate = threading.Event()

    class Slow(PixelEncoder):
        def encode(self, images):
            gate.wait(30)
            return super().encode(images)

    zero_shot = wb.model(ZERO_SHOT, "drawing")
    slow_spec = type(zero_shot)("slow", "slow model", "drawing", "zero-shot", "lite-clip", trained=False)
    wb.models = lambda task=None: [zero_shot, slow_spec] if task in (None, "drawing") else []
    wb.model = lambda key, task: next(m for m in wb.models(task) if m.key == key)
    wb._drawing_factory = lambda spec: Slow() if spec.key == "slow" else fast
    thread = wb.warm_up_background()
    assert (
        "drawings with slow" in _wait_status(wb, "drawings with slow")
        and "zero-shot" not in wb.index_status()
    )
    fig = wb.corpus["D0004"].figures[1]
    hits = wb.search_drawing(
        DrawingRequest.build(wb, wb.corpus.image_path(fig), ZERO_SHOT, 2)
    ).hits  # not held up by the slow build
    assert hits[0].patent_id == "D0004"
    gate.set()
    thread.join(30)
    assert wb.index_status() == "" and wb.index_ready(ZERO_SHOT) and wb.index_ready("slow")


def _wait_status(wb, needle: str) -> str:
    """The status line once it names ``needle`` (the warm-up builds BM25 and the dense index around it)."""
    for _ in range(400):
        if needle in wb.index_status():
            return wb.index_status()
        threading.Event().wait(0.05)
    return wb.index_status()


def test_warm_up_prepares_the_per_patent_map_of_an_approximate_index(tmp_path):
    """An approximate index's per-patent re-scoring map (about a second at a million figures) is built by
    the warm-up, not by the examiner's first search."""
    import numpy as np

    from patent_demo.index.dense import DenseIndex

    wb, _ = make_workbench(tmp_path)
    x = np.random.default_rng(0).normal(size=(400, 8)).astype(np.float32)
    ivf = DenseIndex.build(
        x,
        [f"f{i}" for i in range(400)],
        [f"p{i // 4}" for i in range(400)],
        kind="ivfsq",
        nlist=4,
        nprobe=1,
        rescore=2,
    )
    wb.index = lambda key: ivf
    wb.warm_up(text=False)
    assert ivf._rows_of_patent is not None and len(ivf._rows_of_patent) == 100
