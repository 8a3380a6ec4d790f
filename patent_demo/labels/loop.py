"""What examiner labels bought, as the app shows it: the learning curves measured by ``train.loop.curves``
(drawings) and ``train.loop.text`` (text), read from their JSON (``docs/loop.json``, ``docs/loop_text.json``),
the retrained checkpoints' lineage and before / after figures, and the one command that retrains from the
label store. Plain data in, rows and text out; the figure is ``patent_demo.plots.learning_curve``."""

from __future__ import annotations

import json
import shlex
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]  # the folder of app.py
RESULTS = ROOT / "docs" / "loop.json"  # train.loop.curves
TEXT_RESULTS = ROOT / "docs" / "loop_text.json"  # train.loop.text
METRICS = ("subclass_map", "main_map")
NAMES = {"subclass_map": "subclass mAP", "main_map": "main mAP"}
STRATEGY_NAMES = {"topk": "top 10 of each search", "spread": "10 ranks spread over the top 50"}
LINEAGE_HEADERS = [
    "model",
    "parent",
    "labels (judged pairs)",
    "val subclass / main mAP: parent → retrained",
    "test subclass / main mAP: parent → retrained",
]
CURVE_HEADERS = [
    "strategy",
    "labelled queries",
    "judgements",
    "test subclass mAP",
    "test main mAP",
    "Δ subclass vs zero-shot (per seed, 95% CI)",
    "Δ main vs zero-shot (per seed, 95% CI)",
    "met",
]


def read_results(path: str | Path) -> dict | None:
    """A loop results JSON, or None when it is absent or unreadable."""
    try:
        return json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def _ci(d: dict) -> str:
    return f"{d['diff']:+.3f} [{d['low']:+.3f}, {d['high']:+.3f}]"


def strategies(result: dict) -> list[str]:
    """The strategies in the order the run took them (``topk`` first), whatever order the JSON keeps."""
    names = list(result["strategies"])
    order = list((result.get("setup") or {}).get("strategies") or [])
    return sorted(names, key=lambda n: order.index(n) if n in order else len(order))


def _mean_std(d: dict) -> str:
    return f"{d['mean']:.3f} ± {d['std']:.3f}"


def curve_rows(result: dict) -> list[list]:
    """One row per strategy and budget: mean ± std over seeds on test, each seed's interval against
    zero-shot, and "met" when every seed's subclass and main intervals lie above 0."""
    rows = []
    for strategy in strategies(result):
        entry = result["strategies"][strategy]
        summary = result["summary"]["strategies"][strategy]["rows"]
        for s in summary:
            pts = [p for p in entry["points"] if p["budget"] == s["budget"]]
            if not s["budget"]:
                cis = ["—", "—"]
            else:
                cis = ["; ".join(_ci(p["vs_zero_shot"][k]) for p in pts) for k in METRICS]
            rows.append(
                [
                    strategy,
                    s["budget"],
                    round(s["judgements"]),
                    _mean_std(s["test"]["subclass_map"]),
                    _mean_std(s["test"]["main_map"]),
                    *cis,
                    "met" if s["met"] else "not met",
                ]
            )
    return rows


def curve_markdown(result: dict) -> str:
    """The points as a Markdown table (``docs/loop.md``)."""
    lines = ["| " + " | ".join(CURVE_HEADERS) + " |", "|" + "---|" * len(CURVE_HEADERS)]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in curve_rows(result)]
    c = result["ceiling"]
    lines.append(
        f"| fully supervised ({c['variant']}) | {c['labelled_queries']} (every train drawing's class) | — | "
        f"{_mean_std(c['test']['subclass_map'])} | {_mean_std(c['test']['main_map'])} | "
        + " | ".join("; ".join(_ci(r["vs_zero_shot"][k]) for r in c["runs"]) for k in METRICS)
        + " | |"
    )
    return "\n".join(lines)


