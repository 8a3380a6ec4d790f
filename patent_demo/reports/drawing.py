"""The HMCL linear-head report: ``docs/results_hmcl_uspc.md`` and the README block, from the JSON
``train.hmcl.heads`` wrote (nothing typed by hand; ``scripts/figures.py`` writes both)."""

from __future__ import annotations

COLS = ("subclass_map", "main_map", "hier_ndcg@10")


def _ms(entry: dict, key: str) -> str:
    v = entry[key]
    return f"{v['mean']:.3f}" if len(v["values"]) == 1 else f"{v['mean']:.3f} ± {v['std']:.3f}"


def _ci(entry: dict, key: str) -> str:
    """Mean difference to zero-shot over seeds, and the bootstrap interval of each seed."""
    runs = entry["runs"]
    d = entry["test_vs_zero_shot"][key]["mean"]
    cis = "; ".join(
        f"[{r['test_vs_zero_shot'][key]['low']:+.3f}, {r['test_vs_zero_shot'][key]['high']:+.3f}]"
        for r in runs
    )
    return f"{d:+.3f} {cis}"


def redbook_table(heads: dict) -> list[str]:
    """Cross-scheme rows: every saved head on the Red Book pages (``bench/bench_heads_redbook.py``)."""
    lines = [
        "| variant (USPC-trained head) | Red Book patent mAP | subclass mAP | main mAP | hier nDCG@10 |",
        "|---|---|---|---|---|",
    ]
    for name, m in heads.items():
        cells = [
            f"{m[k]['mean']:.3f}" + (f" ± {m[k]['std']:.3f}" if m[k]["n"] > 1 else "")
            for k in ("patent_map", "subclass_map", "main_map", "hier_ndcg@10")
        ]
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    return lines


