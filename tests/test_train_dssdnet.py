"""``train/dssdnet/main.py`` end to end through ``main(argv)`` in ``--tiny`` mode (a tiny random BERT)."""

import json

import numpy as np
import pytest
import torch
from safetensors.torch import load_file

from patent_demo import checkpoint
from patent_demo.data.corpus import Corpus, Patent
from patent_demo.metrics import evaluate_run, read_run
from patent_demo.text import tasks
from patent_demo.text.reranker import Reranker
from patent_demo.text.search import rerank_run
from train.dssdnet import data as dssdnet_data
from train.dssdnet import main as dssdnet

TOPICS = [
    ("A47C 7/02", "chair seat with an adjustable back rest and padded arm rests"),
    ("F21V 1/00", "lamp shade of folded paper over a light bulb holder"),
    ("B65D 41/04", "bottle cap with a hinged lid and a child lock"),
    ("A43B 13/14", "shoe sole with a cushioned heel and a strap"),
    ("B62J 1/00", "bicycle saddle on a sprung seat post"),
    ("A47J 31/44", "coffee machine with a milk frother and a water tank"),
]


def _patents(n_per_topic=6):
    patents = []
    for t, (code, words) in enumerate(TOPICS):
        for i in range(n_per_topic):
            pid = f"P{t}{i:02d}"
            cites = [f"P{t}{j:02d}" for j in range(max(0, i - 2), i)]
            patents.append(
                Patent(
                    id=pid,
                    kind="utility",
                    title=f"{words.split()[0]} device {i}",
                    text=f"A {words}, variant {i}.",
                    codes={"ipc": [code]},
                    citations=cites,
                )
            )
    return patents


@pytest.fixture(scope="module")
def corpus_dir(tmp_path_factory):
    root = tmp_path_factory.mktemp("corpus")
    patents = _patents()
    splits = {"train": [], "val": [], "test": []}
    for p in patents:
        i = int(p.id[2:])
        splits["test" if i == 5 else "val" if i == 4 else "train"].append(p.id)
    qrels = {p.id: {c: 1 for c in p.citations} for p in patents if p.id in splits["test"]}
    Corpus(root=root, patents=patents, splits=splits, qrels=qrels, name="tiny").save(root)
    return root


@pytest.fixture(scope="module")
def tsv_path(tmp_path_factory):
    path = tmp_path_factory.mktemp("tsv") / "pairs.tsv"
    rows = ["Quality\t#1 ID\t#2 ID\t#1 String\t#2 String\tipc_1\tipc_2\tipc_3\tindex"]
    k = 0
    for t, (_, words) in enumerate(TOPICS):
        for q in range(4):
            other = TOPICS[(t + 1) % len(TOPICS)][1]
            rows.append(f"1\tQ{t}{q}\tD{t}{q}a\t{words} {q}\t{words} again\t1\t1\t1\t{k}")
            rows.append(f"0\tQ{t}{q}\tD{t}{q}b\t{words} {q}\t{other}\t0\t0\t0\t{k + 1}")
            k += 2
    path.write_text("\n".join(rows) + "\n", encoding="utf-8")
    return path


def _run(tmp_path, name, *extra):
    out = tmp_path / name
    argv = [
        "--tiny",
        "--out",
        str(out),
        "--epochs",
        "1",
        "--threads",
        "1",
        "--log-every",
        "1000",
        *map(str, extra),
    ]
    assert dssdnet.main(argv) == 0
    return out


def _stored(out):
    return load_file(str(out / checkpoint.WEIGHTS))


