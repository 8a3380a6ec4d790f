"""The data sources of ``train.dssdnet`` (query, candidate, y, t pairs) and the evaluation of a task.

``training_data(args)`` is the one interface: every source below becomes a task (``CorpusTask`` or
``PairTask``) with the same train / val / test pairs, and ``evaluate(model, task, args, split)`` scores either.

* **Labelled-pair TSV** (the public DSSDNet data, ``loaders.textcorpus.load_labelled_pairs``): pairs as
  given; ``t`` from the file's ``ipc_3`` column.
* **Label JSONL** (``labels.LabelStore.export_dssdnet``): ``{"query", "query_codes", "pos", "neg"}``
  rows; every ``pos`` item (any grade > 0) is a positive, every ``neg`` item a negative. Items without
  ``text`` take it, and their codes, from a library corpus (``--corpus``/...), which is then required.
* **Scored phrase pairs** (``--scored-pairs``, the USPPM CSV, ``patent_demo.text.scored``): anchor ->
  target (+ the CPC context's title unless ``--no-context``) with the human score as a soft target; split by
  anchor through ``--scored-split`` (``splits/usppm.json``); ``t`` marks the training pairs whose score
  changes with the context; evaluated by Pearson and Spearman against the human scores.
* **Corpus + qrels**: queries are patents with in-library citations (or qrels). Positives are the
  relevant documents; negatives are drawn as the article does, at random from the library, one per
  positive, afresh every epoch, plus optionally the ``bm25_negatives`` highest-ranked non-relevant
  BM25 candidates of each query (fixed).

The domain label ``t`` of a pair is ``patent_demo.text.pairs.domain_t`` (Eq. 4 over the chosen
scheme), NaN when either side has no code of that scheme; the model then uses its own prediction,
in training as at inference (``patent_demo.text.reranker.fill_t``).

Splits: a corpus with ``splits.json`` keeps them (queries from the train and val splits; test
queries from its qrels when it has them, else from the test split's citations). Otherwise, and for
the pair sources, each query goes to test, val or train by a hash of its *family* (the smallest id
among the patents linked to it by ``family_members`` within the library; a patent without family in
the library is its own family), so members of one family never sit on both sides of a split, and the
split is the same on every run and machine. With ``family_positives`` each same-family pair of the
train split is one more positive (with one random negative).

Frozen-encoder feature cache (:class:`FeatureCache`, one process only): with only the top
``--train-layers`` encoder layers training, the output of the frozen layers below them is fixed for
every (query, candidate) pair, so it is computed once and reused by every epoch, every evaluation and
every seed of a runner.

* ``--train-layers 0``: the cache holds ``e = H_CLS`` [H] per pair (and, given a folder, keeps it on
  disk for later runs with the same base and ``max_length``).
* ``--train-layers L > 0``: the cache holds the hidden states [len, H] after the frozen layers (in
  memory only); :meth:`FeatureCache.encode` runs the top ``L`` layers on them, with gradients when the
  model trains. The frozen layers run in eval mode (no dropout), the trained layers as the model is.

``FeatureCache.encode(queries, docs) -> e`` is the ``encode`` argument of ``Reranker.rank``, so cached
scoring (:class:`CachedReranker`) is the re-ranker's one scoring path.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from patent_demo import checkpoint
from patent_demo.atomic import atomic_write
from patent_demo.data.corpus import Corpus
from patent_demo.metrics import evaluate_run
from patent_demo.results import Results
from patent_demo.text.pair_scores import pair_run
from patent_demo.text.pairs import Pair, domain_t, jsonl_rows_pairs, pair_qrels, read_tsv_pairs
from patent_demo.text.reranker import Reranker
from patent_demo.text.search import candidate_text, rerank_run
from patent_demo.text.tasks import (
    SPLITS,
    VAL_PAIR_SEED,
    CorpusTask,
    corpus_task,
    hash_split,
    resolve_scheme,
)


@dataclass
class PairTask:
    """Fixed pairs per split (TSV or label JSONL); ``groups`` hold the held-out queries' candidates."""

    pairs: dict[str, list[Pair]]
    scheme: str
    rows: int = 0

    def qrels(self, split: str) -> dict[str, dict[str, int]]:
        """Graded qrels of ``split`` (``patent_demo.text.pairs.pair_qrels``)."""
        return pair_qrels(self.pairs[split])


