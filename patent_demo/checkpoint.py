"""Checkpoints that describe themselves.

A checkpoint is a directory::

    ckpt/
      model.safetensors   parameters (all of them, or only those training changed: see ``delta``)
      config.json         {"kind": "hmcl"|"dssdnet", "model": {...architecture...}, "base": "...",
                           "delta": true|false, "train": {...arguments...}}
      metrics.json        evaluation before/after training
      command.txt         the exact command that produced it
      state.pt            optional: optimiser/scheduler/step for resuming (torch.save, loaded weights_only)

Every file is written to a temporary name and moved into place with ``os.replace``.
"""

from __future__ import annotations

import json
import os
import shlex
import sys
from collections.abc import Mapping
from pathlib import Path

import torch
from safetensors.torch import load_file, save_file

from patent_demo.atomic import atomic_json, atomic_text, atomic_write

WEIGHTS = "model.safetensors"
CONFIG = "config.json"
METRICS = "metrics.json"
COMMAND = "command.txt"
STATE = "state.pt"


class CheckpointError(ValueError):
    """A checkpoint directory that is missing a file or does not match the model it is loaded into."""


def write_json(path: str | os.PathLike, obj) -> None:
    atomic_json(path, obj, indent=2, sort_keys=True, default=str)


def write_text(path: str | os.PathLike, text: str) -> None:
    """Write ``text`` atomically (a temporary file moved into place)."""
    atomic_text(path, text)


def save_train_state(directory: str | os.PathLike, state: dict) -> None:
    """Write the resume state (optimiser, scheduler, step, RNG) atomically as ``state.pt``."""
    atomic_write(Path(directory) / STATE, lambda tmp: torch.save(state, tmp))


def read_json(path: str | os.PathLike) -> dict:
    path = Path(path)
    if not path.is_file():
        raise CheckpointError(f"{path} not found")
    return json.loads(path.read_text(encoding="utf-8"))


def delta(state: Mapping[str, torch.Tensor], base: Mapping[str, torch.Tensor], atol: float = 0.0) -> dict:
    """The entries of ``state`` that are new or differ from ``base`` (the pretrained weights).

    Storing only these keeps a fine-tuned checkpoint small: frozen towers are rebuilt from their package.
    """
    out = {}
    for name, tensor in state.items():
        ref = base.get(name)
        if (
            ref is None
            or ref.shape != tensor.shape
            or not torch.allclose(tensor.float(), ref.float(), atol=atol, rtol=0)
        ):
            out[name] = tensor
    return out


def save_checkpoint(
    directory: str | os.PathLike,
    state: Mapping[str, torch.Tensor],
    config: dict,
    metrics: dict | None = None,
    command: list[str] | None = None,
    train_state: dict | None = None,
) -> Path:
    """Write weights (safetensors), config, metrics and the command under ``directory``."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    tensors = {k: v.detach().to("cpu").contiguous() for k, v in state.items()}
    atomic_write(directory / WEIGHTS, lambda tmp: save_file(tensors, tmp))
    write_json(directory / CONFIG, config)
    if metrics is not None:
        write_json(directory / METRICS, metrics)
    argv = command if command is not None else sys.argv
    write_text(directory / COMMAND, shlex.join(argv) + "\n")
    if train_state is not None:
        save_train_state(directory, train_state)
    return directory


def load_weights(directory: str | os.PathLike) -> dict[str, torch.Tensor]:
    path = Path(directory) / WEIGHTS
    if not path.is_file():
        raise CheckpointError(f"{directory} is not a checkpoint: {WEIGHTS} not found")
    return load_file(str(path))


def load_config(directory: str | os.PathLike) -> dict:
    return read_json(Path(directory) / CONFIG)


def config_or_none(directory: str | os.PathLike | None) -> dict | None:
    """The ``config.json`` of a checkpoint directory, or None (no directory, missing or unreadable)."""
    if directory is None:
        return None
    try:
        return load_config(directory)
    except (OSError, ValueError):
        return None


def load_metrics(directory: str | os.PathLike) -> dict:
    path = Path(directory) / METRICS
    return read_json(path) if path.is_file() else {}


def load_train_state(directory: str | os.PathLike) -> dict | None:
    path = Path(directory) / STATE
    return torch.load(path, map_location="cpu", weights_only=True) if path.is_file() else None


def apply_weights(model: torch.nn.Module, weights: Mapping[str, torch.Tensor], partial: bool) -> None:
    """Load ``weights`` into ``model``; with ``partial`` the checkpoint may hold a subset (a delta).

    Unknown keys are always an error, so a checkpoint never loads silently into the wrong architecture.
    """
    own = model.state_dict()
    unknown = sorted(set(weights) - set(own))
    if unknown:
        raise CheckpointError(
            f"checkpoint has {len(unknown)} parameter(s) the model lacks, e.g. {unknown[0]!r}"
        )
    missing = sorted(set(own) - set(weights))
    if missing and not partial:
        raise CheckpointError(f"checkpoint lacks {len(missing)} parameter(s), e.g. {missing[0]!r}")
    for name, tensor in weights.items():
        if own[name].shape != tensor.shape:
            raise CheckpointError(
                f"parameter {name!r}: checkpoint shape {tuple(tensor.shape)} != model {tuple(own[name].shape)}"
            )
    model.load_state_dict(weights, strict=False)


def size_bytes(directory: str | os.PathLike) -> int:
    return sum(p.stat().st_size for p in Path(directory).rglob("*") if p.is_file())