def test_tsv_source(tmp_path, tsv_path):
    out = _run(
        tmp_path,
        "tsv",
        "--tsv",
        tsv_path,
        "--val-fraction",
        "0.3",
        "--test-fraction",
        "0.3",
        "--variant",
        "ds_sd",
    )
    task = dssdnet_data.tsv_task(tsv_path, 0.3, 0.3)
    n = {s: len({p.qid for p in task.pairs[s]}) for s in tasks.SPLITS}
    assert sum(n.values()) == 24 and min(n.values()) > 0
    metrics = checkpoint.load_metrics(out)
    assert metrics["after"]["num_queries"] == n["test"] and metrics["epochs_run"] == 1
    assert metrics["evaluation"]["protocol"].startswith("each held-out query's labelled candidates: BM25")
    config = checkpoint.load_config(out)
    assert config["kind"] == "dssdnet" and config["delta"] is True and config["model"]["variant"] == "DS_SD"
    assert config["train"]["train_pairs_per_epoch"] == len(task.pairs["train"])
    # only the heads and the top encoder layer are stored (--train-layers 1 of 2)
    enc = {k.split(".")[3] for k in _stored(out) if k.startswith("encoder.")}
    assert enc == {"1"}
    assert (out / "command.txt").read_text().split()[1:4] == ["-m", "train.dssdnet", "--tiny"]
    assert not (out / checkpoint.STATE).exists()


def test_jsonl_source_with_library(tmp_path, corpus_dir):
    library = Corpus.load(corpus_dir, validate=False)
    rows = []
    for t, (code, words) in enumerate(TOPICS):
        for q in range(3):
            rows.append(
                {
                    "query_id": f"L{t}{q}",
                    "query": f"{words} {q}",
                    "query_codes": {"ipc": [code]},
                    "pos": [
                        {"id": f"P{t}0{q}", "grade": 2},
                        {"id": "X1", "text": f"{words} new", "codes": {"ipc": [code]}, "grade": 1},
                    ],
                    "neg": [{"id": f"P{(t + 1) % 6}00", "grade": 0}],
                }
            )
    path = tmp_path / "labels.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    out = _run(
        tmp_path,
        "jsonl",
        "--labels",
        path,
        "--corpus",
        corpus_dir,
        "--variant",
        "bert_c",
        "--k-first",
        "10",
        "--ks",
        "5",
        "10",
    )
    task = dssdnet_data.jsonl_task(path, library, "auto", "subclass", 0.15, 0.15, 0)
    train = task.pairs["train"]
    # 2 positives and 1 negative per row, topped up with one random library negative
    assert len(train) == 4 * len({p.qid for p in train})
    assert sorted({(p.y, p.t) for p in train if p.doc_id != "X1" and p.y == 1}) == [(1.0, 1.0)]
    metrics = checkpoint.load_metrics(out)
    # evaluated on the library's test queries (each test patent cites two earlier ones)
    assert metrics["after"]["num_queries"] == 6 and metrics["bm25"]["num_queries"] == 6
    assert checkpoint.load_config(out)["train"]["num_labels"] == sum(len(v) for v in task.pairs.values())


def test_jsonl_without_text_needs_library(tmp_path):
    path = tmp_path / "labels.jsonl"
    path.write_text(json.dumps({"query": "chair", "pos": [{"id": "P1"}], "neg": []}) + "\n", encoding="utf-8")
    with pytest.raises(ValueError, match=r"labels.jsonl:1: pos\[0\]: candidate 'P1' has no 'text'"):
        dssdnet_data.jsonl_task(path)


