"""Preprocessing and training augmentations for patent line drawings.

Drawings arrive as 8-bit grayscale PIL images (black ink on white paper), as
:func:`patent_demo.imageio.load_drawing` returns them. Both transforms end in a normalised RGB tensor
``[3, S, S]`` for an encoder with input size ``S`` and the encoder's channel mean/std.

- :class:`DrawingEvalTransform`: grayscale, pad to a white square, resize to ``S``, normalise.
- :func:`scan_like` (:class:`ScanConfig`): scan-like augmentations of generated drawings (1 bit, line
  weight, page margin, "FIG. n" label, sheet header), applied before the train transform.
- :class:`DrawingTrainTransform`: a mild random-resized crop (area 0.7–1.0, aspect 0.9–1.1), a small
  rotation (±5°) with white fill, line-thickness jitter (a min filter thickens dark lines, a max filter
  thins them) and, only when asked for, a horizontal flip: a mirrored design is another design, so
  flipping is off by default.

Randomness comes from a ``torch.Generator`` when one is passed, else from torch's global RNG (seeded
per DataLoader worker), so a fixed seed gives the same tensors.
"""

from __future__ import annotations

import math
import os
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch
from PIL import Image, ImageFilter

WHITE = 255
INK_THRESHOLD = 128


@dataclass(frozen=True)
class AugmentConfig:
    """Training augmentations. ``thickness_max`` is the largest filter radius in pixels at the model's
    input size (radius r applies a ``2r+1`` min or max filter); ``hflip_prob`` stays 0 unless mirrored
    designs should count as the same design."""

    crop_scale: tuple[float, float] = (0.7, 1.0)
    crop_ratio: tuple[float, float] = (0.9, 1.1)
    rotate_degrees: float = 5.0
    thickness_prob: float = 0.5
    thickness_max: int = 1
    hflip_prob: float = 0.0

    def __post_init__(self) -> None:
        lo, hi = self.crop_scale
        if not 0 < lo <= hi <= 1:
            raise ValueError(f"crop_scale must satisfy 0 < low <= high <= 1, got {self.crop_scale}")
        lo, hi = self.crop_ratio
        if not 0 < lo <= hi:
            raise ValueError(f"crop_ratio must satisfy 0 < low <= high, got {self.crop_ratio}")
        if self.rotate_degrees < 0:
            raise ValueError(f"rotate_degrees must be >= 0, got {self.rotate_degrees}")
        if self.thickness_max < 0:
            raise ValueError(f"thickness_max must be >= 0, got {self.thickness_max}")
        for field in ("thickness_prob", "hflip_prob"):
            if not 0.0 <= getattr(self, field) <= 1.0:
                raise ValueError(f"{field} must lie in [0, 1], got {getattr(self, field)}")


@dataclass(frozen=True)
class AugmentParams:
    """One draw of the training augmentations. The crop box is relative to the padded square image
    (``left``, ``top``, ``width``, ``height`` in [0, 1]); ``thickness`` > 0 thickens lines by that
    radius, < 0 thins them, 0 leaves them."""

    left: float = 0.0
    top: float = 0.0
    width: float = 1.0
    height: float = 1.0
    angle: float = 0.0
    thickness: int = 0
    flip: bool = False


def _uniform(low: float, high: float, generator: torch.Generator | None) -> float:
    return low + (high - low) * float(torch.rand((), generator=generator))


