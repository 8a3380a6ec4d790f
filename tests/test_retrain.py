"""Labels as training material: the leak guard, the HMCL overrides and batches, and the fine-tune's lineage."""

from __future__ import annotations

import json
import shutil

import pytest
import torch

from patent_demo.losses.hmcl import hierarchical_weights, hmcl_loss, hmcl_loss_loop
from train.labels.data import (
    LabelBatches,
    LabelGroup,
    LabelTraining,
    guard_dssdnet_rows,
    guard_hmcl_rows,
    read_rows,
    write_rows,
)

# make_tiny_corpus: D0000..D0009, two per subclass 06-01, 06-03, 07-01, 07-02, 26-05, three figures each
TRAIN = ["D0000", "D0001", "D0002", "D0004", "D0006"]
TEST = ["D0003", "D0005", "D0007", "D0008", "D0009"]


@pytest.fixture
def corpus(tmp_path):
    from tests.support.tiny import make_tiny_corpus

    c = make_tiny_corpus(tmp_path / "corpus")
    c.splits = {"train": TRAIN, "test": TEST}
    return c


def _row(qid, anchor_pid, image_file, pos=(), neg=(), sha=""):
    return {
        "query_id": qid,
        "anchor": {"image_sha256": sha, "image_file": image_file, "patent_id": anchor_pid},
        "positives": [{"patent_id": p, "figure": f, "grade": g, "rank": r} for p, f, g, r in pos],
        "hard_negatives": [{"patent_id": p, "figure": f, "rank": r} for p, f, r in neg],
    }


def test_guard_holds_out_test_queries_and_candidates(corpus, tmp_path):
    import hashlib

    test_bytes = corpus.image_path(corpus["D0005"].figures[1]).read_bytes()
    rows = [
        _row(
            "q-train",
            "D0000",
            "a.png",
            pos=[("D0001", "", 2, 9), ("D0003", "", 2, 4)],
            neg=[("D0002", "", 1)],
        ),
        _row("q-test", "D0003", "b.png", pos=[("D0002", "", 1, 5)], neg=[("D0004", "", 2)]),
        # an upload with no patent recorded, but its bytes are a test figure's
        _row("q-upload", "", "c.png", pos=[("D0006", "", 2, 3)], sha=hashlib.sha256(test_bytes).hexdigest()),
        _row("q-only-test-candidates", "D0004", "d.png", neg=[("D0007", "", 1)]),
    ]
    kept, stats = guard_hmcl_rows(rows, corpus)
    assert [r["query_id"] for r in kept] == ["q-train"]
    assert [p["patent_id"] for p in kept[0]["positives"]] == ["D0001"]
    assert stats.to_dict() == {
        "rows": 4,
        "queries_used": 1,
        "queries_held_out": 2,
        "pairs_used": 2,
        "pairs_held_out": 3,
        "candidates_held_out": 2,
        "held_out_query_ids": ["q-test", "q-upload"],
        "allowed_test": False,
    }
    kept, stats = guard_hmcl_rows(rows, corpus, allow_test=True)
    assert [r["query_id"] for r in kept] == ["q-train", "q-test", "q-upload", "q-only-test-candidates"]
    assert (stats.queries_held_out, stats.candidates_held_out, stats.pairs_used) == (0, 0, 7)


def test_guard_recognises_a_test_patents_text(corpus):
    lamp = corpus["D0009"]  # a test patent
    lamp.text = "a standing lamp with a conical shade, a dimmer on the cord and a weighted round base"
    rows = [
        {
            "query_id": "t1",
            "query": f"{lamp.title}.  {lamp.text.upper()}",
            "pos": [{"id": "D0000"}],
            "neg": [],
        },
        {"query_id": "t2", "query": "cup with a handle", "pos": [{"id": "D0004"}], "neg": [{"id": "D0005"}]},
        {"query_id": "t3", "query": "chair", "query_patent_id": "D0003", "pos": [{"id": "D0001"}], "neg": []},
        # contained in a test patent's text and at least 40 characters long ("cup with a handle" is shorter)
        {
            "query_id": "t4",
            "query": "Conical shade, a dimmer on the cord and a weighted",
            "pos": [{"id": "D0000"}],
        },
    ]
    kept, stats = guard_dssdnet_rows(rows, corpus)
    assert [r["query_id"] for r in kept] == ["t2"] and kept[0]["neg"] == []
    assert (stats.queries_held_out, stats.pairs_held_out, stats.candidates_held_out) == (3, 3, 1)
    assert stats.held_out_query_ids == ["t1", "t3", "t4"]


