"""Build a corpus directory from a raw collection: ``patent-demo corpus build`` calls :func:`build_corpus`.

The build streams the source (:mod:`patent_demo.data.sources`) one patent at a time and never writes
into it. For each patent it writes a browser-ready PNG thumbnail of every figure, then appends the
record to ``.build/items.jsonl``; a killed build started again with the same arguments skips every item
already there (resumable). At the end it writes, with normal file permissions::

    OUT/
      manifest.jsonl    one patent per line; figure paths relative to the image root
      splits.json       train/val/test drawn once by family (seeded), saved so every tool sees one test set
      qrels.txt         citation qrels (text sources with citation pairs)
      corpus.json       source, source label, image root, seed, split rule and the summary
      thumbs/           PNG thumbnails (longer side ``thumb_size``), cropped to the drawing's ink
      originals/        only for weekly archives: the drawings unpacked from their ZIPs

Families: patents joined by a family pair, by a shared parent application or parent grant
(continuations and divisions of grant XML), by listed family members or by an identical normalised
title + abstract (``patent_demo.data.families.text_key``) form one family; every
family lies whole in one split.
"""

from __future__ import annotations

import json
import os
import sys
import time
from collections import Counter
from collections.abc import Iterator
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from patent_demo.atomic import atomic_text
from patent_demo.data.corpus import (
    MANIFEST,
    META,
    QRELS,
    SPLITS,
    Figure,
    Patent,
    family_splits,
    format_qrels,
)
from patent_demo.data.families import family_refs, text_key
from patent_demo.data.sources import Item, Source, SourceError, open_source

STATE_DIR = ".build"
ITEMS = "items.jsonl"
PARAMS = "params.json"
THUMBS = "thumbs"
DEFAULT_THUMB = 384
FORMAT = 1


class BuildError(ValueError):
    """A build that cannot start or finish; the message says why and what to do."""


@dataclass
class BuildSummary:
    """What a build produced: counts, codes per scheme, and every skipped item with its reason."""

    source: str
    source_label: str
    layout: str
    out: str
    image_root: str
    patents: int = 0
    figures: int = 0
    thumbnails: int = 0
    codes: dict[str, dict[str, int]] = field(default_factory=dict)  # scheme -> {"patents", "codes"}
    splits: dict[str, int] = field(default_factory=dict)
    families: int = 0
    splits_file: str = ""  # the committed split file the splits came from ("": drawn by family)
    qrels_queries: int = 0
    skipped: list[tuple[str, str]] = field(default_factory=list)
    seconds: float = 0.0
    resumed_items: int = 0

    def to_dict(self) -> dict:
        d = dict(self.__dict__)
        d["skipped"] = [list(s) for s in self.skipped]
        return d

    @classmethod
    def from_dict(cls, d: dict) -> BuildSummary:
        d = dict(d)
        d["skipped"] = [tuple(s) for s in d.get("skipped", [])]
        return cls(**{k: v for k, v in d.items() if k in cls.__dataclass_fields__})

    def to_text(self) -> str:
        lines = [
            f"corpus {self.out}: {self.source_label} ({self.layout})",
            f"  patents   {self.patents:,}   figures {self.figures:,}   thumbnails {self.thumbnails:,}",
        ]
        for scheme, c in sorted(self.codes.items()):
            lines.append(f"  {scheme:9s} {c['codes']:,} distinct codes on {c['patents']:,} patents")
        if self.splits:
            order = sorted(self.splits, key=lambda k: (("train", "val", "test") + (k,)).index(k))
            parts = ", ".join(f"{k} {self.splits[k]}" for k in order)
            how = f"from {self.splits_file}" if self.splits_file else f"by family: {self.families:,} families"
            lines.append(f"  splits    {parts} ({how})")
        if self.qrels_queries:
            lines.append(f"  qrels     {self.qrels_queries:,} queries (citations)")
        if self.figures:
            lines.append(f"  images    read from {self.image_root}")
        if self.seconds:
            n, unit = (self.figures, "figures") if self.figures else (self.patents, "patents")
            resumed = f", {self.resumed_items:,} items from an earlier run" if self.resumed_items else ""
            lines.append(f"  time      {self.seconds:.1f} s ({n / self.seconds:.1f} {unit}/s{resumed})")
        reasons = Counter(r for _, r in self.skipped)
        lines.append(f"  skipped   {len(self.skipped):,}" + (":" if self.skipped else ""))
        for reason, n in reasons.most_common():
            keys = [k for k, r in self.skipped if r == reason]
            more = f" … (+{len(keys) - 3})" if len(keys) > 3 else ""
            lines.append(f"    {n:5d}  {reason}: {', '.join(keys[:3])}{more}")
        return "\n".join(lines)


