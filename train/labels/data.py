"""Examiner labels (the app's exports) turned into training material, with the test-split leak guard.

* :func:`read_rows`: the JSONL rows of ``LabelStore.export_hmcl`` / ``export_dssdnet``.
* :func:`guard_hmcl_rows` / :func:`guard_dssdnet_rows`: keep labels on test-split queries out of
  training. A drawing query is held out when its patent (``anchor.patent_id``, recorded by the app when
  the uploaded file is a corpus figure) is in the test split or its bytes hash to a test-split figure;
  a text query when its patent is in the test split or its text is (contained in) a test patent's
  text. Judged candidates from test-split patents are dropped too (they are the test gallery).
* :class:`LabelTraining`: the kept HMCL rows as extra training items for ``train.hmcl``: each
  labelled query is a *group* (its query drawing plus judged figures from the corpus); the judgements
  become patent-pair overrides of the HMCL relevance matrix (Eq. 2): ``h = s_rel`` (grade 2) or
  ``s_partly`` (grade 1) for judged-relevant pairs, and a ``negative_mask`` entry for pairs judged not
  relevant, so such a pair is never a positive, not even through a shared subclass.
* :class:`LabelBatches`: adds ``G`` label groups to every step's batch of
  ``patent_demo.drawing.sampler.StepBatches``, deterministically from ``(seed, step)`` so runs reproduce
  and resume exactly.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch

from patent_demo.data.corpus import Corpus, CorpusError, Figure, Patent, iter_jsonl
from patent_demo.digests import file_sha256
from patent_demo.drawing.sampler import step_seed

GRADE_RELEVANT, GRADE_PARTLY = 2, 1
MIN_CONTAINED_CHARS = 40  # a text query at least this long found inside a test patent's text is a leak


def read_rows(path: str | os.PathLike, modality: str | None = None) -> list[dict]:
    """The JSON objects of a JSONL export, one per non-empty line; a bad line raises ``CorpusError``.

    With ``modality`` (``"drawing"`` for HMCL rows, ``"text"`` for DSSDNet rows) a row that declares
    another modality raises ``CorpusError``: a model trains only on judgements of what it ranks."""
    rows = []
    for where, row in iter_jsonl(path, "label row"):
        found = row.get("modality")
        if modality is not None and found is not None and found != modality:
            raise CorpusError(
                f"{path}:{where}: label row {row.get('query_id')!r} holds {found} judgements, not {modality} ones: "
                "export the labels again"
            )
        rows.append(row)
    return rows


def _norm(text: str) -> str:
    return " ".join(str(text).split()).lower()


@dataclass
class GuardStats:
    """What the leak guard kept and held out (``pairs`` are judged (query, candidate) pairs)."""

    rows: int = 0
    queries_used: int = 0
    queries_held_out: int = 0
    pairs_used: int = 0
    pairs_held_out: int = 0  # judged pairs of held-out queries
    candidates_held_out: int = 0  # judged pairs of kept queries whose candidate is a test-split patent
    held_out_query_ids: list[str] = field(default_factory=list)
    allowed_test: bool = False

    def to_dict(self) -> dict:
        return dict(self.__dict__)


class TestSplit:
    """The patents, figure hashes and texts of one split, to recognise test queries and candidates."""

    def __init__(self, corpus: Corpus, split: str = "test") -> None:
        self.split = split
        self.patents = set(corpus.splits.get(split, []))
        members = [corpus[p] for p in sorted(self.patents) if p in corpus]
        self.figure_hashes = {file_sha256(corpus.image_path(f)) for p in members for f in p.figures}
        self.texts = [_norm(f"{p.title}. {p.text}") for p in members] + [_norm(p.text) for p in members]

    def image_query(self, patent_id: str, sha256: str) -> bool:
        return bool(patent_id and patent_id in self.patents) or bool(sha256 and sha256 in self.figure_hashes)

    def text_query(self, patent_id: str, text: str) -> bool:
        if patent_id and patent_id in self.patents:
            return True
        q = _norm(text)
        if not q:
            return False
        return any(q == t or (len(q) >= MIN_CONTAINED_CHARS and q in t) for t in self.texts)


def _guard(rows, is_test, items_of, allow_test: bool, split: TestSplit) -> tuple[list[dict], GuardStats]:
    stats = GuardStats(rows=len(rows), allowed_test=allow_test)
    kept = []
    for row in rows:
        keys = items_of(row)
        n = sum(len(row.get(k) or []) for k in keys)
        if not allow_test and is_test(row):
            stats.queries_held_out += 1
            stats.pairs_held_out += n
            stats.held_out_query_ids.append(str(row.get("query_id", "")))
            continue
        row = dict(row)
        if not allow_test:
            for k in keys:
                items = row.get(k) or []
                row[k] = [it for it in items if _candidate(it) not in split.patents]
                stats.candidates_held_out += len(items) - len(row[k])
        used = sum(len(row.get(k) or []) for k in keys)
        if used:
            stats.queries_used += 1
            stats.pairs_used += used
            kept.append(row)
    return kept, stats


def _candidate(item: dict) -> str:
    return str(item.get("patent_id") or item.get("id") or "")


def guard_hmcl_rows(
    rows: Sequence[dict], corpus: Corpus, split: str = "test", allow_test: bool = False
) -> tuple[list[dict], GuardStats]:
    """Drawing-label rows without test-split queries and candidates (unless ``allow_test``)."""
    ts = TestSplit(corpus, split)

    def is_test(row: dict) -> bool:
        a = row.get("anchor") or {}
        return ts.image_query(str(a.get("patent_id") or ""), str(a.get("image_sha256") or ""))

    return _guard(rows, is_test, lambda r: ("positives", "hard_negatives"), allow_test, ts)


def guard_dssdnet_rows(
    rows: Sequence[dict], corpus: Corpus, split: str = "test", allow_test: bool = False
) -> tuple[list[dict], GuardStats]:
    """Text-label rows without test-split queries and candidates (unless ``allow_test``)."""
    ts = TestSplit(corpus, split)

    def is_test(row: dict) -> bool:
        return ts.text_query(str(row.get("query_patent_id") or ""), str(row.get("query") or ""))

    return _guard(rows, is_test, lambda r: ("pos", "neg"), allow_test, ts)


def write_rows(path: str | os.PathLike, rows: Iterable[dict]) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text("".join(json.dumps(r, ensure_ascii=False, sort_keys=True) + "\n" for r in rows), "utf-8")
    os.replace(tmp, path)
    return path


# ----------------------------------------------------------------------------------------------
# HMCL training material


@dataclass
class LabelGroup:
    """One labelled drawing query as figure indices of the extended figure list."""

    query_id: str
    anchor: int
    positives: list[int]
    negatives: list[int]


class LabelTraining:
    """Label groups appended to the training figures, and the patent-pair overrides they imply.

    ``figures``/``fig_patent`` are the training figures and their patent index (``0..P-1`` for the
    ``P`` training patents); this extends both: judged candidate figures of non-training patents and
    every query drawing become extra figures, new patents get indices ``P, P+1, ...``. A query drawing
    belongs to its corpus patent when the app recorded one (``anchor.patent_id``), else to a patent of
    its own with unknown classes. ``patents[i]`` is the ``Patent`` of index ``i`` (None for such
    anonymous query patents).

    Overrides (symmetric, patent level, so they hold in every batch): a judged-relevant pair gets
    ``h = weights[grade]``; a pair judged not relevant is masked (``negative_mask``), which wins over
    any positive judgement of the same pair. Judgements of a query's own patent are ignored.
    """

    def __init__(
        self,
        rows: Sequence[dict],
        corpus: Corpus,
        root: str | os.PathLike,
        train_patents: Sequence[Patent],
        figures: list[Figure],
        fig_patent: list[int],
        weights: dict[int, float],
    ) -> None:
        self.root = Path(root)
        self.patents: list[Patent | None] = list(train_patents)
        self.figures, self.fig_patent = figures, fig_patent
        self.weights = dict(weights)
        self._pindex = {p.id: i for i, p in enumerate(train_patents)}
        self._findex = {(fig_patent[i], f.path): i for i, f in enumerate(figures)}
        self.positive: dict[tuple[int, int], float] = {}
        self.negative: set[tuple[int, int]] = set()
        self.groups: list[LabelGroup] = []
        self.ignored = 0
        for row in rows:
            self._add_row(row, corpus)
        for a, b in self.negative:
            self.positive.pop((a, b), None)

    def _patent(self, corpus: Corpus, pid: str) -> int:
        if pid not in self._pindex:
            if pid not in corpus:
                raise CorpusError(f"labelled candidate {pid!r} is not in corpus {corpus.name or corpus.root}")
            self._pindex[pid] = len(self.patents)
            self.patents.append(corpus[pid])
        return self._pindex[pid]

    def _figure(self, p: int, fig: Figure) -> int:
        key = (p, fig.path)
        if key not in self._findex:
            self._findex[key] = len(self.figures)
            self.figures.append(fig)
            self.fig_patent.append(p)
        return self._findex[key]

    def _candidate_figure(self, corpus: Corpus, item: dict) -> int:
        p = self._patent(corpus, str(item["patent_id"]))
        patent = self.patents[p]
        path = str(item.get("figure") or "")
        fig = next((f for f in patent.figures if f.path == path), None) if path else None
        if fig is None:  # a text-list hit: the patent's query view, else its first figure
            if not patent.figures:
                raise CorpusError(f"labelled candidate {patent.id!r} has no figures")
            fig = patent.figures[min(int(patent.extra.get("query_figure", 0)), len(patent.figures) - 1)]
        return self._figure(p, fig)

    def _add_row(self, row: dict, corpus: Corpus) -> None:
        anchor = row.get("anchor") or {}
        rel = str(anchor.get("image_file") or "")
        if not rel:
            raise CorpusError(f"label row {row.get('query_id')!r} has no anchor image_file")
        path = (self.root / rel).resolve()
        if not path.is_file():
            raise CorpusError(
                f"query drawing {path} of label row {row.get('query_id')!r} not found: pass --labels-root, "
                f"the folder of the label database (image_file is relative to it)"
            )
        pid = str(anchor.get("patent_id") or "")
        if pid and pid in corpus:
            a = self._patent(corpus, pid)
        else:
            a = len(self.patents)
            self.patents.append(None)
        anchor_fig = self._figure(a, Figure(str(path), view="query"))
        group = LabelGroup(str(row.get("query_id", "")), anchor_fig, [], [])
        for item in row.get("positives") or []:
            f = self._candidate_figure(corpus, item)
            b = self.fig_patent[f]
            grade = int(item.get("grade", GRADE_RELEVANT))
            if b == a or grade not in self.weights:
                self.ignored += 1
                continue
            w = self.weights[grade]
            self.positive[(a, b)] = self.positive[(b, a)] = max(w, self.positive.get((a, b), 0.0))
            group.positives.append(f)
        for item in row.get("hard_negatives") or []:
            f = self._candidate_figure(corpus, item)
            b = self.fig_patent[f]
            if b == a:
                self.ignored += 1
                continue
            self.negative |= {(a, b), (b, a)}
            group.negatives.append(f)
        if group.positives or group.negatives:
            self.groups.append(group)

    @property
    def num_pairs(self) -> int:
        """Judged (query, candidate) pairs the groups train on."""
        return sum(len(g.positives) + len(g.negatives) for g in self.groups)

    def apply(self, h: torch.Tensor, patents: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Overrides on a batch: ``h [B, B]`` (Eq. 2 weights of the batch), ``patents [B]`` patent index
        of each item -> ``(h', negative_mask [B, B] bool)``; the diagonal stays 0."""
        b = patents.shape[0]
        mask = torch.zeros(b, b, dtype=torch.bool)
        h = h.clone()
        ids = patents.tolist()
        for i, pi in enumerate(ids):
            for j, pj in enumerate(ids):
                if i == j:
                    continue
                if (pi, pj) in self.negative:
                    mask[i, j] = True
                elif (pi, pj) in self.positive:
                    h[i, j] = self.positive[(pi, pj)]
        return h, mask.to(h.device)