@pytest.mark.parametrize("layers", [1, 0])
def test_corpus_source_checkpoint_reload_reproduces_scores(tmp_path, corpus_dir, layers):
    # layers 0: heads only, trained and evaluated on cached encoder features; the reloaded model
    # re-encodes every pair, so equal scores show the cache changes nothing
    out = _run(
        tmp_path,
        "corpus",
        "--corpus",
        corpus_dir,
        "--k-first",
        "12",
        "--k-rerank",
        "8",
        "--ks",
        "4",
        "8",
        "12",
        "--bm25-negatives",
        "1",
        "--write-run",
        "--train-layers",
        layers,
        "--feature-cache",
        tmp_path / "features",
    )
    stored_layers = {k.split(".")[3] for k in _stored(out) if k.startswith("encoder.")}
    assert stored_layers == ({"1"} if layers else set())
    assert (tmp_path / "features").is_dir() == (layers == 0)
    metrics = checkpoint.load_metrics(out)
    assert metrics["evaluation"]["k_rerank"] == 8 and metrics["evaluation"]["queries"] == 6
    assert checkpoint.load_config(out)["model"]["domain_scheme"] == "ipc"
    library = Corpus.load(corpus_dir, validate=False)
    task = tasks.corpus_task(library)
    assert [len(task.queries[s]) for s in tasks.SPLITS] == [18, 6, 6]
    model = Reranker.load(out).eval()
    run = rerank_run(task.bm25, model, task.queries["test"], library, k_first=12, k_rerank=8)
    written = read_run(out / "run.test.txt")
    for qid, res in run.items():
        assert sorted(written[qid], key=lambda d: -written[qid][d]) == res.ids
        np.testing.assert_allclose([written[qid][d] for d in res.ids], res.scores, rtol=1e-6)
    again = evaluate_run(run, task.qrels["test"], [4, 8, 12])
    assert {k: round(v, 6) for k, v in again.items()} == metrics["after"]
    # beyond the re-ranked head the BM25 order is kept, so recall at k_first equals BM25's
    assert metrics["after"]["recall@12"] == metrics["bm25"]["recall@12"]


def test_early_stopping(tmp_path, corpus_dir):
    # with learning rate 0 the validation loss never decreases: patience 1 stops after epoch 2
    out = _run(
        tmp_path,
        "early",
        "--corpus",
        corpus_dir,
        "--epochs",
        "5",
        "--patience",
        "1",
        "--lr",
        "0",
        "--head-lr",
        "0",
        "--no-eval-before",
        "--k-first",
        "6",
    )
    metrics = checkpoint.load_metrics(out)
    assert metrics["stop_reason"] == "early stopping" and [h["epoch"] for h in metrics["history"]] == [1, 2]
    assert metrics["history"][0]["val_loss"] == metrics["history"][1]["val_loss"]


def test_resume_matches_uninterrupted(tmp_path, corpus_dir):
    common = [
        "--corpus",
        corpus_dir,
        "--no-eval-before",
        "--k-first",
        "6",
        "--patience",
        "5",
        "--head-lr",
        "1e-3",
        "--seed",
        "3",
    ]
    full = _run(tmp_path, "full", *common, "--epochs", "2")
    part = _run(tmp_path, "part", *common, "--epochs", "1", "--keep-state")
    assert checkpoint.load_train_state(part)["epoch"] == 1
    _run(tmp_path, "part", *common, "--epochs", "2", "--resume")
    a, b = checkpoint.load_metrics(full), checkpoint.load_metrics(part)
    assert [h["epoch"] for h in b["history"]] == [1, 2]
    assert a["history"] == b["history"] and a["after"] == b["after"]
    wa, wb = _stored(full), _stored(part)
    assert sorted(wa) == sorted(wb)
    assert all(torch.equal(wa[k], wb[k]) for k in wa)


def test_hash_split_is_stable():
    # u = first 8 hex digits of sha1 / 2**32: a 0.527, b 0.913, c 0.518, d 0.235
    assert [tasks.hash_split(q, 0.15, 0.3) for q in "abcd"] == ["train", "train", "train", "test"]
    assert [tasks.hash_split(q, 0.3, 0.5) for q in "abcd"] == ["val", "train", "val", "test"]


