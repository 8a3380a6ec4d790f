"""``train.hmcl.labels``: Locarno classes of the USPC drawings derived from their titles. The rule on a
hand-worked case (bag-of-words embeddings, so every cosine is known), and the committed label file checked
against the grants it was measured on."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from train.hmcl.labels import MIN_ACCURACY, Deriver, Grant, load

ROOT = Path(__file__).resolve().parents[1]


def bag_of_words(texts):
    vocab = ["chair", "table", "lamp", "stool", "desk", "shoe"]
    rows = [[float(w in t.lower().split()) for w in vocab] for t in texts]
    x = np.asarray(rows) + 1e-9
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def test_rule_on_a_hand_worked_case():
    grants = [
        Grant("chair", 6, "06", "06-01"),
        Grant("chair stool", 6, "06", "06-01"),
        Grant("table", 6, "06", "06-03"),
        Grant("desk table", 6, "06", "06-03"),
        Grant("lamp", 26, "26", "26-05"),
        Grant("shoe", 2, "02", "02-04"),
    ]
    products = (["chair", "table", "lamp", "shoe"], ["06", "06", "26", "02"])
    d = Deriver(grants, products, bag_of_words)
    # USPC D6 -> Locarno 06, confirmed by the product "chair"; D34 has no Locarno twin: the product decides
    mains = d.mains(bag_of_words(["chair", "lamp", "lamp"]), [6, 6, 34])
    assert mains == [("06", True), ("06", False), ("26", False)]
    # nearest grant of the same main class; a grant never labels itself under leave-one-out
    assert d.subclasses(bag_of_words(["chair"]), ["06"])[0] == ("06-01", pytest.approx(1.0))
    assert d.subclasses(bag_of_words(["lamp"]), ["26"], leave_out=[4]) == [("", 0.0)]
    check = d.check()
    assert check["grants"] == 6 and check["main_accuracy"] == 1.0
    # leave-one-out: chair<-chair stool, chair stool<-chair, table<-desk table, desk table<-table right;
    # the lamp and the shoe have no other grant of their class
    assert check["subclass_accuracy_all"] == pytest.approx(4 / 6)
    labels = d.derive([("USD1", 6, "desk"), ("USD2", 6, "shoe lamp")], check["threshold"])
    assert labels["USD1"]["subclass"] == "06-03" and labels["USD1"]["main"] == "06"
    assert labels["USD2"]["subclass"] == ""  # no grant of 06 near: below the threshold, kept unlabelled


def test_committed_labels_follow_their_rule():
    doc = json.loads((ROOT / "splits" / "uspc2007_locarno.json").read_text(encoding="utf-8"))
    check = doc["check_on_grants"]
    assert check["grants"] == 220 and doc["drawings"] == len(doc["labels"]) == 1000
    assert check["subclass_kept_accuracy"] >= MIN_ACCURACY
    smaller = [c for c in check["subclass_curve"] if c["threshold"] < check["threshold"]]
    assert all(c["accuracy"] < MIN_ACCURACY for c in smaller)  # the smallest threshold that reaches it
    labels = doc["labels"]
    assert sum(1 for v in labels.values() if v["subclass"]) == doc["subclass_kept"]
    for lab in labels.values():
        assert (lab["subclass"] == "") == (lab["similarity"] < check["threshold"])
        assert not lab["subclass"] or lab["subclass"].startswith(lab["main"] + "-")
    keys = load(ROOT / "splits" / "uspc2007_locarno.json", confirmed_only=True)
    assert sum(1 for _, m in keys.values() if m) == doc["main_confirmed"]


def test_rule_reproduces_the_committed_figures_on_the_real_grants():
    """The grants' check recomputed from ../shared/data with the packaged MiniLM gives the committed figures."""
    from tests.conftest import require_shared

    require_shared("uspto_grant_xml_samples")
    from train.hmcl.labels import DATA, minilm_embed, read_grants, read_products

    doc = json.loads((ROOT / "splits" / "uspc2007_locarno.json").read_text(encoding="utf-8"))
    check = Deriver(read_grants(ROOT / DATA), read_products(ROOT / DATA), minilm_embed()).check()
    assert check["threshold"] == doc["check_on_grants"]["threshold"]
    for key in (
        "main_accuracy",
        "main_confirmed_accuracy",
        "subclass_kept_accuracy",
        "subclass_accuracy_all",
    ):
        assert check[key] == pytest.approx(doc["check_on_grants"][key], abs=0.01)
