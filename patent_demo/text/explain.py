"""What moved a DSSDNet score: a summary of the gate and of each part's contribution, from the extras
``Reranker.rank`` attaches to every candidate (``gate``, ``ds``, ``di``, ``fusion``, ``t``,
``t_source``, ``t_hat``, ``score_t_flipped``).

* :func:`gate_summary`: how spread the gate ``g = sigmoid(W_g e_s + b_g)`` (Eq. 5) is over the ``d``
  dimensions: mean (the domain-sensitive share), standard deviation, range, the share of dimensions
  routed mostly to the domain-sensitive part (``g > 0.5``), and the mean binary entropy of the gate
  values in bits (1.0: every dimension split half and half). ``flat`` is set when the gate barely
  varies (all values within :data:`FLAT_RANGE` of each other): then the decomposition explains
  nothing. (For scale: a freshly initialised head spans about 0.41–0.59 over MiniLM's 384 dimensions,
  std 0.03; the shipped IPC checkpoint about 0.455–0.55, std 0.02, so its gate is weakly spread.)
* :func:`contributions`: the probability of the domain-sensitive head ``g_ds`` and of the
  domain-invariant head ``g_di`` (Eq. 7), the fused score ``h_R`` (Eq. 12) and the effect of the
  domain label: the score minus the score with ``t`` flipped.
* :func:`explain_markdown`: both as a short text for the app's panel; where the gate explains nothing
  (flat or undecided, as on real text so far) :func:`what_moves` says what does move the score, and
  :func:`list_gate_line` how the gate spreads over the whole list.
* :func:`rank_move`: how far a hit moved from its rank in the list it is compared with (``MOVE_FROM``),
  the one computation the result tables and the explanation panel both show.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

FLAT_RANGE = 0.05  # a gate whose values all lie within this band (max - min) is called flat
UNDECIDED_BITS = 0.995  # a gate whose mean binary entropy reaches this (shown as 1.00 bit) gets a warning too


def gate_summary(gate: Sequence[float] | None) -> dict | None:
    """Spread of one candidate's gate vector (``None`` for a variant without a gate)."""
    if gate is None or len(gate) == 0:
        return None
    g = np.clip(np.asarray(gate, dtype=np.float64), 1e-12, 1 - 1e-12)
    entropy = -(g * np.log2(g) + (1 - g) * np.log2(1 - g))
    std = float(g.std())
    return {
        "dims": int(g.size),
        "mean": float(g.mean()),
        "std": std,
        "min": float(g.min()),
        "max": float(g.max()),
        "share_domain_sensitive": float((g > 0.5).mean()),
        "entropy_bits": float(entropy.mean()),
        "flat": float(g.max() - g.min()) < FLAT_RANGE,
    }


def contributions(extra: Mapping) -> dict:
    """The parts of one candidate's score: ``ds``/``di`` head probabilities, ``fusion`` (``h_R``), the
    domain label used and where it came from, and ``t_effect`` = score - score with ``t`` flipped."""
    score = extra.get("fusion")
    if score is None and extra.get("ds") is not None and extra.get("di") is not None:
        score = 0.5 * (extra["ds"] + extra["di"])
    flipped = extra.get("score_t_flipped")
    t_effect = None if score is None or flipped is None else float(score) - float(flipped)
    return {
        "score": score,
        "ds": extra.get("ds"),
        "di": extra.get("di"),
        "fusion": extra.get("fusion"),
        "t": extra.get("t"),
        "t_source": extra.get("t_source"),
        "t_hat": extra.get("t_hat"),
        "t_effect": t_effect,
    }


def gate_spread_over_candidates(extras: Sequence[Mapping]) -> float:
    """Standard deviation of the gate mean over a list's candidates (0: every candidate gated alike)."""
    means = [e["gate_mean"] for e in extras if e and e.get("gate_mean") is not None]
    return float(np.std(means)) if len(means) > 1 else 0.0


# each list's hits are compared with the list it re-orders: the re-ranked lists with the hybrid pool they
# re-rank, the dense and hybrid lists with BM25 (the extras key holding that rank, and its name)
MOVE_FROM = {
    "dense": ("bm25_rank", "BM25"),
    "hybrid": ("bm25_rank", "BM25"),
    "dssdnet": ("pool_rank", "hybrid pool"),
    "fused": ("pool_rank", "hybrid pool"),
}


def rank_move(list_name: str, extra: Mapping | None, rank: int) -> str:
    """How far hit ``rank`` of ``list_name`` moved from its rank in the list it is compared with
    (``MOVE_FROM``): ``"↑ 3"`` (it rose three places), ``"↓ 2"``, ``"="``; ``""`` for a list compared with
    none (BM25) or a hit the other list does not hold."""
    key = MOVE_FROM.get(list_name, ("",))[0]
    before = (extra or {}).get(key) if key else None
    if before is None:
        return ""
    d = int(before) - int(rank)
    return f"↑ {d}" if d > 0 else (f"↓ {-d}" if d < 0 else "=")