def _training(corpus, tmp_path, rows):
    train_patents = [corpus[p] for p in TRAIN]
    figures, fig_patent = [], []
    for i, p in enumerate(train_patents):
        figures += p.figures
        fig_patent += [i] * len(p.figures)
    return LabelTraining(rows, corpus, tmp_path, train_patents, figures, fig_patent, {2: 1.0, 1: 0.35})


def test_label_training_groups_and_overrides(corpus, tmp_path):
    shutil.copy(corpus.image_path(corpus["D0000"].figures[0]), tmp_path / "q0.png")
    shutil.copy(corpus.image_path(corpus["D0002"].figures[2]), tmp_path / "up.png")
    rows = [
        # a chair (D0000) query: a cup judged relevant, the other chair (same subclass) judged not relevant
        _row(
            "q0",
            "D0000",
            "q0.png",
            pos=[("D0004", "img/D0004_1.png", 2, 7), ("D0000", "", 2, 1)],
            neg=[("D0001", "img/D0001_0.png", 2)],
        ),
        # an upload of unknown origin: a table of the test split (D0003) partly relevant
        _row("up", "", "up.png", pos=[("D0003", "", 1, 4)]),
    ]
    lt = _training(corpus, tmp_path, rows)
    # 15 training figures, then the two query drawings and D0003's first figure; D0003 and the upload are new patents
    assert len(lt.figures) == 18 and lt.fig_patent[15:] == [0, 5, 6]
    assert [p.id if p else None for p in lt.patents] == [*TRAIN, None, "D0003"]
    assert (
        lt.figures[15].path == str((tmp_path / "q0.png").resolve())
        and lt.figures[17].path == "img/D0003_0.png"
    )
    assert [(g.query_id, g.anchor, g.positives, g.negatives) for g in lt.groups] == [
        ("q0", 15, [3 * 3 + 1], [3]),  # D0004 is the 4th training patent: figure 10; D0001's figure 0 is 3
        ("up", 16, [17], []),
    ]
    assert lt.ignored == 1 and lt.num_pairs == 3  # the query's own patent judged relevant is ignored
    assert lt.positive == {(0, 3): 1.0, (3, 0): 1.0, (5, 6): 0.35, (6, 5): 0.35}
    assert lt.negative == {(0, 1), (1, 0)}

    # a batch: D0000 (x2), D0001 (same subclass 06-01), D0004, the upload, D0003
    pat = torch.tensor([0, 0, 1, 3, 5, 6])
    sub = torch.tensor([0, 0, 0, 2, -1, 1])
    main = torch.tensor([0, 0, 0, 1, -1, 0])
    h = hierarchical_weights(pat, sub, main, 1.0, 0.35, 0.2)
    assert h[0, 2] == pytest.approx(0.35)  # the hierarchy alone would make D0001 a positive of D0000
    h2, mask = lt.apply(h, pat)
    assert mask.nonzero().tolist() == [[0, 2], [1, 2], [2, 0], [2, 1]]
    assert h2[0, 3].item() == 1.0 and h2[3, 1].item() == 1.0 and h2[4, 5].item() == pytest.approx(0.35)
    assert h2[0, 1].item() == 1.0 and torch.all(h2.diagonal() == 0)
    # with the mask, D0001 is only in the denominator: equal to the loss with its weight set to 0
    z = torch.randn(6, 8, generator=torch.Generator().manual_seed(0))
    zeroed = h2.clone()
    zeroed[mask] = 0.0
    got = hmcl_loss(z, h2, 0.1, negative_mask=mask)
    assert torch.allclose(got, hmcl_loss_loop(z, zeroed, 0.1), atol=1e-6, rtol=0)
    assert not torch.allclose(got, hmcl_loss(z, h2, 0.1), atol=1e-4)


def test_label_training_reports_a_missing_query_drawing(corpus, tmp_path):
    from patent_demo.data.corpus import CorpusError

    with pytest.raises(
        CorpusError, match=r"query drawing .*gone.png of label row 'q' not found: pass --labels-root"
    ):
        _training(corpus, tmp_path, [_row("q", "D0000", "gone.png", pos=[("D0001", "", 2, 3)])])


class _Steps:
    """A stand-in for StepBatches: steps ``start..total-1``, each one batch ``[(step, 0)]``."""

    def __init__(self, start, total):
        self.start, self.total = start, total

    def __len__(self):
        return self.total - self.start

    def __iter__(self):
        return iter([[(s, 0)] for s in range(self.start, self.total)])