def first_budget_above(result: dict, strategy: str, key: str) -> int | None:
    """The smallest budget at which every seed's interval of ``key`` against zero-shot lies above 0."""
    by_budget: dict[int, list[dict]] = {}
    for p in result["strategies"][strategy]["points"]:
        if p["budget"]:
            by_budget.setdefault(p["budget"], []).append(p)
    ok = [b for b, pts in sorted(by_budget.items()) if all(p["vs_zero_shot"][key]["low"] > 0 for p in pts)]
    return ok[0] if ok else None


def summary_markdown(result: dict) -> str:
    """The headline: zero-shot, the ceiling, the first budget met and the first at 90 % of the ceiling per
    strategy, and which split each figure is from."""
    s = result["summary"]
    setup = result["setup"]
    ceil, zero = s["ceiling"], s["zero_shot"]
    lines = [
        f"**Drawings (USPC 2007, test split: {setup['splits']['test']} drawings never labelled).** The simulated "
        f"examiner searched {max(p['budget'] for e in result['strategies'].values() for p in e['points'])} of the {setup['splits']['train']} training drawings with zero-shot "
        f"and judged {setup['k']} hits a query through the app; each point retrains the shipped head from that many "
        f"labelled queries ({len(setup['seeds'])} seeds; step and trunk weight chosen on validation, test scored "
        "once).",
        f"Zero-shot test subclass / main mAP {zero['subclass_map']:.3f} / {zero['main_map']:.3f}; the fully supervised "
        f"head (every training drawing's class) {ceil['subclass_map']:.3f} / {ceil['main_map']:.3f}.",
    ]
    for strategy in strategies(result):
        st = s["strategies"][strategy]
        met, at90 = st["first_budget_met"], st["first_budget_90"]
        per = {k: first_budget_above(result, strategy, k) for k in METRICS}
        said = [
            f"both intervals above 0 for every seed from **{met} labelled queries**"
            if met
            else "no budget has both intervals above 0 for every seed"
        ]
        said += [f"{NAMES[k]} alone from {per[k]}" for k in METRICS if per[k] and per[k] != met]
        said.append(
            f"90 % of the ceiling's subclass and main mAP from **{at90} labelled queries**"
            if at90
            else "90 % of the ceiling's subclass and main mAP at no budget"
        )
        lines.append(f"- **{STRATEGY_NAMES.get(strategy, strategy)}**: " + "; ".join(said) + ".")
    for name, cmp in sorted(
        (s.get("equal_judgements") or {}).items(), key=lambda kv: int(kv[0].rsplit("@", 1)[1])
    ):
        per = "; ".join(f"{NAMES[k]} " + ", ".join(_ci(c) for c in cmp[k]) for k in METRICS)
        lines.append(f"- {name} (equal judgements, per seed): {per}")
    lines.append(f"\n_Measured on {setup.get('cpu', '?')}; reproduce: `{result.get('command', '')}`._")
    return "\n".join(lines)


