"""Inter-annotator agreement on the relevance labels: Cohen's kappa per annotator pair and
Krippendorff's alpha overall.

A *unit* is one (query, candidate). Each annotator contributes at most one value to a unit: their latest
live label (undone rows are ignored, a relabel replaces the earlier label). Adjudicated rows are the
resolution of a disagreement, not an independent judgement, so they never enter agreement; the report
counts the units that carry one. Labels map to grades ``relevant`` 2, ``partly`` 1, ``not`` 0.

* Cohen's kappa (Cohen 1960; weighted, Cohen 1968) on the items two annotators both judged:
  ``kappa = 1 - sum_ij w_ij O_ij / sum_ij w_ij E_ij`` with ``O`` the observed joint proportions, ``E_ij = a_i b_j``
  the product of the marginals and ``w_ij`` = 0 on the diagonal, 1 off it (unweighted) or ``|g_i - g_j|``
  (linear, on the grades). Unweighted this is ``(p_o - p_e) / (1 - p_e)``.
* Krippendorff's alpha (Krippendorff 2011, "Computing Krippendorff's alpha-reliability"):
  ``alpha = 1 - D_o / D_e = 1 - (n - 1) sum_ck o_ck d_ck / sum_ck n_c n_k d_ck`` over the coincidence matrix
  ``o_ck = sum_u (number of c-k pairs in unit u) / (m_u - 1)`` of the units with ``m_u >= 2`` values, its
  marginals ``n_c`` and ``n = sum_c n_c``. Distances: nominal ``d_ck = [c != k]``; ordinal
  ``d_ck = (sum_{g=c..k} n_g - (n_c + n_k) / 2)^2``; interval ``(c - k)^2``. Missing judgements are simply
  absent from a unit.

Undefined figures (too few shared items, no variation, fewer than two annotators) are ``None`` with a
reason, so the report is NaN-free JSON.

Run ``python -m patent_demo.labels.agreement LABELS.sqlite [--markdown]`` to print the report.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import defaultdict
from collections.abc import Hashable, Iterable, Sequence
from itertools import combinations
from pathlib import Path

import numpy as np

from patent_demo.labels.fields import unlink
from patent_demo.labels.store import GRADES, Label, LabelStore
from patent_demo.wording import counted

LEVELS = ("nominal", "ordinal", "interval")
KAPPA_WEIGHTS = (None, "linear", "quadratic")

Unit = tuple[str, str]


class AgreementUndefined(ValueError):
    """An agreement coefficient that has no value on the given data; the message says why."""


# -- Cohen's kappa ---------------------------------------------------------------------------------------


def cohen_kappa(
    a: Sequence[Hashable],
    b: Sequence[Hashable],
    *,
    weights: str | None = None,
    categories: Sequence[Hashable] | None = None,
) -> float:
    """Cohen's kappa between two raters' labels of the same items, ``a[i]`` and ``b[i]`` for item ``i``.

    Implements ``kappa = 1 - sum w O / sum w E`` (Cohen 1960, 1968). ``weights`` is None (0/1
    disagreement), ``"linear"`` (``|x - y|``) or ``"quadratic"`` (``(x - y)^2``); the weighted forms take
    the distance between the category *values*, so they need numeric labels (grades). ``categories``
    defaults to the sorted labels present; categories nobody used change nothing.

    Equals ``sklearn.metrics.cohen_kappa_score`` (for weighted kappa when the categories are consecutive
    integers passed as its ``labels``). Raises ``AgreementUndefined`` for fewer than 2 items or when
    the expected disagreement is zero (both raters gave every item the same single label).
    """
    if len(a) != len(b):
        raise ValueError(f"the raters judged different numbers of items: {len(a)} and {len(b)}")
    if weights not in KAPPA_WEIGHTS:
        raise ValueError(f"weights {weights!r} is not one of {KAPPA_WEIGHTS}")
    if len(a) < 2:
        raise AgreementUndefined(f"fewer than 2 shared items ({len(a)})")
    cats = list(categories) if categories is not None else sorted(set(a) | set(b))
    index = {c: i for i, c in enumerate(cats)}
    missing = (set(a) | set(b)) - set(index)
    if missing:
        raise ValueError(f"labels {sorted(map(str, missing))} are not among the categories {cats}")
    k = len(cats)
    observed = np.zeros((k, k))  # [K, K] joint counts, rows rater a
    np.add.at(observed, ([index[x] for x in a], [index[y] for y in b]), 1.0)
    observed /= len(a)
    expected = np.outer(observed.sum(1), observed.sum(0))  # [K, K] product of the marginals
    if weights is None:
        w = 1.0 - np.eye(k)
    else:
        values = np.asarray(cats, dtype=float)
        diff = np.abs(values[:, None] - values[None, :])
        w = diff if weights == "linear" else diff**2
    d_e = float((w * expected).sum())
    if d_e <= 1e-15:
        only = ", ".join(map(repr, sorted({*a, *b}, key=str)))
        raise AgreementUndefined(f"no variation: every shared item got the label {only} from both")
    return 1.0 - float((w * observed).sum()) / d_e


# -- Krippendorff's alpha --------------------------------------------------------------------------------


def coincidence_matrix(data: np.ndarray, domain: np.ndarray) -> np.ndarray:
    """The coincidence matrix ``o`` [V, V] of reliability data [R, U] (raters x units, NaN = missing) over the
    sorted value ``domain`` [V]: ``o_ck = sum_u (n_uc n_uk - [c = k] n_uc) / (m_u - 1)`` over the units with
    ``m_u >= 2`` values (Krippendorff 2011, eq. for o_ck)."""
    counts = (data.T[:, :, None] == domain[None, None, :]).sum(axis=1).astype(float)  # [U, V]
    m = counts.sum(axis=1)
    counts, m = counts[m >= 2], m[m >= 2]
    scaled = counts / (m - 1.0)[:, None]  # [U', V]
    return scaled.T @ counts - np.diag(scaled.sum(axis=0))


def _distances(domain: np.ndarray, n_c: np.ndarray, level: str) -> np.ndarray:
    """Squared distances ``d_ck`` [V, V] between the domain values at one level of measurement."""
    v = len(domain)
    if level == "nominal":
        return 1.0 - np.eye(v)
    if level == "interval":
        return (domain[:, None] - domain[None, :]) ** 2
    cum = np.concatenate([[0.0], np.cumsum(n_c)])  # cum[i] = sum of n_g for g < i
    lo = np.minimum.outer(np.arange(v), np.arange(v))
    hi = np.maximum.outer(np.arange(v), np.arange(v))
    between = cum[hi + 1] - cum[lo]  # sum_{g=c..k} n_g
    return (between - (n_c[:, None] + n_c[None, :]) / 2.0) ** 2


def krippendorff_alpha(data: np.ndarray | Sequence[Sequence[float]], level: str = "nominal") -> float:
    """Krippendorff's alpha of reliability data [R, U]: one row per rater, one column per unit, NaN where a
    rater gave no value. Values are numbers; for ``ordinal`` and ``interval`` their order (and, for
    interval, their differences) matters.

    Implements ``alpha = 1 - (n - 1) sum o_ck d_ck / sum n_c n_k d_ck`` (Krippendorff 2011). Units with
    fewer than two values are not pairable and drop out. Raises ``AgreementUndefined`` when no unit has
    two values or when every pairable value is the same (no expected disagreement).
    """
    if level not in LEVELS:
        raise ValueError(f"level {level!r} is not one of {LEVELS}")
    data = np.asarray(data, dtype=float)
    if data.ndim != 2:
        raise ValueError(f"reliability data must be [raters, units], got shape {data.shape}")
    present = ~np.isnan(data)
    if not (present.sum(axis=0) >= 2).any():
        raise AgreementUndefined("no unit was judged by two or more annotators")
    domain = np.unique(data[present])
    o = coincidence_matrix(data, domain)  # [V, V]
    n_c = o.sum(axis=0)
    n = n_c.sum()
    d = _distances(domain, n_c, level)
    d_e = float((np.outer(n_c, n_c) * d).sum())
    if d_e <= 1e-12:
        only = domain[n_c > 0]
        raise AgreementUndefined(f"no variation: every pairable judgement has the value {only[0]:g}")
    return 1.0 - (n - 1.0) * float((o * d).sum()) / d_e


# -- from the label store ------------------------------------------------------------------------------


def _live_labels(store_or_labels: LabelStore | Iterable[Label]) -> list[Label]:
    if isinstance(store_or_labels, LabelStore):
        return store_or_labels.labels()
    labels = [lab for lab in store_or_labels if not lab.undone]
    if all(lab.id is not None for lab in labels):
        labels.sort(key=lambda lab: lab.id)
    return labels


def judgements(store_or_labels: LabelStore | Iterable[Label]) -> tuple[dict[Unit, dict[str, str]], set[Unit]]:
    """``({(query_id, candidate_id): {annotator: label}}, adjudicated units)``: each annotator's latest live,
    non-adjudicated label per unit, and the units that carry a live adjudicated label. Labels given as a
    list are taken in id order (in the order given when ids are missing); undone ones are skipped."""
    units: dict[Unit, dict[str, str]] = defaultdict(dict)
    adjudicated: set[Unit] = set()
    for lab in _live_labels(store_or_labels):
        key = (lab.query_id, lab.candidate_id)
        if lab.adjudicated:
            adjudicated.add(key)
        else:
            units[key][lab.annotator] = lab.label
    return dict(sorted(units.items())), adjudicated


def pair_kappas(units: dict[Unit, dict[str, str]]) -> list[dict]:
    """Kappa for every annotator pair with at least one shared unit: ``{a, b, n, observed_agreement, kappa,
    kappa_linear, reason}`` sorted by (a, b). ``kappa`` is unweighted on the three labels, ``kappa_linear``
    linear-weighted on the grades; both None (with ``reason``) below 2 shared items or without variation."""
    shared: dict[tuple[str, str], list[tuple[str, str]]] = defaultdict(list)
    for by_annotator in units.values():
        for x, y in combinations(sorted(by_annotator), 2):
            shared[(x, y)].append((by_annotator[x], by_annotator[y]))
    out = []
    for (x, y), items in sorted(shared.items()):
        ga = [GRADES[p] for p, _ in items]
        gb = [GRADES[q] for _, q in items]
        row: dict = {
            "a": x,
            "b": y,
            "n": len(items),
            "observed_agreement": sum(p == q for p, q in items) / len(items),
            "kappa": None,
            "kappa_linear": None,
            "reason": None,
        }
        try:
            row["kappa"] = cohen_kappa([p for p, _ in items], [q for _, q in items])
            row["kappa_linear"] = cohen_kappa(ga, gb, weights="linear", categories=sorted(GRADES.values()))
        except AgreementUndefined as err:
            row["reason"] = str(err)
        out.append(row)
    return out


def agreement_report(store_or_labels: LabelStore | Iterable[Label]) -> dict:
    """The agreement report of a label store (or its labels) as NaN-free JSON-ready data.

    Keys: ``pairs`` (see ``pair_kappas``), ``alpha_nominal`` and ``alpha_ordinal`` (on the grades) or None
    with ``alpha_reason``, ``n_units`` (units judged by two or more annotators), ``n_items`` (units judged
    by anyone), ``n_annotators`` (who gave a live non-adjudicated label), ``n_disagreements`` (units whose
    annotators' latest labels differ and that nobody adjudicated, as ``LabelStore.disagreements``) and
    ``n_adjudicated`` (units carrying an adjudicated label, left out of agreement).
    """
    units, adjudicated = judgements(store_or_labels)
    annotators = sorted({a for by_annotator in units.values() for a in by_annotator})
    report: dict = {
        "pairs": pair_kappas(units),
        "alpha_nominal": None,
        "alpha_ordinal": None,
        "alpha_reason": None,
        "n_units": sum(len(v) >= 2 for v in units.values()),
        "n_items": len(units),
        "n_annotators": len(annotators),
        "n_disagreements": sum(
            1 for key, v in units.items() if key not in adjudicated and len(set(v.values())) > 1
        ),
        "n_adjudicated": len(adjudicated),
    }
    if len(annotators) < 2:
        report["alpha_reason"] = f"fewer than 2 annotators ({len(annotators)})"
        return report
    row_of = {a: i for i, a in enumerate(annotators)}
    data = np.full((len(annotators), len(units)), np.nan)  # [R, U] grades, NaN = not judged
    for j, by_annotator in enumerate(units.values()):
        for a, label in by_annotator.items():
            data[row_of[a], j] = GRADES[label]
    try:
        report["alpha_nominal"] = krippendorff_alpha(data, "nominal")
        report["alpha_ordinal"] = krippendorff_alpha(data, "ordinal")
    except AgreementUndefined as err:
        report["alpha_reason"] = str(err)
    return report


def _cell(text: str) -> str:
    """An annotator name as inert Markdown table text: HTML characters as entities, bars and brackets
    escaped, no bare address left to link (``fields.unlink``)."""
    text = str(text).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return unlink("".join("\\" + ch if ch in "\\|[]`" else ch for ch in text))


def _fmt(x: float | None) -> str:
    return "–" if x is None else f"{x:.3f}"


def agreement_markdown(report: dict) -> str:
    """The report of ``agreement_report`` as markdown: a summary line, alpha, and a table of pairs."""
    lines = [
        "## Annotator agreement",
        "",
        f"{counted(report['n_annotators'], 'annotator')}; {report['n_units']} of {counted(report['n_items'], 'judged item')} "
        f"have two or more judgements; {counted(report['n_disagreements'], 'open disagreement')}; "
        f"{counted(report['n_adjudicated'], 'adjudicated item')} (left out of agreement).",
        "",
    ]
    if report["alpha_reason"]:
        lines.append(f"Krippendorff's alpha: undefined ({report['alpha_reason']}).")
    else:
        lines.append(
            f"Krippendorff's alpha: nominal {_fmt(report['alpha_nominal'])}, "
            f"ordinal {_fmt(report['alpha_ordinal'])}."
        )
    lines.append("")
    if not report["pairs"]:
        lines.append("No two annotators judged the same item.")
    else:
        lines += [
            "| annotator A | annotator B | shared items | agreement | kappa | linear kappa | note |",
            "|---|---|---:|---:|---:|---:|---|",
        ]
        for p in report["pairs"]:
            lines.append(
                f"| {_cell(p['a'])} | {_cell(p['b'])} | {p['n']} | {p['observed_agreement']:.3f} | {_fmt(p['kappa'])} "
                f"| {_fmt(p['kappa_linear'])} | {p['reason'] or ''} |"
            )
    return "\n".join(lines) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m patent_demo.labels.agreement",
        description="Print Cohen's kappa per annotator pair and Krippendorff's alpha of a label store.",
    )
    parser.add_argument("labels", help="the label store (SQLite file written by the app)")
    parser.add_argument("--markdown", action="store_true", help="print markdown instead of JSON")
    args = parser.parse_args(argv)
    path = Path(args.labels)
    if not path.is_file():
        print(f"error: label store {path} does not exist", file=sys.stderr)
        return 2
    store = LabelStore(path)
    try:
        report = agreement_report(store)
    finally:
        store.close()
    if args.markdown:
        sys.stdout.write(agreement_markdown(report))
    else:
        print(json.dumps(report, indent=2, sort_keys=True, allow_nan=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())
