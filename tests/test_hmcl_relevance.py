"""One h(i, j): the loss, the weight matrix, the per-pair relation and the metrics' graded gains agree,
for Locarno and USPC items, and items of different schemes relate only through the patent.

Tests: patent_demo/hierarchy.py, patent_demo/losses/hmcl.py, patent_demo/metrics/drawing.py
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from patent_demo import hierarchy
from patent_demo.losses import hierarchical_weights
from patent_demo.metrics import ItemLabels, drawing_metrics, macro_means, paired_bootstrap

# (patent, scheme, code): Locarno and USPC items; P4 is classified under both but placed under Locarno
ITEMS = [
    ("P1", "locarno", "06-01"),
    ("P1", "locarno", "06-01"),
    ("P2", "locarno", "06-01"),
    ("P3", "locarno", "06-03"),
    ("P4", "locarno", "12-16"),
    ("U1", "uspc", "D6/369"),
    ("U1", "uspc", "D6/369"),
    ("U2", "uspc", "D6-369"),
    ("U3", "uspc", "D6/380"),
    ("U4", "uspc", "D12/100"),
    ("U5", "uspc", "D6"),
    ("X1", "uspc", ""),
]
WEIGHTS = [
    hierarchy.HMCLWeights(),
    hierarchy.HMCLWeights(1.0, 0.5, 0.1),
    hierarchy.HMCLWeights(2.0, 0.0, 0.0),
]


def _keys():
    return [hierarchy.hierarchy_keys(s, c) for _, s, c in ITEMS]


def _ids():
    pid = hierarchy.factorize([p for p, _, _ in ITEMS])
    sub = hierarchy.factorize([k[0] for k in _keys()])
    main = hierarchy.factorize([k[1] for k in _keys()])
    return torch.from_numpy(pid), torch.from_numpy(sub), torch.from_numpy(main)


def _pairwise(w: hierarchy.HMCLWeights) -> np.ndarray:
    n = len(ITEMS)
    out = np.zeros((n, n))
    for i, (pa, sa, ca) in enumerate(ITEMS):
        for j, (pb, sb, cb) in enumerate(ITEMS):
            out[i, j] = hierarchy.hmcl_weight(pa, (sa, ca), pb, (sb, cb), w)
    return out


def test_defaults_are_defined_once():
    w = hierarchy.HMCLWeights()
    assert w.as_tuple() == (1.0, 0.35, 0.2)
    from patent_demo.losses import HMCLLoss

    loss = HMCLLoss()
    assert (loss.s_p, loss.s_s, loss.s_m) == w.as_tuple()


@pytest.mark.parametrize("w", WEIGHTS)
def test_loss_matrix_and_pairs_agree(w):
    pid, sub, main = _ids()
    h_loss = hierarchical_weights(pid, sub, main, *w.as_tuple(), dtype=torch.float64).numpy()
    h_pairs = _pairwise(w)
    np.fill_diagonal(h_pairs, 0.0)
    np.testing.assert_array_equal(h_loss, h_pairs)
    h_matrix = hierarchy.hmcl_weight_matrix(
        [p for p, _, _ in ITEMS], [(s, c) for _, s, c in ITEMS], w, np.float64
    )
    np.fill_diagonal(h_matrix, 0.0)
    np.testing.assert_array_equal(h_matrix, h_pairs)


@pytest.mark.parametrize("w", WEIGHTS[:2])
def test_hier_ndcg_gains_are_the_same_relevance(w):
    keys = _keys()
    labels = ItemLabels([p for p, _, _ in ITEMS], [k[0] for k in keys], [k[1] for k in keys])
    rng = np.random.default_rng(0)
    scores = rng.normal(size=(len(ITEMS), len(ITEMS)))
    ev = drawing_metrics(labels, labels, scores=scores, self_index=np.arange(len(ITEMS)), ks=(5,), weights=w)
    gains = _pairwise(w)
    for q in range(len(ITEMS)):  # naive nDCG@5 with the pairwise h as gains
        order = [j for j in np.argsort(-scores[q], kind="stable") if j != q]
        g = gains[q]
        dcg = sum(g[j] / np.log2(r + 2) for r, j in enumerate(order[:5]))
        ideal = sorted((g[j] for j in range(len(ITEMS)) if j != q), reverse=True)[:5]
        idcg = sum(x / np.log2(r + 2) for r, x in enumerate(ideal))
        got = ev.per_query["hier_ndcg@5"][q]
        if idcg == 0:
            assert np.isnan(got)
        else:
            assert got == pytest.approx(dcg / idcg)


def test_schemes_relate_only_through_the_patent():
    assert hierarchy.hierarchy_keys("uspc", "D6/369") == ("uspc:D6/369", "uspc:D6")
    assert hierarchy.hierarchy_keys("uspc", "D6-369") == ("uspc:D6/369", "uspc:D6")
    assert hierarchy.hierarchy_keys("uspc", "D 6369") == ("uspc:D6/369", "uspc:D6")
    assert hierarchy.hierarchy_keys("uspc", "D6") == ("", "uspc:D6")
    assert hierarchy.hierarchy_keys("locarno", "0601") == ("locarno:06-01", "locarno:06")
    assert hierarchy.relation("A", ("uspc", "D6/369"), "B", ("uspc", "D6/380")) == hierarchy.Relation.MAIN
    assert hierarchy.relation("A", ("uspc", "D6/369"), "B", ("uspc", "D6-369")) == hierarchy.Relation.SUBCLASS
    assert hierarchy.relation("A", ("locarno", "06-01"), "B", ("uspc", "D6/369")) == hierarchy.Relation.NONE
    assert hierarchy.relation("A", ("locarno", "06-01"), "A", ("uspc", "D6/369")) == hierarchy.Relation.PATENT
    # a patent with both schemes is placed under Locarno
    both = {"uspc": ["D2/969"], "locarno": ["02-04"]}
    assert hierarchy.patent_hierarchy(both) == ("locarno:02-04", "locarno:02")
    assert hierarchy.patent_hierarchy({"uspc": ["D2/969"]}) == ("uspc:D2/969", "uspc:D2")
    assert hierarchy.patent_hierarchy({}) == ("", "")
    with pytest.raises(ValueError, match="hierarchy scheme"):
        hierarchy.hierarchy_keys("ipc", "A47C 7/02")


def test_item_labels_main_class_of_uspc():
    labels = ItemLabels(["a", "b", "c"], ["D6/369", "D12/100", "06-01"])
    assert labels.mains == ["D6", "D12", "06"]
    q = ItemLabels(["a"], ["D12/5"])
    g = ItemLabels(["b", "c"], ["D12/100", "D1/200"])
    ev = drawing_metrics(q, g, scores=np.array([[0.1, 0.9]]))
    # D12/5 and D12/100 share main class D12 (not "D1", the first two characters)
    assert ev.per_query["main_map"][0] == pytest.approx(0.5)


def test_macro_means_and_bootstrap_against_loops():
    per_query = {"m": np.array([1.0, 0.0, 0.5, np.nan, 0.2])}
    groups = ["a", "a", "b", "b", "c"]
    assert macro_means(per_query, groups)["m"] == pytest.approx((0.5 + 0.5 + 0.2) / 3)
    rng = np.random.default_rng(1)
    a, b = rng.random(40), rng.random(40)
    groups = [str(i // 4) for i in range(40)]
    res = paired_bootstrap(a, b, groups, n_boot=500, seed=3)
    assert res["diff"] == pytest.approx(float((a - b).mean()))
    # the same resamples by a loop over groups
    names = sorted(set(groups))
    r = np.random.default_rng(3)
    draw = r.integers(0, len(names), size=(500, len(names)))
    d = a - b
    boots = []
    for row in draw:
        picked = [i for k in row for i in range(40) if groups[i] == names[k]]
        boots.append(d[picked].mean())
    assert res["low"] == pytest.approx(np.quantile(boots, 0.025))
    assert res["high"] == pytest.approx(np.quantile(boots, 0.975))
