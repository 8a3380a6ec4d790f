"""The DSSDNet re-ranker's report pages: the cs3245 citation table over seeds and the USPPM scored-pair page
(the training commands write them, ``scripts/figures.py`` checks them)."""

from __future__ import annotations

from pathlib import Path

METRICS = ("recall@10", "map@10", "map_retrieved@10", "ndcg@10", "recall@20", "ndcg@20")
LISTS = ("bm25", "dssdnet", "fused")
# USPPM ablation name -> (what it tests, the trainer's flags)
VARIANTS: dict[str, tuple[str, list[str]]] = {
    "dssdnet": ("the full objective (Eq. 15), CPC title in the input", ["--variant", "dssdnet"]),
    "bert_c": ("plain cross-encoder: no decomposition, no gate", ["--variant", "bert_c"]),
    "ds_sd": ("decomposition and gate, scored by the two relevance heads", ["--variant", "ds_sd"]),
    "ds_sd_mr": ("+ fusion regression with e_t (no ranking loss)", ["--variant", "ds_sd_mr"]),
    "no-gate": ("gate off: g = 0.5, e_s split evenly", ["--variant", "dssdnet", "--no-gate"]),
    "no-context": (
        "CPC context off: the title left out of the input",
        ["--variant", "dssdnet", "--no-context"],
    ),
    "no-inf": ("informative BCE of both parts off (Eq. 7)", ["--variant", "dssdnet", "--loss-off", "inf"]),
    "no-orth": ("orthogonality off (Eq. 8)", ["--variant", "dssdnet", "--loss-off", "orth"]),
    "no-rec": ("reconstruction off (Eq. 9)", ["--variant", "dssdnet", "--loss-off", "rec"]),
    "no-t": ("domain focal loss off (Eq. 10)", ["--variant", "dssdnet", "--loss-off", "t"]),
    "no-mr": ("fusion regression loss off (Eq. 12)", ["--variant", "dssdnet", "--loss-off", "mr"]),
    "no-pr": (
        "pairwise ranking with hard negatives off (Eq. 14)",
        ["--variant", "dssdnet", "--loss-off", "pr"],
    ),
}


def citation_markdown(result: dict, command: str) -> str:
    """The cs3245 citation page: BM25, DSSDNet and the fused list over the seeds, bootstraps against BM25."""
    names = {"bm25": "BM25", "dssdnet": "DSSDNet (re-ranked)", "fused": "fused (BM25 + DSSDNet)"}
    heads = ["R@10", "MAP@10", "MAP†@10", "nDCG@10", "R@20", "nDCG@20"]
    weights = ", ".join(f"{s['weight']:.2f}" for s in result["per_seed"])
    lines = [
        f"Produced by `{command}`.",
        "",
        f"{result['queries']} test queries; mean ± std over {result['seeds']} seeds; BM25 weights tuned on the "
        f"validation queries: {weights}.",
        "",
        "| list | " + " | ".join(heads) + " |",
        "|---" * (len(heads) + 1) + "|",
    ]
    for name in LISTS:
        agg = result["lists"][name]
        lines.append(
            f"| {names[name]} | " + " | ".join(f"{agg[m][0]:.3f} ± {agg[m][1]:.3f}" for m in METRICS) + " |"
        )
    lines += [
        "",
        "Paired bootstrap vs BM25 (difference of the means, 95 % interval; queries resampled):",
        "",
        "| list | " + " | ".join(heads) + " |",
        "|---" * (len(heads) + 1) + "|",
    ]
    for name in ("dssdnet", "fused"):
        b = result["bootstrap_vs_bm25"][name]
        cells = [f"{b[m]['mean']:+.3f} [{b[m]['ci95'][0]:+.3f}, {b[m]['ci95'][1]:+.3f}]" for m in METRICS]
        lines.append(f"| {names[name]} | " + " | ".join(cells) + " |")
    lines += [
        "",
        "MAP: trec_eval AP@k; MAP†: the DSSDNet author's code (AP over the relevant documents retrieved).",
    ]
    return "\n".join(lines) + "\n"


def _ms(x: list[float]) -> str:
    return f"{x[0]:.3f} ± {x[1]:.3f}" if x[1] else f"{x[0]:.3f}"


def _ci(b: dict) -> str:
    return f"{b['diff']:+.3f} [{b['low']:+.3f}, {b['high']:+.3f}]"


def scored_markdown(r: dict, command: str) -> str:
    """The USPPM page: DSSDNet against the untrained bi-encoder in Pearson and Spearman, then the ablations."""
    v, t = r["splits"]["val"], r["splits"]["test"]
    lines = [
        "# DSSDNet on human-scored patent phrase pairs (USPPM)",
        "",
        f"Data: `{Path(r['data']).name}` (Google's U.S. Patent Phrase to Phrase Matching, scores in a CPC context), split "
        f"by anchor in `{r['split_file']}`: validation {v['anchors']} anchors / {v['pairs']} pairs, test {t['anchors']} "
        f"anchors / {t['pairs']} pairs, never trained on. Every choice was made on validation; test is reported beside "
        "it. Written by `python -m train.dssdnet.scored` from the runs' scores.",
        "",
    ]
    if "main" in v:
        n = len(r["main_runs"])
        lines += [
            "## The model",
            "",
            "| model | val Pearson | val Spearman | test Pearson | test Spearman |",
            "|---|---|---|---|---|",
            f"| untrained MiniLM bi-encoder (cosine of anchor and target) | {v['biencoder']['pearson']:.3f} | "
            f"{v['biencoder']['spearman']:.3f} | {t['biencoder']['pearson']:.3f} | {t['biencoder']['spearman']:.3f} |",
            f"| DSSDNet, MiniLM cross-encoder, CPC title in the input ({n} seed{'s' * (n > 1)}) | {_ms(v['main']['pearson'])} | "
            f"{_ms(v['main']['spearman'])} | {_ms(t['main']['pearson'])} | {_ms(t['main']['spearman'])} |",
            "",
            f"DSSDNet − bi-encoder, Pearson (anchors resampled, 95 %): validation {_ci(v['main']['minus_biencoder']['pearson'])}, "
            f"test {_ci(t['main']['minus_biencoder']['pearson'])}.",
            "",
            f"Target: test Pearson ≥ {r['target_pearson']:.2f}: **{'met' if r['target']['met'] else 'not met'}** "
            f"({r['target']['test_pearson']:.3f}).",
            "",
        ]
        lines += ["Commands:", "", *[f"    {x['command']}" for x in r["main_runs"]], ""]
    if v["ablation"]:
        lines += [
            "## Ablations (the ladder in miniature)",
            "",
            "Each row changes one thing of `dssdnet` at the smaller budget the runs' commands give; the interval is the "
            "row minus `dssdnet` in Pearson, anchors resampled.",
            "",
            "| variant | what it tests | val Pearson | val − dssdnet | test Pearson | test − dssdnet |",
            "|---|---|---|---|---|---|",
        ]
        for name, row in v["ablation"].items():
            trow = t["ablation"][name]
            lines.append(
                f"| {name} | {VARIANTS[name][0]} | {_ms(row['pearson'])} | {_ci(row['minus_dssdnet']) if 'minus_dssdnet' in row else ''} | "
                f"{_ms(trow['pearson'])} | {_ci(trow['minus_dssdnet']) if 'minus_dssdnet' in trow else ''} |"
            )
        first = next(iter(r["ablation_runs"].values()))[0]
        lines += ["", "The runs: `" + command + "`; one run's command:", "", f"    {first['command']}", ""]
    return "\n".join(lines)
