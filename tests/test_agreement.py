import json
import subprocess
import sys
import warnings

import krippendorff
import numpy as np
import pytest
from sklearn.metrics import cohen_kappa_score

from patent_demo.labels.agreement import (
    AgreementUndefined,
    agreement_markdown,
    agreement_report,
    cohen_kappa,
    krippendorff_alpha,
    main,
)
from patent_demo.labels.store import Label, LabelStore, text_query_id

NAN = np.nan

# Krippendorff (2011), "Computing Krippendorff's alpha-reliability", the 4 observers x 12 units example.
TEXTBOOK = [
    [1, 2, 3, 3, 2, 1, 4, 1, 2, NAN, NAN, NAN],
    [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, NAN, 3],
    [NAN, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, NAN],
    [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, NAN],
]


def test_alpha_textbook_example():
    # Hand-worked nominal alpha: 40 pairable values with n_1..n_5 = 9, 13, 10, 5, 3, so
    # sum_{c!=k} n_c n_k = 40^2 - (81 + 169 + 100 + 25 + 9) = 1216; the off-diagonal coincidences are
    # 2 (unit 2: 2,2,3,2) + 4 (unit 6: 1,2,3,4) + 2 (unit 8: 1,1,2,1) = 8; alpha = 1 - 39 * 8 / 1216 = 113/152.
    assert krippendorff_alpha(TEXTBOOK, "nominal") == pytest.approx(113 / 152, abs=1e-12)
    # The published figures: nominal .743, ordinal .815, interval .849.
    assert [
        round(krippendorff_alpha(TEXTBOOK, level), 3) for level in ("nominal", "ordinal", "interval")
    ] == [
        0.743,
        0.815,
        0.849,
    ]


def test_kappa_hand_worked_examples():
    # Two labels, 50 items: yes/yes 20, yes/no 5, no/yes 10, no/no 15 -> p_o = .7, p_e = .5, kappa = .4.
    a = ["yes"] * 25 + ["no"] * 25
    b = ["yes"] * 20 + ["no"] * 5 + ["yes"] * 10 + ["no"] * 15
    assert cohen_kappa(a, b) == pytest.approx(0.4, abs=1e-12)
    # Three grades, 10 items, confusion (rows a, columns b, grades 0, 1, 2): [3 1 0; 1 2 1; 0 1 1].
    # p_o = 6/10, p_e = (16 + 16 + 4)/100 = .36, kappa = .24/.64 = .375. Linear weights |i - j|: observed
    # weighted disagreement 4/10; expected (16+16+8+8)/100 + 2 * (8+8)/100 = .8; kappa = 1 - .4/.8 = .5.
    a, b = zip(*CONFUSION_ITEMS, strict=True)
    assert cohen_kappa(a, b) == pytest.approx(0.375, abs=1e-12)
    assert cohen_kappa(a, b, weights="linear") == pytest.approx(0.5, abs=1e-12)


CONFUSION_ITEMS = [(0, 0), (0, 0), (0, 0), (0, 1), (1, 0), (1, 1), (1, 1), (1, 2), (2, 1), (2, 2)]


def test_kappa_matches_sklearn_on_random_cases():
    rng = np.random.default_rng(7)
    checked = undefined = 0
    for _ in range(120):
        n = int(rng.integers(2, 25))
        a = rng.integers(0, 3, n).tolist()
        # Correlated second rater: copy some of a, draw the rest.
        b = [x if rng.random() < 0.5 else int(rng.integers(0, 3)) for x in a]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # sklearn warns on the undefined cases checked below
            ref = cohen_kappa_score(a, b)
        if np.isnan(ref):
            with pytest.raises(AgreementUndefined, match="no variation"):
                cohen_kappa(a, b)
            undefined += 1
            continue
        assert cohen_kappa(a, b) == pytest.approx(ref, abs=1e-9)
        for w in ("linear", "quadratic"):
            ref_w = cohen_kappa_score(a, b, weights=w, labels=[0, 1, 2])
            assert cohen_kappa(a, b, weights=w, categories=[0, 1, 2]) == pytest.approx(ref_w, abs=1e-9)
        checked += 1
    assert checked > 100 and undefined >= 1


