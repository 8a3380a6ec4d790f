"""Examiner search syntax over the text corpus: phrases, truncation, AND / OR / NOT and field prefixes.

A query uses the syntax when it has a quoted phrase, a ``*``, an upper-case ``AND`` / ``OR`` / ``NOT`` or
a field prefix, and at most :data:`MAX_TERMS` terms (a pasted abstract stays a plain BM25 query):

* ``"bubble generator"`` a phrase (the words in this order), ``bubbl*`` truncation (any word that starts so);
* ``a AND b`` (also ``a b``), ``a OR b``, ``NOT a``, parentheses;
* ``ti:`` title, ``ab:`` abstract, ``cl:`` claims (``ti=`` works too), and ``cpc:`` / ``ipc:`` / ``loc:``
  a classification prefix (``ipc:D06F``, ``cpc:A47C7/02``, ``loc:06-01``; spaces and case ignored).

``parse`` returns a :class:`Query`: ``matches(corpus)`` is the set of documents the boolean expression
admits (words are matched whole and case-blind, without stemming), and ``ranking_text(bm25)`` the text
BM25 ranks them with: the words of the positive terms, each truncation expanded to the index words it
covers. Bad syntax raises :class:`SyntaxErrorInQuery` with a message saying what to fix.

A query is costed by what the parser builds, not by its spaces (``"a"OR"b"OR…`` has no space): at most
:data:`MAX_TERMS` terms (words, phrases, truncations, codes), :data:`MAX_WORDS` words in them,
:data:`MAX_TRUNCATIONS` truncations and :data:`MAX_DEPTH` nested parentheses or NOTs, refused by ``parse``
before any index is read. Matching reads an inverted index of the corpus (built once, cached on it): a
word's documents from its postings, a truncation's from the index words in its range of the sorted
vocabulary, a phrase checked word by word only in the documents holding all its words.
"""

from __future__ import annotations

import re
from bisect import bisect_left
from dataclasses import dataclass, field

MAX_TERMS = (
    40  # terms of a query in the syntax: words, phrases, truncations and codes (also: words of an abstract)
)
MAX_WORDS = 80  # words over all its terms (a phrase's words each)
MAX_TRUNCATIONS = 10  # truncations (each one a range of the vocabulary)
MAX_DEPTH = 10  # parentheses and NOTs nested
TEXT_FIELDS = ("title", "abstract", "claims")
CODE_FIELDS = ("ipc", "cpc", "locarno")
FIELDS = {"ti": "title", "ab": "abstract", "cl": "claims", "cpc": "cpc", "ipc": "ipc", "loc": "locarno"}
HELP = (
    'Search syntax: "a phrase", truncat*, AND / OR / NOT, ( ), fields ti: ab: cl: and codes ipc: cpc: loc: '
    '(e.g. ti:"washing machine" AND bubbl* NOT ipc:A47L)'
)
_TOKEN = re.compile(
    r'\s*(?:(?P<paren>[()])|(?:(?P<field>[A-Za-z]+)[:=])?(?:"(?P<phrase>[^"]*)"|(?P<word>[^\s()"]+))|(?P<bad>"))'
)
_WORD = re.compile(r"\w+")
_MAX_EXPANSION = 50  # index words a truncation adds to the ranking text


class SyntaxErrorInQuery(ValueError):
    """A query whose search syntax cannot be read; the message says what to fix."""


@dataclass
class Term:
    field: str  # "" (title, abstract and claims), title, abstract, claims, ipc, cpc, locarno
    words: tuple[str, ...]  # one word, or a phrase; lower case (codes: upper case, no spaces)
    prefix: bool = False  # the last word is truncated


@dataclass
class Op:
    op: str  # AND, OR, NOT
    args: tuple


def uses_syntax(text: str) -> bool:
    """Whether ``text`` is a query in the search syntax rather than an abstract to rank with BM25."""
    if len(text.split()) > MAX_TERMS:
        return False
    if '"' in text or "*" in text or re.search(r"\b(AND|OR|NOT)\b", text):
        return True
    return bool(re.search(r"(?<![\w-])(ti|ab|cl|cpc|ipc|loc)[:=]\S", text, re.I))


def _lex(text: str) -> list:
    out, pos = [], 0
    while pos < len(text):
        if not text[pos:].strip():
            break
        m = _TOKEN.match(text, pos)
        if m is None or m.group("bad"):
            raise SyntaxErrorInQuery('a quote is not closed: put the phrase between two " marks')
        pos = m.end()
        if m.group("paren"):
            out.append(m.group("paren"))
            continue
        field, word, phrase = m.group("field"), m.group("word"), m.group("phrase")
        if field and field.lower() not in FIELDS:
            word, field = f"{field}:{word if word is not None else phrase}", None  # a colon inside a word
        if word in ("AND", "OR", "NOT") and not field:
            out.append(word)
            continue
        out.append(_term(FIELDS.get((field or "").lower(), ""), phrase if phrase is not None else word))
    return out


