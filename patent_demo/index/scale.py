"""Large collections: which index kind to build for N vectors, and one index merged from shards.

Which kind: by measurement, not by size alone. ``bench/bench_scale.py`` measures every kind and setting
(recall@100 against exact search, p50 / p95 on 2 threads, index memory) at 100k, 300k and 1M figures and
writes ``scale_table.json`` beside this module; :func:`pick` takes the cheapest record meeting recall@100
>= 0.95 within the per-query budget (docs/scale.md).

Shards: rows ``[i * shard_size, (i + 1) * shard_size)`` of a collection's embeddings live in
``shard-{i:05d}.npy`` (:func:`shard_ranges`, :func:`shard_path`; ``patent-demo index embed``
writes them); :func:`merge_shards` memory-maps the shards in order and builds one ``DenseIndex`` of the
kind :func:`index_settings` picks for their size.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from patent_demo.index.faiss_kinds import KIND_DEFAULTS

if TYPE_CHECKING:
    from patent_demo.index.dense import DenseIndex

TABLE = Path(__file__).with_name("scale_table.json")  # written by bench/bench_scale.py --table
RECALL_TARGET = 0.95  # recall@100 against exact search
RECALL_MARGIN_SE = 3.0  # ... by this many standard errors (over the bench's queries) to spare
LATENCY_BUDGET_MS = 20.0  # p50 per query on 2 cores
INDEX_BYTES_PER_VECTOR = 500  # index memory beside the embeddings: 500 MB at 1M figures
KIND_NAMES = {"flat": "flat (exact)", "ivf": "IVF-Flat", "ivfpq": "IVF-PQ", "hnsw": "HNSW"}


def load_table(path: str | os.PathLike | None = None) -> list[dict]:
    """The measured records (one per kind, size and setting) the choice is made from (none when the
    table is missing: then every corpus gets exact search)."""
    table = Path(path or TABLE)
    return json.loads(table.read_text(encoding="utf-8"))["records"] if table.is_file() else []


def exact_scores(record: dict) -> bool:
    """Whether a kind and setting returns exact cosines (the scores the examiner sees, and what makes the
    per-patent ranking equal exact search's): full vectors (IVF-Flat, HNSW) or codes re-scored exactly, and
    not measured to miss the exact per-patent top 10 at every over-fetch and nprobe tried."""
    p = record["params"]
    if record.get("patent_exact") is False:  # measured: no setting tried gave the exact patent top 10
        return False
    return record["kind"] in ("flat", "ivf", "hnsw") or p.get("rescore", 0) > 0 or p.get("refine", 0) > 0


def meets_recall(record: dict) -> bool:
    """Recall@100 at least ``RECALL_TARGET`` with ``RECALL_MARGIN_SE`` standard errors of its mean over
    the bench's queries to spare (records without one: the mean alone), so that a setting that only
    just met it on these queries is not taken for one that meets it on another collection."""
    return record["recall@100"] - RECALL_MARGIN_SE * record.get("recall@100_se", 0.0) >= RECALL_TARGET


def pick(records: Sequence[dict], n: int, dim: int = 256) -> dict | None:
    """The measured record the app builds for ``n`` figures of dimension ``dim``, or ``None`` (exact).

    Only records of dimension ``dim`` count; records of the smallest measured size >= n are used (the largest when n is beyond them): recall falls
    and latency grows with N. Flat (exact) is taken while its p50, linear in N, scaled to n stays within
    ``LATENCY_BUDGET_MS``. Otherwise the cheapest record with exact scores (:func:`exact_scores`) meeting
    ``RECALL_TARGET`` (:func:`meets_recall`) within the latency budget and ``INDEX_BYTES_PER_VECTOR``: the least index memory,
    then the lowest p50. ``None`` when
    nothing met the rule: exact search, slower but never missing a neighbour."""
    same_dim = [r for r in records if r.get("dim") == dim]
    if not same_dim:  # never measured at this dimension: exact search
        return None
    sizes = sorted({r["n"] for r in same_dim})
    size = next((s for s in sizes if s >= n), sizes[-1])
    here = [r for r in same_dim if r["n"] == size]
    flat = [r for r in here if r["kind"] == "flat"]
    if flat and flat[0]["latency_ms_p50"] * n / size <= LATENCY_BUDGET_MS:
        return flat[0]
    ok = [
        r
        for r in here
        if r["kind"] != "flat"
        and exact_scores(r)
        and meets_recall(r)
        and r["latency_ms_p50"] <= LATENCY_BUDGET_MS
        and r["index_mb"] * 2**20 / r["n"] <= INDEX_BYTES_PER_VECTOR
    ]
    return min(ok, key=lambda r: (r["index_mb"], r["latency_ms_p50"]), default=None)


def kind_label(kind: str, params: dict) -> str:
    """``IVF-SQ8``, ``IVF-SQ8 of PCA-256``, ``IVF-FP16``, ``IVF-PQ``, ``HNSW``, ``IVF-Flat``, ``flat (exact)``."""
    if kind == "ivfsq":
        pca = f" of PCA-{params['pca']}" if params.get("pca") else ""
        return f"IVF-{str(params.get('qtype', 'sq8')).upper()}{pca}"
    return KIND_NAMES.get(kind, kind)


def describe_choice(record: dict | None) -> str:
    """``IVF-SQ8 (nprobe 32, re-scored 4x), measured recall@100 0.97, p50 3.1 ms at 1,000,000 figures``."""
    if record is None:
        return "flat (exact): no measured kind met recall@100 0.95 within the latency budget"
    p = record["params"]
    bits = [f"nprobe {p['nprobe']}"] if p.get("nprobe") else []
    bits += [f"efSearch {p['efSearch']}"] if p.get("efSearch") else []
    bits += [f"re-scored {p['rescore']}x"] if p.get("rescore") else []
    setting = f" ({', '.join(bits)})" if bits else ""
    return (
        f"{kind_label(record['kind'], p)}{setting}, measured recall@100 {record['recall@100']:.2f}, "
        f"p50 {record['latency_ms_p50']:.1f} ms at {record['n']:,} figures"
    )


def choose_settings(n: int, dim: int = 256, records: Sequence[dict] | None = None) -> dict | None:
    """The measured record :func:`pick` takes from the shipped table (``None``: exact search)."""
    return pick(load_table() if records is None else records, n, dim)


def choose_kind(n: int, dim: int = 256) -> str:
    """The index kind the app builds for ``n`` figures of dimension ``dim`` (by the measured table)."""
    record = choose_settings(n, dim)
    return "flat" if record is None else record["kind"]


def index_settings(n: int, dim: int = 256) -> dict[str, Any]:
    """``DenseIndex.build`` keyword arguments for ``n`` figures: the measured kind, its parameters and
    the per-patent over-fetch (and lists probed) measured with it."""
    record = choose_settings(n, dim)
    if record is None or record["kind"] == "flat":
        return {"kind": "flat"}
    out = {"kind": record["kind"], **record["params"]}
    for key in ("patent_fetch", "patent_nprobe"):  # the per-patent search measured with it
        if record.get(key):
            out[key] = int(record[key])
    return out


def describe_index(index: Any, records: Sequence[dict] | None = None) -> str:
    """What the status line and ``patent-demo corpus info`` say about a built ``DenseIndex``: its kind,
    settings and the recall@100 measured for that kind and setting at the nearest measured size
    (``IVF-SQ8 (nprobe 64, re-scored 2x), measured recall@100 0.97, p50 4.1 ms at 1,000,000 figures``)."""
    count, params = int(index.count), dict(index.params)
    if index.kind == "flat":
        return f"flat (exact), recall@100 1.00 over {count:,} figures"
    keys = [
        k for k in ("nprobe", "rescore", "refine", "qtype", "pca", "m", "nbits", "efSearch") if k in params
    ]
    table = load_table() if records is None else records
    defaults = KIND_DEFAULTS.get(index.kind, {})  # a record of an older run may lack a newer parameter
    same = [
        r
        for r in table
        if r["kind"] == index.kind
        and r.get("dim") == index.dim
        and all(r["params"].get(k, defaults.get(k)) == params[k] for k in keys)
    ]
    sizes = sorted({r["n"] for r in same})
    size = next((s for s in sizes if s >= count), sizes[-1] if sizes else None)
    match = next((r for r in same if r["n"] == size), None)
    if match is None:
        return (
            f"{kind_label(index.kind, params)} over {count:,} figures (recall not measured for this setting)"
        )
    return f"{describe_choice(match)}; {count:,} figures here"


def shard_ranges(n: int, shard_size: int) -> list[tuple[int, int]]:
    """``[(start, stop)]`` row ranges of ``n`` figures in shards of ``shard_size``."""
    if shard_size < 1:
        raise ValueError(f"shard_size must be at least 1, got {shard_size}")
    return [(a, min(n, a + shard_size)) for a in range(0, n, shard_size)]


def shard_path(directory: str | os.PathLike, i: int) -> Path:
    return Path(directory) / f"shard-{i:05d}.npy"


def merge_shards(
    directory: str | os.PathLike,
    ids: Sequence[str],
    patent_ids: Sequence[str],
    kind: str | None = None,
    **build: Any,
):
    """One ``DenseIndex`` over every shard of ``directory`` in row order (``kind``: ``index_settings(N, D)``)."""
    from patent_demo.index.dense import DenseIndex

    directory = Path(directory)
    ranges = shard_ranges(len(ids), json.loads((directory / "shards.json").read_text())["shard_size"])
    missing = [i for i in range(len(ranges)) if not shard_path(directory, i).is_file()]
    if missing:
        raise FileNotFoundError(
            f"{len(missing)} of {len(ranges)} shards are not embedded yet (e.g. {shard_path(directory, missing[0])}); "
            "run the embedding again: it resumes"
        )
    parts = [np.load(shard_path(directory, i), mmap_mode="r") for i in range(len(ranges))]
    sizes = [len(p) for p in parts]
    if sizes != [b - a for a, b in ranges]:
        raise ValueError(
            f"shard sizes {sizes} do not match the {len(ids)} figures; embed again into a new folder"
        )
    x = np.concatenate(parts, axis=0)
    settings = {"kind": kind} if kind else index_settings(len(ids), x.shape[1])
    return DenseIndex.build(x, ids, patent_ids, **settings, **build)


def recall_against_exact(index: DenseIndex, exact: DenseIndex, queries: Any, k: int) -> float:
    """Mean over queries of ``|A_k(q) ∩ E_k(q)| / k``: the share of the exact top-k figures that
    the approximate ``index`` returns in its own top-k. ``queries`` ``[Q, D]``; both indexes must
    hold the same figures in the same order (build them from the same embeddings)."""
    if index.ids != exact.ids:
        raise ValueError("recall_against_exact needs two indexes over the same figures in the same order")
    _, approx_rows = index.search_raw(queries, k)
    _, exact_rows = exact.search_raw(queries, k)
    if approx_rows.shape[0] == 0:
        raise ValueError("recall_against_exact needs at least one query")
    found = [
        len(set(a[a >= 0].tolist()) & set(e[e >= 0].tolist())) / k
        for a, e in zip(approx_rows, exact_rows, strict=True)
    ]
    return float(np.mean(found))