def test_kappa_errors():
    with pytest.raises(AgreementUndefined, match=r"fewer than 2 shared items \(1\)"):
        cohen_kappa(["not"], ["not"])
    with pytest.raises(AgreementUndefined, match="no variation: every shared item got the label 'not'"):
        cohen_kappa(["not", "not"], ["not", "not"])
    with pytest.raises(ValueError, match="different numbers of items: 2 and 3"):
        cohen_kappa([0, 1], [0, 1, 1])
    with pytest.raises(ValueError, match="weights 'cubic'"):
        cohen_kappa([0, 1], [0, 1], weights="cubic")
    # Both raters constant but different: kappa is defined (0), as in sklearn.
    assert cohen_kappa([0, 0], [2, 2]) == 0.0 == cohen_kappa_score([0, 0], [2, 2])


def test_alpha_matches_krippendorff_package_on_random_cases():
    rng = np.random.default_rng(11)
    checked = undefined = 0
    for _ in range(300):
        raters, units = int(rng.integers(2, 6)), int(rng.integers(2, 20))
        truth = rng.integers(0, 3, units)
        data = np.where(rng.random((raters, units)) < 0.7, truth, rng.integers(0, 3, (raters, units)))
        data = np.where(rng.random((raters, units)) < 0.35, NAN, data.astype(float))
        for level in ("nominal", "ordinal", "interval"):
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore", RuntimeWarning)
                    ref = krippendorff.alpha(data, level_of_measurement=level)
            except ValueError:
                ref = NAN
            if not np.isfinite(ref):
                with pytest.raises(AgreementUndefined):
                    krippendorff_alpha(data, level)
                undefined += 1
                continue
            assert krippendorff_alpha(data, level) == pytest.approx(ref, abs=1e-9)
            checked += 1
    assert checked > 800 and undefined >= 1


def test_alpha_errors():
    with pytest.raises(AgreementUndefined, match="no unit was judged by two or more annotators"):
        krippendorff_alpha([[1, NAN], [NAN, 2]])
    with pytest.raises(AgreementUndefined, match="no variation: every pairable judgement has the value 2"):
        krippendorff_alpha([[2, 2, 0], [2, 2, NAN]])
    with pytest.raises(ValueError, match="level 'ratio'"):
        krippendorff_alpha([[1, 2], [1, 2]], "ratio")


# -- through a real label store ------------------------------------------------------------------------

Q1 = text_query_id("a folding chair with a locking hinge")
Q2 = text_query_id("a stacking stool")
NAMES = {0: "not", 1: "partly", 2: "relevant"}


def _add(store, annotator, query_id, candidate, label, **kw):
    return store.add(
        Label(
            annotator=annotator,
            query_id=query_id,
            query_kind="text",
            query_text="q",
            candidate_id=candidate,
            list_name="dssdnet",
            rank=1,
            score=0.5,
            label=label,
            session_id=f"session-{annotator}",
            **kw,
        )
    )


@pytest.fixture
def store(tmp_path):
    s = LabelStore(tmp_path / "labels.sqlite")
    _add(s, "alice", Q1, "P1", "relevant")  # relabelled below: the latest label wins
    for i, (ga, gb) in enumerate(CONFUSION_ITEMS, start=1):
        _add(s, "alice", Q1, f"P{i}", NAMES[ga])
        _add(s, "bob", Q1, f"P{i}", NAMES[gb])
    _add(s, "bob", Q1, "P11", "relevant")
    assert s.undo_last("session-bob").candidate_id == "P11"  # undone: not a judgement
    _add(s, "carol", Q1, "P1", "not")  # shared with alice and bob, once each
    _add(s, "carol", Q1, "P12", "partly")  # judged by carol alone
    _add(s, "lead", Q1, "P4", "partly", adjudicated=True)  # settles alice/bob's P4 disagreement
    _add(s, "dave", Q2, "P1", "relevant")
    _add(s, "erin", Q2, "P1", "relevant")
    _add(s, "dave", Q2, "P2", "relevant")
    _add(s, "erin", Q2, "P2", "relevant")
    yield s
    s.close()


