"""Search backends: one interface that the FAISS index and a vector database both implement.

A backend searches one collection of vectors (a drawing index: one row per figure; the dense text
index: one row per patent) with the examiner's filters as **values** (:class:`Where`) and returns the
package's one result type, ``Results`` (ids and scores, best first; extras ``patent_id`` and
``figure_id``). Two implementations:

* :class:`FaissBackend`: the ``DenseIndex`` the app builds, the filters turned into the allowed patent
  ids (``SearchFilter.allowed_ids``, less the query's own patent and family) that FAISS keeps with an id
  selector;
* :class:`QdrantBackend`: a Qdrant collection (``qdrant-client``) that :func:`push` fills with the same
  embeddings and a payload per figure (:func:`payload`); the filters are a Qdrant payload filter *inside*
  the search (:func:`qdrant_filter`) and one hit per patent is Qdrant's group-by on ``patent_id``. Without
  a URL it runs embedded (``QdrantClient(path=CACHE/qdrant)``: exact search, no server); with ``url`` the
  same code talks to a server or cluster, whose collection is created with 8-bit scalar quantisation and
  exact re-scoring (the kind ``docs/scale.md`` measured for one machine).

The payload spells the filters so that a keyword match decides them exactly as ``SearchFilter.admits``
does: ``date`` is the publication date as the integer ``YYYYMMDD`` (absent when unpublished), ``filed``
the effective filing date of a patent document (``prior_art.effective_filing_date``, absent without one;
a cut-off admits ``date < D`` or ``filed < D``, the rule of ``patent_demo.prior_art``), ``classes``
holds ``scheme|prefix`` for every prefix of every code that ``filters.prefix_matches`` accepts, ``kind``
every prefix of the kind code, ``country`` the office, ``family_id`` the smallest id of the patent's
bibliographic family (``families.family_sets``).

A backend that cannot answer (the server down, a timeout) raises :class:`BackendUnavailable`, whose
message says what to do (the app shows it as a ⚠️); ``Workbench`` answers from FAISS instead when the app was
started with ``--backend-fallback faiss``.
"""

from __future__ import annotations

import atexit
import os
import threading
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

import numpy as np

from patent_demo.data.corpus import SCHEMES, Corpus, Patent
from patent_demo.filters import (
    SearchFilter,
    _locarno_prefix,
    _squash,
    patent_country,
    patent_kind_code,
    prefix_matches,
    publication_date,
)
from patent_demo.index.dense import DenseIndex
from patent_demo.prior_art import effective_filing_date
from patent_demo.results import Results

BACKENDS = ("faiss", "qdrant")
QDRANT_INSTALL = "pip install '.[qdrant]' (qdrant-client==1.20.0, an optional extra)"
DEFAULT_TIMEOUT = 5.0  # seconds a request to a Qdrant server may take before the app says so
PUSH_BATCH = 512
PAYLOAD_VERSION = 2  # 2: ``filed``, the effective filing date the prior-art rule reads
TIES = 8  # extra hits fetched so that equal scores are ordered by corpus row, as FAISS orders them


class BackendUnavailable(ConnectionError):
    """The backend could not answer (unreachable, timed out, collection missing); the message says so."""


@dataclass(frozen=True)
class Where:
    """The examiner's filters as one value, what every backend searches with.

    ``search``: cut-off, date range, classification prefixes, office, kind code (``SearchFilter``);
    ``own``: the query's own patents, left out, with their families when ``own_family``;
    ``only``: when not ``None``, the only patent ids the search may return (the matches of a query in the
    search syntax, ``patent_demo.text.syntax``)."""

    search: SearchFilter = SearchFilter()
    own: tuple[str, ...] = ()
    own_family: bool = True
    only: frozenset[str] | None = None

    def allowed(self, corpus: Corpus) -> set[str] | None:
        """The patent ids this admits in ``corpus`` (``None``: every one), what FAISS's id selector keeps."""
        from patent_demo.families import own_and_family

        allowed = self.search.allowed_ids(corpus)
        if self.only is not None:
            allowed = set(self.only) if allowed is None else allowed & self.only
        if self.own:
            out = set().union(*(own_and_family(corpus, p) if self.own_family else {p} for p in self.own))
            allowed = ({p.id for p in corpus} if allowed is None else allowed) - out
        return allowed


