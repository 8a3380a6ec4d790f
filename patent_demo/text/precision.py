"""The numeric precision the re-ranker's encoder runs in at inference, chosen per CPU at start.

* ``fp32``: plain PyTorch.
* ``bf16``: ``torch.autocast("cpu", dtype=torch.bfloat16)`` around the encoder; fast only where the
  CPU multiplies bf16 in hardware (``avx512_bf16`` or ``amx_bf16`` in ``/proc/cpuinfo``), otherwise
  slower than fp32, so :func:`choose_precision` picks it only there.
* ``int8``: ``torch.ao.quantization.quantize_dynamic`` over the encoder's ``nn.Linear`` layers (the
  DSSDNet heads stay fp32).

``bench/bench_rerank_precision.py`` measures each of them (and an ONNX Runtime export) side by side;
``docs/bench/rerank_precision.txt`` holds its log. ``Reranker.precision`` says which one runs.
"""

from __future__ import annotations

import contextlib
import os
import warnings
from pathlib import Path

import torch

PRECISIONS = ("fp32", "bf16", "int8")
BF16_FLAGS = ("avx512_bf16", "amx_bf16")
ENV = "PATENT_DEMO_PRECISION"  # overrides the automatic choice: fp32, bf16, int8 or auto


def cpu_flags(cpuinfo: str | os.PathLike = "/proc/cpuinfo") -> set[str]:
    """The CPU feature flags of the first processor listed in ``cpuinfo`` (empty when unreadable)."""
    try:
        text = Path(cpuinfo).read_text(encoding="utf-8", errors="replace")
    except OSError:
        return set()
    for line in text.splitlines():
        key, _, value = line.partition(":")
        if key.strip() in ("flags", "Features"):
            return set(value.split())
    return set()


def cpu_name(cpuinfo: str | os.PathLike = "/proc/cpuinfo") -> str:
    """The CPU's model name (what a measured figure ran on), else what ``platform`` knows."""
    try:
        for line in Path(cpuinfo).read_text(encoding="utf-8", errors="replace").splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    import platform

    return platform.processor() or platform.machine()


def has_fast_bf16(flags: set[str] | None = None) -> bool:
    """Whether the CPU has bf16 arithmetic in hardware (AVX512-BF16 or AMX)."""
    flags = cpu_flags() if flags is None else flags
    return any(f in flags for f in BF16_FLAGS)


def choose_precision(requested: str = "auto", flags: set[str] | None = None) -> str:
    """``requested`` when it is a precision; for ``auto`` (or the ``PATENT_DEMO_PRECISION`` environment
    variable when set): ``bf16`` where the CPU has fast bf16, else ``fp32``. (Dynamic int8 is never
    chosen automatically: on the benchmark it moved the top 10 too much; see the module docstring.)"""
    if requested == "auto":
        requested = os.environ.get(ENV, "auto").strip().lower() or "auto"
    if requested == "auto":
        return "bf16" if has_fast_bf16(flags) else "fp32"
    if requested not in PRECISIONS:
        raise ValueError(f"unknown precision {requested!r}; choose auto or one of {list(PRECISIONS)}")
    return requested


def autocast(precision: str):
    """The context the encoder runs in: bf16 autocast for ``bf16``, nothing otherwise."""
    if precision == "bf16":
        return torch.autocast("cpu", dtype=torch.bfloat16)
    return contextlib.nullcontext()


def apply_precision(model, precision: str = "auto"):
    """Set ``model``'s inference precision (a :class:`~patent_demo.text.reranker.Reranker`; for
    ``int8`` its encoder is quantized in place, which cannot be undone). Returns the model."""
    chosen = choose_precision(precision)
    if chosen == "int8" and getattr(model, "_precision", "fp32") != "int8":
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # torch.ao's deprecation notes
            model.encoder = torch.ao.quantization.quantize_dynamic(
                model.encoder, {torch.nn.Linear}, dtype=torch.qint8
            )
    model._precision = chosen
    return model