def test_report_from_store(store):
    report = agreement_report(store)
    pairs = {(p["a"], p["b"]): p for p in report["pairs"]}
    assert sorted(pairs) == [("alice", "bob"), ("alice", "carol"), ("bob", "carol"), ("dave", "erin")]
    ab = pairs[("alice", "bob")]
    assert (ab["n"], ab["observed_agreement"], ab["reason"]) == (10, 0.6, None)
    assert ab["kappa"] == pytest.approx(0.375, abs=1e-12)
    assert ab["kappa_linear"] == pytest.approx(0.5, abs=1e-12)
    for key in [("alice", "carol"), ("bob", "carol")]:
        assert pairs[key] == {
            "a": key[0],
            "b": key[1],
            "n": 1,
            "observed_agreement": 1.0,
            "kappa": None,
            "kappa_linear": None,
            "reason": "fewer than 2 shared items (1)",
        }
    de = pairs[("dave", "erin")]
    assert (de["n"], de["kappa"], de["kappa_linear"]) == (2, None, None)
    assert de["reason"] == "no variation: every shared item got the label 'relevant' from both"

    # Reliability data built by hand: raters alice, bob, carol, dave, erin; units Q1/P1..P10, Q1/P12,
    # Q2/P1, Q2/P2 (sorted as the report sorts them: by query id, then candidate id).
    cols = {(Q1, f"P{i}"): (ga, gb, NAN, NAN, NAN) for i, (ga, gb) in enumerate(CONFUSION_ITEMS, start=1)}
    cols[(Q1, "P1")] = (0, 0, 0, NAN, NAN)
    cols[(Q1, "P12")] = (NAN, NAN, 1, NAN, NAN)
    cols[(Q2, "P1")] = cols[(Q2, "P2")] = (NAN, NAN, NAN, 2, 2)
    data = np.array([cols[k] for k in sorted(cols)], dtype=float).T
    assert report["alpha_nominal"] == pytest.approx(
        krippendorff.alpha(data, level_of_measurement="nominal"), abs=1e-9
    )
    assert report["alpha_ordinal"] == pytest.approx(
        krippendorff.alpha(data, level_of_measurement="ordinal"), abs=1e-9
    )
    assert report["alpha_reason"] is None
    assert {
        k: report[k] for k in ("n_units", "n_items", "n_annotators", "n_disagreements", "n_adjudicated")
    } == {
        "n_units": 12,
        "n_items": 13,
        "n_annotators": 5,
        "n_disagreements": 3,  # P5, P8, P9; P4 is adjudicated
        "n_adjudicated": 1,
    }
    assert report["n_disagreements"] == len(store.disagreements())
    # The same labels given as a list (undone rows included) give the same report.
    assert agreement_report(store.labels(include_undone=True)) == report
    json.dumps(report, allow_nan=False)


def test_report_with_fewer_than_two_annotators(tmp_path):
    s = LabelStore(tmp_path / "one.sqlite")
    assert agreement_report(s)["alpha_reason"] == "fewer than 2 annotators (0)"
    _add(s, "alice", Q1, "P1", "relevant")
    _add(s, "alice", Q1, "P2", "not")
    report = agreement_report(s)
    assert report == {
        "pairs": [],
        "alpha_nominal": None,
        "alpha_ordinal": None,
        "alpha_reason": "fewer than 2 annotators (1)",
        "n_units": 0,
        "n_items": 2,
        "n_annotators": 1,
        "n_disagreements": 0,
        "n_adjudicated": 0,
    }
    _add(s, "bob", Q1, "P3", "relevant")  # two annotators, nothing shared
    assert agreement_report(s)["alpha_reason"] == "no unit was judged by two or more annotators"
    s.close()


