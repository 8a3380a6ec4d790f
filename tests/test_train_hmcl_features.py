"""``train.hmcl`` on real drawings through the cached-trunk feed (``train.hmcl.features``): the USPC source, the
split tower, scan-like augmentations and a tiny run whose checkpoint reproduces its cached validation figures
through the full model."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from patent_demo.drawing.transforms import SCAN_CHOICES, ScanConfig, scan_like
from tests.conftest import require_shared


def _drawing():
    from PIL import Image, ImageDraw

    img = Image.new("L", (120, 100), 255)
    ImageDraw.Draw(img).rectangle((20, 20, 100, 80), outline=0, width=2)
    return img


def test_scan_like_is_seeded_and_each_choice_acts():
    img = _drawing()
    cfg = ScanConfig.of(["all"], 1.0)
    a = scan_like(img, cfg, torch.Generator().manual_seed(4))
    b = scan_like(img, cfg, torch.Generator().manual_seed(4))
    assert np.array_equal(np.asarray(a), np.asarray(b))
    assert set(np.unique(np.asarray(a)).tolist()) <= {0, 255}  # binarised
    labelled = scan_like(img, ScanConfig(label=1.0), torch.Generator().manual_seed(0))
    assert labelled.size[1] > img.size[1]
    assert (np.asarray(labelled)[img.size[1] :] < 128).any()  # "FIG. n" ink below the drawing
    header = scan_like(img, ScanConfig(header=1.0), torch.Generator().manual_seed(0))
    assert (np.asarray(header)[: header.size[1] - img.size[1]] < 128).any()
    margin = scan_like(img, ScanConfig(margin=1.0), torch.Generator().manual_seed(0))
    assert margin.size[0] >= img.size[0] and margin.size[1] >= img.size[1]
    assert scan_like(img, ScanConfig(), torch.Generator()) is not None
    assert not ScanConfig().active and ScanConfig.of(["label"]).active
    with pytest.raises(ValueError, match="unknown scan"):
        ScanConfig.of(["blur"])
    assert set(SCAN_CHOICES) == {"binarize", "weight", "margin", "label", "header"}


def test_uspc_items_and_shuffle():
    from train.hmcl.data import shuffle_hierarchy, uspc_items

    items = uspc_items(require_shared("design_patents_2007_uspc_macaulay"))
    assert len(items) == 1000 and len({it.patent for it in items}) == 1000
    first = items[0]
    assert (first.patent, first.subclass, first.main, first.text) == (
        "USD0534331",
        "uspc:D1/121",
        "uspc:D1",
        "Pet chew",
    )
    assert len({it.main for it in items}) == 32
    shuffled = shuffle_hierarchy(items, seed=0)
    assert sorted(it.subclass for it in shuffled) == sorted(it.subclass for it in items)
    assert any(a.subclass != b.subclass for a, b in zip(items, shuffled, strict=True))
    assert all(it.main == it.subclass.split("/")[0] for it in shuffled)


@pytest.fixture(scope="module")
def tower():
    from patent_demo.drawing.encoders import create_encoder
    from patent_demo.drawing.finetune import SplitTower, set_trainable

    model, _, _ = create_encoder("lite-clip", image_size=64)
    model.eval()
    set_trainable(model, 2)
    return model, SplitTower(model, 2)


def test_split_tower_equals_the_full_encoder(tower):
    model, split = tower
    x = torch.randn(3, 3, 64, 64)
    with torch.no_grad():
        assert torch.allclose(split.suffix(split.prefix(x)), model.encode_image(x), atol=1e-5)
    # the cut falls where training starts: nothing before it trains, the last blocks do
    prefix_params = [p for b in split.blocks[: split.cut] for p in b.parameters()]
    assert prefix_params and not any(p.requires_grad for p in prefix_params)
    assert all(p.requires_grad for b in split.blocks[split.cut :] for p in b.parameters())
    assert split.cut == len(split.blocks) - 2


def test_tiny_real_run_matches_the_full_model(tmp_path):
    require_shared("impact_design_patent_samples")
    require_shared("design_patents_2007_uspc_macaulay")
    from patent_demo.data.loaders.uspto import load_redbook
    from patent_demo.drawing.finetune import load_encoder
    from patent_demo.drawing.protocol import evaluate_drawings
    from train.hmcl import features as hmcl_cached
    from train.hmcl import main as hmcl

    out = tmp_path / "runs"
    argv = [
        "--image-size",
        "64",
        "--steps",
        "3",
        "--batch-patents",
        "4",
        "--views",
        "2",
        "--train-blocks",
        "1",
        "--max-per-source",
        "12",
        "--sources",
        "uspc",
        "deeppatent2",
        "--cache-dir",
        str(tmp_path / "cache"),
        "--out",
        str(out),
        "--name",
        "tiny",
        "--log-every",
        "1",
        "--warmup-steps",
        "1",
        "--eval-sizes",
        "80",
    ]
    assert hmcl.main(argv) == 0
    run = out / "tiny"
    metrics = json.loads((run / "metrics.json").read_text())
    config = json.loads((run / "config.json").read_text())
    assert config["kind"] == "hmcl"
    assert config["model"] == {"name": "lite-clip", "image_size": 64, "train_image_size": 64}
    assert (
        config["real_validation"]["metrics"]["patent_map"]
        == metrics["real_validation"]["metrics"]["patent_map"]
    )
    assert set(config["real_validation"]["macro"]) >= {"patent_map", "subclass_map", "main_map"}
    # the checkpoint through the full model on the same pages gives the cached figures
    model, eval_tf, _ = load_encoder(run)
    corpus = load_redbook(require_shared("impact_design_patent_samples"))
    full = evaluate_drawings(model, eval_tf, corpus, None, protocol="all", silhouette=False)
    for key in ("patent_map", "subclass_map", "main_map", "hier_ndcg@10"):
        assert full["metrics"][key] == pytest.approx(metrics["real_validation"]["metrics"][key], abs=1e-4)
    assert (run / "command.txt").read_text().startswith("python -m train.hmcl --image-size")
    # the same weights at another input size: stored by the run, recomputed by revalidate
    at80 = config["real_validation_at"]["80"]
    assert at80["image_size"] == 80 and at80["metrics"]["patent_map"] is not None
    again = hmcl_cached.revalidate(run, hmcl.parse_args(["--sources", "uspc"]), [80])
    assert again["80"]["metrics"]["patent_map"] == pytest.approx(at80["metrics"]["patent_map"], abs=1e-9)


def test_config_rejects_architecture_keys(tmp_path):
    from train.hmcl import main as hmcl

    cfg = tmp_path / "c.json"
    cfg.write_text(json.dumps({"model": "vit-base", "tau": 0.2}))
    with pytest.raises(SystemExit):
        hmcl.parse_args(["--config", str(cfg)])
    cfg.write_text(json.dumps({"tau": 0.2, "sources": ["uspc"]}))
    args = hmcl.parse_args(["--config", str(cfg), "--encoder", "lite-clip"])
    assert args.tau == 0.2 and args.encoder == "lite-clip" and args.cached
    # the cached feed's defaults are the earlier real-data command's, the end-to-end feed's its own
    assert (args.batch_patents, args.warmup_steps, args.threads, args.out, args.log_every) == (
        32,
        20,
        1,
        "runs/real",
        25,
    )
    e2e = hmcl.parse_args([])
    assert not e2e.cached and (e2e.batch_patents, e2e.warmup_steps, e2e.out) == (24, 30, "runs")
    real = hmcl.parse_args(["--config", "train/configs/hmcl-real.json"])
    assert real.cached and real.sources == ["uspc", "deeppatent2", "generated"]
    for bad in (
        ["--sources", "corpus", "uspc"],
        ["--sources", "uspc", "--labels", "x.jsonl"],
        ["--sources", "uspc", "--views", "1"],
    ):
        with pytest.raises(SystemExit):
            hmcl.parse_args(bad)


def test_whitened_projection_decorrelates_the_training_features(tower):
    from patent_demo.drawing.finetune import SplitTower
    from train.hmcl.features import whiten_projection

    model, _ = tower
    pooled = SplitTower(model, 0)
    saved = model.visual.head.proj.weight.detach().clone()
    try:
        g = torch.Generator().manual_seed(0)
        mix = torch.randn(1280, 1280, generator=g) / 40
        feats = (torch.randn(600, 2, 1280, generator=g) @ mix).abs()  # [N, V, C], correlated, non-negative
        whiten_projection(pooled, feats)
        w = model.visual.head.proj.weight.detach().double()  # [D, C]
        x = feats.flatten(0, 1).double()
        cov = (x @ w.T).T @ (x @ w.T) / x.shape[0]  # second moment of the outputs
        scale = cov.diagonal().mean()
        assert torch.allclose(cov / scale, torch.eye(w.shape[0], dtype=torch.float64), atol=1e-6)
    finally:
        with torch.no_grad():
            model.visual.head.proj.weight.copy_(saved)
    with pytest.raises(SystemExit, match="train-blocks 0"):
        whiten_projection(SplitTower(model, 2), feats)


def test_registry_default_marker_leads(tmp_path):
    from patent_demo.registry import scan_models

    for name, extra in (("a-hmcl", {}), ("b-cl", {"default": True})):
        d = tmp_path / name
        d.mkdir()
        train = {"loss": "cl", "s_s": 0.0, "s_m": 0.0} if name == "b-cl" else {"loss": "hmcl"}
        (d / "config.json").write_text(
            json.dumps({"kind": "hmcl", "model": {"name": "lite-clip"}, "train": train, **extra})
        )
        (d / "model.safetensors").write_bytes(b"")
    drawing = [m.key for m in scan_models([tmp_path]) if m.task == "drawing"]
    assert drawing[:2] == ["b-cl", "a-hmcl"] and drawing[-1] == "zero-shot"


def test_whitened_checkpoint_served_at_another_size(tmp_path):
    require_shared("impact_design_patent_samples")
    from patent_demo.data.loaders.uspto import load_redbook
    from patent_demo.drawing.finetune import load_encoder
    from patent_demo.drawing.protocol import evaluate_drawings
    from patent_demo.registry import read_checkpoint_spec
    from train.hmcl import main as hmcl

    argv = [
        "--image-size",
        "64",
        "--steps",
        "0",
        "--train-blocks",
        "0",
        "--init-projection",
        "whiten",
        "--views",
        "2",
        "--max-per-source",
        "150",
        "--sources",
        "uspc",
        "--text-weight",
        "0",
        "--cache-dir",
        str(tmp_path / "cache"),
        "--out",
        str(tmp_path),
        "--name",
        "w",
        "--eval-sizes",
        "80",
        "--serve-size",
        "80",
        "--default",
    ]
    assert hmcl.main(argv) == 0
    run = tmp_path / "w"
    config = json.loads((run / "config.json").read_text())
    assert config["default"] is True and config["model"]["image_size"] == 80
    assert config["model"]["train_image_size"] == 64
    assert config["trained_parameters"] == ["visual.head.proj.weight"]
    spec = read_checkpoint_spec(run)
    assert spec.default and spec.kind == "fitted"  # nothing was trained, but the projection was fitted
    model, eval_tf, _ = load_encoder(run)
    assert eval_tf.size == 80
    corpus = load_redbook(require_shared("impact_design_patent_samples"))
    full = evaluate_drawings(model, eval_tf, corpus, None, protocol="all", silhouette=False)
    for key in ("patent_map", "subclass_map", "main_map"):
        assert full["metrics"][key] == pytest.approx(config["real_validation"]["metrics"][key], abs=1e-4)
