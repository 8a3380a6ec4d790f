from collections import Counter

import pytest
import torch
from torch.utils.data import DataLoader

from patent_demo.drawing.sampler import HierarchicalBatchSampler


def _corpus(mains: int = 6, subs_per_main: int = 4, patents_per_sub: int = 5):
    """Patents ``P<m><s><k>`` with 1-4 figures each; figure indices are consecutive integers."""
    ids, subs, main_of, figures = [], [], [], []
    next_figure = 0
    for m in range(mains):
        for s in range(subs_per_main):
            for k in range(patents_per_sub):
                ids.append(f"P{m}{s}{k}")
                subs.append(f"{m:02d}-{s:02d}")
                main_of.append(f"{m:02d}")
                n_fig = 1 + (m + s + k) % 4
                figures.append(list(range(next_figure, next_figure + n_fig)))
                next_figure += n_fig
    return ids, subs, main_of, figures


def _anchor_fractions(sampler, subs, mains, epochs=5):
    """Fraction of figures with a same-subclass (resp. same-main) figure of another patent in the batch."""
    patent_pos = {pid: i for i, pid in enumerate(sampler.patent_ids)}
    n_anchor = n_sub = n_main = 0
    for epoch in range(epochs):
        sampler.set_epoch(epoch)
        for batch in sampler:
            owners = [patent_pos[sampler.figure_to_patent[f]] for f in batch]
            for a in owners:
                others = [b for b in owners if b != a]
                n_anchor += 1
                n_sub += any(subs[b] == subs[a] for b in others)
                n_main += any(mains[b] == mains[a] for b in others)
    return n_sub / n_anchor, n_main / n_anchor


def test_batch_structure():
    ids, subs, mains, figures = _corpus()
    sampler = HierarchicalBatchSampler(
        ids, subs, mains, figures, patents_per_batch=8, figures_per_patent=2, num_batches=50, seed=1
    )
    assert (sampler.n_subclass, sampler.n_main, len(sampler)) == (4, 2, 50)
    patent_pos = {pid: i for i, pid in enumerate(ids)}
    batches = list(sampler)
    assert len(batches) == 50
    for batch in batches:
        assert len(batch) == 16
        owners = [patent_pos[sampler.figure_to_patent[f]] for f in batch]
        # patent-major: K consecutive figures of one patent, P distinct patents
        assert all(owners[2 * i] == owners[2 * i + 1] for i in range(8))
        assert len(set(owners)) == 8
        for i in range(8):
            pair, own = batch[2 * i : 2 * i + 2], figures[owners[2 * i]]
            assert set(pair) <= set(own)
            assert len(set(pair)) == min(2, len(own))  # distinct figures unless the patent has one
        # every subclass has 5 patents, so the anchor group is complete and its main class adds 2 more
        patents = owners[::2]
        assert Counter(subs[p] for p in patents).most_common(1)[0][1] >= 4
        assert Counter(mains[p] for p in patents).most_common(1)[0][1] >= 6
        anchor_sub = subs[patents[0]]
        assert [subs[p] for p in patents[:4]] == [anchor_sub] * 4
        assert [mains[p] for p in patents[:6]] == [mains[patents[0]]] * 6


def test_hierarchical_batches_hold_more_class_positives_than_random():
    ids, subs, mains, figures = _corpus()
    kw = dict(patents_per_batch=8, figures_per_patent=2, num_batches=40, seed=2)
    grouped = HierarchicalBatchSampler(ids, subs, mains, figures, **kw)
    uniform = HierarchicalBatchSampler(ids, subs, mains, figures, subclass_fraction=0, main_fraction=0, **kw)
    g_sub, g_main = _anchor_fractions(grouped, subs, mains)
    u_sub, u_main = _anchor_fractions(uniform, subs, mains)
    # by construction at least 4 of 8 patents share a subclass and 6 of 8 a main class
    assert g_sub >= 0.5 and g_main >= 0.75
    # uniform draws from 24 subclasses / 6 main classes: about 0.22 and 0.72 expected
    assert u_sub < 0.35 and g_sub > u_sub + 0.25
    assert g_main > u_main


def test_deterministic_for_seed_and_epoch():
    ids, subs, mains, figures = _corpus()
    kw = dict(patents_per_batch=6, figures_per_patent=3, num_batches=12)
    a = HierarchicalBatchSampler(ids, subs, mains, figures, seed=7, **kw)
    b = HierarchicalBatchSampler(ids, subs, mains, figures, seed=7, **kw)
    assert list(a) == list(b)
    assert list(a) == list(a)  # iterating twice gives the same epoch
    first = list(a)
    a.set_epoch(1)
    second = list(a)
    assert second != first
    b.set_epoch(1)
    assert list(b) == second
    a.set_epoch(0)
    assert list(a) == first
    c = HierarchicalBatchSampler(ids, subs, mains, figures, seed=8, **kw)
    assert list(c) != first


