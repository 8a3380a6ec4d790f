"""Explanation of DSSDNet scores, checkpoint choice by scheme, and the inference precision."""

from pathlib import Path

import numpy as np
import pytest
import torch

from patent_demo.text.explain import (
    contributions,
    explain_markdown,
    gate_spread_over_candidates,
    gate_summary,
)
from patent_demo.text.precision import apply_precision, choose_precision, cpu_flags
from patent_demo.text.select import checkpoint_scheme, text_model_for_scheme

REPO = Path(__file__).resolve().parents[1]
IPC_CHECKPOINT = REPO / "checkpoints" / "dssdnet-minilm-ipc"
PATSNAP = REPO.parent / "shared" / "data" / "cs3245_patsnap_corpus_qrels" / "patsnap_docs.jsonl"


def test_gate_summary_flat_and_spread():
    flat = gate_summary([0.5] * 384)
    assert flat["flat"] and flat["entropy_bits"] == pytest.approx(1.0) and flat["std"] == 0.0
    g = gate_summary([0.1, 0.9, 0.8, 0.2])
    assert not g["flat"] and g["share_domain_sensitive"] == 0.5 and g["mean"] == pytest.approx(0.5)

    def bits(p):
        return -(p * np.log2(p) + (1 - p) * np.log2(1 - p))

    h = (2 * bits(0.1) + 2 * bits(0.2)) / 4
    assert g["entropy_bits"] == pytest.approx(h) and (g["min"], g["max"]) == (0.1, 0.9)
    assert gate_summary(None) is None


def test_contributions_and_text():
    extra = {
        "gate": [0.2, 0.9, 0.7],
        "ds": 0.8,
        "di": 0.3,
        "fusion": 0.75,
        "t": 1,
        "t_source": "codes",
        "t_hat": 0.9,
        "score_t_flipped": 0.25,
        "gate_mean": 0.6,
    }
    c = contributions(extra)
    assert c["t_effect"] == pytest.approx(0.5) and c["score"] == 0.75
    text = explain_markdown(extra)
    assert "67 % of 3 dimensions" in text and "domain-sensitive head 0.800" in text
    assert (
        "Domain t = 1 (same subclass; from the codes): flipping it would change the score by -0.500" in text
    )
    assert explain_markdown({**extra, "gate": [0.5] * 8}).startswith("⚠️ The gate is flat (0.500 ± 0.000")
    assert "no gate" in explain_markdown({"gate": None, "fusion": None, "ds": None, "di": None})
    assert gate_spread_over_candidates([{"gate_mean": 0.4}, {"gate_mean": 0.6}]) == pytest.approx(0.1)
    assert "What moves" not in text  # a decided gate explains itself


def test_an_undecided_gate_says_what_moves_the_score_instead():
    # as measured on a real query: every dimension near 0.5, every hit's gate mean alike
    undecided = {
        "gate": [0.49, 0.5, 0.51, 0.5],
        "ds": 0.62,
        "di": 0.58,
        "fusion": 0.6,
        "t": 0,
        "t_source": "predicted",
        "t_hat": 0.3,
        "score_t_flipped": 0.45,
        "gate_mean": 0.5,
    }
    hits = [undecided, {"gate_mean": 0.49}, {"gate_mean": 0.51}]
    text = explain_markdown(undecided, hits)
    # t flipped moves it by 0.15, the head gap (0.04) by half that: t first
    assert (
        "What moves this score instead, largest first: the domain label t (flipping it changes the score "
        "by -0.150); the two heads' disagreement (the domain-sensitive head scores it 0.040 higher"
    ) in text
    assert (
        "Over the list's 3 hits the gate mean spans 0.490–0.510 (std 0.008): every hit is gated alike, so the "
        "gate does not order this list."
    ) in text
    spread = explain_markdown(undecided, [{"gate_mean": 0.3}, {"gate_mean": 0.7}])
    assert "spans 0.300–0.700 (std 0.200): the hits differ" in spread


def test_checkpoint_scheme_and_choice(tmp_path):
    from patent_demo.registry import ModelSpec

    for name, scheme in (("loc", "locarno"), ("ipc", "ipc")):
        (tmp_path / name).mkdir()
        (tmp_path / name / "config.json").write_text(
            f'{{"kind": "dssdnet", "model": {{"domain_scheme": "{scheme}"}}}}'
        )
    specs = [
        ModelSpec("untrained", "u", "text", "dssdnet", "minilm", trained=False),
        ModelSpec("loc", "l", "text", "dssdnet", "minilm", tmp_path / "loc"),
        ModelSpec("ipc", "i", "text", "dssdnet", "minilm", tmp_path / "ipc"),
    ]
    assert checkpoint_scheme(tmp_path / "ipc") == "ipc" and checkpoint_scheme(tmp_path / "none") is None
    assert text_model_for_scheme(specs, "ipc").key == "ipc"
    assert text_model_for_scheme(specs, "locarno").key == "loc"
    assert text_model_for_scheme(specs, "cpc") is None
    assert checkpoint_scheme(REPO / "checkpoints" / "dssdnet-minilm") == "locarno"


