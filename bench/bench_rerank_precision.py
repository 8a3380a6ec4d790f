"""Re-ranking 100 candidates at 128 tokens: torch fp32 vs bf16 autocast vs dynamic int8 vs ONNX Runtime
(fp32 and dynamic int8), latency and ranking agreement with fp32, in one run.

    python bench/bench_rerank_precision.py --threads 2 --checkpoint checkpoints/dssdnet-minilm-ipc

Queries and candidates are real cs3245 patents (title + abstract; the candidates are a test query's
BM25 top 100, almost all at the 128-token limit). Latency: one query's 100 candidates per call,
the variants interleaved (A, B, C, ... A, B, C) so that load on a shared machine hits them alike;
medians printed, with CPU seconds (all threads). Agreement: ``--quality-queries`` test queries, BM25
top 100 re-ranked by every variant; per variant the mean top-10 overlap with fp32 and the change of
Recall@10, MAP@10 and nDCG@10 against fp32. Targets: <= 0.8 s per 100 candidates, overlap >= 0.95,
|metric change| <= 0.005. The CPU flags decide what ``patent_demo.text.precision.choose_precision``
picks here; the log says which and why.

ONNX Runtime runs when ``onnxruntime``, ``onnx`` and ``onnxscript`` are installed (requirements-test.txt):
the encoder is exported with ``torch.onnx.export(dynamo=True)`` (dynamic batch and length) and, for
int8, quantized with ``onnxruntime.quantization.quantize_dynamic``; the DSSDNet heads stay in torch.
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import sys
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np
import torch

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from patent_demo.data.loaders.textcorpus import load_text_corpus, qrels_from_pairs, read_pairs  # noqa: E402
from patent_demo.metrics import evaluate_run  # noqa: E402
from patent_demo.text.precision import apply_precision, choose_precision, cpu_flags, has_fast_bf16  # noqa: E402
from patent_demo.text.reranker import Reranker, create_reranker  # noqa: E402
from patent_demo.text.search import candidate_text, rerank_run  # noqa: E402
from patent_demo.text.tasks import corpus_task  # noqa: E402

DATA = REPO.parent / "shared" / "data" / "cs3245_patsnap_corpus_qrels"
QUALITY_METRICS = ("recall@10", "map@10", "ndcg@10")


def load(path: str) -> Reranker:
    torch.manual_seed(0)
    if Path(path, "config.json").is_file():
        return Reranker.load(path).eval()
    return create_reranker("minilm", domain_scheme="ipc").eval()


class OrtEncoder:
    """The encoder as an ONNX Runtime session: ``encode(queries, docs) -> e = H_CLS`` for ``Reranker.rank``."""

    def __init__(self, model: Reranker, path: Path, threads: int) -> None:
        import onnxruntime as ort

        self.model = model
        opts = ort.SessionOptions()
        opts.intra_op_num_threads = threads
        opts.inter_op_num_threads = 1
        self.session = ort.InferenceSession(str(path), opts, providers=["CPUExecutionProvider"])
        self.names = [i.name for i in self.session.get_inputs()]

    def __call__(self, queries, docs) -> torch.Tensor:
        batch = self.model.tokenize(queries, docs)
        feed = {k: batch[k].cpu().numpy() for k in self.names}
        return torch.from_numpy(self.session.run(None, feed)[0])


def export_onnx(model: Reranker, folder: Path) -> tuple[Path, Path]:
    """The encoder exported to ``folder/encoder.onnx`` and its dynamic-int8 version ``encoder.int8.onnx``."""
    from onnxruntime.quantization import QuantType, quantize_dynamic

    class ClsEncoder(torch.nn.Module):
        def __init__(self, encoder):
            super().__init__()
            self.encoder = encoder

        def forward(self, input_ids, attention_mask, token_type_ids):
            out = self.encoder(
                input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids
            )
            return out.last_hidden_state[:, 0]

    sample = model.tokenize(["a water filter", "pump"], ["a membrane for salt water", "a pump with a valve"])
    names = ["input_ids", "attention_mask", "token_type_ids"]
    fp32 = folder / "encoder.onnx"
    batch, length = torch.export.Dim("batch"), torch.export.Dim("length", max=512)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(
            ClsEncoder(model.encoder).eval(),
            tuple(sample[k] for k in names),
            str(fp32),
            dynamo=True,
            input_names=names,
            output_names=["cls"],
            verbose=False,
            dynamic_shapes={k: {0: batch, 1: length} for k in names},
        )
    int8 = folder / "encoder.int8.onnx"
    quantize_dynamic(str(fp32), str(int8), weight_type=QuantType.QInt8)
    return fp32, int8


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--checkpoint", default=str(REPO / "checkpoints" / "dssdnet-minilm-ipc"))
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--candidates", type=int, default=100)
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--batch-size", type=int, default=32)
    p.add_argument("--quality-queries", type=int, default=20)
    p.add_argument("--no-onnx", action="store_true")
    p.add_argument(
        "--quality-max-slowdown",
        type=float,
        default=2.0,
        help="skip the agreement run of variants this many times slower than fp32 (bf16 without bf16 hardware)",
    )
    p.add_argument("--json", default=None)
    args = p.parse_args(argv)
    torch.set_num_threads(args.threads)
    flags = cpu_flags()
    print(
        f"# {platform.processor() or platform.machine()}, torch {torch.__version__}, threads {torch.get_num_threads()}"
    )
    print(
        f"# CPU flags: avx512_bf16={'avx512_bf16' in flags} amx_bf16={'amx_bf16' in flags} "
        f"avx512_vnni={'avx512_vnni' in flags} avx2={'avx2' in flags}; choose_precision('auto') -> "
        f"{choose_precision('auto')} ({'fast bf16' if has_fast_bf16(flags) else 'no bf16 hardware'})"
    )

    library = load_text_corpus(DATA / "patsnap_docs.jsonl")
    pairs = [
        (a, b) for a, b in read_pairs(DATA / "in_corpus_citation_pairs.tsv") if a in library and b in library
    ]
    task = corpus_task(library, qrels_from_pairs(pairs))
    variants: dict[str, tuple[Reranker, object]] = {
        "torch fp32": (apply_precision(load(args.checkpoint), "fp32"), None),
        "torch bf16": (apply_precision(load(args.checkpoint), "bf16"), None),
        "torch int8": (apply_precision(load(args.checkpoint), "int8"), None),
    }
    tmp = tempfile.TemporaryDirectory()
    if not args.no_onnx:
        try:
            t0 = time.perf_counter()
            fp32_path, int8_path = export_onnx(variants["torch fp32"][0], Path(tmp.name))
            print(f"# ONNX export + int8 quantization: {time.perf_counter() - t0:.1f} s")
            base = variants["torch fp32"][0]
            variants["onnx fp32"] = (base, OrtEncoder(base, fp32_path, args.threads))
            variants["onnx int8"] = (base, OrtEncoder(base, int8_path, args.threads))
        except ImportError as err:
            print(f"# ONNX Runtime skipped: {err}")
    print(
        f"# checkpoint {args.checkpoint}, variant {variants['torch fp32'][0].config.variant}, "
        f"max_length {variants['torch fp32'][0].config.max_length}, batch {args.batch_size}"
    )

    query = task.queries["test"][0]
    ids = [d for d in task.bm25.search(query.text, k=args.candidates + 1).ids if d != query.qid][
        : args.candidates
    ]
    cands = [(d, candidate_text(library[d]), library[d].codes) for d in ids]
    tokens = variants["torch fp32"][0].tokenize([query.text] * len(cands), [c[1] for c in cands])
    print(
        f"# {len(cands)} candidates, mean pair length {float(tokens['attention_mask'].sum(1).float().mean()):.1f} tokens"
    )

    def call(name):
        model, enc = variants[name]
        return model.rank(query.text, cands, query_codes=query.codes, batch_size=args.batch_size, encode=enc)

    for name in variants:  # warm-up
        call(name)
    print("# warm-up done", flush=True)
    times = {k: [] for k in variants}
    cpu = {k: [] for k in variants}
    for _ in range(args.repeats):
        for name in variants:
            t0, c0 = time.perf_counter(), time.process_time()
            call(name)
            times[name].append(time.perf_counter() - t0)
            cpu[name].append(time.process_time() - c0)
    med = {k: statistics.median(v) for k, v in times.items()}
    figures: dict = {"threads": args.threads, "candidates": len(cands), "latency_s": {}, "quality": {}}
    for name in variants:
        figures["latency_s"][name] = {
            "median": med[name],
            "all": times[name],
            "cpu_median": statistics.median(cpu[name]),
        }
        print(
            f"{name:11s} {med[name]:6.3f} s per {len(cands)} candidates ({statistics.median(cpu[name]):.2f} CPU-s), "
            f"{med['torch fp32'] / med[name]:.2f}x fp32"
        )

    if args.quality_queries:
        queries = task.queries["test"][: args.quality_queries]
        qrels = {q.qid: task.qrels["test"][q.qid] for q in queries}
        runs = {}
        skipped = [n for n in variants if med[n] > args.quality_max_slowdown * med["torch fp32"]]
        for name in skipped:
            print(
                f"{name:11s} agreement not measured: {med[name] / med['torch fp32']:.1f}x slower than fp32 here"
            )
        for name, (model, enc) in variants.items():
            if name in skipped:
                continue
            scorer = model if enc is None else _WithEncoder(model, enc)
            runs[name] = rerank_run(
                task.bm25, scorer, queries, library, k_first=args.candidates, batch_size=args.batch_size
            )
        ref = evaluate_run(runs["torch fp32"], qrels, [10])
        for name in runs:
            m = evaluate_run(runs[name], qrels, [10])
            overlap = statistics.fmean(
                len(set(runs[name][q.qid].ids[:10]) & set(runs["torch fp32"][q.qid].ids[:10])) / 10
                for q in queries
            )
            change = {k: m[k] - ref[k] for k in QUALITY_METRICS}
            ok = med[name] <= 0.8 and overlap >= 0.95 and max(abs(v) for v in change.values()) <= 0.005
            figures["quality"][name] = {
                "top10_overlap": overlap,
                "metrics": {k: m[k] for k in QUALITY_METRICS},
                "change_vs_fp32": change,
                "meets_targets": ok,
            }
            print(
                f"{name:11s} top-10 overlap {overlap:.3f}; "
                + ", ".join(f"{k} {m[k]:.4f} ({change[k]:+.4f})" for k in QUALITY_METRICS)
                + f"; targets {'met' if ok else 'not met'}"
            )
        print(f"({len(queries)} cs3245 test queries, BM25 top {args.candidates} re-ranked)")
    if args.json:
        Path(args.json).write_text(json.dumps(figures, indent=1) + "\n", encoding="utf-8")
    tmp.cleanup()
    return 0


class _WithEncoder:
    def __init__(self, model: Reranker, encode) -> None:
        self.model, self.encode = model, encode

    def rank(self, query_text, candidates, query_codes=None, batch_size: int = 32):
        return self.model.rank(query_text, candidates, query_codes, batch_size, encode=self.encode)


if __name__ == "__main__":
    np.set_printoptions(precision=4)
    sys.exit(main())