def test_ddp_ranks_get_disjoint_equal_shares_of_one_sequence():
    ids, subs, mains, figures = _corpus()
    kw = dict(patents_per_batch=6, figures_per_patent=2, num_batches=10, seed=3)
    ranks = [
        HierarchicalBatchSampler(ids, subs, mains, figures, rank=r, world_size=3, **kw) for r in range(3)
    ]
    for s in ranks:
        s.set_epoch(4)
    shares = [list(s) for s in ranks]
    assert [len(s) for s in ranks] == [4, 4, 4] and [len(x) for x in shares] == [4, 4, 4]
    # the global sequence (10 batches padded to 12) is the same as a single process drawing 12
    single = HierarchicalBatchSampler(ids, subs, mains, figures, **{**kw, "num_batches": 12})
    single.set_epoch(4)
    sequence = list(single)
    for r in range(3):
        assert shares[r] == sequence[r::3]
    # ranks see different positions of the sequence: no batch is handed out twice
    positions = [tuple(b) for share in shares for b in share]
    assert len(set(positions)) == 12


def test_small_classes_and_exhausted_groups():
    # subclass groups of 1-2 patents, one main class with a single patent
    ids = ["a", "b", "c", "d", "e", "f", "g"]
    subs = ["01-01", "01-01", "01-02", "02-01", "02-02", "03-01", None]
    mains = ["01", "01", "01", "02", "02", "03", None]
    figures = [[0], [1, 2], [3], [4, 5, 6], [7], [8], [9]]
    sampler = HierarchicalBatchSampler(
        ids,
        subs,
        mains,
        figures,
        patents_per_batch=5,
        figures_per_patent=3,
        subclass_fraction=0.6,
        main_fraction=0.2,
        num_batches=30,
        seed=5,
    )
    for batch in sampler:
        assert len(batch) == 15
        owners = [sampler.figure_to_patent[f] for f in batch]
        patents = owners[::3]
        assert len(set(patents)) == 5
        assert all(owners[3 * i : 3 * i + 3] == [patents[i]] * 3 for i in range(5))
        # the only subclass with two patents is always the anchor, topped up from main class 01
        assert patents[:2] in (["a", "b"], ["b", "a"]) and patents[2] == "c"
        # every patent has at most K = 3 figures: all of them appear, repeats fill the rest
        for i in range(5):
            assert set(batch[3 * i : 3 * i + 3]) == set(figures[ids.index(patents[i])])
        assert batch[3 * patents.index("a") : 3 * patents.index("a") + 3] == [0, 0, 0]


def test_all_singleton_subclasses_and_full_batches():
    ids, subs, mains = ["a", "b", "c"], ["01-01", "01-02", "02-01"], ["01", "01", "02"]
    sampler = HierarchicalBatchSampler(ids, subs, mains, [[0], [1], [2]], patents_per_batch=3, num_batches=4)
    for batch in sampler:
        assert sorted(batch) == [0, 0, 1, 1, 2, 2]
        # the anchor is a single patent; the main-class share picks its sibling when it has one
        first = sampler.figure_to_patent[batch[0]]
        if first in ("a", "b"):
            assert {sampler.figure_to_patent[batch[2]], first} == {"a", "b"}


def test_dataloader_batch_sampler():
    ids, subs, mains, figures = _corpus(mains=2, subs_per_main=2, patents_per_sub=3)
    n_figures = sum(len(f) for f in figures)
    sampler = HierarchicalBatchSampler(ids, subs, mains, figures, patents_per_batch=4, num_batches=3)
    batches = list(DataLoader(torch.arange(n_figures), batch_sampler=sampler))
    assert [b.tolist() for b in batches] == list(sampler)


def test_invalid_inputs():
    ids, subs, mains = ["a", "b"], ["01-01", "01-01"], ["01", "01"]
    with pytest.raises(ValueError, match="patent 'b' has no figures; leave it out of the sampler"):
        HierarchicalBatchSampler(ids, subs, mains, [[0], []], patents_per_batch=2)
    with pytest.raises(ValueError, match="figure index 0 belongs to patents 'a' and 'b'"):
        HierarchicalBatchSampler(ids, subs, mains, [[0], [0]], patents_per_batch=2)
    with pytest.raises(ValueError, match=r"patents_per_batch=3 exceeds the number of patents \(2\)"):
        HierarchicalBatchSampler(ids, subs, mains, [[0], [1]], patents_per_batch=3)
    with pytest.raises(ValueError, match="fractions must be >= 0 and sum to at most 1"):
        HierarchicalBatchSampler(ids, subs, mains, [[0], [1]], patents_per_batch=2, subclass_fraction=0.8)
    with pytest.raises(ValueError, match="need 0 <= rank < world_size, got rank=2, world_size=2"):
        HierarchicalBatchSampler(ids, subs, mains, [[0], [1]], patents_per_batch=2, rank=2, world_size=2)
    with pytest.raises(ValueError, match="patent_ids must be unique"):
        HierarchicalBatchSampler(["a", "a"], subs, mains, [[0], [1]], patents_per_batch=2)
