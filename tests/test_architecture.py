"""Imports go one way: app.py -> patent_demo <- train/. The core package never imports the UI or training."""

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FORBIDDEN = {"gradio", "gradio_client", "app", "train"}


def _imported_roots(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    roots = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            roots.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            roots.add(node.module.split(".")[0])
    return roots


def test_core_package_never_imports_ui_or_training():
    offenders = {}
    for path in sorted((ROOT / "patent_demo").rglob("*.py")):
        bad = _imported_roots(path) & FORBIDDEN
        if bad:
            offenders[str(path.relative_to(ROOT))] = sorted(bad)
    assert offenders == {}


def test_no_module_is_a_monolith():
    too_long = {
        str(p.relative_to(ROOT)): n
        for p in (ROOT / "patent_demo").rglob("*.py")
        if (n := len(p.read_text(encoding="utf-8").splitlines())) > 800
    }
    assert too_long == {}
