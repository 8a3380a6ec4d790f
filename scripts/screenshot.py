"""The README's screenshot: the workbench on a real corpus, taken in headless chromium.

Starts ``app.py --corpus CORPUS`` in its own process (as a reader would), uploads one drawing page as the
query, searches, waits until every tile has rendered and saves the page::

    patent-demo corpus build --source redbook ../shared/data/impact_design_patent_samples/patents --out corpora/redbook
    python scripts/screenshot.py --corpus corpora/redbook \\
        --query ../shared/data/impact_design_patent_samples/patents/USD0913174-20210316/USD0913174-20210316-D00002.TIF

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


def wait_for(url: str, proc: subprocess.Popen, timeout: float) -> None:
    """Until the app answers on ``url``; fails at once when the app exited."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if proc.poll() is not None:
            raise SystemExit(f"app.py exited with status {proc.returncode} before serving")
        try:
            with urllib.request.urlopen(url, timeout=5):
                return
        except OSError:
            time.sleep(1)
    raise SystemExit(f"app.py did not answer on {url} within {timeout:.0f} s")


def take(url: str, query: Path, out: Path, width: int, height: int, chromium: str, wait_s: float) -> None:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium, args=["--no-sandbox"])
        page = browser.new_page(viewport={"width": width, "height": height})
        page.goto(url)
        page.locator("#d-file input[type=file]").set_input_files(str(query))
        page.locator("#d-query img").wait_for(timeout=60_000)
        end = time.monotonic() + wait_s
        while (
            True
        ):  # the first search starts the index build in the background: search again until it is ready
            page.locator("#d-search").click()
            try:
                page.locator("#d-gallery img").nth(9).wait_for(timeout=15_000)
                break
            except Exception:
                if time.monotonic() > end:
                    page.screenshot(path=str(out.with_suffix(".failed.png")), full_page=True)
                    raise SystemExit(f"no results within {wait_s:.0f} s: the page as it stood is in "
                                     f"{out.with_suffix('.failed.png')}") from None  # fmt: skip
        page.wait_for_function(
            "() => [...document.querySelectorAll('#d-gallery img, #d-query img, #d-examples img')]"
            ".every(i => i.complete && i.naturalWidth > 0)",
            timeout=60_000,
        )
        page.evaluate("window.scrollTo(0, 0)")  # the cursor row may have scrolled the page
        page.wait_for_timeout(500)  # let the layout settle after the last image
        page.screenshot(path=str(out), full_page=False)
        browser.close()


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--corpus", required=True, help="a corpus directory built by `patent-demo corpus build`")
    p.add_argument("--query", required=True, help="the drawing page to search with")
    p.add_argument("--out", default=str(ROOT / "docs" / "screenshot-redbook.png"), help="the PNG to write")
    p.add_argument("--width", type=int, default=1366, help="viewport width (default 1366)")
    p.add_argument("--height", type=int, default=1100, help="viewport height (default 1100)")
    p.add_argument("--chromium", default=CHROMIUM, help=f"the chromium binary (default {CHROMIUM})")
    p.add_argument("--timeout", type=float, default=600, help="seconds to wait for the app to start")
    p.add_argument("--wait", type=float, default=300, help="seconds to wait for the results (default 300)")
    args = p.parse_args(argv)
    query = Path(args.query).resolve()
    if not query.is_file():
        p.error(f"--query {args.query}: no such file")
    port = free_port()
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "GRADIO_ANALYTICS_ENABLED": "False"}
    with tempfile.TemporaryDirectory(prefix="screenshot-") as tmp:
        cmd = [sys.executable, str(ROOT / "app.py"), "--corpus", str(Path(args.corpus).resolve()),
               "--port", str(port), "--labels", str(Path(tmp) / "labels.sqlite"), "--no-warmup"]  # fmt: skip
        proc = subprocess.Popen(cmd, cwd=ROOT, env=env)
        try:
            wait_for(f"http://127.0.0.1:{port}/", proc, args.timeout)
            take(
                f"http://127.0.0.1:{port}/",
                query,
                Path(args.out),
                args.width,
                args.height,
                args.chromium,
                args.wait,
            )
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
