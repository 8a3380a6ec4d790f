"""A corpus of a million figures for the scale check: the real Red Book patents plus synthetic ones, with
the synthetic figures' embeddings written as the shards ``patent-demo index embed`` writes.

Embedding a million drawings on a 2-core CPU takes days (about 0.5 s a figure), so only the real figures
are embedded, by the real command; the rest are synthetic patents of 10 figures each whose embeddings
come from ``bench_scale.make_vectors`` (the statistics of real ones) and whose images are one placeholder
drawing (symbolic links, so the app can show a hit). What this writes:

    OUT/corpus/                 manifest.jsonl (real patents first, then synthetic), corpus.json, images/
    CACHE/shards/<corpus>/<model>/shard-00001.npy ...  every shard after the real figures' (shard 0)

and then the real pipeline runs unchanged (``--shard-size`` = the number of real figures, so shard 0
holds exactly them and ``index embed`` embeds only those; the synthetic shards are on disk, so it skips
them like shards of an earlier run)::

    python bench/bench_scale_corpus.py --redbook /tmp/scale/rb --figures 1000000 --out /tmp/scale/c1m
    patent-demo index embed --corpus /tmp/scale/c1m/corpus --model MODEL --cache-dir /tmp/scale/c1m/cache \\
        --shard-size 106 --checkpoints checkpoints
    patent-demo index merge --corpus /tmp/scale/c1m/corpus --model MODEL --cache-dir /tmp/scale/c1m/cache \\
        --checkpoints checkpoints
    patent-demo search --corpus /tmp/scale/c1m/corpus --cache-dir /tmp/scale/c1m/cache drawing QUERY.png
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from bench_scale import FIGURES_PER_PATENT, make_vectors  # noqa: E402

from patent_demo.data.corpus import Corpus, Figure, Patent  # noqa: E402
from patent_demo.index.scale import shard_path, shard_ranges  # noqa: E402
from patent_demo.request import DrawingRequest  # noqa: E402


def placeholder(path: Path) -> None:
    """A white drawing with a frame and the word SYNTHETIC (the image of every synthetic figure)."""
    from PIL import Image, ImageDraw

    img = Image.new("L", (320, 320), 255)
    draw = ImageDraw.Draw(img)
    draw.rectangle((20, 20, 300, 300), outline=0, width=3)
    draw.text((110, 150), "SYNTHETIC", fill=0)
    img.save(path)


def write_corpus(redbook: Path, out: Path, figures: int) -> Corpus:
    real = Corpus.load(redbook, validate=False)
    images = out / "images"
    images.mkdir(parents=True, exist_ok=True)
    patents = []
    for p in real.patents:  # real figures: links to the real pages, same relative paths
        for f in p.figures:
            link = images / f.path
            link.parent.mkdir(parents=True, exist_ok=True)
            if not link.is_symlink():
                link.symlink_to(real.image_path(f))
        patents.append(
            Patent.from_dict(
                {
                    **p.to_dict(),
                    "figures": [{"path": f.path, "view": f.view, "label": f.label} for f in p.figures],
                }
            )
        )
    n_real = sum(len(p.figures) for p in patents)
    art = images / "synthetic.png"
    placeholder(art)
    n_synth = -(-(figures - n_real) // FIGURES_PER_PATENT)
    locarno = sorted({c for p in real.patents for c in p.codes.get("locarno", [])}) or ["99-00"]
    for i in range(n_synth):
        d = images / "synthetic" / f"{i // 1000:04d}"
        d.mkdir(parents=True, exist_ok=True)
        figs = []
        for j in range(min(FIGURES_PER_PATENT, figures - n_real - i * FIGURES_PER_PATENT)):
            rel = f"synthetic/{i // 1000:04d}/S{i:07d}-{j + 1}.png"
            link = images / rel
            if not link.is_symlink():
                link.symlink_to(art)
            figs.append(Figure(rel, view="page", label=f"FIG. {j + 1}"))
        patents.append(
            Patent(
                id=f"SYN{i:07d}",
                title=f"synthetic design {i}",
                figures=figs,
                country="XX",
                codes={"locarno": [locarno[i % len(locarno)]]},
            )
        )
    corpus = Corpus(
        root=out / "corpus",
        patents=patents,
        meta={
            "image_root": str(images.resolve()),
            "source": "manifest",
            "source_label": "Red Book + synthetic (scale check)",
        },
    )
    corpus.save(out / "corpus")
    return Corpus.load(out / "corpus", validate=False)


def rss_mb() -> float:
    return next(int(ln.split()[1]) for ln in open("/proc/self/status") if ln.startswith("VmRSS")) / 1024


def check(args: argparse.Namespace) -> dict:
    """The merged index as the app opens it (``Workbench.index``: memory-mapped): open time and RSS,
    its kind and measured recall as shown, recall@100 of the held-out queries against exact search over
    the same embeddings, p50 / p95 of the figure search, and one drawing search through the Workbench."""
    import faiss

    from patent_demo.cli.index_cmd import _workbench
    from patent_demo.index.faiss_kinds import set_num_threads
    from patent_demo.index.scale import describe_index

    set_num_threads(2)
    out = Path(args.out)
    ns = argparse.Namespace(
        corpus=str(out / "corpus"),
        model=args.model,
        checkpoints=args.checkpoints,
        cache_dir=str(out / "cache"),
    )
    rss0, t0 = rss_mb(), time.perf_counter()
    wb, spec = _workbench(ns)
    t1 = time.perf_counter()
    index = wb.index(spec)
    t2 = time.perf_counter()
    row = {
        "corpus_open_s": round(t1 - t0, 1),
        "index_open_s": round(t2 - t1, 2),
        "figures": index.count,
        "mapped": bool(isinstance(index.embeddings, np.memmap)),
        "rss_after_open_mb": round(rss_mb(), 0),
        "rss_before_mb": round(rss0, 0),
        "shown": describe_index(index),
    }
    q = np.load(out / "queries.npy")
    lat, found = [], []
    for v in q:
        t = time.perf_counter()
        found.append(index.search_raw(v, 100)[1][0])
        lat.append(time.perf_counter() - t)
    exact = faiss.IndexFlatIP(index.dim)
    exact.add(np.ascontiguousarray(index.embeddings, dtype=np.float32))
    truth_scores, truth = exact.search(q / np.linalg.norm(q, axis=1, keepdims=True), 1000)
    del exact
    rec = np.mean(
        [len(set(f.tolist()) & set(t[:100].tolist())) / 100 for f, t in zip(found, truth, strict=True)]
    )
    # the per-patent top 10 (index.patent_fetch, index.patent_nprobe) against exact search's
    from bench_scale import TIE, exact_patent_top

    codes = {p: i for i, p in enumerate(dict.fromkeys(index.patent_ids))}
    patent_of = np.array([codes[p] for p in index.patent_ids])
    want = exact_patent_top(truth, patent_of, 10, truth_scores)
    plat, same, same_scores = [], 0, 0
    for v, w in zip(q, want, strict=True):
        t = time.perf_counter()
        res = index.search_patents(v, 10)
        plat.append(time.perf_counter() - t)
        same += [codes[p] for p in res.ids] == [p for p, _ in w]
        same_scores += len(res.ids) == len(w) and bool(
            np.all(np.abs(np.asarray(res.scores, np.float64) - [s for _, s in w]) <= TIE)
        )
    row.update(
        {
            "patent_top10_exact_share": round(same_scores / len(q), 4),
            "patent_top10_equal_share": round(same / len(q), 4),
            "patent_ms_p50": round(1000 * float(np.median(plat)), 1),
            "patent_ms_p95": round(1000 * float(np.quantile(plat, 0.95)), 1),
            "patent_fetch": index.patent_fetch,
            "patent_nprobe": index.patent_nprobe,
        }
    )
    row.update(
        {
            "recall@100": round(float(rec), 4),
            "latency_ms_p50": round(1000 * float(np.median(lat)), 2),
            "latency_ms_p95": round(1000 * float(np.quantile(lat, 0.95)), 2),
            "queries": len(q),
        }
    )
    if args.query:
        for attempt in ("first", "second"):  # the first also hashes every figure file (Workbench.figure_sha)
            t = time.perf_counter()
            res = wb.search_drawing(DrawingRequest.build(wb, args.query, spec.key, 10))
            row[f"workbench_search_{attempt}_s"] = round(time.perf_counter() - t, 2)
        row["workbench_top3"] = [h.patent_id for h in res.hits[:3]]
    from bench_scale import open_costs

    root = wb.config.cache_dir / "index" / wb.fingerprint / spec.fingerprint
    row["open_fresh_process"] = open_costs(root, q[0])  # read whole vs memory-mapped, in a new process
    row["load"] = [round(v, 2) for v in os.getloadavg()]
    return row


def bench_scale_defaults() -> tuple[float, float]:
    import bench_scale

    return bench_scale.SHARED, bench_scale.SPECTRUM


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--redbook", required=True, help="a built Red Book corpus (patent-demo corpus build)")
    p.add_argument("--figures", type=int, default=1_000_000)
    p.add_argument("--out", required=True)
    p.add_argument("--model", default="default", help="the drawing model the index is for")
    p.add_argument("--checkpoints", nargs="*", default=[str(ROOT / "checkpoints")])
    p.add_argument("--seed", type=int, default=7)
    p.add_argument("--queries", type=int, default=200, help="held-out synthetic queries written beside")
    p.add_argument("--dim", type=int, default=256, help="the model's embedding dimension (1280: zero-shot)")
    p.add_argument(
        "--shared", type=float, default=bench_scale_defaults()[0], help="as bench_scale.py --shared"
    )
    p.add_argument(
        "--spectrum", type=float, default=bench_scale_defaults()[1], help="as bench_scale.py --spectrum"
    )
    p.add_argument("--check", action="store_true", help="only measure the merged index as the app opens it")
    p.add_argument("--query", default=None, help="--check: a drawing to search through the Workbench")
    p.add_argument("--log", default=None, help="--check: append the result (JSON) here")
    args = p.parse_args(argv)
    if args.check:
        row = {"command": " ".join(sys.argv), **check(args)}
        print(json.dumps(row))
        if args.log:
            with open(args.log, "a", encoding="utf-8") as fh:
                fh.write(json.dumps(row) + "\n")
        return 0
    out = Path(args.out)
    t0 = time.perf_counter()
    corpus = write_corpus(Path(args.redbook), out, args.figures)
    figs = corpus.figures()
    n_real = sum(1 for pt, _ in figs if not pt.id.startswith("SYN"))
    print(
        f"corpus {out / 'corpus'}: {len(corpus.patents):,} patents, {len(figs):,} figures "
        f"({n_real} real) in {time.perf_counter() - t0:.0f} s",
        flush=True,
    )
    from patent_demo.cli.index_cmd import _shards, _workbench

    ns = argparse.Namespace(
        corpus=str(out / "corpus"),
        model=args.model,
        checkpoints=args.checkpoints,
        cache_dir=str(out / "cache"),
    )
    wb, spec = _workbench(ns)
    shards = _shards(wb, spec)
    shards.mkdir(parents=True, exist_ok=True)
    ranges = shard_ranges(len(figs), n_real)
    (shards / "shards.json").write_text(
        json.dumps(
            {"figures": len(figs), "shard_size": n_real, "shards": len(ranges)}, indent=1, sort_keys=True
        )
        + "\n"
    )
    # synthetic rows: figures n_real ..; held-out queries of the same
    # distribution (OUT/queries.npy) for measuring the merged index's recall against exact search
    import bench_scale

    bench_scale.SHARED, bench_scale.SPECTRUM = args.shared, args.spectrum  # make_vectors reads them
    # (one figure of each of --queries held-out patents, drawn after the last synthetic patent)
    start = -(-(len(figs) - n_real) // FIGURES_PER_PATENT) * FIGURES_PER_PATENT
    x, _ = make_vectors(start + args.queries * FIGURES_PER_PATENT, dim=args.dim, seed=args.seed)
    np.save(out / "queries.npy", x[start:][::FIGURES_PER_PATENT])
    x = x[: len(figs) - n_real]
    for i, (a, b) in enumerate(ranges[1:], start=1):
        path = shard_path(shards, i)
        tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        with open(tmp, "wb") as fh:
            np.save(fh, x[a - n_real : b - n_real])
        os.replace(tmp, path)
    print(
        f"{len(ranges) - 1} synthetic shards of {n_real} figures in {shards} ({spec.key}, "
        f"{x.shape[1]}-d) after {time.perf_counter() - t0:.0f} s; shard 0 ({n_real} real figures) is left "
        f"to `patent-demo index embed --shard-size {n_real}`"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
