"""The real corpus served by default and the Space folder: ``patent_demo.data.real`` merges the real data
parts into one corpus built once (a stamp), ``app.py`` picks it when no ``--corpus`` is given (the generated
corpus when there is no real data), and ``scripts/build_space.py`` writes a Space folder that, copied where
no ``../shared`` lies beside it, answers a drawing and a text search from its bundled corpus and cache.

Tests: scripts/build_space.py, patent_demo/data/real.py, patent_demo/ui/args.py
"""

from __future__ import annotations

import csv
import importlib.util
from pathlib import Path

import pytest

from patent_demo.data.corpus import Corpus
from patent_demo.data.real import PARTS, ensure_real_corpus
from patent_demo.ui import args as app_args
from tests.conftest import REPO_ROOT, require_shared

pytestmark = pytest.mark.slow


def load_build_space():
    spec = importlib.util.spec_from_file_location("build_space", REPO_ROOT / "scripts" / "build_space.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_one_corpus_holds_drawings_and_texts_of_every_part_and_is_built_once(tmp_path):
    data = require_shared()
    corpus = ensure_real_corpus(data, tmp_path / "real", limit=3, progress=False)
    assert corpus.meta["source"] == "real" and corpus.meta["generated"] is False
    assert corpus.meta["parts"] == {p.name: 3 for p in PARTS}
    assert corpus.source_label.startswith("real USPTO patents (public domain): 3 Red Book design patents")
    with_figures = [p for p in corpus.patents if p.figures]
    assert {p.kind for p in with_figures} == {"design"} and len(with_figures) == 6  # Red Book + USPC 2007
    texts = [p for p in corpus.patents if not p.figures]
    assert len(texts) == 6 and all(p.kind == "utility" and p.title for p in texts)  # grant XML + cs3245
    for _, f in corpus.figures():  # read in place from the data folder; thumbnails inside the corpus
        assert corpus.image_path(f).is_file() and corpus.image_path(f).is_relative_to(data.resolve())
        assert (corpus.root / f.thumb).is_file() and f.thumb.startswith("parts/")
    assert sorted(i for ids in corpus.splits.values() for i in ids) == sorted(p.id for p in corpus.patents)
    manifest = tmp_path / "real" / "manifest.jsonl"
    before = manifest.stat().st_mtime_ns
    again = ensure_real_corpus(data, tmp_path / "real", limit=3, progress=False)
    assert manifest.stat().st_mtime_ns == before and [p.id for p in again] == [p.id for p in corpus]
    bigger = ensure_real_corpus(data, tmp_path / "real", limit=4, progress=False)  # other settings: rebuilt
    assert len(bigger) == 16


def _small_uspc(tmp_path: Path, n: int = 3) -> Path:
    """A data folder with the first ``n`` USPC 2007 drawings only (one part; the others are absent)."""
    src = require_shared("design_patents_2007_uspc_macaulay")
    folder = tmp_path / "data" / "design_patents_2007_uspc_macaulay"
    (folder / "images").mkdir(parents=True)
    with open(src / "metadata_2007.txt", encoding="utf-8") as fh:
        rows = [r for r in csv.reader(fh, delimiter="\t") if r][:n]
    (folder / "metadata_2007.txt").write_text("".join("\t".join(r) + "\n" for r in rows), encoding="utf-8")
    for r in rows:
        (folder / "images" / f"{r[0]}.png").write_bytes((src / "images" / f"{r[0]}.png").read_bytes())
    return tmp_path / "data"


def test_the_app_serves_the_real_corpus_by_default_and_the_generated_one_without_real_data(
    tmp_path, monkeypatch
):
    monkeypatch.setattr(app_args, "BUNDLED", tmp_path / "no-bundle")
    data = _small_uspc(tmp_path)
    args = app_args.parse_args(["--real-data", str(data), "--cache-dir", str(tmp_path / "cache")])
    root, note = app_args.resolve_corpus(args)
    assert root == tmp_path / "cache" / "real"
    assert note == f"serving {root}: real USPTO patents (public domain): 3 USPC 2007 design drawings"
    # the committed 1,000-drawing split does not fit three drawings: they are split by family
    assert Corpus.load(root).meta["splits"]["parts"]["uspc"]["by"] == "family"
    wb = app_args.make_workbench(args)
    assert "real USPTO patents (public domain)" in wb.corpus_description() and len(wb.corpus) == 3

    missing = app_args.parse_args(
        ["--real-data", str(tmp_path / "nowhere"), "--cache-dir", str(tmp_path / "c2")]
    )
    root, note = app_args.resolve_corpus(missing)
    assert root is None and note.startswith(f"no real data in {tmp_path / 'nowhere'}: serving the generated")
    generated = app_args.parse_args(["--corpus", "generated", "--real-data", str(data)])
    assert app_args.resolve_corpus(generated)[0] is None

    bundle = tmp_path / "space" / "corpus"  # a Space folder's own corpus comes first
    ensure_real_corpus(data, bundle, copy_images=True, progress=False)
    monkeypatch.setattr(app_args, "BUNDLED", bundle)
    assert app_args.resolve_corpus(args) == (bundle, f"serving the bundled corpus {bundle}")


def test_space_folder_copied_without_shared_answers_a_drawing_and_a_text_search(tmp_path):
    data = require_shared()
    space = load_build_space()
    out = tmp_path / "out"
    info = space.build(out, data, subset=3, progress=False)
    assert 0 < info["bytes"] <= space.LIMIT_BYTES and info["patents"] == 12
    readme = (out / "README.md").read_text(encoding="utf-8")
    front = readme.split("---\n")[1]
    assert "sdk: gradio\n" in front and "app_file: app.py\n" in front
    assert f"sdk_version: {space.gradio_pin()}\n" in front
    assert space.gradio_pin() in (REPO_ROOT / "requirements.txt").read_text() and "3 USPC 2007" in readme
    assert (out / "app.py").is_file() and (out / "patent_demo" / "workbench.py").is_file()
    assert (out / "requirements.txt").read_text() == (REPO_ROOT / "requirements.txt").read_text()
    assert sorted(p.name for p in (out / "checkpoints").iterdir()) == sorted(
        p.name for p in (REPO_ROOT / "checkpoints").iterdir()
    )
    corpus = Corpus.load(out / "corpus")  # self-contained: images copied in, nothing names the data folder
    assert corpus.location == "" and all(corpus.image_path(f).is_file() for _, f in corpus.figures())
    assert space._files_naming(out, data.resolve()) == []

    r = space.check(out)  # a copy of out, with no ../shared beside it, in its own process
    assert r["drawing"]["hits"][0] == r["drawing"]["query"]  # a corpus drawing finds its own patent first
    assert r["drawing"]["status"].startswith("5 results with ")
    assert r["text"]["bm25"][0] == r["text"]["query"] and r["text"]["query"] in r["text"]["dssdnet"]
    assert r["text"]["model"] == "dssdnet-minilm-ipc"
    assert r["built_at_run_time"] == []  # every index came from the bundled cache
    assert "serving the bundled corpus" in r["log_tail"]
