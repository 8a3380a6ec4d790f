"""``train.hmcl.heads`` (linear heads on cached trunk features, the HMCL step loop) through its entry point on 30 real USPC drawings (64 px, 1 view, a few steps): every
variant is recorded with val and test figures, and the shipped checkpoint, loaded the way the app loads
it, embeds a drawing exactly as the head it was trained as."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from patent_demo.data.build import build_corpus
from patent_demo.data.corpus import Corpus
from patent_demo.registry import read_checkpoint_spec
from tests.conftest import two_member_subclasses


@pytest.fixture(scope="module")
def uspc(tmp_path_factory):
    src, subs = two_member_subclasses(15)
    tmp = tmp_path_factory.mktemp("hmcl_uspc")
    (tmp / "t.tsv").write_text("".join("\t".join(r) + "\n" for pair in subs for r in pair), encoding="utf-8")
    splits = {"train": [], "val": [], "test": []}
    for i, pair in enumerate(subs):
        splits[("train", "val", "test")[i % 3]] += [r[0] for r in pair]
    (tmp / "splits.json").write_text(json.dumps(splits))
    build_corpus(
        "images", src, tmp / "corpus", metadata=tmp / "t.tsv", splits_file=tmp / "splits.json", progress=False
    )
    return tmp


def test_tiny_run_records_every_variant_and_ships_a_loadable_head(uspc, tmp_path):
    from patent_demo.drawing.encoders import encode_images
    from patent_demo.drawing.finetune import load_hmcl_checkpoint
    from patent_demo.drawing.trunk import trunk_features
    from train.hmcl.heads import main

    out, ship, heads = tmp_path / "r.json", tmp_path / "ckpt", str(tmp_path / "heads")
    common = [
        "--corpus",
        str(uspc / "corpus"),
        "--image-size",
        "64",
        "--views",
        "1",
        "--steps",
        "4",
        "--eval-every",
        "2",
        "--seeds",
        "0",
        "1",
        "--bootstrap",
        "50",
        "--cache-dir",
        str(tmp_path / "cache"),
        "--save-heads",
        heads,
    ]
    # two parallel parts, then one merge that ships the best-on-val run over both
    assert (
        main(
            [
                *common,
                "--variants",
                "zero-shot",
                "lda-subclass",
                "cl",
                "hmcl-level-shuffled",
                "--out",
                str(tmp_path / "a.json"),
            ]
        )
        == 0
    )
    assert (
        main(
            [
                *common,
                "--variants",
                "zero-shot",
                "hmcl-level",
                "hmcl-paper-text",
                "--out",
                str(tmp_path / "b.json"),
            ]
        )
        == 0
    )
    assert (
        main(
            [
                "--merge",
                str(tmp_path / "a.json"),
                str(tmp_path / "b.json"),
                "--save-heads",
                heads,
                "--out",
                str(out),
                "--ship",
                str(ship),
            ]
        )
        == 0
    )
    res = json.loads(out.read_text())
    assert sorted(res["variants"]) == [
        "cl",
        "hmcl-level",
        "hmcl-level-shuffled",
        "hmcl-paper-text",
        "lda-subclass",
        "zero-shot",
    ]
    assert res["setup"]["splits"] == {"train": 10, "val": 10, "test": 10}
    assert [r["seed"] for r in res["variants"]["hmcl-level"]["runs"]] == [0, 1]
    zs = res["variants"]["zero-shot"]
    assert zs["test"]["subclass_map"]["values"][0] == zs["runs"][0]["test"]["subclass_map"]
    assert zs["test_vs_zero_shot"]["subclass_map"]["mean"] == 0.0
    trained = ("cl", "hmcl-level", "hmcl-paper-text")
    assert res["shipped"]["variant"] in trained
    best = max(
        (r for v in trained for r in res["variants"][v]["runs"]),
        key=lambda r: r["val"]["subclass_map"] + r["val"]["main_map"],
    )
    assert res["shipped"]["val"] == best["val"] and res["shipped"]["test"] == best["test"]
    metrics = json.loads((ship / "metrics.json").read_text())
    assert (
        metrics["validation"]["uspc"]["metrics"] == best["val"]
        and metrics["test"]["uspc"]["metrics"] == best["test"]
    )
    # the checkpoint describes itself and the registry lists it as a drawing model
    spec = read_checkpoint_spec(ship)
    assert spec.task == "drawing" and spec.encoder == "lite-head"
    assert (ship / "command.txt").read_text().startswith("python -m train.hmcl.heads --merge")
    # loaded as the app loads it, it embeds as the trained head on the cached trunk features
    model, tf, _ = load_hmcl_checkpoint(ship)
    corpus = Corpus.load(uspc / "corpus")
    feats = trunk_features(corpus, 64, 1, {p.id for p in corpus.split("train")}, tmp_path / "cache")
    from safetensors.torch import load_file

    head = load_file(str(ship / "model.safetensors"))
    p = corpus.patents[0]
    with torch.no_grad():
        ours = encode_images(model, tf(corpus.open_image(p.figures[0]))[None]).numpy()
    z = feats["clean"][:1] @ head["visual.head.proj.weight"].T + head["visual.head.proj.bias"]
    np.testing.assert_allclose(ours, torch.nn.functional.normalize(z, dim=1).numpy(), atol=1e-5)


def test_mix_variant_ships_its_trunk_weight_and_embeds_as_trained(uspc, tmp_path):
    """A -mix run chooses the trunk weight on val with the step; the shipped checkpoint records it and, loaded
    as the app loads it, embeds a drawing as ``trunk_mix`` of the cached trunk features and the head."""
    from safetensors.torch import load_file

    from patent_demo.drawing.encoders import encode_images, trunk_mix
    from patent_demo.drawing.finetune import load_hmcl_checkpoint
    from patent_demo.drawing.trunk import MIX_GRID, trunk_features
    from train.hmcl.heads import main

    out, ship = tmp_path / "r.json", tmp_path / "ckpt"
    assert (
        main(
            [
                "--corpus",
                str(uspc / "corpus"),
                "--image-size",
                "64",
                "--views",
                "1",
                "--steps",
                "4",
                "--eval-every",
                "2",
                "--seeds",
                "0",
                "--bootstrap",
                "50",
                "--cache-dir",
                str(tmp_path / "cache"),
                "--variants",
                "zero-shot",
                "hmcl-paper-mix",
                "--out",
                str(out),
                "--ship",
                str(ship),
            ]
        )
        == 0
    )
    run = json.loads(out.read_text())["variants"]["hmcl-paper-mix"]["runs"][0]
    assert run["alpha"] in MIX_GRID
    config = json.loads((ship / "config.json").read_text())
    assert config["model"]["trunk_mix"] == run["alpha"] == config["train"]["trunk_mix"]
    model, tf, _ = load_hmcl_checkpoint(ship)
    corpus = Corpus.load(uspc / "corpus")
    feats = trunk_features(corpus, 64, 1, {p.id for p in corpus.split("train")}, tmp_path / "cache")
    head = load_file(str(ship / "model.safetensors"))
    with torch.no_grad():
        ours = encode_images(model, tf(corpus.open_image(corpus.patents[0].figures[0]))[None]).numpy()
    x = feats["clean"][:1]
    z = x @ head["visual.head.proj.weight"].T + head["visual.head.proj.bias"]
    np.testing.assert_allclose(ours, trunk_mix(x, z, run["alpha"]).numpy(), atol=1e-5)
    assert set(model.state_dict()) >= set(head)  # the wrapped head keeps its parameter names


def test_trunk_mix_cosine_is_the_weighted_sum_of_the_two_cosines():
    from patent_demo.drawing.encoders import trunk_mix

    g = torch.Generator().manual_seed(0)
    t, h = torch.randn(5, 12, generator=g), torch.randn(5, 4, generator=g)
    for alpha in (0.0, 0.3, 1.0):
        m = trunk_mix(t, h, alpha)
        ct = torch.nn.functional.normalize(t, dim=1) @ torch.nn.functional.normalize(t, dim=1).T
        ch = torch.nn.functional.normalize(h, dim=1) @ torch.nn.functional.normalize(h, dim=1).T
        torch.testing.assert_close(m @ m.T, alpha * ct + (1 - alpha) * ch)
    with pytest.raises(ValueError, match="in \\[0, 1\\]"):
        trunk_mix(t, h, 1.5)


def test_level_weights_reproduce_the_paper_the_balanced_and_the_cl_targets():
    """One relevance path for every hierarchy: the closest shared level turned into Eq. 2 weights gives the
    loss module's own ``hierarchical_weights`` / ``level_balanced_weights`` on one hierarchy."""
    from patent_demo.losses.hmcl import hierarchical_weights, level_balanced_weights
    from train.hmcl.heads import level_weights

    g = torch.Generator().manual_seed(0)
    s0 = torch.randint(-1, 8, (40,), generator=g)
    pid, sub, main = torch.arange(40).repeat(2), s0.repeat(2), torch.where(s0 >= 0, s0 // 3, -1).repeat(2)
    level = hierarchical_weights(pid, sub, main, 1.0, 0.5, 0.25)
    w = (1.0, 0.35, 0.2)
    torch.testing.assert_close(
        level_weights(level, "hmcl-paper-mix", w), hierarchical_weights(pid, sub, main, *w)
    )
    torch.testing.assert_close(
        level_weights(level, "hmcl-level", w), level_balanced_weights(pid, sub, main, *w)
    )
    torch.testing.assert_close(
        level_weights(level, "cl", w), hierarchical_weights(pid, None, None, 1.0, 0, 0)
    )


def test_both_hierarchies_take_the_closer_relation(uspc, tmp_path):
    """``--hierarchy both``: a pair in different USPC subclasses but one derived Locarno subclass is a subclass
    positive; ``--hierarchy locarno`` trains on the derived keys alone (unknown keys relate to nothing)."""
    from train.hmcl.heads import main

    corpus = Corpus.load(uspc / "corpus")
    train = corpus.split("train")
    a, b = train[0].id, train[2].id  # two USPC subclasses (the fixture pairs members 0-1, 2-3, ...)
    labels = {
        "labels": {
            a: {"main": "06", "confirmed": True, "subclass": "06-01", "similarity": 0.9},
            b: {"main": "06", "confirmed": True, "subclass": "06-01", "similarity": 0.9},
        }
    }
    path = tmp_path / "loc.json"
    path.write_text(json.dumps(labels))
    from train.hmcl.labels import load

    assert load(path) == {a: ("locarno:06-01", "locarno:06"), b: ("locarno:06-01", "locarno:06")}
    for hierarchy in ("locarno", "both"):
        out = tmp_path / f"{hierarchy}.json"
        assert (
            main(
                [
                    "--corpus",
                    str(uspc / "corpus"),
                    "--image-size",
                    "64",
                    "--views",
                    "1",
                    "--steps",
                    "2",
                    "--eval-every",
                    "1",
                    "--seeds",
                    "0",
                    "--bootstrap",
                    "20",
                    "--cache-dir",
                    str(tmp_path / "cache"),
                    "--variants",
                    "hmcl-paper",
                    "--hierarchy",
                    hierarchy,
                    "--locarno-labels",
                    str(path),
                    "--no-test",
                    "--out",
                    str(out),
                ]
            )
            == 0
        )
        res = json.loads(out.read_text())
        assert res["setup"]["args"]["hierarchy"] == hierarchy
        assert "test" not in res["variants"]["hmcl-paper"]  # --no-test: test neither computed nor printed


def test_pair_levels_take_the_closer_of_two_hierarchies(uspc):
    from patent_demo.drawing.trunk import Split
    from train.hmcl.heads import pair_levels

    corpus = Corpus.load(uspc / "corpus")
    feats = {
        k: torch.zeros(len(corpus.patents), *((1, 4) if k == "views" else (4,)))
        for k in ("clean", "flip", "views")
    }
    tr = Split(corpus, "train", feats, {p.id: i for i, p in enumerate(corpus.patents)})
    a, b = tr.patents[0].id, tr.patents[2].id
    tr.use_locarno({a: ("locarno:06-01", "locarno:06"), b: ("locarno:06-01", "locarno:06")})
    uspc_level, loc, both = (pair_levels(tr, h) for h in ("uspc", "locarno", "both"))
    assert uspc_level[0, 2] < 0.5 and loc[0, 2] == both[0, 2] == 0.5
    assert both[0, 1] == uspc_level[0, 1] == 0.5 and loc[0, 1] == 0  # patent 1 has no derived label
    assert torch.equal(both, torch.maximum(uspc_level, loc)) and both.diagonal().eq(0).all()