def sample_params(config: AugmentConfig, generator: torch.Generator | None = None) -> AugmentParams:
    """Draw crop box, angle, thickness and flip. The crop follows torchvision's RandomResizedCrop:
    up to 10 tries at an area fraction in ``crop_scale`` and a log-uniform aspect in ``crop_ratio``,
    else the whole image. The same generator state always gives the same parameters."""
    width = height = 1.0
    left = top = 0.0
    log_lo, log_hi = math.log(config.crop_ratio[0]), math.log(config.crop_ratio[1])
    for _ in range(10):
        area = _uniform(*config.crop_scale, generator)
        aspect = math.exp(_uniform(log_lo, log_hi, generator))
        w, h = math.sqrt(area * aspect), math.sqrt(area / aspect)
        if w <= 1.0 and h <= 1.0:
            width, height = w, h
            left = _uniform(0.0, 1.0 - w, generator)
            top = _uniform(0.0, 1.0 - h, generator)
            break
    angle = _uniform(-config.rotate_degrees, config.rotate_degrees, generator)
    thickness = 0
    if config.thickness_max > 0 and float(torch.rand((), generator=generator)) < config.thickness_prob:
        radius = int(torch.randint(1, config.thickness_max + 1, (), generator=generator))
        sign = 1 if float(torch.rand((), generator=generator)) < 0.5 else -1
        thickness = sign * radius
    flip = float(torch.rand((), generator=generator)) < config.hflip_prob
    return AugmentParams(left, top, width, height, angle, thickness, flip)


def to_gray(image: Image.Image) -> Image.Image:
    """An 8-bit grayscale (mode ``"L"``) copy; transparent areas become white paper."""
    if image.mode == "L":
        return image
    if image.mode in ("RGBA", "LA", "PA") or (image.mode == "P" and "transparency" in image.info):
        rgba = image.convert("RGBA")
        paper = Image.new("RGBA", rgba.size, (WHITE, WHITE, WHITE, 255))
        return Image.alpha_composite(paper, rgba).convert("L")
    return image.convert("L")


