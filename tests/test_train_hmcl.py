"""train/hmcl/main.py through its real entry point (``--tiny``), resume, and the delta checkpoint round trip."""

from __future__ import annotations

import json
import math
from collections import Counter

import pytest
import torch

from patent_demo.checkpoint import load_config, load_metrics, load_train_state, load_weights
from patent_demo.drawing.finetune import (
    load_hmcl_checkpoint,
    set_trainable,
    text_tower_features,
    vision_blocks,
)
from train import score_drawings as evaluate_script
from train.hmcl import data as hmcl_sources
from train.hmcl import main as hmcl

LEVEL_KEYS = {"patent_map", "subclass_map", "main_map", "patent_ndcg@10", "subclass_ndcg@10", "main_ndcg@10"}


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """Run A: 4 steps. Run B: the same run stopped after 2 steps, then resumed."""
    root = tmp_path_factory.mktemp("hmcl")
    common = [
        "--tiny",
        "--steps",
        "4",
        "--out",
        str(root / "runs"),
        "--cache-dir",
        str(root / "cache"),
        "--threads",
        "1",
    ]
    assert hmcl.main([*common, "--name", "a"]) == 0
    assert hmcl.main([*common, "--name", "b", "--stop-after-steps", "2"]) == 0
    stopped = {
        "state_step": load_train_state(root / "runs" / "b")["step"],
        "metrics": load_metrics(root / "runs" / "b"),
    }
    assert hmcl.main([*common, "--name", "b", "--resume"]) == 0
    return root, stopped


def test_tiny_run_writes_a_checkpoint(runs):
    root, _ = runs
    run = root / "runs" / "a"
    config = load_config(run)
    assert config["kind"] == "hmcl" and config["delta"] is True
    assert config["model"] == {"name": "lite-clip", "image_size": 64}
    assert config["train"]["loss"] == "hmcl" and config["train"]["s_s"] == 0.35
    weights = load_weights(run)
    # only parameters training changed: a subset of the trainable ones, here the last block, head and projections
    assert set(weights) <= set(config["trained_parameters"])
    assert {"visual.head.proj.weight", "text.proj.weight"} <= set(weights)
    assert not any(k.startswith(("text.transformer", "visual.trunk.blocks.0")) for k in weights)
    metrics = load_metrics(run)
    for phase in ("before", "after"):
        assert LEVEL_KEYS <= set(metrics[phase]["test"]["metrics"])
        assert metrics[phase]["test"]["per_class"]
    losses = metrics["train"]["segments"][0]["final_losses"]
    assert set(losses) == {"hmcl_loss", "text_loss", "loss"} and all(
        math.isfinite(v) for v in losses.values()
    )
    assert metrics["train"]["steps"] == 4
    command = (run / "command.txt").read_text().split()
    assert command[:3] == ["python", "-m", "train.hmcl"] and "--tiny" in command
    assert "step 4/4" in (run / "train.log").read_text()


def test_resume_reproduces_the_uninterrupted_run(runs):
    root, stopped = runs
    assert stopped["state_step"] == 2 and "after" not in stopped["metrics"]
    a, b = load_weights(root / "runs" / "a"), load_weights(root / "runs" / "b")
    assert set(a) == set(b)
    for name in a:
        assert torch.equal(a[name], b[name]), name
    ma, mb = load_metrics(root / "runs" / "a"), load_metrics(root / "runs" / "b")
    assert ma["after"]["test"]["metrics"] == mb["after"]["test"]["metrics"]
    assert [s["to_step"] for s in mb["train"]["segments"]] == [2, 4]


