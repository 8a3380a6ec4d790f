"""What several subcommands share: the corpus argument, model names and where checkpoints live."""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from patent_demo.data.corpus import Corpus
from patent_demo.registry import ZERO_SHOT, ModelSpec, read_checkpoint_spec, scan_models

DEFAULT = "default"
BM25 = "bm25"


PROJECT = Path(__file__).resolve().parents[2]  # the checkout, when the package runs from one


def project_path(name: str) -> str:
    """``name`` in the project folder (the checkout that holds this package and ``pyproject.toml``), so a
    command run from another folder finds the shipped checkpoints and the app's cache; ``name`` itself
    (the working directory) for an installed package."""
    return str(PROJECT / name) if (PROJECT / "pyproject.toml").is_file() else name


def add_checkpoints(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--checkpoints",
        nargs="*",
        default=os.environ.get("PATENT_DEMO_CHECKPOINTS", project_path("checkpoints")).split(os.pathsep),
        help="folders scanned for checkpoints, as the app does (PATENT_DEMO_CHECKPOINTS; default: the "
        "project's checkpoints/)",
    )


def add_backend(p: argparse.ArgumentParser, push: bool = False) -> None:
    """``--backend``, ``--url``, ``--timeout`` (``patent_demo.backends``): where the vectors are searched."""
    from patent_demo.backends import BACKENDS, DEFAULT_TIMEOUT

    p.add_argument(
        "--backend",
        default="qdrant" if push else "faiss",
        choices=BACKENDS,
        help="the vector search backend (default: %(default)s); qdrant needs `patent-demo index push`",
    )
    p.add_argument(
        "--url",
        default="",
        help="the engine's server (e.g. http://qdrant:6333); default: embedded, a folder under --cache-dir",
    )
    p.add_argument(
        "--timeout",
        type=float,
        default=DEFAULT_TIMEOUT,
        help="seconds a request to the server may take (default %(default)s)",
    )


def add_corpus(p: argparse.ArgumentParser, required: bool = True) -> None:
    p.add_argument(
        "--corpus", required=required, help="a corpus directory built by `patent-demo corpus build`"
    )


def load_corpus(path: str) -> Corpus:
    """The corpus at ``path`` (``CorpusError`` naming the build command for a raw collection)."""
    return Corpus.load(path, validate=False)


def models(dirs: list[str]) -> list[ModelSpec]:
    return scan_models([d for d in dirs if d])


def resolve_model(name: str, task: str, dirs: list[str], corpus: Corpus | None = None) -> ModelSpec | None:
    """The model ``name`` means for ``task`` ("drawing" or "text"), as the app would offer it.

    ``default``: the model the app selects first (a trained one when present; with ``corpus``, for text
    the checkpoint trained for the corpus's scheme, for drawings zero-shot where the default head was
    trained on another class scheme, as the app does); ``zero-shot``: the
    untuned drawing encoder; ``bm25``: plain BM25 (text; returns ``None``); a checkpoint directory path;
    otherwise a checkpoint or built-in model name from ``patent-demo models``.
    """
    if task == "text" and name == BM25:
        return None
    if task == "drawing" and name == BM25:
        raise ValueError("bm25 is a text model; drawing models: default, zero-shot or a checkpoint name")
    specs = [m for m in models(dirs) if m.task == task]
    if name == DEFAULT:
        if not specs:
            raise ValueError(f"no {task} model available")
        if task == "text" and corpus is not None:
            from patent_demo.text.select import corpus_scheme, text_model_for_scheme

            return text_model_for_scheme(specs, corpus_scheme(corpus.patents)) or specs[0]
        if task == "drawing" and corpus is not None:
            from patent_demo.drawing.select import drawing_model_for_corpus

            return drawing_model_for_corpus(specs, corpus.patents)
        return specs[0]
    if name == ZERO_SHOT and task == "drawing":
        return next(m for m in specs if m.key == ZERO_SHOT)
    path = Path(name)
    if path.is_dir():
        spec = read_checkpoint_spec(path)
        if spec is None or spec.task != task:
            raise ValueError(f"{path} is not a {task} checkpoint (config.json + model.safetensors)")
        return spec
    for m in specs:
        if name in (m.key, m.label):
            return m
    names = [DEFAULT, *([ZERO_SHOT] if task == "drawing" else [BM25]), *(m.key for m in specs)]
    raise ValueError(f"unknown {task} model {name!r}; choose one of {sorted(set(names))}")


def model_name(spec: ModelSpec | None) -> str:
    return BM25 if spec is None else spec.key


def load_drawing_model(spec: ModelSpec, image_size: int | None = None, device: str = "cpu"):
    """``(model, eval_transform)`` of a drawing model; ``image_size`` overrides its input size (a
    checkpoint keeps its weights and gets an eval transform of that size)."""
    from patent_demo.drawing.finetune import load_encoder
    from patent_demo.drawing.transforms import DrawingEvalTransform

    source = str(spec.path) if spec.path is not None else spec.encoder
    model, tf, _ = load_encoder(source, device=device, image_size=image_size)
    if image_size and tf.size != image_size:
        tf = DrawingEvalTransform(image_size, tf.mean, tf.std)
    return model, tf


class SizedEncoder:
    """A drawing encoder at an overridden input size, for ``Workbench(drawing_encoder_factory=...)``."""

    def __init__(self, spec: ModelSpec, image_size: int, device: str = "cpu") -> None:
        self.model, self.transform = load_drawing_model(spec, image_size, device)

    def encode(self, images: list):
        import torch

        from patent_demo.drawing.encoders import encode_images

        batch = torch.stack([self.transform(im) for im in images])
        with torch.inference_mode():
            return encode_images(self.model, batch).float().cpu().numpy()
