"""Shared test helpers: the real data samples that live beside the repository (``../shared/data``), and
the rule that a test skipped under ``CI=true`` fails unless its reason is on ``tests/skip_allowlist.txt``."""

from __future__ import annotations

import os
import re
import socket
from contextlib import contextmanager
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parent.parent
SHARED = REPO_ROOT.parent / "shared" / "data"


def require_shared(subdir: str = "") -> Path:
    """The path of ``../shared/data/<subdir>``. When it is missing the test fails on CI (``CI=true``),
    where the data must be present, and is skipped elsewhere."""
    path = SHARED / subdir
    if not path.exists():
        message = (
            f"real data sample {path} is missing: tests read it from ../shared/data beside the "
            f"repository (see ../shared/data/README.md)"
        )
        if os.environ.get("CI") == "true":
            pytest.fail(message)
        pytest.skip(message)
    return path


def two_member_subclasses(n: int) -> tuple[Path, list[list[list[str]]]]:
    """The USPC 2007 sample (its folder) and its first ``n`` US design subclasses (sorted) that hold exactly
    two drawings: per subclass its two metadata rows ``[patent id, subclass, title]``."""
    import csv
    from collections import defaultdict

    src = require_shared("design_patents_2007_uspc_macaulay")
    with open(src / "metadata_2007.txt", encoding="utf-8") as fh:
        rows = [r for r in csv.reader(fh, delimiter="\t") if r]
    by_sub: dict[str, list[list[str]]] = defaultdict(list)
    for r in rows:
        by_sub[r[1]].append(r)
    return src, [by_sub[s] for s in sorted(by_sub) if len(by_sub[s]) == 2][:n]


def free_port() -> int:
    """A free TCP port on the loopback interface (127.0.0.1)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextmanager
def live_app(wb, store, /, **launch):
    """The app (``app.build_demo(wb, store)``) served in this process on a free loopback port, launched with
    ``app.launch_kwargs(wb, **launch)`` (``launch`` may name ``store`` too); yields its URL and closes the
    server on exit."""
    import app

    demo = app.build_demo(wb, store)
    port = free_port()
    demo.queue().launch(server_name="127.0.0.1", server_port=port, prevent_thread_lock=True, quiet=True,
                        **app.launch_kwargs(wb, **launch))  # fmt: skip
    try:
        yield f"http://127.0.0.1:{port}/"
    finally:
        demo.close()


@pytest.fixture
def shared_data() -> Path:
    """The root of the real data samples (``../shared/data``)."""
    return require_shared()


# -- skips under CI ------------------------------------------------------------------------------------------
# On CI (``CI=true``) every dependency, data sample and browser is installed, so a skip hides a test that did
# not run. A skip there is a failure unless its reason matches an entry of tests/skip_allowlist.txt.

SKIP_ALLOWLIST = Path(__file__).resolve().parent / "skip_allowlist.txt"


def read_skip_allowlist(path: Path = SKIP_ALLOWLIST) -> list[tuple[str, str]]:
    """``[(pattern, why)]`` from lines ``PATTERN :: WHY`` (a regular expression searched in the skip's
    reason, and why such a skip is allowed on CI); blank lines and ``#`` comments are ignored."""
    entries = []
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        pattern, sep, why = line.partition(" :: ")
        if not sep or not pattern.strip() or not why.strip():
            raise ValueError(f"{path}:{n}: expected 'PATTERN :: WHY', got {line!r}")
        re.compile(pattern.strip())
        entries.append((pattern.strip(), why.strip()))
    return entries


def skip_reason(report: pytest.TestReport) -> str:
    longrepr = report.longrepr
    if isinstance(longrepr, tuple) and len(longrepr) == 3:  # (file, line, "Skipped: reason")
        return str(longrepr[2]).removeprefix("Skipped: ")
    return str(longrepr)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item, call):
    report = yield
    if os.environ.get("CI") == "true" and report.skipped and not hasattr(report, "wasxfail"):
        reason = skip_reason(report)
        if not any(re.search(p, reason) for p, _ in read_skip_allowlist()):
            report.outcome = "failed"
            report.longrepr = (
                f"skipped under CI=true, and the reason is on no line of {SKIP_ALLOWLIST.name}: {reason}\n"
                "(install what the test needs, or add 'PATTERN :: WHY' to tests/skip_allowlist.txt)"
            )
    return report


@pytest.fixture(scope="session", autouse=True)
def patient_local_url_check():
    """The servers the tests launch in-process get the app's patient start-up check
    (``patent_demo.ui.serve.patient_url_ok``) in place of gradio's single 3 s tries, which fail on a
    loaded CI machine."""
    from gradio import networking

    from patent_demo.ui.serve import patient_url_ok

    original = networking.url_ok
    networking.url_ok = patient_url_ok
    yield
    networking.url_ok = original


@pytest.fixture(scope="session")
def scored_csv(tmp_path_factory):
    """A small USPPM-format file and its anchor split: per topic, anchors whose targets share words (high)
    or not (low), one pair also scored in a second context with another score."""
    import json

    from train.text_split import draw_scored_split

    topics = [("A47C", "chair seat with an adjustable back rest"), ("F21V", "lamp shade of folded paper over a bulb"),
              ("B65D", "bottle cap with a hinged lid and lock"), ("A43B", "shoe sole with a cushioned heel strap"),
              ("B62J", "bicycle saddle on a sprung seat post"), ("A47J", "coffee machine with a milk frother tank")]  # fmt: skip
    root = tmp_path_factory.mktemp("scored")
    lines = ["id,anchor,target,context,title,label"]
    for t, (code, words) in enumerate(topics):
        w = words.split()
        other = topics[(t + 1) % len(topics)][1].split()
        for a in range(3):
            anchor = f"{w[0]} {w[a + 1]}"
            for j, (target, label) in enumerate([(f"{w[0]} {w[-1]}", 0.75), (f"{other[0]} {other[2]}", 0.0), (w[a + 2], 0.5)]):
                ctx = code[:3]
                lines.append(f"r{t}{a}{j},{anchor},{target},{ctx},title of {ctx},{label}")
            lines.append(f"r{t}{a}9,{anchor},{w[0]} {w[-1]},H04,electric communication,0.25")  # same pair, other context
    path = root / "train.csv"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    split = draw_scored_split(str(path), (0.6, 0.2, 0.2))
    (root / "split.json").write_text(json.dumps(split), encoding="utf-8")
    return path, root / "split.json"
