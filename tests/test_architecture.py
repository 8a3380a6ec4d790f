"""The shape of the code base, checked on the source (no imports run).

* Imports go one way: ``app.py`` -> ``patent_demo`` <- ``train/``. ``patent_demo/ui`` is the only code that
  imports gradio (tests and benchmarks may use gradio and gradio_client to drive it); nothing else in
  ``patent_demo`` imports ``patent_demo.ui``; ``app.py`` only calls into ``patent_demo.ui``. The core
  package never imports the training scripts, the benchmarks or the tests; the training scripts never
  import the UI.
* No import circle among the modules of ``patent_demo/``, ``train/`` and ``app.py``: every ``import`` and
  ``from`` statement counts, those inside functions included (a circle broken only by a late import is
  still two modules that cannot be read apart).
* No star imports anywhere.
* No module over ``MAX_LINES`` lines in ``patent_demo/`` (the UI included), ``train/`` or ``app.py``.
* ``train/`` holds at most ``MAX_TRAIN_MODULES`` modules in any folder (``__init__`` and ``__main__`` aside),
  and no module anywhere has a name that says nothing apart (``GENERIC_NAMES``: ``report.py``,
  ``evaluate.py``…): a reader finds a module by what it does.
* Every Python file is as ``ruff format`` writes it, with at most ``MAX_FMT_SKIPS`` lines kept by hand
  (``# fmt: skip``, for a table that must stay aligned).

Tests: patent_demo/, train/, app.py
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
ENTRY = "app.py"
FOLDERS = ("patent_demo", "train", "bench", "tests", "scripts")
GRAPH_FOLDERS = ("patent_demo", "train")  # with ENTRY: the modules whose imports must form no circle
UI = "patent_demo.ui"
GUI_LIBRARIES = {"gradio", "gradio_client"}
MAX_LINES = 600
# Modules over MAX_LINES when this check was written, with their line count then: each may only shrink,
# and leaves this list once under the limit (the test says so).
OVER_LIMIT: dict[str, int] = {}


def _python_files() -> list[Path]:
    """The project's Python files: the entry point and every module under the project's folders."""
    files = [ROOT / ENTRY]
    for folder in FOLDERS:
        files += sorted((ROOT / folder).rglob("*.py"))
    return [p for p in files if p.is_file()]


def _rel(path: Path) -> str:
    return path.relative_to(ROOT).as_posix()


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(path: Path) -> list[ast.Import | ast.ImportFrom]:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    return [n for n in ast.walk(tree) if isinstance(n, ast.Import | ast.ImportFrom)]


def _imported_names(path: Path) -> set[str]:
    """The dotted names ``path`` imports (function-level imports included), relative ones made absolute;
    ``from a import b`` gives ``a.b`` (a module ``a.b``, else the name ``b`` of module ``a``)."""
    package = _module_name(path) if path.name == "__init__.py" else _module_name(path).rpartition(".")[0]
    names = set()
    for node in _imports(path):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
            continue
        if node.level:
            base = package.split(".")[: len(package.split(".")) - (node.level - 1)]
            module = ".".join(base + ([node.module] if node.module else []))
        else:
            module = node.module or ""
        names.update(f"{module}.{alias.name}" for alias in node.names)
    return names


def _imported_roots(path: Path) -> set[str]:
    return {name.split(".")[0] for name in _imported_names(path)}


def _imports_under(path: Path, prefix: str) -> bool:
    return any(name == prefix or name.startswith(prefix + ".") for name in _imported_names(path))


def _offenders(files: list[Path], forbidden: set[str]) -> dict[str, list[str]]:
    return {_rel(p): sorted(bad) for p in files if (bad := _imported_roots(p) & forbidden)}


def _under(prefix: str) -> list[Path]:
    return [p for p in _python_files() if _rel(p).startswith(prefix)]


# -- the import graph ----------------------------------------------------------------------------------------
def import_graph() -> dict[str, set[str]]:
    """``{module: modules it imports}`` over ``app.py``, ``patent_demo/`` and ``train/``: each imported name is
    resolved to the longest module of the graph it names (``patent_demo.labels.store.Label`` ->
    ``patent_demo.labels.store``); names outside the graph (the standard library, numpy) are left out."""
    files = [ROOT / ENTRY] + [p for folder in GRAPH_FOLDERS for p in sorted((ROOT / folder).rglob("*.py"))]
    modules = {_module_name(p): p for p in files if p.is_file()}

    def resolve(name: str) -> str | None:
        while name and name not in modules:
            name = name.rpartition(".")[0]
        return name or None

    graph = {}
    for module, path in modules.items():
        targets = {resolve(name) for name in _imported_names(path)}
        graph[module] = {t for t in targets if t and t != module}
    return graph


def import_cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The circles of ``graph``: its strongly connected components of more than one module (Tarjan), each
    sorted, and within each one shortest circle through its first module, to name in a failure."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components: list[list[str]] = []

    def visit(v: str) -> None:  # recursion depth is bounded by the module count (a few hundred)
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                components.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return [_shortest_circle(graph, c) for c in sorted(components)]


def _shortest_circle(graph: dict[str, set[str]], component: list[str]) -> list[str]:
    """A shortest path from the component's first module back to itself (breadth first inside it)."""
    start, inside = component[0], set(component)
    paths = {start: [start]}
    frontier = [start]
    while frontier:
        nxt = []
        for v in frontier:
            for w in sorted(graph[v] & inside):
                if w == start:
                    return paths[v] + [start]
                if w not in paths:
                    paths[w] = paths[v] + [w]
                    nxt.append(w)
        frontier = nxt
    return component  # unreachable for a strongly connected component