def test_checkpoint_round_trip_reproduces_the_evaluation(runs, tmp_path):
    root, _ = runs
    corpus_dir = next((root / "cache").glob("democorpus-*"))
    out = tmp_path / "eval.json"
    argv = [
        "--model",
        str(root / "runs" / "a"),
        "--corpus",
        str(corpus_dir),
        "--split",
        "test",
        "--out",
        str(out),
    ]
    assert evaluate_script.main(argv) == 0
    got = json.loads(out.read_text())
    want = load_metrics(root / "runs" / "a")["after"]["test"]
    assert got["image_size"] == 64 and got["kind"] == "hmcl"
    for key, value in want["metrics"].items():
        assert got["metrics"][key] == pytest.approx(value, abs=1e-9, rel=0), key
    assert got["silhouette"] == pytest.approx(want["silhouette"], abs=1e-9)


def test_loaded_model_blocks_and_text_features(runs):
    root, _ = runs
    model, eval_tf, config = load_hmcl_checkpoint(root / "runs" / "a")
    assert eval_tf.size == 64
    weights = load_weights(root / "runs" / "a")
    state = model.state_dict()
    for name, tensor in weights.items():
        assert torch.equal(state[name], tensor), name
    blocks = vision_blocks(model)
    # timm's grouping of EfficientNet-Lite0: stem, 15 MBConv blocks, the last block with the head convolution
    assert len(blocks) == 17 and blocks[0][0] == "visual.trunk.conv_stem.weight"
    assert blocks[-1][0] == "visual.trunk.blocks.6.0.conv_pw.weight"
    assert blocks[-1][-3:] == [
        "visual.trunk.conv_head.weight",
        "visual.trunk.bn2.weight",
        "visual.trunk.bn2.bias",
    ]
    assert blocks[-2][0] == "visual.trunk.blocks.5.3.conv_pw.weight"
    names = set_trainable(model, 2, text_projection=False)
    assert set(names) == set(blocks[-1]) | set(blocks[-2]) | {"visual.head.proj.weight"}
    assert sum(p.requires_grad for p in model.parameters()) == len(names)
    # cached text-tower features + the trainable projection equal encode_text before normalisation
    from patent_demo.drawing.encoders import get_tokenizer

    tok = get_tokenizer("lite-clip")
    texts = ["Chair. A chair with four legs", "Lamp"]
    feats, proj = text_tower_features(model, tok, texts)
    with torch.no_grad():
        want = model.encode_text(tok(texts))
        assert torch.allclose(proj(feats), want, atol=1e-5, rtol=0)


def test_shuffle_labels_keeps_class_sizes():
    labels = ["06-01"] * 5 + ["06-02"] * 3 + ["07-01"] * 2
    shuffled = hmcl_sources.shuffle_labels(labels, seed=3)
    assert Counter(shuffled) == Counter(labels)
    assert shuffled != labels
    assert shuffled == hmcl_sources.shuffle_labels(labels, seed=3)
    assert shuffled != hmcl_sources.shuffle_labels(labels, seed=4)


def test_lr_schedule_warmup_then_cosine():
    assert [hmcl.lr_factor(s, 10, 2, 0.0) for s in (0, 1)] == [0.5, 1.0]
    assert hmcl.lr_factor(2, 10, 2, 0.0) == 1.0
    assert hmcl.lr_factor(6, 10, 2, 0.0) == pytest.approx(0.5, abs=1e-12)
    assert hmcl.lr_factor(10, 10, 2, 0.1) == pytest.approx(0.1, abs=1e-12)


def test_config_file_and_overrides(tmp_path):
    cfg = tmp_path / "c.json"
    cfg.write_text(json.dumps({"loss": "cl", "steps": 7, "weights": [1.0, 0.35, 0.2]}))
    args = hmcl.parse_args(["--config", str(cfg), "--steps", "9"])
    assert (args.loss, args.steps, args.weights) == ("cl", 9, [1.0, 0.0, 0.0])
    assert hmcl.run_name(args) == "cl-lite-clip-figures-tw0.2-tau0.1-b3-128px-9st-s0"
    cfg.write_text(json.dumps({"stepz": 7}))
    with pytest.raises(SystemExit):
        hmcl.parse_args(["--config", str(cfg)])
