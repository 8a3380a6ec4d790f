"""Tests: scripts/figures.py

The figure tables of the README and ``docs/`` are what their JSON gives (``python scripts/figures.py
--check``, as CI runs it), and the check names the stale block when a table differs.
"""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys

import pytest

from tests.conftest import REPO_ROOT

SCRIPT = REPO_ROOT / "scripts" / "figures.py"


@pytest.fixture(scope="module")
def figures():
    spec = importlib.util.spec_from_file_location("figures", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    sys.modules["figures"] = module  # its dataclass looks its module up by name
    spec.loader.exec_module(module)
    return module


def test_readme_and_docs_figures_match_their_json():
    r = subprocess.run(
        [sys.executable, str(SCRIPT), "--check"], cwd=REPO_ROOT, capture_output=True, text=True, timeout=300
    )
    assert r.returncode == 0, r.stdout + r.stderr


def test_every_block_has_its_markers_and_sources(figures):
    names = [b.name for b in figures.REGISTRY]
    assert len(names) == len(set(names))
    for b in figures.REGISTRY:
        assert b.sources and all((REPO_ROOT / s).is_file() for s in b.sources), b
        text = (REPO_ROOT / b.target).read_text(encoding="utf-8")
        if not b.whole_file:
            start, end = figures.markers(b.name)
            assert text.count(start) == 1 and text.count(end) == 1, b.name
    assert figures.orphan_markers() == []


def test_a_stale_block_is_named_and_rewritten(figures, tmp_path, monkeypatch):
    """On a copy: a hand-edited figure and missing markers are reported by name; a write restores the
    figure; the check then passes."""
    (tmp_path / "docs").mkdir()
    page = "# Page\n\n<!-- figures:demo -->\n\n| a |\n|---|\n| 0.500 |\n\n<!-- /figures:demo -->\n\nAfter.\n"
    (tmp_path / "docs" / "page.md").write_text(page.replace("0.500", "0.527"))
    (tmp_path / "docs" / "bare.md").write_text("# No markers\n")
    (tmp_path / "m.json").write_text('{"a": 0.5}')
    render = lambda src: f"| a |\n|---|\n| {src[0]['a']:.3f} |"  # noqa: E731
    block = figures.Block("demo", ("m.json",), render, "docs/page.md")
    missing = figures.Block("gone", ("m.json",), render, "docs/bare.md")
    monkeypatch.setattr(figures, "load", lambda rel: json.loads((tmp_path / rel).read_text()))
    changed, errors = figures.run((block, missing), check=True, root=tmp_path)
    assert changed == ["docs/page.md: block 'demo' differs from m.json"]
    assert errors and "block 'gone'" in errors[0] and "<!-- figures:gone -->" in errors[0]
    assert "0.527" in (tmp_path / "docs" / "page.md").read_text()  # --check writes nothing
    figures.run((block,), root=tmp_path)
    assert (tmp_path / "docs" / "page.md").read_text() == page
    assert figures.run((block,), check=True, root=tmp_path) == ([], [])
    assert figures.orphan_markers(tmp_path, (block,)) == []
    assert figures.orphan_markers(tmp_path, ()) == ["docs/page.md: block 'demo' is in no registry entry"]
