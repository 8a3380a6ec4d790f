"""Locarno classes for the USPC 2007 drawings, derived from their titles; the rule, its accuracy on the design
grants whose Locarno code is known, and the committed label file (``splits/uspc2007_locarno.json``).

    python -m train.hmcl.labels --out splits/uspc2007_locarno.json

The 1,000 drawings of ``design_patents_2007_uspc_macaulay`` carry a USPC class and a title but no Locarno
code; the 220 design grants of ``uspto_grant_xml_samples`` carry all three. The rule, fixed from those grants
and the two Locarno tables:

* **main class** -- the USPC design class number when it names a Locarno class of the same subject
  (``D1`` .. ``D31``: on the grants the numbers agree for 206 of 220 patents); the title's nearest WIPO product
  indication (``locarno_main_classes_and_products``, MiniLM cosine) gives a second opinion, and the main class is
  *confirmed* where the two agree. Where the USPC class has no Locarno twin (``D32``, ``D34``, ``D99``) the
  product indication alone gives it, unconfirmed.
* **subclass** -- the Locarno subclass of the grant whose title is nearest (MiniLM cosine) among the grants of
  the derived main class, kept only when that cosine reaches ``threshold``: the smallest value of
  ``THRESHOLDS`` at which the rule, applied to each grant with that grant left out, is right for at least
  ``MIN_ACCURACY`` of the grants it labels.

Every figure of the rule's accuracy is measured on the grants (leave-one-out for the subclass, which reads
grant titles) and written into the file with the labels. Nothing here reads the Red Book pages, the
drawings' images or any test split.
"""

from __future__ import annotations

import argparse
import csv
import json
import re
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

DATA = Path("../shared/data")
GRANTS = "uspto_grant_xml_samples/design_patents_locarno.tsv"
PRODUCTS = "locarno_main_classes_and_products/locarno_seed.json"
USPC = "design_patents_2007_uspc_macaulay/metadata_2007.txt"
THRESHOLDS = tuple(round(0.5 + 0.05 * i, 2) for i in range(9))  # 0.50 .. 0.90
MIN_ACCURACY = 0.8  # a kept subclass is right this often on the grants (leave-one-out)
LOCARNO_TWINS = range(1, 32)  # USPC design classes D1..D31 share their number with a Locarno class


@dataclass(frozen=True)
class Grant:
    title: str
    uspc_class: int  # the USPC design class number (D21/765 -> 21)
    main: str  # Locarno main class, "21"
    subclass: str  # Locarno subclass, "21-02"


def read_grants(data: Path = DATA) -> list[Grant]:
    """The design grants with a Locarno code: title, USPC class number (``uspc_main`` is the class right-aligned
    in two characters after ``D`` then the subclass: ``D21765``, ``D 2969``) and the Locarno code."""
    out = []
    with open(data / GRANTS, encoding="utf-8", newline="") as fh:
        for row in csv.DictReader(fh, delimiter="\t"):
            cls = row["uspc_main"][1:3].strip()
            if not cls.isdigit() or not row["locarno_main"].strip():
                continue
            main = f"{int(row['locarno_main']):02d}"
            out.append(Grant(row["title"].strip(), int(cls), main, f"{main}-{int(row['locarno_sub']):02d}"))
    return out


def read_products(data: Path = DATA) -> tuple[list[str], list[str]]:
    """WIPO product indications (label, Locarno main class), without the synthetic "Miscellaneous" rows."""
    seed = json.loads((data / PRODUCTS).read_text(encoding="utf-8"))
    rows = [
        (p["label"], f"{int(p['main_class_value'].split('_')[1]):02d}")
        for p in seed["subclasses"]
        if p["label"].strip().lower() != "miscellaneous"
    ]
    return [r[0] for r in rows], [r[1] for r in rows]


def read_uspc(data: Path = DATA) -> list[tuple[str, int, str]]:
    """The USPC drawings: (patent id, USPC class number, title)."""
    out = []
    with open(data / USPC, encoding="utf-8", newline="") as fh:
        for row in csv.reader(fh, delimiter="\t"):
            if len(row) >= 3:
                out.append(
                    (row[0].strip(), int(re.match(r"D\s*(\d+)", row[1].strip()).group(1)), row[2].strip())
                )
    return out


