"""Relevance feedback: the examiner's labels move the query (Rocchio in the embedding space).

The one home of the refined query. Every search that refines (the app's **Refine with my labels**, the
``/refine_drawing`` API, ``patent-demo search … --feedback``, ``patent-demo evaluate … --feedback-depth``)
calls :func:`refine`; none keeps its own copy.

    q' = normalise(q + β · mean(relevant) − γ · mean(not relevant))

``q`` is one unit vector ``[D]`` (a drawing, a sheet's figure, a text) or the views of an application
``[V, D]``; then each view moves by the same two means and is renormalised on its own. The labels of every
round are pooled and applied to the *original* query, so refining twice with the same labels gives the
same query (no drift), and a second round simply adds its labels to the first's. "relevant" and "partly"
both count as relevant (qrels ``rel ≥ 1``), "not" as not relevant. β and γ come from
``patent_demo/configs/feedback.json``, chosen on validation by the rule written there
(``python -m train.feedback.drawings``).
"""

from __future__ import annotations

import json
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

CONFIG = Path(__file__).parents[1] / "configs" / "feedback.json"
RELEVANT = {"relevant": True, "partly": True, "not": False}  # a label's grade name -> counts as relevant


HITS = ("best", "mean")  # what stands for a judged patent: its best figure for the query, or its mean figure


@dataclass(frozen=True)
class Feedback:
    """β, γ and where they came from (the config's ``rule`` and ``command``); ``hits`` says which vector
    stands for a judged patent in a drawing search (:func:`hit_vectors`)."""

    beta: float = 1.0
    gamma: float = 0.3
    rule: str = ""
    command: str = ""
    hits: str = "best"

    @classmethod
    def load(cls, path: str | Path = CONFIG, task: str = "drawing") -> Feedback:
        """The weights of ``task`` ("drawing" or "text") in the config file."""
        data = json.loads(Path(path).read_text())
        part = data[task]
        return cls(
            float(part["beta"]),
            float(part["gamma"]),
            data.get("rule", ""),
            data.get("command", ""),
            str(part.get("hits", "best")),
        )


@dataclass(frozen=True)
class Refined:
    """A refined query: ``vector`` (same shape as the original), how many labels of each kind moved it,
    and how far it moved (cosine of the original and the refined query; the mean over views)."""

    vector: np.ndarray
    relevant: int
    not_relevant: int
    cosine: float

    @property
    def used(self) -> int:
        return self.relevant + self.not_relevant


def _unit(x: np.ndarray) -> np.ndarray:
    norm = np.linalg.norm(x, axis=-1, keepdims=True)
    return x / np.where(norm > 0, norm, 1.0)


def refine(
    query: np.ndarray,
    relevant: np.ndarray | Sequence[np.ndarray] = (),
    not_relevant: np.ndarray | Sequence[np.ndarray] = (),
    weights: Feedback | None = None,
) -> Refined:
    """The Rocchio query of ``query`` (``[D]`` or ``[V, D]``) moved towards the mean of ``relevant`` and
    away from the mean of ``not_relevant`` (each ``[n, D]``, any n including 0), renormalised per row.
    With no labels the query comes back unchanged. A direction that cancels to zero keeps the original."""
    w = weights or Feedback()
    q = np.asarray(query, dtype=np.float32)
    if q.ndim not in (1, 2) or q.shape[-1] == 0:
        raise ValueError(f"a query is one vector [D] or views [V, D], got shape {q.shape}")
    dim = q.shape[-1]
    pos = np.asarray(relevant, dtype=np.float32).reshape(-1, dim)
    neg = np.asarray(not_relevant, dtype=np.float32).reshape(-1, dim)
    move = np.zeros(dim, dtype=np.float32)
    if len(pos):
        move += w.beta * _unit(pos).mean(axis=0)
    if len(neg):
        move -= w.gamma * _unit(neg).mean(axis=0)
    base = _unit(q)
    out = base + move
    norm = np.linalg.norm(out, axis=-1, keepdims=True)
    out = np.where(norm > 1e-6, out / np.where(norm > 0, norm, 1.0), base).astype(np.float32)
    cosine = float(np.mean(np.sum(base * out, axis=-1)))
    return Refined(out, len(pos), len(neg), cosine)