def text_markdown(result: dict | None) -> str:
    """The text curve (``train.loop.text``'s JSON) as a headline and a table, whatever it shows: the re-ranked
    and fused lists' MAP@10 per budget and seed, each against the parent (no labels) and the hybrid."""
    if not result:
        return "**Text (cs3245).** No text learning curve measured yet (`python -m train.loop.text`)."
    z, hy = result["zero"], result["hybrid"]
    lines = [
        f"**Text (cs3245, {result.get('test_queries', '?')} test queries never labelled).** The simulated examiner "
        f"judged the top 10 of the default (hybrid) list; each point fine-tunes the shipped re-ranker "
        f"(`{Path(str(z.get('checkpoint', ''))).name}`) from that many labelled queries. Hybrid MAP@10 / R@100 "
        f"{hy['map@10']:.3f} / {hy['recall@100']:.3f}; the re-ranker with no labels {z['test']['map@10']:.3f} "
        f"(vs hybrid {_ci(z['vs_hybrid']['map@10'])}), fused with the hybrid {z['fused']['map@10']:.3f} "
        f"(vs hybrid {_ci(z['fused_vs_hybrid']['map@10'])}).",
        "",
        "| labelled queries | judgements | seed | re-ranked MAP@10 | vs no labels | vs hybrid | fused MAP@10 "
        "| fused vs hybrid |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for p in result.get("points") or []:
        if not p.get("queries"):
            continue
        lines.append(
            f"| {p['queries']} | {p.get('judgements', '')} | {p.get('seed')} | {p['test']['map@10']:.3f} | "
            f"{_ci(p['vs_zero']['map@10'])} | {_ci(p['vs_hybrid']['map@10'])} | {p['fused']['map@10']:.3f} | "
            f"{_ci(p['fused_vs_hybrid']['map@10'])} |"
        )
    if result.get("note"):
        lines.append(f"\n{result['note']}")
    lines.append(f"\n_Measured on {result.get('cpu', '?')}; reproduce: `{result.get('command', '')}`._")
    return "\n".join(lines)


def headline_markdown(drawing: dict, text: dict | None) -> str:
    """The README's lines on the loop: per strategy the first budget met and at 90 % of the ceiling; for text
    whether any budget's interval against no labels lies above 0."""
    lines = []
    for strategy in strategies(drawing):
        st = drawing["summary"]["strategies"][strategy]
        rows = {r["budget"]: r for r in st["rows"]}
        met, at90 = st["first_budget_met"], st["first_budget_90"]
        said = (
            f"both test intervals above 0 (every seed) from **{met} labelled queries** "
            f"({rows[met]['judgements']:.0f} judgements)"
            if met
            else f"no budget up to {max(rows)} labelled queries with both test intervals above 0"
        )
        said += f"; 90 % of the fully supervised head from {at90}" if at90 else ""
        lines.append(
            f"- drawings (USPC 2007 test), examiner judging the {STRATEGY_NAMES.get(strategy, strategy)}: {said}"
        )
    if text:
        pts = [p for p in text.get("points") or [] if p.get("queries")]
        up = [p for p in pts if p["vs_zero"]["map@10"]["low"] > 0]
        lines.append(
            f"- text (cs3245 test, DSSDNet retrained from up to {max((p['queries'] for p in pts), default=0)} "
            "labelled queries): "
            + (
                "MAP@10 above no labels at " + ", ".join(f"{p['queries']} (seed {p['seed']})" for p in up)
                if up
                else "no budget's MAP@10 interval against no labels lies above 0; the hybrid stays the default"
            )
        )
    return "\n".join(lines)


def lineage_rows(specs) -> list[list]:
    """The retrained drawing models (a ``parent`` in their config) with their parent, label count and
    validation / test subclass and main mAP before (the parent) and after."""
    rows = []
    for spec in specs:
        cfg = {}
        if spec.path is not None and (Path(spec.path) / "config.json").is_file():
            cfg = json.loads((Path(spec.path) / "config.json").read_text(encoding="utf-8"))
        if not cfg.get("parent"):
            continue
        m = spec.metrics or {}
        cells = []
        for where in ("val", "test"):
            b = ((m.get("before") or {}).get(where) or {}).get("metrics") or {}
            a = ((m.get("after") or {}).get(where) or {}).get("metrics") or {}
            cells.append(
                " → ".join(
                    f"{x.get('subclass_map', float('nan')):.3f} / {x.get('main_map', float('nan')):.3f}"
                    for x in (b, a)
                )
            )
        rows.append([spec.key, Path(str(cfg["parent"])).name, cfg.get("num_labels"), *cells])
    return rows


def retrain_command(labels: str, parent: str, corpus: str, out: str) -> str:
    """The one command that retrains the shipped drawing head (and, with ``--text-from``, the re-ranker) from
    the label store."""
    return shlex.join(
        [
            "python",
            "-m",
            "train.retrain",
            "--labels",
            labels,
            "--from",
            parent,
            "--corpus",
            corpus,
            "--out",
            out,
        ]
    )