def render(results: dict, heads: dict | None = None) -> str:
    s = results["setup"]
    lines = [
        "# HMCL on real USPC drawings (train / val / test of `splits/uspc2007.json`)",
        "",
        f"Written by `python scripts/figures.py` from `docs/results_hmcl_uspc.json`, produced by `{results['command']}`.",
        "",
        f"Data: the 1,000 real 2007 USPC design drawings (one per patent), split by patent and stratified by class "
        f"(`splits/uspc2007.json`: train {s['splits']['train']}, val {s['splits']['val']}, test {s['splits']['test']}). "
        f"Every drawing of a split is a query against all other drawings of that split (protocol `all`); subclass "
        f"(`D6/369`) and main-class (`D6`) mAP, and the graded hierarchical nDCG@10. Trunk input {s['image_size']} px.",
        "",
        "Every variant is a linear 1280 -> 256 head on the frozen, packaged EfficientNet-Lite0 trunk (except "
        "zero-shot, which is the trunk's own pooled features). Everything was chosen on **val** (the step of each "
        "run, the variant shipped); **test** was computed once per run and never used to choose. Trained "
        "variants: mean ± std over seeds "
        f"{', '.join(str(x) for x in s['args']['seeds'])}; Δ test = mean difference to zero-shot over seeds, "
        "with each seed's paired bootstrap 95% interval (test queries resampled, "
        f"{s['args']['bootstrap']} resamples, `patent_demo.metrics.paired_bootstrap`).",
        "",
        "| variant | val subclass mAP | val main mAP | val hier nDCG@10 | test subclass mAP | test main mAP | "
        "test hier nDCG@10 | Δ test subclass mAP vs zero-shot | Δ test main mAP vs zero-shot | best step |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for name, e in results["variants"].items():
        steps = ", ".join(str(r["best_step"]) for r in e["runs"])
        lines.append(
            f"| {name} | "
            + " | ".join(_ms(e["val"], k) for k in COLS)
            + " | "
            + " | ".join(_ms(e["test"], k) for k in COLS)
            + " | "
            + (
                " | ".join(_ci(e, k) for k in ("subclass_map", "main_map"))
                if name != "zero-shot"
                else "— | —"
            )
            + f" | {steps} |"
        )
    if results.get("shipped"):
        sh = results["shipped"]
        lines += [
            "",
            f"**Shipped** (`{sh['dir']}`): variant `{sh['variant']}`, seed {sh['seed']} — the best on val. "
            f"USPC val subclass / main mAP {sh['val']['subclass_map']:.3f} / {sh['val']['main_map']:.3f}, "
            f"USPC test {sh['test']['subclass_map']:.3f} / {sh['test']['main_map']:.3f} "
            f"(hier nDCG@10 {sh['test']['hier_ndcg@10']:.3f}).",
        ]
    if results.get("commands"):
        lines += [
            "",
            "Produced by these parallel parts, then merged (`--merge`, which ships the best-on-val run of all):",
            "",
        ]
        lines += [f"    {c}" for c in results["commands"]]
    if results.get("zero_shot_flip"):
        f = results["zero_shot_flip"]["val"]
        lines += [
            "",
            f"Flip averaging (zero-shot, val): subclass / main mAP {f['subclass_map']:.3f} / {f['main_map']:.3f}.",
        ]
    if heads:
        lines += [
            "",
            "**Cross-scheme transfer** (`python bench/bench_heads_redbook.py --heads runs/heads --json "
            "docs/bench/heads_redbook.json`): every head above, all seeds, on the 20 Red Book patents (Locarno, "
            "106 pages, every page against all others; validation, as it came out):",
            "",
            *redbook_table(heads),
        ]
    for extra in results.get("notes") or []:
        lines += ["", extra]
    return "\n".join(lines) + "\n"


START, END = "<!-- hmcl-uspc:start (written by scripts/figures.py) -->", "<!-- hmcl-uspc:end -->"
README_ROWS = (
    "zero-shot",
    "pca-whiten",
    "lda-subclass",
    "lda-main",
    "cl",
    "hmcl-paper",
    "hmcl-level",
    "hmcl-paper-text",
    "hmcl-paper-shuffled",
    "hmcl-paper-mix",
    "hmcl-level-mix",
)


def _fig(m: dict, keys=("subclass_map", "main_map", "hier_ndcg@10")) -> str:
    return " / ".join("–" if m.get(k) is None else f"{m[k]:.3f}" for k in keys)


def readme_block(results: dict, models: dict, heads: dict | None = None) -> str:
    """The README's drawing-results block: USPC val and test apart, the targets, Red Book transfer."""
    v = results["variants"]
    rows = [
        "| variant | USPC val: subclass / main mAP / hier nDCG@10 | USPC test: subclass / main mAP / hier nDCG@10 | "
        "Δ test subclass mAP vs zero-shot [95% CI per seed] | Δ test main mAP |",
        "|---|---|---|---|---|",
    ]
    for name in README_ROWS:
        if name not in v:
            continue
        e = v[name]
        val = " / ".join(_ms(e["val"], k) for k in COLS)
        test = " / ".join(_ms(e["test"], k) for k in COLS)
        d = "— | —" if name == "zero-shot" else f"{_ci(e, 'subclass_map')} | {_ci(e, 'main_map')}"
        rows.append(f"| {name} | {val} | {test} | {d} |")
    sh = results.get("shipped") or {}
    zs_t = {k: v["zero-shot"]["test"][k]["mean"] for k in COLS}
    hm = v.get(sh.get("variant", ""), {})
    d_sub = hm["test"]["subclass_map"]["mean"] - zs_t["subclass_map"] if hm else float("nan")
    d_main = hm["test"]["main_map"]["mean"] - zs_t["main_map"] if hm else float("nan")
    cl_h = v["cl"]["test"]["hier_ndcg@10"]["mean"] if "cl" in v else float("nan")
    hm_h = hm["test"]["hier_ndcg@10"]["mean"] if hm else float("nan")

    def excl(key: str) -> str:
        runs = hm.get("runs") or []
        n = sum(1 for r in runs if r["test_vs_zero_shot"][key]["low"] > 0)
        return f"interval above 0 in {n} of {len(runs)} seeds"

    def met(d: float, target: float, key: str) -> str:  # "met" only with every seed's interval above 0
        runs = hm.get("runs") or []
        above = bool(runs) and all(r["test_vs_zero_shot"][key]["low"] > 0 for r in runs)
        if d >= target and above:
            return "met"
        return "missed by %.3f" % (target - d) if d < target else "not met: an interval includes 0"

    verdict = (
        f"**Targets on USPC test** (HMCL ≥ zero-shot + 0.02 subclass and + 0.04 main-class mAP, HMCL ≥ CL on "
        f"hierarchical nDCG@10), for the shipped variant `{sh.get('variant')}` over its 3 seeds: subclass "
        f"{d_sub:+.3f} ({met(d_sub, 0.02, 'subclass_map')}; {excl('subclass_map')}), "
        f"main class {d_main:+.3f} ({met(d_main, 0.04, 'main_map')}; "
        f"{excl('main_map')}), hierarchical nDCG@10 {hm_h:.3f} against "
        f"CL {cl_h:.3f} ({'met' if hm_h >= cl_h else 'missed'})."
    )
    rb = [
        "| model | Red Book pages: patent / subclass / main mAP | USPC val: subclass / main mAP | USPC test: subclass / main mAP |",
        "|---|---|---|---|",
    ]
    for name, m in models.items():
        seen = " (seen in training)" if m.get("seen") else ""
        rb.append(
            f"| {name} | {_fig(m.get('redbook', {}), ('patent_map', 'subclass_map', 'main_map'))} | "
            f"{_fig(m.get('validation', {}), ('subclass_map', 'main_map'))}{seen} | "
            f"{_fig(m.get('test', {}), ('subclass_map', 'main_map'))}{seen} |"
        )
    extra = ["", *redbook_table(heads)] if heads else []
    return "\n".join([START, "", *rows, "", verdict, "", *rb, *extra, "", END])


def drawing_models(names, metrics: list) -> dict:
    """``{name: figures}`` for each drawing model's recorded metrics (zero-shot and the shipped checkpoints),
    as the model list shows them: the figures the README block lists beside the head table."""
    from patent_demo.registry import measured_figures

    return {
        name: {**measured_figures("drawing", m), "seen": m.get("uspc_seen_in_training")}
        for name, m in zip(names, metrics, strict=True)
    }