class SearchBackend(Protocol):
    """What the app and the CLI search through (see the module docstring)."""

    name: str

    def search(self, query: np.ndarray, k: int, where: Where = Where(), per_patent: bool = True) -> Results:
        """The top ``k`` for one query ``[D]`` (cosine): patents scored by their best figure
        (``per_patent``; extras ``figure_id``) or figures (extras ``patent_id``)."""
        ...


class FaissBackend:
    """The FAISS ``DenseIndex`` as a backend: the filters become allowed ids kept inside FAISS."""

    name = "faiss"

    def __init__(self, index: DenseIndex, corpus: Corpus) -> None:
        self.index, self.corpus = index, corpus

    def search(self, query: np.ndarray, k: int, where: Where = Where(), per_patent: bool = True) -> Results:
        allowed = where.allowed(self.corpus)
        if allowed is not None and not allowed:
            return Results.empty()
        if per_patent:  # (search_patents itself asks no more than the allowed patents hold)
            return self.index.search_patents(
                query, min(k, len(self.index.prepare_patents())), allowed=allowed
            )
        return self.index.search(query, min(k, self.index.count), allowed=allowed)


# -- the payload and the filter -------------------------------------------------------------------------
def date_number(iso: str) -> int:
    """``2019-06-30`` -> ``20190630`` (dates compare as these integers do)."""
    return int(iso.replace("-", ""))


def class_keys(codes: dict[str, Sequence[str]]) -> list[str]:
    """``scheme|prefix`` for every prefix of every code that ``prefix_matches`` accepts (so a keyword
    match on one of these is ``ClassPrefix.matches``)."""
    keys = set()
    for scheme, values in codes.items():
        for v in values:
            c = _squash(v)
            keys.update(f"{scheme}|{c[:i]}" for i in range(1, len(c) + 1) if prefix_matches(c[:i], c))
    return sorted(keys)


def payload(patent: Patent, family_id: str) -> dict:
    """The payload of each of ``patent``'s points (see the module docstring)."""
    kind = patent_kind_code(patent)
    out = {
        "patent_id": patent.id,
        "family_id": family_id,
        "classes": class_keys(patent.codes),
        "country": patent_country(patent),
        "kind": [kind[:i] for i in range(1, len(kind) + 1)],
    }
    date, filed = publication_date(patent), effective_filing_date(patent)
    if date:
        out["date"] = date_number(date)
    if filed:
        out["filed"] = date_number(filed)
    return out


def family_ids(corpus: Corpus) -> dict[str, str]:
    """``{patent id: family id}``: the smallest id of its bibliographic family (``families.family_sets``)."""
    from patent_demo.families import family_sets

    sets = family_sets(corpus)
    return {p.id: min(sets.get(p.id, {p.id})) for p in corpus}


