"""Tests: tests/

Each test file maps to the module(s) it tests, so a reader finds the tests of a module (and the module of a
test) without searching. The rule, for ``tests/test_<name>.py``:

1. ``<name>`` is a module of the project, written as the tail of its path with ``_`` between the parts:
   ``test_bm25.py`` -> ``…/bm25.py``, ``test_loaders_uspto.py`` -> ``…/loaders/uspto.py``,
   ``test_train_hmcl.py`` -> ``train/hmcl/main.py``; a package counts by its folder (``test_labels.py`` ->
   ``patent_demo/labels/``). Modules are looked for in the top-level ``*.py`` files and under
   ``patent_demo/``, ``train/``, ``bench/``, ``scripts/`` and ``ui/``;
2. otherwise a line of the module docstring starts with ``Tests:`` and names, comma-separated, the files
   or folders it tests, each of which exists (``Tests: patent_demo/text/fusion.py``).

No test file imports another test file (the module ``tests.test_<name>``, by any form of ``import`` or
``from … import``, relative ones and those inside functions included): fixtures that several files share
live in ``tests/conftest.py``, plain helpers in ``tests/support/``.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SOURCE_DIRS = ("patent_demo", "train", "bench", "scripts", "ui")


def module_names(root: Path = ROOT) -> set[str]:
    """Every tail of every module path, parts joined by ``_`` (``loaders_uspto``, ``uspto``, …)."""
    paths = [p for p in root.glob("*.py")]
    for d in SOURCE_DIRS:
        if (root / d).is_dir():
            paths += [p for p in (root / d).rglob("*.py") if "__pycache__" not in p.parts]
    names = set()
    for p in paths:
        parts = p.relative_to(root).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        names.update("_".join(parts[i:]) for i in range(len(parts)))
    return names


def declared(path: Path) -> list[str] | None:
    """The paths of the docstring's ``Tests:`` line, or None without one."""
    doc = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8"))) or ""
    for line in doc.splitlines():
        if line.startswith("Tests:"):
            return [x.strip() for x in line.removeprefix("Tests:").split(",") if x.strip()]
    return None


def unmapped(root: Path = ROOT) -> list[str]:
    """One line per test file that maps to nothing, saying why."""
    names = module_names(root)
    out = []
    for test in sorted((root / "tests").glob("test_*.py")):
        paths = declared(test)
        if paths is not None:
            missing = [p for p in paths if not (root / p).exists()]
            if not paths or missing:
                out.append(
                    f"tests/{test.name}: its 'Tests:' line names no existing file: {', '.join(missing) or '(empty)'}"
                )
        elif test.stem.removeprefix("test_") not in names:
            out.append(
                f"tests/{test.name}: no module '{test.stem.removeprefix('test_')}' under the top level, "
                f"{', '.join(d + '/' for d in SOURCE_DIRS)} and no 'Tests: path[, path]' docstring line"
            )
    return out


def imported_modules(path: Path, package: str = "tests") -> list[tuple[int, str]]:
    """``(line, dotted name)`` of every import in ``path`` (a module of ``package``), function-level ones
    included, relative ones made absolute; ``from a import b`` gives both ``a`` and ``a.b``."""
    out = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
        if isinstance(node, ast.Import):
            out += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            parts = package.split(".")
            base = parts[: len(parts) - node.level + 1] if node.level else []
            module = ".".join(base + ([node.module] if node.module else []))
            out += [(node.lineno, module)] + [(node.lineno, f"{module}.{alias.name}") for alias in node.names]
    return out


def cross_test_imports(root: Path = ROOT) -> list[str]:
    """One line per import of a test file (``tests.test_*``) in a test file."""
    found = set()
    for test in sorted((root / "tests").glob("test_*.py")):
        for line, name in imported_modules(test):
            parts = name.split(".")
            if len(parts) >= 2 and parts[0] == "tests" and parts[1].startswith("test_"):
                found.add((test.name, line, f"tests.{parts[1]}"))
    return [f"tests/{name}:{line} imports {module}" for name, line, module in sorted(found)]


def test_every_test_file_maps_to_the_module_it_tests():
    problems = unmapped()
    assert not problems, "test files that map to no module (rule: tests/test_test_layout.py):\n" + "\n".join(
        problems
    )


def test_the_rule_on_a_made_up_tree(tmp_path):
    (tmp_path / "patent_demo" / "data" / "loaders").mkdir(parents=True)
    (tmp_path / "patent_demo" / "data" / "loaders" / "uspto.py").write_text("")
    (tmp_path / "patent_demo" / "labels").mkdir()
    (tmp_path / "patent_demo" / "labels" / "__init__.py").write_text("")
    (tmp_path / "app.py").write_text("")
    (tmp_path / "tests").mkdir()
    for name, body in {
        "test_uspto.py": "",
        "test_loaders_uspto.py": "",
        "test_labels.py": "",
        "test_app.py": "",
        "test_e2e.py": '"""End to end.\n\nTests: app.py, patent_demo/labels/\n"""\n',
        "test_lonely.py": '"""Nothing of this name."""\n',
        "test_stale.py": '"""Tests: patent_demo/gone.py"""\n',
    }.items():
        (tmp_path / "tests" / name).write_text(body)
    problems = unmapped(tmp_path)
    assert len(problems) == 2, problems
    assert problems[0].startswith("tests/test_lonely.py: no module 'lonely'")
    assert problems[1] == "tests/test_stale.py: its 'Tests:' line names no existing file: patent_demo/gone.py"


def test_no_test_file_imports_another():
    problems = cross_test_imports()
    assert not problems, (
        "test files that import a test file (move the helper to tests/conftest.py or tests/support/):\n"
        + "\n".join(problems)
    )


def test_the_import_rule_on_a_made_up_tree(tmp_path):
    (tmp_path / "tests" / "support").mkdir(parents=True)
    a = "tests." + "test_a"
    for name, body in {
        "conftest.py": f"from {a} import x\n",  # not a test file: not checked
        "support/tiny.py": "X = 1\n",
        "test_a.py": "from tests.conftest import REPO_ROOT\nfrom tests.support.tiny import X\nimport tests.support\n",
        "test_b.py": f"from {a} import x\n",
        "test_c.py": f"import {a} as a\n",
        "test_d.py": "def f():\n    from .test_a import x\n",
        "test_e.py": "from . import test_a\nfrom tests import test_b, support\n",
        "test_f.py": "from tests.testing import x\nfrom .support.tiny import X\n",
    }.items():
        (tmp_path / "tests" / name).write_text(body)
    assert cross_test_imports(tmp_path) == [
        "tests/test_b.py:1 imports tests.test_a",
        "tests/test_c.py:1 imports tests.test_a",
        "tests/test_d.py:2 imports tests.test_a",
        "tests/test_e.py:1 imports tests.test_a",
        "tests/test_e.py:2 imports tests.test_b",
    ]
