import math

import pytest
import torch
import torch.nn.functional as F

from patent_demo.losses.dssdnet import (
    DEFAULT_ALPHA,
    VARIANT_TERMS,
    ConstantDomainError,
    DSSDNetLoss,
    DSSDNetLossConfig,
    domain_alpha,
    domain_focal_loss,
    hard_negative_ranking_loss,
    orthogonality_loss,
    reconstruction_loss,
    relevance_bce,
)

LN2 = math.log(2.0)


def t64(x):
    return torch.tensor(x, dtype=torch.float64)


def test_relevance_bce_by_hand():
    # sigmoid(0) = 1/2 with y=1 -> ln 2; sigmoid(ln 3) = 3/4 with y=0 -> -ln(1/4) = 2 ln 2
    loss = relevance_bce(t64([0.0, math.log(3.0)]), t64([1.0, 0.0]))
    assert loss.item() == pytest.approx(1.5 * LN2, abs=1e-12)


def test_orthogonality_by_hand():
    # centred E_ds = [[-1,-1],[1,1]], E_di = [[1,-2],[-1,2]]; E_ds^T E_di / 2 = [[-1,2],[-1,2]]
    # ||.||_F = sqrt(10); divided by d^2 = 4
    e_ds = t64([[1.0, 0.0], [3.0, 2.0]])
    e_di = t64([[2.0, 1.0], [0.0, 5.0]])
    assert orthogonality_loss(e_ds, e_di).item() == pytest.approx(math.sqrt(10.0) / 4.0, abs=1e-12)


def test_orthogonality_matches_independent_formula():
    g = torch.Generator().manual_seed(0)
    a = torch.randn(5, 3, generator=g, dtype=torch.float64)
    b = torch.randn(5, 3, generator=g, dtype=torch.float64)
    total = 0.0
    for i in range(3):
        for j in range(3):
            cov = sum((a[n, i] - a[:, i].mean()) * (b[n, j] - b[:, j].mean()) for n in range(5)) / 5
            total += float(cov) ** 2
    assert orthogonality_loss(a, b).item() == pytest.approx(math.sqrt(total) / 9.0, rel=1e-12)


def test_orthogonality_of_one_item_is_zero_with_finite_gradient():
    a = t64([[1.0, 2.0]]).requires_grad_()
    b = t64([[3.0, -1.0]]).requires_grad_()
    loss = orthogonality_loss(a, b)
    loss.backward()
    assert loss.item() == 0.0
    assert a.grad.tolist() == [[0.0, 0.0]] and b.grad.tolist() == [[0.0, 0.0]]


def test_reconstruction_by_hand():
    # residuals [0, 2] and [3, -4] -> norms 2 and 5; (2 + 5) / (B d = 4)
    e_ds = t64([[1.0, 2.0], [0.0, 0.0]])
    e_di = t64([[0.0, 0.0], [3.0, 0.0]])
    e_s = t64([[1.0, 0.0], [0.0, 4.0]])
    assert reconstruction_loss(e_ds, e_di, e_s).item() == pytest.approx(1.75, abs=1e-12)


def test_reconstruction_exact_is_zero_with_finite_gradient():
    e_ds = t64([[1.0, 2.0]]).requires_grad_()
    e_di = t64([[0.5, 0.0]])
    e_s = t64([[1.5, 2.0]])
    loss = reconstruction_loss(e_ds, e_di, e_s)
    loss.backward()
    assert loss.item() == 0.0 and e_ds.grad.tolist() == [[0.0, 0.0]]


def test_domain_focal_by_hand():
    # alpha = 1/4, gamma = 2
    # t=1, t_hat=1/2: 1/4 * (1/2)^2 * ln 2                  = 0.0625 ln 2
    # t=0, t_hat=3/4: 3/4 * (3/4)^2 * ln 4 = 0.421875 * 2 ln 2 = 0.84375 ln 2
    # t=1, t_hat=1/4: 1/4 * (3/4)^2 * ln 4 = 0.140625 * 2 ln 2 = 0.28125 ln 2
    logits = t64([0.0, math.log(3.0), -math.log(3.0)])
    loss = domain_focal_loss(logits, t64([1.0, 0.0, 1.0]), alpha=0.25, gamma=2.0)
    assert loss.item() == pytest.approx((0.0625 + 0.84375 + 0.28125) * LN2 / 3, abs=1e-12)


