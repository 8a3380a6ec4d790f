"""The simulated examiner: drives the running app through its documented API as a person would (search, then
``/label`` the hits they are shown), on training-split queries only, judging with an oracle built from real
labels. Its labels land in the app's own SQLite store through the app's own endpoints; nothing is written
around the app.

::

    python scripts/examiner_sim.py --url http://127.0.0.1:7860/ --corpus runs/uspc2007 --modality drawing \\
        --queries 400 --strategy topk --annotator sim-topk
    python scripts/examiner_sim.py --serve --labels runs/loop/labels.sqlite --corpus runs/uspc2007 ...

``--serve`` starts the app in this process (``patent_demo.ui``'s ``build_demo`` and ``launch_kwargs``, the same
server ``make demo`` runs) on a free loopback port with ``--labels`` as its store; otherwise ``--url`` names a
running app (``--auth USER:PASSWORD`` for one with logins; the annotator is then the login).

The oracle (what the examiner would say, from the collection's real labels):

* drawings (USPC 2007): same USPC subclass as the query -> ``relevant`` (grade 2), same class only ->
  ``partly`` (grade 1), else ``not``;
* text (cs3245): a cited or citing patent of the query in the corpus (the corpus's qrels) -> ``relevant``,
  else ``not``. The examiner searches the query's title + abstract with its IPC codes (the evaluation's
  query) under the filter panel's page-load defaults (``exclude_own``, ``per_family``), so the query's own
  patent and family are not among the hits judged; a hit with the query's very title + abstract (a
  continuation the app keeps) is passed over, and a hit cited by or citing any patent of that text is relevant.

Which hits are judged (``--strategy``, fixed before any test figure was seen; ``--k`` judgements a query):

* ``topk``: ranks 1..k of the list shown, as an examiner reads a result page;
* ``spread``: the search asks for ``5k`` hits and the examiner judges ``k`` ranks spread geometrically over
  them (1, 2, 3, 4, 6, 9, 14, 21, 32, 50 for k = 10): a diverse set that reaches past the first page.

Queries are the corpus's ``train`` split (or ``--split-file``'s) in a seeded order (``--seed``), the first ``--queries`` of it; a query
whose ``/label`` answer names another candidate than the table showed stops the run (a label must never land
on a hit the examiner did not see).
"""

from __future__ import annotations

import argparse
import json
import logging
import random
import socket
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from patent_demo.data.corpus import Corpus, Patent
from patent_demo.hierarchy import patent_hierarchy

log = logging.getLogger("examiner_sim")
PROG = "scripts/examiner_sim.py"
STRATEGIES = ("topk", "spread")
GRADE_NAMES = {2: "relevant", 1: "partly", 0: "not"}
UI_FILTERS = {"exclude_own": True, "per_family": True}  # the filter panel as a page opens: two boxes ticked
BUILD_TRIES = 300  # searches of 2 s apart while the app says its index is being built


# -- which ranks are judged ------------------------------------------------------------------------------------
def shown(strategy: str, k: int) -> int:
    """How many hits the examiner asks the search for."""
    if strategy not in STRATEGIES:
        raise ValueError(f"unknown strategy {strategy!r}; choose one of {STRATEGIES}")
    return k if strategy == "topk" else 5 * k


def judged_ranks(strategy: str, k: int, available: int) -> list[int]:
    """The 1-based ranks judged of ``available`` hits: ``1..k`` (``topk``), or ``k`` ranks spread
    geometrically over ``1..5k`` (``spread``), each above the last."""
    n = min(shown(strategy, k), available)
    if strategy == "topk" or n <= k:
        return list(range(1, min(k, n) + 1))
    ranks: list[int] = []
    for r in np.geomspace(1, n, k):
        ranks.append(max(int(round(r)), ranks[-1] + 1 if ranks else 1))
    # pushed past the end by the "each above the last" rule: pull the tail back under n
    for i in range(len(ranks) - 1, -1, -1):
        ranks[i] = min(ranks[i], n - (len(ranks) - 1 - i))
    return ranks


# -- the oracle ------------------------------------------------------------------------------------------------
def drawing_grade(query: Patent, candidate: Patent) -> int:
    """2 same USPC (hierarchy) subclass, 1 same main class only, else 0."""
    qs, qm = patent_hierarchy(query.codes)
    cs, cm = patent_hierarchy(candidate.codes)
    if qs and qs == cs:
        return 2
    return 1 if qm and qm == cm else 0


