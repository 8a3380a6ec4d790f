"""The one DSSDNet training step loop of ``python -m train.dssdnet`` (``train/dssdnet/main.py``).

* :func:`fit`: the epochs (a fresh ``DistributedSampler`` order of the epoch's pairs, the steps: forward,
  the summed loss terms, backward, gradient clip, optimiser and scheduler step, logging), then per
  epoch the validation loss (or ``1 - Pearson`` with ``--select-on pearson``), the best weights kept,
  the resumable state and ``metrics.json`` written (rank 0), and the stop checks: early stopping,
  ``--max-steps``, ``--time-budget-min``.
* :func:`batch_losses` / :func:`validation_loss`: the weighted loss terms of one batch, the mean loss of
  the validation pairs (through the frozen-layer feature cache when there is one).
* :func:`lr_schedule`: ``--schedule`` constant, or linear warm-up and linear decay.
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import torch

from patent_demo import checkpoint
from patent_demo.losses.dssdnet import DSSDNetLoss
from patent_demo.text.reranker import Reranker
from train.dssdnet import data
from train.dssdnet.data import FeatureCache

log = logging.getLogger("train.dssdnet")


def lr_schedule(optimizer, args, pairs_per_epoch: int, world: int) -> torch.optim.lr_scheduler.LambdaLR:
    """``--schedule``: constant, or linear warm-up over ``--warmup`` of the run's steps and linear decay to 0."""
    steps_per_epoch = max(1, math.ceil(pairs_per_epoch / max(1, world) / args.batch_size))
    total = (
        steps_per_epoch * args.epochs
        if args.max_steps is None
        else min(args.max_steps, steps_per_epoch * args.epochs)
    )
    warm = max(1, int(round(args.warmup * total)))
    if args.schedule == "constant":
        return torch.optim.lr_scheduler.LambdaLR(optimizer, lambda step: 1.0)
    return torch.optim.lr_scheduler.LambdaLR(
        optimizer, lambda step: min((step + 1) / warm, max(0.0, (total - step) / max(1, total - warm)))
    )


# -- steps -----------------------------------------------------------------------------------------
def _autocast(device: torch.device, precision: str):
    if precision == "bf16" or (precision == "auto" and device.type == "cuda"):
        return torch.autocast(device.type, dtype=torch.bfloat16)
    return torch.autocast(device.type, enabled=False)


def batch_losses(
    model,
    loss_fn: DSSDNetLoss,
    pairs: list[data.Pair],
    device,
    precision: str,
    cache: FeatureCache | None = None,
) -> dict[str, torch.Tensor]:
    """The weighted loss terms of one batch of pairs (queries, docs -> ``[B, L]`` tokens -> outputs;
    with a feature cache, the cache's ``e = H_CLS`` [B, H] -> the heads). ``t`` is NaN where the data
    has no domain label: the heads use their prediction there and ``L_t`` leaves the pair out."""
    core = model.module if hasattr(model, "module") else model
    y = torch.tensor([p.y for p in pairs], device=device)
    t = torch.tensor([p.t for p in pairs], device=device)
    with _autocast(device, precision):
        if cache is not None:
            out = core.heads(cache.encode([p.query for p in pairs], [p.doc for p in pairs]), t)
        else:
            out = model(**core.tokenize([p.query for p in pairs], [p.doc for p in pairs]), t=t)
    out = {k: v.float() for k, v in out.items()}
    return loss_fn(out, y, t)


@torch.no_grad()
def validation_loss(
    model,
    loss_fn,
    pairs: list[data.Pair],
    batch_size: int,
    device,
    precision: str,
    cache: FeatureCache | None = None,
) -> float:
    """Mean total loss over ``pairs`` (batches of ``batch_size``, the training batch size, weighted by
    batch length; the pairs come shuffled, so batches mix labels as in training)."""
    if not pairs:
        return float("nan")
    was = model.training
    model.eval()
    total = 0.0
    for i in range(0, len(pairs), batch_size):
        chunk = pairs[i : i + batch_size]
        total += float(sum(batch_losses(model, loss_fn, chunk, device, precision, cache).values())) * len(
            chunk
        )
    model.train(was)
    return total / len(pairs)


# -- the epoch loop --------------------------------------------------------------------------------
@dataclass
class Training:
    """What :func:`fit` trains: the model (``train_model`` its DDP wrapper under several processes, else
    the model), the loss, the optimiser and schedule over ``params``, the feature cache (None: off) and
    ``scorer`` (the model, or the model reading the cache) for ``--select-on pearson``, the pairs of each
    epoch and of validation, the run folder and the process's place (rank, world size, device)."""

    model: Reranker
    train_model: torch.nn.Module
    loss_fn: DSSDNetLoss
    optimizer: torch.optim.Optimizer
    scheduler: torch.optim.lr_scheduler.LRScheduler
    params: list[torch.nn.Parameter]
    cache: FeatureCache | None
    scorer: object
    eval_task: object
    epoch_pairs: Callable[[int], list[data.Pair]]
    val_pairs: list[data.Pair]
    out: Path
    device: torch.device
    rank: int = 0
    world: int = 1


@dataclass
class Progress:
    """Where training stands: at the start of :func:`fit` (0, or the resumed state), and what it returns."""

    epoch: int = 0
    step: int = 0
    best_val: float = math.inf
    bad_epochs: int = 0
    history: list[dict] | None = None
    best_weights: dict[str, torch.Tensor] | None = None