def _split_pairs(pairs: Sequence[Pair], val_fraction: float, test_fraction: float) -> dict[str, list[Pair]]:
    out: dict[str, list[Pair]] = {s: [] for s in SPLITS}
    for p in pairs:
        out[hash_split(p.qid, val_fraction, test_fraction)].append(p)
    return out


@dataclass
class ScoreTask:
    """Human-scored pairs per split (split by anchor), evaluated by correlation with the scores."""

    rows: dict[str, list]
    pairs: dict[str, list[Pair]]
    context: bool = True
    scheme: str = "cpc"


def read_scored_split(path: str | os.PathLike) -> dict[str, set[str]]:
    """The anchors of each split of a committed scored-pair split file (``train.text.split --scored-pairs``)."""
    import json

    data = json.loads(Path(path).read_text(encoding="utf-8"))
    return {s: set(data[s]) for s in SPLITS}


def scored_task(path: str | os.PathLike, split_file: str | os.PathLike, context: bool = True) -> ScoreTask:
    """A :class:`ScoreTask` of the USPPM CSV ``path``: rows go to the split of their anchor (an anchor the
    split file does not list is refused, so a new file cannot leak into training); ``t`` comes from the
    training rows only (``patent_demo.text.scored.domain_sensitive_t``)."""
    from patent_demo.text.scored import domain_sensitive_t, read_scored_pairs, to_pairs

    anchors = read_scored_split(split_file)
    split_of = {a: s for s, names in anchors.items() for a in names}
    rows: dict[str, list] = {s: [] for s in SPLITS}
    unknown = set()
    for r in read_scored_pairs(path):
        if r.anchor in split_of:
            rows[split_of[r.anchor]].append(r)
        else:
            unknown.add(r.anchor)
    if unknown:
        raise SystemExit(
            f"{len(unknown)} anchor(s) of {path} are in no split of {split_file}, e.g. {sorted(unknown)[0]!r}"
        )
    t = domain_sensitive_t(rows["train"])
    pairs = {s: to_pairs(rows[s], context, t if s == "train" else None) for s in SPLITS}
    return ScoreTask(rows, pairs, context)


def tsv_task(path: str | os.PathLike, val_fraction: float = 0.15, test_fraction: float = 0.15) -> PairTask:
    """Pairs of a DSSDNet labelled-pair TSV, split by the query id (``#1 ID``)."""
    pairs = read_tsv_pairs(path)
    return PairTask(_split_pairs(pairs, val_fraction, test_fraction), "ipc", rows=len(pairs))


def jsonl_task(
    path: str | os.PathLike,
    library: Corpus | None = None,
    scheme: str = "auto",
    level: str = "subclass",
    val_fraction: float = 0.15,
    test_fraction: float = 0.15,
    seed: int = 0,
    rows: list[dict] | None = None,
) -> PairTask:
    """Pairs of a ``{"query", "query_codes", "pos", "neg"}`` JSONL file (the label export; ``rows``:
    the rows already read and guarded). A query with fewer negatives than positives is topped up with
    random library patents when a library is given."""
    from train.labels.data import read_rows

    scheme = resolve_scheme(scheme, library)
    rng = np.random.default_rng([seed, 7])
    rows = read_rows(path) if rows is None else rows
    pairs: list[Pair] = []
    for i, row in enumerate(rows, 1):
        own = jsonl_rows_pairs([(f"{path}:{i}", row)], library, scheme, level)
        pairs += own
        n_pos, n_neg = sum(p.y > 0 for p in own), sum(p.y <= 0 for p in own)
        if library is not None and n_neg < n_pos and own:
            seen = {p.doc_id for p in own}
            ids = [p.id for p in library if p.id not in seen and p.id != row.get("query_patent_id")]
            qcodes = row.get("query_codes") or {}
            for j in rng.choice(len(ids), size=min(n_pos - n_neg, len(ids)), replace=False):
                p = library[ids[int(j)]]
                pairs.append(
                    Pair(
                        own[0].qid,
                        own[0].query,
                        candidate_text(p),
                        0.0,
                        domain_t(qcodes, p.codes, scheme, level),
                        p.id,
                    )
                )
    return PairTask(_split_pairs(pairs, val_fraction, test_fraction), scheme, rows=len(rows))