def text_grade(corpus: Corpus, query: Patent, candidate_id: str) -> int:
    """2 when the candidate is cited by or cites the query (the corpus's qrels either way), else 0."""
    if (corpus.qrels.get(query.id) or {}).get(candidate_id, 0) > 0:
        return 2
    if (corpus.qrels.get(candidate_id) or {}).get(query.id, 0) > 0:
        return 2
    cand = corpus[candidate_id] if candidate_id in corpus else None
    if candidate_id in query.citations or (cand is not None and query.id in cand.citations):
        return 2
    return 0


def same_text_ids(corpus: Corpus, query: Patent) -> set[str]:
    """The query and every corpus patent with its very title + abstract (spaces and case folded): one text to the
    examiner (the app's ``exclude_own`` leaves out only the first of them and its listed family)."""
    from patent_demo.text.search import candidate_text

    def key(p: Patent) -> str:
        return " ".join(candidate_text(p).split()).lower()

    want = key(query)
    return {query.id} | {p.id for p in corpus.patents if key(p) == want}


# -- the run ---------------------------------------------------------------------------------------------------
@dataclass
class Tally:
    queries: int = 0
    judgements: int = 0
    grades: dict = field(default_factory=lambda: {"relevant": 0, "partly": 0, "not": 0})
    seconds: float = 0.0
    skipped: list = field(default_factory=list)

    def to_dict(self) -> dict:
        return dict(self.__dict__)


def id_column(table: dict) -> int:
    headers = [str(h).lower() for h in table.get("headers") or []]
    if "patent" not in headers:
        raise RuntimeError(f"the hit table has no 'patent' column: {headers}")
    return headers.index("patent")


def table_ids(table: dict | None) -> list[str]:
    if not table or not table.get("data"):
        return []
    col = id_column(table)
    return [str(row[col]) for row in table["data"]]


class Examiner:
    """One examiner at the app: a ``gradio_client.Client`` (its own browser session) and a name."""

    def __init__(self, url: str, annotator: str, auth: tuple[str, str] | None = None) -> None:
        from gradio_client import Client

        # the hit table says what was shown; the gallery's image files are not fetched (a browser would show them)
        self.client = Client(url, verbose=False, auth=auth, download_files=False)
        self.annotator = annotator

    def label(self, list_name: str, rank: int, grade: int, expected: str) -> tuple[str, str]:
        msg, *_ = self.client.predict(
            GRADE_NAMES[grade], list_name, rank, "", "", self.annotator, api_name="/label"
        )
        if not str(msg).startswith("✓") or f"· {expected} (" not in str(msg):
            raise RuntimeError(f"/label answered {msg!r} for {expected} at {list_name} #{rank}")
        return expected, GRADE_NAMES[grade]

    def drawing_query(
        self, corpus: Corpus, query: Patent, model: str, strategy: str, k: int
    ) -> list[tuple[str, str]]:
        from gradio_client import handle_file

        path = corpus.image_path(query.figures[0])
        for _ in range(BUILD_TRIES):
            _gallery, status, table, *_ = self.client.predict(
                handle_file(str(path)),
                model,
                shown(strategy, k),
                True,
                True,
                "",
                self.annotator,
                UI_FILTERS,
                api_name="/search_drawing",
            )
            if table_ids(table) or "being built" not in str(status):
                break
            time.sleep(
                2
            )  # the app builds the model's index on its first search: search again, as a person would
        ids = table_ids(table)
        if not ids:
            raise RuntimeError(f"the search for {query.id} showed nothing: {status}")
        ranks = judged_ranks(strategy, k, len(ids))
        return [self.label("hmcl", r, drawing_grade(query, corpus[ids[r - 1]]), ids[r - 1]) for r in ranks]

    def text_query(
        self, corpus: Corpus, query: Patent, model: str, strategy: str, k: int, list_name: str
    ) -> list[tuple[str, str]]:
        from patent_demo.text.search import candidate_text

        n = shown(strategy, k)
        # the query as the evaluation asks it (patent_query: title + abstract, with its codes) and the filter panel
        # as the page loads it (both boxes ticked): the app knows that text as a corpus patent's, so its own
        # patent and family are left out, and the text lists keep one hit per family
        text, codes = candidate_text(query), "; ".join(query.codes.get("ipc", []))
        filters = UI_FILTERS
        # the hybrid and dense tables come from their own step (as the Text tab shows them), then the full search
        # opens the labelling session on the default list
        for _ in range(BUILD_TRIES):
            _dense, hybrid, status = self.client.predict(
                text, codes, model, n, filters, api_name="/search_dense"
            )
            if table_ids(hybrid) or "being built" not in str(status):
                break
            time.sleep(2)
        *_, status, list_now, _rank, _cursor, _progress = self.client.predict(
            text, codes, model, n, self.annotator, filters, api_name="/search_text"
        )
        if list_now != list_name:
            raise RuntimeError(f"the cursor starts on {list_now!r}, not the default list {list_name!r}")
        if list_name != "hybrid":
            raise RuntimeError("the simulated examiner reads the hybrid table; the default list is another")
        ids = table_ids(hybrid)
        if not ids:
            raise RuntimeError(f"the search for {query.id} showed nothing: {status}")
        # the query's own text under another number (a continuation with the same title + abstract) is no prior art
        # to it: the examiner passes over it, and judges for that text, cited by or citing any of its patents
        own = same_text_ids(corpus, query)
        ranks = [r for r in judged_ranks(strategy, k, len(ids)) if ids[r - 1] not in own]
        grade = {r: max(text_grade(corpus, corpus[q], ids[r - 1]) for q in sorted(own)) for r in ranks}
        return [self.label(list_name, r, grade[r], ids[r - 1]) for r in ranks]


