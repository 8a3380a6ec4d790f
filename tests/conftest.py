"""Shared test helpers: the real data samples that live beside the repository (``../shared/data``), the app
served on a free port, the fixtures several test files share (the served tiny app, the chromium browser,
corpora built from the real samples), and the rule that a test skipped under ``CI=true`` fails unless its
reason is on ``tests/skip_allowlist.txt``. Plain helpers that need no fixture are in ``tests/support/``."""

from __future__ import annotations

import os
import re
import socket
from contextlib import contextmanager
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parent.parent
SHARED = REPO_ROOT.parent / "shared" / "data"
CKPT = str(REPO_ROOT / "checkpoints")


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
    demo.queue().launch(
        server_name="127.0.0.1",
        server_port=port,
        prevent_thread_lock=True,
        quiet=True,
        **app.launch_kwargs(wb, **launch),
    )
    try:
        yield f"http://127.0.0.1:{port}/"
    finally:
        demo.close()


@pytest.fixture
def shared_data() -> Path:
    """The root of the real data samples (``../shared/data``)."""
    return require_shared()


# -- fixtures shared by several test files -------------------------------------------------------------------
@pytest.fixture(scope="module")
def server(tmp_path_factory):
    """(url, workbench, label store): the app on the tiny workbench (``tests/support/tiny.py``), served in
    this process on a free port."""
    from patent_demo.labels.store import LabelStore
    from tests.support.tiny import make_workbench

    tmp = tmp_path_factory.mktemp("app")
    wb, _ = make_workbench(tmp)
    wb.warm_up()
    store = LabelStore(tmp / "labels" / "labels.sqlite")
    with live_app(wb, store) as url:
        yield url, wb, store
    store.close()


@pytest.fixture(scope="module")
def browser():
    """Debian's chromium, headless through Playwright; without it the test skips, and fails under
    ``CI=true``. Screenshots go to ``test-artifacts/``."""
    from tests.support.browser import ARGS, ARTIFACTS, CHROMIUM

    if not CHROMIUM.exists():
        message = "browser tests need Debian's chromium at /usr/bin/chromium: apt-get install -y chromium"
        if os.environ.get("CI") == "true":
            pytest.fail(message)
        pytest.skip(message)
    from playwright.sync_api import sync_playwright

    ARTIFACTS.mkdir(exist_ok=True)
    with sync_playwright() as pw:
        b = pw.chromium.launch(executable_path=str(CHROMIUM), args=ARGS)
        yield b
        b.close()


@pytest.fixture(scope="module")
def dp2(tmp_path_factory) -> Path:
    """A corpus built from the DeepPatent2 sample (``../shared/data/deeppatent2_techdrawfinder_samples``)."""
    from patent_demo.data.build import build_corpus

    out = tmp_path_factory.mktemp("cli") / "dp2"
    build_corpus(
        "deeppatent2", require_shared("deeppatent2_techdrawfinder_samples") / "images", out, progress=False
    )
    return out


@pytest.fixture(scope="module")
def text_corpus(tmp_path_factory) -> Path:
    """A text corpus built from the cs3245 PatSnap sample with its qrels."""
    from patent_demo.data.build import build_corpus

    out = tmp_path_factory.mktemp("cli") / "text"
    build_corpus("text", require_shared("cs3245_patsnap_corpus_qrels"), out, progress=False)
    return out


@pytest.fixture(scope="module")
def small_text_corpus(tmp_path_factory) -> Path:
    """A small slice of the cs3245 sample built as a text corpus: its first 60 documents with an abstract, and
    both ends of the citation pairs of its first 12 citing patents (by id)."""
    import json

    from patent_demo.data.build import build_corpus

    src = require_shared("cs3245_patsnap_corpus_qrels")
    pairs = [line.split("\t") for line in (src / "in_corpus_citation_pairs.tsv").read_text().splitlines()[1:]]
    keep_q = sorted({a for a, *_ in pairs})[:12]
    ids = {x for a, b, *_ in pairs if a in keep_q for x in (a, b)}
    rows = [json.loads(line) for line in (src / "patsnap_docs.jsonl").read_text().splitlines()]
    ids |= {r["doc_id"] for r in rows[:60] if r["abstract"]}
    raw = tmp_path_factory.mktemp("raw")
    (raw / "patsnap_docs.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows if r["doc_id"] in ids))
    head = (src / "in_corpus_citation_pairs.tsv").read_text().splitlines()[0]
    body = [
        line
        for line in (src / "in_corpus_citation_pairs.tsv").read_text().splitlines()[1:]
        if line.split("\t")[0] in ids and line.split("\t")[1] in ids
    ]
    (raw / "in_corpus_citation_pairs.tsv").write_text("\n".join([head, *body]) + "\n")
    out = tmp_path_factory.mktemp("cli") / "small"
    build_corpus("text", raw, out, progress=False)
    return out


@pytest.fixture(scope="session")
def redbook_cli(tmp_path_factory) -> tuple[Path, Path, Path]:
    """``(corpus, cache folder, source)``: the Red Book samples built into a corpus by the CLI
    (``python -m patent_demo.cli corpus build --source redbook``), and one cache folder every test of the
    session shares (the zero-shot index is embedded once)."""
    import subprocess
    import sys

    src = require_shared("impact_design_patent_samples") / "patents"
    tmp = tmp_path_factory.mktemp("redbook-cli")
    cmd = [sys.executable, "-m", "patent_demo.cli", "corpus", "build", "--source", "redbook", str(src)]
    done = subprocess.run([*cmd, "--out", str(tmp / "corpus")], capture_output=True, text=True, cwd=REPO_ROOT)
    assert done.returncode == 0, done.stderr[-2000:]
    return tmp / "corpus", tmp / "cache", src


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

    from train.text.split import draw_scored_split

    topics = [
        ("A47C", "chair seat with an adjustable back rest"),
        ("F21V", "lamp shade of folded paper over a bulb"),
        ("B65D", "bottle cap with a hinged lid and lock"),
        ("A43B", "shoe sole with a cushioned heel strap"),
        ("B62J", "bicycle saddle on a sprung seat post"),
        ("A47J", "coffee machine with a milk frother tank"),
    ]
    root = tmp_path_factory.mktemp("scored")
    lines = ["id,anchor,target,context,title,label"]
    for t, (code, words) in enumerate(topics):
        w = words.split()
        other = topics[(t + 1) % len(topics)][1].split()
        for a in range(3):
            anchor = f"{w[0]} {w[a + 1]}"
            for j, (target, label) in enumerate(
                [(f"{w[0]} {w[-1]}", 0.75), (f"{other[0]} {other[2]}", 0.0), (w[a + 2], 0.5)]
            ):
                ctx = code[:3]
                lines.append(f"r{t}{a}{j},{anchor},{target},{ctx},title of {ctx},{label}")
            lines.append(
                f"r{t}{a}9,{anchor},{w[0]} {w[-1]},H04,electric communication,0.25"
            )  # same pair, other context
    path = root / "train.csv"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    split = draw_scored_split(str(path), (0.6, 0.2, 0.2))
    (root / "split.json").write_text(json.dumps(split), encoding="utf-8")
    return path, root / "split.json"
