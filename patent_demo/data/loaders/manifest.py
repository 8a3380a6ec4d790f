"""A user's own drawing collection described by a manifest: CSV or JSONL, one row per figure.

Required columns: ``patent_id, image, locarno, title, view, text``; optional: ``ipc``, ``date``,
``label``, ``kind``. Rows that share a ``patent_id`` form one patent (its figures in row order;
patent-level values come from the first row that has them). ``image`` paths that are relative
resolve against the manifest's folder, which is the corpus root. Several codes in one cell are
separated by ``;`` or ``|``.

Example (CSV)::

    patent_id,image,locarno,title,view,text
    D100,chairs/d100_1.png,06-01,Chair,front,A chair with a curved back
    D100,chairs/d100_2.png,06-01,Chair,top,
"""

from __future__ import annotations

import csv
import os
import re
from pathlib import Path

from patent_demo import taxonomy
from patent_demo.data.corpus import Corpus, CorpusError, Figure, Patent, iter_jsonl
from patent_demo.data.loaders.load_report import LoadReport

REQUIRED = ("patent_id", "image", "locarno", "title", "view", "text")
OPTIONAL = ("ipc", "date", "label", "kind")


def _split_codes(value) -> list[str]:
    if isinstance(value, list):
        return [str(v) for v in value]
    return [c for c in re.split(r"[;|]", str(value or "")) if c.strip()]


def _rows(path: Path) -> list[tuple[int, dict]]:
    """``(line number, row)`` pairs; a CSV header is line 1, so the first row is line 2."""
    if path.suffix.lower() in (".jsonl", ".ndjson"):
        return list(iter_jsonl(path, "manifest row"))
    with open(path, encoding="utf-8-sig", newline="") as fh:
        dialect = "excel-tab" if path.suffix.lower() == ".tsv" else "excel"
        reader = csv.DictReader(fh, dialect=dialect)
        header = reader.fieldnames or []
        missing = [c for c in REQUIRED if c not in header]
        if missing:
            raise CorpusError(f"{path}:1: missing required column(s) {missing}; the header has {header}")
        return [(reader.line_num, {k: v for k, v in row.items() if k is not None}) for row in reader]


def load_manifest(
    path: str | os.PathLike, check_images: bool = True, report: LoadReport | None = None, name: str = ""
) -> Corpus:
    """Read a CSV/TSV/JSONL figure manifest into a ``Corpus`` rooted at the manifest's folder.

    Raises ``CorpusError`` naming the file and line for a missing required column or field, an
    empty ``patent_id`` or ``image``, an unparsable code, or (with ``check_images``) an image that is not on disk.
    Absolute image paths outside the manifest folder are kept relative to it via ``..`` segments.
    """
    path = Path(path)
    root = path.parent
    report = report if report is not None else LoadReport()
    patents: dict[str, Patent] = {}
    for lineno, row in _rows(path):
        missing = [c for c in REQUIRED if c not in row]
        if missing:
            raise CorpusError(f"{path}:{lineno}: missing required column(s) {missing}")
        pid = str(row["patent_id"] or "").strip()
        image = str(row["image"] or "").strip()
        if not pid or not image:
            raise CorpusError(f"{path}:{lineno}: empty {'patent_id' if not pid else 'image'}")
        image_path = Path(image) if os.path.isabs(image) else root / image
        if check_images and not image_path.is_file():
            raise CorpusError(f"{path}:{lineno}: image {image!r} not found (looked for {image_path})")
        rel = Path(os.path.relpath(image_path, root)).as_posix()
        patent = patents.get(pid)
        if patent is None:
            kind = str(row.get("kind") or "design").strip()
            patent = patents[pid] = Patent(id=pid, kind=kind)
        for attr, col in (("title", "title"), ("text", "text"), ("date", "date")):
            value = str(row.get(col) or "").strip()
            if value and not getattr(patent, attr):
                setattr(patent, attr, value)
        for scheme in ("locarno", "ipc"):
            for code in _split_codes(row.get(scheme)):
                try:
                    norm = taxonomy.normalize(scheme, code.strip())
                except ValueError as err:
                    raise CorpusError(f"{path}:{lineno}: bad {scheme} code {code.strip()!r}: {err}") from None
                if norm not in patent.codes.setdefault(scheme, []):
                    patent.codes[scheme].append(norm)
        patent.figures.append(
            Figure(
                path=rel, view=str(row.get("view") or "").strip(), label=str(row.get("label") or "").strip()
            )
        )
    report.loaded = len(patents)
    return Corpus(root=root, patents=list(patents.values()), name=name or path.stem)
