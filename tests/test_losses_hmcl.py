import math

import pytest
import torch
import torch.nn.functional as F

from patent_demo.losses import (
    ContrastiveLoss,
    HMCLLoss,
    ImageTextLoss,
    hierarchical_weights,
    hmcl_loss,
    hmcl_loss_loop,
    image_text_loss,
    info_nce_loss,
)

# Six patents, two items each: patents 0,1 share subclass 10; patent 2 shares main class 1 with them;
# patents 3,4 share subclass 20 (main 2); patent 5 has an unknown subclass and main class (-1).
PATENTS = torch.tensor([0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5])
SUBCLASSES = torch.tensor([10, 10, 10, 10, 11, 11, 20, 20, 20, 20, -1, -1])
MAINS = torch.tensor([1, 1, 1, 1, 1, 1, 2, 2, 2, 2, -1, -1])


def _embeddings(n: int, d: int, seed: int = 0) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    return torch.randn(n, d, generator=g, dtype=torch.float64)


def _python_weights(p, s, m, s_p=1.0, s_s=0.35, s_m=0.2):
    n = len(p)
    h = [[0.0] * n for _ in range(n)]
    for i in range(n):
        for j in range(n):
            if i == j:
                continue
            if p[i] == p[j]:
                h[i][j] = s_p
            elif s[i] >= 0 and s[i] == s[j]:
                h[i][j] = s_s
            elif m[i] >= 0 and m[i] == m[j]:
                h[i][j] = s_m
    return h


def _python_hmcl(z, h, tau):
    """Eq. 4 with python floats only: cosine similarities, anchor excluded, mean over anchors with H_i > 0."""
    rows = [[float(v) for v in r] for r in z]
    unit = [[v / math.sqrt(sum(x * x for x in r)) for v in r] for r in rows]
    n = len(unit)
    sim = [
        [sum(a * b for a, b in zip(unit[i], unit[j], strict=True)) / tau for j in range(n)] for i in range(n)
    ]
    losses = []
    for i in range(n):
        big_h = sum(max(h[i][j], 0.0) for j in range(n) if j != i)
        if big_h == 0:
            continue
        denominator = sum(math.exp(sim[i][k]) for k in range(n) if k != i)
        losses.append(
            -sum(
                max(h[i][j], 0.0) / big_h * math.log(math.exp(sim[i][j]) / denominator)
                for j in range(n)
                if j != i
            )
        )
    return sum(losses) / len(losses) if losses else 0.0


def test_hierarchical_weights_match_the_rules():
    h = hierarchical_weights(PATENTS, SUBCLASSES, MAINS, dtype=torch.float64)
    expected = torch.tensor(
        _python_weights(PATENTS.tolist(), SUBCLASSES.tolist(), MAINS.tolist()), dtype=torch.float64
    )
    assert torch.equal(h, expected)
    assert h[0, 1] == 1.0 and h[0, 2] == 0.35 and h[0, 4] == 0.2 and h[0, 6] == 0.0
    assert h[10, 11] == 1.0 and h[10, 0] == 0.0  # unknown classes match nothing, the patent still does


def test_hmcl_equals_python_loop_float64():
    z = _embeddings(12, 5)
    for tau in (0.07, 0.1, 0.5):
        h_list = _python_weights(PATENTS.tolist(), SUBCLASSES.tolist(), MAINS.tolist())
        expected = _python_hmcl(z, h_list, tau)
        h = hierarchical_weights(PATENTS, SUBCLASSES, MAINS, dtype=torch.float64)
        assert hmcl_loss(z, h, tau).item() == pytest.approx(expected, abs=1e-6, rel=0)
        assert hmcl_loss_loop(z, h, tau).item() == pytest.approx(expected, abs=1e-6, rel=0)
        out = HMCLLoss(tau=tau)(z, PATENTS, SUBCLASSES, MAINS)
        assert out["hmcl_loss"].item() == pytest.approx(expected, abs=1e-6, rel=0)
        assert list(out) == ["hmcl_loss"]


