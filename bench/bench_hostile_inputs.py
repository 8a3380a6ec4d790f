"""Hostile inputs to the parsers: how long a 200 kB classification code takes, and how much memory a
tiny image with a huge padded canvas costs; and the whole campaign against the live app.

    python bench/bench_hostile_inputs.py
    python bench/bench_hostile_inputs.py --campaign docs/bench/hostile_campaign.md [--load docs/bench/labels_load.json]

``--campaign`` runs ``tests/test_reliability.py`` (every hostile input through ``gradio_client`` against a
live app, each with its expected answer class, CPU-seconds and peak memory read from ``/proc``; the
determinism, stale-list, role and ownership checks) and writes the results table: per endpoint the cases,
answer classes and the worst CPU-s and peak MB, then the ten costliest requests. ``--load`` adds the
figures of a ``bench/bench_labels_load.py --json`` run (concurrency, kill -9, determinism on the real
DSSDNet re-ranker).

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
from patent_demo.imageio import DrawingError, load_drawing  # noqa: E402
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


def campaign(out: Path, load: Path | None) -> int:
    """Run the reliability suite with the cost log on and write the table to ``out``."""
    import json
    import os
    import subprocess
    import tempfile

    costs_file = Path(tempfile.mkdtemp(prefix="campaign-")) / "costs.json"
    env = dict(
        os.environ,
        RELIABILITY_COSTS=str(costs_file),
        HF_HUB_OFFLINE="1",
        TRANSFORMERS_OFFLINE="1",
        GRADIO_ANALYTICS_ENABLED="False",
    )
    t0 = time.time()
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests/test_reliability.py"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
    )
    wall = time.time() - t0
    summary = (run.stdout.strip().splitlines() or ["(no output)"])[-1]
    costs = json.loads(costs_file.read_text()) if costs_file.is_file() else {}
    by_api: dict[str, list] = {}
    for cid, c in costs.items():
        by_api.setdefault(c["endpoint"], []).append((cid, c))
    lines = [
        "# The hostile-input campaign (issue 18)",
        "",
        f"`python bench/bench_hostile_inputs.py --campaign {out.relative_to(ROOT) if out.is_relative_to(ROOT) else out}`"
        f": `tests/test_reliability.py` against a live app over HTTP (`gradio_client`), {len(costs)} hostile inputs; "
        f"pytest: {summary} ({wall:.0f} s wall on this machine). CPU-seconds and peak memory are the server "
        "process's (`/proc/self/stat` utime + stime; VmHWM after resetting it through `clear_refs`, above the "
        "resident memory before the request). Budget per request: 1 CPU-s, 200 MB.",
        "",
        "| endpoint | cases | answer classes | worst CPU-s | worst peak MB |",
        "|---|---:|---|---:|---:|",
    ]
    for api, rows in sorted(by_api.items()):
        classes = ", ".join(
            f"{k} {sum(c['class'] == k for _, c in rows)}"
            for k in ("⚠️", "answered")
            if any(c["class"] == k for _, c in rows)
        )
        lines.append(
            f"| `{api}` | {len(rows)} | {classes} | {max(c['cpu_s'] for _, c in rows):.2f} | "
            f"{max(c['peak_mb'] for _, c in rows):.0f} |"
        )
    worst = sorted(costs.items(), key=lambda kv: (-kv[1]["cpu_s"], -kv[1]["peak_mb"]))[:10]
    lines += [
        "",
        "The ten costliest requests:",
        "",
        "| case | endpoint | class | CPU-s | peak MB |",
        "|---|---|---|---:|---:|",
    ]
    lines += [
        f"| {cid} | `{c['endpoint']}` | {c['class']} | {c['cpu_s']:.2f} | {c['peak_mb']:.0f} |"
        for cid, c in worst
    ]
    if load is not None and load.is_file():
        r = json.loads(load.read_text())
        conc, det, tot = r.get("concurrency", {}), r.get("determinism", {}), r.get("kills_total", {})
        lines += [
            "",
            f"Load (`{r.get('command', 'bench/bench_labels_load.py')}`):",
            "",
            f"* determinism: {det.get('searches')} identical `/search_text` at once on the real DSSDNet re-ranker: "
            f"{det.get('distinct_lists')} distinct list(s) (ids and scores), {det.get('distinct_top3')} distinct top 3",
            f"* concurrency: {conc.get('annotators')} annotators, {conc.get('acknowledged')} labels acknowledged, "
            f"{conc.get('lost')} lost, {conc.get('stored_twice')} stored twice, {conc.get('misattributed')} misattributed",
            f"* kill -9 × {len(r.get('kills', []))}: {tot.get('acknowledged')} acknowledged, {tot.get('lost')} lost, "
            f"{tot.get('keys_missing_after_retry')} keys missing and {tot.get('keys_stored_twice')} stored twice after retry",
        ]
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text("\n".join(lines) + "\n", encoding="utf-8")
    print("\n".join(lines))
    return run.returncode


def main() -> int:
    if "--campaign" in sys.argv:
        args = sys.argv[sys.argv.index("--campaign") + 1 :]
        load = Path(args[args.index("--load") + 1]) if "--load" in args else None
        return campaign(Path(args[0]).resolve(), load)
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
        print(
            f"  {size[0]}x{size[1]} PNG ({len(data)} bytes): {outcome} in {ms:.1f} ms, "
            f"peak RSS {before:.0f} -> {after:.0f} MB (+{after - before:.0f})"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
