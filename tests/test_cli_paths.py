"""The CLI run from another folder finds the project's checkpoints and cache (not the working
directory's), reads a course query file in either XML form and, on an IPC corpus, takes the IPC
checkpoint as its default re-ranker, on the real cs3245 corpus.

Tests: patent_demo/cli/common.py
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tests.conftest import REPO_ROOT, require_shared

pytestmark = pytest.mark.slow


def _cli(args: list[str], cwd) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT), "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    env.pop("PATENT_DEMO_CHECKPOINTS", None)
    return subprocess.run(
        [sys.executable, "-m", "patent_demo.cli", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )


def test_cli_from_another_folder_finds_the_checkpoints_and_reads_course_queries(tmp_path):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    models = _cli(["models"], elsewhere)
    assert models.returncode == 0, models.stderr
    names = {line.split()[0] for line in models.stdout.splitlines() if line.strip()}
    assert {"dssdnet-minilm", "dssdnet-minilm-ipc", "hmcl-lite-clip"} <= names

    src = require_shared("cs3245_patsnap_corpus_qrels")
    built = _cli(
        ["corpus", "build", "--source", "text", "--out", str(tmp_path / "cs"), str(src), "--quiet"], elsewhere
    )
    assert built.returncode == 0, built.stderr
    (elsewhere / "q1.xml").write_text(
        '<?xml version="1.0" ?>\n<doc>\n\t<str name="title">\n\t\twashing with bubbles\n\t</str>\n'
        '\t<str name="description">\n\t\tRelevant documents will describe washing technology using bubbles.\n'
        "\t</str>\n</doc>\n"
    )
    (elsewhere / "q2.xml").write_text(
        '<?xml version="1.0" ?>\n<query>\n<title>\nwashing with bubbles\n</title>\n<description>\n'
        "Relevant documents will describe washing technology using bubbles.\n</description>\n</query>\n"
    )
    args = [
        "search",
        "text",
        "--corpus",
        str(tmp_path / "cs"),
        "--model",
        "bm25",
        "--k",
        "3",
        "--query",
        "q1.xml",
        "q2.xml",
        "--cache-dir",
        str(tmp_path / "cache"),
    ]
    out = _cli(args, elsewhere)
    assert out.returncode == 0, out.stderr
    rows = [line.split() for line in out.stdout.splitlines()[1:] if line.strip()]
    assert [(r[0], r[1]) for r in rows] == [
        ("q1", "1"),
        ("q1", "2"),
        ("q1", "3"),
        ("q2", "1"),
        ("q2", "2"),
        ("q2", "3"),
    ]
    assert [r[2] for r in rows[:3]] == [r[2] for r in rows[3:]]  # the same text, the same list
    assert not (elsewhere / "cache").exists() and not (elsewhere / "checkpoints").exists()
    # the re-ranked list on an IPC corpus: by default the checkpoint trained for IPC, as the app picks it (the
    # run's tag names it); "default" is the shipped default list (the hybrid first stage)
    for model, tag in (("dssdnet", "dssdnet:dssdnet-minilm-ipc"), ("default", "hybrid")):
        run = tmp_path / f"{model}.trec"
        args = [
            "search",
            "text",
            "--corpus",
            str(tmp_path / "cs"),
            "--model",
            model,
            "--k",
            "2",
            "--candidates",
            "5",
            "--query",
            "q2.xml",
            "--cache-dir",
            str(tmp_path / "cache"),
            "--run",
            str(run),
        ]
        out = _cli(args, elsewhere)
        assert out.returncode == 0, out.stderr
        assert {line.split()[-1] for line in run.read_text().splitlines()} == {tag}