def test_hmcl_custom_weights_match_python_loop():
    z = _embeddings(12, 5, seed=1)
    loss = HMCLLoss(tau=0.2, s_p=0.9, s_s=0.5, s_m=0.1)
    h_list = _python_weights(PATENTS.tolist(), SUBCLASSES.tolist(), MAINS.tolist(), 0.9, 0.5, 0.1)
    got = loss(z, PATENTS, SUBCLASSES, MAINS)["hmcl_loss"].item()
    assert got == pytest.approx(_python_hmcl(z, h_list, 0.2), abs=1e-6, rel=0)


def test_hmcl_is_invariant_to_batch_order():
    z = _embeddings(12, 5, seed=2)
    perm = torch.randperm(12, generator=torch.Generator().manual_seed(3))
    loss = HMCLLoss()
    a = loss(z, PATENTS, SUBCLASSES, MAINS)["hmcl_loss"]
    b = loss(z[perm], PATENTS[perm], SUBCLASSES[perm], MAINS[perm])["hmcl_loss"]
    assert b.item() == pytest.approx(a.item(), abs=1e-12, rel=0)


def test_info_nce_equals_python_loop_and_pair_layouts():
    z = _embeddings(8, 4, seed=4)
    # default layout: rows k and k + K are partners
    h = [[1.0 if (i - j) % 8 == 4 else 0.0 for j in range(8)] for i in range(8)]
    expected = _python_hmcl(z, h, 0.1)
    assert info_nce_loss(z).item() == pytest.approx(expected, abs=1e-6, rel=0)
    # the same pairs given as ids in another order
    perm = torch.tensor([3, 7, 0, 5, 1, 4, 2, 6])
    pair_ids = torch.tensor([0, 1, 2, 3, 0, 1, 2, 3])[perm]
    assert ContrastiveLoss()(z[perm], pair_ids)["contrastive_loss"].item() == pytest.approx(
        expected, abs=1e-6, rel=0
    )


def test_info_nce_rejects_bad_pairs():
    z = _embeddings(6, 3)
    with pytest.raises(ValueError, match="every pair id must occur exactly twice; id 2 does not"):
        info_nce_loss(z, torch.tensor([0, 0, 1, 1, 2, 3]))
    with pytest.raises(ValueError, match="without pair_ids the batch must hold 2K items, got 5"):
        info_nce_loss(_embeddings(5, 3))


def test_hmcl_reduces_to_plain_loss_without_class_weights():
    z = _embeddings(12, 6, seed=5)
    patents = torch.tensor([0, 1, 2, 3, 4, 5, 0, 1, 2, 3, 4, 5])  # one pair per patent, layout [z; z~]
    subclasses = torch.tensor([7, 7, 7, 8, 8, 9, 7, 7, 7, 8, 8, 9])
    mains = torch.tensor([1, 1, 1, 1, 1, 2, 1, 1, 1, 1, 1, 2])
    hmcl = HMCLLoss(tau=0.1, s_s=0.0, s_m=0.0)(z, patents, subclasses, mains)["hmcl_loss"]
    plain = ContrastiveLoss(tau=0.1)(z)["contrastive_loss"]
    assert hmcl.item() == pytest.approx(plain.item(), abs=1e-12, rel=0)
    # with class weights the positives differ, so the losses do too
    full = HMCLLoss(tau=0.1)(z, patents, subclasses, mains)["hmcl_loss"]
    assert abs(full.item() - plain.item()) > 1e-3


def test_binary_weights_equal_pytorch_metric_learning_supcon():
    pml_losses = pytest.importorskip("pytorch_metric_learning.losses")
    z = _embeddings(12, 5, seed=6)
    labels = torch.tensor([0, 0, 0, 1, 1, 2, 2, 2, 2, 3, 4, 4])  # label 3 has no positive
    h = (labels[:, None] == labels[None, :]).to(torch.float64)
    for tau in (0.07, 0.1, 0.3):
        ours = hmcl_loss(z, h, tau).item()
        reference = pml_losses.SupConLoss(temperature=tau)(z, labels).item()
        assert ours == pytest.approx(reference, abs=1e-6, rel=0)
    # the same through the module, with the labels as patent ids and no class weights
    ours = HMCLLoss(tau=0.1)(z, labels)["hmcl_loss"].item()
    assert ours == pytest.approx(pml_losses.SupConLoss(temperature=0.1)(z, labels).item(), abs=1e-6, rel=0)


