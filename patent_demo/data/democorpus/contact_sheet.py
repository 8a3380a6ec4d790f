"""A contact sheet of the demo corpus: one patent per row, its views side by side, across Locarno classes.

``python -m patent_demo.data.democorpus.contact_sheet [docs/contact_sheet.png] [--rows 10] [--cell 192]``
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

from PIL import Image, ImageDraw, ImageFont

from patent_demo.data.democorpus.build import make_patent, plan_corpus
from patent_demo.data.democorpus.catalog import TYPES


def contact_sheet(rows: int = 10, cell: int = 192, columns: int = 8, seed: int = 0) -> Image.Image:
    """A white sheet with ``rows`` patents of different main classes (different subclasses where the main
    classes run out), each row captioned with id, Locarno subclass and title."""
    plans = plan_corpus(600, seed)
    picked, mains, subs = [], set(), set()
    for strict in (True, False):
        for p in plans:
            t = TYPES[p.type]
            if len(picked) == rows or p in picked or len(p.views) < 6:
                continue
            if (strict and t.locarno_main not in mains) or (not strict and t.locarno not in subs):
                picked.append(p)
                mains.add(t.locarno_main)
                subs.add(t.locarno)
    caption_h = 22
    sheet = Image.new("L", (columns * cell, rows * (cell + caption_h)), 255)
    draw = ImageDraw.Draw(sheet)
    font = ImageFont.load_default(size=14)
    with tempfile.TemporaryDirectory() as tmp:
        for r, plan in enumerate(picked):
            patent = make_patent(plan, Path(tmp), cell)
            y = r * (cell + caption_h)
            draw.text(
                (6, y + 4), f"{patent.id}   Locarno {patent.locarno}   {patent.title}", fill=0, font=font
            )
            for c, fig in enumerate(patent.figures[:columns]):
                with Image.open(Path(tmp) / fig.path) as img:
                    sheet.paste(img, (c * cell, y + caption_h))
            draw.line([(0, y), (sheet.width, y)], fill=160, width=1)
    return sheet


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Write a contact sheet of the demo corpus.")
    parser.add_argument("out", nargs="?", default="docs/contact_sheet.png", help="output PNG")
    parser.add_argument("--rows", type=int, default=10, help="patents (one per row)")
    parser.add_argument("--cell", type=int, default=192, help="drawing size in pixels")
    parser.add_argument("--seed", type=int, default=0, help="corpus seed")
    args = parser.parse_args(argv)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    contact_sheet(args.rows, args.cell, seed=args.seed).save(out, optimize=True)
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
