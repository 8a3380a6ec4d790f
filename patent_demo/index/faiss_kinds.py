"""The FAISS index kinds of ``DenseIndex``: their parameters (defaults chosen from N and D at build time),
how each is constructed and how its search-time parameters are applied, and the OpenMP threads FAISS uses.
Which kind a corpus of a given size gets is ``patent_demo.index.scale.index_settings``."""

from __future__ import annotations

import math
import os
from typing import Any

import faiss

KINDS = ("flat", "ivf", "ivfsq", "ivfpq", "hnsw")
SQ_TYPES = ("sq8", "fp16")  # ivfsq codes: 1 byte per dimension (8-bit scalar quantiser) or 2 (half floats)

# Parameters each kind accepts; ``None`` means "chosen from N and D at build time". ``train``: the k-means
# training points per list (FAISS samples ``train * nlist`` embeddings; ``None``: FAISS's 256). ``rescore``
# > 0: ``DenseIndex`` takes ``rescore * k`` candidates from FAISS and re-scores them exactly from its stored
# float32 embeddings (no second copy of the vectors inside the index, unlike ``refine``). ``pca`` > 0 (ivfsq):
# the lists hold codes of the embeddings projected to their first ``pca`` principal components (a FAISS
# ``PCAMatrix`` in front), searched by L2 distance there (for unit vectors L2 ranks as the inner product
# does, and it survives the centring); it needs ``rescore`` > 0, which gives the exact cosines back.
KIND_DEFAULTS: dict[str, dict[str, Any]] = {
    "flat": {},
    "ivf": {"nlist": None, "nprobe": None, "seed": 1234, "train": None},
    "ivfsq": {
        "nlist": None,
        "nprobe": None,
        "qtype": "sq8",
        "rescore": 0,
        "seed": 1234,
        "train": None,
        "pca": 0,
    },
    "ivfpq": {
        "nlist": None,
        "nprobe": None,
        "m": None,
        "nbits": None,
        "refine": 0,
        "rescore": 0,
        "seed": 1234,
        "train": None,
    },
    "hnsw": {"M": 32, "efConstruction": 80, "efSearch": 64},
}
# Parameters that only change search, so ``set_search_params`` may change them on a built index.
SEARCH_PARAMS: dict[str, tuple[str, ...]] = {
    "flat": (),
    "ivf": ("nprobe",),
    "ivfsq": ("nprobe", "rescore"),
    "ivfpq": ("nprobe", "refine", "rescore"),
    "hnsw": ("efSearch",),
}


# ----------------------------------------------------------------------------------------------
# threads


def default_num_threads() -> int:
    """The thread count ``set_num_threads()`` uses: ``$OMP_NUM_THREADS`` when set, else the CPU count."""
    env = os.environ.get("OMP_NUM_THREADS", "").strip()
    if env.isdigit() and int(env) > 0:
        return int(env)
    return os.cpu_count() or 1


def set_num_threads(n: int | None = None) -> int:
    """Set the OpenMP threads FAISS uses for build and search; returns the count now in effect.

    ``None`` picks ``default_num_threads()``. For one query at a time (the app) 1 thread is often
    fastest; batched search and IVF training gain from more.
    """
    if n is None:
        n = default_num_threads()
    if n < 1:
        raise ValueError(f"thread count must be at least 1, got {n}")
    faiss.omp_set_num_threads(int(n))
    return get_num_threads()


def get_num_threads() -> int:
    """The OpenMP thread count FAISS currently uses."""
    return int(faiss.omp_get_max_threads())


IVF_KINDS = ("ivf", "ivfsq", "ivfpq")


def default_pq_m(dim: int) -> int:
    """Sub-quantisers so that each covers 8 dimensions (4, 2 or 1 when 8 does not divide D)."""
    for sub in (8, 4, 2, 1):
        if dim % sub == 0:
            return dim // sub
    return 1  # unreachable: 1 divides every D


