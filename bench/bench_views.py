"""How long the researcher's views take on the real demo corpus (``cache/real``, built by
``patent_demo.data.real.ensure_real_corpus`` from ``../shared/data``) with the app's default drawing model.

Error analysis: the evaluation computed cold (``analysis.evaluate``, what the server's background job does
once after its warm-up) on the test split and on all figures, then the tab's first view as it is served
after that job: the evaluation read from ``cache/errors`` and the failure table built. Embedding map: the
silhouettes at three levels (cold), a PCA map, the t-SNE fit (cold) and the t-SNE map read from
``cache/maps``. Each cache is removed first, so every "cold" figure is a real computation. Wall-clock
seconds, and (``cpu_s``) the CPU seconds of each step, with the load average at the end: on a shared
machine the wall clock stretches, the CPU seconds do not.

    python bench/bench_views.py [--corpus cache/real] [--cache cache] [--out docs/bench/views_real.json]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from patent_demo import analysis  # noqa: E402
from patent_demo.workbench import Workbench, WorkbenchConfig  # noqa: E402


def _cpu() -> str:
    out = subprocess.run(["lscpu"], capture_output=True, text=True, check=False).stdout
    name = next(
        (line.split(":", 1)[1].strip() for line in out.splitlines() if line.startswith("Model name")), ""
    )
    return f"{name or platform.processor()}, {len(os.sched_getaffinity(0))} cores"


CPU_S: dict[str, float] = {}  # what each timed step cost in CPU seconds (the machine may be shared)


def _timed(fn, name: str = ""):
    t0, c0 = time.perf_counter(), time.process_time()
    out = fn()
    if name:
        CPU_S[name] = round(time.process_time() - c0, 2)
    return out, round(time.perf_counter() - t0, 2)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--corpus", default="cache/real")
    ap.add_argument("--cache", default="cache")
    ap.add_argument("--out", default="docs/bench/views_real.json")
    args = ap.parse_args(argv)
    wb = Workbench(WorkbenchConfig(cache_dir=Path(args.cache), corpus=Path(args.corpus)), progress=False)
    spec = wb.default_drawing_model()
    index, index_s = _timed(lambda: wb.index(spec))
    res: dict = {
        "command": "python bench/bench_views.py " + " ".join(argv if argv is not None else sys.argv[1:]),
        "cpu": _cpu(),
        "corpus": wb.corpus_description(),
        "figures": index.count,
        "model": spec.key,
        "index_load_or_build_s": index_s,
    }
    from patent_demo.ui.review import failure_row

    for split in ("test", "all"):
        shutil.rmtree(Path(args.cache) / "errors" / wb.fingerprint / spec.fingerprint, ignore_errors=True)
        (_, rows, about), cold = _timed(
            lambda s=split: analysis.cached_evaluation(wb, spec.key, split=s), f"errors_{split}_computed"
        )

        def first_view(s=split):
            _, rows, _ = analysis.cached_evaluation(wb, spec.key, split=s)
            return [failure_row(wb, *f) for f in analysis.failures(rows)]

        table, warm = _timed(first_view, f"errors_{split}_first_view_from_cache")
        res[f"errors_{split}"] = {
            "queries": len(rows),
            "failures": len(table),
            "domains": analysis.domain_summary(rows),
            "computed_s": cold,
            "evaluate_s": about["seconds"],
            "first_view_from_cache_s": warm,
        }
    shutil.rmtree(Path(args.cache) / "maps" / wb.fingerprint / spec.fingerprint, ignore_errors=True)
    pca, pca_cold = _timed(lambda: analysis.embedding_map(wb, spec.key), "pca_with_silhouettes_cold")
    _, pca_warm = _timed(lambda: analysis.embedding_map(wb, spec.key), "pca")
    _, tsne_cold = _timed(lambda: analysis.embedding_map(wb, spec.key, projection="t-SNE"), "tsne_fit")
    _, tsne_warm = _timed(lambda: analysis.embedding_map(wb, spec.key, projection="t-SNE"), "tsne_cached")
    res["map"] = {
        "points": pca["sampled"],
        "silhouettes": pca["silhouettes"],
        "pca_with_silhouettes_cold_s": pca_cold,
        "pca_s": pca_warm,
        "tsne_fit_s": tsne_cold,
        "tsne_cached_s": tsne_warm,
    }
    res["cpu_s"] = CPU_S
    res["load_average_at_end"] = os.getloadavg()[0]  # above 2: the wall-clock figures are stretched
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(res, indent=1) + "\n", encoding="utf-8")
    print(json.dumps(res, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
