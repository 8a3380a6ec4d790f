"""What the Embedding-map and Error-analysis tabs compute over a workbench's index: the PCA map of the
corpus drawings and the per-query error analysis under the one drawing-evaluation protocol
(``Workbench.protocol``, the one drawing-evaluation protocol of ``patent_demo.drawing.evaluate``). The UI's
tabs call these with their workbench; the workbench never imports this module.

Classes are read through ``patent_demo.hierarchy.patent_hierarchy``: a patent's Locarno subclass, else its
USPC subclass, so a USPC-coded corpus is mapped and analysed by its own classes.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from patent_demo.data.corpus import Patent
from patent_demo.hierarchy import patent_classes
from patent_demo.workbench import Workbench


def class_of(patent: Patent) -> str:
    """The subclass an analysis groups ``patent`` under: ``"06-01"`` (Locarno), ``"D6/369"`` (USPC), ``""``."""
    return patent_classes(patent.codes)[0]


def main_class_of(patent: Patent) -> str:
    """The main class of :func:`class_of`: ``"06"``, ``"D6"``, ``""``."""
    return patent_classes(patent.codes)[1]


@dataclass
class ErrorRow:
    """One test query of an evaluation: its metrics, what was expected, what came back."""

    query_patent: str
    query_figure: str
    locarno: str  # the query's subclass (Locarno, else USPC; see class_of)
    patent_ap: float
    subclass_ap: float
    first_relevant_rank: int  # rank of the first same-subclass figure (1 = top)
    expected: list[str]
    returned: list[str]


def _nan(x: float | None) -> float:
    """A per-query metric as a float (``None``, undefined, becomes NaN)."""
    return float("nan") if x is None else float(x)


def embedding_map(
    wb: Workbench,
    model: str,
    query: np.ndarray | None = None,
    highlight: Sequence[str] = (),
    dims: int = 2,
    max_points: int | None = None,
) -> dict:
    """PCA of the corpus figure embeddings ``[N, D] -> [N, dims]`` with the query projected alike.

    Returns {"coords" [N, dims], "ids", "patents", "titles", "subclasses", "mains", "query" [dims] or
    None, "highlight" [bool N] (figures of the ``highlight`` patents), "silhouette" (cosine, by
    subclass, on the full-dimensional embeddings of the points shown), "sampled" (points shown,
    total), "explained" (variance ratio per component), "model"}.
    """
    from sklearn.decomposition import PCA

    from patent_demo.metrics import silhouette_by_subclass

    if dims not in (2, 3):
        raise ValueError(f"dims must be 2 or 3, got {dims}")
    spec = wb.model(model, "drawing")
    index = wb.index(spec)
    n = index.count
    limit = max_points or wb.config.map_points
    keep = np.arange(n)
    hl = set(highlight)
    if n > limit:  # sample, always keeping the highlighted patents' figures
        rng = np.random.default_rng(wb.config.seed)
        forced = np.array([i for i, p in enumerate(index.patent_ids) if p in hl], dtype=np.int64)
        rest = np.setdiff1d(np.arange(n), forced)
        pick = rng.choice(rest, size=max(0, limit - forced.size), replace=False)
        keep = np.sort(np.concatenate([forced, pick]))
    x = index.embeddings[keep]
    pca = PCA(n_components=dims, random_state=wb.config.seed).fit(x)
    ids = [index.ids[i] for i in keep]
    patents = [index.patent_ids[i] for i in keep]
    subclasses = [class_of(wb.corpus[p]) for p in patents]
    try:
        sil, _ = silhouette_by_subclass(x, subclasses)
    except ValueError:
        sil = float("nan")
    qc = None
    if query is not None:
        qv = np.asarray(query, dtype=np.float32).reshape(1, -1)
        qv = qv / max(float(np.linalg.norm(qv)), 1e-12) if index.normalize else qv
        qc = pca.transform(qv)[0]
    return {
        "coords": pca.transform(x),
        "ids": ids,
        "patents": patents,
        "titles": [wb.corpus[p].title for p in patents],
        "subclasses": subclasses,
        "mains": [main_class_of(wb.corpus[p]) for p in patents],
        "query": qc,
        "highlight": [p in hl for p in patents],
        "silhouette": sil,
        "sampled": (len(keep), n),
        "explained": pca.explained_variance_ratio_.tolist(),
        "model": spec.label,
    }


def describe_protocol(wb: Workbench, split: str = "test") -> str:
    """Which figures an evaluation of ``wb``'s corpus uses (``resolve_split``): the test split, or every
    figure against all the others when the corpus has no test split."""
    from patent_demo.drawing.evaluate import resolve_split

    q_rows, g_rows = wb.protocol(split)
    asked = split
    split, kind = resolve_split(wb.corpus, split)
    if kind == "all":
        if split:
            scope = f" of the {split} split"
        elif asked in (None, "all"):
            scope = " of every patent (all splits)"
        else:
            scope = " (the corpus has no test split)"
        where = "every figure against all the others" + scope
    else:
        where = f"the {split} split, one query figure per patent against the split's other figures"
    return f"{where}: {len(q_rows):,} queries, {len(g_rows):,} gallery figures"


def evaluate(
    wb: Workbench, model: str, k: int = 10, split: str = "test"
) -> tuple[dict[str, float | None], list[ErrorRow]]:
    """Drawing metrics of ``model`` on the protocol (``score_embeddings`` over the index embeddings, the
    numbers ``train.evaluate`` reports) and one row per query, worst first (lowest subclass AP, then
    patent AP). A query never retrieves itself."""
    from patent_demo.drawing.evaluate import score_embeddings

    index = wb.index(model)
    q_rows, g_rows = wb.protocol(split)
    if not q_rows or not g_rows or q_rows == g_rows and len(q_rows) < 2:
        raise ValueError("the evaluated patents need at least two figures in all to evaluate")
    figs = wb._figures()
    in_gallery = {r: j for j, r in enumerate(g_rows)}
    self_index = np.array([in_gallery.get(r, -1) for r in q_rows], dtype=np.int64)
    qx, gx = index.embeddings[q_rows], index.embeddings[g_rows]
    ev = score_embeddings(
        [figs[i] for i in q_rows],
        [figs[i] for i in g_rows],
        qx,
        gx,
        self_index,
        ks=(k,),
        silhouette=False,
        per_query=True,
    )
    scores = qx.astype(np.float64) @ gx.astype(np.float64).T
    rows = []
    for qi, row in enumerate(q_rows):
        p, f = figs[row]
        order = [j for j in np.argsort(-scores[qi], kind="stable") if j != self_index[qi]]
        ranked = [figs[g_rows[j]][0] for j in order]
        cls = class_of(p)
        same = [r for r, g in enumerate(ranked, 1) if cls and class_of(g) == cls]
        expected = sorted({g.id for g in ranked if g.id == p.id or (cls and class_of(g) == cls)})
        returned = list(dict.fromkeys(g.id for g in ranked))[:k]
        rows.append(
            ErrorRow(
                p.id,
                f.path,
                cls,
                _nan(ev["per_query"]["patent_map"][qi]),
                _nan(ev["per_query"]["subclass_map"][qi]),
                same[0] if same else 0,
                expected[:k],
                returned,
            )
        )

    def key(r: ErrorRow) -> tuple:
        return np.nan_to_num(r.subclass_ap, nan=2.0), np.nan_to_num(r.patent_ap, nan=2.0), r.query_patent

    return ev["metrics"], sorted(rows, key=key)
