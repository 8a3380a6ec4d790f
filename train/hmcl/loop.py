"""The one HMCL training step loop and what every feed of ``train.hmcl`` shares.

* :class:`TrainModule`: encoder + losses in one module, so DDP synchronises every trainable parameter
  (the text term's logit scale included); ``forward`` returns the dict of ``*_loss`` terms.
* :func:`fit`: the step loop (forward, the summed loss, finiteness check, backward, gradient clip,
  optimiser and scheduler step, logging), whatever the batches hold: images end to end
  (``train.hmcl``), cached trunk outputs (``train.hmcl.features``) or pooled trunk features under a
  linear head (``train.hmcl.heads``).
* :func:`lr_factor` / :func:`make_optimizer`: warm-up + cosine schedule and AdamW without decay on
  biases, norms and the logit scale.
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import math
import os
import sys
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import torch
from torch import nn

from patent_demo.hierarchy import HMCLWeights
from patent_demo.losses import ContrastiveLoss, HMCLLoss, ImageTextLoss

log = logging.getLogger("train.hmcl")


def lr_factor(step: int, total: int, warmup: int, min_ratio: float) -> float:
    """Linear warm-up over ``warmup`` steps, then cosine decay from 1 to ``min_ratio`` at ``total``."""
    if step < warmup:
        return (step + 1) / warmup
    progress = min(1.0, (step - warmup) / max(1, total - warmup))
    return min_ratio + (1.0 - min_ratio) * 0.5 * (1.0 + math.cos(math.pi * progress))


def make_optimizer(module: nn.Module, lr: float, weight_decay: float) -> torch.optim.AdamW:
    """AdamW; decay on matrices and convolution kernels only (not on biases, norms or the logit scale)."""
    decay, no_decay = [], []
    for _, p in module.named_parameters():
        if p.requires_grad:
            (decay if p.ndim >= 2 else no_decay).append(p)
    groups = [{"params": decay, "weight_decay": weight_decay}, {"params": no_decay, "weight_decay": 0.0}]
    return torch.optim.AdamW([g for g in groups if g["params"]], lr=lr)


def cosine_schedule(optimizer, total: int, args) -> torch.optim.lr_scheduler.LambdaLR:
    """The warm-up + cosine :func:`lr_factor` schedule of ``args`` (``warmup_steps``, ``min_lr_ratio``)."""
    return torch.optim.lr_scheduler.LambdaLR(
        optimizer, lambda s: lr_factor(s, total, args.warmup_steps, args.min_lr_ratio)
    )


def add_loss_arguments(p: argparse.ArgumentParser) -> None:
    """The ``train.hmcl`` options of :class:`TrainModule`'s losses."""
    a = p.add_argument
    a(
        "--loss",
        choices=("hmcl", "cl"),
        default="hmcl",
        help="hmcl (Eqs. 2-4) or plain contrastive cl (Eq. 1)",
    )
    a("--text-weight", type=float, default=0.2, help="lambda of the image-text term (Eq. 5); 0 disables it")
    a("--tau", type=float, default=0.1, help="temperature of the contrastive losses")
    a(
        "--weights",
        type=float,
        nargs=3,
        default=list(HMCLWeights().as_tuple()),
        metavar=("S_P", "S_S", "S_M"),
        help="HMCL relevance of same patent, same subclass, same main class (Eq. 2)",
    )


def add_optimiser_arguments(p: argparse.ArgumentParser) -> None:
    """The ``train.hmcl`` options of :func:`make_optimizer` and :func:`cosine_schedule`."""
    a = p.add_argument
    a("--lr", type=float, default=3e-4, help="peak learning rate of AdamW")
    a("--weight-decay", type=float, default=0.05, help="AdamW weight decay (matrices and convolutions only)")
    a(
        "--warmup-steps",
        type=int,
        default=None,
        help="linear warm-up steps before the cosine decay (default 30; cached feed 20)",
    )
    a("--min-lr-ratio", type=float, default=0.05, help="final learning rate as a fraction of --lr")
    a("--grad-clip", type=float, default=1.0, help="clip the gradient norm to this value (0: off)")


@contextlib.contextmanager
def distributed(spec: str) -> Iterator[tuple[torch.device, int, int]]:
    """``(device, rank, world size)`` of this process (``torchrun`` sets ``WORLD_SIZE``, ``RANK`` and
    ``LOCAL_RANK``; ``spec``: auto, cpu, cuda or cuda:N); with several processes the process group lives
    for the block."""
    world = int(os.environ.get("WORLD_SIZE", "1"))
    rank = int(os.environ.get("RANK", "0"))
    local_rank = int(os.environ.get("LOCAL_RANK", "0"))
    if spec == "auto":
        spec = "cuda" if torch.cuda.is_available() else "cpu"
    if spec == "cuda":
        spec = f"cuda:{local_rank}"
    device = torch.device(spec)
    if world > 1:
        import torch.distributed as dist

        dist.init_process_group("nccl" if device.type == "cuda" else "gloo")
    if device.type == "cuda":
        torch.cuda.set_device(device)
    try:
        yield device, rank, world
    finally:
        if world > 1:
            dist.destroy_process_group()


