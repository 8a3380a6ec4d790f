"""Patent and figure records, and a corpus stored as a JSONL manifest beside its images.

On disk a corpus is a directory::

    root/
      manifest.jsonl     one JSON object per patent (see ``Patent.to_dict``)
      splits.json        optional: {"train": [ids], "val": [ids], "test": [ids]}
      qrels.txt          optional: TREC qrels for the text task ("qid 0 docid rel")
      corpus.json        optional: where the corpus came from (``patent-demo corpus build`` writes it):
                         {"source", "source_label", "image_root", "generated", "splits", "summary", ...}
      thumbs/            optional: browser-ready PNG thumbnails (``Figure.thumb``)
      <images>           under root, or under ``image_root`` when corpus.json names one

Figure paths are relative to the image root: ``corpus.json``'s ``image_root`` (absolute, or relative
to the corpus directory), else the corpus directory itself, so a corpus can describe a read-only
collection without copying it.

Images are never opened when a corpus is loaded; ``Corpus.open_image`` reads one on demand.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path

from patent_demo.atomic import atomic_text

MANIFEST = "manifest.jsonl"
SPLITS = "splits.json"
QRELS = "qrels.txt"
META = "corpus.json"
KINDS = ("design", "utility")
SCHEMES = ("locarno", "ipc", "cpc", "uspc")


class CorpusError(ValueError):
    """A corpus that cannot be loaded or fails validation; the message names the record and the fix."""


@dataclass
class Figure:
    """One drawing of a patent: ``path`` is relative to the image root; ``view`` a view label
    such as ``"front"``, ``"perspective"`` or ``"page"``; ``label`` the printed label (``"FIG. 3"``);
    ``thumb`` a browser-ready PNG thumbnail relative to the corpus directory (``""``: none)."""

    path: str
    view: str = ""
    label: str = ""
    description: str = ""
    thumb: str = ""


@dataclass
class Patent:
    """A patent record.

    ``codes`` maps a scheme (``locarno``, ``ipc``, ``cpc``, ``uspc``) to its codes in normalised form
    (``"06-01"``, ``"A47C 7/02"``). ``text`` holds the abstract of a utility patent or the description
    of a design patent. ``citations`` lists cited patent ids.

    Dates are ISO ``YYYY-MM-DD`` or ``""``: ``date`` is the publication (grant) date, ``filing_date``
    the application date, ``priority_date`` the earliest claimed priority. ``country`` is the
    publishing office (``"US"``, ``"EP"``; by default the letters the id starts with), ``kind_code``
    the document kind (``"S1"`` design, ``"B2"`` granted utility), ``claims`` the claim text.
    ``inventors``, ``applicants`` and ``assignees`` are the names on the grant (a person as
    ``"First Last"``, an organisation by its name).
    Manifests written before these fields existed load with the defaults.
    """

    id: str
    kind: str = "design"
    title: str = ""
    text: str = ""
    codes: dict[str, list[str]] = field(default_factory=dict)
    date: str = ""
    citations: list[str] = field(default_factory=list)
    figures: list[Figure] = field(default_factory=list)
    extra: dict = field(default_factory=dict)
    filing_date: str = ""
    priority_date: str = ""
    country: str = ""
    kind_code: str = ""
    claims: str = ""
    inventors: list[str] = field(default_factory=list)
    applicants: list[str] = field(default_factory=list)
    assignees: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        if not self.country:
            self.country = country_of(self.id)

    # -- convenience views of the classification -------------------------------------------
    @property
    def locarno(self) -> str:
        """The first Locarno subclass (``"06-01"``), or ``""``."""
        codes = self.codes.get("locarno") or []
        return codes[0] if codes else ""

    @property
    def locarno_main(self) -> str:
        """The Locarno main class (``"06"``), or ``""``."""
        return self.locarno[:2]

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, row: dict) -> Patent:
        if not isinstance(row, dict):
            raise CorpusError(f"a patent record is a JSON object, got {type(row).__name__}")
        row = dict(row)
        unknown = set(row) - {f for f in cls.__dataclass_fields__}
        if unknown:
            raise CorpusError(f"patent {row.get('id', '?')!r}: unknown field(s) {sorted(unknown)}")
        figures = []
        for f in row.pop("figures", []):
            bad = set(f) - set(Figure.__dataclass_fields__) if isinstance(f, dict) else {"<not an object>"}
            if bad:
                raise CorpusError(
                    f"patent {row.get('id', '?')!r}: figure with unknown field(s) {sorted(bad)}"
                )
            figures.append(Figure(**f))
        return cls(**row, figures=figures)


@dataclass
class Corpus:
    """A list of patents plus the directory their figure paths are relative to."""

    root: Path
    patents: list[Patent]
    splits: dict[str, list[str]] = field(default_factory=dict)
    qrels: dict[str, dict[str, int]] = field(default_factory=dict)
    name: str = ""
    meta: dict = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.root = Path(self.root)
        self._by_id: dict[str, Patent] | None = None
        self._derived: dict[str, object] = {}

    @property
    def image_root(self) -> Path:
        """The folder figure paths are relative to (``meta["image_root"]``, else ``root``)."""
        where = self.meta.get("image_root")
        return self.root / where if where else self.root  # an absolute image_root replaces root

    @property
    def location(self) -> str:
        """Where the images lie, for cache keys: the image root's absolute path, or ``""`` when the corpus
        holds its images under its own folder (self-contained: a copy of it keeps its cached indexes)."""
        root, images = self.root.resolve(), self.image_root.resolve()
        return "" if images == root or root in images.parents else str(images)

    @property
    def source_label(self) -> str:
        """Where the corpus comes from, for people: ``"USPTO Red Book"``, ``"generated demo corpus"``…"""
        return str(self.meta.get("source_label") or "")

    # -- access -------------------------------------------------------------------------------
    def __len__(self) -> int:
        return len(self.patents)

    def __iter__(self) -> Iterator[Patent]:
        return iter(self.patents)

    def __getitem__(self, patent_id: str) -> Patent:
        if self._by_id is None or len(self._by_id) != len(self.patents):
            self._by_id = {p.id: p for p in self.patents}
        try:
            return self._by_id[patent_id]
        except KeyError:
            raise KeyError(f"no patent {patent_id!r} in corpus {self.name or self.root}") from None

    def __contains__(self, patent_id: str) -> bool:
        try:
            self[patent_id]
        except KeyError:
            return False
        return True

    def derived(self, name: str, build: Callable[[], object]):
        """The table ``name`` derived from this corpus alone (its families, number and title lookups, the
        boolean-syntax index), made by ``build`` on first use and kept with the corpus: the one cache the
        modules that read a corpus keep on it."""
        if name not in self._derived:
            self._derived[name] = build()
        return self._derived[name]

    def figures(self) -> list[tuple[Patent, Figure]]:
        """Every (patent, figure) pair in manifest order."""
        return [(p, f) for p in self.patents for f in p.figures]

    def image_path(self, figure: Figure) -> Path:
        return self.image_root / figure.path

    def thumb_path(self, figure: Figure) -> Path:
        """The figure's browser-ready thumbnail, or its image when the corpus has no thumbnails."""
        return self.root / figure.thumb if figure.thumb else self.image_path(figure)

    def open_image(self, figure: Figure, **kwargs):
        """Read one figure as an 8-bit grayscale PIL image (see ``patent_demo.imageio.load_drawing``)."""
        from patent_demo.imageio import CORPUS_FORMATS, load_drawing

        return load_drawing(self.image_path(figure), **{"formats": CORPUS_FORMATS, **kwargs})

    def split(self, name: str) -> list[Patent]:
        """The patents of one split, in manifest order."""
        if name not in self.splits:
            raise CorpusError(
                f"corpus {self.name or self.root} has no split {name!r}; it has {sorted(self.splits)}"
            )
        ids = set(self.splits[name])
        return [p for p in self.patents if p.id in ids]

    def ensure_splits(
        self, fractions: tuple[float, float, float] = (0.7, 0.15, 0.15), seed: int = 0
    ) -> Corpus:
        """Give a corpus without ``splits`` a deterministic train/val/test split by patent (in place).

        Patents are ordered by a hash of (seed, id), so the split does not depend on manifest order and
        adding patents later moves none of the existing ones between splits. Returns ``self``.
        """
        if self.splits:
            return self
        self.splits = family_splits({p.id: p.id for p in self.patents}, fractions, seed)
        return self

    # -- validation ---------------------------------------------------------------------------
    def validate(self, check_images: bool = True) -> None:
        """Raise ``CorpusError`` on a duplicate id, an unknown kind, a malformed code or a missing image."""
        from patent_demo import taxonomy

        seen: set[str] = set()
        for p in self.patents:
            if not p.id:
                raise CorpusError("a patent has an empty id")
            if p.id in seen:
                raise CorpusError(f"duplicate patent id {p.id!r}")
            seen.add(p.id)
            if p.kind not in KINDS:
                raise CorpusError(f"patent {p.id!r}: kind {p.kind!r} is not one of {KINDS}")
            for scheme, codes in p.codes.items():
                if scheme not in SCHEMES:
                    raise CorpusError(
                        f"patent {p.id!r}: unknown classification scheme {scheme!r}; use one of {SCHEMES}"
                    )
                for code in codes:
                    try:
                        taxonomy.parse(scheme, code)
                    except ValueError as err:
                        raise CorpusError(f"patent {p.id!r}: bad {scheme} code: {err}") from None
            if check_images:
                for f in p.figures:
                    if not self.image_path(f).is_file():
                        raise CorpusError(f"patent {p.id!r}: image {f.path!r} not found under {self.root}")
        for split, ids in self.splits.items():
            missing = [i for i in ids if i not in seen]
            if missing:
                raise CorpusError(
                    f"split {split!r} names {len(missing)} unknown patent id(s), e.g. {missing[0]!r}"
                )

    # -- persistence --------------------------------------------------------------------------
    def save(self, root: str | os.PathLike | None = None) -> Path:
        """Write manifest (and splits/qrels when present) under ``root`` (default: ``self.root``).

        Images are not copied: figure paths must already be relative to the image root (``root``, or
        ``meta["image_root"]``, written to corpus.json). Writes are atomic, with normal permissions.
        """
        root = Path(root) if root is not None else self.root
        root.mkdir(parents=True, exist_ok=True)
        lines = "".join(
            json.dumps(p.to_dict(), ensure_ascii=False, sort_keys=True) + "\n" for p in self.patents
        )
        atomic_text(root / MANIFEST, lines)
        if self.splits:
            atomic_text(root / SPLITS, json.dumps(self.splits, indent=1, sort_keys=True) + "\n")
        if self.qrels:
            atomic_text(root / QRELS, format_qrels(self.qrels))
        if self.meta:
            atomic_text(root / META, json.dumps(self.meta, indent=1, sort_keys=True) + "\n")
        return root

    @classmethod
    def load(cls, root: str | os.PathLike, validate: bool = True, name: str = "") -> Corpus:
        root = Path(root)
        manifest = root / MANIFEST
        if not manifest.is_file():
            raise CorpusError(not_a_corpus_message(root))
        patents = []
        with open(manifest, encoding="utf-8") as fh:
            for lineno, line in enumerate(fh, 1):
                if not line.strip():
                    continue
                try:
                    patents.append(Patent.from_dict(json.loads(line)))
                except (json.JSONDecodeError, TypeError) as err:
                    raise CorpusError(f"{manifest}:{lineno}: not a patent record ({err})") from None
                except CorpusError as err:
                    raise CorpusError(f"{manifest}:{lineno}: {err}") from None
        splits = json.loads((root / SPLITS).read_text()) if (root / SPLITS).is_file() else {}
        qrels = read_qrels(root / QRELS) if (root / QRELS).is_file() else {}
        meta = json.loads((root / META).read_text(encoding="utf-8")) if (root / META).is_file() else {}
        corpus = cls(
            root=root, patents=patents, splits=splits, qrels=qrels, name=name or root.name, meta=meta
        )
        if validate:
            corpus.validate()
        return corpus


