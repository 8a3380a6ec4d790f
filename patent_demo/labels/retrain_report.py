"""The before/after report of a retraining from examiner labels: JSON, markdown and a plotly figure.

The report is plain data (built by ``train/retrain.py``)::

    {"title", "checkpoint", "parent", "version", "num_labels", "command",
     "leak_guard": {"drawing": GuardStats dict, "text": ... | None},
     "queries": [{"query_id", "kind", "anchor_patent", "held_out", "items": [
         {"candidate", "label", "grade", "shown_rank", "before", "after"}]}],
     "summary": {...},                      # see :func:`summarise`
     "metrics": {"split", "rows": [{"metric", "before", "after", "delta", "regression"}], "regressions"},
     "text": {... the same "queries"/"summary"/"metrics" for the re-ranker ...} | absent}

Ranks count from 1 over every patent of the corpus (``None``: not ranked, e.g. outside BM25's
candidates). A relevant item *moved up* when its rank number fell; a not-relevant one when it rose.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Mapping, Sequence
from pathlib import Path

import plotly.graph_objects as go
from plotly.subplots import make_subplots

LABEL_COLOURS = {"relevant": "#2ca02c", "partly": "#bcbd22", "not": "#d62728"}
METRIC_ORDER = ("patent", "subclass", "main", "hier")


def _num(x) -> float | None:
    return float(x) if isinstance(x, int | float) and math.isfinite(float(x)) else None


def metric_rows(before: Mapping, after: Mapping, max_drop: float = 0.0) -> list[dict]:
    """One row per metric present in both dicts (``num_queries`` skipped), patent level first:
    ``{"metric", "before", "after", "delta", "regression"}``; a regression is a fall of more than ``max_drop``
    (counts such as ``num_queries`` are skipped)."""
    names = [k for k in before if k in after and not k.startswith("num_")]

    def order(name: str) -> tuple:
        level = name.split("_", 1)[0]
        return (METRIC_ORDER.index(level) if level in METRIC_ORDER else len(METRIC_ORDER), name)

    rows = []
    for name in sorted(names, key=order):
        b, a = _num(before[name]), _num(after[name])
        delta = None if a is None or b is None else a - b
        rows.append(
            {
                "metric": name,
                "before": b,
                "after": a,
                "delta": delta,
                "regression": delta is not None and delta < -max_drop,
            }
        )
    return rows


def _moved(item: Mapping) -> int | None:
    """+1 moved the right way (relevant up, not-relevant down), -1 the wrong way, 0 unchanged."""
    b, a = item.get("before"), item.get("after")
    if b is None and a is None:
        return None
    big = 10**9
    b, a = big if b is None else b, big if a is None else a
    sign = (b > a) - (b < a)
    return sign if item["grade"] > 0 else -sign


def summarise(queries: Sequence[Mapping]) -> dict:
    """Counts over judged items, for queries trained on and held out separately: ``{"trained"|"held_out":
    {"relevant": {"items", "up", "down", "same", "mean_before", "mean_after"}, "not": {...}}}`` where
    ``up``/``down`` count moves the right/wrong way (for "not" items, right is down the list)."""
    out: dict = {}
    for part, held in (("trained", False), ("held_out", True)):
        groups: dict = {}
        for kind, want in (("relevant", lambda g: g > 0), ("not", lambda g: g == 0)):
            items = [
                it
                for q in queries
                if bool(q.get("held_out")) == held
                for it in q["items"]
                if want(it["grade"])
            ]
            moves = [_moved(it) for it in items]
            ranked_b = [it["before"] for it in items if it.get("before") is not None]
            ranked_a = [it["after"] for it in items if it.get("after") is not None]
            groups[kind] = {
                "items": len(items),
                "right_way": sum(m == 1 for m in moves),
                "wrong_way": sum(m == -1 for m in moves),
                "same": sum(m == 0 for m in moves),
                "mean_before": sum(ranked_b) / len(ranked_b) if ranked_b else None,
                "mean_after": sum(ranked_a) / len(ranked_a) if ranked_a else None,
            }
        out[part] = groups
    return out


def _fmt(x, nd: int = 4) -> str:
    if x is None:
        return "–"
    return f"{x:.{nd}f}" if isinstance(x, float) else str(x)


def _delta(x) -> str:
    return "–" if x is None else f"{x:+.4f}"


def _rank_change(item: Mapping) -> str:
    b, a = item.get("before"), item.get("after")
    if b is None or a is None:
        return "–"
    if a == b:
        return "="
    return f"↑ {b - a}" if a < b else f"↓ {a - b}"


def _queries_md(queries: Sequence[Mapping]) -> list[str]:
    lines = [
        "| query | drawing of | trained on | candidate | judged | shown at | before | after | change |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for q in queries:
        for it in q["items"]:
            lines.append(
                f"| `{q['query_id']}` | {q.get('anchor_patent') or '–'} | {'no (test split)' if q.get('held_out') else 'yes'} "
                f"| {it['candidate']} | {it['label']} | {_fmt(it.get('shown_rank'))} | {_fmt(it.get('before'))} "
                f"| {_fmt(it.get('after'))} | {_rank_change(it)} |"
            )
    return lines


def _summary_md(summary: Mapping) -> list[str]:
    lines = [
        "| queries | judged | items | moved the right way | wrong way | unchanged | mean rank before → after |",
        "|---|---|---|---|---|---|---|",
    ]
    for part, title in (("trained", "trained on"), ("held_out", "held out")):
        for kind, name in (("relevant", "relevant / partly"), ("not", "not relevant")):
            s = summary[part][kind]
            if not s["items"]:
                continue
            mb = "–" if s["mean_before"] is None else f"{s['mean_before']:.2f}"
            ma = "–" if s["mean_after"] is None else f"{s['mean_after']:.2f}"
            lines.append(
                f"| {title} | {name} | {s['items']} | {s['right_way']} | {s['wrong_way']} | {s['same']} "
                f"| {mb} → {ma} |"
            )
    return lines


def _metrics_md(metrics: Mapping) -> list[str]:
    lines = ["| metric | before | after | Δ |", "|---|---|---|---|"]
    for r in metrics["rows"]:
        flag = " ⚠️" if r["regression"] else ""
        lines.append(
            f"| {r['metric']} | {_fmt(r['before'])} | {_fmt(r['after'])} | {_delta(r['delta'])}{flag} |"
        )
    regs = metrics.get("regressions") or []
    lines.append("")
    lines.append(
        f"**Regressions** (a fall of more than {metrics.get('max_drop', 0):g}): "
        + (", ".join(regs) if regs else "none")
    )
    return lines


def _guard_line(name: str, g: Mapping | None) -> str:
    if not g:
        return f"- {name}: no labels"
    if g.get("allowed_test"):
        held = "test-split labels were allowed (`--allow-test-labels`)"
    else:
        held = (
            f"held out {g['queries_held_out']} labelled test-split queries ({g['pairs_held_out']} judged pairs) "
            f"and {g['candidates_held_out']} judged candidates from test-split patents"
        )
    return f"- {name}: trained on {g['queries_used']} queries ({g['pairs_used']} judged pairs); {held}"


def to_markdown(report: Mapping) -> str:
    """The report as markdown: leak guard, per-query ranks, summary, test metrics at every level."""
    lines = [f"# {report.get('title', 'Retraining report')}", ""]
    lines.append(
        f"New checkpoint `{report['checkpoint']}` (version {report.get('version')}, learned from "
        f"{report.get('num_labels')} judged pairs), fine-tuned from `{report['parent']}`."
    )
    if report.get("command"):
        lines += ["", f"Command: `{report['command']}`"]
    guard = report.get("leak_guard") or {}
    lines += ["", "## Leak guard", "", _guard_line("drawing labels", guard.get("drawing"))]
    if "text" in guard:
        lines.append(_guard_line("text labels", guard.get("text")))
    sections = [("Drawing search (HMCL)", report)]
    if report.get("text"):
        sections.append(("Text re-ranking (DSSDNet)", report["text"]))
    for title, part in sections:
        lines += ["", f"## {title}", "", "### Judged items: rank before and after", ""]
        lines += _summary_md(part["summary"]) + [""] + _queries_md(part["queries"])
        m = part.get("metrics")
        if m:
            lines += ["", f"### Metrics on the {m['split']} split", ""] + _metrics_md(m)
    return "\n".join(lines) + "\n"


def to_figure(report: Mapping) -> go.Figure:
    """Left: each judged item's rank before (hollow) and after (filled), one row per (query, candidate),
    colour by judgement, rank 1 on the left. Right: the test metrics before and after."""
    items = [(q, it) for q in report["queries"] for it in q["items"]]
    metrics = (report.get("metrics") or {}).get("rows", [])
    fig = make_subplots(
        rows=1,
        cols=2,
        column_widths=[0.58, 0.42],
        horizontal_spacing=0.14,
        subplot_titles=(
            "Judged items: rank before → after (1 = top)",
            f"Metrics on the {(report.get('metrics') or {}).get('split', 'test')} split",
        ),
    )
    shown = set()
    for q, it in items:
        y = f"{q['query_id'][:12]} · {it['candidate']}" + (" (held out)" if q.get("held_out") else "")
        colour = LABEL_COLOURS.get(it["label"], "#7f7f7f")
        if it.get("before") is not None and it.get("after") is not None:
            fig.add_trace(
                go.Scatter(
                    x=[it["before"], it["after"]],
                    y=[y, y],
                    mode="lines",
                    showlegend=False,
                    line={"color": colour, "width": 2},
                    hoverinfo="skip",
                ),
                1,
                1,
            )
        for phase, symbol in (("before", "circle-open"), ("after", "circle")):
            if it.get(phase) is None:
                continue
            name = f"{it['label']} ({phase})"
            fig.add_trace(
                go.Scatter(
                    x=[it[phase]],
                    y=[y],
                    mode="markers",
                    name=name,
                    legendgroup=name,
                    showlegend=name not in shown,
                    marker={"color": colour, "symbol": symbol, "size": 11, "line": {"width": 2}},
                    hovertemplate=f"{y}<br>{it['label']}<br>{phase}: rank %{{x}}<extra></extra>",
                ),
                1,
                1,
            )
            shown.add(name)
    names = [r["metric"] for r in metrics]
    for phase, colour in (("before", "#9ecae1"), ("after", "#3182bd")):
        fig.add_trace(
            go.Bar(
                x=[r[phase] for r in metrics],
                y=names,
                orientation="h",
                name=f"metrics {phase}",
                marker_color=colour,
            ),
            1,
            2,
        )
    fig.update_xaxes(title_text="rank", autorange="reversed", row=1, col=1)
    fig.update_xaxes(title_text="score", range=[0, 1], row=1, col=2)
    fig.update_yaxes(autorange="reversed", row=1, col=2)
    fig.update_layout(
        barmode="group",
        height=max(420, 26 * len(items) + 160),
        title=report.get("title", ""),
        legend={"orientation": "h", "y": -0.12},
        margin={"l": 10, "r": 10, "t": 80, "b": 10},
    )
    return fig


def write_report(
    report: Mapping, directory: str | os.PathLike, include_plotlyjs: bool | str = True
) -> dict[str, Path]:
    """Write ``report.json``, ``report.md`` and ``report.html`` (the figure) under ``directory``."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    paths = {
        "json": directory / "report.json",
        "markdown": directory / "report.md",
        "html": directory / "report.html",
    }
    texts = {
        "json": json.dumps(report, indent=2, sort_keys=True, ensure_ascii=False) + "\n",
        "markdown": to_markdown(report),
        "html": to_figure(report).to_html(include_plotlyjs=include_plotlyjs, full_html=True),
    }
    for key, path in paths.items():
        tmp = path.with_name(f".{path.name}.tmp")
        tmp.write_text(texts[key], encoding="utf-8")
        os.replace(tmp, path)
    return paths
