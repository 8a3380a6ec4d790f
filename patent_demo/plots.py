"""Plotly figures for the workbench: the embedding map (PCA or t-SNE of corpus drawings), the DSSDNet gate
and the learning curves.

Both take plain data (the dict of ``Workbench.embedding_map``, a list of gate values) and return a
``plotly.graph_objects.Figure``; nothing here computes embeddings.
"""

from __future__ import annotations

import math
import textwrap
from collections.abc import Mapping, Sequence

import numpy as np
import plotly.graph_objects as go

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


COLOURS_SHOWN = 15  # a level with more values: its 15 largest classes coloured, the rest one grey "other"
GREY = "#c8c8c8"
LEVEL_KEYS = {"main class": "mains", "subclass": "subclasses"}


def _sil(x) -> str:
    return "n/a" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{x:.3f}"


def _title(data: Mapping) -> str:
    sils = data.get("silhouettes") or {"subclass": data.get("silhouette")}
    sil_txt = " · ".join(f"{level} {_sil(v)}" for level, v in sils.items())
    shown, total = data.get("sampled", (len(data["ids"]), len(data["ids"])))
    sample = f"{shown} of {total} drawings sampled" if shown < total else f"{total} drawings"
    # the scores first, the (long) model name on lines of its own: a narrow plot (a phone) cuts a line's end off
    name = str(data.get("model", "")).split(" (", 1)[0]  # the label without its figures in brackets
    head = f"{data.get('projection', 'PCA')} · {name}"
    model = "<br>".join(textwrap.wrap(head, 44))
    sil_lines = "<br>".join(textwrap.wrap(f"silhouette: {sil_txt}", 44))  # a phone's plot is ~350 px wide
    return f"{sil_lines}<br><sup>{sample} · {model}</sup>"


def groups(values: Sequence[str], focus: str = "") -> tuple[list[str], dict[str, str]]:
    """The legend of a map coloured by ``values`` (one class per point): ``(group of each point, {group:
    colour})``. With ``focus``, two groups: that class (a subclass, or a main class with all its subclasses)
    against the rest; else the ``COLOURS_SHOWN`` largest classes, each its colour, and the others together
    in grey ("other: n classes"), so the legend stays readable whatever the level's size."""
    vals = [v or "unclassified" for v in values]
    if focus:
        inside = [v == focus or v.startswith((focus + "/", focus + "-")) for v in vals]
        rest = f"the rest ({len({v for v, i in zip(vals, inside, strict=True) if not i})} subclasses)"
        return [focus if i else rest for i in inside], {focus: PALETTE[3], rest: GREY}
    counts: dict[str, int] = {}
    for v in vals:
        counts[v] = counts.get(v, 0) + 1
    ranked = sorted(counts, key=lambda v: (-counts[v], v))
    shown = ranked[:COLOURS_SHOWN] if len(ranked) > COLOURS_SHOWN + 1 else ranked
    other = f"other: {len(ranked) - len(shown)} classes"
    colour = {v: PALETTE[i % len(PALETTE)] for i, v in enumerate(shown)}
    if len(shown) < len(ranked):
        colour[other] = GREY
    kept = set(shown)
    return [v if v in kept else other for v in vals], colour


def embedding_map(
    data: Mapping, height: int = 640, colour_by: str = "main class", focus: str = ""
) -> go.Figure:
    """Scatter of ``data["coords"]`` [N, 2|3] coloured by one level of the class hierarchy (``colour_by``:
    "main class" or "subclass", at most ``COLOURS_SHOWN`` colours, see ``groups``), or a chosen class
    (``focus``) against the rest; the highlighted figures (the last query's hits) ringed in black, the
    query as a star. The title carries the silhouette at each level and says when points were sampled."""
    coords = np.asarray(data["coords"], dtype=float)
    dims = coords.shape[1] if coords.ndim == 2 else 0
    if dims not in (2, 3):
        raise ValueError(f"coords must be [N, 2] or [N, 3], got {coords.shape}")
    if colour_by not in LEVEL_KEYS:
        raise ValueError(f"colour_by must be one of {', '.join(LEVEL_KEYS)}, got {colour_by!r}")
    values = list(data["subclasses" if focus else LEVEL_KEYS[colour_by]])  # a focus matches subclasses
    group, colour = groups(values, focus)
    highlight = np.asarray(data.get("highlight") or [False] * len(values), dtype=bool)
    Scatter = go.Scatter if dims == 2 else go.Scatter3d

    def xyz(idx) -> dict:
        pts = coords[idx]
        return {"x": pts[:, 0], "y": pts[:, 1]} | ({"z": pts[:, 2]} if dims == 3 else {})

    def hover(i: int) -> str:
        return (
            f"{data['patents'][i]} · {data['titles'][i]}<br>{data['ids'][i]}<br>"
            f"class {data['subclasses'][i] or 'none'}"
        )

    fig = go.Figure()
    for name, col in colour.items():  # the grey groups first, under the coloured ones
        idx = [i for i, g in enumerate(group) if g == name]
        if not idx:
            continue
        grey = col == GREY
        fig.add_trace(
            Scatter(
                mode="markers",
                name=f"{name} ({len(idx)})",
                marker={
                    "color": col,
                    "size": (5 if grey else 7) if dims == 2 else (2 if grey else 3),
                    "opacity": 0.5 if grey else 0.85,
                },
                hovertext=[hover(i) for i in idx],
                hoverinfo="text",
                **xyz(idx),
            )
        )
    fig.data = tuple(sorted(fig.data, key=lambda t: t.marker.color != GREY))
    hits = np.flatnonzero(highlight).tolist()
    if hits:
        fig.add_trace(
            Scatter(
                mode="markers",
                name=f"hits of the query ({len(hits)})",
                marker={
                    "color": "rgba(0,0,0,0)",
                    "size": 14 if dims == 2 else 6,
                    "line": {"width": 2, "color": "black"},
                }
                | ({"symbol": "circle-open"} if dims == 3 else {}),
                hovertext=[hover(i) for i in hits],
                hoverinfo="text",
                **xyz(hits),
            )
        )
    query = data.get("query")
    if query is not None:
        q = np.asarray(query, dtype=float)
        at = {"x": [q[0]], "y": [q[1]]} | ({"z": [q[2]]} if dims == 3 else {})
        marker = {
            "symbol": "star" if dims == 2 else "diamond",
            "size": 20 if dims == 2 else 8,
            "color": "black",
        }
        fig.add_trace(
            Scatter(
                mode="markers",
                name="query",
                marker=marker,
                hovertext=["query drawing"],
                hoverinfo="text",
                **at,
            )
        )
    explained = data.get("explained") or []
    pca = data.get("projection", "PCA") == "PCA"
    axes = [
        (f"PC{i + 1}" + (f" ({explained[i]:.0%})" if i < len(explained) else "")) if pca else f"t-SNE {i + 1}"
        for i in range(dims)
    ]
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
        # under the plot, across: beside it, a phone's plot was squeezed to a strip
        legend={
            "title": {"text": focus or colour_by},
            "font": {"size": 10},
            "itemsizing": "constant",
            "orientation": "h",
            "yanchor": "top",
            "y": -0.2,
            "x": 0,
        },
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
    ``train.loop.curves``."""
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