_ID_COUNTRY = re.compile(r"^([A-Z]{2})(?=[A-Z]*\d)")
_ID_KIND = re.compile(r"\d([A-Z]\d?)$")


def country_of(patent_id: str) -> str:
    """The office a patent id names by its two leading letters (``"USD0907292"`` → ``"US"``,
    ``"EP0049154B2"`` → ``"EP"``), or ``""`` when the id does not start with two letters and a number."""
    m = _ID_COUNTRY.match(patent_id or "")
    return m.group(1) if m else ""


def kind_code_of(patent_id: str) -> str:
    """The kind code an id ends with (``"EP0049154B2"`` → ``"B2"``, ``"WO1984000705A1"`` → ``"A1"``),
    or ``""`` (``"US4382867"``)."""
    m = _ID_KIND.search(patent_id or "")
    return m.group(1) if m else ""


def not_a_corpus_message(root: str | os.PathLike) -> str:
    """One line for a folder that is not a built corpus, naming the command that builds one from it."""
    root = Path(root)
    hint = "SRC"
    if root.is_dir():
        names = [p.name for p in root.iterdir()][:200]
        sources = {
            "redbook": any(re.search(r"(\.tar|\.zip|\.xml)$", n, re.I) or n.startswith("US") for n in names),
            "text": any(n.endswith(".jsonl") for n in names),
            "images": any(re.search(r"\.(csv|tsv|txt)$", n, re.I) for n in names),
        }
        kind = next((k for k, v in sources.items() if v), "images")
        hint = f"--source {kind} {root}"
    else:
        hint = f"--source redbook|deeppatent2|images|text {root}"
    return (
        f"{root} is not a built corpus ({MANIFEST} not found): build one with "
        f"`patent-demo corpus build {hint} --out CORPUS_DIR`"
    )


