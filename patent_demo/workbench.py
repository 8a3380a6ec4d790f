"""The one place that composes the parts: corpus + drawing encoder + dense index, BM25 + re-ranker.

``Workbench`` is what the app's handlers call. It loads models lazily, builds indexes once and caches
them on disk under ``cache_dir`` (a progress bar while embedding), and returns plain dataclasses.

Cache layout (every entry keyed by a fingerprint of what it was built from)::

    cache_dir/
      democorpus/...                      the generated built-in corpus (when no corpus is given)
      index/<corpus fp>/<model fp>/       DenseIndex directories (see ``patent_demo.index.dense``)
      bm25/<corpus fp>/                   BM25Index directory (see ``patent_demo.text.bm25``)
      dense/<corpus fp>/<encoder fp>/     DenseIndex of the patent texts (see ``patent_demo.text.dense``)
      figure_sha/<corpus fp>.json         sha256 of each figure file (recognises corpus drawings)

Models come from :mod:`patent_demo.registry`: a "zero-shot" drawing encoder and an untrained DSSDNet
head are always there; every checkpoint directory found under the scanned folders is added.
"""

from __future__ import annotations

import hashlib
import html
import json
import os
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from patent_demo.backends import SearchBackend, collection_name, make_backend
from patent_demo.builds import Builds
from patent_demo.data.corpus import Corpus, Figure, Patent
from patent_demo.digests import file_sha256
from patent_demo.drawing.embed import embed_figures
from patent_demo.drawing.select import drawing_model_for_corpus
from patent_demo.hierarchy import main_of, patent_classes
from patent_demo.hits import DrawingSearch, Hit, TextSearch  # noqa: F401 - the result records (imported from here too)
from patent_demo.index.dense import DenseIndex
from patent_demo.index.scale import index_settings
from patent_demo.registry import (
    DrawingEncoder,
    ModelSpec,
    default_drawing_encoder,
    default_reranker,
    scan_models,
)
from patent_demo.request import DrawingRequest, TextRequest
from patent_demo.results import Results
from patent_demo.search import drawing as drawing_search
from patent_demo.search import text as text_search
from patent_demo.text.bm25 import BM25Index
from patent_demo.text.fusion import RRF_K, reciprocal_rank_fusion
from patent_demo.text.search import TextReranker, candidate_text
from patent_demo.text.select import text_model_for_scheme


@dataclass
class WorkbenchConfig:
    """Where data comes from and how big the built-in corpus is (see ``app.py`` for flags/env vars)."""

    cache_dir: Path = Path("cache")
    corpus: Path | None = None  # a corpus directory (manifest.jsonl); None: the built-in demo corpus
    demo_patents: int = 300
    demo_size: int = 160
    seed: int = 0
    checkpoint_dirs: tuple[Path, ...] = (Path("checkpoints"),)
    bm25_candidates: int = 100
    bm25_shards: int = 0  # BM25 scored on this many threads (BM25Index.use_numba; needs numba); 0: numpy
    batch_size: int = 32
    map_points: int = 1500
    backend: str = "faiss"  # drawing and dense text searches go through (patent_demo.backends): faiss, qdrant
    backend_url: str = (
        ""  # the engine's server ("": embedded under cache_dir/qdrant); backend_fallback "faiss":
    )
    backend_fallback: str = ""  # FAISS answers when the engine does not; backend_timeout: seconds a request
    backend_timeout: float = 5.0  # to the server may take

    def __post_init__(self) -> None:
        self.cache_dir = Path(self.cache_dir)
        self.corpus = Path(self.corpus) if self.corpus else None
        self.checkpoint_dirs = tuple(Path(d) for d in self.checkpoint_dirs)


# -- helpers -------------------------------------------------------------------------------------------
DENSE_TARGET = "the dense text index"  # what a build of it is marked with (``Builds.of``)


def drawing_target(model_key: str) -> str:
    """What a build of the drawing index of the model ``model_key`` is marked with (``Builds.of``)."""
    return f"the drawing index of {model_key}"


def corpus_fingerprint(corpus: Corpus) -> str:
    """sha256[:12] of the corpus records (ids, codes, texts, figure paths) and ``Corpus.location``."""
    h = hashlib.sha256()
    for p in corpus.patents:
        h.update(json.dumps(p.to_dict(), sort_keys=True, ensure_ascii=False).encode())
    h.update(corpus.location.encode())
    return h.hexdigest()[:12]


