"""What the Embedding-map and Error-analysis tabs compute over a workbench's index: the map of the corpus
drawings (PCA, or t-SNE fitted once per corpus, model weights and sample and kept in ``cache/maps``) with
its silhouettes at patent, subclass and main-class level, and the per-query error analysis under the one
drawing-evaluation protocol (``Workbench.protocol``, the one drawing-evaluation protocol of
``patent_demo.drawing.protocol``), its failures split in-domain / out-of-domain, kept in ``cache/errors``
and computed in the background by the server (``evaluate_in_background``). The UI's tabs call these with
their workbench; the workbench never imports this module.

Classes are read through ``patent_demo.hierarchy.patent_hierarchy``: a patent's Locarno subclass, else its
USPC subclass, so a USPC-coded corpus is mapped and analysed by its own classes.
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np

from patent_demo.atomic import atomic_json, atomic_write
from patent_demo.data.corpus import Patent
from patent_demo.hierarchy import patent_classes
from patent_demo.workbench import Workbench


def class_of(patent: Patent) -> str:
    """The subclass an analysis groups ``patent`` under: ``"06-01"`` (Locarno), ``"D6/369"`` (USPC), ``""``."""
    return patent_classes(patent.codes)[0]


def main_class_of(patent: Patent) -> str:
    """The main class of :func:`class_of`: ``"06"``, ``"D6"``, ``""``."""
    return patent_classes(patent.codes)[1]


_EVALUATING = threading.Lock()
DOMAINS = ("in-domain", "out-of-domain")  # the failure split of DAPFAM and PatenTEB
ABOVE = 3  # the figures shown of those that outranked a missed relevant one


@dataclass
class ErrorRow:
    """One test query of an evaluation: its metrics, what was expected, what came back, and per domain the
    best-ranked relevant gallery figure (``misses``): ``{"in-domain" | "out-of-domain": {"rank", "figure",
    "patent", "class", "above": [{"figure", "patent", "class"}, ...]}}``. In-domain: a figure of the
    query's own subclass; out-of-domain: of its main class but another subclass (relevant at the main-class
    level, the hierarchy's widest); ``above`` is what outranked it (at most ``ABOVE``)."""

    query_patent: str
    query_figure: str
    locarno: str  # the query's subclass (Locarno, else USPC; see class_of)
    patent_ap: float
    subclass_ap: float
    first_relevant_rank: int  # rank of the first same-subclass figure (1 = top)
    expected: list[str]
    returned: list[str]
    misses: dict[str, dict] = field(default_factory=dict)


def _nan(x: float | None) -> float:
    """A per-query metric as a float (``None``, undefined, becomes NaN)."""
    return float("nan") if x is None else float(x)


LEVELS = ("patent", "subclass", "main class")  # the levels the map's silhouettes are taken at
PROJECTIONS = ("PCA", "t-SNE")
NEIGHBOURS = 5  # t-SNE: a point outside the fitted sample sits at the mean of its nearest sampled points


def _map_rows(wb: Workbench, n: int, limit: int) -> np.ndarray:
    """The index rows a map shows: all of them, or a seeded sample of ``limit`` (the same on every click, so
    a t-SNE fitted on it is cached)."""
    if n <= limit:
        return np.arange(n)
    return np.sort(np.random.default_rng(wb.config.seed).choice(n, size=limit, replace=False))


def _map_cache(wb: Workbench, spec, rows: np.ndarray) -> Path:
    """Where a map's t-SNE and silhouettes are kept: per corpus, model weights and sample."""
    tag = hashlib.sha256(rows.tobytes()).hexdigest()[:10]
    return wb.config.cache_dir / "maps" / wb.fingerprint / spec.fingerprint / tag


def silhouettes(x: np.ndarray, patents: Sequence[str], subclasses: Sequence[str]) -> dict[str, float]:
    """Cosine silhouette (``metrics.silhouette_by_subclass``) of embeddings ``x`` [N, D] at each of
    ``LEVELS``: grouped by patent, by subclass and by main class; the class levels leave unclassified
    figures out. NaN where a level has fewer than two groups (or every point is its own group)."""
    from patent_demo.hierarchy import main_of
    from patent_demo.metrics import silhouette_by_subclass

    out = {}
    mains = [main_of(s) for s in subclasses]
    for level, labels in zip(LEVELS, (list(patents), list(subclasses), mains), strict=True):
        keep = [i for i, c in enumerate(labels) if c]
        try:
            out[level] = silhouette_by_subclass(x[keep], [labels[i] for i in keep])[0]
        except ValueError:
            out[level] = float("nan")
    return out


