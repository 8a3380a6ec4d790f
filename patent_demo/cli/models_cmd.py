"""``patent-demo models``: every model the app would offer, with the figures it was measured at."""

from __future__ import annotations

import argparse
import json

from patent_demo.cli.common import BM25, add_checkpoints, models
from patent_demo.registry import ModelSpec, measured_figures


def add_parser(sub) -> None:
    p = sub.add_parser(
        "models",
        help="list the models the app would offer",
        description="Every model the app would offer: name, task, kind, classification scheme, image size "
        "and the figures in its checkpoint's metrics.json: validation (USPC val split, where choices are made) "
        "and test (USPC test split, computed once per shipped checkpoint) apart, Red Book pages (validation), "
        "and the generated corpus's test split for older checkpoints. "
        "`default` in --model means the first drawing / text model listed.",
    )
    add_checkpoints(p)
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(handler=run)


def _config(spec: ModelSpec) -> dict:
    if spec.path is None or not (spec.path / "config.json").is_file():
        return {}
    return json.loads((spec.path / "config.json").read_text(encoding="utf-8"))


def describe(spec: ModelSpec) -> dict:
    """One row of the model list (see ``add_parser``)."""
    config = _config(spec)
    model = config.get("model") if isinstance(config.get("model"), dict) else {}
    row = {
        "name": spec.key,
        "task": spec.task,
        "kind": spec.kind,
        "encoder": spec.encoder,
        "trained": spec.trained,
        "path": str(spec.path) if spec.path else "",
        "label": spec.label,
    }
    if spec.task == "drawing":
        from patent_demo.drawing.encoders import model_config

        size = model.get("image_size")
        if size is None:
            try:
                size = model_config(spec.encoder)["vision_cfg"]["image_size"]
            except (KeyError, ValueError):
                size = None
        row["image_size"] = size
        row["scheme"] = config.get("scheme") or ("locarno" if spec.trained else "")
        figures = measured_figures("drawing", spec.metrics)
        row["validation"] = figures.get("validation", {})  # USPC val: where choices are made
        row["test"] = figures.get("test", {})  # USPC test: once per shipped checkpoint
        row["redbook"] = figures.get("redbook", {})  # the 20 Red Book patents' pages (validation)
        row["uspc_seen_in_training"] = bool(spec.metrics.get("uspc_seen_in_training"))
        row["measured"] = figures.get("generated", {})
        row["measured_real"] = figures.get("real", {})
        real = spec.metrics.get("real_validation") or {}
        row["measured_real_on"] = (
            f"{real.get('corpus', '')} at {real.get('image_size', '')} px" if real else ""
        )
    else:
        row["image_size"] = None
        row["scheme"] = model.get("domain_scheme", "")
        figures = measured_figures("text", spec.metrics)
        row["measured"] = figures.get("test", {})
        row["measured_bm25"] = figures.get("bm25", {})
        row["measured_fused"] = figures.get("fused", {})
    corpus = config.get("corpus") or {}
    row["measured_on"] = (
        f"{corpus.get('name', '')} test split" if isinstance(corpus, dict) and corpus.get("name") else ""
    )
    if spec.task == "text" and row["measured"] and not row["measured_on"]:
        row["measured_on"] = "its training corpus, test split"
    return row


def rows(dirs: list[str]) -> list[dict]:
    out = [describe(s) for s in models(dirs)]
    out.append(
        {
            "name": BM25,
            "task": "text",
            "kind": "bm25",
            "encoder": "",
            "trained": False,
            "path": "",
            "label": "plain BM25 (no re-ranking)",
            "image_size": None,
            "scheme": "",
            "measured": {},
            "measured_on": "",
        }
    )
    return out


def _fmt(measured: dict) -> str:
    return ", ".join(f"{k} {v:.3f}" for k, v in measured.items()) or "-"


def run(args: argparse.Namespace) -> int:
    table = rows(args.checkpoints)
    if args.json:
        print(json.dumps(table, indent=1))
        return 0
    header = f"{'name':22s} {'task':8s} {'kind':10s} {'scheme':8s} {'px':>4s}  measured"
    print(header)
    print("-" * len(header))
    for r in table:
        px = str(r["image_size"] or "")
        on = f"  ({r['measured_on']})" if r.get("measured_on") else ""
        print(
            f"{r['name']:22s} {r['task']:8s} {r['kind']:10s} {r['scheme'] or '-':8s} {px:>4s}  {_fmt(r['measured'])}{on}"
        )
        if r.get("validation") or r.get("test"):
            seen = (
                "  (USPC drawings seen in training: not held out)" if r.get("uspc_seen_in_training") else ""
            )
            print(f"{'':56s}  validation (USPC val): {_fmt(r.get('validation') or {})}")
            print(f"{'':56s}  test (USPC test):      {_fmt(r.get('test') or {})}{seen}")
        if r.get("redbook"):
            print(f"{'':56s}  Red Book pages (val):  {_fmt(r['redbook'])}")
        if r.get("measured_real"):
            print(f"{'':56s}  real: {_fmt(r['measured_real'])}  ({r['measured_real_on']})")
        if r.get("measured_bm25"):
            print(f"{'':56s}  BM25: {_fmt(r['measured_bm25'])}; fused: {_fmt(r.get('measured_fused') or {})}")
    defaults = {t: next((r["name"] for r in table if r["task"] == t), "") for t in ("drawing", "text")}
    print(f"\ndefault: drawing {defaults['drawing']}, text {defaults['text']}")
    return 0
