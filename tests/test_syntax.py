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


def _naive(node, doc) -> bool:
    """The boolean expression on one document, read word by word (what the inverted index must agree with)."""
    if isinstance(node, syntax.Term):
        if node.field in syntax.CODE_FIELDS:
            return any(
                c.replace(" ", "").upper().startswith(node.words[0]) for c in doc.codes.get(node.field, [])
            )
        texts = {"title": doc.title, "abstract": doc.text, "claims": doc.claims}
        where = [node.field] if node.field else list(syntax.TEXT_FIELDS)
        n = len(node.words)
        for f in where:
            words = syntax._WORD.findall((texts[f] or "").lower())
            for i in range(len(words) - n + 1):
                head, last = words[i : i + n - 1], words[i + n - 1]
                if head == list(node.words[:-1]) and (
                    last == node.words[-1] or node.prefix and last.startswith(node.words[-1])
                ):
                    return True
        return False
    if node.op == "NOT":
        return not _naive(node.args[0], doc)
    hits = [_naive(a, doc) for a in node.args]
    return all(hits) if node.op == "AND" else any(hits)


def test_the_index_matches_what_a_word_by_word_reading_matches():
    import random

    rng = random.Random(7)
    vocab = sorted({w for p in DOCS for w in syntax._WORD.findall(f"{p.title} {p.text} {p.claims}".lower())})
    terms = [*vocab, *(f"{w[:3]}*" for w in vocab if len(w) >= 3), '"bubble generator"', '"washing machine"']
    terms += [
        '"the drum"',
        '"a dish*"',
        "ti:machine",
        "ab:bubbl*",
        "cl:dish",
        "ipc:D06F",
        "cpc:H02",
        "ipc:A4",
    ]
    for _ in range(300):
        parts = [rng.choice(terms) for _ in range(rng.randint(1, 5))]
        query = parts[0]
        for part in parts[1:]:
            query += rng.choice([" AND ", " OR ", " NOT ", " ", " OR NOT "]) + part
        if rng.random() < 0.3:
            query = f"({query}) OR {rng.choice(terms)}"
        parsed = syntax.parse(query)
        assert parsed.matches(CORPUS) == {p.id for p in DOCS if _naive(parsed.node, p)}, query


@pytest.mark.parametrize(
    ("query", "message"),
    [
        (
            "OR".join(f'"zq{i}x"' for i in range(748)) + 'OR"chair"',
            "the query has 749 terms (words, phrases, truncations, codes); the search syntax takes at most 40",
        ),
        (
            "OR".join(f'"abc{i}*"' for i in range(600)),
            "the query has 600 terms (words, phrases, truncations, codes); the search syntax takes at most 40",
        ),
        (
            "OR".join(f"abc{i}*" for i in range(600)),
            "the query's terms hold 600 words; the search syntax takes at most 80",
        ),
        (
            "OR".join(f'"abc{i}*"' for i in range(11)),
            "the query has 11 truncations (word*); the search syntax takes at most 10",
        ),
        (
            '"' + "-".join(["chair"] * 81) + '"',
            "the query's terms hold 81 words; the search syntax takes at most 80",
        ),
        (
            "(" * 11 + "chair OR seat" + ")" * 11,
            "the query nests parentheses and NOTs more than 10 deep; write it flatter",
        ),
        ("NOT " * 5000 + "chair", "the query nests parentheses and NOTs more than 10 deep; write it flatter"),
    ],
    ids=[
        "748-phrases-without-spaces",
        "600-truncations",
        "600-truncations-as-one-word",
        "11-truncations",
        "81-words",
        "11-parens",
        "5000-nots",
    ],
)
def test_a_query_is_costed_by_what_the_parser_builds_and_refused_before_matching(query, message):
    import time

    assert syntax.uses_syntax(query) or query.startswith("NOT")
    start = time.process_time()
    with pytest.raises(syntax.SyntaxErrorInQuery) as err:
        syntax.parse(query)
    assert str(err.value).startswith(message), str(err.value)
    assert time.process_time() - start < 0.2  # lexed and counted; nothing matched
