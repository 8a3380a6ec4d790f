"""The tables of docs/scale.md from bench_scale.py's records: ``render_markdown`` (measured kinds, the
app's picks, the per-patent search, HNSW builds, memory-mapped opens) and ``render_projection`` (bytes per
vector and index size of each kind at 1M, 10M and 100M vectors)."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from patent_demo.index.scale import describe_choice, kind_label, pick  # noqa: E402

ORDER = ("flat", "ivf", "ivfsq", "ivfpq", "hnsw")


def settings_label(params: dict) -> str:
    keys = ("pca", "nlist", "nprobe", "rescore", "m", "efSearch")
    return ", ".join(f"{k} {params[k]}" for k in keys if params.get(k))


TIE_NOTE = " (the same score at every rank; patents tied to 1e-6 may swap)"


def apply_patent(rows: list[dict], records: list[dict]) -> list[dict]:
    """``rows`` (copies) with the per-patent search measured for them in ``records``: ``patent_exact`` and,
    when exact, ``patent_fetch`` / ``patent_nprobe`` of the fastest exact setting."""
    rows = [dict(r) for r in rows]
    for rec in [r for r in records if "patent_overfetch" in r]:
        o = rec["patent_overfetch"]
        for r in rows:
            if (r["kind"], r["n"], r["params"], r["dim"]) == (
                o["kind"],
                o["n"],
                o["params"],
                rec.get("dim", r["dim"]),
            ):
                r["patent_exact"] = bool(o["first_exact_factor"])
                if o["first_exact_factor"]:
                    r["patent_fetch"], r["patent_nprobe"] = (
                        o["first_exact_factor"],
                        o.get("exact_nprobe") or 0,
                    )
    return rows


def render_markdown(records: list[dict]) -> str:
    """The measured table (markdown) from bench records: per size, every kind and setting, the ones that
    meet recall@100 >= 0.95 in bold, then the app's pick, the patent over-fetch, HNSW builds, mmap opens."""
    from patent_demo.index.scale import LATENCY_BUDGET_MS, meets_recall

    rows = [r for r in records if "kind" in r and "recall@100" in r]
    lines = [
        "| dim | vectors | kind | settings | recall@100 | p50 ms | p95 ms | index MB | build s | load |",
        "|---:|---:|---|---|---:|---:|---:|---:|---:|---:|",
    ]
    for r in sorted(rows, key=lambda r: (r["dim"], r["n"], ORDER.index(r["kind"]))):
        ok = meets_recall(r) and r["latency_ms_p50"] <= LATENCY_BUDGET_MS
        rec = f"**{r['recall@100']:.3f}**" if ok else f"{r['recall@100']:.3f}"
        rec += f" ± {r['recall@100_se']:.3f}" if r.get("recall@100_se") else ""
        lines.append(
            f"| {r['dim']} | {r['n']:,} | {kind_label(r['kind'], r['params'])} | {settings_label(r['params'])} | "
            f"{rec} | {r['latency_ms_p50']:.1f} | {r['latency_ms_p95']:.1f} | {r['index_mb']:.0f} | "
            f"{r['build_s']:.0f} | {r['load'][0]:.1f} |"
        )
    extra = []
    for r in records:
        if (
            "patent_overfetch" in r and "nprobe" in r["patent_overfetch"]["factors"][0]
        ):  # (older runs: no nprobe)
            o = r["patent_overfetch"]
            shares = ", ".join(
                f"nprobe {f.get('nprobe') or o['params'].get('nprobe', '-')} fetch {f['factor']}x: "
                f"{f.get('exact_share', f['equal_share']):.3f} ({f['latency_ms_p50']:.1f} ms)"
                for f in o["factors"]
            )
            found = (
                f"fastest exact: fetch {o['first_exact_factor']}x, nprobe {o.get('exact_nprobe') or o['params'].get('nprobe')}"
                if o["first_exact_factor"]
                else "no setting tried was exact for every query"
            )
            dim = f"{r['dim']}-d, " if r.get("dim") else ""
            extra.append(
                f"- {o['n']:,} x {dim}{o['params'].get('nlist', '')} lists, {kind_label(o['kind'], o['params'])}: share of "
                f"queries whose per-patent top {o['top']} equals exact search's{TIE_NOTE if 'exact_share' in o['factors'][0] else ''}: {shares}; {found}"
            )
        if "hnsw_build" in r:
            h = r["hnsw_build"]
            extra.append(
                f"- HNSW (M 32, efConstruction 80) at {h['n']:,}: {h['added']:,} figures added in "
                f"{h['seconds']:.0f} s of a {h['budget_s']:.0f} s budget ({'complete' if h['complete'] else 'not complete'})"
            )
        if "mmap_open" in r:
            for m in r["mmap_open"]:
                extra.append(
                    f"- open {'memory-mapped' if m['mmap'] else 'read whole'}: {m['open_s']} s, "
                    f"first query {m['first_query_s']} s, RSS {m['rss_mb']:.0f} MB (peak {m['peak_rss_mb']:.0f} MB)"
                )
    for dim, n in sorted(
        {(r["dim"], r["n"]) for r in rows}
    ):  # what the rule (scale.pick) takes from these rows
        choice = pick(apply_patent([r for r in rows if r["dim"] == dim], records), n, dim)
        extra.append(f"- {n:,} x {dim}-d: the app picks {describe_choice(choice)}")
    measured = [
        f"- {kind_label(r['kind'], r['params'])} at {r['n']:,} x {r['dim']}: measured "
        f"{r['index_mb'] * 2**20 / r['n']:,.0f} bytes/vector, formula {bytes_per_vector(r['kind'], r['dim'], r['params']):,.0f}"
        for r in {(r["kind"], r["params"].get("qtype"), r["n"], r["dim"]): r for r in rows}.values()
        if r["n"] == max(x["n"] for x in rows if x["dim"] == r["dim"])
    ]
    return "\n".join(lines + [""] + extra + [""] + measured) + "\n\n" + render_projection()