def _save_array(path: str, array: np.ndarray) -> None:
    with open(path, "wb") as fh:  # a file object: np.save would add ".npy" to a name
        np.save(fh, array)


def _tsne(x: np.ndarray, dims: int, seed: int) -> np.ndarray:
    """t-SNE (scikit-learn, cosine, PCA-initialised, fixed seed, 500 iterations) of ``x`` [N, D] -> [N, dims],
    on its first 50 principal components (the usual first step: the neighbours barely move, the fit is
    faster)."""
    from sklearn.decomposition import PCA
    from sklearn.manifold import TSNE

    if x.shape[1] > 50 and x.shape[0] > 50:
        x = PCA(n_components=50, random_state=seed).fit_transform(x)
    perplexity = float(min(30.0, max(2.0, (x.shape[0] - 1) / 3)))
    tsne = TSNE(dims, perplexity=perplexity, metric="cosine", init="pca", random_state=seed, max_iter=500)
    return tsne.fit_transform(x.astype(np.float32)).astype(np.float64)


def _placed(x_new: np.ndarray, x_fit: np.ndarray, coords: np.ndarray) -> np.ndarray:
    """Points outside a t-SNE's sample [M, D], each at the mean map position of its ``NEIGHBOURS`` most
    similar (cosine) sampled points -> [M, dims]."""
    a = x_new / np.maximum(np.linalg.norm(x_new, axis=1, keepdims=True), 1e-12)
    b = x_fit / np.maximum(np.linalg.norm(x_fit, axis=1, keepdims=True), 1e-12)
    near = np.argsort(-(a @ b.T), axis=1, kind="stable")[:, :NEIGHBOURS]
    return coords[near].mean(axis=1)


def embedding_map(
    wb: Workbench,
    model: str,
    query: np.ndarray | None = None,
    highlight: Sequence[str] = (),
    dims: int = 2,
    max_points: int | None = None,
    projection: str = "PCA",
) -> dict:
    """A map of the corpus figure embeddings ``[N, D] -> [N, dims]``: PCA, or t-SNE (neighbours kept; fitted
    once per corpus, model weights and sample, then read from ``cache/maps``).

    ``highlight`` names figures (their paths; a patent id names all its figures): the hits of the last
    drawing search. Above ``max_points`` (``config.map_points``) a seeded sample is shown, the highlighted
    figures added to it. Returns {"coords" [N, dims], "ids", "patents", "titles", "subclasses", "mains",
    "query" [dims] or None, "highlight" [bool N], "silhouettes" {level: cosine silhouette on the
    full-dimensional embeddings of the sample}, "silhouette" (the subclass one), "sampled" (points shown,
    total), "explained" (PCA's variance ratio per component; [] for t-SNE), "projection", "model"}.
    """
    from sklearn.decomposition import PCA

    if dims not in (2, 3):
        raise ValueError(f"dims must be 2 or 3, got {dims}")
    if projection not in PROJECTIONS:
        raise ValueError(f"projection must be one of {', '.join(PROJECTIONS)}, got {projection!r}")
    spec = wb.model(model, "drawing")
    index = wb.index(spec)
    n = index.count
    rows = _map_rows(wb, n, max_points or wb.config.map_points)
    hl = set(highlight)
    marked = [i for i in range(n) if index.ids[i] in hl or index.patent_ids[i] in hl]
    extra = np.setdiff1d(np.asarray(marked, dtype=np.int64), rows)
    x, x_extra = index.embeddings[rows], index.embeddings[extra]
    qv = None
    if query is not None:
        qv = np.asarray(query, dtype=np.float32).reshape(1, -1)
        qv = qv / max(float(np.linalg.norm(qv)), 1e-12) if index.normalize else qv
    cache = _map_cache(wb, spec, rows)
    sil_file = cache / "silhouettes.json"
    if sil_file.is_file():
        sil = json.loads(sil_file.read_text(encoding="utf-8"))
    else:
        sub = [class_of(wb.corpus[index.patent_ids[i]]) for i in rows]
        sil = silhouettes(x, [index.patent_ids[i] for i in rows], sub)
        atomic_json(sil_file, sil)
    explained: list[float] = []
    if projection == "PCA":
        pca = PCA(n_components=dims, random_state=wb.config.seed).fit(x)
        coords = pca.transform(np.concatenate([x, x_extra]))
        qc = pca.transform(qv)[0] if qv is not None else None
        explained = pca.explained_variance_ratio_.tolist()
    else:
        tsne_file = cache / f"tsne-{dims}d.npy"
        if tsne_file.is_file():
            fitted = np.load(tsne_file)
        else:
            fitted = _tsne(x, dims, wb.config.seed)
            atomic_write(tsne_file, lambda tmp: _save_array(tmp, fitted))
        coords = np.concatenate([fitted, _placed(x_extra, x, fitted)]) if extra.size else fitted
        qc = _placed(qv, x, fitted)[0] if qv is not None else None
    shown = np.concatenate([rows, extra])
    patents = [index.patent_ids[i] for i in shown]
    return {
        "coords": coords,
        "ids": [index.ids[i] for i in shown],
        "patents": patents,
        "titles": [wb.corpus[p].title for p in patents],
        "subclasses": [class_of(wb.corpus[p]) for p in patents],
        "mains": [main_class_of(wb.corpus[p]) for p in patents],
        "query": qc,
        "highlight": [index.ids[i] in hl or index.patent_ids[i] in hl for i in shown],
        "silhouettes": {k: float(v) for k, v in sil.items()},
        "silhouette": float(sil["subclass"]),
        "sampled": (len(shown), n),
        "explained": explained,
        "projection": projection,
        "model": spec.label,
    }


