"""Tests: tests/

Each test file maps to the module(s) it tests, so a reader finds the tests of a module (and the module of a
test) without searching. The rule, for ``tests/test_<name>.py``:

1. ``<name>`` is a module of the project, written as the tail of its path with ``_`` between the parts:
   ``test_bm25.py`` -> ``…/bm25.py``, ``test_loaders_uspto.py`` -> ``…/loaders/uspto.py``,
   ``test_train_hmcl.py`` -> ``train/hmcl.py``; a package counts by its folder (``test_labels.py`` ->
   ``patent_demo/labels/``). Modules are looked for in the top-level ``*.py`` files and under
   ``patent_demo/``, ``train/``, ``bench/``, ``scripts/`` and ``ui/``;
2. otherwise a line of the module docstring starts with ``Tests:`` and names, comma-separated, the files
   or folders it tests, each of which exists (``Tests: patent_demo/text/fusion.py``).
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
            out.append(f"tests/{test.name}: no module '{test.stem.removeprefix('test_')}' under the top level, "
                       f"{', '.join(d + '/' for d in SOURCE_DIRS)} and no 'Tests: path[, path]' docstring line")  # fmt: skip
    return out


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