def test_labels_on_test_queries_are_held_out_by_the_leak_guard(tmp_path, corpus_dir):
    library = Corpus.load(corpus_dir, validate=False)
    test_ids = sorted(library.splits["test"])
    rows = [
        {
            "query_id": "leak",
            "query_patent_id": test_ids[0],
            "query": "a test patent as the query",
            "pos": [{"id": "P000"}],
            "neg": [{"id": "P100"}],
        },
        {
            "query_id": "fine",
            "query": "chair seat with a back rest",
            "query_codes": {"ipc": ["A47C 7/02"]},
            "pos": [{"id": "P001"}, {"id": test_ids[1]}],
            "neg": [{"id": "P101"}],
        },
    ]
    path = tmp_path / "labels.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    common = [
        "--labels",
        path,
        "--corpus",
        corpus_dir,
        "--variant",
        "bert_c",
        "--k-first",
        "6",
        "--ks",
        "5",
        "--val-fraction",
        "0",
        "--test-fraction",
        "0",
        "--no-eval-before",
    ]
    out = _run(tmp_path, "guarded", *common)
    guard = checkpoint.load_config(out)["train"]["labels"]
    assert guard["queries_held_out"] == 1 and guard["held_out_query_ids"] == ["leak"]
    assert guard["candidates_held_out"] == 1  # the judged test-split patent of the kept query
    assert checkpoint.load_config(out)["train"]["train_pairs_per_epoch"] == 2
    allowed = _run(tmp_path, "allowed", *common, "--allow-test-labels")
    assert checkpoint.load_config(allowed)["train"]["train_pairs_per_epoch"] == 6  # 2 + 3 + 1 top-up negative


def test_constant_domain_flag_trains_with_a_message_and_default_alpha(tmp_path, tsv_path, caplog):
    constant = tmp_path / "constant.tsv"
    lines = tsv_path.read_text(encoding="utf-8").splitlines()
    constant.write_text(
        "\n".join(
            [lines[0]]
            + [
                ln[: ln.rindex("\t1\t" if "\t1\t" in ln else "\t0\t")] + "\t1\t1\t1\t" + ln.split("\t")[-1]
                for ln in lines[1:]
            ]
        )
        + "\n",
        encoding="utf-8",
    )
    assert {row.split("\t")[7] for row in constant.read_text().splitlines()[1:]} == {"1"}
    with caplog.at_level("WARNING", logger="train.dssdnet"):
        out = _run(tmp_path, "constant", "--tsv", constant, "--val-fraction", "0.3", "--test-fraction", "0.3")
    assert (
        "every training pair has the same domain label" in caplog.text and "alpha set to 0.5" in caplog.text
    )
    assert checkpoint.load_config(out)["train"]["alpha"] == 0.5


def test_config_file_sets_hyperparameter_defaults_and_model_names_the_architecture(tmp_path, capsys):
    from train.dssdnet.args import parse_args

    cfg = tmp_path / "hp.json"
    cfg.write_text(json.dumps({"lr": 3e-4, "epochs": 2, "batch_size": 16}), encoding="utf-8")
    args = parse_args(["--config", str(cfg), "--tsv", "x.tsv", "--out", "o", "--epochs", "5"])
    assert (args.lr, args.epochs, args.batch_size, args.model) == (3e-4, 5, 16, "minilm")
    assert parse_args(["--model", "reranker-bert-base", "--out", "o"]).model == "bert-base"
    bad = tmp_path / "bad.json"
    for content, message in (
        (json.dumps({"learning_rate": 1}), "unknown key"),
        (json.dumps({"model": "x"}), "architecture"),
    ):
        bad.write_text(content, encoding="utf-8")
        with pytest.raises(SystemExit):
            parse_args(["--config", str(bad), "--out", "o"])
        assert message in capsys.readouterr().err


