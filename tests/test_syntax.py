"""The examiner search syntax: exact matches on a hand-built corpus, the ranking text, and the messages."""

from __future__ import annotations

import pytest

from patent_demo.data.corpus import Corpus, Patent
from patent_demo.text import syntax
from patent_demo.text.bm25 import BM25Index

DOCS = [
    Patent(
        "A",
        title="Washing machine with a bubble generator",
        text="Air bubbles are fed into the drum.",
        codes={"ipc": ["D06F 39/08"]},
    ),
    Patent("B", title="Bubbling bath", text="A bath tub that makes bubbles.", codes={"ipc": ["A47K 3/00"]}),
    Patent(
        "C",
        title="Machine for washing dishes",
        text="Spray arms wash the dishes.",
        claims="A dish washing machine.",
        codes={"ipc": ["A47L 15/00"]},
    ),
    Patent(
        "D",
        title="Generator",
        text="A bubble of gas and an electric generator.",
        codes={"cpc": ["H02K 7/18"]},
    ),
]
CORPUS = Corpus(".", DOCS)


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ('"bubble generator"', {"A"}),  # the phrase, not D's "bubble of gas … generator"
        ("bubbl*", {"A", "B", "D"}),
        ("bubbl* AND wash*", {"A"}),
        ("bubbl* wash*", {"A"}),  # AND is implied
        ("bubbl* OR dish*", {"A", "B", "C", "D"}),
        ("bubbl* NOT ti:generator", {"B"}),
        ('ti:"washing machine"', {"A"}),
        ("ti=machine", {"A", "C"}),
        ("cl:dish", {"C"}),
        ("ab:drum", {"A"}),
        ("machine AND ipc:A47L", {"C"}),
        ("cpc:h02k7 OR ipc:d06f", {"A", "D"}),
        ("(bath OR dishes) AND NOT ipc:A47K", {"C"}),
    ],
)
def test_matches(query, expected):
    assert syntax.uses_syntax(query)
    assert syntax.parse(query).matches(CORPUS) == expected


def test_plain_text_and_long_abstracts_are_not_syntax():
    assert not syntax.uses_syntax("a washing machine with a bubble generator")
    assert not syntax.uses_syntax(" ".join(['"quoted"'] + ["word"] * syntax.MAX_TERMS))


def test_ranking_text_expands_truncation_and_leaves_out_negated_terms():
    bm25 = BM25Index.build(CORPUS)
    text = syntax.parse('bubbl* AND "washing machine" NOT dish* AND ipc:D06F').ranking_text(bm25)
    assert text.split() == ["bubble", "bubbles", "bubbling", "bubbl", "washing", "machine"]


@pytest.mark.parametrize(
    ("query", "message"),
    [
        ('"bubble', 'a quote is not closed: put the phrase between two " marks'),
        ("AND bubble", "AND needs a term before and after it"),
        ("bubble OR", "the query ends with an operator: add a term after it"),
        ("(bubble OR foam", "a parenthesis is not closed"),
        ("bubble) AND x", "a ) has no ("),
        ("bu*", "'bu*': a truncation needs at least 3 letters before the *"),
        ("ipc:*", "ipc: needs a code, e.g. ipc:D06F"),
    ],
)
def test_bad_syntax_says_what_to_fix(query, message):
    with pytest.raises(syntax.SyntaxErrorInQuery) as err:
        syntax.parse(query)
    assert str(err.value) == message
