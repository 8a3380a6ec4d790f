"""Plotly figures for the workbench: the embedding map (PCA of corpus drawings) and the DSSDNet gate.

Both take plain data (the dict of ``Workbench.embedding_map``, a list of gate values) and return a
``plotly.graph_objects.Figure``; nothing here computes embeddings.
"""

from __future__ import annotations

import math
import textwrap
from collections.abc import Mapping, Sequence

import numpy as np
import plotly.graph_objects as go

SYMBOLS_2D = (
    "circle",
    "square",
    "diamond",
    "triangle-up",
    "triangle-down",
    "pentagon",
    "hexagon",
    "cross",
    "x",
    "star-triangle-up",
    "hourglass",
    "bowtie",
)
SYMBOLS_3D = ("circle", "square", "diamond", "cross", "x", "circle-open", "square-open", "diamond-open")
PALETTE = (
    "#1f77b4",
    "#ff7f0e",
    "#2ca02c",
    "#d62728",
    "#9467bd",
    "#8c564b",
    "#e377c2",
    "#7f7f7f",
    "#bcbd22",
    "#17becf",
    "#393b79",
    "#637939",
    "#8c6d31",
    "#843c39",
    "#7b4173",
    "#3182bd",
    "#e6550d",
    "#31a354",
    "#756bb1",
    "#636363",
    "#9c9ede",
    "#cedb9c",
    "#e7cb94",
    "#e7969c",
    "#de9ed6",
    "#6baed6",
)


def _title(data: Mapping) -> str:
    sil = data.get("silhouette")
    sil_txt = "n/a" if sil is None or (isinstance(sil, float) and math.isnan(sil)) else f"{sil:.3f}"
    shown, total = data.get("sampled", (len(data["ids"]), len(data["ids"])))
    sample = f" · {shown} of {total} drawings sampled" if shown < total else f" · {total} drawings"
    # the score first, the (long) model name on lines of its own: a narrow plot (a phone) cuts a line's end off
    model = "<br>".join(textwrap.wrap(str(data.get("model", "")), 44))
    return f"silhouette by subclass {sil_txt}{sample}<br><sup>{model}</sup>"


def embedding_map(data: Mapping, height: int = 520) -> go.Figure:
    """Scatter of ``data["coords"]`` [N, 2|3]: colour = Locarno subclass, symbol = main class; the
    highlighted figures (the query's top-k) drawn larger with a black outline, the query as a star.

    The title carries the silhouette score and says when points were sampled.
    """
    coords = np.asarray(data["coords"], dtype=float)
    dims = coords.shape[1]
    if dims not in (2, 3):
        raise ValueError(f"coords must be [N, 2] or [N, 3], got {coords.shape}")
    subclasses = list(data["subclasses"])
    mains = sorted(set(data["mains"]))
    symbols = SYMBOLS_2D if dims == 2 else SYMBOLS_3D
    symbol_of = {m: symbols[i % len(symbols)] for i, m in enumerate(mains)}
    highlight = np.asarray(data.get("highlight") or [False] * len(subclasses), dtype=bool)
    Scatter = go.Scatter if dims == 2 else go.Scatter3d
    fig = go.Figure()
    for ci, sub in enumerate(sorted(set(subclasses))):
        idx = [i for i, s in enumerate(subclasses) if s == sub]
        pts = coords[idx]
        text = [
            f"{data['patents'][i]} · {data['titles'][i]}<br>{data['ids'][i]}<br>Locarno {sub}" for i in idx
        ]
        marker = {
            "color": PALETTE[ci % len(PALETTE)],
            "symbol": [symbol_of[data["mains"][i]] for i in idx],
            "size": [11 if highlight[i] else 6 for i in idx]
            if dims == 2
            else [6 if highlight[i] else 3 for i in idx],
            "opacity": 0.85,
            "line": {"width": [1.5 if highlight[i] else 0 for i in idx], "color": "black"}
            if dims == 2
            else None,
        }
        xyz = {"x": pts[:, 0], "y": pts[:, 1]} | ({"z": pts[:, 2]} if dims == 3 else {})
        fig.add_trace(
            Scatter(
                mode="markers",
                name=sub or "unclassified",
                marker={k: v for k, v in marker.items() if v is not None},
                hovertext=text,
                hoverinfo="text",
                **xyz,
            )
        )
    query = data.get("query")
    if query is not None:
        q = np.asarray(query, dtype=float)
        xyz = {"x": [q[0]], "y": [q[1]]} | ({"z": [q[2]]} if dims == 3 else {})
        marker = {
            "symbol": "star" if dims == 2 else "diamond",
            "size": 18 if dims == 2 else 8,
            "color": "black",
        }
        fig.add_trace(
            Scatter(
                mode="markers",
                name="query",
                marker=marker,
                hovertext=["query drawing"],
                hoverinfo="text",
                **xyz,
            )
        )
    explained = data.get("explained") or []
    axes = [f"PC{i + 1}" + (f" ({explained[i]:.0%})" if i < len(explained) else "") for i in range(dims)]
    title = _title(data)
    fig.update_layout(
        # hung from the top, below the block's label, and the plot below all its lines (a centred title of
        # several lines spills onto the plot)
        title={
            "text": title,
            "font": {"size": 13},
            "y": 1,
            "yref": "container",
            "yanchor": "top",
            "pad": {"t": 48},
        },
        height=height,
        margin={"l": 10, "r": 10, "t": 70 + 15 * title.count("<br>"), "b": 10},
        legend={"title": {"text": "subclass"}, "font": {"size": 10}, "itemsizing": "constant"},
        template="plotly_white",
    )
    if dims == 2:
        fig.update_xaxes(title=axes[0])
        fig.update_yaxes(title=axes[1])
    else:
        fig.update_layout(scene={"xaxis_title": axes[0], "yaxis_title": axes[1], "zaxis_title": axes[2]})
    return fig


