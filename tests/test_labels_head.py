"""The head retrained from examiner labels (``train.labels.head``): the relevance its judged pairs give, checked
against a loop written apart; the leak guard that keeps validation and test drawings out; and, on features
where the classes are known, that training from labels lifts validation mAP over the untrained head."""

from __future__ import annotations

import argparse

import pytest
import torch
from PIL import Image

from patent_demo.data.corpus import Corpus, Figure, Patent
from patent_demo.drawing.trunk import Split, evaluate, whitening
from train.labels.head import Pair, fit_from_pairs, guarded_pairs, label_batch_h, pairs_of, relevance

W = (1.0, 0.35, 0.2)


def naive_relevance(pairs, weights):
    """The same rule written apart: graphs searched breadth first, every pair of drawings looked at in turn."""
    s_p, s_s, s_m = weights
    ids = list(dict.fromkeys([p.query for p in pairs] + [p.candidate for p in pairs]))
    said = {}
    for p in pairs:
        said[frozenset((p.query, p.candidate))] = p.grade

    def linked(a, b, min_grade):
        seen, todo = {a}, [a]
        while todo:
            x = todo.pop()
            for key, g in said.items():
                if g >= min_grade and x in key:
                    (y,) = key - {x}
                    if y not in seen:
                        seen.add(y)
                        todo.append(y)
        return b in seen

    out = [[0.0] * len(ids) for _ in ids]
    for i, a in enumerate(ids):
        for j, b in enumerate(ids):
            if i == j:
                continue
            key = frozenset((a, b))
            if key in said:
                out[i][j] = {2: s_s, 1: s_m, 0: 0.0}[said[key]]
            elif linked(a, b, 2):
                out[i][j] = s_s
            elif linked(a, b, 1):
                out[i][j] = s_m
    return ids, torch.tensor(out)


def test_relevance_equals_the_naive_rule():
    pairs = [
        Pair("q1", "a", 2),
        Pair("q1", "b", 1),
        Pair("q1", "c", 0),
        Pair("q2", "a", 0),
        Pair("q2", "d", 2),
        Pair("q2", "b", 2),
        Pair("a", "b", 0),
        Pair("q1", "c", 2),
    ]  # a later judgement of q1-c wins
    ids, h = relevance(pairs, W)
    ids2, h2 = naive_relevance(pairs, W)
    assert ids == ids2
    torch.testing.assert_close(h, h2)
    at = {x: i for i, x in enumerate(ids)}
    assert h[at["q1"], at["a"]] == pytest.approx(0.35) and h[at["q1"], at["b"]] == pytest.approx(0.2)
    assert h[at["a"], at["b"]] == 0.0  # judged not relevant: no positive through q1
    assert h[at["d"], at["b"]] == pytest.approx(0.35)  # both relevant to q2: the same subclass
    assert h[at["q2"], at["c"]] == pytest.approx(0.2)  # c ~ q1 (relevant), q1 ~ b (partly), b ~ q2: one class
    assert h[at["q1"], at["d"]] == pytest.approx(0.2)  # q1 ~partly~ b ~relevant~ q2 ~relevant~ d: one class
    assert h[at["c"], at["a"]] == pytest.approx(0.35)  # q1's later judgement of c counts
    assert torch.equal(h, h.T)


def test_two_views_of_a_drawing_are_its_own_positive():
    _, h = relevance([Pair("q", "a", 2), Pair("q", "b", 0)], W)
    big = label_batch_h(h, 1.0)
    n = h.shape[0]
    assert big.shape == (2 * n, 2 * n)
    for i in range(n):
        assert big[i, i + n] == big[i + n, i] == 1.0
        assert big[i, i] == 0.0
    torch.testing.assert_close(big[:n, :n], h)
    torch.testing.assert_close(
        big[n:, :n] - torch.eye(n), h
    )  # the other view of every pair: the same weights