def load_library(args) -> tuple[Corpus | None, dict[str, dict[str, int]] | None]:
    """The library corpus named by the command line (``--corpus``, ``--demo-patents``, ``--text-corpus``)
    and explicit qrels (``--pairs`` citation pairs or ``--qrels``), if any."""
    from patent_demo.data.loaders.textcorpus import load_text_corpus, qrels_from_pairs, read_pairs

    qrels = None
    if args.text_corpus:
        library = load_text_corpus(args.text_corpus)
        if args.pairs:
            pairs = [(a, b) for a, b in read_pairs(args.pairs) if a in library and b in library]
            qrels = qrels_from_pairs(pairs)
    elif args.corpus:
        library = Corpus.load(args.corpus, validate=False)
    elif args.demo_patents:
        from patent_demo.data.democorpus import ensure_demo_corpus

        library = ensure_demo_corpus(
            Path(args.cache_dir) / "democorpus",
            patents=args.demo_patents,
            seed=args.demo_seed,
            size=args.demo_size,
        )
    else:
        return None, None
    if args.qrels:
        from patent_demo.data.corpus import read_qrels

        qrels = read_qrels(args.qrels)
    return library, qrels


@dataclass
class TrainingData:
    """What ``train/dssdnet/main.py`` trains and evaluates on (see :func:`training_data`)."""

    train_task: PairTask | ScoreTask | None
    corpus_task: CorpusTask | None
    scheme: str
    val_pairs: list[Pair]
    fixed_train: list[Pair]
    seed: int
    negative_seed: int | None = None
    fixed_negatives: bool = False
    guard: dict | None = None

    @property
    def eval_task(self) -> CorpusTask | PairTask | ScoreTask | None:
        return self.corpus_task if self.corpus_task is not None else self.train_task

    def epoch_pairs(self, epoch: int) -> list[Pair]:
        """The training pairs of ``epoch``: the fixed pairs of a pair source; for a corpus its
        positives, one random negative each (drawn per epoch unless ``fixed_negatives``) and the
        BM25 negatives."""
        if self.train_task is not None:
            return list(self.fixed_train)
        task = self.corpus_task
        seed = self.seed if self.negative_seed is None else self.negative_seed
        rng = np.random.default_rng([seed, 0 if self.fixed_negatives else epoch])
        pos = [task.pair(q, d, 1.0) for q, d in task.positives("train")]
        return pos + task.random_negatives("train", rng) + self.fixed_train


