"""Split a drawing sheet holding several figures into one box per figure.

A patent drawing sheet often holds several views ("FIG. 1" ... "FIG. 3"), each a cluster of ink
separated from the others by white space. :func:`split_sheet` finds them in four steps:

1. **Ink mask.** Pixels darker than ``threshold``; the boxes of known figure labels are blanked so
   that the label text does not join or become a figure. The mask is reduced so the longer side is
   at most ``work_size`` pixels (a block holds ink when any of its pixels does).
2. **Blobs.** The mask is dilated by ``join`` x the longer side (this joins the dots of stippled
   shading and the dashes of broken lines) and split into 8-connected components.
3. **Clean-up.** Components that look like text or specks (shorter side under ``text_short`` and
   longer side under ``text_long`` of the sheet's longer side, or under ``min_side``) are dropped;
   a component whose box lies mostly (``nest``) inside another's box joins it (detached details
   inside an outline).
4. **Figures.** Without labels every remaining group is a figure. With labels (positions of
   "FIG. n" from OCR, e.g. :func:`labels_from_rekognition`) every group joins the label nearest to
   its box (distance from the label's centre to the box; 0 inside), and each label with at least
   one group is a figure named by the label.

Boxes are ``(left, top, right, bottom)`` in pixels of the input sheet, right/bottom exclusive (what
``PIL.Image.crop`` takes). :func:`match_boxes` scores a split against reference boxes (a predicted
box is correct when its IoU with an unmatched reference is at least 0.5; greedy by IoU).
"""

from __future__ import annotations

import json
import math
import os
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from PIL import Image
from scipy import ndimage

from patent_demo.imageio import INK_THRESHOLD, Source, load_drawing

Box = tuple[int, int, int, int]

_FIG_WORD = re.compile(r"^(?:FIG|FIGS|FIGURE)\.?$", re.I)
_FIG_WITH_NUMBER = re.compile(r"^(?:FIG|FIGURE)\.?\s*(\d{1,3}[A-Z]?)\.?$", re.I)
_NUMBER = re.compile(r"^(\d{1,3}[A-Z]?)\.?$", re.I)


@dataclass(frozen=True)
class FigureLabel:
    """A printed figure label: ``text`` ("FIG. 3"), its ``number`` ("3") and its box in pixels."""

    text: str
    number: str
    box: Box

    @property
    def centre(self) -> tuple[float, float]:
        return (self.box[0] + self.box[2]) / 2, (self.box[1] + self.box[3]) / 2


@dataclass(frozen=True)
class SheetFigure:
    """One figure found on a sheet: its box and the label that named it (``""`` when unlabelled)."""

    box: Box
    label: str = ""
    number: str = ""

    def crop(self, sheet: Image.Image) -> Image.Image:
        return sheet.crop(self.box)


# -- labels -----------------------------------------------------------------------------------------
def _polygon_box(geometry: dict, width: int, height: int) -> Box:
    pts = geometry.get("Polygon") or []
    if pts:
        xs = [p["X"] for p in pts]
        ys = [p["Y"] for p in pts]
    else:
        b = geometry["BoundingBox"]
        xs, ys = [b["Left"], b["Left"] + b["Width"]], [b["Top"], b["Top"] + b["Height"]]
    x0, x1 = max(0.0, min(xs)), min(1.0, max(xs))
    y0, y1 = max(0.0, min(ys)), min(1.0, max(ys))
    return (int(x0 * width), int(y0 * height), math.ceil(x1 * width), math.ceil(y1 * height))


def _union(a: Box, b: Box) -> Box:
    return (min(a[0], b[0]), min(a[1], b[1]), max(a[2], b[2]), max(a[3], b[3]))


def labels_from_rekognition(
    detections: Sequence[dict] | str | os.PathLike, width: int, height: int
) -> list[FigureLabel]:
    """Figure labels from Amazon Rekognition ``DetectText`` output (a list of detections or a JSON
    file): each ``WORD`` reading FIG / Fig. / Figure is paired with the nearest unused number word
    (within 4 label heights), or carries its number itself ("FIG. 7"). Boxes come from the
    polygons (they follow rotated text), scaled to a ``width`` x ``height`` sheet."""
    if isinstance(detections, (str, os.PathLike)):
        detections = json.loads(Path(detections).read_text(encoding="utf-8"))
    words = [d for d in detections if d.get("Type") == "WORD"]
    figs, numbers, out = [], [], []
    for d in words:
        text = str(d.get("DetectedText", "")).strip()
        box = _polygon_box(d["Geometry"], width, height)
        m = _FIG_WITH_NUMBER.match(text)
        if m:
            out.append(FigureLabel(f"FIG. {m.group(1).upper()}", m.group(1).upper(), box))
        elif _FIG_WORD.match(text):
            figs.append(box)
        elif _NUMBER.match(text):
            numbers.append((_NUMBER.match(text).group(1).upper(), box))  # type: ignore[union-attr]
    used: set[int] = set()
    for box in figs:
        cx, cy = (box[0] + box[2]) / 2, (box[1] + box[3]) / 2
        size = max(box[2] - box[0], box[3] - box[1])
        best, best_d = None, 4.0 * size
        for i, (_, nb) in enumerate(numbers):
            if i in used:
                continue
            d = math.dist((cx, cy), ((nb[0] + nb[2]) / 2, (nb[1] + nb[3]) / 2))
            if d < best_d:
                best, best_d = i, d
        if best is not None:
            used.add(best)
            number, nb = numbers[best]
            out.append(FigureLabel(f"FIG. {number}", number, _union(box, nb)))
    return sorted(out, key=lambda lab: _label_key(lab.number))


