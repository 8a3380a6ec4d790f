"""DSSDNet training losses (Eqs. 7–15 of "Towards Domain Balance Based on Semantic Decomposition
for Patent Relevance Assessment").

Every function takes tensors and returns a scalar; ``DSSDNetLoss`` combines the terms a variant of
the ablation ladder uses and returns a dict whose keys end in ``_loss`` (each already multiplied by
its weight), so the total objective (Eq. 15) is ``sum(losses.values())``.

Relevance heads produce *logits*; the BCE terms use ``binary_cross_entropy_with_logits`` (the same
value as BCE on ``sigmoid(logit)``, computed stably). The ranking term (Eqs. 13–14) works on the
predicted relevance *probabilities* ``S = sigmoid(logit)``, the scores the candidates are ranked by,
so its margin ``m`` lives on the [0, 1] scale.

Hyper-parameters the article leaves to its Table 3 (not available) and the defaults chosen here:

* ``gamma = 2.0``: the focal factor of Eq. 10 (the usual focal-loss default).
* ``alpha``: the domain-balanced factor of Eq. 10 has no default; it comes from the training set's
  domain labels through :func:`domain_alpha` (``alpha = n(t=0) / n``, so the rarer domain label
  carries the larger weight).
* ``top_k = 4`` hard negatives per batch and margin ``m = 0.3`` (Eqs. 13–14): with the article's
  batch of 64 and one random negative per positive, a batch holds about 32 negatives, and 4 of them
  are the hardest eighth; a margin of 0.3 on probabilities asks a positive to beat the hardest
  negatives clearly without demanding saturated scores.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, fields

import torch
import torch.nn.functional as F
from torch import Tensor

__all__ = [
    "VARIANTS",
    "VARIANT_TERMS",
    "DSSDNetLossConfig",
    "DSSDNetLoss",
    "relevance_bce",
    "orthogonality_loss",
    "reconstruction_loss",
    "domain_focal_loss",
    "hard_negative_ranking_loss",
    "domain_alpha",
    "ConstantDomainError",
    "DEFAULT_ALPHA",
]

# The article's ablation ladder (Section 5.5), each rung adding one component.
VARIANTS = ("BERT(C)", "DS_SD", "DS_SD_MR", "DSSDNet")

# Loss terms per variant: ``ce`` is the plain cross-encoder's BCE; ``ds di orth rec t`` make L_SD
# (Eq. 11); ``mr`` is L_MR (Eq. 12); ``pr`` is L_PR (Eq. 14).
VARIANT_TERMS: dict[str, tuple[str, ...]] = {
    "BERT(C)": ("ce",),
    "DS_SD": ("ds", "di", "orth", "rec", "t"),
    "DS_SD_MR": ("ds", "di", "orth", "rec", "t", "mr"),
    "DSSDNet": ("ds", "di", "orth", "rec", "t", "mr", "pr"),
}


def _safe_sqrt(x: Tensor) -> Tensor:
    """``sqrt(x)`` for ``x >= 0`` whose gradient at ``x == 0`` is 0 rather than inf/NaN."""
    positive = x > 0
    return torch.where(
        positive, torch.sqrt(torch.where(positive, x, torch.ones_like(x))), torch.zeros_like(x)
    )


def relevance_bce(logits: Tensor, y: Tensor) -> Tensor:
    """Binary cross-entropy of a relevance head, Eq. 7 (``L_ds``, ``L_di``) and Eq. 12 (``L_MR``).

    ``logits`` [B] are pre-sigmoid scores, ``y`` [B] the relevance labels in [0, 1] (0/1, or a graded
    score as a soft target); mean over the batch.
    """
    return F.binary_cross_entropy_with_logits(logits, y.to(logits.dtype))


def orthogonality_loss(e_ds: Tensor, e_di: Tensor) -> Tensor:
    """Orthogonal constraint, Eq. 8: ``L_orth = || E_ds^T E_di / B ||_F / d^2``.

    ``e_ds``, ``e_di`` [B, d]; ``E`` is each centred over the batch, so ``E_ds^T E_di / B`` [d, d] is
    their cross-covariance. The article's formula takes the Frobenius norm (not its square) and
    divides by ``d^2``; this follows the formula. A batch of one has zero cross-covariance (loss 0).
    """
    if e_ds.shape != e_di.shape or e_ds.dim() != 2:
        raise ValueError(
            f"e_ds and e_di must both be [B, d]; got {tuple(e_ds.shape)} and {tuple(e_di.shape)}"
        )
    b, d = e_ds.shape
    c_ds = e_ds - e_ds.mean(dim=0, keepdim=True)
    c_di = e_di - e_di.mean(dim=0, keepdim=True)
    cross_cov = c_ds.transpose(0, 1) @ c_di / b
    return _safe_sqrt(cross_cov.pow(2).sum()) / (d * d)


def reconstruction_loss(e_ds: Tensor, e_di: Tensor, e_s: Tensor) -> Tensor:
    """Complementarity constraint, Eq. 9: ``L_rec = 1/(B d) * sum_b || e_ds^b + e_di^b - e_s^b ||_2``.

    ``e_ds``, ``e_di``, ``e_s`` [B, d]; the per-row Euclidean norm (not squared), summed over the batch
    and divided by ``B * d`` as in the article.
    """
    if not (e_ds.shape == e_di.shape == e_s.shape) or e_s.dim() != 2:
        raise ValueError(
            f"e_ds, e_di, e_s must all be [B, d]; got {tuple(e_ds.shape)}, {tuple(e_di.shape)}, {tuple(e_s.shape)}"
        )
    b, d = e_s.shape
    residual = e_ds + e_di - e_s
    return _safe_sqrt(residual.pow(2).sum(dim=1)).sum() / (b * d)


def domain_focal_loss(t_logits: Tensor, t: Tensor, alpha: float, gamma: float = 2.0) -> Tensor:
    """Domain-balanced focal loss, Eq. 10, mean over the batch::

        L_t = -alpha * t * (1 - t_hat)^gamma * log(t_hat) - (1 - alpha) * (1 - t) * t_hat^gamma * log(1 - t_hat)

    with ``t_hat = sigmoid(t_logits)``. ``t_logits`` [B] come from the domain head ``g_T(e_ds)``,
    ``t`` [B] are the 0/1 domain labels (Eq. 4), ``alpha`` in (0, 1) is the domain-balanced factor
    (see :func:`domain_alpha`), ``gamma >= 0`` the focal factor. Pairs whose ``t`` is NaN (no domain
    label) are left out of the mean; with none known the loss is 0 with a zero gradient. Logs and powers are taken in
    log-sigmoid form for stability.
    """
    if not 0.0 < alpha < 1.0:
        raise ValueError(f"alpha must lie in (0, 1); got {alpha}")
    if gamma < 0:
        raise ValueError(f"gamma must be >= 0; got {gamma}")
    t = t.to(t_logits.dtype)
    known = ~torch.isnan(t)
    if not bool(known.all()):  # pairs without a domain label (no code on one side) teach g_T nothing
        if not bool(known.any()):
            return t_logits.sum() * 0.0
        t_logits, t = t_logits[known], t[known]
    log_p = F.logsigmoid(t_logits)  # log t_hat
    log_q = F.logsigmoid(-t_logits)  # log (1 - t_hat)
    pos = -alpha * t * torch.exp(gamma * log_q) * log_p
    neg = -(1.0 - alpha) * (1.0 - t) * torch.exp(gamma * log_p) * log_q
    return (pos + neg).mean()


def hard_negative_ranking_loss(scores: Tensor, y: Tensor, top_k: int = 4, margin: float = 0.3) -> Tensor:
    """Pairwise ranking with hard negative mining, Eqs. 13–14.

    ``scores`` [B] are the predicted relevance scores ``S``; ``y`` [B] the 0/1 labels. ``H`` holds the
    ``min(top_k, #negatives)`` largest negative scores; ``Delta_ij = S+_i - H_j`` for every positive
    ``i``; the loss is ``sum_ij max(0, m - Delta_ij) / |Delta|`` where ``|Delta|`` counts the pairs
    with ``m - Delta_ij > 0`` (the article's "valid instances"). It is 0 (with a zero gradient) when
    the batch has no positive, no negative, or no pair inside the margin.
    """
    if top_k < 1:
        raise ValueError(f"top_k must be >= 1; got {top_k}")
    if margin <= 0:
        raise ValueError(f"margin must be > 0; got {margin}")
    positive = y >= 0.5
    s_pos = scores[positive]
    s_neg = scores[~positive]
    if s_pos.numel() == 0 or s_neg.numel() == 0:
        return scores.sum() * 0.0
    hard = torch.topk(s_neg, k=min(top_k, s_neg.numel())).values  # H = TopK(S-, k)
    delta = s_pos[:, None] - hard[None, :]  # [P, k]
    hinge = torch.clamp(margin - delta, min=0.0)
    n_valid = (hinge > 0).sum()
    if n_valid == 0:
        return scores.sum() * 0.0
    return hinge.sum() / n_valid


DEFAULT_ALPHA = 0.5  # Eq. 10 with no domain imbalance to correct: both labels weigh the same


class ConstantDomainError(ValueError):
    """The training pairs carry one domain label only, so ``alpha = n(t=0) / n`` leaves (0, 1)."""


def domain_alpha(t: Sequence[float] | Tensor, constant: str = "raise") -> float:
    """The domain-balanced factor ``alpha`` of Eq. 10 from the TRAINING SET's domain labels:
    ``alpha = n(t=0) / n`` over the known labels (NaN = unknown, ignored), so that the rarer label gets
    the larger weight. When only one label occurs (or none is known) ``constant="raise"`` raises
    :class:`ConstantDomainError` saying so; ``constant="default"`` returns :data:`DEFAULT_ALPHA`."""
    values = torch.as_tensor(t, dtype=torch.float64).flatten()
    values = values[~torch.isnan(values)]
    n = values.numel()
    n1 = int((values >= 0.5).sum())
    n0 = n - n1
    if n0 == 0 or n1 == 0:
        if constant == "default":
            return DEFAULT_ALPHA
        raise ConstantDomainError(
            f"every training pair has the same domain label ({n0} with t=0, {n1} with t=1 of {n} known): "
            f"the domain loss has nothing to balance; pass alpha explicitly (e.g. --alpha {DEFAULT_ALPHA}) "
            f"or use a domain scheme/level under which both labels occur"
        )
    return n0 / n


@dataclass
class DSSDNetLossConfig:
    """Weights of each term (all 1 in the article, Eq. 15) and the hyper-parameters of Eqs. 10, 13–14."""

    ce_weight: float = 1.0
    ds_weight: float = 1.0
    di_weight: float = 1.0
    orth_weight: float = 1.0
    rec_weight: float = 1.0
    t_weight: float = 1.0
    mr_weight: float = 1.0
    pr_weight: float = 1.0
    alpha: float | None = None
    gamma: float = 2.0
    top_k: int = 4
    margin: float = 0.3

    def to_config(self) -> dict:
        return asdict(self)

    @classmethod
    def from_config(cls, config: Mapping) -> DSSDNetLossConfig:
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(config) - known)
        if unknown:
            raise ValueError(f"unknown loss config keys {unknown}; known keys: {sorted(known)}")
        return cls(**dict(config))


class DSSDNetLoss(torch.nn.Module):
    """The training objective of one variant of the ablation ladder (Eq. 15 for ``DSSDNet``).

    ``forward(outputs, y, t)`` takes the model's output dict (``Reranker.forward``) with keys

    * ``logit`` [B]: the plain cross-encoder's logit (``ce``); ``score`` [B]: the ranking probability (``pr``),
    * ``e_s``, ``e_ds``, ``e_di`` [B, d]; ``ds_logit``, ``di_logit``, ``t_logit`` [B] (``DS_SD`` and up),
    * ``mr_logit`` [B], the fusion regressor ``h_R`` (``DS_SD_MR`` and up),

    the relevance labels ``y`` [B] and domain labels ``t`` [B], and returns the weighted terms
    ``{ce,ds,di,orth,rec,t,mr,pr}_loss`` that the variant uses.
    """

    def __init__(self, config: DSSDNetLossConfig | None = None, variant: str = "DSSDNet") -> None:
        super().__init__()
        if variant not in VARIANT_TERMS:
            raise ValueError(f"unknown variant {variant!r}; choose one of {list(VARIANTS)}")
        self.config = config or DSSDNetLossConfig()
        self.variant = variant
        self.terms = VARIANT_TERMS[variant]
        if "t" in self.terms and self.config.alpha is None:
            raise ValueError(
                "the domain-balanced focal loss needs alpha: set DSSDNetLossConfig.alpha = "
                "domain_alpha(<domain labels of the training set>)"
            )

    def forward(self, outputs: Mapping[str, Tensor], y: Tensor, t: Tensor) -> dict[str, Tensor]:
        cfg = self.config
        losses: dict[str, Tensor] = {}
        if "ce" in self.terms:
            losses["ce_loss"] = cfg.ce_weight * relevance_bce(outputs["logit"], y)
        if "ds" in self.terms:
            losses["ds_loss"] = cfg.ds_weight * relevance_bce(outputs["ds_logit"], y)
        if "di" in self.terms:
            losses["di_loss"] = cfg.di_weight * relevance_bce(outputs["di_logit"], y)
        if "orth" in self.terms:
            losses["orth_loss"] = cfg.orth_weight * orthogonality_loss(outputs["e_ds"], outputs["e_di"])
        if "rec" in self.terms:
            losses["rec_loss"] = cfg.rec_weight * reconstruction_loss(
                outputs["e_ds"], outputs["e_di"], outputs["e_s"]
            )
        if "t" in self.terms:
            assert cfg.alpha is not None
            losses["t_loss"] = cfg.t_weight * domain_focal_loss(outputs["t_logit"], t, cfg.alpha, cfg.gamma)
        if "mr" in self.terms:
            losses["mr_loss"] = cfg.mr_weight * relevance_bce(outputs["mr_logit"], y)
        if "pr" in self.terms:
            losses["pr_loss"] = cfg.pr_weight * hard_negative_ranking_loss(
                outputs["score"], y, cfg.top_k, cfg.margin
            )
        return losses