def bytes_per_vector(kind: str, dim: int, params: dict) -> float:
    """Index bytes per vector of a kind (FAISS layouts; an IVF list entry also holds an 8-byte id):
    flat 4D, IVF-Flat 4D + 8, IVF-SQ8 D + 8, IVF-fp16 2D + 8, IVF-PQ m nbits / 8 + 8, HNSW 4D + 8M (the
    level-0 links, 2M neighbours of 4 bytes; the upper levels add about 1/M of that)."""
    if kind == "flat":
        return 4.0 * dim
    if kind == "ivf":
        return 4.0 * dim + 8
    if kind == "ivfsq":
        coded = params.get("pca") or dim  # the codes of the first ``pca`` components (the matrix is shared)
        return (coded if params.get("qtype", "sq8") == "sq8" else 2 * coded) + 8.0
    if kind == "ivfpq":
        return params.get("m", dim // 8) * params.get("nbits", 8) / 8 + 8.0
    if kind == "hnsw":
        return 4.0 * dim + 8 * params.get("M", 32)
    raise ValueError(kind)


PROJECTED = [
    ("flat", {}),
    ("ivf", {}),
    ("ivfsq", {"qtype": "sq8"}),
    ("ivfsq", {"qtype": "fp16"}),
    ("ivfpq", {"m": 32, "nbits": 8}),
    ("hnsw", {"M": 32}),
]


def render_projection(
    dims=(256, 384, 1280), sizes=(1_000_000, 10_000_000, 100_000_000), shard=1_000_000
) -> str:
    """Index memory of each kind at 1M, 10M and 100M vectors (``bytes_per_vector``), the float32
    embeddings the re-scoring reads beside it, and the shards of ``shard`` vectors (the size measured
    to meet the targets on 2 cores)."""
    head = "| dim | kind | bytes/vector | " + " | ".join(f"{n // 1_000_000}M index GB" for n in sizes)
    lines = [
        head + " | float32 embeddings GB at " + " / ".join(f"{n // 1_000_000}M" for n in sizes) + " |",
        "|---:|---|---:|" + "---:|" * len(sizes) + "---|",
    ]
    for dim in dims:
        emb = " / ".join(f"{4 * dim * n / 1e9:,.0f}" for n in sizes)
        wide = [("ivfsq", {"qtype": "sq8", "pca": 256})] if dim > 256 else []  # codes of 256 components
        for kind, params in [*PROJECTED, *wide]:
            b = bytes_per_vector(kind, dim, {**params, "m": 32 if dim % 32 == 0 else dim // 8})
            cells = " | ".join(f"{b * n / 1e9:,.1f}" for n in sizes)
            lines.append(f"| {dim} | {kind_label(kind, params)} | {b:,.0f} | {cells} | {emb} |")
    shards = ", ".join(f"{n:,} vectors: {-(-n // shard)} shard(s)" for n in sizes)
    return "\n".join(lines) + f"\n\nShards of {shard:,} vectors: {shards}.\n"


def render_summary(records: list[dict], n: int = 1_000_000, dim: int = 256) -> str:
    """The headline of docs/scale.md: at ``n`` figures of ``dim``, the app's pick and, for every other kind,
    its best measured recall@100 with what it costs, each against the rule (recall, p50, bytes per vector)."""
    from patent_demo.index.scale import (
        INDEX_BYTES_PER_VECTOR,
        LATENCY_BUDGET_MS,
        RECALL_MARGIN_SE,
        RECALL_TARGET,
        describe_choice,
        meets_recall,
        pick,
    )

    rows = apply_patent(
        [r for r in records if "recall@100" in r and r.get("dim") == dim and r["n"] == n], records
    )
    best = pick(rows, n, dim)
    out = [
        f"- **The pick at {n:,} figures ({dim}-d): {describe_choice(best)}**"
        + (
            f"; p95 {best['latency_ms_p95']:.1f} ms, {best['index_mb']:.0f} MB of index, built in "
            f"{best['build_s']:.0f} s, load average {best['load'][0]:.1f}."
            if best
            else "."
        )
    ]
    groups = sorted(
        {(ORDER.index(r["kind"]), r["params"].get("qtype") or "", r["params"].get("pca") or 0) for r in rows}
    )
    for order, qtype, pca in groups:  # each kind, SQ code type and projection
        kind = ORDER[order]
        same = [
            r
            for r in rows
            if r["kind"] == kind
            and (r["params"].get("qtype") or "") == qtype
            and (r["params"].get("pca") or 0) == pca
        ]
        r = max(same, key=lambda r: (r["recall@100"], -r["latency_ms_p50"]))
        misses = [
            why
            for why, bad in (
                (
                    f"recall under {RECALL_TARGET} (with {RECALL_MARGIN_SE:g} standard errors to spare)",
                    not meets_recall(r),
                ),
                (f"p50 over {LATENCY_BUDGET_MS:.0f} ms", r["latency_ms_p50"] > LATENCY_BUDGET_MS),
                (
                    f"index over {INDEX_BYTES_PER_VECTOR} bytes a figure",
                    r["index_mb"] * 2**20 / n > INDEX_BYTES_PER_VECTOR,
                ),
            )
            if bad
        ]
        settings = settings_label(r["params"])
        out.append(
            f"- {kind_label(kind, r['params'])}, its best recall ({settings or 'exact'}): recall@100 "
            f"{r['recall@100']:.3f}, p50 {r['latency_ms_p50']:.1f} ms, {r['index_mb']:.0f} MB, built in "
            f"{r['build_s']:.0f} s" + (f" — {', '.join(misses)}" if misses else " — meets the rule")
        )
    return "\n".join(out)


def render_stats(records: list[dict]) -> str:
    """How the synthetic embeddings compare with the real ones (the logs' statistics records): the Red Book
    pages mixed into the base set and any collection measured beside them (``--real-stats``)."""
    syn = next((r["synthetic_embeddings"] for r in records if "synthetic_embeddings" in r), None)
    real = next((r["real_embeddings"] for r in records if "real_embeddings" in r), None)
    if not syn or not real:
        return "(no embedding statistics in the logs)"
    others = [r["real_stats"] for r in records if "real_stats" in r]
    keys = (
        ("random_pair", "mean cosine of random pairs"),
        ("same_patent", "mean cosine of same-patent pairs"),
        ("participation_ratio", "effective dimension (participation ratio)"),
        ("participation_ratio_1000_patents", "effective dimension of one figure each of 1,000 patents"),
    )
    heads = ["synthetic", f"real Red Book ({real['figures']} pages)"] + [
        f"real {o['label']} ({o['figures']:,} figures)" for o in others
    ]
    lines = ["| statistic | " + " | ".join(heads) + " |", "|---|" + "---:|" * len(heads)]
    for k, label in keys:
        cells = [c.get(k) for c in (syn, real, *others)]
        if any(v is not None for v in cells):
            lines.append(f"| {label} | " + " | ".join("-" if v is None else f"{v:.3g}" for v in cells) + " |")
    return "\n".join(lines)


def render_check(record: dict) -> str:
    """The merged 1M corpus opened as the Workbench opens it (``bench_scale_corpus.py --check``)."""
    r = record
    whole, mapped = (next(o for o in r["open_fresh_process"] if o["mmap"] is m) for m in (False, True))
    rows = [
        (
            "`Workbench.index`" + (" (memory-mapped)" if r["mapped"] else ""),
            f"{r['index_open_s']:.1f} s, RSS {r['rss_after_open_mb']:,.0f} MB with the {r['figures']:,}-figure corpus loaded",
        ),
        ("what the status line and `corpus info` show", r["shown"]),
        (f"recall@100 of {r['queries']} held-out queries against exact search", f"**{r['recall@100']:.3f}**"),
        (
            "figure search p50 / p95, 2 threads",
            f"**{r['latency_ms_p50']:.1f} ms / {r['latency_ms_p95']:.1f} ms**",
        ),
        (
            "patent search (top 10) p50 / p95",
            f"{r['patent_ms_p50']:.1f} ms / {r['patent_ms_p95']:.1f} ms (nprobe "
            f"{r['patent_nprobe']}, fetch {r['patent_fetch']}x); equal to exact search's for "
            + (
                f"{r['patent_top10_exact_share']:.3f} of the queries (the same score at every rank; "
                f"{r['patent_top10_equal_share']:.3f} with the same patents in the same order)"
                if "patent_top10_exact_share" in r
                else f"{r['patent_top10_equal_share']:.3f} of the queries"
            ),
        ),
        (
            "`Workbench.search_drawing`, first / second call",
            f"{r['workbench_search_first_s']:.1f} s / {r['workbench_search_second_s']:.2f} s; top 3 "
            + ", ".join(r["workbench_top3"]),
        ),
        ("open in a fresh process, read whole", f"{whole['open_s']:.2f} s, RSS {whole['rss_mb']:,.0f} MB"),
        (
            "open in a fresh process, memory-mapped",
            f"**{mapped['open_s']:.2f} s, RSS {mapped['rss_mb']:,.0f} MB**",
        ),
    ]
    load = ", ".join(f"{x:.1f}" for x in r["load"])
    return "\n".join(
        [
            "| what | measured |",
            "|---|---|",
            *(f"| {a} | {b} |" for a, b in rows),
            "",
            f"(load average {load})",
        ]
    )


def render_headline(records: list[dict], dims: tuple[int, ...] = (256, 1280)) -> str:
    """The README's scale table: per embedding dimension, at the largest measured size, the index the app
    picks, its figure search and its per-patent top 10 (the fastest setting measured exact)."""
    lines = [
        "| embeddings (synthetic, real statistics) | index the app picks | figure search: recall@100, p50 | "
        "patent top 10: exact for, p50 | index |",
        "|---|---|---|---|---:|",
    ]
    for dim in dims:
        rows = [r for r in records if "recall@100" in r and r.get("dim") == dim]
        if not rows:
            continue
        n = max(r["n"] for r in rows)
        best = pick(apply_patent(rows, records), n, dim)
        if best is None or best["kind"] == "flat":
            lines.append(f"| {n:,} × {dim}-d | flat (exact) | 1.000 | exact | - |")
            continue
        p = best["params"]
        over = next(
            (
                r["patent_overfetch"]
                for r in records
                if "patent_overfetch" in r
                and (
                    r["patent_overfetch"]["n"],
                    r["patent_overfetch"]["kind"],
                    r["patent_overfetch"]["params"],
                    r.get("dim", dim),
                )
                == (n, best["kind"], p, dim)
            ),
            None,
        )
        fast = over and next(
            (
                f
                for f in over["factors"]
                if f["factor"] == best.get("patent_fetch") and f["nprobe"] == best.get("patent_nprobe")
            ),
            None,
        )
        patent = (
            f"{fast.get('exact_share', fast['equal_share']):.3f} of queries, {fast['latency_ms_p50']:.1f} ms "
            f"(nprobe {fast['nprobe']}, fetch {fast['factor']}x)"
            if fast
            else "not measured exact"
        )
        lines.append(
            f"| {n:,} × {dim}-d | {kind_label(best['kind'], p)} ({settings_label(p)}) | "
            f"{best['recall@100']:.3f}, {best['latency_ms_p50']:.1f} ms | {patent} | {best['index_mb']:.0f} MB |"
        )
    return "\n".join(lines)
