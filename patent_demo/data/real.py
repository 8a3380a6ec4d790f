"""The real corpus the app serves by default: public-domain USPTO data (US government works) from the data
folder beside the repository (``../shared/data``), drawings and texts in one corpus.

A corpus holds patents with figures and patents with text only side by side (``Patent.figures`` may be
empty): the drawing index covers the figures, BM25 and the dense index every patent's text. So one corpus
holds all of it, each part built by ``patent_demo.data.build.build_corpus`` under ``OUT/parts/<part>/``
(resumable) and merged into ``OUT``:

=========  ==========================================  ====================================================
part       source folder (under the data folder)       what it adds
=========  ==========================================  ====================================================
redbook    ``impact_design_patent_samples/patents``    20 Red Book design patents, their 106 TIFF pages,
                                                       Locarno + USPC, figure descriptions
uspc       ``design_patents_2007_uspc_macaulay``       1,000 design drawings (2007) with their USPC class;
                                                       the committed split ``splits/uspc2007.json``
grants     ``uspto_grant_xml_samples/xml``             199 utility grants: abstract, claims, IPC (its design
                                                       grants come without pages and are left out)
cs3245     ``cs3245_patsnap_corpus_qrels``             2,244 patent texts with IPC, citation qrels
=========  ==========================================  ====================================================

Figure paths are relative to one image root: the data folder itself (read in place), or with
``copy_images`` ``OUT/images`` (the drawings copied: a self-contained corpus, what a Space ships).
Thumbnails stay under ``parts/<part>/thumbs``. Splits and qrels are the union of the parts' (a part's split
from its committed file when that lists exactly the part's patents, else drawn by family); a patent id met
twice is kept from the first part.
``OUT/titles.tsv`` holds the IPC titles of the data folder's IPC scheme (``titles.corpus_titles``).
``OUT/real.json`` stamps a finished build with what it was built from (the source files' count, bytes and
latest change, the options): a later call with the same stamp loads the corpus as it is.
"""

from __future__ import annotations

import json
import os
import shutil
import time
from dataclasses import dataclass
from functools import partial
from pathlib import Path

from patent_demo.atomic import atomic_text
from patent_demo.data.build import BuildError, build_corpus
from patent_demo.data.corpus import MANIFEST, Corpus, Patent
from patent_demo.titles import CORPUS_TITLES, write_titles

STAMP = "real.json"
FORMAT = 3  # 2: inventors, applicants, assignees on the records; titles.tsv; 3: a part's month of grant
IPC_TITLES = tuple(
    f"ipc_scheme_2006_wzyjerry/ipc_{level}_titles.tsv" for level in ("section", "class", "subclass")
)
REPO_SPLITS = Path(__file__).resolve().parents[2] / "splits"


@dataclass(frozen=True)
class Part:
    name: str
    kind: str  # the source kind of ``build_corpus``
    folder: str  # under the data folder
    label: str  # what its patents are, for people ("{n}" is their count)
    splits: str = ""  # a committed split file under splits/ ("" : drawn by family)
    # the month its patents were granted, when the source says so for the whole collection and its records
    # carry no date (kept as ``extra["issued_month"]``: shown on the record, not a date the filters use)
    issued: str = ""


PARTS = (
    Part("redbook", "redbook", "impact_design_patent_samples/patents", "{n} Red Book design patents"),
    Part(
        "uspc",
        "images",
        "design_patents_2007_uspc_macaulay",
        "{n} USPC 2007 design drawings",
        "uspc2007.json",
        "2007-01",  # its SOURCE.md: USD0534331 … USD0535366, granted in January 2007
    ),
    Part("grants", "redbook", "uspto_grant_xml_samples/xml", "{n} grant-XML utility patents"),
    Part("cs3245", "text", "cs3245_patsnap_corpus_qrels", "{n} cs3245 patent texts", "cs3245_text.json"),
)


def committed_splits(
    kind: str, src: str | os.PathLike, splits_dir: str | os.PathLike = REPO_SPLITS
) -> Path | None:
    """The committed split file of a source the real corpus knows (``src`` ends with a part's folder and is
    built as that part's kind), or None: ``patent-demo corpus build`` uses it when no ``--splits`` is given,
    so a corpus built by hand scores the queries every other tool scores."""
    part = known_part(kind, src)
    if part is None or not part.splits:
        return None
    found = Path(splits_dir) / part.splits
    return found if found.is_file() else None


def known_part(kind: str, src: str | os.PathLike) -> Part | None:
    """The part of the real corpus a source is (``src`` ends with the part's folder and is built as its
    kind), or None."""
    tail = Path(src).resolve().parts
    for part in PARTS:
        folder = Path(part.folder).parts
        if part.kind == kind and tail[-len(folder) :] == folder:
            return part
    return None


def mark_issued(patents: list[Patent], part: Part | None) -> int:
    """Give each undated patent of ``part`` its month of grant (``Part.issued``) as ``extra["issued_month"]``,
    what the record shows; returns how many were marked (0 for a part without one)."""
    if part is None or not part.issued:
        return 0
    undated = [p for p in patents if not p.date]
    for p in undated:
        p.extra["issued_month"] = part.issued
    return len(undated)


def available_parts(data: str | os.PathLike) -> list[Part]:
    """The parts whose source folder is in ``data`` (none: no real data here)."""
    return [p for p in PARTS if (Path(data) / p.folder).is_dir()]


