"""``patent-demo corpus build`` on every shared real-data source, read in place and never written to.

Tests: patent_demo/data/build.py, patent_demo/cli/corpus_cmd.py
"""

from __future__ import annotations

import builtins
import io
import json
import os
import shutil
import tarfile
import zipfile
from collections import Counter
from pathlib import Path

import pytest
from PIL import Image

from patent_demo.cli import main
from patent_demo.data import build as build_mod
from patent_demo.data.build import BuildError, build_corpus, corpus_summary
from patent_demo.data.corpus import Corpus, CorpusError
from patent_demo.data.loaders.uspto import load_redbook
from tests.conftest import require_shared


def _snapshot(root: Path) -> dict[str, tuple[int, int]]:
    return {str(p.relative_to(root)): (p.stat().st_size, p.stat().st_mtime_ns) for p in root.rglob("*")}


@pytest.fixture
def read_only(monkeypatch):
    """Make every write under the given folders fail (the tests run as root, where chmod does not bind),
    and check afterwards that nothing there changed."""
    guarded: list[Path] = []
    before: dict[Path, dict] = {}

    def inside(path) -> bool:
        try:
            p = Path(os.fsdecode(path)).resolve()
        except (TypeError, ValueError):
            return False
        return any(p == g or g in p.parents for g in guarded)

    real_open = builtins.open

    def guarded_open(file, mode="r", *args, **kwargs):
        if isinstance(file, (str, bytes, os.PathLike)) and any(c in mode for c in "wax+") and inside(file):
            raise PermissionError(f"read-only source: {file}")
        return real_open(file, mode, *args, **kwargs)

    monkeypatch.setattr(builtins, "open", guarded_open)
    for name in ("replace", "rename", "mkdir", "makedirs", "unlink", "remove", "chmod", "rmdir"):
        real = getattr(os, name)

        def make(real=real, name=name):
            def f(path, *args, **kwargs):
                if inside(path) or (name in ("replace", "rename") and args and inside(args[0])):
                    raise PermissionError(f"read-only source: {path} ({name})")
                return real(path, *args, **kwargs)

            return f

        monkeypatch.setattr(os, name, make())

    def guard(path: Path) -> Path:
        path = Path(path).resolve()
        guarded.append(path)
        before[path] = _snapshot(path)
        return path

    yield guard
    for path, snap in before.items():
        assert _snapshot(path) == snap, f"the build changed {path}"


def _normal_mode(path: Path) -> None:
    umask = os.umask(0)
    os.umask(umask)
    assert path.stat().st_mode & 0o777 == 0o666 & ~umask, path


def _check_corpus(out: Path, image_root: Path | None = None) -> Corpus:
    corpus = Corpus.load(out)  # validates: every image path resolves under the recorded root
    if image_root is not None:
        assert corpus.image_root.resolve() == image_root.resolve()
    for name in ("manifest.jsonl", "splits.json", "corpus.json"):
        _normal_mode(out / name)
    for _, f in corpus.figures():
        assert f.thumb.startswith("thumbs/") and f.thumb.endswith(".png")
        with Image.open(corpus.thumb_path(f)) as im:
            assert im.format == "PNG" and max(im.size) == 384 and min(im.size) > 0
    assert sorted(sum(corpus.splits.values(), [])) == sorted(p.id for p in corpus)
    return corpus


# -- Red Book ---------------------------------------------------------------------------------------------------
def test_redbook_folders_read_in_place(tmp_path, read_only):
    src = read_only(require_shared("impact_design_patent_samples") / "patents")
    out = tmp_path / "rb"
    summary = build_corpus("redbook", src, out, progress=False)
    corpus = _check_corpus(out, src)
    # SOURCE.md: 20 patents; every drawing page (not the -D00000 gazette figure) is a figure
    assert summary.patents == len(corpus) == 20
    pages = [p for p in src.rglob("*.TIF") if not p.name.endswith("-D00000.TIF")]
    assert summary.figures == summary.thumbnails == len(pages)
    assert summary.codes["locarno"]["patents"] == 20 and summary.skipped == []
    assert summary.splits == {"train": 14, "val": 3, "test": 3}
    meta = json.loads((out / "corpus.json").read_text())
    assert meta["source_label"] == "USPTO Red Book" and meta["splits"]["by"] == "family"
    assert corpus["USD0907292"].filing_date == "2019-02-20"
    assert not any(p.suffix == ".png" for p in src.rglob("*"))