def query_order(corpus: Corpus, seed: int, split: str = "train") -> list[Patent]:
    patents = [p for p in corpus.split(split) if p.figures or p.text]
    random.Random(seed).shuffle(patents)
    return patents


def simulate(args, url: str, corpus: Corpus) -> Tally:
    from patent_demo.text.hybrid import default_text_list

    auth = tuple(args.auth.split(":", 1)) if args.auth else None
    ex = Examiner(url, args.annotator, auth)
    tally = Tally()
    t0 = time.perf_counter()
    queries = query_order(corpus, args.seed)[: args.queries]
    test = set(corpus.splits.get("test", [])) | set(corpus.splits.get("val", []))
    for i, q in enumerate(queries, 1):
        if q.id in test:  # never: queries are train-split patents; kept as a guard
            raise RuntimeError(f"{q.id} is not a training query")
        if args.modality == "drawing":
            if not q.figures:
                tally.skipped.append(q.id)
                continue
            n = ex.drawing_query(corpus, q, args.model, args.strategy, args.k)
        else:
            if not q.text.strip():
                tally.skipped.append(q.id)
                continue
            n = ex.text_query(corpus, q, args.model, args.strategy, args.k, default_text_list())
        tally.queries += 1
        tally.judgements += len(n)
        for _candidate, grade in n:
            tally.grades[grade] += 1
        if i % 25 == 0:
            log.info(
                "%s: %d queries, %d judgements (%.0f s)",
                args.annotator,
                i,
                tally.judgements,
                time.perf_counter() - t0,
            )
    tally.seconds = time.perf_counter() - t0
    return tally


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Served:
    """The app as ``make demo`` runs it (``python app.py``), in a child process on a free loopback port, over
    ``corpus_dir`` with ``labels`` as its label store; a context manager that waits for it to answer and
    stops it."""

    def __init__(
        self, corpus_dir: str, labels: str, cache_dir: str = "cache", extra: Sequence[str] = ()
    ) -> None:
        self.port = free_port()
        self.argv = [
            sys.executable,
            str(Path(__file__).resolve().parent.parent / "app.py"),
            "--corpus",
            corpus_dir,
            "--labels",
            labels,
            "--cache-dir",
            cache_dir,
            "--host",
            "127.0.0.1",
            "--port",
            str(self.port),
            # a script's first search waits for the index it needs (a warm-up's text search would answer
            # from BM25 alone until the dense index is built: patent_demo.search.text.BM25_ONLY)
            "--no-warmup",
            *extra,
        ]

    def __enter__(self) -> str:
        import subprocess

        import httpx

        log = Path(self.argv[self.argv.index("--labels") + 1]).with_suffix(".server.log")
        log.parent.mkdir(parents=True, exist_ok=True)
        self.log = open(log, "w")  # noqa: SIM115 - open for the server's lifetime, closed in __exit__
        self.proc = subprocess.Popen(self.argv, stdout=self.log, stderr=subprocess.STDOUT)
        url = f"http://127.0.0.1:{self.port}/"
        end = time.monotonic() + 600
        while time.monotonic() < end:
            if self.proc.poll() is not None:
                raise RuntimeError(f"the app exited with status {self.proc.returncode}: see {self.log.name}")
            try:
                if httpx.get(url, timeout=5).status_code == 200:
                    return url
            except httpx.HTTPError:
                pass
            time.sleep(1)
        self.__exit__()
        raise RuntimeError(f"the app did not answer within 600 s: see {self.log.name}")

    def __exit__(self, *exc) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(30)
        except Exception:  # noqa: BLE001 - a server that does not stop is killed
            self.proc.kill()
        self.log.close()


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog=f"python {PROG}", description=__doc__.split("\n\n")[0])
    a = p.add_argument
    a("--url", default=None, help="a running app (default with --serve: one started here)")
    a("--serve", action="store_true", help="start the app in this process on a free port")
    a("--labels", default=None, help="with --serve: the app's label store (labels.sqlite)")
    a("--cache-dir", default="cache", help="with --serve: the app's cache folder")
    a("--app-args", default="", help="with --serve: further app flags, one shell-quoted string")
    a(
        "--corpus",
        required=True,
        help="the corpus the app serves (its train split and its labels are the oracle's)",
    )
    a(
        "--split-file",
        default=None,
        help="a committed split (JSON with train / val / test id lists, e.g. splits/cs3245_text.json): its train ids "
        "are the queries and its val and test ids never are (default: the corpus's own splits)",
    )
    a("--modality", choices=("drawing", "text"), default="drawing", help="what the examiner searches")
    a("--model", default="zero-shot", help="the model the examiner searches with (drawing or text model key)")
    a("--strategy", choices=STRATEGIES, default="topk", help="which hits are judged")
    a("--k", type=int, default=10, help="judgements per query")
    a("--queries", type=int, default=400, help="training queries judged (the first of the seeded order)")
    a("--seed", type=int, default=0, help="the order of the training queries")
    a("--annotator", default="sim-examiner", help="the name labels are stored under")
    a("--auth", default=None, help="USER:PASSWORD of an app with logins")
    a("--out", default=None, help="write what was judged (counts, seconds) as JSON here")
    return p