def test_markdown(tmp_path):
    s = LabelStore(tmp_path / "md.sqlite")
    for cand, la, lb in [("P1", "relevant", "relevant"), ("P2", "not", "partly"), ("P3", "not", "not")]:
        _add(s, "alice", Q1, cand, la)
        _add(s, "bob", Q1, cand, lb)
    _add(s, "carol", Q1, "P1", "relevant")
    report = agreement_report(s)
    s.close()
    # alice/bob grades (2,2), (0,1), (0,0): kappa p_o = 2/3, p_e = (2*1 + 1*1)/9 = 1/3 -> .5; linear: observed
    # 1/3, expected sum a_i b_j |i - j| = 2/3 * 1 + 1/3 * 1 = 1 -> 2/3. Alpha over units (2,2,2), (0,1), (0,0):
    # n = 7, n_0, n_1, n_2 = 3, 1, 3; nominal 1 - 6 * 2 / (49 - 19) = .6; ordinal d_01 = d_12 = 4, d_02 = 16,
    # 1 - 6 * (2 * 4) / (2 * (3*4 + 3*4 + 9*16)) = 6/7.
    assert report["pairs"][0]["kappa"] == pytest.approx(0.5, abs=1e-12)
    assert report["pairs"][0]["kappa_linear"] == pytest.approx(2 / 3, abs=1e-12)
    assert report["alpha_nominal"] == pytest.approx(0.6, abs=1e-12)
    assert report["alpha_ordinal"] == pytest.approx(6 / 7, abs=1e-12)
    assert agreement_markdown(report) == (
        "## Annotator agreement\n"
        "\n"
        "3 annotators; 3 of 3 judged items have two or more judgements; 1 open disagreement; "
        "0 adjudicated items (left out of agreement).\n"
        "\n"
        "Krippendorff's alpha: nominal 0.600, ordinal 0.857.\n"
        "\n"
        "| annotator A | annotator B | shared items | agreement | kappa | linear kappa | note |\n"
        "|---|---|---:|---:|---:|---:|---|\n"
        "| alice | bob | 3 | 0.667 | 0.500 | 0.667 |  |\n"
        "| alice | carol | 1 | 1.000 | – | – | fewer than 2 shared items (1) |\n"
        "| bob | carol | 1 | 1.000 | – | – | fewer than 2 shared items (1) |\n"
    )


def test_cli_prints_json(store, tmp_path, capsys):
    path = str(store.path)
    out = subprocess.run(
        [sys.executable, "-m", "patent_demo.labels.agreement", path],
        capture_output=True,
        text=True,
        check=True,
    )
    assert json.loads(out.stdout) == json.loads(json.dumps(agreement_report(store)))
    assert main([path, "--markdown"]) == 0
    assert "| alice | bob | 10 | 0.600 | 0.375 | 0.500 |  |" in capsys.readouterr().out
    missing = tmp_path / "nope.sqlite"
    assert main([str(missing)]) == 2
    assert capsys.readouterr().err == f"error: label store {missing} does not exist\n"
    assert not missing.exists()


def test_markdown_names_are_inert(tmp_path):
    s = LabelStore(tmp_path / "names.sqlite")
    for i in range(1, 4):
        _add(s, "<img src=x>", Q1, f"P{i}", "relevant" if i % 2 else "not")
        _add(s, "a|b [c](d)", Q1, f"P{i}", "relevant")
    md = agreement_markdown(agreement_report(s))
    assert "<img" not in md and "&lt;img src=x&gt;" in md
    assert "| &lt;img src=x&gt; | a\\|b \\[c\\](d) | 3 |" in md
