"""A tiny corpus and workbench the tests (and ``bench/bench_request_budget.py --tiny``) run on: five Locarno
subclasses drawn as five shapes, a transparent pixel encoder, a hashed dense text encoder and a tiny random
BERT re-ranker over the corpus's own words, so every search takes milliseconds and needs no weights."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch
from PIL import Image, ImageDraw
from transformers import BertConfig, BertModel, BertTokenizer

from patent_demo.data.corpus import Corpus, Figure, Patent
from patent_demo.text.reranker import Reranker, RerankerConfig
from patent_demo.workbench import Workbench, WorkbenchConfig

# subclass -> (shape drawn, words of its texts)
SUBCLASSES = {
    "06-01": ("ellipse", "chair seat leg backrest"),
    "06-03": ("rectangle", "table top leg frame"),
    "07-01": ("triangle", "cup handle rim saucer"),
    "07-02": ("cross", "bowl rim foot glaze"),
    "26-05": ("ring", "lamp shade bulb cord"),
}
VOCAB = sorted(
    {w for _, words in SUBCLASSES.values() for w in words.split()} | {"with", "a", "and", "design"}
)


def draw_shape(shape: str, size: int, scale: float, width: int) -> Image.Image:
    """A black-on-white line drawing of ``shape``; ``scale`` (0.5..0.9) sets the extent."""
    im = Image.new("L", (size, size), 255)
    d = ImageDraw.Draw(im)
    m = size * (1 - scale) / 2
    box = (m, m, size - m, size - m)
    if shape == "ellipse":
        d.ellipse(box, outline=0, width=width)
    elif shape == "rectangle":
        d.rectangle(box, outline=0, width=width)
    elif shape == "triangle":
        d.polygon([(size / 2, m), (size - m, size - m), (m, size - m)], outline=0, width=width)
    elif shape == "cross":
        d.line([(m, m), (size - m, size - m)], fill=0, width=width)
        d.line([(m, size - m), (size - m, m)], fill=0, width=width)
    else:
        d.ellipse(box, outline=0, width=width)
        c = size / 2
        d.ellipse((c - size / 8, c - size / 8, c + size / 8, c + size / 8), outline=0, width=width)
    return im


def make_tiny_corpus(root: Path, per_subclass: int = 2, figures: int = 3, size: int = 64) -> Corpus:
    """``per_subclass`` patents for each of 5 subclasses (3 main classes), ``figures`` drawings each.

    Patent ids D0000.. in subclass order; texts repeat the subclass words, patent i adds its own word.
    The test split holds every patent; train is empty. Each patent marks its first figure as the query
    view (``extra["query_figure"]``, as the built-in corpus does), so evaluation uses the ``queries`` protocol.
    """
    patents = []
    n = 0
    for sub, (shape, words) in SUBCLASSES.items():
        for j in range(per_subclass):
            pid = f"D{n:04d}"
            figs = []
            for f in range(figures):
                rel = f"img/{pid}_{f}.png"
                (root / "img").mkdir(parents=True, exist_ok=True)
                draw_shape(shape, size, 0.5 + 0.1 * f + 0.05 * j, 1 + j).save(root / rel)
                figs.append(Figure(rel, view=("front", "top", "perspective")[f % 3], label=f"FIG. {f + 1}"))
            w = words.split()
            text = f"a {w[0]} with a {w[1]} and {w[2 + j % 2]} design"
            patents.append(
                Patent(
                    pid,
                    title=w[0].capitalize(),
                    text=text,
                    codes={"locarno": [sub]},
                    figures=figs,
                    date="2020-01-01",
                    extra={"query_figure": 0},
                )
            )
            n += 1
    corpus = Corpus(root, patents, splits={"test": [p.id for p in patents]}, name="tiny")
    corpus.save()
    return Corpus.load(root)


class PixelEncoder:
    """A transparent drawing encoder: the inverted 12x12 thumbnail, flattened ``[B, 144]``."""

    def __init__(self) -> None:
        self.calls = 0

    def encode(self, images):
        self.calls += 1
        out = []
        for im in images:
            small = np.asarray(im.convert("L").resize((12, 12), Image.Resampling.BILINEAR), dtype=np.float32)
            out.append((255.0 - small).reshape(-1) / 255.0 + 1e-3)
        return np.stack(out)


def tiny_reranker(seed: int = 0) -> Reranker:
    """A random DSSDNet re-ranker (one 16-wide BERT layer, seeded) over the tiny corpus's words."""
    torch.manual_seed(seed)
    bert = BertConfig(
        hidden_size=16, num_hidden_layers=1, num_attention_heads=2, intermediate_size=32, vocab_size=64
    )
    bert._attn_implementation = "eager"
    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *VOCAB]
    tok = BertTokenizer(vocab={w: i for i, w in enumerate(vocab)})
    cfg = RerankerConfig(base="tiny", max_length=32, t_dim=6, t_hidden=4, domain_scheme="locarno")
    return Reranker(cfg, BertModel(bert, add_pooling_layer=False), tok).eval()


class HashTextEncoder:
    """A tiny dense text encoder for tests: each word hashed into one of 32 dimensions, L2-normalised."""

    name, precision, checkpoint = "hash-32", "fp32", ""

    def fingerprint(self) -> str:
        return "hash32"

    def encode(self, texts, batch_size: int = 32, progress: bool = False, desc: str = ""):
        import zlib

        out = np.full((len(texts), 32), 1e-3, dtype=np.float32)
        for i, t in enumerate(texts):
            for w in t.lower().split():
                out[i, zlib.crc32(w.strip(".,;").encode()) % 32] += 1.0
        return out / np.linalg.norm(out, axis=1, keepdims=True)


def make_workbench(tmp: Path, checkpoint_dirs=(), **cfg) -> tuple[Workbench, PixelEncoder]:
    """A workbench over a tiny corpus built in ``tmp/corpus`` (cache in ``tmp/cache``) with the pixel encoder,
    the tiny re-ranker and the hashed text encoder; ``cfg`` goes to ``WorkbenchConfig``. Returns it with its
    pixel encoder, which counts its calls."""
    from patent_demo.text.hybrid import HybridSettings

    corpus = make_tiny_corpus(tmp / "corpus")
    enc = PixelEncoder()
    rr = tiny_reranker()
    config = WorkbenchConfig(cache_dir=tmp / "cache", checkpoint_dirs=tuple(checkpoint_dirs), **cfg)
    wb = Workbench(
        config,
        corpus=corpus,
        drawing_encoder_factory=lambda spec: enc,
        reranker_factory=lambda spec: rr,
        progress=False,
        text_encoder_factory=lambda: (HashTextEncoder(), HybridSettings("minmax", 0.5, 1000)),
    )
    return wb, enc