def training_data(args) -> TrainingData:
    """Read the data source named by the command line (``train/dssdnet/main.py``'s arguments). Label rows
    pass the leak guard first: rows whose query is a test-split patent (the library's test split, or
    the hash split's test queries) and judged candidates that are test queries stay out of training
    unless ``--allow-test-labels``."""
    library, qrels = load_library(args)
    if sum(bool(x) for x in (args.tsv, args.labels, args.scored_pairs)) > 1:
        raise SystemExit("give one of --tsv, --labels and --scored-pairs")
    if args.scored_pairs:
        if not args.scored_split:
            raise SystemExit(
                "--scored-pairs needs --scored-split (splits/usppm.json: python -m train.text.split --scored-pairs CSV)"
            )
        task = scored_task(args.scored_pairs, args.scored_split, context=not args.no_context)
        order = np.random.default_rng(VAL_PAIR_SEED + 1).permutation(len(task.pairs["val"]))
        val = [task.pairs["val"][int(i)] for i in order]
        return TrainingData(task, None, task.scheme, val, task.pairs["train"], args.seed)
    if not (args.tsv or args.labels) and library is None:
        raise SystemExit(
            "no training data: give --tsv, --labels, or a library with qrels (--corpus, --demo-patents, --text-corpus)"
        )
    ctask = None
    if library is not None and args.split_file:
        import copy
        import json

        committed = json.loads(Path(args.split_file).read_text(encoding="utf-8"))
        library = copy.copy(library)
        library.splits = {s: list(committed[s]) for s in SPLITS}
    if library is not None:
        test = args.test_fraction if args.test_fraction is not None else 0.3
        ctask = corpus_task(
            library, qrels, args.domain_scheme, args.domain_level, args.val_fraction, test, args.max_queries
        )
    pair_test = args.test_fraction if args.test_fraction is not None else 0.15
    train_task, guard = None, None
    if args.tsv:
        train_task = tsv_task(args.tsv, args.val_fraction, pair_test)
    elif args.labels:
        rows = guarded_rows(args, library, ctask)
        guard = rows[1]
        train_task = jsonl_task(
            args.labels,
            library,
            args.domain_scheme,
            args.domain_level,
            args.val_fraction,
            pair_test,
            args.seed,
            rows=rows[0],
        )
    if train_task is not None:
        fixed, val = train_task.pairs["train"], list(train_task.pairs["val"])
    else:
        fixed = ctask.bm25_negatives("train", args.bm25_negatives, args.k_first)
        fixed += ctask.hybrid_negatives("train", args.hybrid_negatives, args.cache_dir)
        val = [ctask.pair(q, d, 1.0) for q, d in ctask.positives("val")]
        rng = np.random.default_rng(VAL_PAIR_SEED)
        val += ctask.random_negatives("val", rng)
        if getattr(args, "family_positives", False):
            fixed += ctask.family_pairs("train", np.random.default_rng([args.seed, 11]))
            val += ctask.family_pairs("val", rng)
    # validation batches mix positives and negatives like training batches (L_PR needs both)
    order = np.random.default_rng(VAL_PAIR_SEED + 1).permutation(len(val))
    val = [val[int(i)] for i in order]
    scheme = ctask.scheme if ctask is not None else train_task.scheme
    return TrainingData(
        train_task, ctask, scheme, val, fixed, args.seed, args.negative_seed, args.fixed_negatives, guard
    )


def guarded_rows(args, library: Corpus | None, ctask: CorpusTask | None) -> tuple[list[dict], dict]:
    """``--labels`` rows after ``train.labels.data.guard_dssdnet_rows`` against the test split of the
    library (its ``splits.json``, else the test queries of the hash split), and the guard's statistics."""
    import copy

    from train.labels.data import guard_dssdnet_rows, read_rows

    rows = read_rows(args.labels)
    if library is None:  # no library: the label file's own hash split keeps its test queries apart
        return rows, {"rows": len(rows), "library": None}
    test_ids = set(library.splits.get("test", []))
    if ctask is not None:
        test_ids |= set(ctask.qrels["test"])
    guarded = copy.copy(library)
    guarded.splits = {**library.splits, "test": sorted(test_ids)}
    kept, stats = guard_dssdnet_rows(rows, guarded, "test", getattr(args, "allow_test_labels", False))
    return kept, stats.to_dict()


# -- evaluation of a task: BM25 and re-ranking metrics of one split ----------------------------------------------
# A library task: BM25 top ``k_first`` per query, the first ``k_rerank`` re-ranked
# (``patent_demo.text.search.rerank_run``). A pair task (TSV or label rows): each held-out query's own labelled
# candidates, ranked by BM25 over those candidates (``patent_demo.text.pairs.bm25_pair_run``) or by the
# re-ranker, against graded qrels (``patent_demo.text.pair_scores.evaluate_pairs``, as ``patent-demo evaluate text``).
def evaluate(model, task, args, split: str) -> tuple[dict, dict[str, Results]]:
    """Metrics of ``split`` (``model`` None: BM25) and the run itself."""
    ks = sorted(set(args.ks))
    if isinstance(task, ScoreTask):
        from patent_demo.text.scored import biencoder_scores, correlations, score_pairs, spread

        pairs = task.pairs[split]
        gate = []
        if model is None:  # the untrained baseline of a score task: the packaged bi-encoder's cosine
            scores = biencoder_scores(pairs)
        else:
            scores, gate = score_pairs(pairs, model, batch_size=args.eval_batch_size, extra="gate_mean")
        m = correlations(scores, [p.y for p in pairs])
        m["anchors"] = len({p.qid for p in pairs})
        m["gate_mean"] = spread(gate)  # the domain-sensitive share of e_s over the pairs (None: no gate)
        return m, {"ids": [p.doc_id for p in pairs], "scores": [float(x) for x in scores]}
    if isinstance(task, CorpusTask):
        queries = task.queries[split]
        k_first = min(args.k_first, len(task.library))
        run = rerank_run(
            task.bm25,
            model,
            queries,
            task.library,
            k_first=k_first,
            k_rerank=None if args.k_rerank is None else min(args.k_rerank, k_first),
            batch_size=args.eval_batch_size,
        )
        return evaluate_run(run, task.qrels[split], ks), run
    pairs = task.pairs[split]
    run = pair_run(pairs, model, batch_size=args.eval_batch_size)
    return evaluate_run(run, pair_qrels(pairs), ks), run