def _term(field: str, raw: str) -> Term:
    if field in ("ipc", "cpc", "locarno"):
        code = re.sub(r"\s+", "", raw).upper().rstrip("*")
        if not code:
            raise SyntaxErrorInQuery(f"{field}: needs a code, e.g. {field}:D06F")
        return Term(field, (code,), True)
    prefix = raw.endswith("*")
    words = tuple(w.lower() for w in _WORD.findall(raw.rstrip("*")))
    if not words:
        raise SyntaxErrorInQuery(f"{raw!r} has no word to search for")
    if prefix and len(words[-1]) < 3:
        raise SyntaxErrorInQuery(f"{raw!r}: a truncation needs at least 3 letters before the *")
    return Term(field, words, prefix)


class _Parser:
    def __init__(self, tokens: list) -> None:
        self.tokens, self.i, self.depth = tokens, 0, 0

    def peek(self):
        return self.tokens[self.i] if self.i < len(self.tokens) else None

    def take(self):
        tok = self.peek()
        self.i += 1
        return tok

    def expr(self):
        args = [self.conj()]
        while self.peek() == "OR":
            self.take()
            args.append(self.conj())
        return args[0] if len(args) == 1 else Op("OR", tuple(args))

    def conj(self):
        args = [self.unary()]
        while self.peek() not in (None, "OR", ")"):
            if self.peek() == "AND":
                self.take()
            args.append(self.unary())
        return args[0] if len(args) == 1 else Op("AND", tuple(args))

    def unary(self):
        tok = self.take()
        if tok in ("NOT", "("):
            self.depth += 1
            if self.depth > MAX_DEPTH:
                raise SyntaxErrorInQuery(
                    f"the query nests parentheses and NOTs more than {MAX_DEPTH} deep; write it flatter"
                )
            try:
                if tok == "NOT":
                    return Op("NOT", (self.unary(),))
                inner = self.expr()
                if self.take() != ")":
                    raise SyntaxErrorInQuery("a parenthesis is not closed")
                return inner
            finally:
                self.depth -= 1
        if isinstance(tok, Term):
            return tok
        if tok is None:
            raise SyntaxErrorInQuery("the query ends with an operator: add a term after it")
        raise SyntaxErrorInQuery(f"{tok} needs a term before and after it" if tok != ")" else "a ) has no (")


def check_cost(tokens: list) -> None:
    """Refuse a query whose terms, words or truncations are over the caps (``SyntaxErrorInQuery`` naming
    the cap), counted on the lexed terms before anything is parsed or matched."""
    terms = [t for t in tokens if isinstance(t, Term)]
    words = sum(len(t.words) for t in terms)
    truncations = sum(1 for t in terms if t.prefix and t.field not in CODE_FIELDS)
    how = "; shorten it (a text without quotes, *, AND / OR / NOT and fields is ranked by BM25 as it is)"
    if len(terms) > MAX_TERMS:
        raise SyntaxErrorInQuery(
            f"the query has {len(terms):,} terms (words, phrases, truncations, codes); the search syntax "
            f"takes at most {MAX_TERMS}{how}"
        )
    if words > MAX_WORDS:
        raise SyntaxErrorInQuery(
            f"the query's terms hold {words:,} words; the search syntax takes at most {MAX_WORDS}{how}"
        )
    if truncations > MAX_TRUNCATIONS:
        raise SyntaxErrorInQuery(
            f"the query has {truncations:,} truncations (word*); the search syntax takes at most "
            f"{MAX_TRUNCATIONS}{how}"
        )


def parse(text: str) -> Query:
    """The query in the search syntax (``SyntaxErrorInQuery`` when it cannot be read)."""
    tokens = _lex(text)
    if not tokens:
        raise SyntaxErrorInQuery("the query is empty")
    check_cost(tokens)
    p = _Parser(tokens)
    node = p.expr()
    if p.peek() is not None:
        raise SyntaxErrorInQuery(
            "a ) has no (" if p.peek() == ")" else f"cannot read the query at {p.peek()!r}"
        )
    return Query(text, node)