def test_domain_focal_without_focus_is_half_bce():
    logits = t64([0.3, -1.2, 2.0, 0.0])
    t = t64([1.0, 0.0, 0.0, 1.0])
    loss = domain_focal_loss(logits, t, alpha=0.5, gamma=0.0)
    assert loss.item() == pytest.approx(
        0.5 * F.binary_cross_entropy(torch.sigmoid(logits), t).item(), rel=1e-12
    )


def test_domain_focal_rejects_bad_factors():
    with pytest.raises(ValueError, match=r"alpha must lie in \(0, 1\); got 1.0"):
        domain_focal_loss(t64([0.0]), t64([1.0]), alpha=1.0)
    with pytest.raises(ValueError, match="gamma must be >= 0; got -1"):
        domain_focal_loss(t64([0.0]), t64([1.0]), alpha=0.5, gamma=-1)


def test_ranking_by_hand():
    # negatives 0.625, 0.5, 0.125, 0.75 -> H = TopK(S-, 2) = [0.75, 0.625]; m = 0.25
    # positive 0.875: Delta = 0.125 (hinge 0.125), 0.25 (hinge 0: not valid)
    # positive 0.375: Delta = -0.375 (hinge 0.625), -0.25 (hinge 0.5)
    # (0.125 + 0.625 + 0.5) / 3 valid pairs
    scores = t64([0.875, 0.375, 0.625, 0.5, 0.125, 0.75])
    y = t64([1, 1, 0, 0, 0, 0])
    loss = hard_negative_ranking_loss(scores, y, top_k=2, margin=0.25)
    assert loss.item() == pytest.approx(1.25 / 3, abs=1e-12)


def reference_ranking(scores, y, k, m):
    pos = [s for s, lab in zip(scores, y, strict=True) if lab == 1]
    neg = sorted((s for s, lab in zip(scores, y, strict=True) if lab == 0), reverse=True)[:k]
    terms = [m - (p - h) for p in pos for h in neg if m - (p - h) > 0]
    return sum(terms) / len(terms) if terms else 0.0


@pytest.mark.parametrize("seed", range(5))
def test_ranking_matches_loop(seed):
    g = torch.Generator().manual_seed(seed)
    scores = torch.rand(12, generator=g, dtype=torch.float64)
    y = (torch.rand(12, generator=g) < 0.4).to(torch.float64)
    expected = reference_ranking(scores.tolist(), y.tolist(), k=3, m=0.3)
    assert hard_negative_ranking_loss(scores, y, top_k=3, margin=0.3).item() == pytest.approx(
        expected, abs=1e-12
    )


def test_ranking_edge_cases_are_zero_with_zero_gradient():
    for scores, y in [
        (t64([0.9, 0.8]), t64([1, 1])),  # no negative
        (t64([0.9, 0.8]), t64([0, 0])),  # no positive
        (t64([0.9, 0.1]), t64([1, 0])),  # beyond the margin
    ]:
        scores.requires_grad_()
        loss = hard_negative_ranking_loss(scores, y, top_k=4, margin=0.3)
        loss.backward()
        assert loss.item() == 0.0 and scores.grad.tolist() == [0.0, 0.0]


def test_ranking_k_larger_than_negatives():
    # one negative 0.5; positives 0.625 and 0.875 with m = 0.25: hinges 0.125 and 0 -> 0.125 / 1
    loss = hard_negative_ranking_loss(t64([0.625, 0.5, 0.875]), t64([1, 0, 1]), top_k=4, margin=0.25)
    assert loss.item() == pytest.approx(0.125, abs=1e-12)