def family_splits(
    family_of: dict[str, str], fractions: tuple[float, float, float] = (0.7, 0.15, 0.15), seed: int = 0
) -> dict[str, list[str]]:
    """Train/val/test ids drawn by family: ``family_of`` maps each patent id to its family key, and a
    family goes whole into one split.

    Families are ordered by a hash of (seed, family key) and cut where the patent count passes the
    cumulative fractions, so the split does not depend on input order, the split sizes follow the
    fractions, and adding patents later moves only families near the cut points.
    """
    if len(fractions) != 3 or any(f < 0 for f in fractions) or abs(sum(fractions) - 1.0) > 1e-9:
        raise CorpusError(f"split fractions must be three non-negative numbers summing to 1, got {fractions}")
    import hashlib

    members: dict[str, list[str]] = {}
    for pid, fam in family_of.items():
        members.setdefault(fam, []).append(pid)
    ranked = sorted(members, key=lambda f: hashlib.sha1(f"{seed}:{f}".encode()).hexdigest())
    n = len(family_of)
    bounds = (round(fractions[0] * n), round((fractions[0] + fractions[1]) * n))
    out: dict[str, list[str]] = {"train": [], "val": [], "test": []}
    done = 0
    for fam in ranked:
        name = "train" if done < bounds[0] else "val" if done < bounds[1] else "test"
        out[name] += members[fam]
        done += len(members[fam])
    return {k: sorted(v) for k, v in out.items()}