class Deriver:
    """The rule above, over unit title embeddings (``embed(texts) -> [N, D]``)."""

    def __init__(self, grants: list[Grant], products: tuple[list[str], list[str]], embed) -> None:
        self.grants, self.embed = grants, embed
        self.g = embed([g.title for g in grants])
        self.p = embed(products[0])
        self.p_main = np.asarray(products[1])
        self.g_main = np.asarray([g.main for g in grants])
        self.g_sub = np.asarray([g.subclass for g in grants])

    def mains(self, titles_emb: np.ndarray, uspc: Sequence[int]) -> list[tuple[str, bool]]:
        """Per title: (Locarno main class, confirmed by the product indication)."""
        product = self.p_main[(titles_emb @ self.p.T).argmax(1)]
        out = []
        for cls, prod in zip(uspc, product, strict=True):
            if cls in LOCARNO_TWINS:
                out.append((f"{cls:02d}", prod == f"{cls:02d}"))
            else:
                out.append((str(prod), False))
        return out

    def subclasses(
        self, titles_emb: np.ndarray, mains: Sequence[str], leave_out: Sequence[int] | None = None
    ):
        """Per title: (nearest grant's subclass among the grants of its main class, cosine); ``("", 0.0)``
        when no grant has that main class. ``leave_out[i]`` is a grant row title ``i`` may not use."""
        sims = titles_emb @ self.g.T
        out = []
        for i, main in enumerate(mains):
            rows = np.flatnonzero(self.g_main == main)
            if leave_out is not None:
                rows = rows[rows != leave_out[i]]
            if not len(rows):
                out.append(("", 0.0))
                continue
            j = rows[np.argmax(sims[i, rows])]
            out.append((str(self.g_sub[j]), float(sims[i, j])))
        return out

    def check(self) -> dict:
        """The rule applied to the grants themselves (leave-one-out for the subclass): main-class accuracy
        (all, confirmed), subclass accuracy and coverage per threshold, and the threshold chosen."""
        uspc = [g.uspc_class for g in self.grants]
        mains = self.mains(self.g, uspc)
        main_ok = np.asarray([m == g.main for (m, _), g in zip(mains, self.grants, strict=True)])
        confirmed = np.asarray([c for _, c in mains])
        subs = self.subclasses(self.g, [m for m, _ in mains], leave_out=list(range(len(self.grants))))
        sub_ok = np.asarray([s == g.subclass for (s, _), g in zip(subs, self.grants, strict=True)])
        sim = np.asarray([c for _, c in subs])
        curve = []
        for th in THRESHOLDS:
            kept = sim >= th
            curve.append(
                {
                    "threshold": th,
                    "coverage": float(kept.mean()),
                    "accuracy": float(sub_ok[kept].mean()) if kept.any() else None,
                }
            )
        chosen = next(
            (c for c in curve if c["accuracy"] is not None and c["accuracy"] >= MIN_ACCURACY), curve[-1]
        )
        product_main = self.p_main[(self.g @ self.p.T).argmax(1)]
        return {
            "grants": len(self.grants),
            "main_accuracy": float(main_ok.mean()),
            "main_confirmed_coverage": float(confirmed.mean()),
            "main_confirmed_accuracy": float(main_ok[confirmed].mean()) if confirmed.any() else None,
            "main_product_alone_accuracy": float(np.mean(product_main == self.g_main)),
            "uspc_number_is_locarno_main": float(np.mean([g.uspc_class == int(g.main) for g in self.grants])),
            "subclass_accuracy_all": float(sub_ok.mean()),
            "subclass_curve": curve,
            "threshold": chosen["threshold"],
            "subclass_kept_coverage": chosen["coverage"],
            "subclass_kept_accuracy": chosen["accuracy"],
        }

    def derive(self, drawings: list[tuple[str, int, str]], threshold: float) -> dict[str, dict]:
        """Labels of the drawings: patent id -> main, confirmed, subclass (``""`` below ``threshold``), cosine."""
        emb = self.embed([t for _, _, t in drawings])
        mains = self.mains(emb, [c for _, c, _ in drawings])
        subs = self.subclasses(emb, [m for m, _ in mains])
        return {
            pid: {
                "main": m,
                "confirmed": bool(c),
                "subclass": s if sim >= threshold else "",
                "similarity": round(sim, 4),
            }
            for (pid, _, _), (m, c), (s, sim) in zip(drawings, mains, subs, strict=True)
        }


def minilm_embed():
    """Unit MiniLM title embeddings (the packaged all-MiniLM-L6-v2)."""
    from patent_demo.text.dense import TextEncoder

    encoder = TextEncoder()
    return lambda texts: encoder.encode(list(texts), batch_size=64)


def load(path: str | Path, confirmed_only: bool = False) -> dict[str, tuple[str, str]]:
    """Qualified hierarchy keys ``patent id -> ("locarno:06-01" or "", "locarno:06")`` of a label file;
    with ``confirmed_only`` the main class only where the product indication confirmed it."""
    labels = json.loads(Path(path).read_text(encoding="utf-8"))["labels"]
    out = {}
    for pid, lab in labels.items():
        main = lab["main"] if (lab["confirmed"] or not confirmed_only) else ""
        sub = lab["subclass"] if main and lab["subclass"].startswith(main) else ""
        out[pid] = (f"locarno:{sub}" if sub else "", f"locarno:{main}" if main else "")
    return out


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m train.hmcl.labels", description=__doc__.split("\n\n")[0])
    p.add_argument("--data", default=str(DATA), help="the shared data folder")
    p.add_argument("--out", default="splits/uspc2007_locarno.json", help="the label file to write")
    args = p.parse_args(argv)
    data = Path(args.data)
    deriver = Deriver(read_grants(data), read_products(data), minilm_embed())
    check = deriver.check()
    labels = deriver.derive(read_uspc(data), check["threshold"])
    kept = sum(1 for v in labels.values() if v["subclass"])
    confirmed = sum(1 for v in labels.values() if v["confirmed"])
    doc = {
        "rule": "train/hmcl/labels.py (module docstring); python -m train.hmcl.labels --out " + args.out,
        "check_on_grants": check,
        "drawings": len(labels),
        "main_confirmed": confirmed,
        "subclass_kept": kept,
        "labels": labels,
    }
    Path(args.out).write_text(json.dumps(doc, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    print(
        f"grants: main {check['main_accuracy']:.3f} (confirmed {check['main_confirmed_accuracy']:.3f} on "
        f"{check['main_confirmed_coverage']:.0%}), subclass at cosine >= {check['threshold']}: "
        f"{check['subclass_kept_accuracy']:.3f} on {check['subclass_kept_coverage']:.0%} (all: "
        f"{check['subclass_accuracy_all']:.3f})"
    )
    print(f"drawings: {len(labels)}, main confirmed {confirmed}, subclass kept {kept} -> {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
