"""What a click costs through the HTTP API of a running app: a text search, a drawing search and a label,
medians over repeats, each measured from the client (request sent → answer read).

    python bench/bench_http_search.py [--corpus DIR] [--cache-dir DIR] [--repeat 15] [--port 7871]
        [--out docs/bench/http_search.json]

The app is started as ``python app.py --no-warmup`` (the default corpus unless ``--corpus``; the first call
of each case, not counted, builds what it needs), then called with ``gradio_client`` as the page calls it:

* ``text click``: ``/search_text``, the Text button's one search (BM25, dense and hybrid once, one re-ranking,
  every list filled);
* ``text click, three steps``: ``/search_bm25`` + ``/search_dense`` + ``/search_text`` one after the other,
  what the Text button ran before it became one search (the two first endpoints are still served, API only),
  measured in the same run for the ratio;
* ``drawing click``: ``/search_drawing`` with a corpus figure as the upload (sent with each
  call); the answer read as the server sends it, and once more with the gallery's ten images downloaded
  (what ``gradio_client`` does by default; the page fetches them as it draws the gallery);
* ``label``: ``/label`` of the drawing search's first hit (each repeat a new judgement of the same hit).

The first call of each is a warm-up and is not counted. It prints one line per case and writes the figures,
the command and the CPU to ``--out``.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "bench")]

from record import machine_record, write_record  # noqa: E402

from patent_demo.text.precision import cpu_name  # noqa: E402

ABSTRACT = (
    "A lamp with a folded paper shade held over the bulb by a wire frame; the frame clips to the bulb "
    "holder and the shade can be turned to direct the light."
)


def wait_for_page(url: str, proc: subprocess.Popen, timeout: float, every: float = 2.0) -> None:
    """Poll ``url`` every ``every`` seconds until it answers 200 (``SystemExit`` if the app exits or
    ``timeout`` passes); ``bench_cold_start.py`` uses it too."""
    import httpx

    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if proc.poll() is not None:
            raise SystemExit(f"the app exited with {proc.returncode} before answering")
        try:
            if httpx.get(url, timeout=5).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(every)
    raise SystemExit(f"the app did not answer at {url} within {timeout:.0f} s")


def _timed(fn, repeat: int) -> list[float]:
    fn()  # warm-up: models loaded, caches filled
    out = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t0)
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--corpus", default=None, help="a built corpus (default: the app's default corpus)")
    ap.add_argument("--cache-dir", default=str(ROOT / "cache"))
    ap.add_argument("--repeat", type=int, default=15)
    ap.add_argument(
        "--drawing-model", default="hmcl-uspc", help="the drawing model (the real corpus's default)"
    )
    ap.add_argument(
        "--text-model", default="dssdnet-minilm-ipc", help="the re-ranker (the real corpus's default)"
    )
    ap.add_argument("--port", type=int, default=7871)
    ap.add_argument("--ready-timeout", type=float, default=3600, help="seconds to wait for a cold start")
    ap.add_argument("--out", default=str(ROOT / "docs" / "bench" / "http_search.json"))
    args = ap.parse_args(argv)

    from gradio_client import Client, handle_file

    url = f"http://127.0.0.1:{args.port}/"
    cmd = [sys.executable, str(ROOT / "app.py"), "--port", str(args.port), "--cache-dir", args.cache_dir]
    cmd += ["--corpus", args.corpus] if args.corpus else []
    cmd += ["--labels", str(Path(args.cache_dir) / "bench-http-labels.sqlite")]
    cmd += [
        "--no-warmup"
    ]  # the uncounted first call of each case builds what it needs (no BM25-only answers)
    env = {
        **os.environ,
        "HF_HUB_OFFLINE": "1",
        "TRANSFORMERS_OFFLINE": "1",
        "GRADIO_ANALYTICS_ENABLED": "False",
    }
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_for_page(url, proc, args.ready_timeout)
        # the answer is read when the server sends it; the page fetches the gallery's images as it draws them,
        # so the files are not downloaded, except in the case that says so
        client = Client(url, verbose=False, download_files=False)
        downloading = Client(url, verbose=False)
        from patent_demo.data.corpus import Corpus

        corpus_dir = args.corpus or str(Path(args.cache_dir) / "real")
        corpus = Corpus.load(corpus_dir)
        drawn = next(p for p in corpus if p.figures)
        figure = handle_file(str(corpus.image_path(drawn.figures[0])))
        tm = args.text_model

        def text() -> None:
            client.predict(ABSTRACT, "", tm, 10, "bench", api_name="/search_text")

        def text_three_steps() -> None:
            client.predict(ABSTRACT, "", tm, 10, api_name="/search_bm25")
            client.predict(ABSTRACT, "", tm, 10, api_name="/search_dense")
            client.predict(ABSTRACT, "", tm, 10, "bench", api_name="/search_text")

        def drawing(by=client) -> None:
            by.predict(figure, args.drawing_model, 10, True, True, "", "bench", api_name="/search_drawing")

        def drawing_downloaded() -> None:
            drawing(downloading)

        labels = iter(["relevant", "not", "partly"] * (args.repeat + 1))

        def label() -> None:
            client.predict(next(labels), "hmcl", 1, "", "", "bench", "", True, api_name="/label")

        cases = {
            "text click": text,
            "text click, three steps": text_three_steps,
            "drawing click": drawing,
            "drawing click, its 10 images downloaded": drawing_downloaded,
        }
        times = {name: _timed(fn, args.repeat) for name, fn in cases.items()}
        drawing()  # the label's query
        times["label"] = _timed(label, args.repeat)
    finally:
        proc.terminate()
        proc.wait(timeout=60)
    figures = {
        n: {"median_s": round(statistics.median(t), 4), "min_s": round(min(t), 4), "n": len(t)}
        for n, t in times.items()
    }
    ratio = figures["text click, three steps"]["median_s"] / figures["text click"]["median_s"]
    for n, f in figures.items():
        print(
            f"{n:26s} median {f['median_s'] * 1000:8.1f} ms   min {f['min_s'] * 1000:8.1f} ms   (n={f['n']})"
        )
    print(f"three steps / one search: {ratio:.2f}x   cpu: {cpu_name()} ({os.cpu_count()} cores)")
    out = machine_record(
        "bench_http_search.py", argv, corpus=corpus_dir, figures=figures, three_steps_over_one=round(ratio, 3)
    )
    write_record(args.out, out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
