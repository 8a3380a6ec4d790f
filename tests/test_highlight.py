"""BM25-matched words marked in escaped HTML, and snippets around them."""

from __future__ import annotations

from patent_demo.text.bm25 import BM25Index
from patent_demo.text.highlight import highlight_html, matched_spans, query_tokens, snippet_html, snippet_text
from tests.conftest import require_shared

DOCS = [
    {"id": "a", "text": "The <pump> & its Valves: a valve, VALVE and pump."},
    {"id": "b", "text": "seal"},
]


def test_marks_exactly_the_bm25_tokens_and_escapes():
    bm25 = BM25Index.build(DOCS, fields=("text",))
    toks = query_tokens(bm25, "the valve of a pump")
    assert toks == {"valve", "pump"}  # stopwords gone, as BM25 scores them
    text = DOCS[0]["text"]
    spans = matched_spans(bm25, text, toks)
    assert [text[s.start : s.end] for s in spans] == [
        "pump",
        "valve",
        "VALVE",
        "pump",
    ]  # "Valves" is another token
    assert highlight_html(text, spans) == (
        "The &lt;<mark>pump</mark>&gt; &amp; its Valves: a <mark>valve</mark>, <mark>VALVE</mark> and <mark>pump</mark>."
    )
    assert highlight_html("<img src=x onerror=alert(1)>", []) == "&lt;img src=x onerror=alert(1)&gt;"


def test_stemmer_of_the_index_is_used():
    bm25 = BM25Index.build(DOCS, fields=("text",), stemmer="english")
    text = DOCS[0]["text"]
    spans = matched_spans(bm25, text, query_tokens(bm25, "valve"))
    assert [text[s.start : s.end] for s in spans] == ["Valves", "valve", "VALVE"]


def test_snippets_on_a_real_abstract():
    from patent_demo.data.loaders.textcorpus import load_text_corpus

    corpus = load_text_corpus(require_shared("cs3245_patsnap_corpus_qrels") / "patsnap_docs.jsonl")
    bm25 = BM25Index.build(corpus)
    query = "washing machine drum with a water inlet"
    top = bm25.search(query, k=3)
    for pid in top.ids:
        text = corpus[pid].text
        html = snippet_html(bm25, text, query, width=160)
        plain = snippet_text(bm25, text, query, width=160)
        assert "<mark>" in html and "[" in plain
        assert len(plain.replace("[", "").replace("]", "")) <= 160 + 40
        # what is marked is a query token, by the index's own tokenizer
        marked = [w.strip("[]") for w in plain.split() if w.startswith("[")]
        assert all(bm25.tokenize([w.strip(".,;:")])[0][0] in query_tokens(bm25, query) for w in marked)