class LabelBatches:
    """``StepBatches`` with ``groups_per_step`` label groups appended to every batch.

    For step ``s`` the groups are the next ``G`` of a permutation of all groups (a new permutation per
    pass over them, from ``(seed, pass)``), each contributing its query drawing, up to ``positives``
    judged-relevant figures and up to ``negatives`` judged-not-relevant figures (drawn from
    ``(seed, step)``). Items are ``(figure index, augmentation seed)`` like ``StepBatches``'.
    """

    def __init__(
        self,
        inner,
        groups: Sequence[LabelGroup],
        groups_per_step: int,
        positives: int,
        negatives: int,
        seed: int,
        rank: int = 0,
    ) -> None:
        self.inner, self.groups = inner, list(groups)
        self.g = min(groups_per_step, len(self.groups))
        self.positives, self.negatives, self.seed, self.rank = positives, negatives, seed, rank

    def __len__(self) -> int:
        return len(self.inner)

    def groups_at(self, step: int) -> list[LabelGroup]:
        n, out = len(self.groups), []
        for t in range(step * self.g, (step + 1) * self.g):
            perm = np.random.default_rng([self.seed, 31, t // n]).permutation(n)
            out.append(self.groups[int(perm[t % n])])
        return out

    def extra(self, step: int) -> list[tuple[int, int]]:
        rng = np.random.default_rng([self.seed, 37, step])
        figs: list[int] = []
        for grp in self.groups_at(step):
            figs.append(grp.anchor)
            for pool, k in ((grp.positives, self.positives), (grp.negatives, self.negatives)):
                if pool and k > 0:
                    figs += [
                        pool[int(i)] for i in rng.choice(len(pool), size=min(k, len(pool)), replace=False)
                    ]
        return [(f, step_seed(self.seed, step, self.rank, 100_000 + j)) for j, f in enumerate(figs)]

    def __iter__(self):
        step = self.inner.start
        for batch in self.inner:
            yield list(batch) + (self.extra(step) if self.g else [])
            step += 1


def add_label_arguments(p: argparse.ArgumentParser) -> None:
    """The ``train.hmcl`` options of examiner labels, read by :func:`label_training`."""
    a = p.add_argument
    a(
        "--labels",
        default=None,
        help="label JSONL exported by the app (hmcl.jsonl): extra positives and hard negatives",
    )
    a(
        "--labels-root",
        default=None,
        help="folder the rows' anchor image_file paths are relative to (the label database's folder; default: the file's)",
    )
    a(
        "--label-weights",
        type=float,
        nargs=2,
        default=None,
        metavar=("S_REL", "S_PARTLY"),
        help="h of a pair judged relevant / partly relevant (default: S_P and S_S of --weights)",
    )
    a("--label-groups", type=int, default=4, help="labelled queries added to every batch")
    a("--label-positives", type=int, default=2, help="judged-relevant figures per labelled query in a batch")
    a(
        "--label-negatives",
        type=int,
        default=2,
        help="judged-not-relevant figures per labelled query in a batch",
    )
    a(
        "--allow-test-labels",
        action="store_true",
        help="also train on labels of test-split queries and candidates (held out by default)",
    )
    a("--test-split", default="test", help="split whose queries and patents labels must not come from")


def label_training(
    args, corpus: Corpus, train_patents: Sequence[Patent], figures: list[Figure], fig_patent: list[int]
) -> tuple[LabelTraining, dict]:
    """``train.hmcl``'s ``--labels`` rows that pass the leak guard, as label groups (extending ``figures``
    and ``fig_patent`` in place), and the statistics its checkpoint records (also logged)."""
    rows = read_rows(args.labels, modality="drawing")
    kept, stats = guard_hmcl_rows(rows, corpus, args.test_split, args.allow_test_labels)
    s_rel, s_partly = args.label_weights or args.weights[:2]
    root = args.labels_root or str(Path(args.labels).parent)
    labels = LabelTraining(kept, corpus, root, train_patents, figures, fig_patent, {2: s_rel, 1: s_partly})
    out = stats.to_dict() | {
        "file": str(args.labels),
        "groups": len(labels.groups),
        "pairs_trained": labels.num_pairs,
        "ignored": labels.ignored,
        "s_rel": s_rel,
        "s_partly": s_partly,
    }
    log = logging.getLogger("train.hmcl")
    log.info(
        "labels %s: %d queries, %d judged pairs used; held out %d test-split queries (%d pairs) and %d "
        "test-split candidates",
        args.labels,
        out["groups"],
        out["pairs_trained"],
        out["queries_held_out"],
        out["pairs_held_out"],
        out["candidates_held_out"],
    )
    if not labels.groups:
        log.warning("no label row is left to train on")
    return labels, out


def lineage(init_from: str | None, label_stats: dict | None) -> dict:
    """Config entries of a fine-tune: ``parent`` and ``version`` (the parent's + 1, a parent without one
    counting as 1) when it starts from a checkpoint; ``num_labels`` (judged pairs trained on) and
    ``labels`` (the guard's statistics) when it learns from labels. The app's model list shows both."""
    out: dict = {}
    if init_from:
        from patent_demo.checkpoint import load_config

        parent = load_config(init_from)
        try:
            version = int(parent.get("version") or 1)
        except (TypeError, ValueError):
            version = 1
        out |= {"parent": str(init_from), "parent_run": parent.get("run_name", ""), "version": version + 1}
    if label_stats is not None:
        out |= {"num_labels": int(label_stats["pairs_trained"]), "labels": label_stats}
    return out