def test_label_batches_cycle_through_every_group_and_resume():
    groups = [LabelGroup(f"q{i}", 100 + i, [200 + i, 210 + i, 220 + i], [300 + i]) for i in range(3)]
    full = list(LabelBatches(_Steps(0, 6), groups, 2, positives=2, negatives=1, seed=5))
    assert len(full) == 6
    for batch in full:
        anchors = [f for f, _ in batch[1:] if f in (100, 101, 102)]
        assert len(batch) == 1 + 2 * (1 + 2 + 1) and len(anchors) == 2
        # each anchor is followed by two of its positives and its negative
        for j in range(1, len(batch), 4):
            i = batch[j][0] - 100
            assert {f for f, _ in batch[j + 1 : j + 3]} <= {200 + i, 210 + i, 220 + i}
            assert batch[j + 3][0] == 300 + i
    # two groups a step over three groups: every pass of three slots is a permutation
    slots = [f - 100 for b in full for f, _ in b[1:] if f in (100, 101, 102)]
    for k in range(0, 12, 3):
        assert sorted(slots[k : k + 3]) == [0, 1, 2]
    resumed = list(LabelBatches(_Steps(4, 6), groups, 2, positives=2, negatives=1, seed=5))
    assert resumed == full[4:]


@pytest.fixture(scope="module")
def lineage(tmp_path_factory):
    """A tiny parent (last block trained) and a child fine-tuned from it on labels (projections only)."""
    from patent_demo.data.democorpus import build_corpus
    from train.hmcl import main as hmcl

    root = tmp_path_factory.mktemp("lineage")
    corpus = build_corpus(root / "corpus", patents=24, seed=0, size=96, workers=1, n_types=4)
    common = [
        "--tiny",
        "--steps",
        "2",
        "--corpus",
        str(root / "corpus"),
        "--out",
        str(root / "ck"),
        "--threads",
        "1",
        "--skip-eval-before",
    ]
    assert (
        hmcl.main([*common, "--name", "parent", "--train-blocks", "1", "--eval-splits"]) == 0
    )  # no evaluation
    train_ids = corpus.splits["train"]
    a, b, c = (corpus[p] for p in train_ids[:3])
    (root / "labels" / "query_images").mkdir(parents=True)
    shutil.copy(corpus.image_path(a.figures[0]), root / "labels" / "query_images" / "q.png")
    test_pid = corpus.splits["test"][0]
    rows = [
        _row("q", a.id, "query_images/q.png", pos=[(b.id, b.figures[1].path, 2, 9)], neg=[(c.id, "", 2)]),
        _row("t", test_pid, "query_images/q.png", pos=[(b.id, "", 2, 3)]),
    ]
    write_rows(root / "exports" / "hmcl.jsonl", rows)
    child = [
        *common,
        "--name",
        "child",
        "--train-blocks",
        "0",
        "--init-from",
        str(root / "ck" / "parent"),
        "--labels",
        str(root / "exports" / "hmcl.jsonl"),
        "--labels-root",
        str(root / "labels"),
    ]
    assert hmcl.main(child) == 0
    return root


def test_child_checkpoint_keeps_the_parents_changes_and_records_its_lineage(lineage):
    from patent_demo.checkpoint import load_config, load_weights
    from patent_demo.drawing.finetune import load_hmcl_checkpoint

    parent, child = load_weights(lineage / "ck" / "parent"), load_weights(lineage / "ck" / "child")
    only_parent = sorted(set(parent) - {"visual.head.proj.weight", "text.proj.weight"})
    assert only_parent and set(parent) <= set(child)
    for name in only_parent:  # trained by the parent, frozen in the child: carried over unchanged
        assert torch.equal(parent[name], child[name]), name
    assert not torch.equal(parent["visual.head.proj.weight"], child["visual.head.proj.weight"])
    model, _, _ = load_hmcl_checkpoint(lineage / "ck" / "child")
    state = model.state_dict()
    assert all(torch.equal(state[n], t) for n, t in child.items())
    config = load_config(lineage / "ck" / "child")
    assert (config["version"], config["num_labels"], config["parent"]) == (
        2,
        2,
        str(lineage / "ck" / "parent"),
    )
    assert config["labels"]["queries_held_out"] == 1 and config["labels"]["held_out_query_ids"] == ["t"]
    assert config["labels"]["groups"] == 1 and (config["labels"]["s_rel"], config["labels"]["s_partly"]) == (
        1.0,
        0.35,
    )
    assert (
        "1 queries, 2 judged pairs used; held out 1 test-split queries (1 pairs)"
        in (lineage / "ck" / "child" / "train.log").read_text()
    )


def test_read_rows_reports_the_bad_line(tmp_path):
    from patent_demo.data.corpus import CorpusError

    path = tmp_path / "x.jsonl"
    path.write_text(json.dumps({"query_id": "a"}) + "\n\n[1]\n")
    with pytest.raises(CorpusError, match=r"x.jsonl:3: a label row is a JSON object, got list"):
        read_rows(path)
    path.write_text("{nope\n")
    with pytest.raises(CorpusError, match=r"x.jsonl:1: not JSON"):
        read_rows(path)
