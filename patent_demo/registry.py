"""The model list the app offers: built-in defaults plus every checkpoint directory found on disk.

A checkpoint directory (see ``patent_demo.checkpoint``) holds ``config.json`` with ``"kind"``
``"hmcl"`` (drawing encoders; a plain contrastive run is labelled CL) or ``"dssdnet"`` (text
re-rankers). Folders are rescanned on every call, so a checkpoint written while the app runs appears
in its model list. The defaults, always present:

* ``zero-shot``: the ``lite-trunk`` drawing encoder: the packaged EfficientNet-Lite0 (ImageNet) trunk's own
  pooled 1280-d features, no layer on top and nothing fitted (the strongest untrained baseline);
* ``dssdnet-untrained``: MiniLM-L6 with a DSSDNet head at its initialisation (an untrained head).

``default_drawing_encoder(spec)`` and ``default_reranker(spec)`` build the model a spec names (weights
read offline).
"""

from __future__ import annotations

import copy
import hashlib
import json
import os
import threading
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from patent_demo.digests import weights_digest

if TYPE_CHECKING:
    import numpy as np

    from patent_demo.text.search import TextReranker

ZERO_SHOT = "zero-shot"
UNTRAINED_TEXT = "dssdnet-untrained"
DEFAULT_DRAWING_ENCODER = "lite-clip"
ZERO_SHOT_ENCODER = "lite-trunk"
DEFAULT_RERANKER = "minilm"
LABEL_COUNT_KEYS = ("num_labels", "n_labels", "labels", "label_count")
DRAWING_FIGURES = ("patent_map", "subclass_map", "main_map")
TEXT_FIGURES = ("recall@10", "map@10", "ndcg@10")


@dataclass
class ModelSpec:
    """One selectable model. ``task`` is "drawing" or "text"; ``kind`` "zero-shot", "cl", "hmcl" or
    "dssdnet"; ``path`` the checkpoint directory (None for the built-in defaults)."""

    key: str
    label: str
    task: str
    kind: str
    encoder: str
    path: Path | None = None
    version: str = ""
    n_labels: int | None = None
    trained: bool = True
    metrics: dict = field(default_factory=dict)
    default: bool = False

    @property
    def checkpoint_id(self) -> str:
        """What a label row records as the model that ranked the list."""
        if self.path is None:
            return self.key
        return f"{self.key}@{self.version}" if self.version else self.key

    @property
    def fingerprint(self) -> str:
        """Changes whenever the weights do (the bytes of the checkpoint's config and weights, not where
        they lie: a copied checkpoint keeps its cached index)."""
        if self.path is None:
            return f"{self.key}-{self.encoder}"
        h = hashlib.sha256(self.encoder.encode())
        for name in ("config.json", "model.safetensors"):
            p = self.path / name
            if p.is_file():
                h.update(f"{name}:{weights_digest(p)}".encode())
        return f"{self.key}-{h.hexdigest()[:12]}"


def measured_figures(task: str, metrics: dict) -> dict[str, dict[str, float]]:
    """The figures a checkpoint's ``metrics.json`` records, by where they were measured.

    Drawing models: ``validation`` (``validation.uspc``: the USPC val split, where choices are made),
    ``test`` (``test.uspc``: the USPC test split, computed once per shipped checkpoint), ``redbook``
    (``validation.redbook``: the 20 Red Book patents, every page against all others), ``real`` (the older
    ``real_validation`` record) and ``generated`` (``after.test``, the generated corpus's test split).
    Text models: ``test`` (``after``, BM25 + re-ranking on its corpus's test queries) beside ``bm25``
    (plain BM25 on the same queries) and ``fused`` when the checkpoint has a fusion weight.
    """

    def pick(d: Any, keys: tuple[str, ...]) -> dict[str, float]:
        d = d if isinstance(d, dict) else {}
        return {k: round(float(d[k]), 4) for k in keys if isinstance(d.get(k), int | float)}

    def record(*path: str) -> dict:
        node: Any = metrics
        for part in path:
            node = node.get(part) if isinstance(node, dict) else None
        return (node or {}).get("metrics") if isinstance(node, dict) else None

    if task == "drawing":
        keys = (*DRAWING_FIGURES, "hier_ndcg@10")
        out = {
            "validation": pick(record("validation", "uspc"), keys),
            "test": pick(record("test", "uspc"), keys),
            "redbook": pick(record("validation", "redbook"), keys),
            "real": pick(record("real_validation"), DRAWING_FIGURES),
            "generated": pick(record("after", "test"), DRAWING_FIGURES),
        }
    else:
        fused = ((metrics.get("fusion") or {}).get("test") or {}).get("fused")
        out = {
            "test": pick(metrics.get("after"), TEXT_FIGURES),
            "bm25": pick(metrics.get("bm25"), TEXT_FIGURES),
            "fused": pick(fused, TEXT_FIGURES),
        }
    return {k: v for k, v in out.items() if v}