def _label_key(number: str) -> tuple[int, str]:
    m = re.match(r"(\d+)(.*)", number)
    return (int(m.group(1)), m.group(2)) if m else (10**6, number)


# -- splitting --------------------------------------------------------------------------------------
def ink_mask(gray: np.ndarray, threshold: int, labels: Sequence[FigureLabel]) -> np.ndarray:
    """Ink pixels ``[H, W]`` (darker than ``threshold``) with each label's box, grown by 15 % of its
    mean side, blanked."""
    ink = gray < threshold
    for lab in labels:
        x0, y0, x1, y1 = lab.box
        pad = max(2, round(0.15 * (y1 - y0 + x1 - x0) / 2))
        ink[max(0, y0 - pad) : y1 + pad, max(0, x0 - pad) : x1 + pad] = False
    return ink


def _reduce(ink: np.ndarray, factor: int) -> np.ndarray:
    if factor <= 1:
        return ink
    h, w = ink.shape
    hh, ww = math.ceil(h / factor) * factor, math.ceil(w / factor) * factor
    padded = np.zeros((hh, ww), dtype=bool)
    padded[:h, :w] = ink
    return padded.reshape(hh // factor, factor, ww // factor, factor).any(axis=(1, 3))


def _inside_share(inner: Box, outer: Box) -> float:
    ix = max(0, min(inner[2], outer[2]) - max(inner[0], outer[0]))
    iy = max(0, min(inner[3], outer[3]) - max(inner[1], outer[1]))
    area = max(1, (inner[2] - inner[0]) * (inner[3] - inner[1]))
    return ix * iy / area


def _box_distance(point: tuple[float, float], box: Box) -> float:
    dx = max(box[0] - point[0], 0.0, point[0] - box[2])
    dy = max(box[1] - point[1], 0.0, point[1] - box[3])
    return math.hypot(dx, dy)


def split_sheet(
    sheet: Source,
    labels: Sequence[FigureLabel] | None = None,
    *,
    threshold: int = INK_THRESHOLD,
    work_size: int = 1000,
    join: float = 0.012,
    min_side: float = 0.03,
    text_short: float = 0.04,
    text_long: float = 0.15,
    nest: float = 0.6,
) -> list[SheetFigure]:
    """The figures of one drawing sheet, in reading order (top to bottom, then left to right), or in
    label order when ``labels`` are given. ``sheet`` is anything ``load_drawing`` reads; fractions
    are of the sheet's longer side (see the module docstring). A sheet with one drawing gives one
    figure; a blank sheet none."""
    img = (
        sheet
        if isinstance(sheet, Image.Image) and sheet.mode == "L"
        else load_drawing(sheet, crop=False, square=False)
    )
    gray = np.asarray(img)
    h, w = gray.shape
    labels = list(labels or [])
    ink = ink_mask(gray, threshold, labels)
    factor = max(1, math.ceil(max(h, w) / work_size))
    small = _reduce(ink, factor)
    side = max(small.shape)
    radius = max(1, round(join * side))
    grown = ndimage.binary_dilation(small, structure=np.ones((3, 3), bool), iterations=radius)
    comp, _ = ndimage.label(grown, structure=np.ones((3, 3), bool))
    boxes: list[Box] = []
    for idx, sl in enumerate(ndimage.find_objects(comp), 1):
        if sl is None:
            continue
        ys, xs = sl
        # undo the dilation: the box of the ink the component holds
        sub = small[ys, xs] & (comp[ys, xs] == idx)
        rows, cols = np.flatnonzero(sub.any(axis=1)), np.flatnonzero(sub.any(axis=0))
        if rows.size == 0:
            continue
        b = (xs.start + cols[0], ys.start + rows[0], xs.start + cols[-1] + 1, ys.start + rows[-1] + 1)
        short, long_ = sorted((b[2] - b[0], b[3] - b[1]))
        if long_ < min_side * side or (short < text_short * side and long_ < text_long * side):
            continue
        boxes.append(b)
    # nested components join their container (largest first)
    boxes.sort(key=lambda b: -(b[2] - b[0]) * (b[3] - b[1]))
    groups: list[Box] = []
    for b in boxes:
        for i, g in enumerate(groups):
            if _inside_share(b, g) >= nest:
                groups[i] = _union(g, b)
                break
        else:
            groups.append(b)
    scaled = [(g[0] * factor, g[1] * factor, min(w, g[2] * factor), min(h, g[3] * factor)) for g in groups]
    if not labels:
        return [SheetFigure(b) for b in sorted(scaled, key=lambda b: (b[1] // max(1, h // 20), b[0]))]
    assigned: dict[int, Box] = {}
    for b in scaled:
        i = min(range(len(labels)), key=lambda j: _box_distance(labels[j].centre, b))
        assigned[i] = _union(assigned[i], b) if i in assigned else b
    return [SheetFigure(assigned[i], labels[i].text, labels[i].number) for i in sorted(assigned)]


def crop_figures(
    sheet: Image.Image, figures: Sequence[SheetFigure], margin: float = 0.02
) -> list[Image.Image]:
    """Each figure cut from ``sheet`` with a white margin of ``margin`` x its longer side."""
    out = []
    for f in figures:
        x0, y0, x1, y1 = f.box
        pad = round(margin * max(x1 - x0, y1 - y0))
        box = (max(0, x0 - pad), max(0, y0 - pad), min(sheet.width, x1 + pad), min(sheet.height, y1 + pad))
        out.append(sheet.crop(box))
    return out


# -- measuring ---------------------------------------------------------------------------------------
def iou(a: Box, b: Box) -> float:
    """Intersection over union of two boxes."""
    ix = max(0, min(a[2], b[2]) - max(a[0], b[0]))
    iy = max(0, min(a[3], b[3]) - max(a[1], b[1]))
    inter = ix * iy
    union = (a[2] - a[0]) * (a[3] - a[1]) + (b[2] - b[0]) * (b[3] - b[1]) - inter
    return inter / union if union > 0 else 0.0


def match_boxes(
    predicted: Sequence[Box], reference: Sequence[Box], min_iou: float = 0.5
) -> list[tuple[int, int, float]]:
    """Greedy one-to-one matching by IoU (highest first): ``(predicted index, reference index,
    IoU)`` for the pairs with IoU >= ``min_iou``. Precision = matches / predicted, recall =
    matches / reference."""
    pairs = sorted(
        ((iou(p, r), i, j) for i, p in enumerate(predicted) for j, r in enumerate(reference)), reverse=True
    )
    used_p: set[int] = set()
    used_r: set[int] = set()
    out = []
    for v, i, j in pairs:
        if v < min_iou:
            break
        if i in used_p or j in used_r:
            continue
        used_p.add(i)
        used_r.add(j)
        out.append((i, j, v))
    return out


def split_corpus_sheets(corpus, out_root, labels_for=None, min_figures: int = 2):
    """A copy of ``corpus`` in which every figure that is a sheet of ``min_figures`` or more figures
    is replaced by one PNG per figure, written under ``out_root / "figures"`` (what a corpus build's
    ``--split-sheets`` does). ``labels_for(patent, figure, image) -> [FigureLabel]`` may supply OCR
    label positions (``labels_from_rekognition``); figures are then named by their label. The new
    corpus is rooted at ``out_root``; kept figures point back to their original files (relative
    paths, ``..`` where needed). Returns ``(corpus, {"sheets": n, "split": n, "figures": n})``."""
    import copy
    import os as _os

    from patent_demo.data.corpus import Corpus, Figure

    out_root = Path(out_root)
    (out_root / "figures").mkdir(parents=True, exist_ok=True)
    counts = {"sheets": 0, "split": 0, "figures": 0}
    patents = []
    for p in corpus:
        q = copy.deepcopy(p)
        q.figures = []
        for fig in p.figures:
            counts["sheets"] += 1
            src = corpus.image_path(fig)
            img = load_drawing(src, crop=False, square=False)
            labels = labels_for(p, fig, img) if labels_for else None
            found = split_sheet(img, labels)
            if len(found) < min_figures:
                kept = copy.copy(fig)
                kept.path = _os.path.relpath(Path(src).resolve(), out_root.resolve())
                if fig.thumb:
                    kept.thumb = _os.path.relpath((corpus.root / fig.thumb).resolve(), out_root.resolve())
                q.figures.append(kept)
                counts["figures"] += 1
                continue
            counts["split"] += 1
            for i, (f, crop) in enumerate(zip(found, crop_figures(img, found), strict=True), 1):
                rel = f"figures/{Path(fig.path).stem}_{i}.png"
                crop.save(out_root / rel)
                q.figures.append(
                    Figure(rel, fig.view, f.label or f"{fig.label or 'sheet'} part {i}", fig.description)
                )
                counts["figures"] += 1
        patents.append(q)
    meta = {k: v for k, v in corpus.meta.items() if k != "image_root"}  # every path is now under out_root
    out = Corpus(
        out_root, patents, splits=dict(corpus.splits), qrels=dict(corpus.qrels), name=corpus.name, meta=meta
    )
    return out, counts
