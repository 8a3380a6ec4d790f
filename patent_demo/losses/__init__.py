"""Training losses: modules that take tensors and return a dict of scalar ``*_loss`` tensors.

* ``patent_demo.losses.hmcl``: plain InfoNCE (Eq. 1), HMCL (Eqs. 2-4) and the image-text term (Eq. 5);
* ``patent_demo.losses.dssdnet``: the DSSDNet terms (Eqs. 7-15) and their per-variant sum.
"""

from patent_demo.losses.dssdnet import (
    VARIANT_TERMS,
    VARIANTS,
    DSSDNetLoss,
    DSSDNetLossConfig,
    domain_alpha,
    domain_focal_loss,
    hard_negative_ranking_loss,
    orthogonality_loss,
    reconstruction_loss,
    relevance_bce,
)
from patent_demo.losses.hmcl import (
    ContrastiveLoss,
    HMCLLoss,
    ImageTextLoss,
    hierarchical_weights,
    hmcl_loss,
    hmcl_loss_loop,
    image_text_loss,
    info_nce_loss,
    multi_positive_cross_entropy,
)

__all__ = [
    "ContrastiveLoss",
    "HMCLLoss",
    "ImageTextLoss",
    "hierarchical_weights",
    "hmcl_loss",
    "hmcl_loss_loop",
    "image_text_loss",
    "info_nce_loss",
    "multi_positive_cross_entropy",
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
]
