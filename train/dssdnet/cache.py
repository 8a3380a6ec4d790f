"""Frozen-encoder feature cache of ``train/dssdnet/main.py``: with only the top ``--train-layers`` encoder
layers training, the output of the frozen layers below them is fixed for every (query, candidate)
pair, so it is computed once and reused by every epoch, every evaluation and every seed of a runner.

* ``--train-layers 0``: the cache holds ``e = H_CLS`` [H] per pair (and, given a folder, keeps it on
  disk for later runs with the same base and ``max_length``).
* ``--train-layers L > 0``: the cache holds the hidden states [len, H] after the frozen layers (in
  memory only); :meth:`FeatureCache.encode` runs the top ``L`` layers on them, with gradients when the
  model trains. The frozen layers run in eval mode (no dropout), the trained layers as the model is.

``FeatureCache.encode(queries, docs) -> e`` is the ``encode`` argument of ``Reranker.rank``, so cached
scoring is the re-ranker's one scoring path.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
from pathlib import Path

import torch

from patent_demo.text.reranker import Reranker

_SHARED: dict[tuple, dict] = {}  # features shared by the runs of one process (a runner's seeds)


def encoder_layers(model: Reranker) -> torch.nn.ModuleList:
    """The transformer layers of the re-ranker's encoder (BERT-like: ``encoder.layer``)."""
    for path in ("encoder.layer", "transformer.layer", "layers"):
        obj = model.encoder
        for name in path.split("."):
            obj = getattr(obj, name, None)
        if isinstance(obj, torch.nn.ModuleList):
            return obj
    raise ValueError(f"cannot find the transformer layers of {type(model.encoder).__name__}")


class FeatureCache:
    """Outputs of the frozen part of the encoder per text pair, computed on first use."""

    def __init__(self, model: Reranker, folder: str | None, batch_size: int, train_layers: int = 0) -> None:
        self.model, self.batch_size = model, batch_size
        n_layers = len(encoder_layers(model)) if train_layers > 0 else 0
        self.train_layers = min(train_layers, n_layers)
        self.boundary = n_layers - self.train_layers  # frozen layers below the cached states
        cfg = model.config
        tag = hashlib.sha1(f"{cfg.base}|{cfg.base_path}|{cfg.max_length}|{cfg.pooling}".encode()).hexdigest()[:12]
        self.path = Path(folder) / f"features-{tag}.pt" if folder and self.train_layers == 0 else None
        shared = _SHARED.setdefault((tag, self.train_layers, str(self.path)), {"index": {}, "rows": []})
        self.index: dict[str, int] = shared["index"]
        self.rows: list[torch.Tensor] = shared["rows"]
        self.new = 0
        if self.path is not None and self.path.is_file() and not self.rows:
            saved = torch.load(self.path, map_location="cpu", weights_only=True)
            self.index.update({k: i for i, k in enumerate(saved["keys"])})
            self.rows.extend(saved["features"])

    @staticmethod
    def key(query: str, doc: str) -> str:
        return hashlib.sha1(f"{query}\x00{doc}".encode()).hexdigest()

    @torch.no_grad()
    def _lower(self, batch: dict) -> list[torch.Tensor]:
        """Per pair of a tokenised batch: ``H_CLS`` (boundary at the top) or the states after the
        frozen layers, trimmed to the pair's length."""
        enc = self.model.encoder
        if self.train_layers == 0:
            return list(self.model.encode(**batch).float().cpu())
        from transformers.masking_utils import create_bidirectional_mask

        h = enc.embeddings(input_ids=batch["input_ids"], token_type_ids=batch.get("token_type_ids"))
        mask = create_bidirectional_mask(
            config=enc.config, inputs_embeds=h, attention_mask=batch["attention_mask"]
        )
        for layer in encoder_layers(self.model)[: self.boundary]:
            h = layer(h, mask)
        lengths = batch["attention_mask"].sum(dim=1).tolist()
        return [h[i, : int(n)].float().cpu().clone() for i, n in enumerate(lengths)]

    def _fill(self, pairs: list[tuple[str, str]], keys: list[str]) -> None:
        missing = list({k: i for i, k in enumerate(keys) if k not in self.index}.values())
        if not missing:
            return
        was = self.model.encoder.training
        self.model.encoder.eval()
        for i in range(0, len(missing), self.batch_size):
            chunk = missing[i : i + self.batch_size]
            batch = self.model.tokenize([pairs[j][0] for j in chunk], [pairs[j][1] for j in chunk])
            for j, row in zip(chunk, self._lower(batch), strict=True):
                self.index[keys[j]] = len(self.rows)
                self.rows.append(row)
            self.new += len(chunk)
        self.model.encoder.train(was)

    def encode(self, queries, docs) -> torch.Tensor:
        """``e = H_CLS`` [B, H] of the pairs: cached, or the top layers run on the cached states."""
        pairs = list(zip(queries, docs, strict=True))
        keys = [self.key(q, d) for q, d in pairs]
        self._fill(pairs, keys)
        device = next(self.model.parameters()).device
        rows = [self.rows[self.index[k]] for k in keys]
        if self.train_layers == 0:
            return torch.stack(rows).to(device)
        from transformers.masking_utils import create_bidirectional_mask

        n = max(r.shape[0] for r in rows)
        h = torch.zeros(len(rows), n, rows[0].shape[1], device=device)
        att = torch.zeros(len(rows), n, dtype=torch.long, device=device)
        for i, r in enumerate(rows):
            h[i, : r.shape[0]] = r.to(device)
            att[i, : r.shape[0]] = 1
        enc = self.model.encoder
        mask = create_bidirectional_mask(config=enc.config, inputs_embeds=h, attention_mask=att)
        for layer in encoder_layers(self.model)[self.boundary :]:
            h = layer(h, mask)
        return self.model.pool(h, att)

    def save(self) -> None:
        if self.path is None or not self.new:
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=self.path.parent, prefix=f".{self.path.name}.", suffix=".tmp")
        os.close(fd)
        torch.save({"keys": list(self.index), "features": torch.stack(self.rows)}, tmp)
        os.replace(tmp, self.path)
        self.new = 0


class CachedReranker:
    """A re-ranker whose ``rank`` reads the cache: ``Reranker.rank`` with ``encode=cache.encode``."""

    def __init__(self, model: Reranker, cache: FeatureCache) -> None:
        self.model, self.cache = model, cache

    def rank(self, query_text, candidates, query_codes=None, batch_size: int = 32, known_t=None):
        return self.model.rank(
            query_text, candidates, query_codes, batch_size, encode=self.cache.encode, known_t=known_t
        )
