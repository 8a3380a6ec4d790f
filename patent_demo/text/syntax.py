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
"""

from __future__ import annotations

import re
from dataclasses import dataclass

MAX_TERMS = 40
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
        self.tokens, self.i = tokens, 0

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
        if tok == "NOT":
            return Op("NOT", (self.unary(),))
        if tok == "(":
            inner = self.expr()
            if self.take() != ")":
                raise SyntaxErrorInQuery("a parenthesis is not closed")
            return inner
        if isinstance(tok, Term):
            return tok
        if tok is None:
            raise SyntaxErrorInQuery("the query ends with an operator: add a term after it")
        raise SyntaxErrorInQuery(f"{tok} needs a term before and after it" if tok != ")" else "a ) has no (")


def parse(text: str) -> Query:
    """The query in the search syntax (``SyntaxErrorInQuery`` when it cannot be read)."""
    tokens = _lex(text)
    if not tokens:
        raise SyntaxErrorInQuery("the query is empty")
    p = _Parser(tokens)
    node = p.expr()
    if p.peek() is not None:
        raise SyntaxErrorInQuery(
            "a ) has no (" if p.peek() == ")" else f"cannot read the query at {p.peek()!r}"
        )
    return Query(text, node)


def _fields(corpus) -> dict[str, dict[str, list[str]]]:
    """Per document: the words of its title, abstract and claims and its codes (cached on the corpus)."""
    cache = corpus.__dict__.get("_syntax_fields")
    if cache is None:
        cache = {}
        for p in corpus:
            codes = {
                s: [re.sub(r"\s+", "", c).upper() for c in p.codes.get(s, [])]
                for s in ("ipc", "cpc", "locarno")
            }
            cache[p.id] = {
                "title": _WORD.findall(p.title.lower()),
                "abstract": _WORD.findall((p.text or "").lower()),
                "claims": _WORD.findall((p.claims or "").lower()),
                **codes,
            }
        corpus.__dict__["_syntax_fields"] = cache
    return cache


def _in(words: list[str], term: Term) -> bool:
    n = len(term.words)
    last = term.words[-1]
    for i in range(len(words) - n + 1):
        if list(words[i : i + n - 1]) == list(term.words[:-1]):
            w = words[i + n - 1]
            if w == last or (term.prefix and w.startswith(last)):
                return True
    return False


def _match(node, doc: dict) -> bool:
    if isinstance(node, Term):
        if node.field in ("ipc", "cpc", "locarno"):
            return any(c.startswith(node.words[0]) for c in doc[node.field])
        where = [node.field] if node.field else ["title", "abstract", "claims"]
        return any(_in(doc[f], node) for f in where)
    if node.op == "NOT":
        return not _match(node.args[0], doc)
    hits = (_match(a, doc) for a in node.args)
    return all(hits) if node.op == "AND" else any(hits)


def _positive(node, negated: bool = False) -> list[Term]:
    if isinstance(node, Term):
        return [] if negated or node.field in ("ipc", "cpc", "locarno") else [node]
    return [t for a in node.args for t in _positive(a, negated ^ (node.op == "NOT"))]


@dataclass
class Query:
    text: str
    node: object

    def matches(self, corpus) -> set[str]:
        """The ids of the documents the boolean expression admits."""
        return {pid for pid, doc in _fields(corpus).items() if _match(self.node, doc)}

    def ranking_text(self, bm25) -> str:
        """The words BM25 ranks the admitted documents with (truncations expanded over its vocabulary)."""
        words: list[str] = []
        vocab = None
        for t in _positive(self.node):
            words += t.words[:-1]
            if t.prefix:
                if vocab is None:
                    vocab = list(bm25.retriever.vocab_dict)
                expansion = sorted(w for w in vocab if isinstance(w, str) and w.startswith(t.words[-1]))
                words += expansion[:_MAX_EXPANSION]
            words.append(t.words[-1])
        return " ".join(dict.fromkeys(words))