def _weekly_tar(src: Path, patents: list[str], tmp: Path) -> Path:
    """A weekly grant archive as published: ``I<date>.tar`` holding ``I<date>/DESIGN/<doc>.ZIP``, each ZIP
    holding ``<doc>/<doc>.XML`` and its TIFF pages."""
    date = patents[0].split("-")[1]
    tar_path = tmp / f"I{date}.tar"
    with tarfile.open(tar_path, "w") as tar:
        for doc in patents:
            buf = io.BytesIO()
            with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
                for f in sorted((src / doc).iterdir()):
                    zf.write(f, f"{doc}/{f.name}")
            info = tarfile.TarInfo(f"I{date}/DESIGN/{doc}.ZIP")
            info.size = len(buf.getvalue())
            tar.addfile(info, io.BytesIO(buf.getvalue()))
    return tar_path


def test_redbook_weekly_archive(tmp_path, read_only):
    shared = require_shared("impact_design_patent_samples") / "patents"
    docs = sorted(p.name for p in shared.iterdir() if p.name.endswith("-20210105"))
    assert len(docs) == 2
    arc_dir = tmp_path / "weekly"
    arc_dir.mkdir()
    _weekly_tar(shared, docs, arc_dir)
    read_only(arc_dir)
    out = tmp_path / "out"
    summary = build_corpus("redbook", arc_dir, out, progress=False)
    corpus = _check_corpus(out, out / "originals")
    assert json.loads((out / "corpus.json").read_text())["image_root"] == "originals"
    assert [p.id for p in corpus] == ["USD0907292", "USD0907293"]
    one = build_corpus("redbook", shared / docs[0], tmp_path / "one", progress=False)
    assert one.figures == len(corpus["USD0907292"].figures) == 8
    assert [f.label for f in corpus["USD0907292"].figures] == [
        f.label for f in Corpus.load(tmp_path / "one")["USD0907292"].figures
    ]
    assert summary.layout == "weekly archive" and summary.skipped == []


def test_redbook_weekly_xml_with_image_folder(tmp_path, read_only):
    shared = read_only(require_shared("impact_design_patent_samples") / "patents")
    docs = sorted(shared.iterdir())[:4]
    weekly = tmp_path / "ipg" / "ipg210105.xml"
    weekly.parent.mkdir()
    weekly.write_text(
        "".join((d / f"{d.name}.XML").read_text(encoding="utf-8") for d in docs), encoding="utf-8"
    )
    out = tmp_path / "out"
    summary = build_corpus("redbook", weekly.parent, out, images=shared, progress=False)
    corpus = _check_corpus(out, shared)
    ref = load_redbook(shared)  # the same grants read from their folders
    assert summary.layout == "weekly grant XML" and summary.patents == 4
    for p in corpus:
        assert [f.path for f in p.figures] == [f.path for f in ref[p.id].figures]
        assert p.title == ref[p.id].title and p.codes == ref[p.id].codes


# -- other sources ------------------------------------------------------------------------------------------------
def test_images_with_uspc_table(tmp_path, read_only):
    src = read_only(require_shared("design_patents_2007_uspc_macaulay"))
    rows = (src / "metadata_2007.txt").read_text(encoding="utf-8").splitlines()[:30]
    table = tmp_path / "meta.tsv"
    extra = ["USD9999999\tD2-969\tA patent without a drawing", "\tD2-969\tno id"]
    table.write_text("\n".join(rows + extra) + "\n", encoding="utf-8")
    summary = build_corpus("images", src, tmp_path / "out", metadata=table, progress=False)
    corpus = _check_corpus(tmp_path / "out", src)
    assert summary.patents == 30 and summary.codes == {
        "uspc": {"patents": 30, "codes": len({r.split("\t")[1] for r in rows})}
    }
    first = rows[0].split("\t")
    p = corpus[first[0]]
    assert p.title == first[2] and p.codes["uspc"] == [first[1].replace("-", "/")]
    assert sorted(r for _, r in summary.skipped) == ["no drawing for USD9999999", "row without an id"]


def test_deeppatent2_file_names(tmp_path, read_only):
    src = read_only(require_shared("deeppatent2_techdrawfinder_samples") / "images")
    summary = build_corpus("deeppatent2", src, tmp_path / "out", progress=False)
    corpus = _check_corpus(tmp_path / "out", src)
    # SOURCE.md: 13 segmented figures of 12 design patents; the grant date is in the file name
    assert (summary.patents, summary.figures) == (12, 13)
    assert corpus["USD0739807"].date == "2015-09-29" and len(corpus["USD0739807"].figures) == 2


def test_text_with_citation_and_family_pairs(tmp_path, read_only):
    src = read_only(require_shared("cs3245_patsnap_corpus_qrels"))
    summary = build_corpus("text", src, tmp_path / "out", progress=False)
    corpus = Corpus.load(tmp_path / "out")
    assert summary.patents == 2244 and summary.figures == 0
    assert summary.qrels_queries == len(corpus.qrels) == 236
    where = {pid: s for s, ids in corpus.splits.items() for pid in ids}
    pairs = (src / "in_corpus_family_pairs.tsv").read_text().splitlines()[1:]
    for a, b in (line.split("\t")[:2] for line in pairs):
        assert where[a] == where[b], (a, b)  # a family lies whole in one split
    assert summary.families < summary.patents


