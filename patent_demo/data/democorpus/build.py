"""Build the demo corpus: plan families, dates, citations and splits; render drawings in worker processes.

Planning is serial and cheap (no geometry); every patent then gets its own seed, so a worker renders
it the same way whatever the number of workers, and the same seed gives byte-identical files.

Definitions used downstream:

* **Families.** A family is one design and its near variants (continuous parameters moved by up to
  ``FAMILY_JITTER`` of their range, discrete choices kept), filed under different ids and dates.
  A family lies in one split.
* **Citations.** A patent cites every earlier member of its family, and up to three earlier patents
  of the same object type from other families.
* **Text qrels** (``Corpus.qrels``): for every test patent that cites anything, the query is its
  title and description; relevant documents are its citations, graded 2 for a family member and 1
  for another cited patent of the same type. Documents may lie in any split (the whole corpus is the
  prior-art collection).
* **Drawing retrieval protocol** (``retrieval_protocol``): one query figure per test patent (its
  ``extra["query_figure"]``, the first perspective view); the gallery is every other figure of the
  test split, including the query patent's remaining views.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import shutil
import tempfile
from collections import defaultdict
from dataclasses import dataclass, field
from multiprocessing import get_context
from pathlib import Path

import numpy as np

from patent_demo.data.corpus import Corpus, Figure, Patent
from patent_demo.data.democorpus import text
from patent_demo.data.democorpus.catalog import TYPES, make_design
from patent_demo.data.democorpus.render import Style, build_scene, render_view

VERSION = 1
FAMILY_JITTER = 0.06
ORTHO_ORDER = ("front", "rear", "left", "right", "top", "bottom")
BUILD_INFO = "democorpus.json"
PROTOCOL = "protocol.json"
SPLIT_FRACTIONS = {"train": 0.7, "val": 0.15, "test": 0.15}
_EPOCH = dt.date(2001, 1, 2)


@dataclass
class PatentPlan:
    """Everything a worker needs to produce one patent, decided before any geometry is built."""

    id: str
    type: str
    family: str
    variant: int
    family_seed: int
    seed: int
    date: str
    views: list[str]
    style: dict
    split: str = ""
    citations: list[str] = field(default_factory=list)


def choose_types(n_types: int, rng: np.random.Generator) -> list[str]:
    """``n_types`` type keys chosen so a small corpus still holds same-subclass and same-main-class pairs.

    Main classes with several subclasses come first; within a main class, subclasses are visited in
    turn, two types at a time; main classes contribute three types per round.
    """
    by_main: dict[str, dict[str, list[str]]] = defaultdict(lambda: defaultdict(list))
    for key in sorted(TYPES):
        t = TYPES[key]
        by_main[t.locarno_main][t.locarno].append(key)
    mains = sorted(by_main)
    rng.shuffle(mains)
    mains.sort(key=lambda m: len(by_main[m]) < 2)
    queues = []
    for m in mains:
        subs = [list(rng.permutation(by_main[m][s])) for s in sorted(by_main[m])]
        subs.sort(key=len, reverse=True)
        order: list[str] = []
        while any(subs):
            for s in subs:
                order += [str(k) for k in s[:2]]
                del s[:2]
        queues.append(order)
    chosen: list[str] = []
    while len(chosen) < min(n_types, len(TYPES)):
        for q in queues:
            chosen += q[:3]
            del q[:3]
    return chosen[:n_types]


def plan_corpus(patents: int, seed: int = 0, n_types: int | None = None) -> list[PatentPlan]:
    """Decide types, families, dates, ids, views, styles, splits and citations of ``patents`` patents."""
    if patents < 1:
        raise ValueError(f"patents must be at least 1, got {patents}")
    rng = np.random.default_rng([seed, 0])
    if n_types is None:
        n_types = min(len(TYPES), max(6, patents // 12))
    types = choose_types(n_types, rng)
    members: list[dict] = []
    fam = 0
    while len(members) < patents:
        key = types[fam % len(types)] if fam < len(types) else types[int(rng.integers(len(types)))]
        size = int(rng.choice([1, 2, 3, 4], p=[0.55, 0.27, 0.12, 0.06]))
        day = int(rng.integers(0, 22 * 365))
        fseed = int(rng.integers(2**31))
        for k in range(min(size, patents - len(members))):
            members.append(
                {"type": key, "family": f"F{fam:05d}", "variant": k, "family_seed": fseed, "day": day}
            )
            day += int(rng.integers(30, 400))
        fam += 1
    for m in members:
        m["seed"] = int(rng.integers(2**31))
        m["views"] = _views(rng)
        m["style"] = {
            "line": round(float(rng.uniform(1.3, 2.0)), 2),
            "shading": bool(rng.random() < 0.75),
            "label": bool(rng.random() < 0.5),
            "azimuth": round(float(rng.uniform(25, 50)), 1),
            "elevation": round(float(rng.uniform(16, 32)), 1),
        }
    members.sort(key=lambda m: (m["day"], m["family"], m["variant"]))
    plans = [
        PatentPlan(
            id=f"XD{i + 1:06d}",
            type=m["type"],
            family=m["family"],
            variant=m["variant"],
            family_seed=m["family_seed"],
            seed=m["seed"],
            date=(_EPOCH + dt.timedelta(days=m["day"])).isoformat(),
            views=m["views"],
            style=m["style"],
        )
        for i, m in enumerate(members)
    ]
    _assign_splits(plans, rng)
    _assign_citations(plans, rng)
    return plans


def _views(rng: np.random.Generator) -> list[str]:
    """4 to 8 views: a front perspective first, then standard views in USPTO order, maybe a rear perspective."""
    n = int(rng.integers(4, 9))
    rear_persp = n == 8 or (n >= 5 and rng.random() < 0.3)
    n_ortho = n - 1 - int(rear_persp)
    keep = ["front"] + sorted(
        rng.choice(ORTHO_ORDER[1:], n_ortho - 1, replace=False).tolist(), key=ORTHO_ORDER.index
    )
    return ["perspective", *keep] + (["rear_perspective"] if rear_persp else [])


def _assign_splits(plans: list[PatentPlan], rng: np.random.Generator) -> None:
    """Families go whole to one split, stratified by type (a type with one family stays in train)."""
    fams_by_type: dict[str, list[str]] = defaultdict(list)
    for p in plans:
        if p.family not in fams_by_type[p.type]:
            fams_by_type[p.type].append(p.family)
    split_of: dict[str, str] = {}
    for key in sorted(fams_by_type):
        fams = [str(f) for f in rng.permutation(sorted(fams_by_type[key]))]
        n = len(fams)
        n_test = max(1, round(n * SPLIT_FRACTIONS["test"])) if n >= 3 else 0
        n_val = max(1, round(n * SPLIT_FRACTIONS["val"])) if n >= 3 else 0
        for i, f in enumerate(fams):
            split_of[f] = "test" if i < n_test else ("val" if i < n_test + n_val else "train")
    for p in plans:
        p.split = split_of[p.family]


def _assign_citations(plans: list[PatentPlan], rng: np.random.Generator) -> None:
    """Earlier family members, and up to three earlier same-type patents of other families."""
    earlier_by_type: dict[str, list[PatentPlan]] = defaultdict(list)
    earlier_by_family: dict[str, list[str]] = defaultdict(list)
    for p in plans:  # plans are in date order
        cites = list(earlier_by_family[p.family])
        others = [q for q in earlier_by_type[p.type] if q.family != p.family]
        if others:
            k = min(len(others), int(rng.integers(1, 4)))
            recent = others[-12:]
            picks = rng.choice(len(recent), min(k, len(recent)), replace=False)
            cites += [recent[int(i)].id for i in sorted(picks)]
        p.citations = cites
        earlier_by_family[p.family].append(p.id)
        earlier_by_type[p.type].append(p)


# -- rendering --------------------------------------------------------------------------------------
def design_for(plan: PatentPlan):
    """The design and parameters of one planned patent (variant 0 is the family's base design)."""
    design, params = make_design(plan.type, np.random.default_rng([plan.family_seed, 1]))
    if plan.variant > 0:
        design, params = make_design(
            plan.type, np.random.default_rng([plan.seed, 2]), base=params, jitter=FAMILY_JITTER
        )
    return design, params


def make_patent(plan: PatentPlan, root: Path, size: int) -> Patent:
    """Build, describe and draw one patent; writes its PNG files under ``root/images/<id>/``."""
    dtype = TYPES[plan.type]
    design, params = design_for(plan)
    rng = np.random.default_rng([plan.seed, 3])
    noun = dtype.noun
    title = text.title(dtype, rng)
    descs = text.figure_descriptions(plan.views, noun, rng, env=design.env)
    body = text.description(dtype, design, rng, noun) + " " + text.claim(noun)
    scene = build_scene(design.parts)
    style = Style(**plan.style)
    folder = root / "images" / plan.id
    folder.mkdir(parents=True, exist_ok=True)
    figures = []
    for i, view in enumerate(plan.views):
        label = f"FIG. {i + 1}"
        img = render_view(scene, view, size, style, label=label)
        rel = f"images/{plan.id}/{plan.id}_fig{i + 1}.png"
        img.save(root / rel, format="PNG", optimize=False, compress_level=6)
        figures.append(Figure(path=rel, view=view, label=label, description=descs[i]))
    extra = {
        "type": plan.type,
        "family": plan.family,
        "variant": plan.variant,
        "split": plan.split,
        "params": params,
    }
    if plan.split == "test":
        extra["query_figure"] = 0
    return Patent(
        id=plan.id,
        kind="design",
        title=title,
        text=body,
        codes={"locarno": [dtype.locarno]},
        date=plan.date,
        citations=list(plan.citations),
        figures=figures,
        extra=extra,
        filing_date=filing_date(plan),
        country="XX",
        kind_code="S1",
        claims=text.claim(noun),
    )


def filing_date(plan: PatentPlan) -> str:
    """A generated application date 6 to 30 months before publication (from the patent's seed), as
    design applications are examined; a family's variants each have their own."""
    lag = 180 + plan.seed % 730
    return (dt.date.fromisoformat(plan.date) - dt.timedelta(days=lag)).isoformat()


def _work(args: tuple[PatentPlan, str, int]) -> Patent:
    plan, root, size = args
    return make_patent(plan, Path(root), size)


def build_corpus(
    root: str | os.PathLike,
    patents: int = 1000,
    seed: int = 0,
    size: int = 256,
    workers: int = 2,
    n_types: int | None = None,
) -> Corpus:
    """Generate a corpus of ``patents`` design patents under ``root`` and save it (manifest, splits, qrels,
    ``protocol.json``, ``democorpus.json``). ``workers`` > 1 renders in a process pool."""
    root = Path(root)
    root.mkdir(parents=True, exist_ok=True)
    plans = plan_corpus(patents, seed, n_types)
    jobs = [(p, str(root), size) for p in plans]
    if workers > 1 and len(plans) > 1:
        with get_context("fork" if os.name == "posix" else "spawn").Pool(workers) as pool:
            records = list(pool.imap(_work, jobs, chunksize=max(1, min(16, len(jobs) // (workers * 8) or 1))))
    else:
        records = [_work(j) for j in jobs]
    splits = {s: [p.id for p in plans if p.split == s] for s in SPLIT_FRACTIONS}
    meta = {"source": "democorpus", "source_label": "generated demo corpus", "generated": True, "seed": seed}
    corpus = Corpus(
        root=root, patents=records, splits=splits, qrels=make_qrels(records), name="democorpus", meta=meta
    )
    corpus.save(root)
    queries, gallery = retrieval_protocol(corpus)
    protocol = {
        "queries": [f.path for _, f in queries],
        "gallery": [f.path for _, f in gallery],
        "definition": __doc__.split("* **Drawing")[1].strip(),
    }
    (root / PROTOCOL).write_text(json.dumps(protocol, indent=1) + "\n")
    info = {
        "version": VERSION,
        "patents": patents,
        "seed": seed,
        "size": size,
        "n_types": n_types,
        "types": sorted({p.type for p in plans}),
    }
    (root / BUILD_INFO).write_text(json.dumps(info, indent=1, sort_keys=True) + "\n")
    return corpus


def make_qrels(patents: list[Patent]) -> dict[str, dict[str, int]]:
    """Text qrels of the test patents: citations graded 2 (same family) or 1 (other cited patents)."""
    family = {p.id: p.extra["family"] for p in patents}
    qrels = {}
    for p in patents:
        if p.extra.get("split") == "test" and p.citations:
            qrels[p.id] = {c: 2 if family[c] == p.extra["family"] else 1 for c in p.citations}
    return qrels


def retrieval_protocol(
    corpus: Corpus, split: str = "test"
) -> tuple[list[tuple[Patent, Figure]], list[tuple[Patent, Figure]]]:
    """Drawing retrieval queries and gallery of one split: each patent's ``extra["query_figure"]`` (the
    first figure when absent) is a query, every other figure of the split is in the gallery."""
    queries, gallery = [], []
    for p in corpus.split(split):
        q = int(p.extra.get("query_figure", 0))
        for i, f in enumerate(p.figures):
            (queries if i == q else gallery).append((p, f))
    return queries, gallery


def ensure_demo_corpus(
    cache_dir: str | os.PathLike, patents: int = 1000, seed: int = 0, size: int = 256, workers: int = 2
) -> Corpus:
    """Load the demo corpus for these parameters from ``cache_dir``, building it there the first time."""
    cache_dir = Path(cache_dir)
    target = cache_dir / f"democorpus-v{VERSION}-n{patents}-s{seed}-{size}px"
    if not (target / BUILD_INFO).is_file():
        cache_dir.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(dir=cache_dir, prefix=f".{target.name}."))
        try:
            build_corpus(tmp, patents=patents, seed=seed, size=size, workers=workers)
            if (target / BUILD_INFO).is_file():  # built meanwhile by another process
                shutil.rmtree(tmp)
            else:
                if target.exists():
                    shutil.rmtree(target)
                os.replace(tmp, target)
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise
    return Corpus.load(target, validate=False, name="democorpus")