def qdrant_filter(where: Where, own_families: Iterable[str] = ()):
    """The Qdrant payload filter of ``where`` (``None`` when it admits everything); ``own_families`` are
    the family ids of ``where.own`` (left out with them when ``where.own_family``)."""
    from qdrant_client import models as m

    f = where.search
    must, must_not = [], []
    if f.before:  # prior art: published before the cut-off, or (a patent document) filed before it
        before = m.Range(lt=date_number(f.before))
        either = [m.FieldCondition(key="date", range=before), m.FieldCondition(key="filed", range=before)]
        if f.keep_undated:  # neither published nor filed on record
            either.append(
                m.Filter(
                    must=[
                        m.IsEmptyCondition(is_empty=m.PayloadField(key="date")),
                        m.IsEmptyCondition(is_empty=m.PayloadField(key="filed")),
                    ]
                )
            )
        must.append(m.Filter(should=either))
    dated = bool(f.date_from or f.date_to)
    rng = m.Range(
        gte=date_number(f.date_from) if f.date_from else None,
        lte=date_number(f.date_to) if f.date_to else None,
    )
    if dated and f.keep_undated:  # in the range, or undated
        must.append(
            m.Filter(
                should=[
                    m.FieldCondition(key="date", range=rng),
                    m.IsEmptyCondition(is_empty=m.PayloadField(key="date")),
                ]
            )
        )
    elif dated:  # an undated point has no "date": a range never matches it
        must.append(m.FieldCondition(key="date", range=rng))
    if f.classification:
        keys = sorted(
            {
                f"{s}|{_squash(_locarno_prefix(c.prefix.strip()) if s == 'locarno' else c.prefix)}"
                for c in f.classification
                for s in SCHEMES
                if not c.scheme or s == c.scheme
            }
        )
        must.append(m.FieldCondition(key="classes", match=m.MatchAny(any=keys)))
    if f.country:
        must.append(m.FieldCondition(key="country", match=m.MatchAny(any=list(f.country))))
    if f.kind_code:
        must.append(m.FieldCondition(key="kind", match=m.MatchAny(any=list(f.kind_code))))
    if where.only is not None:
        must.append(m.FieldCondition(key="patent_id", match=m.MatchAny(any=sorted(where.only))))
    if where.own:
        must_not.append(m.FieldCondition(key="patent_id", match=m.MatchAny(any=list(where.own))))
        families = sorted(set(own_families)) if where.own_family else []
        if families:
            must_not.append(m.FieldCondition(key="family_id", match=m.MatchAny(any=families)))
    return m.Filter(must=must or None, must_not=must_not or None) if must or must_not else None


# -- Qdrant ---------------------------------------------------------------------------------------------
_CLIENTS: dict[str, object] = {}  # embedded Qdrant locks its folder: one client per folder per process
_CLIENTS_LOCK = threading.Lock()


def require_qdrant() -> None:
    """Raise ``BackendUnavailable`` saying how to install it when ``qdrant-client`` (the optional extra
    ``qdrant``) is missing; the app checks this at start, the CLI when it opens the backend."""
    try:
        import qdrant_client  # noqa: F401
    except ImportError:
        raise BackendUnavailable(f"the qdrant backend needs qdrant-client: {QDRANT_INSTALL}") from None


def qdrant_client(url: str | None = None, path: str | Path | None = None, timeout: float = DEFAULT_TIMEOUT):
    """A ``QdrantClient``: of the server at ``url`` (with the API key in ``QDRANT_API_KEY``, if set), else
    embedded in the folder ``path`` (one client per folder)."""
    require_qdrant()
    from qdrant_client import QdrantClient

    key = f"url:{url}" if url else f"path:{Path(path).resolve()}"
    with _CLIENTS_LOCK:
        if not _CLIENTS:
            atexit.register(close_clients)  # embedded Qdrant flushes and unlocks its folder on close
        if key not in _CLIENTS:
            if url:
                _CLIENTS[key] = QdrantClient(
                    url=url,
                    timeout=max(1, int(round(timeout))),
                    check_compatibility=False,
                    api_key=os.environ.get("QDRANT_API_KEY") or None,
                )
            else:
                Path(path).mkdir(parents=True, exist_ok=True)
                _CLIENTS[key] = QdrantClient(path=str(path))
        return _CLIENTS[key]


def close_clients() -> None:
    """Close every client :func:`qdrant_client` opened (at exit, before the interpreter tears down)."""
    with _CLIENTS_LOCK:
        for client in _CLIENTS.values():
            client.close()
        _CLIENTS.clear()


def collection_name(task: str, corpus_fp: str, model_fp: str) -> str:
    """``drawing_<corpus fp>_<model fp>_<payload version>`` / ``text_...``: keyed like the FAISS cache
    (``Workbench.index``), and by the payload's version so that a collection pushed before a payload field
    existed (``filed``) is pushed again rather than searched with a rule it cannot answer."""
    return f"{task}_{corpus_fp}_{model_fp}_p{PAYLOAD_VERSION}"


