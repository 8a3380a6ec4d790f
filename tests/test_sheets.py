"""Tests for patent_demo.drawing.sheets: exact boxes on a drawn sheet, label pairing from real
Rekognition output, IoU matching by hand, and the figure-level scores on the real DeepPatent2 sheets
against the hand-drawn reference boxes of bench/data."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from PIL import Image, ImageDraw

from patent_demo.drawing.sheets import FigureLabel, iou, labels_from_rekognition, match_boxes, split_sheet
from patent_demo.imageio import load_drawing
from tests.conftest import require_shared

REFERENCE = Path(__file__).resolve().parents[1] / "bench" / "data" / "deeppatent2_figure_boxes.json"


def drawn_sheet() -> Image.Image:
    """A 1000 x 1400 sheet: a box outline with a detached detail inside (one figure), a stippled disc
    (one figure), a thin long rod (one figure), and a small "label" of dots that is text-sized."""
    im = Image.new("L", (1000, 1400), 255)
    d = ImageDraw.Draw(im)
    d.rectangle((100, 100, 500, 500), outline=0, width=4)
    d.rectangle((250, 250, 300, 300), fill=0)  # detached, inside the outline
    for x in range(620, 900, 9):  # stippled: dots 9 px apart
        for y in range(150, 430, 9):
            if (x - 760) ** 2 + (y - 290) ** 2 < 140**2:
                d.point((x, y), fill=0)
    d.rectangle((100, 800, 112, 1300), fill=0)  # thin rod, 12 x 500
    d.text((700, 1000), "FIG. 3", fill=0)
    return im


def test_split_drawn_sheet_exact():
    figs = split_sheet(drawn_sheet())
    boxes = sorted(f.box for f in figs)
    assert len(boxes) == 3
    assert boxes[0][:2] == (100, 100) and boxes[0][2:] >= (502, 502)
    assert boxes[1] == (100, 800, 113, 1301) or iou(boxes[1], (100, 800, 113, 1301)) > 0.9
    assert iou(boxes[2], (621, 152, 900, 430)) > 0.9
    assert split_sheet(Image.new("L", (300, 300), 255)) == []


def test_labels_guide_the_assignment():
    im = drawn_sheet()
    labels = [
        FigureLabel("FIG. 1", "1", (100, 520, 160, 540)),
        FigureLabel("FIG. 2", "2", (700, 450, 760, 470)),
        FigureLabel("FIG. 3", "3", (130, 1320, 190, 1340)),
    ]
    figs = split_sheet(im, labels)
    assert [f.label for f in figs] == ["FIG. 1", "FIG. 2", "FIG. 3"]
    assert figs[2].box[0] == 100 and figs[2].box[3] >= 1300


def test_labels_from_real_rekognition_json():
    root = require_shared("deeppatent2_segmentor_samples")
    name = "USD0871717-20200107-D00003"  # rotated labels: "7" and "FIG." are separate words
    img = load_drawing(root / "images" / f"{name}.png", crop=False, square=False)
    labels = labels_from_rekognition(root / "amazon_rekognition_json" / f"{name}.json", img.width, img.height)
    assert [lab.text for lab in labels] == ["FIG. 4", "FIG. 5", "FIG. 6", "FIG. 7"]
    seven = labels[3]
    assert seven.box[0] > 0.9 * img.width and seven.box[1] < 0.3 * img.height < seven.box[3]
    name = "USD0871749-20200107-D00005"  # "Fig. 8" and OCR noise such as "J00000000000"
    labels = labels_from_rekognition(root / "amazon_rekognition_json" / f"{name}.json", 1886, 1874)
    assert [lab.text for lab in labels] == ["FIG. 8", "FIG. 9"]


def test_iou_and_greedy_matching():
    assert iou((0, 0, 10, 10), (5, 0, 15, 10)) == pytest.approx(50 / 150)
    assert iou((0, 0, 10, 10), (20, 20, 30, 30)) == 0.0
    m = match_boxes([(0, 0, 10, 10), (0, 0, 9, 10), (50, 50, 60, 60)], [(0, 0, 10, 10), (100, 100, 110, 110)])
    assert m == [(0, 0, 1.0)]  # the second prediction overlaps an already matched reference


def _score(use_labels: bool) -> tuple[int, int, int]:
    root = require_shared("deeppatent2_segmentor_samples")
    ref = json.loads(REFERENCE.read_text())
    tp = n_pred = n_ref = 0
    for name, rows in ref.items():
        img = load_drawing(root / "images" / f"{name}.png", crop=False, square=False)
        labels = labels_from_rekognition(
            root / "amazon_rekognition_json" / f"{name}.json", img.width, img.height
        )
        pred = [f.box for f in split_sheet(img, labels if use_labels else None)]
        tp += len(match_boxes(pred, [b for _, b in rows]))
        n_pred += len(pred)
        n_ref += len(rows)
    return tp, n_pred, n_ref


def test_real_sheets_figure_precision_recall():
    """The figures of README (bench/bench_sheets.py): 34 of 35 reference figures found with the
    OCR labels (precision 34/34), 32 of 35 without (precision 32/36)."""
    assert _score(True) == (34, 34, 35)
    assert _score(False) == (32, 36, 35)


def test_split_corpus_sheets_on_real_sheets(tmp_path):
    from patent_demo.data.corpus import Corpus, Figure, Patent
    from patent_demo.drawing.sheets import split_corpus_sheets

    root = require_shared("deeppatent2_segmentor_samples")
    names = ["USD0871719-20200107-D00005", "USD0871728-20200107-D00001"]
    pats = [Patent(n[:10], figures=[Figure(f"images/{n}.png", label="sheet")]) for n in names]
    corpus = Corpus(root, pats)

    def labels(p, f, img):
        return labels_from_rekognition(
            root / "amazon_rekognition_json" / (Path(f.path).stem + ".json"), img.width, img.height
        )

    out, counts = split_corpus_sheets(corpus, tmp_path / "split", labels_for=labels)
    assert counts == {"sheets": 2, "split": 2, "figures": 7}
    assert [f.label for f in out["USD0871719"].figures] == ["FIG. 5", "FIG. 6", "FIG. 7", "FIG. 8"]
    out.save()
    again = Corpus.load(tmp_path / "split")
    assert all(again.image_path(f).is_file() for _, f in again.figures())
