"""What the sheet of views costs an application search: the request's CPU-seconds with the sheet drawn from
the views as the search decoded them (what the app does) against the sheet drawn from the uploads' bytes (a
second decode and ink crop of every view: the path before), the two interleaved in one process.

    python bench/bench_application_sheet.py --cache-dir cache --repeat 5 --out docs/bench/application_sheet.json

The requests go to the app's own handler (``Handlers.search_application``) on its default workbench and
drawing model, one torch thread, 8 views a request: a corpus figure 8 times, and a 2000² page 8 times. The
second variant differs only in that the search's decoded views are dropped before the handler draws the
sheet, so it falls back to the uploads' bytes. CPU time is the process's user + system time
(``os.times``); medians of ``--repeat`` runs.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import warnings
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.record import machine_record, write_record  # noqa: E402
from tests.support.hostile import page  # noqa: E402

VIEWS = 8
MODES = ("decoded once (the app)", "sheet from the bytes (before)")


def _cpu() -> float:
    t = os.times()
    return t.user + t.system


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--cache-dir", default="cache", help="the workbench cache (default cache)")
    p.add_argument("--repeat", type=int, default=5, help="runs of each variant (medians)")
    p.add_argument("--out", default=None, help="write the figures here as JSON")
    args = p.parse_args(argv)
    import torch

    torch.set_num_threads(1)
    warnings.filterwarnings("ignore")  # the handlers' toasts outside a page

    from patent_demo.labels.store import LabelStore
    from patent_demo.ui.args import make_workbench, parse_args
    from patent_demo.ui.handlers import Handlers

    wb = make_workbench(parse_args(["--cache-dir", args.cache_dir]))
    model = wb.default_drawing_model().key
    wb.warm_up(model, text=False)
    tmp = Path(tempfile.mkdtemp(prefix="sheet-bench-"))
    h = Handlers(wb, LabelStore(tmp / "labels.sqlite"))
    files = {"a corpus figure": wb.corpus.image_path(wb.corpus.patents[0].figures[0]).read_bytes()}
    files["a 2000² page"] = page(2000)
    search = wb.search_application

    def bytes_sheet(req, vector=None):
        res = search(req, vector)
        res.views = []  # the handler then draws the sheet from the uploads' bytes
        return res

    figures = {}
    for i, (name, data) in enumerate(files.items()):
        path = tmp / f"view{i}.png"
        path.write_bytes(data)
        views = [str(path)] * VIEWS
        h.search_application(views, model, 10, True)  # the model and index in memory
        times = {m: [] for m in MODES}
        for _ in range(args.repeat):
            for mode in MODES:
                wb.search_application = search if mode == MODES[0] else bytes_sheet
                start = _cpu()
                _, status, *_ = h.search_application(views, model, 10, True)
                times[mode].append(_cpu() - start)
                wb.search_application = search
                assert "patents for an application" in status, status
        med = {m: statistics.median(v) for m, v in times.items()}
        figures[f"{VIEWS} views of {name}"] = {"median_cpu_s": med, "runs": times}
        print(
            f"{VIEWS} views of {name}: {med[MODES[0]]:.2f} CPU-s decoded once, {med[MODES[1]]:.2f} with the sheet "
            f"from the bytes ({med[MODES[1]] - med[MODES[0]]:.2f} saved; medians of {args.repeat}, {model})"
        )
    if args.out:
        write_record(
            args.out, machine_record("bench_application_sheet.py", argv, model=model, figures=figures)
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