def found_by(extra: Mapping) -> str:
    """Which first stage found a hit: ``"First stages: BM25 rank 3, dense rank 12; hybrid pool rank 5."``,
    ``–`` for a stage whose list (to its depth) does not hold it; "" when the extras hold no ranks."""
    if "bm25_rank" not in extra and "dense_rank" not in extra:
        return ""

    def rank(key: str) -> str:
        return str(extra[key]) if extra.get(key) is not None else "– (not in its list)"

    parts = [f"BM25 rank {rank('bm25_rank')}"] + (
        [f"dense rank {rank('dense_rank')}"] if "dense_rank" in extra else []
    )
    pool = f"; hybrid pool rank {extra['pool_rank']}" if extra.get("pool_rank") is not None else ""
    return f"First stages: {', '.join(parts)}{pool}."


def what_moves(extra: Mapping) -> str:
    """For a hit whose gate explains nothing: what does move its score, largest effect first (flipping
    the domain label ``t``; the gap between the two heads, half of which the fused score follows)."""
    c = contributions(extra)
    movers = []
    if c["t_effect"] is not None:
        movers.append(
            (
                abs(c["t_effect"]),
                f"the domain label t (flipping it changes the score by {-c['t_effect']:+.3f})",
            )
        )
    if c["ds"] is not None and c["di"] is not None:
        gap = float(c["ds"]) - float(c["di"])
        lean = "higher" if gap > 0 else "lower"
        movers.append(
            (
                abs(gap) / 2,
                f"the two heads' disagreement (the domain-sensitive head scores it {abs(gap):.3f} "
                f"{lean} than the domain-invariant one)",
            )
        )
    if not movers:
        return ""
    movers.sort(key=lambda m: -m[0])
    return "What moves this score instead, largest first: " + "; ".join(m[1] for m in movers) + "."


def list_gate_line(extras: Sequence[Mapping]) -> str:
    """The gate mean's spread over a re-ranked list's hits: do the hits differ in how domain-sensitive
    the model finds them, or are they all gated alike?"""
    means = [float(e["gate_mean"]) for e in extras if e and e.get("gate_mean") is not None]
    if len(means) < 2:
        return ""
    spread = gate_spread_over_candidates(extras)
    verdict = (
        "every hit is gated alike, so the gate does not order this list"
        if max(means) - min(means) < FLAT_RANGE
        else "the hits differ in how domain-sensitive the model finds them"
    )
    return (
        f"Over the list's {len(means)} hits the gate mean spans {min(means):.3f}–{max(means):.3f} "
        f"(std {spread:.3f}): {verdict}."
    )


def explain_markdown(extra: Mapping, list_extras: Sequence[Mapping] = ()) -> str:
    """A few lines for the panel: which first stage found the hit, the gate's spread (or that it is
    flat or undecided, and then what moves the score instead), the parts of the score and, given the
    extras of the whole list, the gate's spread over its hits."""
    lines = [line for line in [found_by(extra)] if line]
    g = gate_summary(extra.get("gate"))
    if g is None:
        lines.append("This variant has no gate (plain cross-encoder): the score is one head's output.")
    elif g["flat"]:
        lines.append(
            f"⚠️ The gate is flat ({g['mean']:.3f} ± {g['std']:.3f} over {g['dims']} dimensions): "
            "the model does not separate domain-sensitive from domain-invariant features, so the split "
            "below explains little (an untrained head, or a model trained for another scheme)."
        )
    else:
        if g["entropy_bits"] >= UNDECIDED_BITS:
            lines.append(
                f"⚠️ The gate is nearly undecided (entropy {g['entropy_bits']:.2f} bits, 1 = every dimension "
                "split half and half): read the split below with care."
            )
        lines.append(
            f"Gate: {100 * g['share_domain_sensitive']:.0f} % of {g['dims']} dimensions lean domain-sensitive; "
            f"mean {g['mean']:.3f}, std {g['std']:.3f}, range {g['min']:.2f}–{g['max']:.2f}, "
            f"entropy {g['entropy_bits']:.2f} bits (1 = undecided)."
        )
    c = contributions(extra)
    parts = []
    if c["ds"] is not None:
        parts.append(f"domain-sensitive head {c['ds']:.3f}")
    if c["di"] is not None:
        parts.append(f"domain-invariant head {c['di']:.3f}")
    if c["fusion"] is not None:
        parts.append(f"fused score h_R {c['fusion']:.3f}")
    if parts:
        lines.append("Parts: " + ", ".join(parts) + ".")
    if c["t_effect"] is not None and c["t"] is not None:
        source = {"codes": "from the codes", "predicted": f"predicted, P(t=1) = {c['t_hat']:.2f}"}.get(
            c["t_source"], ""
        )
        same = "same" if c["t"] else "different"
        lines.append(
            f"Domain t = {c['t']} ({same} subclass; {source}): flipping it would change the score by "
            f"{-c['t_effect']:+.3f}."
        )
    if g is not None and (g["flat"] or g["entropy_bits"] >= UNDECIDED_BITS):
        lines.append(what_moves(extra))
    lines.append(list_gate_line(list_extras))
    return "\n\n".join(line for line in lines if line)
