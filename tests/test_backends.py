"""The Qdrant backend answers as FAISS exact search does, with the examiner's filters inside the engine.

Real corpora built with the project's CLI from ``../shared/data``: the Red Book samples (20 US design
patents, 106 drawing pages; the drawing index of the default drawing model) and 300 CS3245 PatSnap
abstracts (every in-corpus family pair and the first others; the dense MiniLM text index), each pushed with
``patent-demo index push`` into embedded Qdrant under the cache. For each filter the engine's top 10 must
overlap FAISS's in >= 95% of the ids on average, the score at every rank within 1e-4 (both are exact here;
equal scores at the cut may fall either way), and
the filter must really cut the list (so a filter the engine ignored would fail). An unreachable server is a
clear message within the timeout, or FAISS answers with a ⚠️ note when configured as the fallback.

Tests: patent_demo/backends.py, patent_demo/cli/index_cmd.py, patent_demo/cli/search_cmd.py
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from patent_demo.backends import (
    BackendUnavailable,
    FaissBackend,
    QdrantBackend,
    Where,
    class_keys,
    collection_name,
    make_backend,
    qdrant_client,
)
from patent_demo.cli.main import main as cli
from patent_demo.data.corpus import Corpus
from patent_demo.filters import ClassPrefix, SearchFilter
from patent_demo.workbench import Workbench, WorkbenchConfig
from tests.conftest import REPO_ROOT, require_shared
from tests.support.live import UNREACHABLE

pytest.importorskip("qdrant_client")
pytestmark = pytest.mark.slow


def _workbench(root, **backend) -> Workbench:
    config = WorkbenchConfig(
        cache_dir=root / "cache",
        corpus=root / "corpus",
        checkpoint_dirs=(REPO_ROOT / "checkpoints",),
        **backend,
    )
    return Workbench(config, progress=False)


@pytest.fixture(scope="module")
def redbook(tmp_path_factory):
    src = require_shared("impact_design_patent_samples")
    root = tmp_path_factory.mktemp("vdb-rb")
    assert (
        cli(["corpus", "build", "--source", "redbook", "--out", str(root / "corpus"), str(src), "--quiet"])
        == 0
    )
    assert (
        cli(
            [
                "index",
                "push",
                "--corpus",
                str(root / "corpus"),
                "--cache-dir",
                str(root / "cache"),
                "--checkpoints",
                str(REPO_ROOT / "checkpoints"),
                "--what",
                "drawings",
            ]
        )
        == 0
    )
    return root


@pytest.fixture(scope="module")
def patsnap(tmp_path_factory):
    """300 CS3245 abstracts: the documents of every in-corpus family pair, then the first others."""
    src = require_shared("cs3245_patsnap_corpus_qrels")
    root = tmp_path_factory.mktemp("vdb-cs")
    rows = [
        json.loads(line) for line in (src / "patsnap_docs.jsonl").read_text(encoding="utf-8").splitlines()
    ]
    pairs = (src / "in_corpus_family_pairs.tsv").read_text(encoding="utf-8").splitlines()
    family = {d for line in pairs[1:] for d in line.split("\t")}
    keep = [r for r in rows if r["doc_id"] in family] + [r for r in rows if r["doc_id"] not in family]
    keep = keep[:300]
    (root / "raw").mkdir()
    (root / "raw" / "docs.jsonl").write_text("".join(json.dumps(r) + "\n" for r in keep), encoding="utf-8")
    (root / "raw" / "in_corpus_family_pairs.tsv").write_text("\n".join(pairs) + "\n", encoding="utf-8")
    assert (
        cli(
            [
                "corpus",
                "build",
                "--source",
                "text",
                "--out",
                str(root / "corpus"),
                str(root / "raw"),
                "--quiet",
            ]
        )
        == 0
    )
    assert (
        cli(
            [
                "index",
                "push",
                "--corpus",
                str(root / "corpus"),
                "--cache-dir",
                str(root / "cache"),
                "--checkpoints",
                str(REPO_ROOT / "checkpoints"),
                "--what",
                "text",
            ]
        )
        == 0
    )
    return root


def _backends(root, task: str):
    wb = _workbench(root)
    if task == "drawing":
        spec = wb.default_drawing_model()
        index, fp = wb.index(spec), spec.fingerprint
    else:
        enc, index, _ = wb.dense()
        fp = enc.fingerprint()
    assert index.kind == "flat"  # FAISS exact search is the reference
    engine = QdrantBackend(
        qdrant_client(path=root / "cache" / "qdrant"), collection_name(task, wb.fingerprint, fp)
    )
    return wb, index, FaissBackend(index, wb.corpus), engine


def _same(a, b) -> float:
    """The two lists agree: equal length, the score at every rank within 1e-4, the same ids above the
    last score. Returns their top-k overlap, where equal scores at the cut (a patent's A2 and A3
    publications of one text, say), which either search may cut either way, count as the same hit."""
    assert len(a) == len(b)
    if not len(a):
        return 1.0  # two empty lists agree
    assert np.abs(a.scores - b.scores).max() <= 1e-4
    last = float(min(a.scores[-1], b.scores[-1])) + 1e-4
    assert {i for i, s in a if s > last} == {i for i, s in b if s > last}
    only_a, only_b = set(a.ids) - set(b.ids), set(b.ids) - set(a.ids)
    tied = min(sum(s <= last for i, s in a if i in only_a), sum(s <= last for i, s in b if i in only_b))
    return (len(set(a.ids) & set(b.ids)) + tied) / len(a)


def _queries(index, n: int = 6) -> list[tuple[str, np.ndarray]]:
    """(patent, the stored embedding of its first row) of ``n`` patents spread over the index."""
    first = {}
    for row, pid in enumerate(index.patent_ids):
        first.setdefault(pid, row)
    pids = list(first)[:: max(1, len(first) // n)][:n]
    return [(p, np.asarray(index.embeddings[first[p]])) for p in pids]


def _median_date(corpus: Corpus) -> str:
    dates = sorted(p.date for p in corpus if p.date)
    return dates[len(dates) // 2]


def _median_filed(corpus: Corpus) -> str:
    """The median earliest priority / filing date: a cut-off there leaves out later-filed patents even where
    every patent was published after it (the Red Book grants are all of 2021: earlier applications)."""
    dates = sorted(min(d for d in (p.priority_date, p.filing_date, p.date) if d) for p in corpus if p.date)
    return dates[len(dates) // 2]


def _drawing_filters(corpus: Corpus, own: str) -> dict[str, Where]:
    mid = _median_filed(corpus)
    main = corpus[own].locarno[:2]
    return {
        "none": Where(),
        "cut-off": Where(SearchFilter.parse(before=mid)),
        "date range": Where(
            SearchFilter.parse(date_from=_median_date(corpus), date_to=max(p.date for p in corpus))
        ),
        "classification": Where(SearchFilter.parse(classification=f"locarno:{main}, uspc:D6")),
        "exclude own and family": Where(own=(own,)),
        "all at once": Where(SearchFilter.parse(before=mid, classification=main), own=(own,)),
    }


@pytest.mark.parametrize(
    "name", ["none", "cut-off", "date range", "classification", "exclude own and family", "all at once"]
)
def test_drawing_lists_equal_faiss_exact_per_filter(redbook, name):
    wb, index, faiss_b, engine = _backends(redbook, "drawing")
    cut, overlap = 0, []
    for own, q in _queries(index):
        where = _drawing_filters(wb.corpus, own)[name]
        for per_patent in (True, False):  # one hit per patent (the engine's group-by) and per figure
            a, b = faiss_b.search(q, 10, where, per_patent), engine.search(q, 10, where, per_patent)
            overlap.append(_same(a, b))
            if per_patent:
                assert len(set(a.ids)) == len(a.ids)  # one hit per patent
                allowed = where.allowed(wb.corpus)
                assert allowed is None or set(b.ids) <= allowed
                cut += len(set(faiss_b.search(q, 10, Where(), True).ids) - set(b.ids))
    assert np.mean(overlap) >= 0.95
    assert (cut > 0) == (name != "none")  # every filter changes some list


def _text_filters(corpus: Corpus, own: str) -> dict[str, Where]:
    mid = _median_date(corpus)
    return {
        "none": Where(),
        "cut-off": Where(SearchFilter.parse(before=mid)),
        "date range": Where(SearchFilter.parse(date_from="2005-01-01", date_to="2012-12-31")),
        "classification": Where(SearchFilter.parse(classification="ipc:A61, G06F")),
        "country": Where(SearchFilter.parse(country="EP, WO")),
        "kind": Where(SearchFilter.parse(kind_code="A")),
        "exclude own and family": Where(own=(own,)),
        "cut-off keeping undated": Where(SearchFilter(before=mid, keep_undated=True)),
    }


@pytest.mark.parametrize(
    "name",
    [
        "none",
        "cut-off",
        "date range",
        "classification",
        "country",
        "kind",
        "exclude own and family",
        "cut-off keeping undated",
    ],
)
def test_text_dense_lists_equal_faiss_exact_per_filter(patsnap, name):
    wb, index, faiss_b, engine = _backends(patsnap, "text")
    from patent_demo.families import family_sets

    fam = family_sets(wb.corpus)
    owners = [p.id for p in wb.corpus if len(fam.get(p.id, ())) > 1][
        :3
    ]  # patents with a family in the corpus
    rows = {pid: i for i, pid in enumerate(index.ids)}
    cut, overlap = 0, []
    for own in owners:
        q = np.asarray(index.embeddings[rows[own]])
        where = _text_filters(wb.corpus, own)[name]
        a, b = faiss_b.search(q, 10, where, False), engine.search(q, 10, where, False)
        overlap.append(_same(a, b))
        allowed = where.allowed(wb.corpus)
        assert allowed is None or set(b.ids) <= allowed
        cut += len(set(faiss_b.search(q, 10, Where(), False).ids) - set(b.ids))
        if name == "exclude own and family":
            assert not set(b.ids) & fam[own]  # the patent and its family are gone
    assert np.mean(overlap) >= 0.95
    assert (cut > 0) == (name != "none")


def test_class_keys_decide_as_the_prefix_rule_does():
    keys = set(class_keys({"uspc": ["D6/369"], "locarno": ["06-01"]}))
    assert {"uspc|D6", "uspc|D6/", "uspc|D6/3", "locarno|06", "locarno|06-", "locarno|06-01"} <= keys
    assert (
        "uspc|D" in keys and "locarno|0" not in keys
    )  # '0' is followed by a digit: no match, as prefix_matches
    assert not ClassPrefix.parse("D64").matches({"uspc": ["D6/369"]}) and "uspc|D64" not in keys


def test_search_text_cli_gives_the_same_run_through_qdrant(patsnap, tmp_path):
    corpus = Corpus.load(patsnap / "corpus", validate=False)
    queries = tmp_path / "q.tsv"
    queries.write_text(
        "".join(f"{p.id}\t{p.title}. {p.text}\n" for p in corpus.patents[:4]), encoding="utf-8"
    )
    runs = {}
    for backend in ("faiss", "qdrant"):
        runs[backend] = tmp_path / f"{backend}.run"
        assert (
            cli(
                [
                    "search",
                    "text",
                    "--corpus",
                    str(patsnap / "corpus"),
                    "--cache-dir",
                    str(patsnap / "cache"),
                    "--checkpoints",
                    str(REPO_ROOT / "checkpoints"),
                    "--queries",
                    str(queries),
                    "--model",
                    "dense",
                    "--before",
                    "own",
                    "--country",
                    "US, EP",
                    "--backend",
                    backend,
                    "--run",
                    str(runs[backend]),
                ]
            )
            == 0
        )
    lines = {b: [line.split() for line in r.read_text().splitlines()] for b, r in runs.items()}
    assert [x[:3] for x in lines["faiss"]] == [x[:3] for x in lines["qdrant"]]
    assert all(
        abs(float(a[4]) - float(b[4])) <= 1e-4 for a, b in zip(lines["faiss"], lines["qdrant"], strict=True)
    )


def test_an_unreachable_server_is_a_clear_message_or_faiss_answers(redbook, capsys):
    wb, index, faiss_b, _ = _backends(redbook, "drawing")
    own, q = _queries(index, 1)[0]
    name = collection_name("drawing", wb.fingerprint, wb.default_drawing_model().fingerprint)
    engine = make_backend("qdrant", index, wb.corpus, name, redbook / "cache", url=UNREACHABLE, timeout=2)
    with pytest.raises(
        BackendUnavailable,
        match=r"the search engine \(http://127.0.0.1:9\) did not answer: .*"
        r"--backend-fallback faiss",
    ):
        engine.search(q, 5, Where(own=(own,)))
    fallback = make_backend(
        "qdrant", index, wb.corpus, name, redbook / "cache", url=UNREACHABLE, fallback="faiss", timeout=2
    )
    res = fallback.search(q, 5, Where(own=(own,)))
    assert res.ids == faiss_b.search(q, 5, Where(own=(own,))).ids
    assert fallback.take_note().startswith("⚠️ the search engine (http://127.0.0.1:9) did not answer")
    assert fallback.take_note() == ""  # taken once
    # the CLI says so in one line, no stack trace
    figure = wb.corpus.image_path(wb.corpus[own].figures[0])
    code = cli(
        [
            "search",
            "drawings",
            "--corpus",
            str(redbook / "corpus"),
            "--cache-dir",
            str(redbook / "cache"),
            "--checkpoints",
            str(REPO_ROOT / "checkpoints"),
            "--query",
            str(figure),
            "--backend",
            "qdrant",
            "--url",
            UNREACHABLE,
            "--timeout",
            "2",
        ]
    )
    err = capsys.readouterr().err
    assert (
        code == 2
        and "patent-demo search: error: the search engine (http://127.0.0.1:9) did not answer" in err
    )
    assert "Traceback" not in err


def test_a_collection_never_pushed_is_a_clear_message(redbook):
    wb, index, _, _ = _backends(redbook, "drawing")
    engine = QdrantBackend(qdrant_client(path=redbook / "cache" / "qdrant"), "drawing_never_pushed")
    with pytest.raises(BackendUnavailable, match="patent-demo index push"):
        engine.search(np.asarray(index.embeddings[0]), 5)


def test_the_examiner_drawing_search_through_qdrant_equals_faiss(redbook):
    """The app's path: ``Workbench.search_drawing`` with the query's own patent left out, a cut-off, a class,
    once through FAISS and once through the engine (``WorkbenchConfig(backend="qdrant")``)."""
    from patent_demo.filters import Filters
    from patent_demo.request import DrawingRequest

    plain, engine = _workbench(redbook), _workbench(redbook, backend="qdrant")
    model = plain.default_drawing_model().key
    pid = plain.corpus.patents[5].id
    figure = plain.corpus.image_path(plain.corpus[pid].figures[1])
    for kwargs in (
        {},
        {"exclude_own": True, "search": SearchFilter.parse(before=_median_date(plain.corpus))},
        {"search": SearchFilter.parse(classification=plain.corpus[pid].locarno[:2])},
    ):
        a = plain.search_drawing(DrawingRequest.build(plain, figure, model, 8, filters=Filters(**kwargs)))
        b = engine.search_drawing(DrawingRequest.build(engine, figure, model, 8, filters=Filters(**kwargs)))
        assert [h.patent_id for h in a.hits] == [h.patent_id for h in b.hits] and not any(
            "answered instead" in n for n in b.notes
        )
        assert np.allclose([h.score for h in a.hits], [h.score for h in b.hits], atol=1e-4)
        assert (pid in [h.patent_id for h in b.hits]) == (pid in [h.patent_id for h in a.hits])
        assert not kwargs.get("exclude_own") or pid not in [h.patent_id for h in b.hits]