def synthetic(tmp_path, per_class: int = 8, classes: int = 6, dim: int = 64, seed: int = 0):
    """A corpus of ``classes`` USPC subclasses (two per main class) and features: a class direction in 8 of
    the dimensions under strong noise in the rest, so the untrained (whitened) head ranks poorly."""
    g = torch.Generator().manual_seed(seed)
    centres = torch.randn(classes, 8, generator=g) * 2.0
    patents, splits, rows = [], {"train": [], "val": [], "test": []}, []
    for c in range(classes):
        for j in range(per_class):
            pid = f"US{c:02d}{j:02d}"
            code = f"D{c // 2}/{100 + c}"
            Image.new("L", (4, 4), len(patents)).save(
                tmp_path / f"{pid}.png"
            )  # the guard hashes test drawings
            patents.append(Patent(pid, codes={"uspc": [code]}, figures=[Figure(f"{pid}.png")]))
            splits[("train", "train", "train", "train", "val", "val", "test", "test")[j % 8]].append(pid)
            signal = torch.cat([centres[c], torch.zeros(dim - 8)])
            rows.append(
                signal
                + torch.randn(dim, generator=g)
                * torch.cat([torch.full((8,), 1.0), torch.full((dim - 8,), 3.0)])
            )
    corpus = Corpus(tmp_path, patents, splits=splits)
    clean = torch.stack(rows)
    views = clean[:, None] + 0.1 * torch.randn(len(rows), 2, dim, generator=g)
    feats = {"ids": [p.id for p in patents], "clean": clean, "flip": clean, "views": views}
    index = {pid: i for i, pid in enumerate(feats["ids"])}
    return corpus, feats, *(Split(corpus, s, feats, index) for s in ("train", "val", "test"))


def oracle_pairs(corpus, queries, k_pairs: int = 10):
    cls = {p.id: p.codes["uspc"][0] for p in corpus.patents}
    train = [p.id for p in corpus.split("train")]
    out = []
    for q in queries:
        for c in train[: k_pairs * 3]:
            if c == q:
                continue
            grade = 2 if cls[c] == cls[q] else 1 if cls[c].split("/")[0] == cls[q].split("/")[0] else 0
            out.append(Pair(q, c, grade))
    return out


def test_training_from_labels_lifts_validation_over_the_untrained_head(tmp_path):
    corpus, feats, tr, va, _ = synthetic(tmp_path)
    init = whitening(tr.clean, 16)
    pairs = oracle_pairs(corpus, [p.id for p in corpus.split("train")])
    args = argparse.Namespace(head_steps=60, head_lr=1e-2, weight_decay=0.0, tau=0.1, eval_every=20)
    best = fit_from_pairs(pairs, feats, va, init, W, args, seed=0)
    before = evaluate(va, init, alpha=None)["metrics"]["subclass_map"]
    assert best["step"] > 0  # a trained step won on val
    assert best["val"]["metrics"]["subclass_map"] > before + 0.05
    assert 0.0 <= best["alpha"] <= 1.0
    # the same seed gives the same head
    again = fit_from_pairs(pairs, feats, va, init, W, args, seed=0)
    torch.testing.assert_close(again["head"][0], best["head"][0])


def test_the_guard_keeps_validation_and_test_drawings_out(tmp_path):
    corpus, *_ = synthetic(tmp_path)
    tr_id, va_id, te_id = corpus.splits["train"][0], corpus.splits["val"][0], corpus.splits["test"][0]
    other = corpus.splits["train"][1]

    def row(q, pos, neg):
        return {
            "query_id": f"img-{q}",
            "anchor": {"patent_id": q, "image_sha256": ""},
            "positives": [{"patent_id": p, "grade": 2} for p in pos],
            "hard_negatives": [{"patent_id": n} for n in neg],
        }

    rows = [row(tr_id, [other, va_id], [te_id]), row(te_id, [other], []), row(va_id, [other], [])]
    assert len(pairs_of(rows)) == 5
    pairs, stats = guarded_pairs(rows, corpus)
    assert pairs == [Pair(tr_id, other, 2)]
    assert (
        stats["queries"] == 1
        and stats["test"]["queries_held_out"] == 1
        and stats["val"]["queries_held_out"] == 1
    )
