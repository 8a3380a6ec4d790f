"""Figure-level precision / recall of ``split_sheet`` on the 15 DeepPatent2 sheets.

The sample (``../shared/data/deeppatent2_segmentor_samples``) has the OCR boxes of the "FIG. n"
labels but no figure boxes. The reference boxes in ``bench/data/deeppatent2_figure_boxes.json``
were drawn by hand: a rough box per figure on a 5 % grid (``deeppatent2_figure_boxes_rough.json``,
in percent of the sheet), tightened to the ink inside it, label text excluded
(``--make-reference`` redoes that step and writes an overlay PNG per sheet to look at).

A predicted box is correct when its IoU with a reference box not yet matched is >= 0.5 (greedy by
IoU). Printed for both modes: label-guided (OCR label positions given) and label-free.

    python bench/bench_sheets.py [--make-reference] [--overlays DIR]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np
from PIL import Image, ImageDraw

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from patent_demo.drawing.sheets import ink_mask, labels_from_rekognition, match_boxes, split_sheet  # noqa: E402
from patent_demo.imageio import INK_THRESHOLD, load_drawing  # noqa: E402

DATA = ROOT.parent / "shared" / "data" / "deeppatent2_segmentor_samples"
ROUGH = ROOT / "bench" / "data" / "deeppatent2_figure_boxes_rough.json"
REFERENCE = ROOT / "bench" / "data" / "deeppatent2_figure_boxes.json"


def sheet(name: str):
    img = load_drawing(DATA / "images" / f"{name}.png", crop=False, square=False)
    labels = labels_from_rekognition(DATA / "amazon_rekognition_json" / f"{name}.json", img.width, img.height)
    return img, labels


def make_reference(overlays: Path | None) -> dict:
    rough = json.loads(ROUGH.read_text())
    out = {}
    for name, figs in rough.items():
        img, labels = sheet(name)
        ink = ink_mask(np.asarray(img), INK_THRESHOLD, labels)  # label text blanked
        rows = []
        for label, (px0, py0, px1, py1) in figs:
            x0, y0 = int(px0 / 100 * img.width), int(py0 / 100 * img.height)
            x1, y1 = int(px1 / 100 * img.width), int(py1 / 100 * img.height)
            sub = ink[y0:y1, x0:x1]
            r, c = np.flatnonzero(sub.any(axis=1)), np.flatnonzero(sub.any(axis=0))
            rows.append([label, [x0 + int(c[0]), y0 + int(r[0]), x0 + int(c[-1]) + 1, y0 + int(r[-1]) + 1]])
        out[name] = rows
        if overlays:
            draw_overlay(img, [b for _, b in rows], [], overlays / f"{name}.ref.png")
    REFERENCE.write_text(json.dumps(out, indent=1) + "\n")
    return out


def draw_overlay(img: Image.Image, reference, predicted, path: Path) -> None:
    rgb = img.convert("RGB")
    d = ImageDraw.Draw(rgb)
    for b in reference:
        d.rectangle(b, outline=(0, 160, 0), width=8)
    for b in predicted:
        d.rectangle(b, outline=(220, 0, 0), width=5)
    path.parent.mkdir(parents=True, exist_ok=True)
    rgb.thumbnail((600, 600))
    rgb.save(path)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument(
        "--make-reference", action="store_true", help="rebuild the reference boxes from the rough ones"
    )
    ap.add_argument(
        "--overlays", type=Path, default=None, help="write reference (green) / predicted (red) overlays here"
    )
    args = ap.parse_args(argv)
    if not DATA.is_dir():
        print(f"missing {DATA}", file=sys.stderr)
        return 2
    ref = make_reference(args.overlays) if args.make_reference else json.loads(REFERENCE.read_text())
    n_ref = sum(len(v) for v in ref.values())
    print(f"{len(ref)} sheets, {n_ref} reference figures")
    for mode in ("label-guided", "label-free"):
        tp = n_pred = 0
        seconds = []
        per_sheet = []
        for name, rows in ref.items():
            img, labels = sheet(name)
            t = time.perf_counter()
            figs = split_sheet(img, labels if mode == "label-guided" else None)
            seconds.append(time.perf_counter() - t)
            pred = [f.box for f in figs]
            m = match_boxes(pred, [b for _, b in rows])
            tp += len(m)
            n_pred += len(pred)
            per_sheet.append(f"{name[:10]}-{name[-3:]} {len(m)}/{len(rows)} ref, {len(pred)} pred")
            if args.overlays:
                draw_overlay(img, [b for _, b in rows], pred, args.overlays / f"{name}.{mode}.png")
        p, r = tp / max(1, n_pred), tp / n_ref
        print(
            f"{mode:13s} precision {p:.3f} ({tp}/{n_pred})  recall {r:.3f} ({tp}/{n_ref})  "
            f"F1 {2 * p * r / max(1e-9, p + r):.3f}  median {1000 * float(np.median(seconds)):.0f} ms/sheet"
        )
        print("   " + "; ".join(per_sheet))
    return 0


if __name__ == "__main__":
    sys.exit(main())
