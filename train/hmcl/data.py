"""The data sources of ``train.hmcl``: every kind of training and validation drawing through one interface.

A :class:`DrawingSource` has a ``name`` and ``items() -> list[Item]``; an :class:`Item` is one drawing with
its patent, image file, scheme-qualified subclass and main-class keys (``hierarchy.hierarchy_keys``; ``""``
when unknown), the patent's text and the source's name, so USPC and Locarno items relate only through the
patent. Sources (``SOURCES`` by ``--sources`` name):

* ``corpus``: a corpus directory (``--corpus``: ``manifest.jsonl`` + ``splits.json``) or the generated demo
  corpus, every figure of the training split (:class:`CorpusSource`; the end-to-end image feed also reads
  its :class:`Corpus` for the evaluation splits and the examiner labels);
* ``uspc``: the 1,000 real USPC 2007 drawings (``metadata_2007.txt``: patent, ``D2-969``, title);
* ``deeppatent2``: segmented DeepPatent2 figures (patent only, no class);
* ``generated``: the training split of the generated corpus (Locarno), ``--demo-figures`` per patent;
* ``redbook``: every drawing page of the Red Book samples (Locarno): validation, never trained on.

Exported examiner labels are read by ``train.labels.data`` (shared with the DSSDNet trainer): they add
judged positives and hard negatives to the batches of a corpus source.

The command writes the committed split file of the 1,000 USPC 2007 drawings (``splits/uspc2007.json``)::

    python -m train.hmcl.data ../shared/data/design_patents_2007_uspc_macaulay --out splits/uspc2007.json

The rule is ``patent_demo.data.splits.RULE`` (by patent, stratified by class, 600 / 200 / 200); it reads only
the patent ids and USPC codes of ``metadata_2007.txt``, never a model's result.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import sys
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

import numpy as np

from patent_demo import hierarchy
from patent_demo.data.corpus import Corpus, Patent
from patent_demo.data.splits import RULE, SPLIT_NAMES, class_stratified_splits
from patent_demo.hierarchy import hierarchy_keys

DATA = "../shared/data"
SPLIT_DESCRIPTION = "Write the committed split file of the 1,000 USPC 2007 drawings (splits/uspc2007.json)."


@dataclass(frozen=True)
class Item:
    """One training or validation drawing: patent id, image file, qualified subclass and main-class keys
    (``""`` when unknown), the patent's text, its source (``uspc``, ``deeppatent2``, ``generated``,
    ``redbook``) and the Locarno/USPC code shown in tables."""

    patent: str
    path: str
    subclass: str
    main: str
    text: str
    source: str
    code: str = ""


def uspc_items(folder: str | os.PathLike) -> list[Item]:
    """The USPC 2007 drawings: ``metadata_2007.txt`` (TSV, no header: patent id, class-subclass such as
    ``D2-969``, title) beside ``images/<patent id>.png``."""
    folder = Path(folder)
    items = []
    with open(folder / "metadata_2007.txt", encoding="utf-8", newline="") as fh:
        for lineno, row in enumerate(csv.reader(fh, delimiter="\t"), start=1):
            if not row or not row[0].strip():
                continue
            if len(row) < 3:
                raise ValueError(f"{folder / 'metadata_2007.txt'}:{lineno}: expected 3 columns, got {row}")
            pid, code, title = (c.strip() for c in row[:3])
            image = folder / "images" / f"{pid}.png"
            if not image.is_file():
                raise FileNotFoundError(f"{folder / 'metadata_2007.txt'}:{lineno}: no image {image}")
            sub, main = hierarchy.hierarchy_keys("uspc", code)
            items.append(Item(pid, str(image), sub, main, title, "uspc", sub.partition(":")[2]))
    return items


def deeppatent2_items(folder: str | os.PathLike) -> list[Item]:
    """Segmented DeepPatent2 figures (``USD<number>-<date>-D<sheet>_<figure>.png``): patent only."""
    from patent_demo.data.loaders.deeppatent2 import parse_deeppatent2_name

    items = []
    for image in sorted((Path(folder) / "images").glob("*.png")):
        name = parse_deeppatent2_name(image.name)
        items.append(Item(name.patent_id, str(image), "", "", "", "deeppatent2"))
    return items


def corpus_items(corpus: Corpus, patents: list[Patent], source: str, max_figures: int = 0) -> list[Item]:
    """The figures of ``patents`` (the first ``max_figures`` of each when > 0) with the patent's hierarchy
    keys (``hierarchy.patent_hierarchy``)."""
    items = []
    for p in patents:
        sub, main = hierarchy.patent_hierarchy(p.codes)
        text = ". ".join(t for t in (p.title.strip(), p.text.strip()) if t)
        for f in p.figures[: max_figures or None]:
            items.append(Item(p.id, str(corpus.image_path(f)), sub, main, text, source, p.locarno))
    return items


def generated_items(cache_dir: str, patents: int, seed: int, size: int, max_figures: int = 0) -> list[Item]:
    """The training split of the generated corpus (built once under ``cache_dir``)."""
    from patent_demo.data.democorpus.build import ensure_demo_corpus

    corpus = ensure_demo_corpus(cache_dir, patents=patents, seed=seed, size=size, workers=1).ensure_splits()
    return corpus_items(corpus, corpus.split("train"), "generated", max_figures)


def validation_items(redbook: str | os.PathLike) -> tuple[Corpus, list[Item]]:
    """Every drawing page of the Red Book grants under ``redbook``, in ``drawing_protocol(..., "all")``
    order (patent by patent, page by page)."""
    from patent_demo.data.loaders.uspto import load_redbook

    corpus = load_redbook(redbook)
    return corpus, corpus_items(corpus, corpus.patents, "redbook")


def shuffle_hierarchy(items: list[Item], seed: int) -> list[Item]:
    """The label-permutation control: within each scheme, the patents' subclasses are permuted (class
    sizes kept) and the main class follows the new subclass."""
    rng = np.random.default_rng([seed, 7])
    by_scheme: dict[str, list[str]] = {}
    for it in items:
        if it.subclass:
            by_scheme.setdefault(it.subclass.partition(":")[0], [])
    new_of: dict[str, str] = {}
    for scheme in by_scheme:
        pats = sorted({it.patent for it in items if it.subclass.startswith(scheme + ":")})
        subs = {it.patent: it.subclass for it in items if it.subclass.startswith(scheme + ":")}
        perm = rng.permutation(len(pats))
        new_of.update({p: subs[pats[j]] for p, j in zip(pats, perm, strict=True)})
    out = []
    for it in items:
        if it.patent in new_of:
            sub = new_of[it.patent]
            it = Item(it.patent, it.path, sub, hierarchy.main_of(sub), it.text, it.source, it.code)
        out.append(it)
    return out


class DrawingSource(Protocol):
    """Where training or validation drawings come from: a name and the drawings as :class:`Item` s."""

    name: str

    def items(self) -> list[Item]: ...


@dataclass
class CorpusSource:
    """The figures of one split of a corpus (``--corpus`` or the generated demo corpus)."""

    corpus: Corpus
    split: str = "train"
    name: str = "corpus"

    def items(self) -> list[Item]:
        return corpus_items(self.corpus, [p for p in self.corpus.split(self.split) if p.figures], self.name)


@dataclass
class FolderSource:
    """A folder of real drawings read by ``reader`` (:func:`uspc_items`, :func:`deeppatent2_items`)."""

    folder: str
    name: str

    def items(self) -> list[Item]:
        return {"uspc": uspc_items, "deeppatent2": deeppatent2_items}[self.name](self.folder)


@dataclass
class GeneratedSource:
    """The training split of the generated corpus, the first ``max_figures`` figures of each patent."""

    cache_dir: str
    patents: int
    seed: int
    size: int
    max_figures: int = 0
    name: str = "generated"

    def items(self) -> list[Item]:
        return generated_items(self.cache_dir, self.patents, self.seed, self.size, self.max_figures)


@dataclass
class RedBookSource:
    """Every drawing page of the Red Book grants under ``folder`` (validation only)."""

    folder: str
    name: str = "redbook"

    def load(self) -> tuple[Corpus, list[Item]]:
        return validation_items(self.folder)

    def items(self) -> list[Item]:
        return self.load()[1]


SOURCES = ("uspc", "deeppatent2", "generated")  # the cached-feature sources (``corpus`` trains end to end)


def add_source_arguments(p: argparse.ArgumentParser) -> None:
    """The ``train.hmcl`` options of the training drawings: ``--sources``, their folders and the corpus."""
    a = p.add_argument
    a(
        "--sources",
        nargs="+",
        choices=("corpus", *SOURCES),
        default=["corpus"],
        help="training drawings: corpus (--corpus or the demo corpus, end to end on images) or any of uspc, "
        "deeppatent2, generated (cached frozen trunk, validated on --redbook)",
    )
    a("--uspc", default=f"{DATA}/design_patents_2007_uspc_macaulay", help="USPC 2007 drawings folder")
    a("--deeppatent2", default=f"{DATA}/deeppatent2_techdrawfinder_samples", help="DeepPatent2 folder")
    a(
        "--redbook",
        default=f"{DATA}/impact_design_patent_samples",
        help="Red Book validation folder (cached feed)",
    )
    a("--demo-figures", type=int, default=3, help="figures per generated patent in the cached feed (0: all)")
    a("--max-per-source", type=int, default=0, help="cached feed: at most N drawings of each source (0: all)")
    a(
        "--corpus",
        default=None,
        help="corpus directory (manifest.jsonl + splits.json); default: the demo corpus",
    )
    a("--demo-patents", type=int, default=400, help="patents of the generated demo corpus (without --corpus)")
    a("--demo-seed", type=int, default=0, help="seed of the generated demo corpus")
    a("--demo-size", type=int, default=256, help="drawing size in pixels of the generated demo corpus")
    a(
        "--demo-types",
        type=int,
        default=None,
        help="number of object types of the demo corpus (default: by size)",
    )
    a("--cache-dir", default="cache", help="where the generated demo corpus is cached")
    a("--train-split", default="train", help="split to train on")


def sources_of(args: argparse.Namespace) -> list[DrawingSource]:
    """The training sources ``--sources`` names (``--uspc`` / ``--deeppatent2`` folders, the demo settings)."""
    out: list[DrawingSource] = []
    for name in args.sources:
        if name in ("uspc", "deeppatent2"):
            out.append(FolderSource(getattr(args, name), name))
        elif name == "generated":
            out.append(
                GeneratedSource(
                    args.cache_dir, args.demo_patents, args.demo_seed, args.demo_size, args.demo_figures
                )
            )
        else:
            raise ValueError(f"unknown drawing source {name!r}")
    return out


def training_items(args: argparse.Namespace) -> list[Item]:
    """Every item of the ``--sources``, at most ``--max-per-source`` of each (0: all)."""
    items = [it for source in sources_of(args) for it in source.items()]
    if args.max_per_source:
        seen: Counter[str] = Counter()
        kept = []
        for it in items:
            seen[it.source] += 1
            if seen[it.source] <= args.max_per_source:
                kept.append(it)
        items = kept
    return items


def load_corpus(args: argparse.Namespace) -> Corpus:
    """``--corpus`` when given, else the generated demo corpus (built once under ``--cache-dir``)."""
    if args.corpus:
        return Corpus.load(args.corpus, validate=False).ensure_splits(seed=args.seed)
    from patent_demo.data.democorpus import build_corpus, ensure_demo_corpus

    if args.demo_types is None:
        return ensure_demo_corpus(
            args.cache_dir, patents=args.demo_patents, seed=args.demo_seed, size=args.demo_size
        )
    root = (
        Path(args.cache_dir)
        / f"democorpus-n{args.demo_patents}-t{args.demo_types}-s{args.demo_seed}-{args.demo_size}px"
    )
    if not (root / "democorpus.json").is_file():
        build_corpus(
            root,
            patents=args.demo_patents,
            seed=args.demo_seed,
            size=args.demo_size,
            workers=1,
            n_types=args.demo_types,
        )
    return Corpus.load(root, validate=False, name="democorpus")


def shuffle_labels(subclasses: Sequence, seed: int) -> list:
    """A random permutation of the labels over the patents (subclass strings, or ``(subclass, main)``
    pairs that then move together): every class keeps its size and the hierarchy stays consistent."""
    perm = np.random.default_rng([seed, 7]).permutation(len(subclasses))
    return [subclasses[i] for i in perm]


def patent_text(patent: Patent) -> str:
    """The text of the image-text term: title and description."""
    return ". ".join(t for t in (patent.title.strip(), patent.text.strip()) if t)


# -- the USPC split ------------------------------------------------------------------------------------------
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
    p = argparse.ArgumentParser(prog="python -m train.hmcl.data", description=SPLIT_DESCRIPTION)
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
    doc = {
        "rule": RULE.format(seed=args.seed),
        "seed": args.seed,
        "source": "design_patents_2007_uspc_macaulay",
        "command": "python -m train.hmcl.data " + " ".join(sys.argv[1:] if argv is None else argv),
        "stats": stats,
        **splits,
    }
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(doc, indent=1) + "\n", encoding="utf-8")
    print(json.dumps(stats))
    return 0


if __name__ == "__main__":
    sys.exit(main())