# -- thumbnails ---------------------------------------------------------------------------------------------
def thumb_name(figure_path: str) -> str:
    """The thumbnail's path in the corpus for a figure path: ``thumbs/<path without suffix>.png``."""
    stem = figure_path.rsplit(".", 1)[0] if "." in figure_path.rsplit("/", 1)[-1] else figure_path
    return f"{THUMBS}/{stem.lstrip('./').replace('../', '')}.png"


def write_thumbnail(image: Path, target: Path, size: int = DEFAULT_THUMB) -> None:
    """A grayscale PNG of the drawing cropped to its ink, longer side ``size`` (kept when present)."""
    from patent_demo.imageio import load_drawing

    if target.is_file():
        return
    img = load_drawing(image, crop=True, square=False, size=size)
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    img.save(tmp, format="PNG", optimize=True)
    os.chmod(tmp, 0o644)
    os.replace(tmp, target)


BROWSER_FORMATS = (".png", ".jpg", ".jpeg", ".gif", ".webp")


def display_image(corpus, figure: Figure, cache: Path) -> Path:
    """A file a browser can show for ``figure``: its thumbnail, else the image itself when browsers read
    its format, else a PNG thumbnail written once under ``cache`` (TIFF pages of a hand-made corpus)."""
    from patent_demo.imageio import DrawingError

    if figure.thumb and (corpus.root / figure.thumb).is_file():
        return corpus.root / figure.thumb
    path = corpus.image_path(figure)
    if path.suffix.lower() in BROWSER_FORMATS:
        return path
    target = Path(cache) / thumb_name(figure.path)
    try:
        write_thumbnail(path, target)
    except (DrawingError, OSError):
        return path
    return target


def _process(args: tuple[dict, str, str, int]) -> tuple[dict | None, list[str]]:
    """Thumbnails for one patent (in a worker): the patent without unreadable figures, and problems."""
    from patent_demo.imageio import DrawingError

    row, image_root, out, size = args
    patent = Patent.from_dict(row)
    kept, problems = [], []
    for f in patent.figures:
        thumb = thumb_name(f.path)
        try:
            write_thumbnail(Path(image_root) / f.path, Path(out) / thumb, size)
        except (DrawingError, OSError) as err:
            problems.append(f"figure {f.path} unreadable ({err})")
            continue
        f.thumb = thumb
        kept.append(f)
    patent.figures = kept
    if not kept and row.get("figures"):
        return None, [*problems, "no readable figure"]
    return patent.to_dict(), problems


# -- state ------------------------------------------------------------------------------------------------------
def _read_items(path: Path) -> Iterator[dict]:
    """The records of ``items.jsonl``; a torn last line (a kill mid-write) is ignored."""
    if not path.is_file():
        return
    with open(path, encoding="utf-8") as fh:
        for line in fh:
            if not line.endswith("\n"):
                break
            try:
                yield json.loads(line)
            except json.JSONDecodeError:
                break


def _check_out(src: Path, out: Path) -> None:
    src, out = src.resolve(), out.resolve()
    if out == src or src in out.parents:
        raise BuildError(f"--out {out} lies inside the source {src}; the build never writes into its source")


