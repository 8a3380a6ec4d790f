import json
import math

import pytest
import torch
from safetensors.torch import load_file

from patent_demo.losses.dssdnet import DSSDNetLoss, DSSDNetLossConfig
from patent_demo.results import Results
from patent_demo.text.reranker import (
    BaseModelNotFound,
    Reranker,
    RerankerConfig,
    arithmetic_dims,
    available_configs,
    create_reranker,
    load_config,
    resolve_base_path,
    state_dict_delta,
)
from tests.support.reranker import CANDIDATES, QUERY, QUERY_CODES, WORDS, tiny_reranker, tiny_tokenizer


@pytest.fixture(autouse=True)
def one_thread():
    """Tiny models run far faster on one thread than on a contended pool."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


def test_arithmetic_dims():
    assert arithmetic_dims(832, 1, 4) == [832, 624, 416, 209, 1]
    assert arithmetic_dims(16, 1, 3) == [16, 11, 6, 1]
    assert arithmetic_dims(8, 8, 2) == [8, 8, 8]


def test_architecture_per_variant():
    plain = tiny_reranker("BERT(C)")
    assert not hasattr(plain, "gate") and plain.head[1].in_features == 16
    ds_sd = tiny_reranker("DS_SD", proj_dim=8)
    assert ds_sd.gate.in_features == 8 and ds_sd.gate.out_features == 8
    assert not hasattr(ds_sd, "fusion")
    full = tiny_reranker("DSSDNet", proj_dim=8, head_layers=3)
    assert [m.out_features for m in full.fusion if isinstance(m, torch.nn.Linear)] == [15, 8, 1]
    assert full.fusion[0].in_features == 2 * 8 + 6
    assert [type(m).__name__ for m in full.fusion] == ["Linear", "Tanh", "Dropout"] * 2 + ["Linear"]
    assert [m.out_features for m in full.t_embed if isinstance(m, torch.nn.Linear)] == [4, 6]


def test_heads_follow_equations_5_to_12():
    model = tiny_reranker("DSSDNet", dtype=torch.float64)
    e = torch.randn(3, 16, dtype=torch.float64)
    t = torch.tensor([1.0, 0.0, 1.0], dtype=torch.float64)
    out = model.heads(e, t)

    def lin(layer, x):
        return x @ layer.weight.T + layer.bias

    def run(seq, x):  # eval mode: Linear, Tanh, (Dropout = identity)
        layers = [m for m in seq if isinstance(m, torch.nn.Linear)]
        for i, layer in enumerate(layers):
            x = lin(layer, x)
            if i < len(layers) - 1:
                x = torch.tanh(x)
        return x

    e_s = lin(model.proj, e)
    g = 1 / (1 + torch.exp(-lin(model.gate, e_s)))
    e_ds = run(model.mlp_ds, g * e_s)
    e_di = run(model.mlp_di, (1 - g) * e_s)
    w2, w1 = model.t_embed[0], model.t_embed[2]
    e_t = lin(w1, torch.tanh(t[:, None] @ w2.weight.T + w2.bias))
    fusion = run(model.fusion, torch.cat([e_ds, e_di, e_t], 1))[:, 0]
    torch.testing.assert_close(out["e_s"], e_s)
    torch.testing.assert_close(out["gate"], g)
    torch.testing.assert_close(out["e_ds"], e_ds)
    torch.testing.assert_close(out["e_di"], e_di)
    torch.testing.assert_close(out["t_logit"], run(model.t_head, e_ds)[:, 0])
    torch.testing.assert_close(out["ds_logit"], run(model.ds_head, e_ds)[:, 0])
    torch.testing.assert_close(out["di_logit"], run(model.di_head, e_di)[:, 0])
    torch.testing.assert_close(out["mr_logit"], fusion)
    torch.testing.assert_close(out["score"], 1 / (1 + torch.exp(-fusion)))


def test_ds_sd_scores_mean_of_heads_and_needs_no_t():
    model = tiny_reranker("DS_SD")
    out = model.heads(torch.randn(2, 16))
    torch.testing.assert_close(
        out["score"], (torch.sigmoid(out["ds_logit"]) + torch.sigmoid(out["di_logit"])) / 2
    )


def test_unknown_t_is_the_domain_heads_prediction_in_heads_and_rank():
    """t missing (None / NaN) -> [t_hat >= 0.5], the same rule in training (heads) and inference (rank)."""
    model = tiny_reranker("DSSDNet")
    e = torch.randn(4, 16)
    t = torch.tensor([1.0, float("nan"), 0.0, float("nan")])
    out = model.heads(e, t)
    predicted = (torch.sigmoid(out["t_logit"]) >= 0.5).float()
    torch.testing.assert_close(out["t"], torch.tensor([1.0, predicted[1], 0.0, predicted[3]]))
    assert out["t_known"].tolist() == [True, False, True, False]
    torch.testing.assert_close(out["mr_logit"], model.fuse(out["e_ds"], out["e_di"], out["t"]))
    torch.testing.assert_close(model.heads(e)["t"], predicted)  # no labels at all: all predicted
    extras = model.score_cls(e, [1, None, 0, None])
    assert extras["t"] == [int(v) for v in out["t"].tolist()]
    assert extras["t_source"] == ["codes", "predicted", "codes", "predicted"]
    torch.testing.assert_close(torch.tensor(extras["score"]), out["score"])


def test_gradcheck_whole_model_with_loss():
    model = tiny_reranker("DSSDNet", dtype=torch.float64, head_layers=2, rep_layers=2, proj_dim=4)
    batch = model.tokenize(
        ["chair seat", "lamp", "table top", "cup"], ["chair leg", "lamp shade bulb", "car", "cup lid"]
    )
    y = torch.tensor([1.0, 1.0, 0.0, 0.0], dtype=torch.float64)
    t = torch.tensor([1.0, 0.0, 0.0, 1.0], dtype=torch.float64)
    loss_fn = DSSDNetLoss(DSSDNetLossConfig(alpha=0.4, margin=0.9), "DSSDNet")
    names = [
        "encoder.encoder.layer.0.attention.self.query.weight",
        "proj.weight",
        "gate.bias",
        "mlp_di.0.weight",
        "t_embed.0.bias",
        "fusion.0.weight",
        "t_head.3.bias",
    ]
    params = dict(model.named_parameters())

    def total(*tensors):
        outputs = torch.func.functional_call(
            model, {**params, **dict(zip(names, tensors, strict=True))}, (), {**batch, "t": t}
        )
        losses = loss_fn(outputs, y, t)
        assert len(losses) == 7 and losses["pr_loss"] > 0
        return sum(losses.values())

    inputs = tuple(params[n].detach().clone().requires_grad_() for n in names)
    assert torch.autograd.gradcheck(total, inputs, eps=1e-6, atol=1e-6)


def test_rank_structure_domain_labels_and_counterfactual():
    model = tiny_reranker("DSSDNet")
    res = model.rank(QUERY, CANDIDATES, query_codes=QUERY_CODES, batch_size=2)
    assert isinstance(res, Results) and sorted(res.ids) == ["P1", "P2", "P3", "P4", "P5"]
    assert all(a >= b for a, b in zip(res.scores, res.scores[1:], strict=False))
    extras = dict(zip(res.ids, res.extras, strict=True))
    assert {k: (extras[k]["t"], extras[k]["t_source"]) for k in ("P1", "P2", "P3")} == {
        "P1": (1, "codes"),
        "P2": (0, "codes"),
        "P3": (1, "codes"),
    }
    for pid in ("P4", "P5"):  # no IPC code: the domain head decides
        ex = extras[pid]
        assert ex["t_source"] == "predicted" and ex["t"] == int(ex["t_hat"] >= 0.5)
    for pid, score in res:
        ex = extras[pid]
        assert len(ex["gate"]) == 16 and ex["gate_mean"] == pytest.approx(sum(ex["gate"]) / 16, abs=1e-6)
        assert ex["fusion"] == pytest.approx(score, abs=1e-7)
        assert 0 < ex["ds"] < 1 and 0 < ex["di"] < 1
    # the counterfactual is the fusion head on the same e_ds, e_di with 1 - t
    with torch.inference_mode():
        batch = model.tokenize([QUERY], [CANDIDATES[0][1]])
        out = model.decompose(model.encode(**batch))
        flipped = torch.sigmoid(model.fuse(out["e_ds"], out["e_di"], torch.tensor([0.0]))).item()
    assert extras["P1"]["score_t_flipped"] == pytest.approx(flipped, abs=1e-6)
    assert extras["P1"]["score_t_flipped"] != pytest.approx(extras["P1"]["fusion"], abs=1e-9)


def test_rank_without_query_codes_uses_predicted_domain_and_locarno_scheme():
    model = tiny_reranker("DSSDNet")
    res = model.rank(QUERY, CANDIDATES)
    assert all(ex["t_source"] == "predicted" for ex in res.extras)
    loc = tiny_reranker("DSSDNet", domain_scheme="locarno")
    cands = [
        ("A", "chair", {"locarno": ["06-01"]}),
        ("B", "lamp", {"locarno": ["26-05"]}),
        ("C", "seat", ["06-01"]),
    ]
    res = loc.rank("chair seat", cands, query_codes=["06-01"])
    assert {i: ex["t"] for i, ex in zip(res.ids, res.extras, strict=True)} == {"A": 1, "B": 0, "C": 1}


@pytest.mark.parametrize("variant", ["BERT(C)", "DS_SD", "DS_SD_MR", "DSSDNet"])
def test_batched_rank_equals_one_pair_at_a_time(variant):
    model = tiny_reranker(variant)
    batched = model.rank(QUERY, CANDIDATES, query_codes=QUERY_CODES, batch_size=32)
    single = [model.rank(QUERY, [c], query_codes=QUERY_CODES, batch_size=1) for c in CANDIDATES]
    by_id = {r.ids[0]: (float(r.scores[0]), r.extras[0]) for r in single}
    assert batched.ids == sorted(by_id, key=lambda i: -by_id[i][0])
    for pid, score, ex in zip(batched.ids, batched.scores, batched.extras, strict=True):
        ref_score, ref = by_id[pid]
        assert score == pytest.approx(ref_score, abs=1e-5)
        assert ex.keys() == ref.keys()
        for key, value in ex.items():
            if isinstance(value, float):
                assert value == pytest.approx(ref[key], abs=1e-5), key
            elif isinstance(value, list):
                assert value == pytest.approx(ref[key], abs=1e-5), key
            else:
                assert value == ref[key], key


def test_variants_without_fusion_report_none_and_score_independent_of_t():
    plain = tiny_reranker("BERT(C)").rank(QUERY, CANDIDATES, query_codes=QUERY_CODES)
    for ex, score in zip(plain.extras, plain.scores, strict=True):
        assert ex["gate"] is None and ex["ds"] is None and ex["fusion"] is None and ex["t_hat"] is None
        assert ex["score_t_flipped"] == pytest.approx(float(score), abs=1e-7)
    ds_sd = tiny_reranker("DS_SD").rank(QUERY, CANDIDATES, query_codes=QUERY_CODES)
    for ex, score in zip(ds_sd.extras, ds_sd.scores, strict=True):
        assert ex["fusion"] is None and ex["score_t_flipped"] == pytest.approx(float(score), abs=1e-7)
        assert float(score) == pytest.approx((ex["ds"] + ex["di"]) / 2, abs=1e-6)


def test_rank_never_switches_the_mode_and_handles_empty():
    """A shared model stays in eval: rank refuses a model in training mode instead of switching it
    (a switch back by one call turned dropout on under another concurrent call)."""
    model = tiny_reranker()
    assert len(model.rank(QUERY, [])) == 0
    model.rank(QUERY, CANDIDATES[:2])
    assert not model.training
    model.train()
    with pytest.raises(RuntimeError, match=r"Reranker.rank needs eval mode: call .eval\(\) once"):
        model.rank(QUERY, CANDIDATES[:2])
    assert model.training


def test_rank_is_deterministic_under_concurrency(tmp_path):
    """8 threads score the same pairs on one shared model as the app loads it (``Reranker.load``), one pair
    a batch so the calls interleave: identical ids and scores, bit for bit. (When ``load`` left the model
    in training mode and ``rank`` switched it per call, one call's exit turned dropout on under another.)"""
    from concurrent.futures import ThreadPoolExecutor

    tiny_reranker(dropout=0.5).save(tmp_path / "ckpt")
    model = Reranker.load(tmp_path / "ckpt")

    def run(_):
        return model.rank(QUERY, CANDIDATES * 40, query_codes=QUERY_CODES, batch_size=1)

    with ThreadPoolExecutor(8) as pool:
        runs = list(pool.map(run, range(8)))
    assert {tuple(r.ids) for r in runs} == {tuple(runs[0].ids)}
    assert {tuple(r.scores.tolist()) for r in runs} == {tuple(runs[0].scores.tolist())}


def test_truncation_to_max_length():
    model = tiny_reranker(max_length=12)
    batch = model.tokenize([" ".join(WORDS)], [" ".join(WORDS)])
    assert batch["input_ids"].shape == (1, 12)
    ids = batch["input_ids"][0].tolist()
    assert ids[0] == 2 and ids.count(3) == 2 and ids[-1] == 3  # [CLS] q [SEP] d [SEP]


def test_config_round_trip_and_unknown_keys():
    cfg = RerankerConfig(variant="DS_SD_MR", proj_dim=32, loss=DSSDNetLossConfig(alpha=0.3))
    assert RerankerConfig.from_config(json.loads(json.dumps(cfg.to_config()))) == cfg
    with pytest.raises(ValueError, match=r"unknown reranker config keys \['hidden'\]"):
        RerankerConfig.from_config({"hidden": 3})
    with pytest.raises(ValueError, match=r"unknown loss config keys \['beta'\]"):
        RerankerConfig.from_config({"loss": {"beta": 0.3}})
    with pytest.raises(ValueError, match="unknown variant 'DSSD'"):
        RerankerConfig(variant="DSSD")
    with pytest.raises(ValueError, match="unknown domain_scheme 'uspc'"):
        RerankerConfig(domain_scheme="uspc")


def test_packaged_configs():
    assert available_configs() == ["bert-base", "minilm"]
    minilm = load_config("minilm")
    assert (minilm.base, minilm.max_length, minilm.variant, minilm.loss.top_k) == (
        "minilm-l6",
        128,
        "DSSDNet",
        4,
    )
    ablation = load_config("bert-base", variant="DS_SD", loss={"alpha": 0.7})
    assert (ablation.base, ablation.variant, ablation.loss.alpha, ablation.loss.margin) == (
        "bert-base-uncased",
        "DS_SD",
        0.7,
        0.3,
    )
    with pytest.raises(
        ValueError, match=r"unknown reranker config 'bert'; available: \['bert-base', 'minilm'\]"
    ):
        load_config("bert")


def test_missing_base_fails_fast_with_instructions(tmp_path):
    with pytest.raises(BaseModelNotFound, match="holds no config.json"):
        resolve_base_path(RerankerConfig(base="bert-base-uncased", base_path=str(tmp_path)))
    with pytest.raises(BaseModelNotFound) as err:
        resolve_base_path(RerankerConfig(base="patent-demo-tests/no-such-model"))
    message = str(err.value)
    assert "hf download patent-demo-tests/no-such-model --local-dir <DIR>" in message
    assert "base_path" in message


def test_bert_base_offline_message_or_cached():
    cfg = load_config("bert-base")
    try:
        path = resolve_base_path(cfg)
    except BaseModelNotFound as err:
        assert "'bert-base-uncased' is not available offline" in str(err)
        assert "hf download bert-base-uncased --local-dir <DIR>" in str(err)
    else:
        assert path == "bert-base-uncased"


def test_base_that_does_not_match_its_config_is_refused(tmp_path):
    base = tiny_reranker().encoder
    base.save_pretrained(tmp_path)
    tiny_tokenizer().save_pretrained(tmp_path)
    cfg = json.loads((tmp_path / "config.json").read_text())
    (tmp_path / "config.json").write_text(json.dumps({**cfg, "num_hidden_layers": 2}))
    with pytest.raises(ValueError, match=r"does not match its config: \d+ weight\(s\) missing or mis-shaped"):
        create_reranker(RerankerConfig(base="tiny", base_path=str(tmp_path)))


def test_save_load_full_round_trip(tmp_path):
    model = tiny_reranker("DSSDNet")
    before = model.rank(QUERY, CANDIDATES, query_codes=QUERY_CODES)
    model.save(tmp_path / "ckpt", metrics={"map": 0.5})
    meta = json.loads((tmp_path / "ckpt" / "config.json").read_text())
    assert (meta["kind"], meta["delta"], meta["model"]["variant"]) == ("dssdnet", False, "DSSDNet")
    loaded = Reranker.load(tmp_path / "ckpt")
    after = loaded.rank(QUERY, CANDIDATES, query_codes=QUERY_CODES)
    assert after.ids == before.ids and after.scores.tolist() == before.scores.tolist()
    assert loaded.config == model.config


def test_save_delta_against_base(tmp_path):
    base_model = tiny_reranker("DS_SD_MR")
    base_dir = tmp_path / "base"
    base_model.encoder.save_pretrained(base_dir)
    base_model.tokenizer.save_pretrained(base_dir)
    model = create_reranker(RerankerConfig(base="tiny", base_path=str(base_dir), variant="DS_SD_MR", t_dim=6))
    base_state = {k: v.clone() for k, v in model.encoder.state_dict().items()}
    with torch.no_grad():
        model.encoder.embeddings.word_embeddings.weight[5] += 1.0
    delta = state_dict_delta(model, base_state)
    head_keys = {k for k in model.state_dict() if not k.startswith("encoder.")}
    assert set(delta) == head_keys | {"encoder.embeddings.word_embeddings.weight"}
    model.save(tmp_path / "ckpt", base_state=base_state)
    assert set(load_file(str(tmp_path / "ckpt" / "model.safetensors"))) == set(delta)
    loaded = Reranker.load(tmp_path / "ckpt")
    assert not loaded.training and not any(m.training for m in loaded.modules())  # eval once, at load
    for name, value in model.state_dict().items():
        assert torch.equal(loaded.state_dict()[name], value), name
    a = model.eval().rank(QUERY, CANDIDATES, query_codes=QUERY_CODES)
    b = loaded.rank(QUERY, CANDIDATES, query_codes=QUERY_CODES)
    assert a.ids == b.ids and a.scores.tolist() == b.scores.tolist()


def test_delta_stores_encoder_changes_as_float16_residuals(tmp_path):
    base_model = tiny_reranker("DSSDNet")
    base_dir = tmp_path / "base"
    base_model.encoder.save_pretrained(base_dir)
    base_model.tokenizer.save_pretrained(base_dir)
    model = create_reranker(RerankerConfig(base="tiny", base_path=str(base_dir), t_dim=6))
    base_state = {k: v.clone() for k, v in model.encoder.state_dict().items()}
    torch.manual_seed(3)
    with torch.no_grad():  # a whole-encoder fine-tune: every weight moves a little
        for p in model.encoder.parameters():
            p.add_(torch.randn_like(p) * 1e-3)
    model.save(tmp_path / "ckpt", base_state=base_state)
    stored = load_file(str(tmp_path / "ckpt" / "model.safetensors"))
    assert {v.dtype for k, v in stored.items() if k.startswith("encoder.")} == {torch.float16}
    assert {v.dtype for k, v in stored.items() if not k.startswith("encoder.")} == {torch.float32}
    assert json.loads((tmp_path / "ckpt" / "config.json").read_text())["residual"] == "float16"
    loaded = Reranker.load(tmp_path / "ckpt")
    for name, value in model.encoder.state_dict().items():
        residual = (value - base_state[name]).abs().max()
        assert (loaded.encoder.state_dict()[name] - value).abs().max() <= 1e-3 * residual + 1e-9, name
    a = model.eval().rank(QUERY, CANDIDATES, query_codes=QUERY_CODES)
    b = loaded.rank(QUERY, CANDIDATES, query_codes=QUERY_CODES)
    score_a = dict(zip(a.ids, a.scores.tolist(), strict=True))  # the tiny random model nearly ties some pairs
    assert all(abs(score_a[i] - s) < 1e-5 for i, s in zip(b.ids, b.scores.tolist(), strict=True))


def test_minilm_package_ranks_offline():
    model = create_reranker("minilm")
    assert not model.training  # the one constructor returns it in eval: a request never switches the mode
    assert model.hidden_size == 384 and model.encoder.config.num_hidden_layers == 6
    assert model.encoder.pooler is None  # only H_CLS is used
    cands = [
        ("US1", "A folding chair with an adjustable backrest and armrests.", {"ipc": ["A47C 4/04"]}),
        ("US2", "A pendant lamp with a conical shade.", {"ipc": ["F21V 1/00"]}),
        ("US3", "An office chair whose seat height is set by a gas spring.", {}),
    ]
    query = "Chair with adjustable seat height"
    batched = model.rank(query, cands, query_codes={"ipc": ["A47C 7/02"]}, batch_size=3)
    assert sorted(batched.ids) == ["US1", "US2", "US3"] and len(batched.extras[0]["gate"]) == 384
    for pid, score, ex in zip(batched.ids, batched.scores, batched.extras, strict=True):
        single = model.rank(query, [c for c in cands if c[0] == pid], query_codes={"ipc": ["A47C 7/02"]})
        assert float(score) == pytest.approx(float(single.scores[0]), abs=1e-5)
        assert ex["gate"] == pytest.approx(single.extras[0]["gate"], abs=1e-5)
        assert math.isfinite(ex["score_t_flipped"])
    assert {i: ex["t_source"] for i, ex in zip(batched.ids, batched.extras, strict=True)} == {
        "US1": "codes",
        "US2": "codes",
        "US3": "predicted",
    }


def test_mean_pooling_is_the_masked_mean_of_the_last_hidden_states():
    model = tiny_reranker(pooling="mean")
    batch = model.tokenize(["a chair", "a lamp with a long shade and a bulb"], ["seat", "light"])
    hidden = model.encoder(**batch).last_hidden_state
    for i in range(2):
        n = int(batch["attention_mask"][i].sum())
        assert torch.allclose(model.encode(**batch)[i], hidden[i, :n].mean(0), atol=1e-6)  # padding left out
    assert torch.equal(tiny_reranker().encode(**batch), hidden[:, 0])  # cls: H_CLS (Eq. 3)
    with pytest.raises(ValueError, match="unknown pooling 'max'"):
        RerankerConfig(pooling="max")