def test_precision_choice_from_cpu_flags(tmp_path, monkeypatch):
    monkeypatch.delenv("PATENT_DEMO_PRECISION", raising=False)
    info = tmp_path / "cpuinfo"
    info.write_text("processor\t: 0\nflags\t\t: fpu avx2 avx512f avx512_bf16 avx512_vnni\n")
    assert "avx512_bf16" in cpu_flags(info)
    assert choose_precision("auto", cpu_flags(info)) == "bf16"
    assert choose_precision("auto", {"avx2", "avx512_vnni"}) == "fp32"
    assert choose_precision("auto", {"amx_bf16"}) == "bf16"
    assert choose_precision("int8", set()) == "int8"
    monkeypatch.setenv("PATENT_DEMO_PRECISION", "int8")
    assert choose_precision("auto", {"avx512_bf16"}) == "int8"
    with pytest.raises(ValueError, match="unknown precision 'fp16'"):
        choose_precision("fp16")
    assert cpu_flags(tmp_path / "missing") == set()


def test_precisions_rank_alike_on_a_tiny_model():
    from tests.support.reranker import CANDIDATES, QUERY, QUERY_CODES, tiny_reranker

    ref = tiny_reranker("DSSDNet")
    assert ref.precision == "fp32"
    want = ref.rank(QUERY, CANDIDATES, QUERY_CODES)
    for precision, tol in (("bf16", 0.05), ("int8", 0.05)):
        model = apply_precision(tiny_reranker("DSSDNet"), precision)
        assert model.precision == precision
        got = model.rank(QUERY, CANDIDATES, QUERY_CODES)
        got_scores = dict(zip(got.ids, got.scores.tolist(), strict=True))
        np.testing.assert_allclose([got_scores[d] for d in want.ids], want.scores, atol=tol)


@pytest.mark.skipif(not PATSNAP.is_file(), reason="cs3245 data not available")
def test_trained_ipc_checkpoint_gate_is_not_constant():
    """On real cs3245 text the shipped IPC checkpoint's gate varies over dimensions and candidates."""
    from patent_demo.data.loaders.textcorpus import load_text_corpus
    from patent_demo.text.reranker import Reranker
    from patent_demo.text.search import candidate_text

    torch.set_num_threads(1)
    library = load_text_corpus(PATSNAP)
    patents = [p for p in library if p.text][:9]
    model = Reranker.load(IPC_CHECKPOINT)
    assert model.config.domain_scheme == "ipc"
    q = patents[0]
    res = model.rank(candidate_text(q), [(p.id, candidate_text(p), p.codes) for p in patents[1:]], q.codes)
    summaries = [gate_summary(e["gate"]) for e in res.extras]
    assert all(not s["flat"] and s["std"] > 0.01 and s["max"] - s["min"] > 0.05 for s in summaries), summaries
    assert gate_spread_over_candidates(res.extras) > 0.0
    assert max(res.scores) - min(res.scores) > 0.05  # scores are spread, not all ~0.98
    assert all(e["t_source"] == "codes" for e in res.extras)


def test_rank_move_is_the_one_move_the_table_and_the_explanation_show():
    """A re-ranked list moves from its hybrid pool rank, dense and hybrid from BM25's; BM25 moves from
    nothing. The table's move column and the explanation's line both come from ``rank_move``."""
    from types import SimpleNamespace

    from patent_demo.text.explain import rank_move
    from patent_demo.ui.views import _moved, hit_rows

    extra = {"bm25_rank": 31, "dense_rank": 4, "pool_rank": 33}
    assert rank_move("dssdnet", extra, 1) == "↑ 32"  # the hybrid pool's rank, not BM25's (↑ 30)
    assert rank_move("fused", extra, 35) == "↓ 2"
    assert rank_move("hybrid", extra, 31) == "="
    assert rank_move("dense", {"bm25_rank": None}, 3) == ""  # found by the dense stage alone
    assert rank_move("bm25", extra, 1) == ""
    corpus = {"P1": SimpleNamespace(id="P1", title="t", codes={}, date="2021-05-04")}
    session = {"kind": "text", "lists": {"dssdnet": [{"id": "P1", "score": 0.5, "extras": extra}]}}
    row = hit_rows(SimpleNamespace(corpus=corpus), session, "dssdnet")[0]
    assert (
        row[1] == "↑ 32"
        and row[5] == "2021-05-04"
        and _moved("dssdnet", extra, 1) == " (hybrid pool rank 33, ↑ 32)"
    )