def split_labels(labels: Mapping[str, str] | Iterable[tuple[str, str]]) -> tuple[list[str], list[str]]:
    """``(relevant ids, not relevant ids)`` of ``{id: label}`` (or pairs), a label a grade name
    (``relevant`` / ``partly`` / ``not``) or a qrels grade (``rel ≥ 1`` relevant, ``0`` not). An id's last
    label counts; unknown labels are ignored."""
    last: dict[str, bool] = {}
    for key, label in labels.items() if isinstance(labels, Mapping) else labels:
        value = str(label).strip()
        if value in RELEVANT:
            last[key] = RELEVANT[value]
        elif value.lstrip("-").isdigit():
            last[key] = int(value) >= 1
    return [k for k, v in last.items() if v], [k for k, v in last.items() if not v]


def read_qrels(path: str | Path) -> dict[str, dict[str, int]]:
    """TREC qrels ``qid 0 docid rel`` as ``{qid: {docid: rel}}`` (a later line for the same pair wins);
    blank lines and ``#`` comments skipped; a malformed line is a ``ValueError`` naming it."""
    out: dict[str, dict[str, int]] = {}
    for n, line in enumerate(Path(path).read_text().splitlines(), 1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        parts = line.split()
        if len(parts) != 4 or not parts[3].lstrip("-").isdigit():
            raise ValueError(f"{path}:{n}: a qrels line is 'qid 0 docid rel', got {line.strip()[:80]!r}")
        out.setdefault(parts[0], {})[parts[2]] = int(parts[3])
    return out


def residual(run: Mapping[str, object], judged: Mapping[str, Collection[str]]) -> dict[str, object]:
    """The *residual collection* of ``run``: each query's entry without the ids in ``judged[qid]`` (the
    hits the examiner has already seen and labelled), so that a list before and after feedback is scored
    only on what is still unseen. Apply it to both lists and to the qrels. An entry is a
    ``patent_demo.results.Results`` (order, scores and extras kept), a ``{id: value}`` mapping (a query's
    qrels) or a sequence of ids; a query without judged ids is returned as it is."""
    from patent_demo.results import Results

    out: dict[str, object] = {}
    for qid, entry in run.items():
        seen = judged.get(qid) or ()
        seen = seen if isinstance(seen, (set, frozenset)) else set(seen)
        if not seen:
            out[qid] = entry
        elif isinstance(entry, Results):
            keep = [i for i, d in enumerate(entry.ids) if d not in seen]
            out[qid] = Results(
                [entry.ids[i] for i in keep],
                entry.scores[keep],
                [entry.extras[i] for i in keep] if entry.extras is not None else None,
                entry.rerank_scores[keep] if entry.rerank_scores is not None else None,
            )
        elif isinstance(entry, Mapping):
            out[qid] = {d: v for d, v in entry.items() if d not in seen}
        else:
            out[qid] = [d for d in entry if d not in seen]
    return out


def hit_vectors(index, query: np.ndarray, patents: Sequence[str], how: str = "best") -> np.ndarray:
    """``[n, D]``: the stored vector of each judged patent in ``index`` (a ``DenseIndex``): its figure
    closest to ``query`` (``best``, the figure a per-patent hit shows; an application's ``[V, D]`` query
    takes the figure with the best mean cosine over views) or the mean of its figures (``mean``). Patents
    without figures in the index are left out."""
    if how not in HITS:
        raise ValueError(f"hit vectors are one of {HITS}, got {how!r}")
    rows_of = index.prepare_patents()
    q = np.asarray(query, dtype=np.float32).reshape(-1, index.dim)
    out = []
    for pid in patents:
        rows = rows_of.get(pid)
        if rows is None or not len(rows):
            continue
        emb = np.asarray(index.embeddings[rows], dtype=np.float32)
        if how == "mean":
            out.append(_unit(emb).mean(axis=0))
        else:
            out.append(emb[int(np.argmax((emb @ q.T).mean(axis=1)))])
    return np.asarray(out, dtype=np.float32).reshape(-1, index.dim)


def refine_from_labels(
    query: np.ndarray, index, labels: Mapping[str, str | int], weights: Feedback | None = None
) -> Refined:
    """The refined query of a drawing search from the examiner's labels ``{patent id: label}`` (grade
    names or qrels grades, :func:`split_labels`), the judged patents' vectors read from ``index``
    (:func:`hit_vectors`, ``weights.hits``): what ``patent-demo search drawings --feedback`` and the app's
    refine call."""
    w = weights or Feedback.load()
    rel, nonrel = split_labels({k: str(v) for k, v in labels.items()})
    return refine(query, hit_vectors(index, query, rel, w.hits), hit_vectors(index, query, nonrel, w.hits), w)