def _unavailable(where: str, err: Exception) -> BackendUnavailable:
    msg = str(err).strip().splitlines()[0][:200] if str(err).strip() else type(err).__name__
    return BackendUnavailable(
        f"the search engine ({where}) did not answer: {msg}. Check that it runs and "
        "that the collection was pushed (patent-demo index push), or start the app with "
        "--backend-fallback faiss"
    )


class QdrantBackend:
    """A Qdrant collection as a backend (see the module docstring)."""

    name = "qdrant"

    def __init__(self, client, collection: str, url: str | None = None) -> None:
        self.client, self.collection, self.url = client, collection, url

    @property
    def local(self) -> bool:
        return self.url is None

    def _search_params(self):
        if self.local:  # embedded Qdrant searches exactly; it takes no search parameters
            return None
        from qdrant_client import models as m

        return m.SearchParams(quantization=m.QuantizationSearchParams(rescore=True, oversampling=2.0))

    def _own_families(self, own: Sequence[str]) -> list[str]:
        from qdrant_client import models as m

        points, _ = self.client.scroll(
            self.collection,
            limit=len(own) * 64,
            with_payload=["family_id"],
            scroll_filter=m.Filter(must=[m.FieldCondition(key="patent_id", match=m.MatchAny(any=list(own)))]),
        )
        return sorted({p.payload["family_id"] for p in points})

    def search(self, query: np.ndarray, k: int, where: Where = Where(), per_patent: bool = True) -> Results:
        if k < 1:
            raise ValueError(f"k must be at least 1, got {k}")
        q = np.asarray(query, dtype=np.float32).reshape(-1).tolist()
        try:
            flt = qdrant_filter(
                where, self._own_families(where.own) if where.own and where.own_family else ()
            )
            if per_patent:
                res = self.client.query_points_groups(
                    self.collection,
                    query=q,
                    group_by="patent_id",
                    limit=k + TIES,
                    group_size=1,
                    query_filter=flt,
                    with_payload=["figure_id"],
                    search_params=self._search_params(),
                )
                hits = [(str(g.id), g.hits[0]) for g in res.groups]
                extras = [{"figure_id": h.payload["figure_id"]} for _, h in hits]
            else:
                res = self.client.query_points(
                    self.collection,
                    query=q,
                    limit=k + TIES,
                    query_filter=flt,
                    with_payload=["figure_id", "patent_id"],
                    search_params=self._search_params(),
                )
                hits = [(p.payload["figure_id"], p) for p in res.points]
                extras = [{"patent_id": p.payload["patent_id"]} for _, p in hits]
        except ValueError as err:  # embedded Qdrant: the collection is not there
            raise _unavailable(self.url or "embedded", err) from None
        except Exception as err:  # noqa: BLE001 - the server down, refused, timed out: one clear message
            if type(err).__module__.startswith(("qdrant_client", "httpx", "grpc", "httpcore")):
                raise _unavailable(self.url or "embedded", err) from None
            raise
        order = sorted(range(len(hits)), key=lambda i: (-hits[i][1].score, hits[i][1].id))[:k]  # ties: by row
        return Results(
            [hits[i][0] for i in order], [hits[i][1].score for i in order], [extras[i] for i in order]
        )