def resolve_params(kind: str, params: dict[str, Any], n: int, dim: int) -> dict[str, Any]:
    """Fill defaults chosen from N and D, and reject unknown or invalid values with a clear message."""
    if kind not in KIND_DEFAULTS:
        raise ValueError(f"unknown index kind {kind!r}; choose one of {list(KINDS)}")
    allowed = KIND_DEFAULTS[kind]
    unknown = sorted(set(params) - set(allowed))
    if unknown:
        raise ValueError(f"unknown parameter(s) for kind {kind!r}: {unknown}; allowed: {sorted(allowed)}")
    p = {**allowed, **{key: value for key, value in params.items() if value is not None}}
    if kind in IVF_KINDS:
        if p["nlist"] is None:  # ~sqrt(N) lists, with at least 39 training points per list
            p["nlist"] = max(1, min(int(round(math.sqrt(n))), n // 39))
        if not 1 <= p["nlist"] <= n:
            raise ValueError(f"nlist={p['nlist']} must be between 1 and the number of embeddings ({n})")
        if p["nprobe"] is None:
            p["nprobe"] = min(p["nlist"], max(1, p["nlist"] // 8))
        if not 1 <= p["nprobe"] <= p["nlist"]:
            raise ValueError(f"nprobe={p['nprobe']} must be between 1 and nlist={p['nlist']}")
        if p["train"] is not None and p["train"] < 1:
            raise ValueError(f"train={p['train']} training points per list must be at least 1")
    if p.get("rescore", 0) < 0:
        raise ValueError(f"rescore={p['rescore']} must be 0 (off) or a positive candidate factor")
    if kind == "ivfsq" and p["qtype"] not in SQ_TYPES:
        raise ValueError(f"qtype={p['qtype']!r} is not one of {list(SQ_TYPES)}")
    if kind == "ivfsq" and p["pca"]:
        if not 1 <= p["pca"] < dim:
            raise ValueError(f"pca={p['pca']} must be 0 (off) or a dimension between 1 and {dim - 1}")
        if p["rescore"] <= 0:
            raise ValueError(
                f"pca={p['pca']} needs rescore > 0: distances between projected codes are not the model's "
                "cosines, the re-scoring from the stored embeddings gives them back"
            )
    if kind == "ivfpq":
        if p["m"] is None:
            p["m"] = default_pq_m(dim)
        if p["m"] < 1 or dim % p["m"] != 0:
            raise ValueError(f"m={p['m']} sub-quantisers must divide the dimension {dim}")
        if p["nbits"] is None:
            p["nbits"] = max(1, min(8, int(math.log2(n))))
        if not 1 <= p["nbits"] <= 16:
            raise ValueError(f"nbits={p['nbits']} must be between 1 and 16")
        if 2 ** p["nbits"] > n:
            raise ValueError(
                f"nbits={p['nbits']} needs at least {2 ** p['nbits']} training embeddings, got {n}; "
                f"use nbits <= {int(math.log2(n))}"
            )
        if p["refine"] < 0:
            raise ValueError(f"refine={p['refine']} must be 0 (off) or a positive re-scoring factor")
    if kind == "hnsw":
        for key in ("M", "efConstruction", "efSearch"):
            if p[key] < 1:
                raise ValueError(f"{key}={p[key]} must be at least 1")
    return p


def make_faiss_index(kind: str, p: dict[str, Any], dim: int) -> faiss.Index:
    ip = faiss.METRIC_INNER_PRODUCT
    if kind == "flat":
        return faiss.IndexFlatIP(dim)
    if kind == "hnsw":
        index = faiss.IndexHNSWFlat(dim, int(p["M"]), ip)
        index.hnsw.efConstruction = int(p["efConstruction"])
        return index
    quantizer = faiss.IndexFlatIP(dim)
    if kind == "ivf":
        index = faiss.IndexIVFFlat(quantizer, dim, int(p["nlist"]), ip)
    elif kind == "ivfsq":
        qtype = faiss.ScalarQuantizer.QT_8bit if p["qtype"] == "sq8" else faiss.ScalarQuantizer.QT_fp16
        if p.get("pca"):
            low = int(p["pca"])
            inner = faiss.IndexIVFScalarQuantizer(
                faiss.IndexFlatL2(low), low, int(p["nlist"]), qtype, faiss.METRIC_L2
            )
            _ivf_training(inner, p)
            return faiss.IndexPreTransform(faiss.PCAMatrix(dim, low), inner)
        index = faiss.IndexIVFScalarQuantizer(quantizer, dim, int(p["nlist"]), qtype, ip)
    else:
        index = faiss.IndexIVFPQ(quantizer, dim, int(p["nlist"]), int(p["m"]), int(p["nbits"]), ip)
        index.pq.cp.seed = int(p["seed"])
        index.pq.cp.min_points_per_centroid = 1  # small corpora are expected; no warning spam
    _ivf_training(index, p)
    # the faiss Python wrappers keep ``quantizer`` (and below ``index``) alive with their owner
    if kind == "ivfpq" and p["refine"] > 0:
        return faiss.IndexRefineFlat(index)
    return index


def _ivf_training(index: faiss.IndexIVF, p: dict[str, Any]) -> None:
    index.cp.seed = int(p["seed"])
    index.cp.min_points_per_centroid = 1
    if p.get("train") is not None:
        index.cp.max_points_per_centroid = int(p["train"])


def apply_search_params(index: faiss.Index, kind: str, p: dict[str, Any]) -> None:
    if kind in IVF_KINDS:
        faiss.extract_index_ivf(index).nprobe = int(p["nprobe"])
    if kind == "ivfpq" and p.get("refine", 0) > 0:
        faiss.downcast_index(index).k_factor = float(p["refine"])
    if kind == "hnsw":
        faiss.downcast_index(index).hnsw.efSearch = int(p["efSearch"])