class _Families:
    """Union-find over family keys (patent ids and shared references)."""

    def __init__(self) -> None:
        self.parent: dict[str, str] = {}

    def find(self, x: str) -> str:
        self.parent.setdefault(x, x)
        while self.parent[x] != x:
            self.parent[x] = self.parent[self.parent[x]]
            x = self.parent[x]
        return x

    def union(self, a: str, b: str) -> None:
        ra, rb = self.find(a), self.find(b)
        if ra != rb:
            self.parent[max(ra, rb)] = min(ra, rb)


def _family_refs(row: dict) -> list[str]:
    """The bibliographic references of a manifest row (``families.family_refs``) and its listed members."""
    extra = row.get("extra") or {}
    refs = family_refs(Patent(row["id"], extra=extra))
    return refs + [f"id:{m}" for m in extra.get("family_members") or [] if isinstance(m, str)]


# -- the build ----------------------------------------------------------------------------------------------------
def build_corpus(
    kind: str,
    src: str | os.PathLike,
    out: str | os.PathLike,
    *,
    images: str | os.PathLike | None = None,
    metadata: str | os.PathLike | None = None,
    scheme: str | None = None,
    seed: int = 0,
    fractions: tuple[float, float, float] = (0.7, 0.15, 0.15),
    thumb_size: int = DEFAULT_THUMB,
    workers: int = 1,
    progress: bool = True,
    restart: bool = False,
    splits_file: str | os.PathLike | None = None,
    limit: int | None = None,
) -> BuildSummary:
    """Build (or resume building) the corpus of source ``kind`` at ``src`` into ``out``; see the module
    docstring. ``limit`` keeps the first N patents of the source (a small real subset). Raises ``BuildError``/``SourceError`` (both ``ValueError``) with a one-line reason."""
    t0 = time.perf_counter()
    src, out = Path(src).resolve(), Path(out).resolve()
    if not src.exists():
        raise BuildError(f"source {src} does not exist")
    _check_out(src, out)
    state = out / STATE_DIR
    params = {
        "format": FORMAT,
        "source": kind,
        "src": str(src),
        "images": str(images or ""),
        "metadata": str(metadata or ""),
        "scheme": scheme or "",
        "thumb_size": thumb_size,
    }
    if limit is not None:
        params["limit"] = int(limit)
    if (state / PARAMS).is_file() and not restart:
        before = json.loads((state / PARAMS).read_text(encoding="utf-8"))
        if before != params:
            diff = sorted(k for k in params if before.get(k) != params[k])
            raise BuildError(
                f"{out} holds a build with other settings ({', '.join(diff)}); use another --out, "
                "or --restart to start over"
            )
    if restart and (state / ITEMS).is_file():
        (state / ITEMS).unlink()
    state.mkdir(parents=True, exist_ok=True)
    atomic_text(state / PARAMS, json.dumps(params, indent=1, sort_keys=True) + "\n")
    source = open_source(kind, src, out, images=images, metadata=metadata, scheme=scheme)
    done = {r["key"] for r in _read_items(state / ITEMS)}
    _stream(source, out, state / ITEMS, done, thumb_size, workers, progress, limit)
    summary = _finish(source, out, state / ITEMS, seed, fractions, thumb_size, src, splits_file)
    summary.resumed_items = len(done)
    summary.seconds = round(time.perf_counter() - t0, 2)
    meta = json.loads((out / META).read_text(encoding="utf-8"))
    meta["summary"] = summary.to_dict()
    atomic_text(out / META, json.dumps(meta, indent=1, sort_keys=True) + "\n")
    return summary


def _bar(total: int | None, progress: bool):
    if not progress:
        return None
    try:
        from tqdm.auto import tqdm
    except ImportError:
        return None
    return tqdm(total=total, desc="building corpus", unit="item", file=sys.stderr)


