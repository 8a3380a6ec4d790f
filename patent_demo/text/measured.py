"""What each text list measured, as the one line the app shows beside the list (``list_note``).

The figures are those of ``docs/results_text.json`` (written by ``train/text/results_page.py`` on the committed
cs3245 split ``splits/cs3245_text.json``): the first stages (``lists``: BM25, dense, hybrid on the
validation and test queries) and, per DSSDNet checkpoint, its re-ranking of the hybrid top 100 beside the
hybrid and fused lists on the same queries (``rerank``: the queries the checkpoint never saw). The default
list (``patent_demo.text.hybrid.default_text_list``) is compared with on validation MAP@10, the figure the
default rule chooses by; a list below it on validation says so in plain words. A checkpoint's own record
(its ``metrics.json``: BM25 top 50 re-ranked, ``patent_demo.registry.figures_note``) follows its lists.
"""

from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path

from patent_demo.text.lists import TITLES

RESULTS_TEXT = Path(__file__).resolve().parents[2] / "docs" / "results_text.json"
METRIC = "map@10"
RERANKED = ("dssdnet", "fused")


@lru_cache(maxsize=4)
def _read(path: Path, mtime_ns: int) -> dict:
    del mtime_ns  # the cache key: the file read again when it changes
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}


def results_text(path: Path = RESULTS_TEXT) -> dict:
    """``docs/results_text.json``, ``{}`` when it is not there (an installed package)."""
    try:
        return _read(path, path.stat().st_mtime_ns)
    except OSError:
        return {}


def measurements(checkpoint: Path | None, results: dict) -> list[dict]:
    """The sets of figures measured on the same queries, each ``{"what", "lists": {split: {list:
    {metric: value}}}, "queries": {split: n}, "bootstrap": {split: {"a - b": {diff, low, high}}}}``: the
    checkpoint's re-ranking record first (when ``results`` has one for it), then the first stages."""
    out = []
    name = checkpoint.name if checkpoint is not None else None
    for rec in results.get("rerank") or []:
        if name and Path(str(rec.get("checkpoint", ""))).name == name:
            splits = rec.get("splits") or {}
            from patent_demo.text.fusion import validated_depth

            depth, measured = validated_depth(checkpoint), rec.get("k_rerank", "?")
            same = (
                f"; the app re-ranks the top {depth}, chosen on validation"
                if depth and depth != measured
                else ""
            )
            out.append(
                {
                    "what": f"{name} re-ranking the hybrid top {measured}{same}",
                    "lists": {s: v.get("summary") or {} for s, v in splits.items()},
                    "queries": {s: v.get("queries") for s, v in splits.items()},
                    "bootstrap": {s: v.get("bootstrap") or {} for s, v in splits.items()},
                }
            )
    lists = results.get("lists") or {}
    if lists:
        means = {
            s: {n: {m: x.get("mean") for m, x in ms.items()} for n, ms in v.items()} for s, v in lists.items()
        }
        boot = {
            s: {k: v.get(METRIC) or {} for k, v in b.items()}
            for s, b in (results.get("bootstrap") or {}).items()
        }
        gate = ((results.get("default") or {}).get("validation_gate")) or {}
        boot.setdefault("val", {}).update({f"{n} - hybrid": v for n, v in gate.items()})
        out.append(
            {
                "what": "first stages",
                "lists": means,
                "queries": results.get("queries") or {},
                "bootstrap": boot,
            }
        )
    return out


def _value(m: dict, split: str, name: str) -> float | None:
    v = ((m["lists"].get(split) or {}).get(name) or {}).get(METRIC)
    return float(v) if isinstance(v, int | float) else None


def _queries(n) -> str:
    return str(len(n)) if isinstance(n, list) else str(n or "?")


def list_note(name: str, spec=None, default: str | None = None, results: dict | None = None) -> str:
    """Markdown for the line beside list ``name``: its validation and test MAP@10 on cs3245, against the
    default list's on the same queries, a plain note when it is below the default on validation, and for
    a re-ranked list the checkpoint's own record. ``spec``: the text model (``registry.ModelSpec``) that
    re-ranked; ``default``: the default list (``default_text_list()`` when None)."""
    from patent_demo.text.hybrid import default_text_list

    default = default or default_text_list()
    results = results_text() if results is None else results
    checkpoint = getattr(spec, "path", None) if name in RERANKED or default in RERANKED else None
    head = f"**{TITLES.get(name, name)}**" + (
        " · **the default list** (best on validation)" if name == default else ""
    )
    parts = [head]
    sets = [m for m in measurements(checkpoint, results) if _value(m, "val", name) is not None]
    if not sets:
        parts.append(
            f"not measured on the cs3245 split{' with ' + spec.key if spec is not None and name in RERANKED else ''}"
        )
    else:
        both = [m for m in sets if _value(m, "val", default) is not None]
        m = (both or sets)[0]
        figures = []
        for split, word in (("val", "validation"), ("test", "test")):
            v, d = _value(m, split, name), _value(m, split, default)
            if v is None:
                continue
            vs = f" against {d:.3f} for {default}" if d is not None and name != default else ""
            figures.append(f"{word} {v:.3f}{vs} ({_queries(m['queries'].get(split))} queries)")
        parts.append(f"MAP@10 on cs3245 ({m['what']}): " + "; ".join(figures))
        v, d = _value(m, "val", name), _value(m, "val", default)
        if name != default and d is not None and v < d:
            b = (m["bootstrap"].get("val") or {}).get(f"{name} - {default}") or {}
            ci = (
                f", difference {b['diff']:+.3f}, 95 % interval [{b['low']:+.3f}, {b['high']:+.3f}]"
                if {"diff", "low", "high"} <= set(b)
                else ""
            )
            parts.append(f"⚠️ below the default list ({default}) on validation{ci}: shown for error analysis")
    if spec is not None and name in RERANKED:
        parts += [x for x in (_own_record(spec),) if x]
    return " · ".join(parts)


def _own_record(spec) -> str:
    """The checkpoint's own figures (``metrics.json``, its training protocol), or that its head is untrained."""
    from patent_demo.registry import figures_note

    if not getattr(spec, "trained", True):
        return "untrained head: its scores are not yet meaningful"
    metrics = getattr(spec, "metrics", {}) or {}
    own, ev = figures_note("text", metrics), metrics.get("evaluation") or {}
    where = (
        f"BM25 top {ev['k_rerank']} re-ranked, {ev.get('queries', '?')} test queries"
        if "k_rerank" in ev
        else "its test queries"
    )
    return f"{spec.key}'s own record ({where}): {own}" if own else ""