# -- build behaviour -------------------------------------------------------------------------------------------------
def test_resume_after_a_kill_gives_the_same_corpus(tmp_path, monkeypatch):
    src = require_shared("deeppatent2_techdrawfinder_samples") / "images"
    clean = tmp_path / "clean"
    build_corpus("deeppatent2", src, clean, progress=False)
    real = build_mod._process
    calls = {"n": 0}

    def dies(args):
        calls["n"] += 1
        if calls["n"] == 5:
            raise KeyboardInterrupt
        return real(args)

    monkeypatch.setattr(build_mod, "_process", dies)
    out = tmp_path / "resumed"
    with pytest.raises(KeyboardInterrupt):
        build_corpus("deeppatent2", src, out, progress=False)
    assert not (out / "manifest.jsonl").exists()
    assert len((out / ".build" / "items.jsonl").read_text().splitlines()) == 4
    monkeypatch.setattr(build_mod, "_process", real)
    summary = build_corpus("deeppatent2", src, out, progress=False)
    assert summary.resumed_items == 4
    assert (out / "manifest.jsonl").read_text() == (clean / "manifest.jsonl").read_text()
    assert (out / "splits.json").read_text() == (clean / "splits.json").read_text()
    with pytest.raises(BuildError, match="other settings"):
        build_corpus("deeppatent2", src, out, progress=False, thumb_size=128)


def test_out_inside_the_source_is_refused(tmp_path):
    src = tmp_path / "src"
    shutil.copytree(require_shared("deeppatent2_techdrawfinder_samples") / "images", src)
    with pytest.raises(BuildError, match="never writes into its source"):
        build_corpus("deeppatent2", src, src / "corpus", progress=False)


def test_unreadable_drawing_is_skipped_with_its_reason(tmp_path):
    src = tmp_path / "src"
    shutil.copytree(require_shared("deeppatent2_techdrawfinder_samples") / "images", src)
    (src / "USD0544652-20070612-D00001_1.png").write_bytes(b"not a png")
    summary = build_corpus("deeppatent2", src, tmp_path / "out", progress=False)
    assert summary.patents == 11
    reasons = [r for key, r in summary.skipped if key == "USD0544652"]
    assert reasons[0].startswith("figure USD0544652-20070612-D00001_1.png unreadable (")
    assert reasons[1:] == ["no readable figure"]


# -- command line ------------------------------------------------------------------------------------------------------
def test_cli_build_and_info(tmp_path, capsys):
    src = require_shared("deeppatent2_techdrawfinder_samples") / "images"
    out = tmp_path / "dp2"
    assert main(["corpus", "build", "--source", "deeppatent2", str(src), "--out", str(out), "--quiet"]) == 0
    built = capsys.readouterr().out
    assert "patents   12   figures 13   thumbnails 13" in built and "skipped   0" in built
    assert main(["corpus", "info", str(out)]) == 0
    info = capsys.readouterr().out
    assert "DeepPatent2" in info and "splits    train 8, val 2, test 2" in info
    assert main(["corpus", "info", str(out), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["figures"] == 13
    assert corpus_summary(out).patents == 12


def test_cli_errors_are_one_line(tmp_path, capsys):
    raw = require_shared("impact_design_patent_samples") / "patents"
    assert main(["corpus", "info", str(raw)]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "patent-demo corpus build --source redbook" in err
    assert (
        main(["corpus", "build", "--source", "images", str(tmp_path / "nope"), "--out", str(tmp_path / "o")])
        == 2
    )
    assert "does not exist" in capsys.readouterr().err
    with pytest.raises(CorpusError, match="not a built corpus"):
        Corpus.load(raw)


def test_redbook_weekly_grant_xml_without_images(tmp_path, read_only):
    src = read_only(require_shared("uspto_grant_xml_samples") / "xml")
    summary = build_corpus("redbook", src, tmp_path / "out", progress=False)
    corpus = Corpus.load(tmp_path / "out")
    # the utility grants are kept as text records; design grants without their pages are reported
    assert summary.patents == len(corpus) and all(p.kind == "utility" for p in corpus)
    reasons = Counter(r for _, r in summary.skipped)
    text = "".join(f.read_text(encoding="utf-8", errors="replace") for f in sorted(src.glob("*.xml")))
    assert reasons["design grant without drawing pages"] == text.count('appl-type="design"')
    assert summary.patents == text.count('appl-type="utility"')
    assert set(reasons) <= {
        "design grant without drawing pages",
        "<sequence-cwu> document",
        "appl-type sir",
        "appl-type plant",
        "appl-type reissue",
    }
    assert all(p.filing_date and p.filing_date < p.date and p.kind_code.startswith("B") for p in corpus)