def test_the_layout_is_where_these_checks_look():
    files = {_rel(p) for p in _python_files()}
    assert {ENTRY, "patent_demo/ui/__init__.py", "patent_demo/workbench.py", "train/hmcl/main.py"} <= files
    for package in ("data", "drawing", "index", "text", "labels", "metrics", "losses", "ui"):
        assert f"patent_demo/{package}/__init__.py" in files, package
    graph = import_graph()
    assert {"app", "patent_demo.ui.blocks", "patent_demo.workbench", "train.hmcl"} <= set(graph)
    assert "patent_demo.ui" in graph["app"] and "patent_demo.workbench" in graph["patent_demo.ui.handlers"]


def test_no_import_circle_anywhere():
    cycles = import_cycles(import_graph())
    assert cycles == [], "import circles:\n" + "\n".join(" -> ".join(c) for c in cycles)


def test_the_circle_finder_finds_circles_and_names_them():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a", "d"}, "d": set(), "e": {"f"}, "f": {"e"}, "g": {"g"} - {"g"}}
    assert import_cycles(graph) == [["a", "b", "c", "a"], ["e", "f", "e"]]
    assert import_cycles({"a": {"b"}, "b": set()}) == []


def test_function_level_and_relative_imports_count(tmp_path, monkeypatch):
    pkg = tmp_path / "patent_demo"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "a.py").write_text("def f():\n    from patent_demo import b\n")
    (pkg / "b.py").write_text("from .a import f\n")
    (tmp_path / ENTRY).write_text("import patent_demo.a\n")
    (tmp_path / "train").mkdir()
    monkeypatch.setattr(__import__(__name__, fromlist=["ROOT"]), "ROOT", tmp_path)
    assert import_cycles(import_graph()) == [["patent_demo.a", "patent_demo.b", "patent_demo.a"]]


def test_only_the_ui_package_imports_gradio():
    checked = [ROOT / ENTRY, *_under("patent_demo/"), *_under("train/")]
    assert len(checked) > 60
    outside = [p for p in checked if not _rel(p).startswith("patent_demo/ui/")]
    assert _offenders(outside, GUI_LIBRARIES) == {}
    assert any("gradio" in _imported_roots(p) for p in _under("patent_demo/ui/"))


def test_nothing_else_imports_the_ui_package_and_app_py_only_calls_into_it():
    others = [
        p for p in (*_under("patent_demo/"), *_under("train/")) if not _rel(p).startswith("patent_demo/ui/")
    ]
    assert [_rel(p) for p in others if _imports_under(p, UI)] == []
    project = {"patent_demo", "train", "bench", "tests", "scripts"}
    assert {n for n in _imported_names(ROOT / ENTRY) if n.split(".")[0] in project} <= {
        UI,
        f"{UI}.main",
        f"{UI}.build_demo",
        f"{UI}.launch_kwargs",
    }
    assert len((ROOT / ENTRY).read_text(encoding="utf-8").splitlines()) <= 20