@dataclass
class _Index:
    """The corpus as the syntax reads it: per text field the words of each document (for phrases), each
    word's documents and the sorted vocabulary (for truncations); per code scheme the sorted (code,
    document) pairs. Documents are numbers into ``ids``."""

    ids: list[str]
    words: dict[str, list[list[str]]] = field(default_factory=dict)
    postings: dict[str, dict[str, set[int]]] = field(default_factory=dict)
    vocab: dict[str, list[str]] = field(default_factory=dict)
    codes: dict[str, list[tuple[str, int]]] = field(default_factory=dict)

    @classmethod
    def build(cls, corpus) -> _Index:
        patents = list(corpus)
        index = cls([p.id for p in patents])
        for f in TEXT_FIELDS:
            text = {"title": lambda p: p.title, "abstract": lambda p: p.text, "claims": lambda p: p.claims}[f]
            index.words[f] = [_WORD.findall((text(p) or "").lower()) for p in patents]
            postings: dict[str, set[int]] = {}
            for i, words in enumerate(index.words[f]):
                for w in set(words):
                    postings.setdefault(w, set()).add(i)
            index.postings[f], index.vocab[f] = postings, sorted(postings)
        for scheme in CODE_FIELDS:
            index.codes[scheme] = sorted(
                {
                    (re.sub(r"\s+", "", c).upper(), i)
                    for i, p in enumerate(patents)
                    for c in p.codes.get(scheme, [])
                }
            )
        return index

    def word(self, f: str, word: str, prefix: bool) -> set[int]:
        """The documents whose field ``f`` holds ``word`` (with ``prefix``: a word that starts so)."""
        if not prefix:
            return set(self.postings[f].get(word, ()))
        out: set[int] = set()
        for w in in_range(self.vocab[f], word):
            out |= self.postings[f][w]
        return out

    def term(self, t: Term) -> set[int]:
        if t.field in CODE_FIELDS:
            pairs, code = self.codes[t.field], t.words[0]
            out, i = set(), bisect_left(pairs, (code, -1))
            while i < len(pairs) and pairs[i][0].startswith(code):
                out.add(pairs[i][1])
                i += 1
            return out
        out = set()
        for f in [t.field] if t.field else TEXT_FIELDS:
            last = len(t.words) - 1
            candidates = self.word(f, t.words[last], t.prefix)
            for w in t.words[:last]:
                candidates &= self.postings[f].get(w, set())
            if last:  # a phrase: its words in order, checked in the documents that hold them all
                candidates = {i for i in candidates if _in(self.words[f][i], t)}
            out |= candidates
        return out

    def match(self, node) -> set[int]:
        if isinstance(node, Term):
            return self.term(node)
        if node.op == "NOT":
            return set(range(len(self.ids))) - self.match(node.args[0])
        sets = [self.match(a) for a in node.args]
        return set.intersection(*sets) if node.op == "AND" else set.union(*sets)


def in_range(vocab: list[str], prefix: str) -> list[str]:
    """The words of the sorted ``vocab`` that start with ``prefix`` (a bisection, then the run)."""
    i = bisect_left(vocab, prefix)
    j = i
    while j < len(vocab) and vocab[j].startswith(prefix):
        j += 1
    return vocab[i:j]


def _index(corpus) -> _Index:
    """The corpus's syntax index (built on first use, cached on the corpus)."""
    return corpus.derived("syntax_index", lambda: _Index.build(corpus))


def _in(words: list[str], term: Term) -> bool:
    n = len(term.words)
    last = term.words[-1]
    head = list(term.words[:-1])
    for i in range(len(words) - n + 1):
        if words[i : i + n - 1] == head:
            w = words[i + n - 1]
            if w == last or (term.prefix and w.startswith(last)):
                return True
    return False


def _positive(node, negated: bool = False) -> list[Term]:
    if isinstance(node, Term):
        return [] if negated or node.field in CODE_FIELDS else [node]
    return [t for a in node.args for t in _positive(a, negated ^ (node.op == "NOT"))]


@dataclass
class Query:
    text: str
    node: object

    def matches(self, corpus) -> set[str]:
        """The ids of the documents the boolean expression admits."""
        index = _index(corpus)
        return {index.ids[i] for i in index.match(self.node)}

    def ranking_text(self, bm25) -> str:
        """The words BM25 ranks the admitted documents with (truncations expanded over its vocabulary)."""
        words: list[str] = []
        vocab = None
        for t in _positive(self.node):
            words += t.words[:-1]
            if t.prefix:
                if vocab is None:
                    vocab = bm25.sorted_vocab()
                words += in_range(vocab, t.words[-1])[:_MAX_EXPANSION]
            words.append(t.words[-1])
        return " ".join(dict.fromkeys(words))