def _sub_main(m: dict) -> str:
    return f"{m.get('subclass_map', float('nan')):.3f} / {m.get('main_map', float('nan')):.3f}"


def figures_note(task: str, metrics: dict) -> str:
    """The short form of :func:`measured_figures` the model lists show after a model's name: USPC
    validation and test subclass / main mAP apart (and Red Book pages), else the older records."""
    m = measured_figures(task, metrics)
    if task == "drawing":
        parts = []
        seen = " (USPC seen in training)" if metrics.get("uspc_seen_in_training") else ""
        if "validation" in m:
            parts.append(f"USPC val subclass/main mAP {_sub_main(m['validation'])}{seen}")
        if "test" in m:
            parts.append(f"test {_sub_main(m['test'])}")
        if "redbook" in m and "subclass_map" in m["redbook"]:
            parts.append(f"Red Book val subclass mAP {m['redbook']['subclass_map']:.3f}")
        if not parts:
            parts = [
                f"{where} subclass mAP {m[where]['subclass_map']:.3f}"
                for where in ("real", "generated")
                if "subclass_map" in m.get(where, {})
            ]
    else:
        parts = [f"test nDCG@10 {m['test']['ndcg@10']:.3f}"] if "ndcg@10" in m.get("test", {}) else []
        parts += [f"fused {m['fused']['ndcg@10']:.3f}"] if "ndcg@10" in m.get("fused", {}) else []
        parts += [f"BM25 {m['bm25']['ndcg@10']:.3f}"] if "ndcg@10" in m.get("bm25", {}) else []
    return " · ".join(parts)


ZERO_SHOT_METRICS = Path(__file__).resolve().parent / "configs" / "zero_shot_metrics.json"


def zero_shot_metrics() -> dict:
    """The zero-shot model's measured figures (``patent_demo/configs/zero_shot_metrics.json``, written by
    ``train.score_drawings --record-file``), ``{}`` when absent."""
    try:
        return json.loads(ZERO_SHOT_METRICS.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError):
        return {}


def builtin_models() -> list[ModelSpec]:
    zs = zero_shot_metrics()
    note = figures_note("drawing", zs)
    return [
        ModelSpec(
            ZERO_SHOT,
            "zero-shot (EfficientNet-Lite0 trunk, ImageNet weights, no projection)"
            + (f" ({note})" if note else ""),
            "drawing",
            "zero-shot",
            ZERO_SHOT_ENCODER,
            trained=False,
            metrics=zs,
        ),
        ModelSpec(
            UNTRAINED_TEXT,
            "DSSDNet, MiniLM with untrained head",
            "text",
            "dssdnet",
            DEFAULT_RERANKER,
            trained=False,
        ),
    ]


def _n_labels(config: dict) -> int | None:
    for section in (config, config.get("train") or {}):
        for key in LABEL_COUNT_KEYS:
            value = section.get(key)
            if isinstance(value, int) and not isinstance(value, bool):
                return value
    return None