def test_domain_alpha():
    assert domain_alpha([0, 0, 0, 1]) == 0.75
    assert domain_alpha(torch.tensor([1.0, 1.0, 0.0, 1.0, 1.0])) == 0.2
    with pytest.raises(
        ConstantDomainError, match=r"same domain label \(0 with t=0, 3 with t=1 of 3 known\).*--alpha"
    ):
        domain_alpha([1, 1, 1])
    assert domain_alpha([1, 1, 1], constant="default") == DEFAULT_ALPHA == 0.5
    nan = float("nan")
    assert domain_alpha([0, nan, 1, nan, 1, 1]) == 0.25  # unknown labels are not counted
    assert domain_alpha([nan, nan], constant="default") == 0.5


def test_domain_focal_leaves_unknown_labels_out():
    logits = torch.tensor([0.3, -1.2, 2.0, 0.1], dtype=torch.float64, requires_grad=True)
    t = torch.tensor([1.0, float("nan"), 0.0, float("nan")], dtype=torch.float64)
    got = domain_focal_loss(logits, t, 0.3, 2.0)
    want = domain_focal_loss(logits[[0, 2]], t[[0, 2]], 0.3, 2.0)
    torch.testing.assert_close(got, want)
    got.backward()
    assert torch.isfinite(logits.grad).all() and logits.grad[1] == 0 and logits.grad[3] == 0
    none = domain_focal_loss(logits, torch.full((4,), float("nan"), dtype=torch.float64), 0.3)
    assert float(none.detach()) == 0.0


def fake_outputs():
    g = torch.Generator().manual_seed(1)
    e = {k: torch.randn(4, 3, generator=g, dtype=torch.float64) for k in ("e_s", "e_ds", "e_di")}
    logits = {
        k: torch.randn(4, generator=g, dtype=torch.float64) for k in ("ds_logit", "di_logit", "t_logit")
    }
    logit = torch.randn(4, generator=g, dtype=torch.float64)
    return {**e, **logits, "mr_logit": logit, "logit": logit, "score": torch.sigmoid(logit)}


def test_module_terms_per_variant_and_weights():
    out = fake_outputs()
    y, t = t64([1, 0, 1, 0]), t64([1, 1, 0, 0])
    for variant, terms in VARIANT_TERMS.items():
        losses = DSSDNetLoss(DSSDNetLossConfig(alpha=0.5), variant)(out, y, t)
        assert sorted(losses) == sorted(f"{name}_loss" for name in terms)
    full = DSSDNetLoss(DSSDNetLossConfig(alpha=0.5), "DSSDNet")(out, y, t)
    assert full["ds_loss"].item() == pytest.approx(relevance_bce(out["ds_logit"], y).item(), abs=1e-15)
    assert full["t_loss"].item() == pytest.approx(
        domain_focal_loss(out["t_logit"], t, 0.5, 2.0).item(), abs=1e-15
    )
    assert full["pr_loss"].item() == pytest.approx(
        hard_negative_ranking_loss(out["score"], y, 4, 0.3).item(), abs=1e-15
    )
    weighted = DSSDNetLoss(DSSDNetLossConfig(alpha=0.5, orth_weight=3.0, mr_weight=0.0), "DSSDNet")(out, y, t)
    assert weighted["orth_loss"].item() == pytest.approx(3.0 * full["orth_loss"].item(), rel=1e-12)
    assert weighted["mr_loss"].item() == 0.0
    assert weighted["rec_loss"].item() == full["rec_loss"].item()


def test_module_needs_alpha_and_known_variant():
    with pytest.raises(ValueError, match=r"needs alpha: set DSSDNetLossConfig.alpha = domain_alpha"):
        DSSDNetLoss(DSSDNetLossConfig(), "DS_SD")
    assert DSSDNetLoss(DSSDNetLossConfig(), "BERT(C)").terms == ("ce",)
    with pytest.raises(ValueError, match="unknown variant 'DSSD'"):
        DSSDNetLoss(DSSDNetLossConfig(alpha=0.5), "DSSD")


def test_config_round_trip_and_unknown_keys():
    cfg = DSSDNetLossConfig(alpha=0.3, top_k=2)
    assert DSSDNetLossConfig.from_config(cfg.to_config()) == cfg
    with pytest.raises(ValueError, match=r"unknown loss config keys \['k'\]"):
        DSSDNetLossConfig.from_config({"k": 4})