def test_validation_pairs_are_shuffled_so_batches_mix_labels(corpus_dir):
    from train.dssdnet.args import parse_args

    args = parse_args(["--corpus", str(corpus_dir), "--out", "o"])
    val = dssdnet_data.training_data(args).val_pairs
    ys = [p.y for p in val]
    assert 0 < sum(ys) < len(ys)
    assert ys != sorted(ys, reverse=True)  # not all positives first
    first = ys[: len(ys) // 2]
    assert 0 < sum(first) < len(first)


def test_family_members_share_a_split_and_give_positives():
    patents = [
        Patent(
            id=f"F{i}",
            kind="utility",
            title=f"pump {i}",
            text="a pump",
            codes={"ipc": ["F04B 1/00"]},
            extra={"family_members": [f"F{i ^ 1}"]},
            citations=[f"F{(i + 2) % 40}"],
        )
        for i in range(40)
    ]
    library = Corpus(root=".", patents=patents, name="families")
    fam = tasks.families(library)
    assert fam["F0"] == fam["F1"] == "F0" and fam["F3"] == "F2"
    task = tasks.corpus_task(library, val_fraction=0.2, test_fraction=0.3)
    split = {q: s for s in tasks.SPLITS for q in task.qrels[s]}
    assert all(split[f"F{i}"] == split[f"F{i ^ 1}"] for i in range(40))
    assert len(set(split.values())) == 3
    pairs = task.family_pairs("train", np.random.default_rng(0))
    pos = [p for p in pairs if p.y == 1]
    assert len(pos) == len(pairs) // 2 and all(
        split[p.qid] == "train" and fam[p.doc_id] == fam[p.qid] for p in pos
    )


def test_scored_pairs_source_with_ablation_flags(tmp_path, scored_csv):
    csv_path, split_path = scored_csv
    split = json.loads(split_path.read_text())
    assert sum(split["stats"]["anchors"].values()) == 18 and min(split["stats"]["anchors"].values()) > 0
    out = _run(
        tmp_path,
        "scored",
        "--scored-pairs",
        csv_path,
        "--scored-split",
        split_path,
        "--eval-splits",
        "val",
        "test",
        "--select-on",
        "pearson",
        "--schedule",
        "linear",
        "--no-gate",
        "--loss-off",
        "orth",
        "t",
    )
    metrics = checkpoint.load_metrics(out)
    for s in ("val", "test"):
        after = metrics["splits"][s]["after"]
        assert after["pairs"] == 4 * split["stats"]["anchors"][s] and -1 <= after["pearson"] <= 1
        assert "pearson" in metrics["splits"][s]["biencoder"]  # the untrained bi-encoder's cosine
    assert "val_pearson" in metrics["history"][0]
    assert metrics["evaluation"]["protocol"].startswith("Pearson and Spearman")
    config = checkpoint.load_config(out)
    assert config["model"]["gate"] is False and config["model"]["domain_scheme"] == "cpc"
    assert config["model"]["loss"]["orth_weight"] == 0 and config["model"]["loss"]["t_weight"] == 0
    assert config["model"]["loss"]["rec_weight"] == 1
    # the training pairs carry t where the pair was scored in two contexts (here: differently -> 1)
    task = dssdnet_data.scored_task(csv_path, split_path)
    known = [p.t for p in task.pairs["train"] if p.t == p.t]
    assert known and set(known) == {1.0}
    assert all(p.t != p.t for s in ("val", "test") for p in task.pairs[s])  # never from held-out labels
    # the gate-off model scores as saved (g = 0.5, no W_g)
    model = Reranker.load(out)
    assert model.gate is None
    e = torch.randn(3, model.hidden_size)
    assert torch.all(model.decompose(e)["gate"] == 0.5)


def test_fine_tune_from_scored_pairs_onto_citations_takes_the_new_scheme(tmp_path, scored_csv, corpus_dir):
    csv_path, split_path = scored_csv
    parent = _run(
        tmp_path, "parent", "--scored-pairs", csv_path, "--scored-split", split_path, "--eval-splits", "val"
    )
    child = _run(tmp_path, "child", "--corpus", corpus_dir, "--init-from", parent, "--no-eval-before")
    config = checkpoint.load_config(child)
    assert config["model"]["domain_scheme"] == "ipc" and config["train"]["parent"] == str(parent)
    assert 0 < config["model"]["loss"]["alpha"] < 1
    assert "map@100" in checkpoint.load_metrics(child)["after"]
