"""Patent numbers in the forms examiners type them, and one hit per family, on hand-built corpora.

Tests: patent_demo/numbers.py, patent_demo/families.py
"""

from __future__ import annotations

import numpy as np
import pytest

from patent_demo.data.corpus import Corpus, Patent
from patent_demo.families import collapse, family_sets, same_text_sets
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


NUMBERED = Corpus(
    ".",
    [
        Patent("USD0929297", extra={"application_number": "29750839"}),
        Patent("USD0929296", extra={"application_number": "29750842"}),
        Patent("US00929296", kind="utility"),  # a 1909 utility patent: the digits of D929,296
        Patent("US08421425", kind="utility", extra={"application_number": "12345678"}),
    ],
)


@pytest.mark.parametrize(
    ("typed", "expected"),
    [
        ("USD0929297-20210831", "USD0929297"),  # a Red Book file stem: the number and its publication date
        ("usd0929297-20210831", "USD0929297"),
        ("929297", "USD0929297"),  # bare digits: the one series that has them
        ("929,297", "USD0929297"),
        ("29/750,842", "USD0929296"),  # the application number, as printed and as digits
        ("29/750842", "USD0929296"),
        ("29750842", "USD0929296"),
        ("29/750,839", "USD0929297"),
        ("12/345,678", "US08421425"),
        ("8421425", "US08421425"),
        ("D929296", "USD0929296"),  # with the series letter: the design only, the utility 929,296 aside
        ("US929296", "US00929296"),
    ],
)
def test_resolve_stems_bare_digits_and_application_numbers(typed, expected):
    assert resolve_patent_id(NUMBERED, typed) == expected


def test_bare_digits_of_two_series_and_unknown_applications_are_refused_plainly():
    with pytest.raises(
        KeyError, match="929296 matches 2 documents: USD0929296, US00929296; type one of them"
    ):
        resolve_patent_id(NUMBERED, "929296")
    with pytest.raises(KeyError, match="no application 29/999,999 in this corpus"):
        resolve_patent_id(NUMBERED, "29/999,999")
    with pytest.raises(KeyError, match="no document 29999999 in this corpus"):
        resolve_patent_id(NUMBERED, "29999999")
    with pytest.raises(KeyError, match="no document USD0111111 in this corpus"):
        resolve_patent_id(NUMBERED, "USD0111111-20210831")


def test_application_number_is_printed_as_the_office_prints_it():
    from patent_demo.numbers import application_number

    assert application_number("29750842") == "29/750,842"
    assert application_number("29/750,842") == "29/750,842"
    assert application_number("1") == "1"


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


TWINS = Corpus(
    ".",
    [
        Patent("US6535378", kind="utility", title="Headphone", text="A headphone with a band."),
        Patent("US5583744", kind="utility", title="HEADPHONE", text="A headphone, with a band"),
        Patent("US7000000", kind="utility", title="Chair", text="A chair."),
    ],
)


def test_identical_utility_texts_are_a_signal_not_a_family():
    """Utility patents with the same title and abstract but no bibliographic link are not one family:
    neither collapsed nor left out with the query's own patent, each marked "same text" of the other."""
    from patent_demo.families import own_and_family

    fam = family_sets(TWINS)
    assert fam["US6535378"] == {"US6535378"} and fam["US5583744"] == {"US5583744"}
    assert same_text_sets(TWINS) == {"US6535378": ["US5583744"], "US5583744": ["US6535378"]}
    res = Results(["US5583744", "US7000000", "US6535378"], np.array([3.0, 2, 1]))
    assert collapse(res, TWINS).ids == ["US5583744", "US7000000", "US6535378"]
    assert own_and_family(TWINS, "US5583744") == {"US5583744"}
    assert own_and_family(CORPUS, "EP1870505A2") == {"EP1870505A2", "US20080016626A1"}
    assert own_and_family(CORPUS, "D1") == {"D1", "D2"}
    assert own_and_family(CORPUS, "NOPE") == set()


def test_design_boilerplate_twins_are_separate_designs():
    """Two design applications with the same title and figure descriptions and no related-application data
    (as USD0929297 and USD0929296, applications 29/750,839 and 29/750,842): two families, no "same text"
    mark, and the record of each lists no family."""
    from patent_demo.document import document_view, family_members
    from patent_demo.families import own_and_family

    text = "FIG. 1 is a front view of a tray showing our new design;\nFIG. 2 is a rear view thereof."
    corpus = Corpus(
        ".",
        [
            Patent("USD0929297", title="Tray", text=text, extra={"application_number": "29750839"}),
            Patent("USD0929296", title="Tray", text=text, extra={"application_number": "29750842"}),
        ],
    )
    fam = family_sets(corpus)
    assert fam["USD0929297"] == {"USD0929297"} and fam["USD0929296"] == {"USD0929296"}
    assert same_text_sets(corpus) == {}
    assert own_and_family(corpus, "USD0929297") == {"USD0929297"}
    assert family_members(corpus["USD0929297"], corpus) == []
    assert (
        document_view(corpus, "USD0929297").family == []
        and document_view(corpus, "USD0929297").same_text == []
    )


def test_bibliographic_links_make_families_and_the_record_agrees():
    """A continuation naming its parent's application or grant, and two grants of one application, are one
    family: in the lists, in the exclusion and on the record page alike."""
    from patent_demo.document import family_members
    from patent_demo.families import own_and_family

    corpus = Corpus(
        ".",
        [
            Patent("USD0900001", title="Cup", extra={"application_number": "29600001"}),
            Patent(
                "USD0900002",
                title="Cup lid",
                extra={"application_number": "29600002", "related": ["application:29600001"]},
            ),
            Patent(
                "USD0900003", title="Mug", extra={"related": ["application:29599999", "grant:USD0900002"]}
            ),
            Patent("USD0900004", title="Bowl", extra={"application_number": "29600009"}),
            Patent("USD0900005", title="Bowl", extra={"application_number": "29600009"}),
            Patent("USD0900006", title="Plate", extra={"application_number": "29600010"}),
        ],
    )
    fam = family_sets(corpus)
    assert fam["USD0900001"] == fam["USD0900003"] == {"USD0900001", "USD0900002", "USD0900003"}
    assert fam["USD0900004"] == {"USD0900004", "USD0900005"} and fam["USD0900006"] == {"USD0900006"}
    assert family_members(corpus["USD0900003"], corpus) == ["USD0900001", "USD0900002"]
    assert own_and_family(corpus, "USD0900002") == {"USD0900001", "USD0900002", "USD0900003"}