def gate_plot(gate: Sequence[float], title: str = "", height: int = 260) -> go.Figure:
    """Bar plot of the DSSDNet gate ``g`` [d] (Eq. 5): g_i near 1 routes dimension i to the
    domain-sensitive part ``e_ds``, near 0 to the domain-invariant part ``e_di``; the dashed line is the
    mean (the domain-sensitive share)."""
    g = np.asarray(list(gate), dtype=float)
    if g.ndim != 1 or g.size == 0:
        raise ValueError(f"gate must be a non-empty vector [d], got shape {g.shape}")
    mean = float(g.mean())
    fig = go.Figure(
        go.Bar(
            x=np.arange(g.size),
            y=g,
            marker={"color": "#4a6fd1", "line": {"width": 0}},
            hovertemplate="dim %{x}: g = %{y:.3f}<extra></extra>",
            name="gate",
        )
    )
    fig.add_hline(y=mean, line_dash="dash", line_color="black", annotation_text=f"mean {mean:.3f}")
    fig.update_layout(
        title={
            "text": title or f"gate g over {g.size} dimensions (1 = domain-sensitive)",
            "font": {"size": 13},
        },
        height=height,
        margin={"l": 10, "r": 10, "t": 40, "b": 10},
        yaxis={"range": [0, 1], "title": "g"},
        xaxis={"title": "dimension"},
        bargap=0,
        template="plotly_white",
        showlegend=False,
    )
    return fig


def learning_curve(result: Mapping, height: int = 380) -> go.Figure:
    """Test subclass and main mAP (mean ± std over seeds) against the judgements the simulated examiner made,
    one line per strategy, beside zero-shot (dotted) and the fully supervised ceiling (dashed): the JSON of
    ``train.loop_curves``."""
    from plotly.subplots import make_subplots

    summary = result["summary"]
    titles = ("test subclass mAP", "test main mAP")
    fig = make_subplots(rows=1, cols=2, subplot_titles=titles, horizontal_spacing=0.1)
    for col, key in enumerate(("subclass_map", "main_map"), 1):
        order = list((result.get("setup") or {}).get("strategies") or [])
        names = sorted(summary["strategies"], key=lambda n: order.index(n) if n in order else len(order))
        for i, strategy in enumerate(names):
            rows = summary["strategies"][strategy]["rows"]
            fig.add_trace(
                go.Scatter(
                    x=[r["judgements"] for r in rows],
                    y=[r["test"][key]["mean"] for r in rows],
                    error_y={"type": "data", "array": [r["test"][key]["std"] for r in rows], "visible": True},
                    mode="lines+markers",
                    name=strategy,
                    legendgroup=strategy,
                    showlegend=col == 1,
                    line={"color": PALETTE[i % len(PALETTE)]},
                    customdata=[r["budget"] for r in rows],
                    hovertemplate="%{customdata} queries, %{x:.0f} judgements: %{y:.3f}<extra>"
                    + strategy
                    + "</extra>",
                ),
                row=1,
                col=col,
            )
        fig.add_hline(
            y=summary["zero_shot"][key],
            line_dash="dot",
            line_color="#555",
            row=1,
            col=col,
            annotation_text="zero-shot",
            annotation_position="bottom right",
        )
        fig.add_hline(
            y=summary["ceiling"][key],
            line_dash="dash",
            line_color="#2ca02c",
            row=1,
            col=col,
            annotation_text="fully supervised",
            annotation_position="top right",
        )
        fig.update_xaxes(title_text="judgements", row=1, col=col)  # short: two sit side by side on a phone
    fig.update_layout(
        height=height,
        margin={"l": 10, "r": 10, "t": 70, "b": 10},
        template="plotly_white",
        legend={"orientation": "h", "y": -0.25, "title": {"text": "10 judgements a query:"}},
    )  # (t: the block's label sits on top)
    return fig
