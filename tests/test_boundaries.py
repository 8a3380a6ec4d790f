"""Tests: patent_demo/workbench.py, patent_demo/data/corpus.py

Nobody reaches into another object: no module outside ``patent_demo/workbench.py`` touches the Workbench's
private parts (``wb._…``, ``workbench._…``, ``self.wb._…``), and no object's ``__dict__`` is written from
anywhere (a cache lives with its owner: ``Corpus.derived`` for tables of a corpus alone,
``Workbench.derived`` for values that need its models). Checked on the source tree by its syntax, and the
checker itself on a made-up tree.
"""

from __future__ import annotations

import ast
from pathlib import Path

from patent_demo.data.corpus import Corpus, Patent
from tests.support.tiny import make_workbench

ROOT = Path(__file__).resolve().parent.parent
WORKBENCH_NAMES = {"wb", "workbench"}


def _is_workbench(node: ast.expr) -> bool:
    if isinstance(node, ast.Name):
        return node.id in WORKBENCH_NAMES
    return isinstance(node, ast.Attribute) and node.attr in WORKBENCH_NAMES


def reach_ins(source: str) -> list[str]:
    """Each place of ``source`` that reads a Workbench's private attribute or another object's
    ``__dict__``, or writes any ``__dict__`` (``x.__dict__[k] = …``, ``.setdefault``, ``.update``)."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Attribute):
            private = node.attr.startswith("_") and not node.attr.startswith("__")
            if private and _is_workbench(node.value):
                found.append(f"line {node.lineno}: {ast.unparse(node)}")
            if node.attr == "__dict__" and not (isinstance(node.value, ast.Name) and node.value.id == "self"):
                found.append(f"line {node.lineno}: {ast.unparse(node)}")
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            target = node.func.value
            if node.func.attr in {"setdefault", "update"} and getattr(target, "attr", "") == "__dict__":
                found.append(f"line {node.lineno}: {ast.unparse(node)}")
        if isinstance(node, ast.Assign | ast.AugAssign):
            for t in node.targets if isinstance(node, ast.Assign) else [node.target]:
                if isinstance(t, ast.Subscript) and getattr(t.value, "attr", "") == "__dict__":
                    found.append(f"line {node.lineno}: {ast.unparse(t)}")
    return sorted(set(found))


def _sources() -> list[Path]:
    paths = list(ROOT.glob("*.py"))
    for d in ("patent_demo", "train", "bench", "scripts"):
        paths += [p for p in (ROOT / d).rglob("*.py") if "__pycache__" not in p.parts]
    return [p for p in paths if p != ROOT / "patent_demo" / "workbench.py"]


def test_no_module_reaches_into_the_workbench_or_writes_a_dict():
    bad = {
        str(p.relative_to(ROOT)): hits
        for p in _sources()
        if (hits := reach_ins(p.read_text(encoding="utf-8")))
    }
    assert bad == {}


def test_the_checker_on_made_up_code():
    code = "\n".join(
        [
            "a = wb._hit(1)",  # 1: a private method of the Workbench
            "with self.wb._lock: pass",  # 2: a private lock, through a handler
            "corpus.__dict__['_titles'] = {}",  # 3: a cache hung on another object
            "wb.__dict__.setdefault('x', {})",  # 4: the same, by setdefault
            "d = dict(self.__dict__)",  # an object reading its own fields: allowed
            "h = wb.hit(1)",  # public: allowed
            "wb.__class__",  # a dunder: allowed
        ]
    )
    assert [f.split(":")[0] for f in reach_ins(code)] == [
        "line 1",
        "line 2",
        "line 3",
        "line 3",
        "line 4",
        "line 4",
    ]


def test_corpus_derived_builds_once_per_corpus():
    calls = []
    corpus = Corpus(Path("."), [Patent("US1", "a chair")])
    build = lambda: calls.append(1) or {"US1": ["US1"]}  # noqa: E731
    assert corpus.derived("table", build) is corpus.derived("table", build)
    assert calls == [1]
    other = Corpus(Path("."), [Patent("US2", "a table")])
    other.derived("table", build)
    assert calls == [1, 1]  # another corpus has its own


def test_workbench_derived_builds_once(tmp_path):
    wb, _ = make_workbench(tmp_path)
    calls = []
    first = wb.derived("threshold", lambda: calls.append(1) or object())
    assert wb.derived("threshold", lambda: calls.append(1) or object()) is first and calls == [1]