def describe_protocol(wb: Workbench, split: str = "test") -> str:
    """Which figures an evaluation of ``wb``'s corpus uses (``resolve_split``): the test split, or every
    figure against all the others when the corpus has no test split."""
    from patent_demo.drawing.protocol import resolve_split

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
    numbers ``train.score_drawings`` reports) and one row per query, worst first (lowest subclass AP, then
    patent AP), each with its in-domain and out-of-domain misses (``ErrorRow``). A query never retrieves
    itself."""
    from patent_demo.drawing.protocol import score_embeddings

    index = wb.index(model)
    q_rows, g_rows = wb.protocol(split)
    if not q_rows or not g_rows or q_rows == g_rows and len(q_rows) < 2:
        raise ValueError("the evaluated patents need at least two figures in all to evaluate")
    figs = wb.corpus.figures()
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
    classes = {
        p.id: (class_of(p), main_class_of(p)) for p in {figs[i][0].id: figs[i][0] for i in g_rows}.values()
    }
    g_pid = np.array([figs[i][0].id for i in g_rows], dtype=object)
    g_fig = [figs[i][1].path for i in g_rows]
    g_sub = np.array([classes[p][0] for p in g_pid], dtype=object)
    g_main = np.array([classes[p][1] for p in g_pid], dtype=object)

    def described(g: int) -> dict:  # a gallery figure, as a miss names it
        return {"figure": g_fig[g], "patent": str(g_pid[g]), "class": str(g_sub[g])}

    rows = []
    for qi, row in enumerate(q_rows):
        p, f = figs[row]
        order = np.argsort(-scores[qi], kind="stable")
        order = order[order != self_index[qi]]
        cls, main = class_of(p), main_class_of(p)
        sub_o, pid_o = g_sub[order], g_pid[order]
        same = np.flatnonzero(sub_o == cls) if cls else np.array([], dtype=np.int64)
        wanted = (pid_o == p.id) | (sub_o == cls) if cls else pid_o == p.id
        returned = list(dict.fromkeys(pid_o.tolist()))[:k]
        misses = {}
        if cls:
            other = np.flatnonzero((g_main[order] == main) & (sub_o != cls)) if main else same[:0]
            for domain, found in zip(DOMAINS, (same, other), strict=True):
                if found.size:
                    at = int(found[0])
                    misses[domain] = described(int(order[at])) | {
                        "rank": at + 1,
                        "above": [described(int(order[j])) for j in range(min(at, ABOVE))],
                    }
        rows.append(
            ErrorRow(
                p.id,
                f.path,
                cls,
                _nan(ev["per_query"]["patent_map"][qi]),
                _nan(ev["per_query"]["subclass_map"][qi]),
                int(same[0]) + 1 if same.size else 0,
                sorted(set(pid_o[wanted].tolist()))[:k],
                returned,
                misses,
            )
        )

    def key(r: ErrorRow) -> tuple:
        return np.nan_to_num(r.subclass_ap, nan=2.0), np.nan_to_num(r.patent_ap, nan=2.0), r.query_patent

    return ev["metrics"], sorted(rows, key=key)


def cached_evaluation(
    wb: Workbench, model: str, split: str = "test", k: int = 10
) -> tuple[dict, list[ErrorRow], dict]:
    """``evaluate`` read from ``cache/errors/<corpus>/<model weights>/<split>-k<k>.json`` when computed
    before (by the app's background job or an earlier click), else computed now and written there.
    Returns (metrics, rows, {"computed": UTC time, "seconds": how long the computation took})."""
    import time
    from datetime import UTC, datetime

    spec = wb.model(model, "drawing")
    path = wb.config.cache_dir / "errors" / wb.fingerprint / spec.fingerprint / f"{split}-k{k}.json"
    with _EVALUATING:  # the background job and a click never compute the same evaluation twice
        if path.is_file():
            try:
                data = json.loads(path.read_text(encoding="utf-8"))
                return data["metrics"], [ErrorRow(**r) for r in data["rows"]], data["about"]
            except (ValueError, KeyError, TypeError):
                pass  # an unreadable or older file: computed again
        t0 = time.perf_counter()
        metrics, rows = evaluate(wb, spec.key, k=k, split=split)
        about = {
            "computed": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
            "seconds": round(time.perf_counter() - t0, 2),
        }
        atomic_json(path, {"metrics": metrics, "rows": [asdict(r) for r in rows], "about": about})
        return metrics, rows, about


def evaluate_in_background(wb: Workbench, after: threading.Thread | None = None) -> threading.Thread:
    """``cached_evaluation`` of the default drawing model on the test split in a daemon thread, once
    ``after`` (the warm-up of the search indexes) has finished, so the Error-analysis tab opens from the
    disk cache and the first searches never wait for it. A failure is left for the tab to report."""

    def run() -> None:
        if after is not None:
            after.join()
        try:
            if wb.has_drawings():
                cached_evaluation(wb, wb.default_drawing_model().key)
        except Exception:  # noqa: BLE001 - the tab computes it again and says what went wrong
            pass

    thread = threading.Thread(target=run, daemon=True, name="evaluate-in-background")
    thread.start()
    return thread


def failures(rows: Sequence[ErrorRow], domain: str = "") -> list[tuple[ErrorRow, str, dict]]:
    """The failures of an evaluation: (row, domain, miss) for each query whose best-ranked relevant figure
    of that domain (``ErrorRow.misses``) is outranked by another figure (rank > 1); worst (lowest rank)
    first. ``domain`` keeps one of ``DOMAINS`` (``""``: both)."""
    out = [
        (r, d, m) for r in rows for d, m in r.misses.items() if m["rank"] > 1 and (not domain or d == domain)
    ]
    return sorted(out, key=lambda t: (-t[2]["rank"], DOMAINS.index(t[1]), t[0].query_patent))


def domain_summary(rows: Sequence[ErrorRow], k: int = 10) -> dict[str, dict]:
    """Per domain: queries that have a relevant figure of that domain in the gallery, how many find it at
    #1, how many miss it from the top ``k``, and the median rank of the first one."""
    out = {}
    for d in DOMAINS:
        ranks = np.array([r.misses[d]["rank"] for r in rows if d in r.misses])
        out[d] = {
            "queries": int(ranks.size),
            "first": int((ranks == 1).sum()),
            "missed": int((ranks > k).sum()),
            "median_rank": float(np.median(ranks)) if ranks.size else float("nan"),
        }
    return out
