"""Drawing preprocessing and augmentations: shapes, determinism, no mirroring, thickness, white fill."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from PIL import Image

from patent_demo.drawing.transforms import (
    AugmentConfig,
    AugmentParams,
    DrawingEvalTransform,
    DrawingTrainTransform,
    adjust_thickness,
    ink_ratio,
    make_transforms,
    pad_square,
    rotate,
    sample_params,
    to_gray,
)

MEAN = (0.5, 0.4, 0.3)
STD = (0.25, 0.2, 0.5)


def _gray(tensor: torch.Tensor) -> torch.Tensor:
    """Undo the normalisation of channel 0: values in [0, 1]."""
    return tensor[0] * STD[0] + MEAN[0]


def _drawing(size: int = 96) -> Image.Image:
    """An asymmetric line drawing: an 'L' shape and a dot, all in the left third."""
    px = np.full((size, size), 255, dtype=np.uint8)
    px[10 : size - 10, 12:16] = 0  # vertical stroke
    px[size - 14 : size - 10, 12:30] = 0  # foot of the L
    px[20:24, 22:26] = 0  # a dot
    return Image.fromarray(px, mode="L")


def _left_right_ink(tensor: torch.Tensor) -> tuple[float, float]:
    ink = (_gray(tensor) < 0.5).float()
    half = ink.shape[1] // 2
    return float(ink[:, :half].sum()), float(ink[:, half:].sum())


def test_eval_transform_shape_and_normalisation():
    tf = DrawingEvalTransform(48, MEAN, STD)
    out = tf(Image.new("L", (80, 40), 255))
    assert out.shape == (3, 48, 48)
    assert out.dtype == torch.float32
    expected = torch.tensor([(1 - m) / s for m, s in zip(MEAN, STD, strict=True)])
    assert torch.allclose(out[:, 0, 0], expected, atol=1e-6)


def test_eval_transform_pads_non_square_with_white():
    # An all-black wide image: after padding to a square the top and bottom quarters are white paper.
    tf = DrawingEvalTransform(40, MEAN, STD)
    gray = _gray(tf(Image.new("L", (40, 20), 0)))
    assert torch.allclose(gray[:8], torch.ones(8, 40), atol=1e-6)
    assert torch.allclose(gray[14:26], torch.zeros(12, 40), atol=1e-6)


def test_pad_square_centres_the_image():
    img = pad_square(Image.new("L", (6, 2), 0))
    assert img.size == (6, 6)
    px = np.asarray(img)
    assert px[:2].tolist() == [[255] * 6] * 2
    assert px[2:4].tolist() == [[0] * 6] * 2
    assert px[4:].tolist() == [[255] * 6] * 2


def test_to_gray_puts_transparency_on_white_paper():
    rgba = Image.new("RGBA", (4, 4), (0, 0, 0, 0))
    rgba.putpixel((1, 1), (0, 0, 0, 255))
    gray = np.asarray(to_gray(rgba))
    assert gray[1, 1] == 0
    assert int((gray == 255).sum()) == 15


def test_train_transform_shape():
    train, evaluate = make_transforms(32, MEAN, STD)
    assert train(_drawing(), torch.Generator().manual_seed(0)).shape == (3, 32, 32)
    assert evaluate(_drawing()).shape == (3, 32, 32)


def test_train_transform_is_deterministic_under_a_seed():
    tf = DrawingTrainTransform(40, MEAN, STD, AugmentConfig(thickness_prob=1.0))
    img = _drawing()
    a = tf(img, torch.Generator().manual_seed(7))
    b = tf(img, torch.Generator().manual_seed(7))
    c = tf(img, torch.Generator().manual_seed(8))
    assert torch.equal(a, b)
    assert not torch.equal(a, c)
    torch.manual_seed(3)
    d = tf(img)
    torch.manual_seed(3)
    e = tf(img)
    assert torch.equal(d, e)


def test_sampled_parameters_stay_in_their_ranges():
    cfg = AugmentConfig()
    g = torch.Generator().manual_seed(0)
    for _ in range(300):
        p = sample_params(cfg, g)
        area, aspect = p.width * p.height, p.width / p.height
        assert 0.7 - 1e-9 <= area <= 1.0 + 1e-9
        assert 0.9 - 1e-9 <= aspect <= 1.1 + 1e-9
        assert 0.0 <= p.left <= 1.0 - p.width + 1e-9 and 0.0 <= p.top <= 1.0 - p.height + 1e-9
        assert -5.0 <= p.angle <= 5.0
        assert p.thickness in (-1, 0, 1)


def test_flip_is_off_by_default_and_the_train_transform_never_mirrors():
    cfg = AugmentConfig()
    assert cfg.hflip_prob == 0.0
    g = torch.Generator().manual_seed(1)
    assert not any(sample_params(cfg, g).flip for _ in range(500))
    tf = DrawingTrainTransform(64, MEAN, STD)
    for seed in range(20):
        left, right = _left_right_ink(tf(_drawing(), torch.Generator().manual_seed(seed)))
        assert left > 0 and right == 0, seed


def test_flip_option_mirrors():
    tf = DrawingTrainTransform(64, MEAN, STD, AugmentConfig(hflip_prob=1.0))
    for seed in range(5):
        left, right = _left_right_ink(tf(_drawing(), torch.Generator().manual_seed(seed)))
        assert left == 0 and right > 0, seed


def test_thickness_jitter_thickens_and_thins_lines():
    px = np.full((32, 32), 255, dtype=np.uint8)
    px[:, 10:13] = 0  # a 3-pixel vertical line
    img = Image.fromarray(px, mode="L")
    assert ink_ratio(img) == 3 / 32
    assert ink_ratio(adjust_thickness(img, 1)) == 5 / 32
    assert ink_ratio(adjust_thickness(img, 2)) == 7 / 32
    assert ink_ratio(adjust_thickness(img, -1)) == 1 / 32
    assert adjust_thickness(img, 0) is img


def test_thickness_jitter_in_the_pipeline_moves_ink_both_ways():
    # Only thickness varies: each seed either thickens (more ink than eval) or thins (less ink).
    cfg = AugmentConfig(crop_scale=(1.0, 1.0), crop_ratio=(1.0, 1.0), rotate_degrees=0.0, thickness_prob=1.0)
    tf = DrawingTrainTransform(64, MEAN, STD, cfg)
    base = float((_gray(DrawingEvalTransform(64, MEAN, STD)(_drawing())) < 0.5).float().mean())
    seen = set()
    for seed in range(12):
        g = torch.Generator().manual_seed(seed)
        params = sample_params(cfg, torch.Generator().manual_seed(seed))
        ink = float((_gray(tf(_drawing(), g)) < 0.5).float().mean())
        assert (ink > base) if params.thickness > 0 else (ink < base)
        seen.add(params.thickness)
    assert seen == {-1, 1}


def test_rotation_fills_corners_with_white():
    black = Image.new("L", (64, 64), 0)
    out = np.asarray(rotate(black, 5.0))
    assert out[0, 0] == 255 and out[63, 63] == 255 and out[0, 63] == 255 and out[63, 0] == 255
    assert out[32, 32] == 0
    tensor = DrawingTrainTransform(64, MEAN, STD).apply(black, AugmentParams(angle=-5.0))
    gray = _gray(tensor)
    assert math.isclose(float(gray[0, 0]), 1.0, abs_tol=1e-6)
    assert math.isclose(float(gray[32, 32]), 0.0, abs_tol=1e-6)


def test_crop_box_selects_the_region():
    px = np.full((80, 80), 255, dtype=np.uint8)
    px[:40, 40:] = 0  # top-right quadrant inked
    params = AugmentParams(left=0.5, top=0.0, width=0.5, height=0.5)
    out = DrawingTrainTransform(20, MEAN, STD).apply_image(Image.fromarray(px, mode="L"), params)
    assert out.size == (20, 20)
    assert ink_ratio(out) == 1.0


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"crop_scale": (0.0, 1.0)}, "crop_scale must satisfy 0 < low <= high <= 1, got (0.0, 1.0)"),
        ({"crop_ratio": (1.2, 1.1)}, "crop_ratio must satisfy 0 < low <= high, got (1.2, 1.1)"),
        ({"rotate_degrees": -1.0}, "rotate_degrees must be >= 0, got -1.0"),
        ({"hflip_prob": 1.5}, "hflip_prob must lie in [0, 1], got 1.5"),
    ],
)
def test_augment_config_rejects_bad_values(kwargs, message):
    with pytest.raises(ValueError) as err:
        AugmentConfig(**kwargs)
    assert str(err.value) == message


def test_load_tensor_reads_a_drawing_file(tmp_path):
    pytest.importorskip("patent_demo.imageio")
    from patent_demo.drawing.transforms import load_tensor

    path = tmp_path / "fig.png"
    _drawing().save(path)
    out = load_tensor(path, DrawingEvalTransform(32, MEAN, STD))
    assert out.shape == (3, 32, 32)
    assert float((_gray(out) < 0.5).float().sum()) > 0