def write_run(path: str | Path, run: dict, name: str) -> None:
    """A score task's per-pair scores as JSON (``{"ids", "scores", "name"}``, beside ``path``), else a TREC run file of ``run`` (scores as ranked: a re-ranked head keeps its re-ranker scores shifted
    above the BM25 tail, see ``patent_demo.text.search.merge_head``)."""
    if set(run) == {"ids", "scores"}:
        checkpoint.write_json(Path(path).with_suffix(".json"), {"name": name, **run})
        return
    lines = [line for qid in sorted(run) for line in run[qid].to_trec(qid, name)]
    checkpoint.write_text(path, "\n".join(lines) + "\n")


def eval_description(args, task, split: str) -> dict:
    if isinstance(task, ScoreTask):
        return {
            "protocol": "Pearson and Spearman of the re-ranker's score against the human scores of the split's anchors (never trained on)",
            "split": split,
            "pairs": len(task.pairs[split]),
            "anchors": len({p.qid for p in task.pairs[split]}),
            "context": task.context,
        }
    if isinstance(task, CorpusTask):
        k_first = min(args.k_first, len(task.library))
        return {
            "protocol": "BM25 (title + abstract, k1 1.2, b 0.75) top k_first per query, the query patent excluded; the first k_rerank re-ranked, the rest in BM25 order",
            "split": split,
            "queries": len(task.queries[split]),
            "library": len(task.library),
            "k_first": k_first,
            "k_rerank": k_first if args.k_rerank is None else min(args.k_rerank, k_first),
        }
    if task is None:
        return {}
    return {
        "protocol": "each held-out query's labelled candidates: BM25 over those candidates vs the re-ranker; graded qrels round(4 y)",
        "split": split,
        "queries": len(task.qrels(split)),
    }


def fmt(m: dict) -> str:
    if "pearson" in m:
        return (
            " ".join(f"{k}={m[k]:.4f}" for k in ("pearson", "spearman") if m.get(k) is not None)
            + f" (pairs={m.get('pairs')})"
        )
    keys = [k for k in m if k.split("@")[0] in ("recall", "map", "map_retrieved", "ndcg")]
    return " ".join(f"{k}={m[k]:.4f}" for k in keys) + f" (n={m.get('num_queries')})"


# -- the frozen layers' outputs, computed once per pair -------------------------------------------------------
_SHARED: dict[tuple, dict] = {}  # features shared by the runs of one process (a runner's seeds)


def encoder_layers(model: Reranker) -> torch.nn.ModuleList:
    """The transformer layers of the re-ranker's encoder (BERT-like: ``encoder.layer``)."""
    for path in ("encoder.layer", "transformer.layer", "layers"):
        obj = model.encoder
        for name in path.split("."):
            obj = getattr(obj, name, None)
        if isinstance(obj, torch.nn.ModuleList):
            return obj
    raise ValueError(f"cannot find the transformer layers of {type(model.encoder).__name__}")