def _drawing_kind(config: dict) -> str:
    """ "fitted" for a checkpoint made without training steps (e.g. a whitened projection: fitted on training
    drawings, so not zero-shot, which is the untouched trunk), "cl" for a plain contrastive run (no
    hierarchy weights), else "hmcl"."""
    train = config.get("train") or {}
    if train.get("steps") == 0:
        return "fitted"
    loss = str(train.get("loss", train.get("variant", ""))).lower()
    if loss in ("cl", "contrastive", "plain"):
        return "cl"
    if float(train.get("s_s", 1.0) or 0.0) == 0.0 and float(train.get("s_m", 1.0) or 0.0) == 0.0:
        return "cl"
    return "hmcl"


def read_checkpoint_spec(path: Path) -> ModelSpec | None:
    """The spec of one checkpoint directory, or None when it holds no usable ``config.json``."""
    cfg_path = path / "config.json"
    if not cfg_path.is_file() or not (path / "model.safetensors").is_file():
        return None
    try:
        config = json.loads(cfg_path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError):
        return None
    kind = config.get("kind")
    metrics = {}
    if (path / "metrics.json").is_file():
        try:
            metrics = json.loads((path / "metrics.json").read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError):
            metrics = {}
    version = str(config.get("version") or (config.get("train") or {}).get("version") or "")
    n_labels = _n_labels(config)
    parent = Path(str(config.get("parent") or "")).name
    suffix = "".join(
        [
            f" v{version}" if version else "",
            f", {n_labels} labels" if n_labels is not None else "",
            f", retrained from {parent}" if parent else "",
        ]
    )
    note = figures_note("drawing" if kind == "hmcl" else "text", metrics)
    if kind == "hmcl" and config.get("default") is True and note:
        zs = figures_note("drawing", zero_shot_metrics())
        note += f"; zero-shot: {zs}" if zs else ""
    suffix += f" ({note})" if note else ""
    if kind == "hmcl":
        dk = _drawing_kind(config)
        encoder = str(
            (config.get("model") or {}).get("name") or config.get("encoder") or DEFAULT_DRAWING_ENCODER
        )
        return ModelSpec(
            path.name,
            f"{dk.upper()}: {path.name}{suffix}",
            "drawing",
            dk,
            encoder,
            path,
            version,
            n_labels,
            True,
            metrics,
            config.get("default") is True,
        )
    if kind == "dssdnet":
        base = str(config.get("base") or DEFAULT_RERANKER)
        return ModelSpec(
            path.name,
            f"DSSDNet: {path.name}{suffix}",
            "text",
            "dssdnet",
            base,
            path,
            version,
            n_labels,
            True,
            metrics,
        )
    return None


_SCANNED: dict[tuple, list[ModelSpec]] = {}  # the checkpoint files' (path, mtime, size) -> the specs read
_SCAN_LOCK = threading.Lock()


def _listing(dirs: list[Path]) -> tuple:
    """What a scan reads, as stat results only: every file of every checkpoint folder in ``dirs``."""
    out = []
    for d in dirs:
        if not d.is_dir():
            continue
        for cand in [d, *sorted(p for p in d.iterdir() if p.is_dir())]:
            for f in sorted(cand.iterdir()):
                if f.is_file():
                    st = f.stat()
                    out.append((str(f), st.st_mtime_ns, st.st_size))
    return tuple(out)


