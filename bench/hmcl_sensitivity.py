"""Sensitivity of HMCL + text to s_s, s_m, lambda and tau on the real validation pages: one parameter varied
at a time around the paper's values (s_p 1, s_s 0.35, s_m 0.2, lambda 0.2, tau 0.1), everything else as in
the config. Writes a markdown table, the JSON and a plotly figure (HTML).

    python bench/hmcl_sensitivity.py --config train/configs/hmcl-real.json --seeds 0 --steps 300 \\
        --out runs/real --doc docs/results_hmcl_sensitivity

Every run (the centre included) takes ``--steps`` steps and is reported at ``--size`` px. A finished run
is reused, so an interrupted sweep is finished by running the same command again.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from patent_demo.hierarchy import HMCLWeights  # noqa: E402
from patent_demo.reports.tables import mean_std  # noqa: E402

log = logging.getLogger("bench.hmcl_sensitivity")
CENTRE = {"s_s": HMCLWeights().s_s, "s_m": HMCLWeights().s_m, "lambda": 0.2, "tau": 0.1}
GRID = {"s_s": [0.2, 0.5], "s_m": [0.1, 0.3], "lambda": [0.0, 0.5], "tau": [0.05, 0.2]}
COLUMNS = ("patent_map", "subclass_map", "main_map")


def flags(point: dict) -> list[str]:
    w = HMCLWeights(1.0, point["s_s"], point["s_m"])  # validates s_p >= s_s >= s_m
    return [
        "--loss",
        "hmcl",
        "--weights",
        *(f"{x:g}" for x in w.as_tuple()),
        "--text-weight",
        f"{point['lambda']:g}",
        "--tau",
        f"{point['tau']:g}",
    ]


def points() -> list[tuple[str, float, dict]]:
    out = [("centre", 0.0, dict(CENTRE))]
    for param, values in GRID.items():
        for v in values:
            out.append((param, v, {**CENTRE, param: v}))
    return out


def run(
    config: str,
    out: Path,
    param: str,
    value: float,
    point: dict,
    seed: int,
    steps: int,
    sizes: list[int],
    size: int | None,
) -> dict:
    from train.hmcl import main as hmcl

    label = "centre" if param == "centre" else f"{param}{value:g}"
    name = f"sweep-{label}-{steps}st-s{seed}"
    path = out / name / "metrics.json"
    if not (path.is_file() and "real_validation" in json.loads(path.read_text())):
        argv = [
            "--config",
            config,
            *flags(point),
            "--steps",
            str(steps),
            "--seed",
            str(seed),
            "--out",
            str(out),
            "--name",
            name,
            "--eval-sizes",
            *map(str, sizes),
        ]
        if hmcl.main(argv) != 0:
            raise RuntimeError(f"run {name} failed")
    metrics = json.loads(path.read_text())
    return metrics["real_validation_at"][str(size)] if size else metrics["real_validation"]


def main(argv: list[str] | None = None) -> int:
    logging.basicConfig(level=logging.WARNING, format="%(asctime)s %(message)s", datefmt="%H:%M:%S")
    log.setLevel(logging.INFO)
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--config", default="train/configs/hmcl-real.json")
    p.add_argument("--seeds", type=int, nargs="+", default=[0])
    p.add_argument("--steps", type=int, default=300, help="optimiser steps of every run")
    p.add_argument(
        "--size", type=int, default=224, help="input size the table reports (runs train at the config's)"
    )
    p.add_argument(
        "--only",
        nargs="*",
        choices=["centre", *GRID],
        default=[],
        help="run only these points (e.g. to split the sweep over processes); no table",
    )
    p.add_argument("--out", default="runs/real")
    p.add_argument("--doc", default="docs/results_hmcl_sensitivity")
    args = p.parse_args(argv)
    rows = []
    results_of = {}
    todo = [pt for pt in points() if not args.only or pt[0] in args.only]
    for param, value, point in todo:
        results_of[(param, value)] = [
            run(args.config, Path(args.out), param, value, point, s, args.steps, [args.size], args.size)
            for s in args.seeds
        ]
    if args.only:
        log.info(
            "ran %s; run without --only to write the table", ", ".join(dict.fromkeys(p for p, _, _ in todo))
        )
        return 0
    for param, value, point in points():
        results = results_of[(param, value)]
        row = {"param": param, "value": point[param] if param != "centre" else None, "point": point}
        for col in COLUMNS:
            row[col] = mean_std([r["metrics"][col] for r in results])
            row[f"macro_{col}"] = mean_std([r["macro"][col] for r in results])
        rows.append(row)
    caption = (
        f"HMCL + text sensitivity on the real validation pages (Red Book samples, every page against all "
        f"others), one parameter varied at a time around s_s {CENTRE['s_s']}, s_m {CENTRE['s_m']}, "
        f"lambda {CENTRE['lambda']}, tau {CENTRE['tau']} (s_p 1); {args.steps} steps per run, figures at {args.size} px, "
        f"one seed ({args.seeds}: the budget of 2 shared CPU cores), config `{args.config}`."
    )
    lines = [
        caption,
        "",
        "| parameter | value | "
        + " | ".join(COLUMNS)
        + " | "
        + " | ".join(f"{c} (patents)" for c in COLUMNS)
        + " |",
        "|" + "---|" * (2 + 2 * len(COLUMNS)),
    ]
    for r in rows:
        value = "paper" if r["param"] == "centre" else f"{r['value']:g}"
        cells = [f"{r[c][0]:.3f} ± {r[c][1]:.3f}" for c in COLUMNS]
        cells += [f"{r['macro_' + c][0]:.3f} ± {r['macro_' + c][1]:.3f}" for c in COLUMNS]
        lines.append(f"| {r['param']} | {value} | " + " | ".join(cells) + " |")
    md = "\n".join(lines) + "\n"
    doc = Path(args.doc)
    doc.parent.mkdir(parents=True, exist_ok=True)
    doc.with_suffix(".md").write_text(md, encoding="utf-8")
    doc.with_suffix(".json").write_text(
        json.dumps(
            {"caption": caption, "centre": CENTRE, "grid": GRID, "seeds": args.seeds, "rows": rows}, indent=1
        )
        + "\n",
        encoding="utf-8",
    )
    figure(rows).write_html(doc.with_suffix(".html"), include_plotlyjs="cdn")
    log.info("wrote %s.{md,json,html}\n%s", doc, md)
    return 0


def figure(rows: list[dict]):
    """One panel per parameter: mAP at each level against the parameter's value (the centre included)."""
    import plotly.graph_objects as go
    from plotly.subplots import make_subplots

    params = list(GRID)
    fig = make_subplots(rows=1, cols=len(params), subplot_titles=params, shared_yaxes=True)
    centre = next(r for r in rows if r["param"] == "centre")
    colours = {"patent_map": "#1f77b4", "subclass_map": "#d62728", "main_map": "#2ca02c"}
    for i, param in enumerate(params, start=1):
        pts = sorted(
            [(r["value"], r) for r in rows if r["param"] == param] + [(CENTRE[param], centre)],
            key=lambda t: t[0],
        )
        for col in COLUMNS:
            fig.add_trace(
                go.Scatter(
                    x=[v for v, _ in pts],
                    y=[r[col][0] for _, r in pts],
                    mode="lines+markers",
                    error_y={"type": "data", "array": [r[col][1] for _, r in pts]},
                    name=col,
                    line={"color": colours[col]},
                    showlegend=i == 1,
                ),
                row=1,
                col=i,
            )
    fig.update_layout(
        title="HMCL + text on real validation drawings: sensitivity",
        yaxis_title="mAP",
        height=380,
        width=1200,
    )
    return fig


if __name__ == "__main__":
    sys.exit(main())