class Workbench:
    """Search, explain, evaluate and label over one corpus. Thread-safe for the app's concurrent handlers.

    ``drawing_encoder_factory(spec) -> DrawingEncoder`` and ``reranker_factory(spec) -> TextReranker``
    default to the real models; tests pass tiny ones. ``corpus`` overrides ``config.corpus``.
    """

    def __init__(
        self,
        config: WorkbenchConfig | None = None,
        corpus: Corpus | None = None,
        drawing_encoder_factory: Callable[[ModelSpec], DrawingEncoder] | None = None,
        reranker_factory: Callable[[ModelSpec], TextReranker] | None = None,
        progress: bool = True,
        text_encoder_factory: Callable[[], object] | None = None,
    ) -> None:
        self.config = config or WorkbenchConfig()
        self._corpus = corpus
        self._corpus_given = corpus is not None
        self._drawing_factory = drawing_encoder_factory or default_drawing_encoder
        self._reranker_factory = reranker_factory
        self.progress = progress
        # what is being built now, with the time left (the page's status line shows it)
        self.builds = Builds(console=progress)
        self._lock = threading.RLock()
        self._encoders: dict[str, DrawingEncoder] = {}
        self._rerankers: dict[str, TextReranker] = {}
        self._indexes: dict[str, DenseIndex] = {}
        self._index_locks: dict[str, threading.Lock] = {}  # one per model: a build blocks only its model
        self._warm_thread: threading.Thread | None = None
        self._bm25: BM25Index | None = None
        self._text_encoder_factory = text_encoder_factory
        self._dense: tuple | None = None  # (encoder, DenseIndex, HybridSettings)
        self._dense_lock = threading.Lock()
        self._figure_sha: dict[str, str] | None = None
        self._backends: dict[str, SearchBackend] = {}  # one engine per index (``backend``)
        self._derived: dict[str, object] = {}  # ``derived``

    # -- corpus and models ---------------------------------------------------------------------------
    @property
    def corpus(self) -> Corpus:
        with self._lock:
            if self._corpus is None:
                if self.config.corpus is not None:
                    self._corpus = Corpus.load(self.config.corpus)
                else:
                    from patent_demo.data.democorpus import ensure_demo_corpus

                    self._corpus = ensure_demo_corpus(
                        self.config.cache_dir / "democorpus",
                        patents=self.config.demo_patents,
                        seed=self.config.seed,
                        size=self.config.demo_size,
                    )
            return self._corpus

    @property
    def fingerprint(self) -> str:
        if not hasattr(self, "_fp"):
            self._fp = corpus_fingerprint(self.corpus)
        return self._fp

    def corpus_description(self) -> str:
        """Where the corpus comes from, its size and classification schemes (the built-in one is said to be
        generated): the app's header and the Error-analysis tab show it."""
        corpus = self.corpus
        n_figures = sum(len(p.figures) for p in corpus.patents)
        # a corpus says whether it is generated (its build records it); else only the built-in default is
        generated = bool(corpus.meta.get("generated", self.config.corpus is None and not self._corpus_given))
        source = (
            "generated demo corpus (synthetic drawings and texts, not real patents)"
            if generated
            else (corpus.source_label or "corpus")
        )
        schemes = sorted({s for p in corpus.patents for s, c in p.codes.items() if c})
        return (
            f"Corpus **{corpus.name}** · {source} · {len(corpus):,} patents, {n_figures:,} drawings · "
            f"schemes: {', '.join(schemes) or 'none'}"
        )

    def models(self, task: str | None = None) -> list[ModelSpec]:
        """Available models (``task`` "drawing" or "text"), rescanned on each call so new checkpoints appear."""
        return [m for m in scan_models(self.config.checkpoint_dirs) if task is None or m.task == task]

    def model(self, key: str, task: str) -> ModelSpec:
        for m in self.models(task):
            if m.key == key or m.label == key:
                return m
        names = [m.key for m in self.models(task)]
        raise ValueError(f"unknown {task} model {key!r}; available: {names}")

    def text_domain_scheme(self) -> str:
        """IPC when most corpus patents carry IPC codes, else Locarno (design corpora such as the built-in one)."""
        from patent_demo.text.select import corpus_scheme

        return corpus_scheme(self.corpus.patents)

    def encoder(self, spec: ModelSpec) -> DrawingEncoder:
        with self._lock:
            if spec.key not in self._encoders:
                self._encoders[spec.key] = self._drawing_factory(spec)
            return self._encoders[spec.key]

    def reranker(self, spec: ModelSpec) -> TextReranker:
        with self._lock:
            if spec.key not in self._rerankers:
                if self._reranker_factory is not None:
                    self._rerankers[spec.key] = self._reranker_factory(spec)
                else:
                    self._rerankers[spec.key] = default_reranker(spec, self.text_domain_scheme())
            return self._rerankers[spec.key]

    # -- indexes -----------------------------------------------------------------------------------------
    def index(self, model: str | ModelSpec) -> DenseIndex:
        """The dense index of the corpus figures under ``model``: loaded from the cache or built (progress bar)."""
        spec = model if isinstance(model, ModelSpec) else self.model(model, "drawing")
        with self._lock:
            lock = self._index_locks.setdefault(spec.key, threading.Lock())
        with lock:
            if spec.key in self._indexes:
                return self._indexes[spec.key]
            root = self.config.cache_dir / "index" / self.fingerprint / spec.fingerprint
            if (root / "params.json").is_file():
                index = DenseIndex.load(root)
            else:
                enc = self.encoder(spec)
                figures = self.corpus.figures()
                if not figures:
                    raise ValueError("the corpus has no figures to index")
                corpus = self.corpus
                images = (corpus.open_image(f) for _, f in figures)
                emb = embed_figures(
                    enc.encode,
                    images,
                    batch_size=self.config.batch_size,
                    progress=self.builds.of(drawing_target(spec.key)),
                    total=len(figures),
                    desc=f"embedding {len(figures):,} drawings with {spec.key}",
                )
                index = DenseIndex.build(
                    emb,
                    [f.path for _, f in figures],
                    [p.id for p, _ in figures],
                    model=spec.encoder,
                    checkpoint=spec.checkpoint_id,
                    **index_settings(len(emb), emb.shape[1]),
                )
                index.save(root)
            self._indexes[spec.key] = index
            return index

    def has_drawings(self) -> bool:
        """Whether the corpus has any figure (a text corpus has none: no drawing index, no drawing search)."""
        return any(p.figures for p in self.corpus)

    def index_ready(self, model: str | ModelSpec) -> bool:
        """Whether ``model``'s index is in memory (a search with it answers at once)."""
        return (model if isinstance(model, ModelSpec) else self.model(model, "drawing")).key in self._indexes

    def bm25(self) -> BM25Index:
        with self._lock:
            if self._bm25 is None:
                root = self.config.cache_dir / "bm25" / self.fingerprint
                if (root / "lexical.json").is_file():
                    self._bm25 = BM25Index.load(root)
                else:
                    with self.builds.step(f"the BM25 index of {len(self.corpus.patents):,} patents"):
                        self._bm25 = BM25Index.build(self.corpus.patents)
                        self._bm25.save(root)
                if self.config.bm25_shards:
                    self._bm25.use_numba(shards=self.config.bm25_shards)
            return self._bm25

    def dense(self):
        """``(encoder, index, hybrid settings)`` of the dense first stage: the bi-encoder checkpoint found in
        the checkpoint folders (``patent_demo.text.dense.find_dense_checkpoint``), else the packaged MiniLM,
        in the precision chosen for this CPU; its index loaded from the cache or built (progress bar)."""
        from patent_demo.text.dense import cached_dense_index, default_text_encoder

        with self._dense_lock:
            if self._dense is None:
                enc, hybrid = (
                    self._text_encoder_factory or (lambda: default_text_encoder(self.config.checkpoint_dirs))
                )()
                index = cached_dense_index(
                    enc,
                    self.corpus.patents,
                    self.config.cache_dir / "dense" / self.fingerprint,
                    batch_size=self.config.batch_size,
                    progress=self.builds.of(DENSE_TARGET),
                )
                self._dense = (enc, index, hybrid)
            return self._dense

    def dense_pending(self) -> str:
        """``""`` when the dense text index is ready, in the cache, or built by nobody (a search then loads or
        builds it), else a line on the warm-up's build of it: BM25 answers alone until it is ready
        (``search.search_text``)."""
        if self._dense is not None or self._warm_thread is None or not self._warm_thread.is_alive():
            return ""
        if any((self.config.cache_dir / "dense" / self.fingerprint).glob("*/params.json")):
            return ""  # on disk already (a Space ships it): the search loads it in a moment and waits
        build = next(iter(self.builds.running(DENSE_TARGET)), None)
        where = build.line().split(": ", 1)[1] if build else "it starts when the drawing index is built"
        return f"the dense text index is being built: {where}"

    def text_stage(self):
        """The first stages (``patent_demo.text.lists.FirstStage``): BM25, the dense index and the hybrid settings."""
        from patent_demo.text.lists import FirstStage

        enc, index, hybrid = self.dense()
        backend = self.backend("text") if self.config.backend != "faiss" else None
        return FirstStage(self.bm25(), index, enc, hybrid, backend)

    def backend(self, task: str, model: str | ModelSpec | None = None) -> SearchBackend:
        """The search engine (``config.backend``, ``patent_demo.backends``) of ``model``'s drawing index (``task``
        "drawing") or of the dense text index ("text"), made once; its engine collection is keyed like the
        FAISS cache, as ``patent-demo index push`` names it."""
        if task == "drawing":
            spec = model if isinstance(model, ModelSpec) else self.model(model, "drawing")
            index, fp = self.index(spec), spec.fingerprint
        else:
            enc, index, _ = self.dense()
            fp = enc.fingerprint()
        key = f"{task}_{fp}"
        with self._lock:
            if key not in self._backends:
                c = self.config
                self._backends[key] = make_backend(
                    c.backend,
                    index,
                    self.corpus,
                    collection_name(task, self.fingerprint, fp),
                    c.cache_dir,
                    c.backend_url,
                    c.backend_fallback,
                    c.backend_timeout,
                )
            return self._backends[key]

    def derived(self, name: str, build: Callable[[], object]):
        """The value ``name`` derived from this workbench's corpus and models (a calibrated no-match
        threshold, ``examiner.no_match_threshold``), made by ``build`` on first use and kept here; a table of
        the corpus alone is kept on the corpus (``Corpus.derived``)."""
        with self._lock:
            if name in self._derived:
                return self._derived[name]
        value = build()
        with self._lock:
            return self._derived.setdefault(name, value)

    def take_backend_note(self) -> str:
        """The ⚠️ of this thread's last search that the engine could not answer and FAISS did (or ``""``)."""
        return " · ".join(
            n for b in list(self._backends.values()) if hasattr(b, "take_note") and (n := b.take_note())
        )

    def figure_sha(self) -> dict[str, str]:
        """{sha256 of the figure file: figure path}, cached on disk: recognises a corpus drawing as a query."""
        with self._lock:
            if self._figure_sha is None:
                path = self.config.cache_dir / "figure_sha" / f"{self.fingerprint}.json"
                if path.is_file():
                    self._figure_sha = json.loads(path.read_text())
                else:
                    corpus = self.corpus
                    self._figure_sha = {
                        file_sha256(corpus.image_path(f)): f.path for _, f in self.corpus.figures()
                    }
                    path.parent.mkdir(parents=True, exist_ok=True)
                    tmp = path.with_suffix(".tmp")
                    tmp.write_text(json.dumps(self._figure_sha))
                    os.replace(tmp, path)
            return self._figure_sha

    def warm_up(self, drawing_model: str | None = None, text: bool = True, every_model: bool = False) -> None:
        """Build (or load) now, in this order: BM25 (a second), the default drawing model's index, the figure
        hashes (what a drawing search needs), the dense text index (minutes on 2 cores: a text search answers
        with BM25 alone until then), then (``every_model``) every other drawing model's index, which a search
        also builds."""
        drawing = [m.key for m in self.models("drawing")] if self.has_drawings() else []  # text corpus: none
        first = [drawing_model or self.default_drawing_model().key] if drawing else []
        rest = [k for k in drawing if every_model and k not in first]
        t0 = time.monotonic()
        for step in [*(["bm25"] if text else []), *first, "figure_sha", *(["dense"] if text else []), *rest]:
            if step in ("bm25", "dense", "figure_sha"):
                getattr(self, step)()
            elif (
                index := self.index(step)
            ).kind != "flat":  # the per-patent re-scoring's map, before a search
                index.prepare_patents()
        if self.progress:
            print(f"warm-up done in {time.monotonic() - t0:.1f} s", file=sys.stderr, flush=True)

    def warm_up_background(self) -> threading.Thread:
        """``warm_up(every_model=True)`` in a daemon thread (the default model, then text); see ``index_status``."""
        self._warm_thread = threading.Thread(target=self.warm_up, kwargs={"every_model": True}, daemon=True)
        self._warm_thread.start()
        return self._warm_thread

    def index_status(self) -> str:
        """``""`` when nothing is being built, else HTML: a progress bar with the time left for each build
        running (``builds``), then the indexes the warm-up builds after them. A search with a model being
        built waits for it (the page says so), one whose index is ready answers at once."""
        running = self.builds.running()
        waiting = self._warm_thread is not None and self._warm_thread.is_alive()
        if not running and not waiting:
            return ""
        targets = {b.target for b in running}
        drawn = self.has_drawings()
        later = [
            m.key
            for m in self.models("drawing")
            if drawn and m.key not in self._indexes and drawing_target(m.key) not in targets
        ]
        later += ["the dense text index"] if self._dense is None and DENSE_TARGET not in targets else []
        if not running and not later:
            return ""
        after = (
            f"<div>{'then' if running else 'next:'} {html.escape(', '.join(later))}</div>"
            if waiting and later
            else ""
        )
        return (
            f"<div class='builds'>{self.builds.status_html()}{after}<small>a search that needs one of these "
            "waits for it and answers as soon as it is built</small></div>"
        )

    def display_path(self, figure: Figure) -> str:
        """A browser-ready image of a figure (``patent_demo.data.build.display_image``)."""
        from patent_demo.data.build import display_image

        return str(display_image(self.corpus, figure, self.config.cache_dir / "thumbs" / self.fingerprint))

    # -- lookups ----------------------------------------------------------------------------------------
    def patent_of_figure(self, figure_path: str) -> tuple[Patent, Figure]:
        if not hasattr(self, "_fig_by_path"):
            self._fig_by_path = {f.path: (p, f) for p, f in self.corpus.figures()}
        return self._fig_by_path[figure_path]

    def hit(
        self, rank: int, patent_id: str, score: float, figure: str = "", extras: dict | None = None
    ) -> Hit:
        """The hit at ``rank`` of a list: the corpus patent ``patent_id`` with its title, Locarno code and
        title, and, for a figure hit, the figure's view and browser-ready image; ``extras`` ride along."""
        from patent_demo.titles import locarno_title

        p = self.corpus[patent_id]
        view, image = "", ""
        if figure:
            _, fig = self.patent_of_figure(figure)
            view, image = fig.view, self.display_path(fig)
        try:
            loc_title = locarno_title(p.locarno) if p.locarno else ""
        except (KeyError, ValueError):
            loc_title = ""
        return Hit(
            rank, p.id, float(score), p.title, p.locarno, loc_title, figure, view, image, dict(extras or {})
        )

    # -- searches (``patent_demo.search``: one request value each, ``patent_demo.request``) -----------------
    def search_drawing(self, request: DrawingRequest, vector=None) -> DrawingSearch:
        """Top-k for one drawing, inside the request's filters (``patent_demo.search.drawing.search_drawing``);
        ``vector`` (a refined query, ``[D]``) is searched instead of the drawing's embedding."""
        return drawing_search.search_drawing(self, request, vector)

    def search_application(self, request: DrawingRequest, vector=None) -> DrawingSearch:
        """Top-k patents for a whole application's views (``patent_demo.search.drawing.search_application``);
        ``vector`` (refined views, ``[V, D]``) is searched instead of the views' embeddings."""
        return drawing_search.search_application(self, request, vector)

    def search_text(self, request: TextRequest) -> TextSearch:
        """The text lists of one request, inside its filters (``patent_demo.search.text.search_text``)."""
        return text_search.search_text(self, request)

    def spread(self, hits: Sequence[Hit], locarno: str, query_patent: str = "") -> str:
        """A line on how the top-k spread over the query's subclass and main class. Classes are read
        through ``hierarchy.patent_classes`` (Locarno, else USPC); the query's class is ``locarno`` when
        given, else that of ``query_patent``."""
        if not hits:
            return "no results"
        n = len(hits)
        if locarno:
            sub, main = locarno, main_of(locarno)
        else:
            sub, main = patent_classes(self.corpus[query_patent].codes) if query_patent else ("", "")
        classes = [patent_classes(self.corpus[h.patent_id].codes) for h in hits]
        if not sub:
            top, count = Counter(c[0] for c in classes).most_common(1)[0]
            return (
                f"query class unknown (give its Locarno code to compare); the top-{n} is led by "
                f"{top or 'unclassified'} ({count} of {n})"
            )
        same_sub = sum(1 for c in classes if c[0] == sub)
        same_main = sum(1 for c in classes if c[1] == main)
        return (
            f"of the top-{n}: {same_sub} in the query's subclass {sub}, "
            f"{same_main} in its main class {main}, {n - same_main} elsewhere"
        )

    # -- text search -------------------------------------------------------------------------------------
    def candidate_text(self, patent: Patent) -> str:
        return candidate_text(patent)

    def default_drawing_model(self) -> ModelSpec:  # when none is named: the corpus's class scheme decides
        return drawing_model_for_corpus(self.models("drawing"), self.corpus.patents)

    def default_text_model(self) -> ModelSpec:
        """When none is named: a trained checkpoint of the corpus's domain scheme (``text.select``), else the first."""
        specs = self.models("text")
        return text_model_for_scheme(specs, self.text_domain_scheme()) or specs[0]

    def rerank_depth(self, spec: ModelSpec) -> int:
        """How many hybrid candidates ``spec`` re-ranks: the depth its checkpoint chose on validation (the
        shallowest that loses nothing there), else ``config.bm25_candidates``."""
        from patent_demo.text.fusion import validated_depth

        return validated_depth(spec.path) or self.config.bm25_candidates

    def fusion_weight(self, spec: ModelSpec, depth: int | None = None) -> tuple[float, str]:
        """``(weight, note)``: the pool's share in the fused list, as ``spec``'s checkpoint tuned it on its
        validation queries for the hybrid pool at its re-rank depth (``depth``, when the caller has read it);
        else 0.5 and a note saying so."""
        from patent_demo.text.fusion import tuned_fusion_weight

        depth = depth or self.rerank_depth(spec)
        w = tuned_fusion_weight(spec.path, "hybrid", depth)
        if w is not None:
            return w, ""
        return 0.5, (
            f"{spec.key} records no fusion weight tuned on the hybrid top {depth}: "
            "the fused list uses an untuned 0.5"
        )

    def fuse(self, lists: Mapping[str, Results], k: int = RRF_K, top: int | None = None) -> Results:
        """Reciprocal rank fusion of patent lists (see :func:`reciprocal_rank_fusion`)."""
        return reciprocal_rank_fusion(lists, k=k, top=top)

    def text_hits(self, res: Results) -> list[Hit]:
        """The hits of a text list, each scored as the app shows it (``Results.shown_scores``)."""
        extras = res.extras or [{}] * len(res)
        return [
            self.hit(r, pid, s, extras=e)
            for r, (pid, s, e) in enumerate(zip(res.ids, res.shown_scores().tolist(), extras, strict=True), 1)
        ]

    # -- the evaluation protocol (the embedding map and the error analysis: ``patent_demo.analysis``) -----
    def protocol(self, split: str = "test") -> tuple[list[int], list[int]]:
        """Query/gallery rows of the index under the one drawing-evaluation protocol
        (``patent_demo.drawing.protocol``: ``resolve_split`` then ``drawing_protocol``): the test split's
        query figures against its other figures, or, without a test split (or with ``split="all"``), every
        figure against all others."""
        from patent_demo.drawing.protocol import drawing_protocol, resolve_split

        split, protocol = resolve_split(self.corpus, split)
        queries, gallery, _ = drawing_protocol(self.corpus, split, protocol)
        row = {f.path: i for i, (_, f) in enumerate(self.corpus.figures())}
        return [row[f.path] for _, f in queries], [row[f.path] for _, f in gallery]

    def compare(
        self, figure: str, model_a: str, model_b: str, k: int = 10
    ) -> tuple[DrawingSearch, DrawingSearch]:
        """The same corpus figure searched with two models (group by patent)."""
        patent, fig = self.patent_of_figure(figure)
        path = self.corpus.image_path(fig)
        return tuple(
            self.search_drawing(
                DrawingRequest.build(self, path, m, k, locarno=patent.locarno, own_patent=patent.id)
            )
            for m in (model_a, model_b)
        )  # type: ignore[return-value]

    def example_figures(self, n: int = 6) -> list[tuple[Patent, Figure]]:
        """Up to ``n`` query figures from the test split, one per Locarno subclass where possible."""
        q_rows, _ = self.protocol()
        figs = self.corpus.figures()
        out, seen = [], set()
        for row in q_rows:
            p, f = figs[row]
            if p.locarno not in seen:
                seen.add(p.locarno)
                out.append((p, f))
            if len(out) >= n:
                break
        return out

    def examples(self, n: int = 6) -> list[str]:  # the image files of example_figures
        return [str(self.corpus.image_path(f)) for _, f in self.example_figures(n)]
