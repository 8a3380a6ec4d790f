"""What one request costs the server: CPU-seconds and peak resident memory (beyond what the process held
before) per request, for the cases of the attack campaign that cost the most, each next to the plain
search it is measured against.

    python bench/bench_request_budget.py [--corpus DIR|generated] [--cache-dir DIR] [--repeat 1]
    python bench/bench_request_budget.py --tiny        # the test suite's tiny workbench (seconds, no weights)

The requests go to the app's own handlers (``patent_demo.ui.handlers.Handlers``, ``ExaminerHandlers``) in
this process, on the app's default workbench (the real corpus when ``../shared/data`` is there, else the
generated one; its default drawing model and re-ranker at the re-ranker's validated depth: the weights are
read offline), after its indexes are built and one search of each kind has loaded the models. CPU time is the
process's ``utime + stime`` from ``/proc/self/stat``, the peak is ``VmHWM`` after resetting it
(``tests.support.live.measured``), with one torch thread unless ``--threads`` says otherwise (so the
figure is the work, not the spinning of idle threads on a busy machine); with ``--repeat N`` the smallest
of N runs counts. The budget
(``patent_demo/limits.py``): about 1 CPU-second and 200 MB beyond the plain search of the same kind.
"""

from __future__ import annotations

import argparse
import io
import sys
import tempfile
import warnings
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from PIL import Image, ImageDraw  # noqa: E402

from patent_demo.limits import MAX_ABSTRACT_TOKENS, MAX_APPLICATION_VIEWS, MAX_SHEET_FIGURES  # noqa: E402
from tests.support.hostile import many_scans_jpeg, page, qoi  # noqa: E402
from tests.support.live import measured  # noqa: E402

ABSTRACT = (
    "A lamp with a folded paper shade held over the bulb by a wire frame; the frame clips to the bulb "
    "holder and the shade can be turned to direct the light."
)


def _png(im: Image.Image) -> bytes:
    buf = io.BytesIO()
    im.save(buf, format="PNG")
    return buf.getvalue()


def _sheet(n: int = 14) -> bytes:
    """2000 x 2000, n x n small boxes (196 figures for ``split_sheet``), about 9 kB."""
    im = Image.new("L", (2000, 2000), 255)
    d = ImageDraw.Draw(im)
    for r in range(n):
        for c in range(n):
            x, y = 20 + c * 142, 20 + r * 142
            d.rectangle((x, y, x + 84 + (r * n + c) % 3, y + 84), outline=0, width=4)
    return _png(im)


