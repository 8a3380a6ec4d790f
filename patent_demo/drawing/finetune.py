"""Fine-tuned drawing encoders: which parameters train and how a delta checkpoint is loaded.

What the app and the training scripts both need about an HMCL (or CL) fine-tuned encoder lives here:

* :func:`vision_blocks` / :func:`set_trainable`: the vision tower as an ordered list of blocks; the last
  ``N`` blocks plus the projections train, the rest stays frozen (so CPU training is fast and the
  checkpoint small).
* :class:`SplitTower`: the vision tower cut before its first trainable block, so the frozen part runs once
  per cached view; :func:`text_tower_features`: the frozen text tower's outputs and the trainable projection.
* :func:`load_encoder` / :func:`load_hmcl_checkpoint`: rebuild the encoder from its package weights and
  apply a checkpoint that stores only the parameters training changed (``patent_demo.checkpoint.delta``).

Embedding lives in ``patent_demo.drawing.embed``, the evaluation protocol in ``patent_demo.drawing.protocol``.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import torch
from torch import nn

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
# a tower cut for cached training, frozen text features


class SplitTower(nn.Module):
    """A timm EfficientNet/MobileNet-style vision tower (``model.visual.trunk``) cut before its last
    ``train_blocks`` blocks (:func:`vision_blocks` order): ``prefix(x)`` is the
    frozen part, ``suffix(f)`` the trainable part and the projection head. With ``train_blocks = 0`` only the
    projection trains and the cut falls after the pooling (``prefix`` gives the pooled trunk features).
    ``encode_image(f)`` runs the suffix, so the module stands in for the encoder in
    ``train.hmcl.loop.TrainModule``; ``suffix(prefix(x)) == model.encode_image(x)``."""

    def __init__(self, model: nn.Module, train_blocks: int) -> None:
        super().__init__()
        self.model = model
        trunk = model.visual.trunk
        if not hasattr(trunk, "blocks") or not hasattr(trunk, "conv_stem"):
            raise ValueError("feature caching needs a timm EfficientNet-style trunk (conv_stem, blocks)")
        self.blocks = [b for stage in trunk.blocks for b in stage]
        # vision_blocks: group 0 is the stem, then one group per block (the last also holds conv_head)
        self.cut = max(0, len(self.blocks) - train_blocks)
        self.pooled = train_blocks == 0
        self.cut_key: int | str = "pooled" if self.pooled else self.cut

    def _pool(self, x: torch.Tensor) -> torch.Tensor:
        t = self.model.visual.trunk
        return t.forward_head(t.bn2(t.conv_head(x)))

    @torch.no_grad()
    def prefix(self, x: torch.Tensor) -> torch.Tensor:
        t = self.model.visual.trunk
        x = t.bn1(t.conv_stem(x))
        return self.advance(x, 0)

    @torch.no_grad()
    def advance(self, f: torch.Tensor, from_cut: int) -> torch.Tensor:
        """Prefix outputs at this tower's cut from features cut earlier (before block ``from_cut``)."""
        for b in self.blocks[from_cut : self.cut]:
            f = b(f)
        return self._pool(f) if self.pooled else f

    def suffix(self, f: torch.Tensor) -> torch.Tensor:
        if not self.pooled:
            for b in self.blocks[self.cut :]:
                f = b(f)
            f = self._pool(f)
        return self.model.visual.head(f)

    def encode_image(self, f: torch.Tensor) -> torch.Tensor:
        return self.suffix(f)


@torch.no_grad()
def text_tower_features(model: nn.Module, tokenizer, texts: list[str], batch_size: int = 64):
    """Frozen text-tower outputs ``[N, H]`` and the trainable projection to apply to them.

    For a Hugging Face text tower the pooled transformer output is cached and ``model.text.proj`` (which
    trains) maps it to ``[N, D]``; for other towers the whole text embedding is cached and the projection
    is the identity (the tower is frozen). ``proj(features)`` equals ``model.encode_text`` before
    normalisation.
    """
    text = getattr(model, "text", None)
    device = next(model.parameters()).device
    hf = text is not None and all(hasattr(text, a) for a in ("transformer", "pooler", "proj", "config"))
    # texts in length order, each batch cut after its longest text: padding is masked anyway, so short
    # titles cost a few tokens instead of the full context length
    order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
    chunks = []
    for i in range(0, len(texts), batch_size):
        tokens = tokenizer([texts[j] for j in order[i : i + batch_size]]).to(device)
        if hf:
            mask = (tokens != text.config.pad_token_id).long()
            keep = max(1, int(mask.sum(dim=1).max()))
            tokens, mask = tokens[:, :keep], mask[:, :keep]
            out = text.transformer(input_ids=tokens, attention_mask=mask)
            chunks.append(text.pooler(out, mask).float())
        else:
            chunks.append(model.encode_text(tokens).float())
    features = torch.cat(chunks)
    inverse = torch.empty(len(order), dtype=torch.int64)
    inverse[torch.tensor(order, dtype=torch.int64)] = torch.arange(len(order))
    return features[inverse], (text.proj if hf else nn.Identity())


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
