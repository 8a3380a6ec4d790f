"""The screenshots of the README and ``docs/app.md``: the workbench on a real corpus, in headless chromium.

Starts ``app.py --corpus CORPUS`` in its own process (as a reader would), searches with a drawing page
(``--query``) or a text (``--text``), waits until the results have rendered and saves the page::

    patent-demo corpus build --source redbook ../shared/data/impact_design_patent_samples/patents --out corpora/redbook
    python scripts/screenshot.py --corpus corpora/redbook \\
        --query ../shared/data/impact_design_patent_samples/patents/USD0913174-20210316/USD0913174-20210316-D00002.TIF
    patent-demo corpus build --source text ../shared/data/cs3245_patsnap_corpus_qrels --out corpora/text
    python scripts/screenshot.py --corpus corpora/text --height 1500 --out docs/screenshot-text.png \\
        --text 'A washing machine with a rotating drum driven by a motor, and a door seal'

The label database of the run is a temporary one (nothing is stored beside the project).
"""

from __future__ import annotations

import argparse
import os
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CHROMIUM = "/usr/bin/chromium"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for(url: str, port: int, proc: subprocess.Popen, timeout: float) -> None:
    """Until the app answers on ``url``; fails at once when the app exited. The port is polled with bare
    connects first: a page request while gradio checks its own URL at start-up can make that check time
    out on a loaded machine."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if proc.poll() is not None:
            raise SystemExit(f"app.py exited with status {proc.returncode} before serving")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=2):
                break
        except OSError:
            time.sleep(1)
    time.sleep(5)  # gradio's own start-up check of the URL
    while time.monotonic() < end:
        if proc.poll() is not None:
            raise SystemExit(f"app.py exited with status {proc.returncode} before serving")
        try:
            with urllib.request.urlopen(url, timeout=30):
                return
        except OSError:
            time.sleep(2)
    raise SystemExit(f"app.py did not answer on {url} within {timeout:.0f} s")


def search_drawing(page, query: Path, out: Path, wait_s: float) -> None:
    page.locator("#d-file input[type=file]").set_input_files(str(query))
    page.locator("#d-query img").wait_for(timeout=60_000)
    end = time.monotonic() + wait_s
    while True:  # the first search starts the index build in the background: search again until it is ready
        page.locator("#d-search").click()
        try:
            page.locator("#d-gallery img").nth(9).wait_for(timeout=15_000)
            break
        except Exception:
            if time.monotonic() > end:
                failed(page, out, wait_s)
    page.wait_for_function(
        "() => [...document.querySelectorAll('#d-gallery img, #d-query img, #d-examples img')]"
        ".every(i => i.complete && i.naturalWidth > 0)",
        timeout=60_000,
    )


def search_text(page, text: str, out: Path, wait_s: float) -> None:
    page.get_by_role("tab", name="Text search").click()
    page.locator("#t-text textarea").fill(text)
    page.locator("#t-search").click()
    try:  # BM25 answers first; the status line says so once the re-ranked lists are there too
        page.locator("#t-status").get_by_text("re-ranked the hybrid top").wait_for(timeout=wait_s * 1000)
        page.locator(".text-list mark").first.wait_for(
            state="attached", timeout=60_000
        )  # the shown list's snippets
    except Exception:
        failed(page, out, wait_s)


def failed(page, out: Path, wait_s: float) -> None:
    page.screenshot(path=str(out.with_suffix(".failed.png")), full_page=True)
    raise SystemExit(
        f"no results within {wait_s:.0f} s: the page as it stood is in {out.with_suffix('.failed.png')}"
    )


def take(url: str, args: argparse.Namespace) -> None:
    from playwright.sync_api import sync_playwright

    out = Path(args.out)
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=args.chromium, args=["--no-sandbox"])
        page = browser.new_page(viewport={"width": args.width, "height": args.height})
        page.goto(url)
        if args.query:
            search_drawing(page, Path(args.query).resolve(), out, args.wait)
        else:
            search_text(page, args.text, out, args.wait)
        page.wait_for_function(  # no component still showing gradio's progress timer
            "() => !document.querySelector('.eta-bar, .progress-text')", timeout=args.wait * 1000
        )
        page.evaluate("window.scrollTo(0, 0)")  # the cursor row may have scrolled the page
        page.wait_for_timeout(500)  # let the layout settle after the last image
        page.screenshot(path=str(out), full_page=False)
        browser.close()


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--corpus", required=True, help="a corpus directory built by `patent-demo corpus build`")
    q = p.add_mutually_exclusive_group(required=True)
    q.add_argument("--query", help="a drawing page to search with (Drawing search)")
    q.add_argument("--text", help="an abstract or a search in the examiner syntax (Text search)")
    p.add_argument("--out", default=str(ROOT / "docs" / "screenshot-redbook.png"), help="the PNG to write")
    p.add_argument("--width", type=int, default=1366, help="viewport width (default 1366)")
    p.add_argument("--height", type=int, default=1100, help="viewport height (default 1100)")
    p.add_argument("--chromium", default=CHROMIUM, help=f"the chromium binary (default {CHROMIUM})")
    p.add_argument("--cache-dir", default=None, help="the app's cache folder (default: the app's own)")
    p.add_argument("--timeout", type=float, default=600, help="seconds to wait for the app to start")
    p.add_argument("--wait", type=float, default=300, help="seconds to wait for the results (default 300)")
    args = p.parse_args(argv)
    if args.query and not Path(args.query).is_file():
        p.error(f"--query {args.query}: no such file")
    port = free_port()
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "GRADIO_ANALYTICS_ENABLED": "False"}
    with tempfile.TemporaryDirectory(prefix="screenshot-") as tmp:
        cmd = [
            sys.executable,
            str(ROOT / "app.py"),
            "--corpus",
            str(Path(args.corpus).resolve()),
            "--port",
            str(port),
            "--labels",
            str(Path(tmp) / "labels.sqlite"),
            "--no-warmup",
        ]
        cmd += ["--cache-dir", str(Path(args.cache_dir).resolve())] if args.cache_dir else []
        proc = subprocess.Popen(cmd, cwd=ROOT, env=env)
        try:
            wait_for(f"http://127.0.0.1:{port}/", port, proc, args.timeout)
            take(f"http://127.0.0.1:{port}/", args)
        finally:
            proc.terminate()
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
