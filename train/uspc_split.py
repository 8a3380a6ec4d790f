"""Write the committed split file of the 1,000 USPC 2007 drawings (``splits/uspc2007.json``).

    python -m train.uspc_split ../shared/data/design_patents_2007_uspc_macaulay --out splits/uspc2007.json

The rule is ``patent_demo.data.splits.RULE`` (by patent, stratified by class, 600 / 200 / 200); it reads only
the patent ids and USPC codes of ``metadata_2007.txt``, never a model's result.
"""

from __future__ import annotations

import argparse
import csv
import json
import sys
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

from patent_demo.data.splits import RULE, SPLIT_NAMES, class_stratified_splits
from patent_demo.hierarchy import hierarchy_keys


def uspc_classes(folder: str | Path) -> dict[str, tuple[str, str]]:
    """``{patent id: (main key, subclass key)}`` of ``metadata_2007.txt`` (TSV: id, ``D2-969``, title)."""
    out = {}
    with open(Path(folder) / "metadata_2007.txt", encoding="utf-8", newline="") as fh:
        for row in csv.reader(fh, delimiter="\t"):
            if row and row[0].strip():
                sub, main = hierarchy_keys("uspc", row[1].strip())
                out[row[0].strip()] = (main, sub)
    return out


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m train.uspc_split", description=__doc__.split("\n\n")[0])
    p.add_argument("folder", help="the USPC 2007 folder (metadata_2007.txt + images/)")
    p.add_argument("--out", default="splits/uspc2007.json", help="split file to write")
    p.add_argument("--seed", type=int, default=0, help="seed of the hash order within a subclass")
    args = p.parse_args(argv)
    classes = uspc_classes(args.folder)
    splits = class_stratified_splits(classes, args.seed)
    stats = {}
    for name in SPLIT_NAMES:
        subs = Counter(classes[q][1] for q in splits[name])
        mains = Counter(classes[q][0] for q in splits[name])
        stats[name] = {
            "patents": len(splits[name]),
            "with_subclass_mate": sum(1 for q in splits[name] if subs[classes[q][1]] > 1),
            "with_main_mate": sum(1 for q in splits[name] if mains[classes[q][0]] > 1),
        }
    doc = {"rule": RULE.format(seed=args.seed), "seed": args.seed, "source": "design_patents_2007_uspc_macaulay",
           "command": "python -m train.uspc_split " + " ".join(sys.argv[1:] if argv is None else argv),
           "stats": stats, **splits}  # fmt: skip
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(doc, indent=1) + "\n", encoding="utf-8")
    print(json.dumps(stats))
    return 0


if __name__ == "__main__":
    sys.exit(main())
