"""A tiny random BERT re-ranker of any variant over a 70-word vocabulary, and a query with five candidates
(codes in several schemes, one with none) to rank."""

from __future__ import annotations

import torch
from transformers import BertConfig, BertModel, BertTokenizer

from patent_demo.text.reranker import Reranker, RerankerConfig

WORDS = (
    "a an the of with and for to on in is chair seat leg back arm rest lamp shade bulb light table top "
    "wheel car door frame bottle cap handle cup spring fold folding adjustable height base support metal "
    "wooden plastic cover panel hinge lock shoe sole heel strap bag pocket zip tool blade knife fork "
    "spoon plate bowl lid box case phone screen key button"
).split()

CANDIDATES = [
    ("P1", "a folding chair with wooden legs and a metal frame", {"ipc": ["A47C 4/04"]}),
    ("P2", "lamp shade", {"ipc": ["F21V 1/00"]}),
    (
        "P3",
        "a bottle cap with a hinge and a lock for the handle of a cup",
        {"ipc": ["B65D 41/04", "A47C 7/00"]},
    ),
    ("P4", "an adjustable table top on a spring base", {}),
    ("P5", "shoe sole with a heel strap", None),
]
QUERY = "chair with adjustable seat height and arm rest"
QUERY_CODES = {"ipc": ["A47C 7/02"], "locarno": ["06-01"]}


def tiny_tokenizer() -> BertTokenizer:
    """A word-level tokenizer over ``WORDS`` (and BERT's five special tokens)."""
    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *WORDS]
    assert len(vocab) <= 100
    return BertTokenizer(vocab={w: i for i, w in enumerate(vocab)})


def tiny_reranker(variant="DSSDNet", seed=0, dtype=torch.float32, **overrides) -> Reranker:
    """A random re-ranker of ``variant`` (one 16-wide BERT layer, seeded); ``overrides`` go to
    ``RerankerConfig``."""
    torch.manual_seed(seed)
    bert = BertConfig(
        hidden_size=16, num_hidden_layers=1, num_attention_heads=2, intermediate_size=32, vocab_size=100
    )
    bert._attn_implementation = "eager"
    kwargs = {"base": "tiny", "variant": variant, "max_length": 24, "t_dim": 6, "t_hidden": 4, **overrides}
    cfg = RerankerConfig(**kwargs)
    model = Reranker(cfg, BertModel(bert, add_pooling_layer=False), tiny_tokenizer())
    return model.to(dtype).eval()