def _stream(
    source: Source,
    out: Path,
    items_path: Path,
    done: set[str],
    thumb_size: int,
    workers: int,
    progress: bool,
    limit: int | None = None,
) -> None:
    """Thumbnail and record every item not in ``done`` (up to the ``limit``-th patent of the source),
    appending to ``items_path`` as each finishes."""
    bar = _bar(source.total if limit is None else min(limit, source.total or limit), progress)
    patents = 0
    if bar is not None and done:
        bar.update(len(done))
    root = str(source.image_root)
    pool = ProcessPoolExecutor(workers) if workers > 1 else None
    pending: list = []
    with open(items_path, "a", encoding="utf-8") as fh:

        def write(item: Item, row: dict | None, problems: list[str]) -> None:
            rec = {"key": item.key, "patent": row, "skip": item.skip, "problems": problems}
            fh.write(json.dumps(rec, ensure_ascii=False, sort_keys=True) + "\n")
            fh.flush()
            if bar is not None:
                bar.update(1)

        try:
            for item in source.items():
                if limit is not None and item.patent is not None:
                    if patents >= limit:
                        break
                    patents += 1
                if item.key in done:
                    continue
                if item.patent is None:
                    write(item, None, [])
                    continue
                args = (item.patent.to_dict(), root, str(out), thumb_size)
                if pool is None:
                    row, problems = _process(args)
                    write(item, row, problems)
                    continue
                pending.append((item, pool.submit(_process, args)))
                while len(pending) >= 4 * workers or (pending and pending[0][1].done()):
                    it, fut = pending.pop(0)
                    write(it, *fut.result())
            for it, fut in pending:
                write(it, *fut.result())
        finally:
            if pool is not None:
                pool.shutdown(cancel_futures=True)
            if bar is not None:
                bar.close()


