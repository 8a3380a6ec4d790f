"""Contrastive losses for drawing retrieval: plain InfoNCE (Eq. 1), HMCL (Eqs. 2-4) and the text term (Eq. 5).

Conventions shared by every loss here:

* A batch holds ``N = 2K`` image embeddings ``z`` of shape ``[N, D]``. They are either two augmented
  views of one figure or two figures of one patent (or a mix, as the batch sampler produces): the
  losses do not care, since the same-patent weight ``s_p`` covers both cases.
* Embeddings are L2-normalised inside the loss (``normalize=True``, the default), so similarities
  are cosines. Pass ``normalize=False`` when the encoder already returns unit vectors.
* Similarities are divided by a temperature ``tau``; the default ``0.1`` follows supervised
  contrastive learning (Khosla et al. 2020) and pytorch-metric-learning's ``SupConLoss``.
* The anchor is excluded from every sum: it is neither its own positive nor in its own denominator
  (SimCLR NT-Xent style).
* Losses are ``nn.Module`` objects whose ``forward`` returns a dict of scalar tensors whose keys end in
  ``_loss``; the training objective is their sum.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from patent_demo.hierarchy import HMCLWeights

__all__ = [
    "ContrastiveLoss",
    "HMCLLoss",
    "ImageTextLoss",
    "hierarchical_weights",
    "level_balanced_weights",
    "weights_from_levels",
    "LEVEL_MARKS",
    "hmcl_loss",
    "hmcl_loss_loop",
    "image_text_loss",
    "info_nce_loss",
    "multi_positive_cross_entropy",
]

DEFAULT_TAU = 0.1
DEFAULT_TEXT_LOGIT_SCALE = 1.0 / 0.07
MAX_LOGIT_SCALE = 100.0
_DEFAULT = HMCLWeights()


def _check_embeddings(z: Tensor, name: str = "embeddings") -> None:
    if z.dim() != 2:
        raise ValueError(f"{name} must have shape [N, D], got {tuple(z.shape)}")


def _check_ids(ids: Tensor | None, n: int, name: str) -> None:
    if ids is None:
        return
    if ids.dim() != 1 or ids.shape[0] != n:
        raise ValueError(f"{name} must have shape [{n}], got {tuple(ids.shape)}")
    if ids.is_floating_point():
        raise ValueError(f"{name} must be an integer tensor, got {ids.dtype}")


def _same(ids: Tensor) -> Tensor:
    """``[N] -> [N, N]`` bool: ``ids[i] == ids[j]`` and both known (ids < 0 mean unknown, never equal)."""
    known = ids >= 0
    return (ids[:, None] == ids[None, :]) & known[:, None] & known[None, :]


LEVEL_MARKS = (1.0, 0.5, 0.25)  # same patent, subclass, main class: distinct weights that mark a pair's level


def hierarchical_weights(
    patent_ids: Tensor,
    subclass_ids: Tensor | None = None,
    main_ids: Tensor | None = None,
    s_p: float = _DEFAULT.s_p,
    s_s: float = _DEFAULT.s_s,
    s_m: float = _DEFAULT.s_m,
    dtype: torch.dtype = torch.float32,
) -> Tensor:
    """Relevance ``h_ij`` of item ``j`` to anchor ``i`` from the classification hierarchy (HMCL Eq. 2).

    ``h_ij = s_p`` if ``i`` and ``j`` come from the same patent, else ``s_s`` if they share a
    subclass, else ``s_m`` if they share a main class, else 0 (``hierarchy.HMCLWeights.relevance``,
    the one computation of Eq. 2; defaults from ``hierarchy.HMCLWeights``). The diagonal is 0 (the
    anchor is never its own positive). Ids come from any hierarchy scheme (Locarno, USPC): encode
    scheme-qualified keys (``hierarchy.hierarchy_keys``) so schemes never share an id.

    Args:
        patent_ids: ``[N]`` int, one id per item.
        subclass_ids: ``[N]`` int or None; ids must be unique across main classes (encode ``"06-01"``,
            not ``"01"``). Negative ids mean "unknown" and match nothing.
        main_ids: ``[N]`` int or None; negative ids mean "unknown".
        s_p, s_s, s_m: the three weights, ``s_p >= s_s >= s_m >= 0``.

    Returns:
        ``[N, N]`` weights of ``dtype`` on the device of ``patent_ids``.
    """
    n = patent_ids.shape[0]
    _check_ids(patent_ids, n, "patent_ids")
    _check_ids(subclass_ids, n, "subclass_ids")
    _check_ids(main_ids, n, "main_ids")
    none = torch.zeros(n, n, dtype=torch.bool, device=patent_ids.device)
    same_sub = _same(subclass_ids) if subclass_ids is not None else none
    same_main = _same(main_ids) if main_ids is not None else none
    h = HMCLWeights(s_p, s_s, s_m).relevance(_same(patent_ids), same_sub, same_main, dtype)
    h.fill_diagonal_(0.0)
    return h


def level_balanced_weights(
    patent_ids: Tensor,
    subclass_ids: Tensor | None = None,
    main_ids: Tensor | None = None,
    s_p: float = _DEFAULT.s_p,
    s_s: float = _DEFAULT.s_s,
    s_m: float = _DEFAULT.s_m,
    dtype: torch.dtype = torch.float32,
) -> Tensor:
    """Eq. 2 with each level's weight shared by that level's positives of the anchor: ``[N, N]``.

    :func:`hierarchical_weights` gives every positive its level's weight, so an anchor with 1 same-patent,
    2 same-subclass and 40 same-main-class items puts ``40 * 0.2 / (1 + 0.7 + 8) = 82%`` of its target on
    the main class (the paper's form, the counts deciding). Here a positive at level ``L`` weighs
    ``s_L / n_iL`` (``n_iL``: the anchor's positives at exactly that level), so after the ``H_i``
    normalisation of Eq. 3 the three levels hold ``s_p : s_s : s_m`` of the target whatever their counts
    (levels without a positive drop out). The diagonal is 0.
    """
    level = hierarchical_weights(patent_ids, subclass_ids, main_ids, *LEVEL_MARKS, dtype)
    return weights_from_levels(level, s_p, s_s, s_m, balanced=True)


def weights_from_levels(level: Tensor, s_p: float, s_s: float, s_m: float, balanced: bool = False) -> Tensor:
    """Eq. 2 weights ``[N, N]`` from each pair's closest shared level, marked as in :data:`LEVEL_MARKS`
    (``hierarchical_weights`` with those weights; or the higher over several hierarchies): ``s_p``, ``s_s``,
    ``s_m`` per level, each shared by the anchor's positives at that level when ``balanced``
    (:func:`level_balanced_weights`); unmarked pairs 0."""
    out = torch.zeros_like(level)
    for marker, weight in zip(LEVEL_MARKS, (s_p, s_s, s_m), strict=True):
        at = level == marker
        share = at.sum(dim=1, keepdim=True).clamp_min(1).to(level.dtype) if balanced else 1.0
        out = torch.where(at, torch.full_like(level, weight) / share, out)
    return out


def multi_positive_cross_entropy(logits: Tensor, weights: Tensor) -> tuple[Tensor, Tensor]:
    """Soft-target cross-entropy per row: ``-sum_j (w_ij / W_i) log softmax(logits_i)_j`` (HMCL Eqs. 3-4).

    Entries of ``logits`` equal to ``-inf`` are left out of the softmax denominator (the anchor, for
    example); their weights must be 0. Rows with ``W_i = sum_j w_ij = 0`` have no positive and give 0.

    Args:
        logits: ``[N, M]`` scores.
        weights: ``[N, M]`` non-negative positive weights ``w_ij``.

    Returns:
        ``(per_row [N], has_positive [N] bool)``.
    """
    log_prob = logits - torch.logsumexp(logits, dim=1, keepdim=True)
    # -inf entries (excluded from the denominator) carry weight 0; zero them so 0 * -inf is not NaN.
    log_prob = torch.where(torch.isfinite(logits), log_prob, torch.zeros_like(log_prob))
    total = weights.sum(dim=1, keepdim=True)
    has_positive = total.squeeze(1) > 0
    target = weights / torch.where(total > 0, total, torch.ones_like(total))
    return -(target * log_prob).sum(dim=1), has_positive


def _mean_over_anchors(per_anchor: Tensor, has_positive: Tensor) -> Tensor:
    """Mean over anchors that have a positive; 0 (with zero gradients, not NaN) when none does."""
    count = has_positive.sum().clamp_min(1).to(per_anchor.dtype)
    return (per_anchor * has_positive.to(per_anchor.dtype)).sum() / count


def _similarity_logits(z: Tensor, tau: float, normalize: bool) -> Tensor:
    """``[N, D] -> [N, N]`` cosine (or dot) similarities over ``tau`` with ``-inf`` on the diagonal."""
    if tau <= 0:
        raise ValueError(f"tau must be positive, got {tau}")
    if normalize:
        z = F.normalize(z, dim=1)
    logits = z @ z.T / tau
    eye = torch.eye(z.shape[0], dtype=torch.bool, device=z.device)
    return logits.masked_fill(eye, float("-inf"))


def _partners(pair_ids: Tensor) -> Tensor:
    """``[N]`` pair ids, each occurring exactly twice -> ``[N]`` index of each item's partner."""
    same = pair_ids[:, None] == pair_ids[None, :]
    same.fill_diagonal_(False)
    counts = same.sum(dim=1)
    if not bool((counts == 1).all()):
        bad = pair_ids[counts != 1][0].item()
        raise ValueError(f"every pair id must occur exactly twice; id {bad} does not")
    return same.to(torch.int64).argmax(dim=1)


def info_nce_loss(
    z: Tensor, pair_ids: Tensor | None = None, tau: float = DEFAULT_TAU, normalize: bool = True
) -> Tensor:
    """Plain contrastive loss (Eq. 1), SimCLR NT-Xent over ``2K`` embeddings.

    Each anchor's single positive is its pair partner; the denominator runs over the other
    ``2K - 1`` items. The loss is the mean over all ``2K`` anchors (so it is symmetric in a pair).

    Args:
        z: ``[2K, D]`` embeddings. Without ``pair_ids``, rows ``k`` and ``k + K`` form pair ``k``
            (``torch.cat([z, z_tilde])``).
        pair_ids: optional ``[2K]`` int; items with equal ids are partners (each id exactly twice).
        tau: temperature.
        normalize: L2-normalise ``z`` first.

    Returns:
        scalar loss.
    """
    _check_embeddings(z)
    n = z.shape[0]
    if pair_ids is None:
        if n % 2:
            raise ValueError(f"without pair_ids the batch must hold 2K items, got {n}")
        k = n // 2
        partner = torch.cat([torch.arange(k, n), torch.arange(0, k)]).to(z.device)
    else:
        _check_ids(pair_ids, n, "pair_ids")
        partner = _partners(pair_ids)
    logits = _similarity_logits(z, tau, normalize)
    return F.cross_entropy(logits, partner)


def hmcl_loss(
    z: Tensor,
    h: Tensor,
    tau: float = DEFAULT_TAU,
    negative_mask: Tensor | None = None,
    normalize: bool = True,
) -> Tensor:
    """Hierarchical multi-positive contrastive loss (HMCL Eq. 4) for given relevance weights.

    For anchor ``i``, with ``s_ij = cos(z_i, z_j)`` and ``H_i = sum_{j != i} h_ij`` (Eq. 3)::

        loss_i = - sum_{j != i} (h_ij / H_i) log( exp(s_ij / tau) / sum_{k != i} exp(s_ik / tau) )

    The loss is the mean of ``loss_i`` over anchors with ``H_i > 0``; anchors without a positive are
    skipped, and a batch with no positive at all gives 0 with zero gradients.

    Args:
        z: ``[N, D]`` embeddings.
        h: ``[N, N]`` relevance weights (e.g. from ``hierarchical_weights``). The diagonal is ignored;
            negative entries mean "never a positive" and count as 0 (the item stays in the
            denominator as a negative).
        tau: temperature.
        negative_mask: optional ``[N, N]`` bool; ``True`` forces ``h_ij = 0`` (a hard negative).
        normalize: L2-normalise ``z`` first.

    Returns:
        scalar loss.
    """
    _check_embeddings(z)
    n = z.shape[0]
    if h.shape != (n, n):
        raise ValueError(f"h must have shape [{n}, {n}], got {tuple(h.shape)}")
    if n < 2:
        return z.sum() * 0.0
    logits = _similarity_logits(z, tau, normalize)
    weights = h.to(device=z.device, dtype=z.dtype).clamp_min(0.0)
    eye = torch.eye(n, dtype=torch.bool, device=z.device)
    exclude = eye
    if negative_mask is not None:
        if negative_mask.shape != (n, n) or negative_mask.dtype != torch.bool:
            raise ValueError(f"negative_mask must be a bool tensor of shape [{n}, {n}]")
        exclude = exclude | negative_mask.to(z.device)
    weights = weights.masked_fill(exclude, 0.0)
    per_anchor, has_positive = multi_positive_cross_entropy(logits, weights)
    return _mean_over_anchors(per_anchor, has_positive)


def hmcl_loss_loop(
    z: Tensor,
    h: Tensor,
    tau: float = DEFAULT_TAU,
    negative_mask: Tensor | None = None,
    normalize: bool = True,
) -> Tensor:
    """Reference for ``hmcl_loss`` (Eq. 4): the same loss written as a loop over anchors.

    One row of similarities per anchor, the anchor left out by indexing rather than masking. Slow;
    kept for tests and ``bench/bench_hmcl_loss.py``. Arguments and result as ``hmcl_loss``.
    """
    if normalize:
        z = F.normalize(z, dim=1)
    n = z.shape[0]
    losses = []
    for i in range(n):
        others = torch.cat([torch.arange(0, i), torch.arange(i + 1, n)]).to(z.device)
        sims = z[others] @ z[i] / tau
        w = h[i, others].to(z.dtype).clamp_min(0.0)
        if negative_mask is not None:
            w = w * (~negative_mask[i, others]).to(z.dtype)
        total = w.sum()
        if total <= 0:
            continue
        log_prob = sims - torch.logsumexp(sims, dim=0)
        losses.append(-(w / total * log_prob).sum())
    if not losses:
        return z.sum() * 0.0
    return torch.stack(losses).mean()


def image_text_loss(
    image: Tensor,
    text: Tensor,
    logit_scale: Tensor | float,
    patent_ids: Tensor | None = None,
    normalize: bool = True,
) -> Tensor:
    """CLIP-style symmetric image-text InfoNCE (the text-supervision term of HMCL Eq. 5, before lambda).

    Row ``i`` of ``text`` is the text (title, description) of the patent of image ``i``. Figures of
    one patent share that text, so texts repeat within a batch: every text of the anchor's patent
    is a positive, weighted uniformly (multi-positive cross-entropy on the same-patent mask), in
    both directions. Without ``patent_ids`` only the diagonal is positive (plain CLIP).

    Args:
        image: ``[N, D]`` image embeddings.
        text: ``[N, D]`` text embeddings aligned with ``image``.
        logit_scale: multiplier of the cosine similarities (CLIP's ``exp(t)``), a float or a scalar tensor.
        patent_ids: optional ``[N]`` int; items with equal ids are mutual positives.
        normalize: L2-normalise both sides first.

    Returns:
        scalar loss ``(L_image->text + L_text->image) / 2``.
    """
    _check_embeddings(image, "image")
    _check_embeddings(text, "text")
    if image.shape != text.shape:
        raise ValueError(
            f"image and text must have the same shape, got {tuple(image.shape)} and {tuple(text.shape)}"
        )
    n = image.shape[0]
    if normalize:
        image, text = F.normalize(image, dim=1), F.normalize(text, dim=1)
    logits = logit_scale * image @ text.T
    if patent_ids is None:
        positive = torch.eye(n, dtype=image.dtype, device=image.device)
    else:
        _check_ids(patent_ids, n, "patent_ids")
        positive = (patent_ids[:, None] == patent_ids[None, :]).to(device=image.device, dtype=image.dtype)
    to_text, _ = multi_positive_cross_entropy(logits, positive)
    to_image, _ = multi_positive_cross_entropy(logits.T, positive.T)
    return (to_text.mean() + to_image.mean()) / 2


class ContrastiveLoss(nn.Module):
    """Plain contrastive loss (Eq. 1) as a module; see ``info_nce_loss``.

    ``forward(z [2K, D], pair_ids [2K] | None) -> {"contrastive_loss": scalar}``.
    """

    def __init__(self, tau: float = DEFAULT_TAU, normalize: bool = True) -> None:
        super().__init__()
        self.tau = tau
        self.normalize = normalize

    def forward(self, z: Tensor, pair_ids: Tensor | None = None) -> dict[str, Tensor]:
        return {"contrastive_loss": info_nce_loss(z, pair_ids, tau=self.tau, normalize=self.normalize)}


class ImageTextLoss(nn.Module):
    """The text term of HMCL Eq. 5 as a module: ``weight * image_text_loss``.

    The logit scale is stored as ``log`` of the multiplier (CLIP's parameterisation), initialised to
    ``log(1 / 0.07)`` and learnable by default; it is clamped to at most 100 in ``forward``. With
    ``learn_logit_scale=False`` it is a fixed buffer. A scale passed to ``forward`` (e.g. an encoder's
    own ``logit_scale.exp()``) overrides the stored one.
    """

    def __init__(
        self,
        weight: float = 0.2,
        logit_scale: float = DEFAULT_TEXT_LOGIT_SCALE,
        learn_logit_scale: bool = True,
        normalize: bool = True,
    ) -> None:
        super().__init__()
        if logit_scale <= 0:
            raise ValueError(f"logit_scale must be positive, got {logit_scale}")
        self.weight = weight
        self.normalize = normalize
        init = torch.tensor(math.log(logit_scale))
        if learn_logit_scale:
            self.log_logit_scale = nn.Parameter(init)
        else:
            self.register_buffer("log_logit_scale", init)

    def scale(self) -> Tensor:
        """The current multiplier ``exp(log_logit_scale)``, clamped to at most 100."""
        return self.log_logit_scale.exp().clamp(max=MAX_LOGIT_SCALE)

    def forward(
        self,
        image: Tensor,
        text: Tensor,
        patent_ids: Tensor | None = None,
        logit_scale: Tensor | float | None = None,
    ) -> dict[str, Tensor]:
        scale = self.scale().to(image.dtype) if logit_scale is None else logit_scale
        loss = image_text_loss(image, text, scale, patent_ids=patent_ids, normalize=self.normalize)
        return {"text_loss": self.weight * loss}


class HMCLLoss(nn.Module):
    """HMCL objective (Eqs. 2-5): hierarchical multi-positive InfoNCE plus an optional text term.

    ``forward`` returns ``{"hmcl_loss": ...}`` and, when ``text`` embeddings are given,
    ``"text_loss"`` already multiplied by ``text_weight`` (lambda, default 0.2). The text term's
    logit scale follows ``ImageTextLoss`` (learnable, initialised to ``1 / 0.07``, unless
    ``learn_text_logit_scale=False``).

    Positives come either from the hierarchy ids (``patent_ids`` and optionally ``subclass_ids``,
    ``main_ids``; see ``hierarchical_weights``) or from an explicit weight matrix ``h``; an optional
    ``negative_mask`` forces chosen pairs to be negatives. With ``s_s = s_m = 0`` and one pair per
    patent, ``hmcl_loss`` equals the plain contrastive loss (Eq. 1).
    """

    def __init__(
        self,
        tau: float = DEFAULT_TAU,
        s_p: float = _DEFAULT.s_p,
        s_s: float = _DEFAULT.s_s,
        s_m: float = _DEFAULT.s_m,
        text_weight: float = 0.2,
        text_logit_scale: float = DEFAULT_TEXT_LOGIT_SCALE,
        learn_text_logit_scale: bool = True,
        normalize: bool = True,
    ) -> None:
        super().__init__()
        if tau <= 0:
            raise ValueError(f"tau must be positive, got {tau}")
        HMCLWeights(s_p, s_s, s_m)  # validates s_p >= s_s >= s_m >= 0
        self.tau = tau
        self.s_p, self.s_s, self.s_m = s_p, s_s, s_m
        self.normalize = normalize
        self.text = ImageTextLoss(
            weight=text_weight,
            logit_scale=text_logit_scale,
            learn_logit_scale=learn_text_logit_scale,
            normalize=normalize,
        )

    def weights(
        self,
        patent_ids: Tensor,
        subclass_ids: Tensor | None = None,
        main_ids: Tensor | None = None,
        dtype: torch.dtype = torch.float32,
    ) -> Tensor:
        """``[N, N]`` relevance weights for these ids with this loss's ``s_p, s_s, s_m`` (Eq. 2)."""
        return hierarchical_weights(patent_ids, subclass_ids, main_ids, self.s_p, self.s_s, self.s_m, dtype)

    def forward(
        self,
        image: Tensor,
        patent_ids: Tensor | None = None,
        subclass_ids: Tensor | None = None,
        main_ids: Tensor | None = None,
        h: Tensor | None = None,
        negative_mask: Tensor | None = None,
        text: Tensor | None = None,
        logit_scale: Tensor | float | None = None,
    ) -> dict[str, Tensor]:
        """Args:
        image: ``[N, D]`` image embeddings (``N = 2K``).
        patent_ids, subclass_ids, main_ids: ``[N]`` int ids (see ``hierarchical_weights``).
        h: ``[N, N]`` explicit weights used instead of the ids' weights (``patent_ids`` is then only
            needed for the text term).
        negative_mask: ``[N, N]`` bool, ``True`` forces ``h_ij = 0``.
        text: ``[N, D]`` text embeddings of each image's patent; adds ``"text_loss"``.
        logit_scale: overrides the text term's stored logit scale.
        """
        if h is None:
            if patent_ids is None:
                raise ValueError("pass patent_ids (with optional subclass_ids, main_ids) or an explicit h")
            h = hierarchical_weights(
                patent_ids.to(image.device),
                None if subclass_ids is None else subclass_ids.to(image.device),
                None if main_ids is None else main_ids.to(image.device),
                self.s_p,
                self.s_s,
                self.s_m,
                dtype=image.dtype,
            )
        out = {"hmcl_loss": hmcl_loss(image, h, self.tau, negative_mask, self.normalize)}
        if text is not None:
            ids = None if patent_ids is None else patent_ids.to(image.device)
            out.update(self.text(image, text, ids, logit_scale))
        return out