def setup_logging(run_dir: Path | None) -> list[logging.Handler]:
    """Progress to stdout and (given a run directory) ``train.log``; returns the handlers to close."""
    log.setLevel(logging.INFO)
    log.propagate = False
    fmt = logging.Formatter("%(asctime)s %(message)s", "%H:%M:%S")
    handlers: list[logging.Handler] = [logging.StreamHandler(sys.stdout)]
    if run_dir is not None:
        run_dir.mkdir(parents=True, exist_ok=True)
        handlers.append(logging.FileHandler(run_dir / "train.log", encoding="utf-8"))
    for h in handlers:
        h.setFormatter(fmt)
        log.addHandler(h)
    return handlers


def close_logging(handlers: list[logging.Handler]) -> None:
    for h in handlers:
        log.removeHandler(h)
        h.close()


class TrainModule(nn.Module):
    """Encoder + losses in one module so DDP synchronises every trainable parameter (the text term's
    logit scale included). ``forward`` returns the dict of ``*_loss`` terms."""

    def __init__(
        self,
        model: nn.Module,
        loss: str,
        tau: float,
        weights: Sequence[float],
        text_weight: float,
        text_proj: nn.Module | None,
    ) -> None:
        super().__init__()
        self.model = model
        self.loss = loss
        self.cl = ContrastiveLoss(tau=tau)
        s_p, s_s, s_m = weights
        self.hmcl = HMCLLoss(
            tau=tau, s_p=s_p, s_s=s_s, s_m=s_m, text_weight=0.0, learn_text_logit_scale=False
        )
        self.text_proj = text_proj
        self.text = ImageTextLoss(weight=text_weight) if text_weight > 0 else None

    def forward(
        self,
        images: torch.Tensor,
        patent_ids: torch.Tensor,
        subclass_ids: torch.Tensor,
        main_ids: torch.Tensor,
        text_features: torch.Tensor | None = None,
        h: torch.Tensor | None = None,
        negative_mask: torch.Tensor | None = None,
        text_mask: torch.Tensor | None = None,
    ) -> dict[str, torch.Tensor]:
        """``images [B, 3, S, S]`` (or cached trunk outputs), ids ``[B]``; an explicit ``h [B, B]`` (Eq. 2
        weights with label overrides) and ``negative_mask [B, B]`` replace the ids' weights; ``text_mask
        [B]`` selects the items that have a text for the image-text term (Eq. 5)."""
        z = self.model.encode_image(images).float()  # [B, D]
        if h is not None:
            out = self.hmcl(z, h=h, negative_mask=negative_mask)
        elif self.loss == "cl":
            out = self.cl(z, patent_ids)
        else:
            out = self.hmcl(z, patent_ids, subclass_ids, main_ids)
        if self.text is not None and text_features is not None:
            t = self.text_proj(text_features).float()  # [B, D]
            if text_mask is not None:
                z, t, patent_ids = z[text_mask], t[text_mask], patent_ids[text_mask]
            out.update(self.text(z, t, patent_ids))
        return out


@dataclass
class Step:
    """One batch of a feed: the module's positional and keyword inputs and how many items it holds."""

    inputs: tuple
    kwargs: dict = field(default_factory=dict)
    items: int = 0


@dataclass
class Fitted:
    """What :func:`fit` did: the last step reached, the items seen, the seconds spent and the last losses."""

    step: int
    seen: int
    seconds: float
    last: dict[str, float]


def fit(
    module: nn.Module,
    batches: Iterable[Step],
    optimizer: torch.optim.Optimizer,
    scheduler=None,
    *,
    total: int,
    start: int = 0,
    grad_clip: float = 0.0,
    log_every: int = 10,
    forward: nn.Module | None = None,
    autocast: str | None = None,
    after_step: Callable[[int], bool] | None = None,
) -> Fitted:
    """Run the steps ``start .. total - 1`` over ``batches``: ``losses = forward(*inputs, **kwargs)`` (the
    DDP wrapper when given, else ``module``), their sum backpropagated, the gradient norm of ``module``'s
    trainable parameters clipped to ``grad_clip`` (0: off), then the optimiser and scheduler step.
    ``autocast`` is a CUDA device type to run the forward in bf16 (None: full precision). ``after_step(step)``
    returning True ends the loop early (time-limited jobs)."""
    forward = forward if forward is not None else module
    trainable = [p for p in module.parameters() if p.requires_grad]
    step, seen, t0, last = start, 0, time.time(), {}
    for batch in batches:
        ctx = torch.autocast(autocast, dtype=torch.bfloat16) if autocast else contextlib.nullcontext()
        with ctx:
            losses = forward(*batch.inputs, **batch.kwargs)
        loss = sum(losses.values())
        if not torch.isfinite(loss):
            raise FloatingPointError(
                f"loss is {loss.item()} at step {step}: { ({k: v.item() for k, v in losses.items()}) }"
            )
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        if grad_clip > 0:
            torch.nn.utils.clip_grad_norm_(trainable, grad_clip)
        optimizer.step()
        if scheduler is not None:
            scheduler.step()
        step += 1
        seen += batch.items
        last = {k: float(v.detach()) for k, v in losses.items()} | {"loss": float(loss.detach())}
        if step % log_every == 0 or step == total:
            elapsed = max(time.time() - t0, 1e-9)
            terms = " ".join(f"{k}={v:.4f}" for k, v in last.items())
            lr = f" lr={scheduler.get_last_lr()[0]:.2e}" if scheduler is not None else ""
            log.info("step %d/%d %s%s %.1f items/s, %.0f s", step, total, terms, lr, seen / elapsed, elapsed)
        if after_step is not None and after_step(step):
            break
        if step >= total:
            break
    return Fitted(step, seen, time.time() - t0, last)