# -- JSON lines ---------------------------------------------------------------------------------
def iter_jsonl(path: str | os.PathLike, what: str = "row") -> Iterator[tuple[int, dict]]:
    """``(line number, object)`` for each non-empty line of a JSONL file; a line that is not a JSON
    object raises ``CorpusError`` naming ``file:line`` (``what`` names the expected record)."""
    with open(path, encoding="utf-8") as fh:
        for lineno, line in enumerate(fh, 1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except json.JSONDecodeError as err:
                raise CorpusError(f"{path}:{lineno}: not JSON ({err.msg})") from None
            if not isinstance(row, dict):
                raise CorpusError(f"{path}:{lineno}: a {what} is a JSON object, got {type(row).__name__}")
            yield lineno, row


# -- TREC qrels ---------------------------------------------------------------------------------
def read_qrels(path: str | os.PathLike) -> dict[str, dict[str, int]]:
    """Read TREC qrels (``qid iter docid rel``; tabs or spaces) into {qid: {docid: rel}}."""
    qrels: dict[str, dict[str, int]] = {}
    with open(path, encoding="utf-8") as fh:
        for lineno, line in enumerate(fh, 1):
            parts = line.split()
            if not parts:
                continue
            if len(parts) != 4:
                raise CorpusError(
                    f"{path}:{lineno}: a qrels line has 4 fields (qid iter docid rel), got {len(parts)}"
                )
            qid, _, docid, rel = parts
            try:
                qrels.setdefault(qid, {})[docid] = int(rel)
            except ValueError:
                raise CorpusError(f"{path}:{lineno}: relevance {rel!r} is not an integer") from None
    return qrels


def format_qrels(qrels: dict[str, dict[str, int]]) -> str:
    return "".join(f"{q} 0 {d} {r}\n" for q in sorted(qrels) for d, r in sorted(qrels[q].items()))


def merge(corpora: Iterable[Corpus], root: str | os.PathLike, name: str = "") -> Corpus:
    """Concatenate corpora that share one root; duplicate ids are reported by ``validate``."""
    patents = [p for c in corpora for p in c.patents]
    return Corpus(root=Path(root), patents=patents, name=name)