def pad_square(image: Image.Image, fill: int = WHITE) -> Image.Image:
    """Centre ``image`` on a square canvas of side ``max(width, height)`` filled with ``fill``."""
    w, h = image.size
    if w == h:
        return image
    side = max(w, h)
    canvas = Image.new(image.mode, (side, side), fill)
    canvas.paste(image, ((side - w) // 2, (side - h) // 2))
    return canvas


def rotate(image: Image.Image, angle: float, fill: int = WHITE) -> Image.Image:
    """Rotate counter-clockwise by ``angle`` degrees about the centre, same size, corners filled white."""
    if angle == 0:
        return image
    return image.rotate(angle, resample=Image.Resampling.BILINEAR, expand=False, fillcolor=fill)


def adjust_thickness(image: Image.Image, radius: int) -> Image.Image:
    """Thicken (``radius`` > 0: min filter, dark ink spreads) or thin (``radius`` < 0: max filter,
    white paper spreads) the lines of a grayscale drawing with a ``2|radius|+1`` square filter."""
    if radius == 0:
        return image
    size = 2 * abs(radius) + 1
    return image.filter(ImageFilter.MinFilter(size) if radius > 0 else ImageFilter.MaxFilter(size))


def ink_ratio(image: Image.Image | np.ndarray, threshold: int = INK_THRESHOLD) -> float:
    """The fraction of pixels darker than ``threshold`` (0–255) in a grayscale image."""
    pixels = np.asarray(to_gray(image) if isinstance(image, Image.Image) else image)
    return float((pixels < threshold).mean())


def to_tensor(image: Image.Image, mean: Sequence[float], std: Sequence[float]) -> torch.Tensor:
    """Grayscale image -> normalised RGB tensor ``[3, H, W]``: gray copied to 3 channels, scaled to
    [0, 1], then ``(x - mean[c]) / std[c]``."""
    gray = torch.from_numpy(np.array(to_gray(image), dtype=np.uint8, copy=True)).float().div_(255.0)
    rgb = gray.unsqueeze(0).expand(3, -1, -1)
    m = torch.tensor(mean, dtype=torch.float32).view(3, 1, 1)
    s = torch.tensor(std, dtype=torch.float32).view(3, 1, 1)
    return (rgb - m) / s


def _check_norm(mean: Sequence[float], std: Sequence[float]) -> tuple[tuple[float, ...], tuple[float, ...]]:
    mean, std = tuple(float(x) for x in mean), tuple(float(x) for x in std)
    if len(mean) != 3 or len(std) != 3 or min(std) <= 0:
        raise ValueError(f"mean and std need 3 channels each and std > 0, got {mean} and {std}")
    return mean, std


class DrawingEvalTransform:
    """Grayscale -> white square -> ``size x size`` (bicubic) -> normalised ``[3, size, size]``."""

    def __init__(self, size: int, mean: Sequence[float], std: Sequence[float]):
        if size < 1:
            raise ValueError(f"size must be positive, got {size}")
        self.size = int(size)
        self.mean, self.std = _check_norm(mean, std)

    def prepare(self, image: Image.Image) -> Image.Image:
        """The resized grayscale image before normalisation."""
        square = pad_square(to_gray(image))
        return square.resize((self.size, self.size), Image.Resampling.BICUBIC)

    def __call__(self, image: Image.Image) -> torch.Tensor:
        return to_tensor(self.prepare(image), self.mean, self.std)

    def __repr__(self) -> str:
        return f"DrawingEvalTransform(size={self.size}, mean={self.mean}, std={self.std})"


class DrawingTrainTransform:
    """Random crop -> resize -> rotate (white fill) -> thickness jitter -> optional flip -> normalise.

    ``__call__(image, generator=None)`` draws :class:`AugmentParams` with :func:`sample_params` and
    applies them with :meth:`apply`; output ``[3, size, size]``.
    """

    def __init__(
        self,
        size: int,
        mean: Sequence[float],
        std: Sequence[float],
        augment: AugmentConfig | None = None,
    ):
        if size < 1:
            raise ValueError(f"size must be positive, got {size}")
        self.size = int(size)
        self.mean, self.std = _check_norm(mean, std)
        self.augment = augment or AugmentConfig()

    def apply_image(self, image: Image.Image, params: AugmentParams) -> Image.Image:
        """The augmented grayscale image (``size x size``) before normalisation."""
        square = pad_square(to_gray(image))
        side = square.size[0]
        left, top = round(params.left * side), round(params.top * side)
        right = min(side, max(left + 1, round((params.left + params.width) * side)))
        bottom = min(side, max(top + 1, round((params.top + params.height) * side)))
        out = square.crop((left, top, right, bottom))
        out = out.resize((self.size, self.size), Image.Resampling.BICUBIC)
        out = rotate(out, params.angle)
        out = adjust_thickness(out, params.thickness)
        if params.flip:
            out = out.transpose(Image.Transpose.FLIP_LEFT_RIGHT)
        return out

    def apply(self, image: Image.Image, params: AugmentParams) -> torch.Tensor:
        return to_tensor(self.apply_image(image, params), self.mean, self.std)

    def __call__(self, image: Image.Image, generator: torch.Generator | None = None) -> torch.Tensor:
        return self.apply(image, sample_params(self.augment, generator))

    def __repr__(self) -> str:
        return f"DrawingTrainTransform(size={self.size}, mean={self.mean}, std={self.std}, augment={self.augment})"


SCAN_CHOICES = ("binarize", "weight", "margin", "label", "header")


@dataclass(frozen=True)
class ScanConfig:
    """Augmentations that make a clean generated drawing look like a scanned USPTO drawing page, each
    applied with its own probability: ``weight`` thickens or thins the lines (radius 1 at the source
    resolution), ``label`` writes a "FIG. n" label under the drawing, ``header`` a sheet header line
    above it ("U.S. Patent  Jan. 2, 2007  Sheet 1 of 5  US D534,331 S"), ``margin`` adds a white page
    margin (up to 15% per side), and ``binarize`` thresholds to 1 bit (as the CCITT G4 pages are)."""

    binarize: float = 0.0
    weight: float = 0.0
    margin: float = 0.0
    label: float = 0.0
    header: float = 0.0

    @classmethod
    def of(cls, choices: Sequence[str], prob: float = 0.5) -> ScanConfig:
        """Each named choice (see ``SCAN_CHOICES``) at probability ``prob``; ``"all"`` names every one."""
        names = list(SCAN_CHOICES) if "all" in choices else list(choices)
        unknown = sorted(set(names) - set(SCAN_CHOICES))
        if unknown:
            raise ValueError(f"unknown scan augmentation(s) {unknown}; choose from {SCAN_CHOICES} or 'all'")
        return cls(**{n: prob for n in names})

    @property
    def active(self) -> bool:
        return any(getattr(self, n) > 0 for n in SCAN_CHOICES)


def _text_font(height: int):
    from PIL import ImageFont

    return ImageFont.load_default(size=max(8, height))


def scan_like(
    image: Image.Image, config: ScanConfig, generator: torch.Generator | None = None
) -> Image.Image:
    """``image`` (grayscale drawing) with the :class:`ScanConfig` augmentations drawn at random."""
    from PIL import ImageDraw

    def coin(p: float) -> bool:
        return p > 0 and float(torch.rand((), generator=generator)) < p

    img = to_gray(image)
    if coin(config.weight):
        img = adjust_thickness(img, 1 if float(torch.rand((), generator=generator)) < 0.5 else -1)
    w, h = img.size
    top = bottom = 0
    font_h = max(8, round(0.05 * max(w, h)))
    label = coin(config.label)
    header = coin(config.header)
    if label:
        bottom = 2 * font_h
    if header:
        top = 2 * font_h
    if label or header:
        canvas = Image.new("L", (w, h + top + bottom), WHITE)
        canvas.paste(img, (0, top))
        draw = ImageDraw.Draw(canvas)
        if label:
            n = int(torch.randint(1, 10, (), generator=generator))
            text = f"FIG. {n}"
            width = draw.textlength(text, font=_text_font(font_h))
            draw.text(((w - width) / 2, h + top + font_h // 2), text, fill=0, font=_text_font(font_h))
        if header:
            sheet = int(torch.randint(1, 8, (), generator=generator))
            text = f"U.S. Patent    Jan. 2, 2007    Sheet {sheet} of 8    US D534,331 S"
            draw.text((font_h // 2, font_h // 2), text, fill=0, font=_text_font(max(8, font_h * 2 // 3)))
        img = canvas
    if coin(config.margin):
        w, h = img.size
        pads = [round(_uniform(0.0, 0.15, generator) * side) for side in (w, h, w, h)]
        canvas = Image.new("L", (w + pads[0] + pads[2], h + pads[1] + pads[3]), WHITE)
        canvas.paste(img, (pads[0], pads[1]))
        img = canvas
    if coin(config.binarize):
        threshold = round(_uniform(110.0, 200.0, generator))
        img = img.point(lambda v: 0 if v < threshold else WHITE)
    return img


def make_transforms(
    size: int,
    mean: Sequence[float],
    std: Sequence[float],
    augment: AugmentConfig | None = None,
) -> tuple[DrawingTrainTransform, DrawingEvalTransform]:
    """The (train, eval) pair for an encoder with input ``size`` and channel ``mean``/``std``."""
    return DrawingTrainTransform(size, mean, std, augment), DrawingEvalTransform(size, mean, std)


def load_tensor(
    source: str | os.PathLike | bytes,
    transform: DrawingEvalTransform | DrawingTrainTransform,
    **load_kwargs,
) -> torch.Tensor:
    """Read a drawing with :func:`patent_demo.imageio.load_drawing` (cropped to ink, padded square)
    and apply ``transform``: ``[3, S, S]``. Unreadable files raise ``DrawingError``."""
    from patent_demo.imageio import load_drawing

    return transform(load_drawing(source, **load_kwargs))
