"""Patent numbers in the forms examiners type them, and one hit per family, on hand-built corpora.

Tests: patent_demo/numbers.py, patent_demo/families.py
"""

from __future__ import annotations

import numpy as np
import pytest

from patent_demo.data.corpus import Corpus, Patent
from patent_demo.families import collapse, family_sets
from patent_demo.numbers import number_key, resolve_patent_id
from patent_demo.results import Results

CORPUS = Corpus(
    ".",
    [
        Patent("USD0929297"),
        Patent("US06836899"),
        Patent("EP1870505A2", extra={"family_members": ["US20080016626A1", "JP2008000001A"]}),
        Patent("US20080016626A1"),
        Patent("EP0049154B1"),
        Patent("EP0049154B2"),
        Patent("D1", extra={"family": "f1"}),
        Patent("D2", extra={"family": "f1"}),
    ],
)


@pytest.mark.parametrize(
    ("typed", "expected"),
    [
        ("USD0929297", "USD0929297"),
        ("D929,297", "USD0929297"),
        ("USD929297S1", "USD0929297"),
        ("us d0929297", "USD0929297"),
        ("usd0929297", "USD0929297"),
        ("6,836,899", "US06836899"),
        ("US 6836899 B1", "US06836899"),
        ("ep1870505", "EP1870505A2"),
        ("EP0049154B2", "EP0049154B2"),
        ("EP 0049154 B1", "EP0049154B1"),
    ],
)
def test_resolve_patent_id(typed, expected):
    assert resolve_patent_id(CORPUS, typed) == expected


def test_number_key_and_the_messages():
    assert number_key("D929,297") == number_key("USD0929297S1") == "USD929297"
    with pytest.raises(KeyError, match="no document D999,999 in this corpus"):
        resolve_patent_id(CORPUS, "D999,999")
    with pytest.raises(
        KeyError, match="EP0049154 matches 2 documents: EP0049154B1, EP0049154B2; type one of them"
    ):
        resolve_patent_id(CORPUS, "EP0049154")
    with pytest.raises(KeyError, match="is not a patent number"):
        resolve_patent_id(CORPUS, "chair")


def test_family_sets_join_listed_members_and_shared_ids():
    fam = family_sets(CORPUS)
    assert fam["EP1870505A2"] == fam["US20080016626A1"] == {"EP1870505A2", "US20080016626A1"}
    assert fam["D1"] == {"D1", "D2"} and fam["USD0929297"] == {"USD0929297"}


def test_collapse_keeps_the_best_member_and_lists_the_others():
    res = Results(["US20080016626A1", "D2", "EP1870505A2", "D1", "USD0929297"], np.array([5.0, 4, 3, 2, 1]))
    out = collapse(res, CORPUS, k=2)
    assert out.ids == ["US20080016626A1", "D2"] and list(out.scores) == [5.0, 4.0]
    assert out.extras == [{"family_also": ["EP1870505A2"]}, {"family_also": ["D1"]}]
    assert collapse(res, CORPUS).ids == ["US20080016626A1", "D2", "USD0929297"]


def test_identical_texts_are_one_family_in_lists_as_in_the_text_split():
    """A continuation repeats its parent's title and abstract without listing it as family: the lists
    collapse it as the split does (one definition, ``patent_demo.data.families``)."""
    corpus = Corpus(
        ".",
        [
            Patent("US6535378", title="Headphone", text="A headphone with a band."),
            Patent("US5583744", title="HEADPHONE", text="A headphone, with a band"),
            Patent("US7000000", title="Chair", text="A chair."),
        ],
    )
    fam = family_sets(corpus)
    assert fam["US6535378"] == fam["US5583744"] == {"US6535378", "US5583744"}
    assert fam["US7000000"] == {"US7000000"}
    res = Results(["US5583744", "US7000000", "US6535378"], np.array([3.0, 2, 1]))
    assert collapse(res, corpus).ids == ["US5583744", "US7000000"]


def test_own_and_family_leaves_out_identical_text_twins_and_listed_members():
    """Excluding a query's own patent uses the same families as collapse and the split: a continuation with
    the query's text is left out with it, listed members too, an unrelated patent is not."""
    from patent_demo.examiner import own_and_family

    corpus = Corpus(
        ".",
        [
            Patent("US6535378", title="Headphone", text="A headphone with a band."),
            Patent("US5583744", title="HEADPHONE", text="A headphone, with a band"),
            Patent("US7000000", title="Chair", text="A chair."),
        ],
    )
    assert own_and_family(corpus, "US5583744") == {"US6535378", "US5583744"}
    assert own_and_family(corpus, "US7000000") == {"US7000000"}
    assert own_and_family(CORPUS, "EP1870505A2") == {"EP1870505A2", "US20080016626A1"}
    assert own_and_family(CORPUS, "D1") == {"D1", "D2"}
    assert own_and_family(CORPUS, "NOPE") == set()