def test_no_positives_gives_zero_loss_and_zero_grads():
    z = _embeddings(6, 4, seed=7).requires_grad_(True)
    out = HMCLLoss()(z, torch.arange(6), torch.tensor([1, 2, 3, 4, 5, 6]), torch.full((6,), -1))
    assert out["hmcl_loss"].item() == 0.0
    out["hmcl_loss"].backward()
    assert torch.equal(z.grad, torch.zeros_like(z))
    # a single item and float32 too
    one = torch.randn(1, 4, requires_grad=True)
    loss = HMCLLoss()(one, torch.tensor([0]))["hmcl_loss"]
    loss.backward()
    assert loss.item() == 0.0 and torch.equal(one.grad, torch.zeros_like(one))


def test_gradcheck_float64():
    z = _embeddings(6, 3, seed=8).requires_grad_(True)
    h = hierarchical_weights(PATENTS[:6], SUBCLASSES[:6], MAINS[:6], dtype=torch.float64)
    assert torch.autograd.gradcheck(lambda x: hmcl_loss(x, h, 0.5), (z,))
    assert torch.autograd.gradcheck(lambda x: info_nce_loss(x, tau=0.5), (z,))
    text = _embeddings(6, 3, seed=9).requires_grad_(True)
    scale = torch.tensor(3.0, dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(lambda a, b, s: image_text_loss(a, b, s, PATENTS[:6]), (z, text, scale))


def test_negative_mask_and_negative_weights_force_negatives():
    z = _embeddings(12, 5, seed=10)
    h = hierarchical_weights(PATENTS, SUBCLASSES, MAINS, dtype=torch.float64)
    mask = torch.zeros(12, 12, dtype=torch.bool)
    mask[0, 2] = mask[0, 3] = mask[5, 4] = True  # anchor 5 loses its only positive
    h_zeroed = h.clone()
    h_zeroed[mask] = 0.0
    expected = _python_hmcl(z, h_zeroed.tolist(), 0.1)
    assert hmcl_loss(z, h, 0.1, negative_mask=mask).item() == pytest.approx(expected, abs=1e-6, rel=0)
    assert hmcl_loss_loop(z, h, 0.1, negative_mask=mask).item() == pytest.approx(expected, abs=1e-6, rel=0)
    h_negative = h.clone()
    h_negative[mask] = -1.0
    assert hmcl_loss(z, h_negative, 0.1).item() == pytest.approx(expected, abs=1e-6, rel=0)
    module = HMCLLoss()(z, PATENTS, SUBCLASSES, MAINS, negative_mask=mask)["hmcl_loss"]
    assert module.item() == pytest.approx(expected, abs=1e-6, rel=0)
    # masked pairs stay in the denominator: the loss differs from dropping those items
    assert expected != pytest.approx(_python_hmcl(z, h.tolist(), 0.1), abs=1e-6)


def test_explicit_h_matches_ids_path():
    z = _embeddings(12, 5, seed=11)
    loss = HMCLLoss()
    h = loss.weights(PATENTS, SUBCLASSES, MAINS, dtype=torch.float64)
    assert loss(z, h=h)["hmcl_loss"].item() == pytest.approx(
        loss(z, PATENTS, SUBCLASSES, MAINS)["hmcl_loss"].item(), abs=1e-12, rel=0
    )
    with pytest.raises(ValueError, match="pass patent_ids"):
        loss(z)
    with pytest.raises(ValueError, match=r"h must have shape \[12, 12\], got \(3, 3\)"):
        hmcl_loss(z, torch.zeros(3, 3, dtype=torch.float64))


def _python_text_loss(image, text, scale, patents):
    a = F.normalize(image, dim=1).tolist()
    b = F.normalize(text, dim=1).tolist()
    n = len(a)
    logits = [
        [scale * sum(x * y for x, y in zip(a[i], b[j], strict=True)) for j in range(n)] for i in range(n)
    ]

    def direction(mat):
        total = 0.0
        for i in range(n):
            pos = [j for j in range(n) if patents[i] == patents[j]]
            log_z = math.log(sum(math.exp(v) for v in mat[i]))
            total += -sum(mat[i][j] - log_z for j in pos) / len(pos)
        return total / n

    transposed = [[logits[j][i] for j in range(n)] for i in range(n)]
    return (direction(logits) + direction(transposed)) / 2


def test_text_loss_with_repeated_texts_equals_python_loop():
    image = _embeddings(8, 4, seed=12)
    patents = [0, 0, 1, 1, 1, 2, 3, 3]
    base = _embeddings(4, 4, seed=13)
    text = base[torch.tensor(patents)]  # figures of one patent share the patent's text
    expected = _python_text_loss(image, text, 5.0, patents)
    got = image_text_loss(image, text, 5.0, torch.tensor(patents))
    assert got.item() == pytest.approx(expected, abs=1e-6, rel=0)


def test_text_loss_without_ids_is_clip():
    image, text = _embeddings(5, 4, seed=14), _embeddings(5, 4, seed=15)
    logits = 10.0 * F.normalize(image, dim=1) @ F.normalize(text, dim=1).T
    target = torch.arange(5)
    clip = (F.cross_entropy(logits, target) + F.cross_entropy(logits.T, target)) / 2
    assert image_text_loss(image, text, 10.0).item() == pytest.approx(clip.item(), abs=1e-12, rel=0)


def test_hmcl_loss_with_text_term():
    image = _embeddings(8, 4, seed=16).float().requires_grad_(True)
    patents = torch.tensor([0, 0, 1, 1, 2, 2, 3, 3])
    text = _embeddings(4, 4, seed=17).float()[patents]
    loss = HMCLLoss(text_weight=0.2)
    out = loss(image, patents, text=text)
    assert sorted(out) == ["hmcl_loss", "text_loss"]
    scale = 1 / 0.07
    expected = 0.2 * _python_text_loss(image.detach().double(), text.double(), scale, patents.tolist())
    assert out["text_loss"].item() == pytest.approx(expected, abs=1e-5, rel=0)
    sum(out.values()).backward()
    assert loss.text.log_logit_scale.grad is not None and image.grad is not None
    assert [name for name, _ in loss.named_parameters()] == ["text.log_logit_scale"]
    # a fixed scale is a buffer, and a scale passed to forward overrides it
    fixed = HMCLLoss(text_weight=0.5, text_logit_scale=20.0, learn_text_logit_scale=False)
    assert list(fixed.parameters()) == [] and [n for n, _ in fixed.named_buffers()] == [
        "text.log_logit_scale"
    ]
    got = fixed(image, patents, text=text)["text_loss"].item()
    assert got == pytest.approx(0.5 * image_text_loss(image, text, 20.0, patents).item(), abs=1e-5, rel=0)
    got = fixed(image, patents, text=text, logit_scale=7.0)["text_loss"].item()
    assert got == pytest.approx(0.5 * image_text_loss(image, text, 7.0, patents).item(), abs=1e-5, rel=0)


def test_text_logit_scale_is_clamped():
    loss = ImageTextLoss(logit_scale=500.0)
    assert loss.scale().item() == pytest.approx(100.0)
    with pytest.raises(ValueError, match="logit_scale must be positive, got 0"):
        ImageTextLoss(logit_scale=0)


def test_level_balanced_weights_share_each_levels_weight_among_its_positives():
    """Anchor 0: one same-patent view (1), one same-subclass item (2), two same-main items (3, 4), one
    unrelated item (5). Paper form: 1 / 0.35 / 0.2 / 0.2; level-balanced: 1 / 0.35 / 0.1 / 0.1."""
    from patent_demo.losses.hmcl import hierarchical_weights, level_balanced_weights

    patent = torch.tensor([0, 0, 1, 2, 3, 4])
    sub = torch.tensor([0, 0, 0, 1, 2, 3])
    main = torch.tensor([0, 0, 0, 0, 0, 1])
    paper = hierarchical_weights(patent, sub, main)
    balanced = level_balanced_weights(patent, sub, main)
    torch.testing.assert_close(paper[0], torch.tensor([0.0, 1.0, 0.35, 0.2, 0.2, 0.0]))
    torch.testing.assert_close(balanced[0], torch.tensor([0.0, 1.0, 0.35, 0.1, 0.1, 0.0]))
    # item 3: only main-class mates (0, 1, 2, 4) -> 0.2 / 4 each
    torch.testing.assert_close(balanced[3], torch.tensor([0.05, 0.05, 0.05, 0.0, 0.05, 0.0]))
    assert float(balanced[5].sum()) == 0.0