def _workbench(args):
    if args.tiny:
        from tests.support.tiny import make_workbench

        return make_workbench(Path(tempfile.mkdtemp(prefix="budget-")))[0]
    from patent_demo.ui.args import make_workbench, parse_args

    cache = args.cache_dir or tempfile.mkdtemp(prefix="budget-cache-")
    corpus = ["--corpus", args.corpus] if args.corpus else []
    return make_workbench(parse_args(["--cache-dir", cache, "--demo-patents", str(args.patents), *corpus]))


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument(
        "--corpus",
        default=None,
        help="the corpus the app serves (a folder, or 'generated'); default: the app's own default "
        "(the real corpus built from ../shared/data when it is there)",
    )
    p.add_argument(
        "--patents", type=int, default=300, help="patents of the generated demo corpus (--corpus generated)"
    )
    p.add_argument("--cache-dir", default=None, help="the workbench cache (default: a new temporary folder)")
    p.add_argument("--tiny", action="store_true", help="the test suite's tiny workbench instead")
    p.add_argument("--repeat", type=int, default=1, help="runs per case; the smallest counts")
    p.add_argument(
        "--threads",
        type=int,
        default=1,
        help="torch threads (default 1: the work itself, without idle threads spinning on a busy machine)",
    )
    p.add_argument(
        "--no-text",
        action="store_true",
        help="leave out the cases that need the dense text index and the re-ranker (the 'text search' ones; "
        "BM25 is built): for a machine where embedding the corpus's texts would take hours",
    )
    args = p.parse_args(argv)
    import torch

    torch.set_num_threads(args.threads)
    warnings.filterwarnings("ignore")  # the handlers' toasts (gr.Warning) outside a page

    from patent_demo.labels.store import LabelStore
    from patent_demo.ui.examiner import ExaminerHandlers
    from patent_demo.ui.handlers import Handlers

    wb = _workbench(args)
    dmodel, tmodel = wb.default_drawing_model().key, wb.default_text_model().key
    wb.warm_up(dmodel, text=not args.no_text)  # its index, BM25 and the dense text index: built first
    wb.bm25()
    tmp = Path(tempfile.mkdtemp(prefix="budget-files-"))
    store = LabelStore(tmp / "labels.sqlite")
    h = Handlers(wb, store)
    ex = ExaminerHandlers(wb, store, ready=h._ready)
    files = {
        "figure": wb.corpus.image_path(wb.corpus.patents[0].figures[0]).read_bytes(),
        "sheet": _sheet(),
        "page-2000": page(2000),
        "page-6000": page(6000),
        "page-6300": page(6300),
        "qoi-3600": qoi(3600),
        "scans-3000": many_scans_jpeg(6000, 3000),
        "scans-6": many_scans_jpeg(6000, 6),
        "progressive-2000": page(2000, "JPEG", progressive=True),
    }
    for name, data in files.items():
        (tmp / f"{name}.png").write_bytes(data)  # named .png whatever they hold: the bytes decide
    f = {name: str(tmp / f"{name}.png") for name in files}
    phrases = "OR".join(f'"zq{i}x"' for i in range(748)) + 'OR"chair"'  # no spaces: one "word" per split()
    truncations = "OR".join(f'"abc{i}*"' for i in range(600))
    at_cap = "OR".join(f'"lamp shade{i}"' for i in range(39)) + 'OR"paper*"'  # 40 terms: the cap
    english = (ABSTRACT + " ") * 85  # about 13,000 characters, 2,900 tokens
    cjk_at_cap = "椅子座面靠背扶手" * (MAX_ABSTRACT_TOKENS // 8)
    cases = [
        (
            "drawing search, one figure",
            lambda: h.search_drawing(f["figure"], dmodel, 10, True, True, "", "b")[1],
        ),
        (
            "drawing search, a 2000² page",
            lambda: h.search_drawing(f["page-2000"], dmodel, 10, True, True, "", "b")[1],
        ),
        ("sheet of one figure (a 2000² page)", lambda: ex.search_sheet(f["page-2000"], None, dmodel, 10)[1]),
        (
            f"sheet of 196 boxes (searches {MAX_SHEET_FIGURES})",
            lambda: ex.search_sheet(f["sheet"], None, dmodel, 10)[1],
        ),
        (
            f"application, {MAX_APPLICATION_VIEWS} small views",
            lambda: h.search_application([f["figure"]] * MAX_APPLICATION_VIEWS, dmodel, 10, True)[1],
        ),
        (
            f"application, {MAX_APPLICATION_VIEWS} views of a 2000² page",
            lambda: h.search_application([f["page-2000"]] * MAX_APPLICATION_VIEWS, dmodel, 10, True)[1],
        ),
        (
            "application, 60 views of a 6000² page",
            lambda: h.search_application([f["page-6000"]] * 60, dmodel, 10, True)[1],
        ),
        (
            "application, 200 small views",
            lambda: h.search_application([f["figure"]] * 200, dmodel, 10, True)[1],
        ),
        (
            "application, 2 views of a 6000² page",
            lambda: h.search_application([f["page-6000"]] * 2, dmodel, 10, True)[1],
        ),
        (
            "drawing search, a 6300² PNG page",
            lambda: h.search_drawing(f["page-6300"], dmodel, 10, True, True, "", "b")[1],
        ),
        ("sheet, a 6300² PNG page", lambda: ex.search_sheet(f["page-6300"], None, dmodel, 10)[1]),
        (
            "drawing search, a 2000² progressive JPEG",
            lambda: h.search_drawing(f["progressive-2000"], dmodel, 10, True, True, "", "b")[1],
        ),
        (
            "drawing search, a 3600² QOI (6.5 MB)",
            lambda: h.search_drawing(f["qoi-3600"], dmodel, 10, True, True, "", "b")[1],
        ),
        ("sheet, a 3600² QOI", lambda: ex.search_sheet(f["qoi-3600"], None, dmodel, 10)[1]),
        (
            "application, 2 views: a 3600² QOI and a figure",
            lambda: h.search_application([f["qoi-3600"], f["figure"]], dmodel, 10, True)[1],
        ),
        (
            "drawing search, a 6000² JPEG of 3,000 scans",
            lambda: h.search_drawing(f["scans-3000"], dmodel, 10, True, True, "", "b")[1],
        ),
        ("sheet, a 6000² JPEG of 3,000 scans", lambda: ex.search_sheet(f["scans-3000"], None, dmodel, 10)[1]),
        (
            "drawing search, a 6000² JPEG of 6 scans",
            lambda: h.search_drawing(f["scans-6"], dmodel, 10, True, True, "", "b")[1],
        ),
        ("evaluate, first call", lambda: h.evaluate(dmodel, "test")[0]),
        ("evaluate, again (from memory)", lambda: h.evaluate(dmodel, "test")[0]),
        ("text search, a 25-word abstract", lambda: h.search_text(ABSTRACT, "", tmodel, 10, "b")[2]),
        (
            f"text search, {len(english):,} characters of English",
            lambda: h.search_text(english, "", tmodel, 10, "b")[2],
        ),
        (
            f"text search, {len(cjk_at_cap):,} CJK characters (the cap)",
            lambda: h.search_text(cjk_at_cap, "", tmodel, 10, "b")[2],
        ),
        (
            "text search, 748 phrases joined by OR without spaces",
            lambda: h.search_text(phrases, "", tmodel, 10, "b")[2],
        ),
        (
            "BM25 search, 748 phrases joined by OR without spaces",
            lambda: h.search_bm25(phrases, "", tmodel, 10)[3],
        ),
        (
            "BM25 search, 600 truncations without spaces",
            lambda: h.search_bm25(truncations, "", tmodel, 10)[3],
        ),
        (
            "text search, 600 truncations without spaces",
            lambda: h.search_text(truncations, "", tmodel, 10, "b")[2],
        ),
        (
            "text search, 40 phrases and truncations (the cap)",
            lambda: h.search_text(at_cap, "", tmodel, 10, "b")[2],
        ),
        (
            "BM25 search, 40 phrases and truncations (the cap)",
            lambda: h.search_bm25(at_cap, "", tmodel, 10)[3],
        ),
        (
            "text search, 20,000 CJK characters",
            lambda: h.search_text("椅子座面靠背扶手" * 2_500, "", tmodel, 10, "b")[2],
        ),
    ]
    if args.no_text:
        cases = [(name, call) for name, call in cases if not name.startswith("text search")]
    h.search_drawing(f["figure"], dmodel, 10, True, True, "", "b")  # the models load on their first search:
    h.search_bm25(ABSTRACT, "", tmodel, 10)  # not measured
    if not args.no_text:
        h.search_text(ABSTRACT, "", tmodel, 10, "b")
    print(f"{wb.corpus_description()} · drawing model {dmodel} · re-ranker {tmodel}\n")
    print("| request | CPU-s | peak MB | answer |\n|---|---:|---:|---|")
    once = {"evaluate, first call"}  # a repeat would be answered from memory
    for name, call in cases:
        runs = [measured(call) for _ in range(1 if name in once else max(1, args.repeat))]
        out = runs[0][0]
        cpu, peak = (
            min(c["cpu_s"] for _, c in runs),
            max(0.0, min(c["peak_mb"] for _, c in runs)),
        )  # a peak below the start reads as 0
        answer = " ".join(str(out).split())
        answer = answer if len(answer) <= 90 else answer[:89] + "…"
        print(f"| {name} | {cpu:.2f} | {peak:.0f} | {answer.replace('|', '/')} |", flush=True)
    store.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
