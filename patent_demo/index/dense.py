"""Dense vector index over FAISS (a row per figure for drawings, per patent for texts): build, search,
per-patent aggregation, save/load.

Scores are inner products ``s(q, x) = <q, x>``. With ``normalize=True`` (the default) both the figure
embeddings and the queries are L2-normalised first, so scores are cosine similarities, the ``sim``
of the HMCL paper (Eq. 4) that the encoder is trained with.

Index kinds (``DenseIndex.build(..., kind=...)``):

``flat``    exact search (``IndexFlatIP``); the reference every other kind is measured against.
``ivf``     inverted file over a k-means coarse quantiser (``IndexIVFFlat``): ``nlist``, ``nprobe``.
``ivfsq``   IVF with scalar-quantised vectors (``IndexIVFScalarQuantizer``, ``qtype`` ``sq8`` or ``fp16``);
            ``rescore`` > 0 re-scores ``rescore * k`` candidates exactly from the stored embeddings;
            ``pca`` > 0 codes the first ``pca`` principal components instead (for wide embeddings such
            as the 1280-d trunk's), and the re-scoring (required then) is in the full dimension.
``ivfpq``   IVF with product-quantised residuals (``IndexIVFPQ``): ``nlist``, ``nprobe``, ``m``
            sub-quantisers, ``nbits`` per code; ``refine`` > 0 re-scores ``refine * k`` candidates
            exactly (``IndexRefineFlat``, a second copy of the vectors) and ``rescore`` > 0 re-scores
            ``rescore * k`` candidates from the stored embeddings (no second copy).
``hnsw``    graph search (``IndexHNSWFlat``): ``M``, ``efConstruction``, ``efSearch``.

On disk an index is a directory of named files::

    root/
      index.faiss       the FAISS index (``faiss.write_index``)
      ids.json          {"ids": [figure ids], "patent_ids": [patent id of each figure]}
      embeddings.npy    [N, D] the embeddings the index was built from (float32 or float16)
      params.json       kind, params, dim, count, metric, normalize, model, checkpoint, versions

Every file is written to a temporary name and moved into place; ``params.json`` is written last.
``DenseIndex.load(root, mmap=True)`` maps ``index.faiss`` (FAISS ``IO_FLAG_MMAP``) and a float32
``embeddings.npy`` (numpy memmap) instead of reading them, so a corpus of a million figures opens in
seconds; the pages a search touches are read on demand.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Collection, Sequence
from pathlib import Path
from typing import Any

import faiss
import numpy as np

from patent_demo.atomic import atomic_json, atomic_write
from patent_demo.index.aggregate import aggregate_by_patent, rows_dot
from patent_demo.index.faiss_kinds import (
    IVF_KINDS,
    KINDS,
    SEARCH_PARAMS,
    apply_search_params,
    get_num_threads,
    make_faiss_index,
    resolve_params,
)
from patent_demo.results import Results

INDEX_FILE = "index.faiss"
IDS_FILE = "ids.json"
EMBEDDINGS_FILE = "embeddings.npy"
PARAMS_FILE = "params.json"
FORMAT_VERSION = 1
MMAP_MIN = 100_000  # DenseIndex.load maps an index of this many figures or more instead of reading it
MAPPED_KINDS = ("flat", "ivf", "hnsw")  # those whose FAISS file holds the full vectors; the others are read


def _l2_normalize(x: np.ndarray, what: str) -> np.ndarray:
    norms = np.linalg.norm(x, axis=1, keepdims=True)
    zero = np.flatnonzero(norms[:, 0] == 0)
    if zero.size:
        raise ValueError(f"{what} row {int(zero[0])} has zero norm and cannot be L2-normalised")
    return (x / norms).astype(np.float32)


def _as_matrix(x: Any, what: str) -> np.ndarray:
    arr = np.asarray(x, dtype=np.float32)
    if arr.ndim != 2:
        raise ValueError(f"{what} must be a 2-D array [N, D], got shape {arr.shape}")
    if arr.shape[1] == 0:
        raise ValueError(f"{what} have dimension 0")
    if not np.isfinite(arr).all():
        raise ValueError(f"{what} contain NaN or infinite values")
    return np.ascontiguousarray(arr)


def _check_k(k: int, count: int) -> None:
    if count == 0:
        raise ValueError("the index is empty: build it from at least one embedding")
    if k < 1:
        raise ValueError(f"k must be at least 1, got {k}")
    if k > count:
        raise ValueError(f"k={k} exceeds the {count} figures in the index; ask for at most {count}")


class DenseIndex:
    """A FAISS index over figure embeddings, with figure ids, patent ids and the embeddings kept.

    Build with ``DenseIndex.build``; load with ``DenseIndex.load``. ``embeddings`` holds the
    (normalised) ``[N, D]`` float32 vectors the index was built from, for plots such as PCA maps.
    """

    def __init__(
        self,
        index: faiss.Index,
        ids: list[str],
        patent_ids: list[str],
        embeddings: np.ndarray,
        kind: str,
        params: dict[str, Any],
        normalize: bool = True,
        model: str = "",
        checkpoint: str = "",
        build_seconds: float | None = None,
        patent_fetch: int = 4,
        patent_nprobe: int = 0,
    ) -> None:
        self.index = index
        self.ids = ids
        self.patent_ids = patent_ids
        self.embeddings = embeddings
        self.kind = kind
        self.params = params
        self.normalize = normalize
        self.model = model
        self.checkpoint = checkpoint
        self.build_seconds = build_seconds
        self.patent_fetch = int(patent_fetch)  # search_patents fetches patent_fetch * k figures first
        self.patent_nprobe = int(patent_nprobe)  # and probes this many lists (IVF kinds; 0: nprobe)
        self._row_of: dict[str, int] | None = None  # built on first use (a million ids take a while)
        self._n_patents: int | None = None
        self._rows_of_patent: dict[str, np.ndarray] | None = None  # prepare_patents()

    @property
    def _row(self) -> dict[str, int]:
        if self._row_of is None:
            self._row_of = {fid: i for i, fid in enumerate(self.ids)}
        return self._row_of

    # -- construction ----------------------------------------------------------------------------

    @classmethod
    def build(
        cls,
        embeddings: np.ndarray,
        ids: Sequence[str],
        patent_ids: Sequence[str],
        kind: str = "flat",
        *,
        normalize: bool = True,
        model: str = "",
        checkpoint: str = "",
        patent_fetch: int = 4,
        patent_nprobe: int = 0,
        **params: Any,
    ) -> DenseIndex:
        """Build an index over ``embeddings`` ``[N, D]``, row i being figure ``ids[i]`` of patent
        ``patent_ids[i]``.

        ``kind`` is one of ``flat`` (exact, default), ``ivf``, ``ivfpq``, ``hnsw``; ``params`` are that
        kind's options (see the module docstring; unknown ones are errors, omitted ones are chosen
        from N and D). ``normalize`` L2-normalises embeddings and queries so scores are cosines.
        ``model`` and ``checkpoint`` name the encoder that produced the embeddings; they are saved
        in ``params.json`` so that queries can be encoded the same way. ``patent_fetch``: figures
        fetched per patent asked for by ``search_patents`` and ``patent_nprobe`` the lists it probes (IVF
        kinds; 0: ``nprobe``), measured by bench/bench_scale.py so its patent top 10 equals exact search's.
        """
        x = _as_matrix(embeddings, "embeddings")
        n, dim = x.shape
        if n == 0:
            raise ValueError("cannot build an index from 0 embeddings")
        ids, patent_ids = [str(i) for i in ids], [str(p) for p in patent_ids]
        if len(ids) != n or len(patent_ids) != n:
            raise ValueError(f"got {n} embeddings but {len(ids)} figure ids and {len(patent_ids)} patent ids")
        if len(set(ids)) != n:
            seen: set[str] = set()
            dup = next(i for i in ids if i in seen or seen.add(i))  # type: ignore[func-returns-value]
            raise ValueError(f"figure ids must be unique; {dup!r} appears more than once")
        if normalize:
            x = _l2_normalize(x, "embeddings")
        p = resolve_params(kind, dict(params), n, dim)
        start = time.perf_counter()
        index = make_faiss_index(kind, p, dim)
        if not index.is_trained:
            index.train(x)
        index.add(x)
        apply_search_params(index, kind, p)
        seconds = time.perf_counter() - start
        if patent_fetch < 1:
            raise ValueError(f"patent_fetch must be at least 1, got {patent_fetch}")
        return cls(
            index,
            ids,
            patent_ids,
            x,
            kind,
            p,
            normalize,
            model,
            checkpoint,
            seconds,
            patent_fetch,
            patent_nprobe,
        )

    # -- properties ------------------------------------------------------------------------------

    @property
    def dim(self) -> int:
        return int(self.index.d)

    @property
    def count(self) -> int:
        return int(self.index.ntotal)

    def __len__(self) -> int:
        return self.count

    @property
    def metric(self) -> str:
        return "cosine" if self.normalize else "inner_product"

    def __repr__(self) -> str:
        return (
            f"DenseIndex(kind={self.kind!r}, count={self.count}, dim={self.dim}, "
            f"metric={self.metric!r}, params={self.params}, model={self.model!r})"
        )

    def set_search_params(self, **params: Any) -> None:
        """Change search-time options on the built index: ``nprobe`` (ivf, ivfpq), ``refine``
        (ivfpq built with refine > 0), ``efSearch`` (hnsw)."""
        allowed = SEARCH_PARAMS[self.kind]
        unknown = sorted(set(params) - set(allowed))
        if unknown:
            raise ValueError(
                f"cannot change {unknown} on a built {self.kind!r} index; search-time options: {list(allowed)}"
            )
        if "refine" in params and (self.params["refine"] == 0) != (params["refine"] == 0):
            raise ValueError("refine can only be switched on or off by rebuilding the index")
        updated = {**self.params, **params}
        resolve_params(self.kind, updated, self.count, self.dim)  # validates the new values
        apply_search_params(self.index, self.kind, updated)
        self.params = updated

    def embedding(self, figure_id: str) -> np.ndarray:
        """The stored ``[D]`` embedding of one figure."""
        if figure_id not in self._row:
            raise KeyError(f"figure {figure_id!r} is not in the index")
        return self.embeddings[self._row[figure_id]]

    # -- search ----------------------------------------------------------------------------------

    def _queries(self, queries: Any) -> np.ndarray:
        q = np.asarray(queries, dtype=np.float32)
        if q.ndim == 1:
            q = q[None, :]
        if q.ndim != 2:
            raise ValueError(f"queries must be [D] or [Q, D], got shape {q.shape}")
        if q.shape[1] != self.dim:
            raise ValueError(f"query dimension {q.shape[1]} does not match the index dimension {self.dim}")
        if not np.isfinite(q).all():
            raise ValueError("queries contain NaN or infinite values")
        q = np.ascontiguousarray(q)
        return _l2_normalize(q, "query") if self.normalize else q

    def allowed_rows(self, allowed: Collection[str]) -> np.ndarray:
        """Row numbers ``[M]`` (ascending) of the figures whose patent is in ``allowed``."""
        by = self.prepare_patents()
        rows = [by[p] for p in set(allowed) if p in by]
        return np.sort(np.concatenate(rows)) if rows else np.zeros(0, dtype=np.int64)

    def _selector(
        self, rows: np.ndarray | None, nprobe: int = 0, exclude: bool = False
    ) -> faiss.SearchParameters:
        """FAISS search parameters that keep only ``rows`` (an id selector; ``None``: every row; with
        ``exclude`` every row but them), carrying this index's search-time options (parameters passed to
        a search replace the index's own); ``nprobe`` > 0 replaces the index's for IVF kinds."""
        inner = None if rows is None else faiss.IDSelectorBatch(rows)
        sel = faiss.IDSelectorNot(inner) if exclude and inner is not None else inner
        if self.kind in IVF_KINDS:
            params = faiss.SearchParametersIVF(sel=sel, nprobe=int(nprobe or self.params["nprobe"]))
            if self.kind == "ivfpq" and self.params.get("refine", 0) > 0:
                params = faiss.IndexRefineSearchParameters(
                    k_factor=float(self.params["refine"]), base_index_params=params
                )
        elif self.kind == "hnsw":
            params = faiss.SearchParametersHNSW(sel=sel, efSearch=int(self.params["efSearch"]))
        else:
            params = faiss.SearchParameters(sel=sel)
        params._keep = (sel, inner, rows)  # the SWIG objects hold raw pointers to these
        return params

    def _search(self, q: np.ndarray, k: int, params: Any = None) -> tuple[np.ndarray, np.ndarray]:
        """FAISS search of ``q`` ``[Q, D]``; with ``rescore`` > 0 the ``rescore * k`` candidates FAISS
        returns are re-scored exactly from ``embeddings`` and the best k kept (rows ``-1`` pad)."""
        factor = int(self.params.get("rescore", 0) or 0)
        if self.kind in IVF_KINDS:
            # fewer queries than threads (an examiner's one upload): FAISS splits the probed lists over the
            # threads; a batch is split by query (mode 0). On 2 threads this halves one query's latency.
            faiss.extract_index_ivf(self.index).parallel_mode = 1 if q.shape[0] < get_num_threads() else 0
        if factor <= 0:
            return self.index.search(q, k, params=params)
        _, cand = self.index.search(q, min(self.count, factor * k), params=params)
        scores = np.full((q.shape[0], k), -np.inf, np.float32)
        rows = np.full((q.shape[0], k), -1, np.int64)
        for i, c in enumerate(cand):
            c = np.sort(c[c >= 0])  # ascending rows read a memory-mapped file in order
            s = rows_dot(self.embeddings, c, q[i])
            top = np.lexsort((c, -s))[:k]
            scores[i, : len(top)], rows[i, : len(top)] = s[top], c[top]
        return scores, rows

    def search_raw(
        self, queries: Any, k: int, allowed: Collection[str] | None = None
    ) -> tuple[np.ndarray, np.ndarray]:
        """FAISS search: ``queries`` ``[Q, D]`` (or ``[D]``) → scores ``[Q, k]`` and row numbers
        ``[Q, k]``. Approximate kinds may find fewer than k figures: missing rows are ``-1``.
        ``allowed`` (patent ids) restricts the search to those patents' figures (a FAISS id
        selector, so the k best allowed figures come back, not the allowed part of the top k)."""
        _check_k(k, self.count)
        q = self._queries(queries)
        if allowed is None:
            return self._search(q, k)
        rows = self.allowed_rows(allowed)
        if rows.size == 0:
            return np.full((q.shape[0], k), -np.inf, np.float32), np.full((q.shape[0], k), -1, np.int64)
        return self._search(q, k, params=self._selector(rows))

    def search_raw_excluding(
        self, queries: Any, k: int, excluded: Collection[str], exhaustive: bool = False
    ) -> tuple[np.ndarray, np.ndarray]:
        """``search_raw`` over the figures of every patent but ``excluded`` (a FAISS id selector, so the k
        best of the others come back; rows ``-1`` when every figure is excluded). ``exhaustive``: IVF kinds
        probe every list (the calibration's searches, which need the true best other figure, not the
        figure search's recall)."""
        _check_k(k, self.count)
        q = self._queries(queries)
        banned = self.allowed_rows(excluded)  # (the rows of those patents)
        if banned.size == self.count:
            return np.full((q.shape[0], k), -np.inf, np.float32), np.full((q.shape[0], k), -1, np.int64)
        every = int(self.params.get("nlist", 0)) if exhaustive and self.kind in IVF_KINDS else 0
        return self._search(q, k, params=self._selector(banned if banned.size else None, every, exclude=True))

    def _figure_results(self, scores: np.ndarray, rows: np.ndarray) -> Results:
        keep = rows >= 0
        rows, scores = rows[keep], scores[keep].astype(np.float32)
        order = np.lexsort((rows, -scores))  # score descending, ties by corpus position
        rows, scores = rows[order], scores[order]
        return Results(
            ids=[self.ids[r] for r in rows],
            scores=scores,
            extras=[{"patent_id": self.patent_ids[r]} for r in rows],
        )

    def search(self, query: Any, k: int = 50, allowed: Collection[str] | None = None) -> Results:
        """Top-k figures for one query ``[D]``: ``Results`` of figure ids, scores ``s(q, x)`` sorted
        descending (ties by corpus position), each extra ``{"patent_id": ...}``. ``allowed``: only
        figures of these patent ids (fewer than k only when fewer exist)."""
        q = np.asarray(query)
        if q.ndim != 1:
            raise ValueError(f"search takes one query [D], got shape {q.shape}; use search_batch for [Q, D]")
        return self.search_batch(q[None, :], k, allowed)[0]

    def search_batch(
        self, queries: Any, k: int = 50, allowed: Collection[str] | None = None
    ) -> list[Results]:
        """Top-k figures for each of ``queries`` ``[Q, D]``: one ``Results`` per query."""
        scores, rows = self.search_raw(queries, k, allowed)
        return [self._figure_results(s, r) for s, r in zip(scores, rows, strict=True)]

    def search_patents(
        self, query: Any, k: int = 50, fetch: int | None = None, allowed: Collection[str] | None = None
    ) -> Results:
        """Top-k patents for one query ``[D]``, each scored by its best figure (``aggregate_by_patent``).

        Figures are fetched ``fetch`` at a time (default ``patent_fetch * k``), growing fourfold until k
        distinct patents are found or every figure was asked for. ``allowed`` restricts the search
        to those patent ids inside FAISS; then fewer than k come back only when fewer are allowed.
        """
        q = np.asarray(query)
        if q.ndim != 1:
            raise ValueError(
                f"search_patents takes one query [D], got shape {q.shape}; use search_patents_batch"
            )
        return self.search_patents_batch(q[None, :], k, fetch, allowed)[0]

    def search_patents_batch(
        self, queries: Any, k: int = 50, fetch: int | None = None, allowed: Collection[str] | None = None
    ) -> list[Results]:
        """``search_patents`` for each of ``queries`` ``[Q, D]``."""
        if self._n_patents is None:  # a million ids take tens of milliseconds to count: once
            self._n_patents = len(set(self.patent_ids))
        n_patents = self._n_patents
        if self.count and k > n_patents:
            raise ValueError(
                f"k={k} exceeds the {n_patents} patents in the index; ask for at most {n_patents}"
            )
        _check_k(k, self.count)  # the index is not empty and k >= 1
        q = self._queries(queries)
        wide = self.patent_nprobe if self.kind in IVF_KINDS else 0
        params, pool = (self._selector(None, wide) if wide else None), self.count
        if allowed is not None:
            rows = self.allowed_rows(allowed)
            if rows.size == 0:
                return [Results.empty() for _ in range(q.shape[0])]
            params, pool = self._selector(rows, wide), int(rows.size)
            k = min(k, len({self.patent_ids[r] for r in rows}))
        todo = list(range(q.shape[0]))
        out: list[Results | None] = [None] * q.shape[0]
        n_fig = min(pool, fetch if fetch is not None else self.patent_fetch * k)
        if n_fig < 1:
            raise ValueError(f"fetch must be at least 1, got {fetch}")
        while todo:
            scores, rows_found = self._search(q[todo], n_fig, params=params)
            still = []
            for qi, s, r in zip(todo, scores, rows_found, strict=True):
                hits = self._figure_results(s, r)
                pids = [extra["patent_id"] for extra in hits.extras or []]
                if self.kind == "flat":
                    agg = aggregate_by_patent(hits.ids, hits.scores, pids, k)
                else:  # an approximate kind: score each patent found over all its figures, exactly
                    agg = self._complete(
                        aggregate_by_patent(hits.ids, hits.scores, pids, min(n_patents, 2 * k)),
                        q[qi],
                        rows if allowed is not None else None,
                        k,
                    )
                out[qi] = agg
                if len(agg.ids) < k and n_fig < pool:
                    still.append(qi)
            if n_fig >= pool and allowed is not None:  # an approximate kind may miss allowed figures
                for qi in (i for i in todo if len(out[i].ids) < k):  # type: ignore[union-attr]
                    s = rows_dot(self.embeddings, rows, q[qi])
                    out[qi] = aggregate_by_patent(
                        [self.ids[r] for r in rows], s, [self.patent_ids[r] for r in rows], k
                    )
            todo = still
            n_fig = min(pool, n_fig * 4)
        return out  # type: ignore[return-value]

    def prepare_patents(self) -> dict[str, np.ndarray]:
        """The rows of each patent's figures, which a per-patent search on an approximate kind re-scores
        (built once, about a second at a million figures; the app's warm-up builds it before the first
        search)."""
        if self._rows_of_patent is None:
            by: dict[str, list[int]] = {}
            for row, pid in enumerate(self.patent_ids):
                by.setdefault(pid, []).append(row)
            self._n_patents = len(by)
            self._rows_of_patent = {pid: np.asarray(r, dtype=np.int64) for pid, r in by.items()}
        return self._rows_of_patent

    def _complete(self, found: Results, q: np.ndarray, allowed_rows: np.ndarray | None, k: int) -> Results:
        """``found`` (patents ranked by their best *fetched* figure) re-scored by the best of *all* their
        figures (allowed ones only), exactly from the stored embeddings, cut to ``k``. An approximate index
        may miss a patent's best figure while it finds another of its views: this makes the patent's score
        and rank exact whenever any of its figures was fetched."""
        rows_of_patent = self.prepare_patents()
        ids, scores, extras = [], [], []
        for pid, extra in zip(found.ids, found.extras or [{}] * len(found.ids), strict=True):
            prow = rows_of_patent[pid]
            if allowed_rows is not None:
                prow = prow[np.isin(prow, allowed_rows)]
            s = rows_dot(self.embeddings, prow, q)
            best = int(np.argmax(s))
            ids.append(pid)
            scores.append(float(s[best]))
            extras.append({**extra, "figure_id": self.ids[int(prow[best])]})
        return Results.from_unsorted(ids, scores, extras).top(k)

    # -- persistence -----------------------------------------------------------------------------

    def save(self, path: str | os.PathLike[str], embeddings_dtype: str = "float32") -> Path:
        """Write the index directory (see the module docstring); ``embeddings_dtype`` ``"float16"``
        halves ``embeddings.npy``. Returns the directory."""
        if embeddings_dtype not in ("float32", "float16"):
            raise ValueError(f"embeddings_dtype must be 'float32' or 'float16', got {embeddings_dtype!r}")
        root = Path(path)
        root.mkdir(parents=True, exist_ok=True)
        atomic_write(root / INDEX_FILE, lambda tmp: faiss.write_index(self.index, tmp), private=True)
        atomic_json(
            root / IDS_FILE,
            {"ids": self.ids, "patent_ids": self.patent_ids},
            True,
            ensure_ascii=False,
            indent=1,
        )
        emb = self.embeddings.astype(embeddings_dtype)

        def write_npy(tmp: str) -> None:
            with open(tmp, "wb") as f:
                np.save(f, emb)

        atomic_write(root / EMBEDDINGS_FILE, write_npy, private=True)
        atomic_json(
            root / PARAMS_FILE,
            self.describe() | {"embeddings_dtype": embeddings_dtype},
            True,
            ensure_ascii=False,
            indent=1,
        )
        return root

    def describe(self) -> dict[str, Any]:
        """What ``params.json`` holds (less the file dtype): kind, params, dim, count, metric, model."""
        return {
            "format_version": FORMAT_VERSION,
            "kind": self.kind,
            "params": self.params,
            "dim": self.dim,
            "count": self.count,
            "metric": self.metric,
            "normalize": self.normalize,
            "model": self.model,
            "checkpoint": self.checkpoint,
            "patent_fetch": self.patent_fetch,
            "patent_nprobe": self.patent_nprobe,
            "faiss_version": faiss.__version__,
        }

    @classmethod
    def load(cls, path: str | os.PathLike[str], mmap: bool | None = None) -> DenseIndex:
        """Read an index directory written by ``save``; inconsistent files are ``ValueError``s.
        ``mmap``: map the float32 embeddings and the FAISS index from disk instead of reading them
        (``None``: when the index holds at least ``MMAP_MIN`` figures). The compact kinds (IVF-SQ, IVF-PQ:
        codes of a quarter of the vectors or less) are read even then: mapped, FAISS serves their lists
        through ``OnDiskInvertedLists``, which made one 1M-figure query 60% slower (``MAPPED_KINDS``)."""
        root = Path(path)
        missing = [
            name
            for name in (INDEX_FILE, IDS_FILE, EMBEDDINGS_FILE, PARAMS_FILE)
            if not (root / name).is_file()
        ]
        if missing:
            raise FileNotFoundError(f"{root} is not a dense index directory: missing {', '.join(missing)}")
        meta = json.loads((root / PARAMS_FILE).read_text(encoding="utf-8"))
        if meta.get("format_version") != FORMAT_VERSION:
            raise ValueError(
                f"{root / PARAMS_FILE}: format_version {meta.get('format_version')!r} is not {FORMAT_VERSION}"
            )
        kind = meta["kind"]
        mmap = meta.get("count", 0) >= MMAP_MIN if mmap is None else mmap
        if kind not in KINDS:
            raise ValueError(f"{root / PARAMS_FILE}: unknown index kind {kind!r}")
        names = json.loads((root / IDS_FILE).read_text(encoding="utf-8"))
        ids, patent_ids = list(names["ids"]), list(names["patent_ids"])
        index = faiss.read_index(
            str(root / INDEX_FILE), faiss.IO_FLAG_MMAP if mmap and kind in MAPPED_KINDS else 0
        )
        embeddings = np.load(root / EMBEDDINGS_FILE, mmap_mode="r" if mmap else None, allow_pickle=False)
        if embeddings.dtype != np.float32:  # float16 on disk: read and widen
            embeddings = np.asarray(embeddings, dtype=np.float32)
        counts = {
            "params.json count": meta["count"],
            f"{INDEX_FILE} vectors": int(index.ntotal),
            "figure ids": len(ids),
            "patent ids": len(patent_ids),
            f"{EMBEDDINGS_FILE} rows": embeddings.shape[0],
        }
        if len(set(counts.values())) != 1:
            raise ValueError(f"{root}: the files disagree on the number of figures: {counts}")
        dims = {
            "params.json dim": meta["dim"],
            INDEX_FILE: int(index.d),
            EMBEDDINGS_FILE: embeddings.shape[1],
        }
        if len(set(dims.values())) != 1:
            raise ValueError(f"{root}: the files disagree on the dimension: {dims}")
        params = dict(meta["params"])
        apply_search_params(index, kind, params)
        return cls(
            index,
            ids,
            patent_ids,
            embeddings,
            kind,
            params,
            normalize=bool(meta["normalize"]),
            model=str(meta.get("model", "")),
            checkpoint=str(meta.get("checkpoint", "")),
            patent_fetch=int(meta.get("patent_fetch", 4)),
            patent_nprobe=int(meta.get("patent_nprobe", 0)),
        )
