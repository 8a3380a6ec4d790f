"""Fine-tuned drawing encoders: which parameters train and how a delta checkpoint is loaded.

What the app and the training scripts both need about an HMCL (or CL) fine-tuned encoder lives here:

* :func:`vision_blocks` / :func:`set_trainable`: the vision tower as an ordered list of blocks; the last
  ``N`` blocks plus the projections train, the rest stays frozen (so CPU training is fast and the
  checkpoint small).
* :func:`load_encoder` / :func:`load_hmcl_checkpoint`: rebuild the encoder from its package weights and
  apply a checkpoint that stores only the parameters training changed (``patent_demo.checkpoint.delta``).

Embedding lives in ``patent_demo.drawing.embed``, the evaluation protocol in ``patent_demo.drawing.evaluate``.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import torch

from patent_demo.checkpoint import CheckpointError, apply_weights, load_config, load_weights

KIND = "hmcl"


# ----------------------------------------------------------------------------------------------
# which parameters train


def vision_blocks(model: torch.nn.Module) -> list[list[str]]:
    """The vision tower's parameters as ordered blocks (input side first), names as in ``model``.

    A timm trunk is grouped with timm's own ``group_matcher`` (stem, then one group per block, the
    head convolution last); an open_clip ViT by its residual blocks. The stem is group 0; the
    projection head is not part of any block (see :func:`projection_parameters`).
    """
    visual = model.visual
    trunk = getattr(visual, "trunk", None)
    if trunk is not None and hasattr(trunk, "group_matcher"):
        from timm.models import group_parameters

        groups = group_parameters(trunk, trunk.group_matcher(coarse=False))
        return [[f"visual.trunk.{n}" for n in groups[i]] for i in sorted(groups)]
    resblocks = getattr(getattr(visual, "transformer", None), "resblocks", None)
    if resblocks is None:
        raise ValueError(f"cannot split the vision tower {type(visual).__name__} into blocks")
    in_blocks = {
        f"visual.transformer.resblocks.{i}.{n}"
        for i, b in enumerate(resblocks)
        for n, _ in b.named_parameters()
    }
    stem = [
        n
        for n, _ in model.named_parameters()
        if n.startswith("visual.")
        and n not in in_blocks
        and not n.startswith(("visual.ln_post", "visual.proj"))
    ]
    blocks = [
        [f"visual.transformer.resblocks.{i}.{n}" for n, _ in b.named_parameters()]
        for i, b in enumerate(resblocks)
    ]
    post = [n for n, _ in model.named_parameters() if n.startswith("visual.ln_post")]
    return [stem, *blocks, *([post] if post else [])]


def projection_parameters(model: torch.nn.Module, text: bool = True) -> list[str]:
    """Names of the projection parameters: the vision head (every vision parameter outside
    :func:`vision_blocks`) and, with ``text``, the text projection (``text.proj`` or ``text_projection``)."""
    in_blocks = {n for block in vision_blocks(model) for n in block}
    names = [n for n, _ in model.named_parameters() if n.startswith("visual.") and n not in in_blocks]
    if text:
        names += [
            n for n, _ in model.named_parameters() if n.startswith("text.proj") or n == "text_projection"
        ]
    return names


def set_trainable(model: torch.nn.Module, train_blocks: int, text_projection: bool = True) -> list[str]:
    """Freeze ``model`` except the last ``train_blocks`` vision blocks and the projections.

    ``train_blocks = 0`` trains only the projections; a value above the number of blocks trains the whole
    vision tower. The text tower (other than its projection) and ``logit_scale`` stay frozen. Returns the
    names of the trainable parameters, in ``named_parameters`` order.
    """
    if train_blocks < 0:
        raise ValueError(f"train_blocks must be >= 0, got {train_blocks}")
    blocks = vision_blocks(model)
    chosen = {n for block in blocks[len(blocks) - min(train_blocks, len(blocks)) :] for n in block}
    chosen |= set(projection_parameters(model, text=text_projection))
    names = []
    for name, p in model.named_parameters():
        p.requires_grad_(name in chosen)
        if name in chosen:
            names.append(name)
    return names


# ----------------------------------------------------------------------------------------------
# checkpoints


def load_encoder(
    name_or_checkpoint: str | os.PathLike, device: str | torch.device = "cpu", image_size: int | None = None
) -> tuple[torch.nn.Module, Any, dict]:
    """A checkpoint directory (see :func:`load_hmcl_checkpoint`) or an encoder name with its pretrained
    weights (zero-shot): ``(model, eval_transform, config)`` with the model in eval mode."""
    path = Path(name_or_checkpoint)
    if path.is_dir():
        return load_hmcl_checkpoint(path, device=device)
    from patent_demo.drawing.encoders import create_encoder

    name = os.fspath(name_or_checkpoint)
    model, _, eval_tf = create_encoder(name, device=device, image_size=image_size)
    config = {"kind": "zero-shot", "model": {"name": name, "image_size": eval_tf.size}, "base": "default"}
    return model, eval_tf, config


def load_hmcl_checkpoint(
    directory: str | os.PathLike, device: str | torch.device = "cpu"
) -> tuple[torch.nn.Module, Any, dict]:
    """Rebuild a fine-tuned drawing encoder: ``(model, eval_transform, config)``.

    The encoder named in ``config["model"]["name"]`` is created with its base weights
    (``config["base"]``, normally the package or hub default) at the training image size, then the
    checkpoint's parameters (only those training changed) are applied with
    ``apply_weights(..., partial=True)``. Unknown or mis-shaped parameters raise ``CheckpointError``.
    ``model.trunk_mix`` (a weight in [0, 1]) wraps the head in ``encoders.TrunkMixHead``: the embedding is
    then the trunk's features beside the head's, with that weight.
    """
    from patent_demo.drawing.encoders import create_encoder

    directory = Path(directory)
    config = load_config(directory)
    if config.get("kind") != KIND:
        raise CheckpointError(
            f"{directory} is a {config.get('kind')!r} checkpoint, not a drawing encoder ({KIND!r})"
        )
    model_cfg = config.get("model") or {}
    if "name" not in model_cfg:
        raise CheckpointError(f"{directory}/config.json names no encoder (model.name)")
    weights = load_weights(directory)
    model, _, eval_tf = create_encoder(
        model_cfg["name"], pretrained=config.get("base", "default"), image_size=model_cfg.get("image_size")
    )
    apply_weights(model, weights, partial=bool(config.get("delta", True)))
    if model_cfg.get("trunk_mix") is not None:  # the head's output beside the trunk's, weighted
        from patent_demo.drawing.encoders import mix_trunk

        mix_trunk(model, float(model_cfg["trunk_mix"]))
    model.to(device).eval()
    return model, eval_tf, config