@dataclass
class FitResult:
    """What :func:`fit` did: the last step, the best selection value and its weights, one ``history`` row
    per epoch, why it stopped (``epochs``, ``early stopping``, ``max steps``, ``time budget``), the
    wall-clock and CPU seconds of the loop and the last epoch index reached."""

    step: int
    best_val: float
    best_weights: dict[str, torch.Tensor]
    history: list[dict]
    stop_reason: str
    train_seconds: float
    train_cpu_seconds: float
    epoch: int


def fit(run: Training, args, start: Progress, metrics: dict, started: float) -> FitResult:
    """Train from ``start`` (epoch, step, best value, epochs without improvement, history, best weights)
    to ``args.epochs`` or a stop check. Rank 0 writes the resumable state (``checkpoint.save_train_state``)
    and ``metrics.json`` (``metrics`` with the history) after every epoch; ``started`` is the command's
    start (``time.perf_counter``), for the per-epoch log line."""
    model, cache, rank = run.model, run.cache, run.rank
    optimizer, scheduler, loss_fn = run.optimizer, run.scheduler, run.loss_fn
    step, best_val, bad_epochs = start.step, start.best_val, start.bad_epochs
    history = start.history if start.history is not None else []
    trainable = {n for n, p in model.named_parameters() if p.requires_grad}
    best_weights = start.best_weights
    if best_weights is None:
        best_weights = {n: p.detach().clone() for n, p in model.named_parameters() if n in trainable}
    stop_reason = "epochs"
    epoch = start.epoch
    train_started, train_cpu = time.perf_counter(), time.process_time()
    for epoch in range(start.epoch, args.epochs):
        pairs = run.epoch_pairs(epoch)
        sampler = torch.utils.data.DistributedSampler(
            range(len(pairs)), num_replicas=run.world, rank=rank, shuffle=True, seed=args.seed
        )
        sampler.set_epoch(epoch)
        order = list(sampler)
        run.train_model.train()
        running: dict[str, float] = {}
        for i in range(0, len(order), args.batch_size):
            batch = [pairs[j] for j in order[i : i + args.batch_size]]
            losses = batch_losses(run.train_model, loss_fn, batch, run.device, args.precision, cache)
            total = sum(losses.values())
            optimizer.zero_grad(set_to_none=True)
            total.backward()
            if args.grad_clip > 0:
                torch.nn.utils.clip_grad_norm_(run.params, args.grad_clip)
            optimizer.step()
            scheduler.step()
            step += 1
            for k, v in losses.items():
                running[k] = running.get(k, 0.0) + float(v.detach())
            if step % args.log_every == 0:
                log.info(
                    "epoch %d step %d loss %.4f %s",
                    epoch,
                    step,
                    float(total.detach()),
                    " ".join(f"{k}={float(v.detach()):.4f}" for k, v in losses.items()),
                )
            if args.max_steps is not None and step >= args.max_steps:
                break
        val_loss = validation_loss(
            model, loss_fn, run.val_pairs, args.batch_size, run.device, args.precision, cache
        )
        extra = {}
        if args.select_on == "pearson":
            model.eval()
            extra["val_pearson"] = data.evaluate(run.scorer, run.eval_task, args, "val")[0]["pearson"]
            val = 1.0 - extra["val_pearson"]  # lower is better, like the loss
        else:
            val = val_loss
        if cache is not None and rank == 0:
            cache.save()
        n_batches = max(1, math.ceil(len(order) / args.batch_size))
        history.append(
            {
                "epoch": epoch + 1,
                "step": step,
                "val_loss": round(val_loss, 6),
                **{k: round(v, 6) for k, v in extra.items()},
                **{k: round(v / n_batches, 6) for k, v in running.items()},
            }
        )
        improved = not math.isnan(val) and val < best_val
        if improved or math.isnan(val):
            best_val = val if improved else best_val
            bad_epochs = 0
            best_weights = {n: p.detach().clone() for n, p in model.named_parameters() if n in trainable}
        else:
            bad_epochs += 1
        log.info(
            "epoch %d: val loss %.4f%s (selection %.4f, best %.4f, %d epoch(s) without improvement), %.0f s",
            epoch + 1,
            val_loss,
            "".join(f", {k} {v:.4f}" for k, v in extra.items()),
            val,
            best_val,
            bad_epochs,
            time.perf_counter() - started,
        )
        if rank == 0:
            current = {n: p.detach().cpu().clone() for n, p in model.named_parameters() if n in trainable}
            checkpoint.save_train_state(
                run.out,
                {
                    "model": current,
                    "best": {k: v.cpu() for k, v in best_weights.items()},
                    "optimizer": optimizer.state_dict(),
                    "scheduler": scheduler.state_dict(),
                    "torch_rng": torch.get_rng_state(),
                    "epoch": epoch + 1,
                    "step": step,
                    "best_val": best_val,
                    "bad_epochs": bad_epochs,
                },
            )
            checkpoint.write_json(run.out / checkpoint.METRICS, {**metrics, "history": history})
        if bad_epochs >= args.patience:
            stop_reason = "early stopping"
            break
        if args.max_steps is not None and step >= args.max_steps:
            stop_reason = "max steps"
            break
        if (
            args.time_budget_min is not None
            and time.perf_counter() - train_started > 60 * args.time_budget_min
        ):
            stop_reason = "time budget"
            break
    train_seconds, train_cpu_seconds = time.perf_counter() - train_started, time.process_time() - train_cpu
    return FitResult(
        step, best_val, best_weights, history, stop_reason, train_seconds, train_cpu_seconds, epoch
    )