def _signature(folder: Path) -> dict:
    """Count, bytes and latest change of the files under ``folder`` (or of one file): a changed source
    rebuilds its corpus."""
    n = size = latest = 0
    files = [folder] if folder.is_file() else [Path(b, f) for b, _, names in os.walk(folder) for f in names]
    for path in files:
        st = path.stat()
        n, size, latest = n + 1, size + st.st_size, max(latest, st.st_mtime_ns)
    return {"files": n, "bytes": size, "latest": latest}


def _stamp(data: Path, parts: list[Part], limit: int | None, copy_images: bool, splits_dir: Path) -> dict:
    return {
        "format": FORMAT,
        "data": str(data),
        "limit": limit,
        "copy_images": copy_images,
        "parts": {p.name: _signature(data / p.folder) for p in parts},
        "splits": {
            p.name: _signature(splits_dir / p.splits)
            for p in parts
            if p.splits and (splits_dir / p.splits).is_file()
        },
    }


def ensure_real_corpus(
    data: str | os.PathLike,
    out: str | os.PathLike,
    *,
    limit: int | None = None,
    copy_images: bool = False,
    progress: bool = True,
    workers: int = 1,
    splits_dir: str | os.PathLike = REPO_SPLITS,
) -> Corpus:
    """The real corpus in ``out``, built from ``data`` unless a build with the same stamp is there (see the
    module docstring). ``limit`` keeps the first N patents of each part (a small real subset).
    Raises ``ValueError`` (``BuildError``, ``SourceError``, ``CorpusError``) when no part can be built."""
    data, out, splits_dir = Path(data).resolve(), Path(out), Path(splits_dir)
    parts = available_parts(data)
    if not parts:
        raise ValueError(f"{data} holds none of the real data folders ({', '.join(p.folder for p in PARTS)})")
    stamp = _stamp(data, parts, limit, copy_images, splits_dir)
    if (out / STAMP).is_file() and (out / MANIFEST).is_file():
        if json.loads((out / STAMP).read_text(encoding="utf-8")) == stamp:
            return Corpus.load(out)
        shutil.rmtree(out)  # built from other data or settings: start over (an unstamped folder resumes)
    built = []
    for part in parts:
        where, splits = out / "parts" / part.name, splits_dir / part.splits if part.splits else None
        build = partial(
            build_corpus,
            part.kind,
            data / part.folder,
            where,
            progress=progress,
            workers=workers,
            limit=limit,
        )
        try:
            build(splits_file=splits if splits is not None and splits.is_file() else None)
        except BuildError as err:
            if "does not match the corpus" not in str(err):
                raise
            build()  # a subset, or other data than the split file's: split by family (the items are kept)
        built.append((part, Corpus.load(where, validate=False)))
    corpus = _merge(built, data, out, copy_images)
    corpus.save(out)
    write_titles([data / t for t in IPC_TITLES], out / CORPUS_TITLES)  # the IPC titles the records show
    atomic_text(out / STAMP, json.dumps(stamp, indent=1, sort_keys=True) + "\n")
    return Corpus.load(out)


def _merge(built: list[tuple[Part, Corpus]], data: Path, out: Path, copy_images: bool) -> Corpus:
    """One corpus of the parts' patents: figure paths relative to the data folder (or ``out/images`` with
    ``copy_images``), thumbnails under ``parts/<part>/``, splits and qrels joined."""
    patents: list[Patent] = []
    seen: set[str] = set()
    splits: dict[str, list[str]] = {}
    qrels: dict[str, dict[str, int]] = {}
    counts: dict[str, int] = {}
    for part, sub in built:
        under = sub.image_root.resolve().relative_to(data)
        kept = [p for p in sub.patents if p.id not in seen]
        mark_issued(kept, part)
        for p in kept:
            seen.add(p.id)
            for f in p.figures:
                rel = (under / f.path).as_posix()
                if copy_images:
                    target = out / "images" / rel
                    if not target.is_file():
                        target.parent.mkdir(parents=True, exist_ok=True)
                        shutil.copyfile(sub.image_path(f), target)
                f.path = rel
                f.thumb = f"parts/{part.name}/{f.thumb}" if f.thumb else ""
        ids = {p.id for p in kept}
        for name, members in sub.splits.items():
            splits.setdefault(name, []).extend(i for i in members if i in ids)
        for q, docs in sub.qrels.items():
            if q in ids:
                qrels.setdefault(q, {}).update(docs)
        patents += kept
        counts[part.name] = len(kept)
    labels = [part.label.format(n=f"{counts[part.name]:,}") for part, _ in built if counts[part.name]]
    meta = {
        "format": FORMAT,
        "source": "real",
        "source_label": "real USPTO patents (public domain): " + ", ".join(labels),
        "layout": "parts: " + ", ".join(part.name for part, _ in built),
        "image_root": "images" if copy_images else str(data),
        "generated": False,
        "parts": counts,
        "splits": {"by": "part", "parts": {part.name: sub.meta.get("splits") for part, sub in built}},
        "built": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
    if not copy_images:
        meta["source_path"] = str(data)
    return Corpus(out, patents, {k: sorted(v) for k, v in splits.items()}, qrels, out.name, meta)


__all__ = ["PARTS", "Part", "available_parts", "ensure_real_corpus"]