def _finish(
    source: Source,
    out: Path,
    items_path: Path,
    seed: int,
    fractions: tuple[float, float, float],
    thumb_size: int,
    src: Path,
    splits_file: str | os.PathLike | None = None,
) -> BuildSummary:
    """Write manifest, splits, qrels and corpus.json from ``items.jsonl`` (streamed, one pass). With
    ``splits_file`` (a committed split file, ``patent_demo.data.splits``) its splits are saved instead of
    drawing them by family; it must list every patent exactly once."""
    try:
        image_root = source.image_root.relative_to(out).as_posix()
    except ValueError:
        image_root = str(source.image_root)
    summary = BuildSummary(source.kind, source.label, source.layout, str(out), str(source.image_root))
    families = _Families()
    seen: set[str] = set()
    same_text: dict[str, list[str]] = {}
    code_patents: Counter = Counter()
    codes: dict[str, set[str]] = {}
    tmp = out / f".{MANIFEST}.tmp"
    with open(tmp, "w", encoding="utf-8") as fh:
        for rec in _read_items(items_path):
            for problem in rec.get("problems") or []:
                summary.skipped.append((rec["key"], problem))
            row = rec.get("patent")
            if row is None:
                if rec.get("skip"):
                    summary.skipped.append((rec["key"], rec["skip"]))
                continue
            pid = row["id"]
            if pid in seen:
                summary.skipped.append((rec["key"], f"duplicate id {pid}"))
                continue
            seen.add(pid)
            families.find(pid)
            key = text_key(Patent(pid, title=row.get("title") or "", text=row.get("text") or ""))
            if key:
                same_text.setdefault(key, []).append(pid)
            for ref in _family_refs(row):
                families.union(pid, ref if not ref.startswith("id:") else ref[3:])
            for scheme, cs in (row.get("codes") or {}).items():
                if cs:
                    code_patents[scheme] += 1
                    codes.setdefault(scheme, set()).update(cs)
            summary.patents += 1
            summary.figures += len(row.get("figures") or [])
            summary.thumbnails += sum(1 for f in row.get("figures") or [] if f.get("thumb"))
            fh.write(json.dumps(row, ensure_ascii=False, sort_keys=True) + "\n")
    os.chmod(tmp, 0o644)
    os.replace(tmp, out / MANIFEST)
    if not summary.patents:
        raise BuildError(
            f"no patent could be read from {src}; skipped: {Counter(r for _, r in summary.skipped)}"
        )
    for a, b in source.family_pairs:
        if a in seen and b in seen:
            families.union(a, b)
    for group in same_text.values():  # identical normalised title + abstract: continuations, one family
        for other in group[1:]:
            families.union(group[0], other)
    family_of = {pid: families.find(pid) for pid in seen}
    if splits_file:
        from patent_demo.data.splits import is_query_split, read_splits_file, with_query_splits

        raw = json.loads(Path(splits_file).read_text(encoding="utf-8"))
        queries_only = is_query_split(raw)
        try:
            if queries_only:  # the queries fixed by the file, the other families drawn
                splits = with_query_splits(
                    read_splits_file(splits_file), family_of, family_splits(family_of, fractions, seed)
                )
            else:
                splits = read_splits_file(splits_file, seen)
        except ValueError as e:
            raise BuildError(str(e) if str(splits_file) in str(e) else f"{splits_file}: {e}") from None
        split_rule = {
            "by": "file",
            "file": str(splits_file),
            "rule": raw.get("rule", ""),
            **(
                {"others": {"by": "family", "fractions": list(fractions), "seed": seed}}
                if queries_only
                else {}
            ),
        }
    else:
        splits = family_splits(family_of, fractions, seed)
        split_rule = {"by": "family", "fractions": list(fractions), "seed": seed}
    atomic_text(out / SPLITS, json.dumps(splits, indent=1, sort_keys=True) + "\n")
    qrels = {q: {d: r for d, r in ds.items() if d in seen} for q, ds in source.qrels.items() if q in seen}
    qrels = {q: ds for q, ds in qrels.items() if ds}
    if qrels:
        atomic_text(out / QRELS, format_qrels(qrels))
    elif (out / QRELS).is_file():
        (out / QRELS).unlink()
    summary.codes = {s: {"patents": code_patents[s], "codes": len(c)} for s, c in sorted(codes.items())}
    summary.splits = {k: len(v) for k, v in splits.items()}
    summary.families = len(set(family_of.values()))
    summary.splits_file = str(splits_file or "")
    summary.qrels_queries = len(qrels)
    meta = {
        "format": FORMAT,
        "source": source.kind,
        "source_label": source.label,
        "source_path": str(src),
        "layout": source.layout,
        "image_root": image_root,
        "generated": False,
        "thumb_size": thumb_size,
        "seed": seed,
        "splits": split_rule,
        "built": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
    atomic_text(out / META, json.dumps(meta, indent=1, sort_keys=True) + "\n")
    return summary


def corpus_summary(root: str | os.PathLike) -> BuildSummary:
    """The summary of an existing corpus: the one its build recorded, with counts taken afresh from the
    manifest (so a corpus edited or saved by hand is described as it is)."""
    from patent_demo.data.corpus import Corpus

    corpus = Corpus.load(root, validate=False)
    meta = corpus.meta
    s = BuildSummary.from_dict(meta["summary"]) if meta.get("summary") else None
    if s is None:
        label = "generated demo corpus" if meta.get("generated") else (meta.get("source_label") or "manifest")
        s = BuildSummary(
            meta.get("source", "manifest"),
            label,
            meta.get("layout", ""),
            str(corpus.root),
            str(corpus.image_root),
        )
    s.out = str(Path(root).resolve())
    s.patents = len(corpus.patents)
    s.figures = sum(len(p.figures) for p in corpus.patents)
    s.thumbnails = sum(1 for p in corpus.patents for f in p.figures if f.thumb)
    counts: dict[str, set[str]] = {}
    with_codes: Counter = Counter()
    for p in corpus.patents:
        for scheme, cs in p.codes.items():
            if cs:
                with_codes[scheme] += 1
                counts.setdefault(scheme, set()).update(cs)
    s.codes = {k: {"patents": with_codes[k], "codes": len(v)} for k, v in sorted(counts.items())}
    s.splits = {k: len(v) for k, v in corpus.splits.items()}
    s.qrels_queries = len(corpus.qrels)
    return s


__all__ = [
    "BuildError",
    "BuildSummary",
    "SourceError",
    "build_corpus",
    "corpus_summary",
    "thumb_name",
    "write_thumbnail",
]