class FeatureCache:
    """Outputs of the frozen part of the encoder per text pair, computed on first use."""

    def __init__(self, model: Reranker, folder: str | None, batch_size: int, train_layers: int = 0) -> None:
        self.model, self.batch_size = model, batch_size
        n_layers = len(encoder_layers(model)) if train_layers > 0 else 0
        self.train_layers = min(train_layers, n_layers)
        self.boundary = n_layers - self.train_layers  # frozen layers below the cached states
        cfg = model.config
        tag = hashlib.sha1(f"{cfg.base}|{cfg.base_path}|{cfg.max_length}|{cfg.pooling}".encode()).hexdigest()[
            :12
        ]
        self.path = Path(folder) / f"features-{tag}.pt" if folder and self.train_layers == 0 else None
        shared = _SHARED.setdefault((tag, self.train_layers, str(self.path)), {"index": {}, "rows": []})
        self.index: dict[str, int] = shared["index"]
        self.rows: list[torch.Tensor] = shared["rows"]
        self.new = 0
        if self.path is not None and self.path.is_file() and not self.rows:
            saved = torch.load(self.path, map_location="cpu", weights_only=True)
            self.index.update({k: i for i, k in enumerate(saved["keys"])})
            self.rows.extend(saved["features"])

    @staticmethod
    def key(query: str, doc: str) -> str:
        return hashlib.sha1(f"{query}\x00{doc}".encode()).hexdigest()

    @torch.no_grad()
    def _lower(self, batch: dict) -> list[torch.Tensor]:
        """Per pair of a tokenised batch: ``H_CLS`` (boundary at the top) or the states after the
        frozen layers, trimmed to the pair's length."""
        enc = self.model.encoder
        if self.train_layers == 0:
            return list(self.model.encode(**batch).float().cpu())
        from transformers.masking_utils import create_bidirectional_mask

        h = enc.embeddings(input_ids=batch["input_ids"], token_type_ids=batch.get("token_type_ids"))
        mask = create_bidirectional_mask(
            config=enc.config, inputs_embeds=h, attention_mask=batch["attention_mask"]
        )
        for layer in encoder_layers(self.model)[: self.boundary]:
            h = layer(h, mask)
        lengths = batch["attention_mask"].sum(dim=1).tolist()
        return [h[i, : int(n)].float().cpu().clone() for i, n in enumerate(lengths)]

    def _fill(self, pairs: list[tuple[str, str]], keys: list[str]) -> None:
        missing = list({k: i for i, k in enumerate(keys) if k not in self.index}.values())
        if not missing:
            return
        was = self.model.encoder.training
        self.model.encoder.eval()
        for i in range(0, len(missing), self.batch_size):
            chunk = missing[i : i + self.batch_size]
            batch = self.model.tokenize([pairs[j][0] for j in chunk], [pairs[j][1] for j in chunk])
            for j, row in zip(chunk, self._lower(batch), strict=True):
                self.index[keys[j]] = len(self.rows)
                self.rows.append(row)
            self.new += len(chunk)
        self.model.encoder.train(was)

    def encode(self, queries, docs) -> torch.Tensor:
        """``e = H_CLS`` [B, H] of the pairs: cached, or the top layers run on the cached states."""
        pairs = list(zip(queries, docs, strict=True))
        keys = [self.key(q, d) for q, d in pairs]
        self._fill(pairs, keys)
        device = next(self.model.parameters()).device
        rows = [self.rows[self.index[k]] for k in keys]
        if self.train_layers == 0:
            return torch.stack(rows).to(device)
        from transformers.masking_utils import create_bidirectional_mask

        n = max(r.shape[0] for r in rows)
        h = torch.zeros(len(rows), n, rows[0].shape[1], device=device)
        att = torch.zeros(len(rows), n, dtype=torch.long, device=device)
        for i, r in enumerate(rows):
            h[i, : r.shape[0]] = r.to(device)
            att[i, : r.shape[0]] = 1
        enc = self.model.encoder
        mask = create_bidirectional_mask(config=enc.config, inputs_embeds=h, attention_mask=att)
        for layer in encoder_layers(self.model)[self.boundary :]:
            h = layer(h, mask)
        return self.model.pool(h, att)

    def save(self) -> None:
        if self.path is None or not self.new:
            return
        cache = {"keys": list(self.index), "features": torch.stack(self.rows)}
        atomic_write(self.path, lambda tmp: torch.save(cache, tmp), private=True)
        self.new = 0


class CachedReranker:
    """A re-ranker whose ``rank`` reads the cache: ``Reranker.rank`` with ``encode=cache.encode``."""

    def __init__(self, model: Reranker, cache: FeatureCache) -> None:
        self.model, self.cache = model, cache

    def rank(self, query_text, candidates, query_codes=None, batch_size: int = 32, known_t=None):
        return self.model.rank(
            query_text, candidates, query_codes, batch_size, encode=self.cache.encode, known_t=known_t
        )