def test_core_package_never_imports_training_benchmarks_or_tests():
    core = _under("patent_demo/")
    assert len(core) > 30
    assert _offenders(core, {"train", "bench", "tests", "app"}) == {}


def test_core_package_relative_imports_stay_inside_it():
    for path in _under("patent_demo/"):
        depth = len(path.relative_to(ROOT / "patent_demo").parts) - 1  # package levels above the module
        for node in _imports(path):
            if isinstance(node, ast.ImportFrom) and node.level > 0:
                assert node.level <= depth + 1, f"{_rel(path)} imports from above patent_demo"


def test_training_never_imports_the_ui():
    train = _under("train/")
    assert train
    assert _offenders(train, {*GUI_LIBRARIES, "app"}) == {}
    assert [_rel(p) for p in train if _imports_under(p, UI)] == []


def test_the_ui_never_imports_training():
    ui = [ROOT / ENTRY, *_under("patent_demo/ui/")]
    assert _offenders(ui, {"train", "bench", "tests"}) == {}


def test_no_star_imports():
    stars = [
        f"{_rel(p)}:{node.lineno}"
        for p in _python_files()
        for node in _imports(p)
        if isinstance(node, ast.ImportFrom) and any(alias.name == "*" for alias in node.names)
    ]
    assert stars == []


def _line_counts() -> dict[str, int]:
    scope = ("patent_demo/", "train/", ENTRY)
    return {
        _rel(p): len(p.read_text(encoding="utf-8").splitlines())
        for p in _python_files()
        if _rel(p).startswith(scope)
    }


MAX_TRAIN_MODULES = 6
GENERIC_NAMES = {"report", "evaluate", "utils", "util", "helpers", "misc"}


def test_train_folders_hold_few_modules():
    per_folder: dict[str, list[str]] = {}
    for p in (ROOT / "train").rglob("*.py"):
        if p.stem not in {"__init__", "__main__"} and "__pycache__" not in p.parts:
            per_folder.setdefault(_rel(p.parent), []).append(p.stem)
    assert "train/hmcl" in per_folder and "train" in per_folder
    assert {d: sorted(m) for d, m in per_folder.items() if len(m) > MAX_TRAIN_MODULES} == {}


def test_no_module_has_a_name_that_says_nothing_apart():
    generic = sorted(_rel(p) for p in _python_files() if p.stem in GENERIC_NAMES and "tests" not in p.parts)
    assert generic == []


def test_no_module_is_a_monolith():
    counts = _line_counts()
    assert ENTRY in counts and "train/hmcl/main.py" in counts and "patent_demo/ui/blocks.py" in counts
    too_long = {p: n for p, n in counts.items() if n > MAX_LINES and p not in OVER_LIMIT}
    assert too_long == {}


def test_modules_over_the_limit_only_shrink():
    """Every module listed in OVER_LIMIT (none today) may only shrink and leaves the list once under it."""
    counts = _line_counts()
    for path, limit in OVER_LIMIT.items():
        n = counts.get(path, 0)
        assert n <= limit, f"{path} grew to {n} lines (limit {MAX_LINES})"
        assert n > MAX_LINES, f"{path} has {n} lines now: remove it from OVER_LIMIT"


MAX_FMT_SKIPS = 20


def test_the_code_is_formatted_and_few_lines_are_kept_by_hand():
    import shutil
    import subprocess
    import sys

    ruff = shutil.which("ruff", path=str(Path(sys.executable).parent)) or shutil.which("ruff")
    assert ruff, "ruff is in requirements-test.txt"
    run = subprocess.run([ruff, "format", "--check", "."], cwd=ROOT, capture_output=True, text=True)
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-2000:]
    repo = [
        p
        for p in ROOT.rglob("*.py")
        if not {".venv", ".git", "node_modules"} & set(p.relative_to(ROOT).parts)
    ]
    kept = [
        f"{p.relative_to(ROOT)}:{i}"
        for p in repo
        for i, ln in enumerate(p.read_text().splitlines(), 1)
        if "# fmt: skip" in ln or "# fmt: off" in ln
    ]
    assert len(kept) <= MAX_FMT_SKIPS, kept