def push(
    client,
    collection: str,
    index: DenseIndex,
    corpus: Corpus,
    quantize: bool = True,
    shards: int | None = None,
    replicas: int | None = None,
) -> int:
    """(Re)create ``collection`` from ``index``'s embeddings, one point per row (id = row) with its
    :func:`payload`; on a server with 8-bit scalar quantisation (re-scored at search), keyword / integer
    payload indexes on the filter fields, the original vectors on disk, and ``shards`` shards of
    ``replicas`` copies each (a cluster; ``None``: the server's defaults). Returns the number of points."""
    import warnings

    from qdrant_client import models as m

    local = type(client._client).__name__ == "QdrantLocal"
    if client.collection_exists(collection):
        client.delete_collection(collection)
    sq8 = m.ScalarQuantization(scalar=m.ScalarQuantizationConfig(type=m.ScalarType.INT8, always_ram=True))
    vectors = m.VectorParams(size=index.dim, distance=m.Distance.COSINE, on_disk=None if local else True)
    cluster = {} if local else {"shard_number": shards, "replication_factor": replicas}
    client.create_collection(
        collection,
        vectors_config=vectors,
        quantization_config=sq8 if quantize and not local else None,
        **cluster,
    )
    if not local:
        for key, schema in (
            ("patent_id", "KEYWORD"),
            ("family_id", "KEYWORD"),
            ("classes", "KEYWORD"),
            ("country", "KEYWORD"),
            ("kind", "KEYWORD"),
            ("date", "INTEGER"),
            ("filed", "INTEGER"),
        ):
            client.create_payload_index(collection, key, getattr(m.PayloadSchemaType, schema))
    fam = family_ids(corpus)
    by_id = {p.id: p for p in corpus}
    cached: dict[str, dict] = {}
    for start in range(0, index.count, PUSH_BATCH):
        rows = range(start, min(index.count, start + PUSH_BATCH))
        vectors = np.asarray(index.embeddings[rows.start : rows.stop], dtype=np.float32)
        points = []
        for row, vec in zip(rows, vectors, strict=True):
            pid = index.patent_ids[row]
            if pid not in cached:
                if pid not in by_id:
                    raise ValueError(
                        f"the index holds patent {pid!r}, which the corpus does not: rebuild the index"
                    )
                cached[pid] = payload(by_id[pid], fam[pid])
            points.append(
                m.PointStruct(
                    id=row, vector=vec.tolist(), payload={**cached[pid], "figure_id": index.ids[row]}
                )
            )
        with warnings.catch_warnings():  # embedded Qdrant warns past 20,000 points that a server is faster
            warnings.simplefilter("ignore", UserWarning)
            client.upsert(collection, points=points)
    return index.count


class FallbackBackend:
    """``primary`` (the engine), answered by ``fallback`` (FAISS) when the engine is unavailable; the
    engine's ⚠️ message, with "FAISS answered", is kept for the calling thread (:meth:`take_note`)."""

    def __init__(self, primary: SearchBackend, fallback: SearchBackend) -> None:
        self.primary, self.fallback, self.name = primary, fallback, primary.name
        self._local = threading.local()

    def search(self, query: np.ndarray, k: int, where: Where = Where(), per_patent: bool = True) -> Results:
        try:
            return self.primary.search(query, k, where, per_patent)
        except BackendUnavailable as err:
            self._local.note = f"⚠️ {err}. {self.fallback.name.upper()} answered instead (--backend-fallback)"
            return self.fallback.search(query, k, where, per_patent)

    def take_note(self) -> str:
        """The fallback note of this thread's last search (``""`` when the engine answered); cleared."""
        note, self._local.note = getattr(self._local, "note", ""), ""
        return note


def make_backend(
    name: str,
    index: DenseIndex,
    corpus: Corpus,
    collection: str,
    cache_dir: str | Path,
    url: str | None = None,
    fallback: str = "",
    timeout: float = DEFAULT_TIMEOUT,
) -> SearchBackend:
    """The backend ``name`` over ``index`` (FAISS) or its pushed ``collection`` (an engine: the server at
    ``url``, else embedded under ``cache_dir/qdrant``), wrapped in :class:`FallbackBackend` when
    ``fallback`` is ``faiss``."""
    if name not in BACKENDS:
        raise ValueError(f"unknown backend {name!r}; choose one of {', '.join(BACKENDS)}")
    if fallback not in ("", "faiss"):
        raise ValueError(f"unknown fallback {fallback!r}; the fallback can only be faiss")
    faiss_backend = FaissBackend(index, corpus)
    if name == "faiss":
        return faiss_backend
    client = qdrant_client(url or None, Path(cache_dir) / "qdrant", timeout)
    engine = QdrantBackend(client, collection, url or None)
    return FallbackBackend(engine, faiss_backend) if fallback == "faiss" else engine
