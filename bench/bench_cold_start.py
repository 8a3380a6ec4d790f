"""A cold start as a newcomer meets it: ``python app.py`` on a fresh cache (the real corpus built from the data
folder, every index built), a drawing search sent as soon as the page answers, then a text search; each timed
from the moment the app was started.

    python bench/bench_cold_start.py [--data ../shared/data] [--cache-dir DIR] [--port 7872]
        [--out docs/bench/cold_start.json]

Reported: when the page answered, when the first drawing search and the first text search were answered
(each sent at once, the drawing search when the page answered, the text search when the drawing search
was), how long each build took (the app's console lines ``built <what> in <s> s``) and when the warm-up had
built everything (``--until text`` stops after the text search). The cache is a new temporary folder unless ``--cache-dir`` names one (then it must be
empty: this measures a cold start). It prints a table and writes the figures, the command and the CPU to
``--out``.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "bench")]

from bench_http_search import wait_for_page  # noqa: E402
from record import machine_record, write_record  # noqa: E402

from patent_demo.text.precision import cpu_name  # noqa: E402

ABSTRACT = (
    "A lamp with a folded paper shade held over the bulb by a wire frame; the frame clips to the bulb "
    "holder and the shade can be turned to direct the light."
)
QUERY = "design_patents_2007_uspc_macaulay/images/USD0534332.png"  # an outsole for a shoe
BUILT = re.compile(r"built (?P<what>.+) in (?P<s>[\d.]+) s")
WARM = re.compile(r"warm-up done in (?P<s>[\d.]+) s")


class Console:
    """The app's console, read in a thread: every line with the seconds since the start."""

    def __init__(self, proc: subprocess.Popen, t0: float, log: Path) -> None:
        self.lines: list[tuple[float, str]] = []
        self._log = log.open("w", encoding="utf-8")
        self._t0 = t0
        threading.Thread(target=self._read, args=(proc.stdout,), daemon=True).start()

    def _read(self, stream) -> None:
        buf = ""
        while chunk := stream.read1(4096) if hasattr(stream, "read1") else stream.read(4096):
            buf += chunk.decode("utf-8", "replace").replace("\r", "\n")
            *done, buf = buf.split("\n")
            for line in done:
                if line.strip():
                    t = time.monotonic() - self._t0
                    self.lines.append((t, line))
                    self._log.write(f"{t:8.1f}  {line}\n")
                    self._log.flush()

    def find(self, pattern: re.Pattern) -> list[tuple[float, re.Match]]:
        return [(t, m) for t, line in list(self.lines) if (m := pattern.search(line))]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", default=str(ROOT.parent / "shared" / "data"), help="the real data folder")
    ap.add_argument("--cache-dir", default=None, help="an empty folder (default: a new temporary one)")
    ap.add_argument("--drawing-model", default="hmcl-uspc", help="the real corpus's default drawing model")
    ap.add_argument("--text-model", default="dssdnet-minilm-ipc", help="the real corpus's default re-ranker")
    ap.add_argument("--port", type=int, default=7872)
    ap.add_argument("--timeout", type=float, default=1800, help="seconds to wait for each step")
    ap.add_argument(
        "--until",
        choices=("text", "all"),
        default="all",
        help="stop after the text search, or once all is built",
    )
    ap.add_argument("--out", default=str(ROOT / "docs" / "bench" / "cold_start.json"))
    args = ap.parse_args(argv)

    from gradio_client import Client, handle_file

    cache = Path(args.cache_dir or tempfile.mkdtemp(prefix="cold-start-"))
    if cache.exists() and any(cache.iterdir()):
        raise SystemExit(f"{cache} is not empty: a cold start needs an empty cache folder")
    cache.mkdir(parents=True, exist_ok=True)
    url = f"http://127.0.0.1:{args.port}/"
    cmd = [sys.executable, "-u", str(ROOT / "app.py"), "--port", str(args.port), "--cache-dir", str(cache)]
    cmd += ["--real-data", args.data, "--labels", str(cache / "labels.sqlite")]
    env = {
        **os.environ,
        "HF_HUB_OFFLINE": "1",
        "TRANSFORMERS_OFFLINE": "1",
        "GRADIO_ANALYTICS_ENABLED": "False",
    }
    t0 = time.monotonic()
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, cwd=str(ROOT))
    console = Console(proc, t0, cache / "console.log")
    at: dict[str, float] = {}
    answers: dict[str, str] = {}
    try:
        wait_for_page(url, proc, args.timeout, every=0.5)
        at["page answered"] = time.monotonic() - t0
        client = Client(url, verbose=False)
        figure = handle_file(str(Path(args.data) / QUERY))
        out = client.predict(
            figure, args.drawing_model, 10, True, True, "", "bench", api_name="/search_drawing"
        )
        at["first drawing search answered"] = time.monotonic() - t0
        answers["drawing"] = str(out[1])[:200]
        out = client.predict(ABSTRACT, "", args.text_model, 10, "bench", api_name="/search_text")
        at["first text search answered"] = time.monotonic() - t0
        answers["text"] = str(out[2])[:200]
        end = time.monotonic() + (args.timeout if args.until == "all" else 0)
        while not console.find(WARM) and time.monotonic() < end and proc.poll() is None:
            time.sleep(1)
        warm = console.find(WARM)
        if warm:
            at["everything built"] = warm[0][0]
    finally:
        proc.terminate()
        proc.wait(timeout=60)
    builds = [
        {"what": m["what"], "seconds": float(m["s"]), "ended_at_s": round(t, 1)}
        for t, m in console.find(BUILT)
    ]
    for name, t in at.items():
        print(f"{name:34s} {t:7.1f} s after the start")
    for b in builds:
        print(f"  built {b['what']:60s} {b['seconds']:7.1f} s (done at {b['ended_at_s']:.0f} s)")
    for name, text in answers.items():
        print(f"  {name} answer: {text[:120]}")
    print(f"cpu: {cpu_name()} ({os.cpu_count()} cores); console: {cache / 'console.log'}")
    record = machine_record(
        "bench_cold_start.py",
        argv,
        seconds_after_start={k: round(v, 1) for k, v in at.items()},
        builds=builds,
        answers=answers,
    )
    write_record(args.out, record)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