def scan_models(dirs: Iterable[str | os.PathLike]) -> list[ModelSpec]:
    """Checkpoints found in ``dirs`` (each a checkpoint or a folder of them), trained drawing models
    first (one whose ``config.json`` says ``"default": true`` leads; then HMCL before CL, then by name),
    then the built-in defaults, then text models. The first drawing model is the app's default.

    The checkpoints' files are read again only when one of them (or the set of them) changed since the last
    scan of the same folders, so a new checkpoint still appears at the next call while a search that
    resolves its model several times reads no JSON; each call gets its own (shallow) copies."""
    dirs = [Path(d) for d in dirs]
    key = (tuple(map(str, dirs)), _listing(dirs))
    with _SCAN_LOCK:
        read = _SCANNED.get(key)
    if read is None:
        read = _read_checkpoints(dirs)
        with _SCAN_LOCK:
            if len(_SCANNED) >= 16:
                _SCANNED.clear()
            _SCANNED[key] = read
    order = {"hmcl": 0, "cl": 1, "fitted": 2, "zero-shot": 3}
    specs = [copy.copy(s) for s in read] + builtin_models()
    drawing = sorted(
        (s for s in specs if s.task == "drawing"), key=lambda s: (not s.default, order.get(s.kind, 3), s.key)
    )
    text = sorted((s for s in specs if s.task == "text"), key=lambda s: (not s.trained, s.key))
    return drawing + text


def _read_checkpoints(dirs: list[Path]) -> list[ModelSpec]:
    """The spec of every checkpoint in ``dirs``, the first of each key kept."""
    found: dict[str, ModelSpec] = {}
    for d in dirs:
        if not d.is_dir():
            continue
        for cand in [d, *sorted(p for p in d.iterdir() if p.is_dir())]:
            spec = read_checkpoint_spec(cand)
            if spec is not None and spec.key not in found:
                found[spec.key] = spec
    return list(found.values())


# -- building the model of a spec --------------------------------------------------------------------
class DrawingEncoder(Protocol):
    """Anything that maps B drawings (PIL images, mode "L") to embeddings ``[B, D]``."""

    def encode(self, images: list[Any]) -> np.ndarray: ...


class OpenClipDrawingEncoder:
    """A drawing encoder from ``patent_demo.drawing.encoders.create_encoder``: PIL drawings -> ``[B, D]`` unit vectors."""

    def __init__(
        self,
        name: str,
        pretrained: str | os.PathLike | None = "default",
        device: str = "cpu",
        checkpoint: str | os.PathLike | None = None,
    ) -> None:
        if checkpoint is not None:
            from patent_demo.drawing.finetune import load_hmcl_checkpoint

            self.model, self.transform, _ = load_hmcl_checkpoint(checkpoint, device=device)
        else:
            from patent_demo.drawing.encoders import create_encoder

            self.model, _, self.transform = create_encoder(name, pretrained=pretrained, device=device)
        import torch

        # channels-last convolutions: the same vectors (to float rounding), about 1.5x the drawings per second
        # on a 2-core AVX2 CPU (what a cold start spends its first minute on)
        self.model = self.model.to(memory_format=torch.channels_last)

    def encode(self, images: list[Any]) -> np.ndarray:
        import torch

        from patent_demo.drawing.encoders import encode_images

        batch = torch.stack([self.transform(im) for im in images]).contiguous(
            memory_format=torch.channels_last
        )
        with torch.inference_mode():
            return encode_images(self.model, batch).float().cpu().numpy()


def default_drawing_encoder(spec: ModelSpec) -> DrawingEncoder:
    """The encoder of a drawing model spec (weights read offline): the packaged default or a checkpoint.

    The zero-shot model has no parameter outside the packaged trunk; parameters a checkpoint does not hold
    come from ``create_encoder``'s fixed ``init_seed``, so query embeddings match an index cached by an
    earlier process.
    """
    if spec.path is None:
        return OpenClipDrawingEncoder(spec.encoder)
    return OpenClipDrawingEncoder(spec.encoder, checkpoint=spec.path)


def default_reranker(spec: ModelSpec, domain_scheme: str = "ipc") -> TextReranker:
    """The re-ranker of a text model spec: a saved DSSDNet checkpoint, or MiniLM with an untrained head."""
    import torch

    from patent_demo.text.precision import apply_precision
    from patent_demo.text.reranker import Reranker, create_reranker

    if spec.path is not None:
        return apply_precision(Reranker.load(spec.path), "auto")  # bf16 where the CPU has it, else fp32
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(0)  # the untrained head is the same on every start
        return apply_precision(create_reranker(spec.encoder, domain_scheme=domain_scheme), "auto")