def main(argv: Sequence[str] | None = None) -> int:
    import shlex

    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s", datefmt="%H:%M:%S")
    logging.getLogger("httpx").setLevel(logging.WARNING)  # one line per request otherwise
    argv = list(sys.argv[1:] if argv is None else argv)
    args = build_parser().parse_args(argv)
    if not args.url and not args.serve:
        raise SystemExit("give --url of a running app, or --serve (with --labels) to start one here")
    if args.serve and not args.labels:
        raise SystemExit("--serve needs --labels (the store the app writes)")
    corpus = Corpus.load(args.corpus, validate=False)
    if args.split_file:  # the committed query split, whatever split the corpus build drew
        split = json.loads(Path(args.split_file).read_text(encoding="utf-8"))
        corpus.splits = {s: [p for p in split[s] if p in corpus] for s in ("train", "val", "test")}
    if args.serve:
        with Served(args.corpus, args.labels, args.cache_dir, shlex.split(args.app_args)) as url:
            tally = simulate(args, url, corpus)
    else:
        tally = simulate(args, args.url, corpus)
    out = {
        "command": f"python {PROG} " + shlex.join(argv),
        "annotator": args.annotator,
        "strategy": args.strategy,
        "k": args.k,
        "modality": args.modality,
        "model": args.model,
        **tally.to_dict(),
    }
    log.info(
        "%s: %d queries, %d judgements %s in %.0f s",
        args.annotator,
        tally.queries,
        tally.judgements,
        tally.grades,
        tally.seconds,
    )
    if args.out:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text(json.dumps(out, indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
