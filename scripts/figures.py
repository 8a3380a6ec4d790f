"""Every figure table of the README and ``docs/`` written from the JSON the evaluations and benchmarks saved.

    python scripts/figures.py            # rewrite every block (and every generated page) from its JSON
    python scripts/figures.py --check    # exit 1, naming each stale block, when a file differs from its JSON
    python scripts/figures.py --list     # the registry: block, JSON sources, target

A block sits in a Markdown file between ``<!-- figures:NAME -->`` and ``<!-- /figures:NAME -->``; a whole
generated page (``docs/results_text.md``) is a block whose target has no markers. The registry below lists
every block once: its name, the JSON it reads, the function that renders it and the file it goes to. The
renderers are the reports' own (``patent_demo/reports/``: ``text.py``, ``drawing.py``, ``rerank.py``), so a table is written one way whether a training run or this script writes
it; the blocks no report wrote before (the README headline, the Red Book applications, the CLI check) are
rendered here. To add a block, add a ``Block`` and put its two markers where it goes.
"""

from __future__ import annotations

import argparse
import functools
import json
import re
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # run as a script from any folder
    sys.path.insert(0, str(ROOT))


@dataclass(frozen=True)
class Block:
    name: str
    sources: tuple[str, ...]  # JSON files (relative to the project root) the block is rendered from
    render: Callable[[list], str]  # the loaded sources -> Markdown
    target: str  # the file it goes to (relative to the project root)
    whole_file: bool = False  # the target is generated entire (no markers)


def load(rel: str):
    """A source: a JSON file's value, or for a benchmark log (``.log``, one JSON record a line) its path,
    which the bench's own reader takes."""
    if rel.endswith((".log", ".txt")):
        return ROOT / rel
    return json.loads((ROOT / rel).read_text(encoding="utf-8"))


def by_file(folder: str, name: str):
    """A module of ``bench/`` (scripts, not a package), imported by file."""
    import importlib.util

    spec = importlib.util.spec_from_file_location(f"{folder}_{name}", ROOT / folder / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def bench(name: str):
    """A module of ``bench/`` (scripts, not a package), imported by file."""
    return by_file("bench", name)


def inner(text: str, start: str, end: str) -> str:
    """A report's README block without the report's own start / end markers."""
    return text.strip().removeprefix(start).removesuffix(end).strip("\n")


# -- renderers: thin adapters over the reports' own functions ------------------------------------------------

DRAWING_MODELS = (
    "hmcl-uspc",
    "whitened-lite-clip",
    "cl-lite-clip",
    "hmcl-lite-clip",
)  # shipped drawing models


def text_results(src: list) -> str:
    from patent_demo.reports import text as text_report

    return inner(text_report.readme_block(src[0]), text_report.START, text_report.END)


@functools.lru_cache(maxsize=8)
def _scale_records(paths: tuple[str, ...]) -> tuple[dict, ...]:
    return tuple(bench("bench_scale").read_logs(*paths))


def scale_records(src: list) -> list[dict]:
    """The newest measurement of each setting in the scale logs ``src`` (``bench_scale.read_logs``),
    read once per set of logs."""
    return list(_scale_records(tuple(str(p) for p in src)))


def scale_tables(src: list) -> str:
    """docs/scale.md's measured index kinds (drawings and the dense text index), from the scale logs."""
    return bench("bench_scale_render").render_markdown(scale_records(src))


SCALE_LOGS = (
    "docs/bench/bench_scale.log",
    "docs/bench/bench_scale_1m_nprobe.log",
    "docs/bench/bench_scale_hnsw1m.log",
    "docs/bench/bench_scale_1280.log",
)


def scale_summary(src: list) -> str:
    """Each kind's best setting at 1M figures against the rule, from the scale logs."""
    return bench("bench_scale_render").render_summary(scale_records(src))


def scale_summary_1280(src: list) -> str:
    """The same at 1280-d (the zero-shot trunk's embeddings)."""
    return bench("bench_scale_render").render_summary(scale_records(src), dim=1280)


def scale_stats(src: list) -> str:
    """The synthetic embeddings' statistics beside the real ones."""
    return bench("bench_scale_render").render_stats(scale_records(src))


def scale_headline(src: list) -> str:
    """The README's scale table: the pick per dimension at 1M and its figure and patent search."""
    return bench("bench_scale_render").render_headline(scale_records(src))


def scale_check(src: list) -> str:
    """The merged 1M corpus as the Workbench opens it: the last record of bench_scale_corpus.py --check."""
    lines = [ln for ln in src[0].read_text(encoding="utf-8").splitlines() if ln.strip()]
    return bench("bench_scale_render").render_check(json.loads(lines[-1]))


def text_scale_table(src: list) -> str:
    """BM25 at 100k and 1M abstracts, from bench_text_scale.py's logs (the plain runs, then the numba and
    query-term pruning runs, then the sharded scorer's run)."""
    records = [json.loads(ln) for f in src for ln in f.read_text(encoding="utf-8").splitlines() if ln.strip()]
    return bench("bench_text_scale").render_markdown(records)


# Benchmarks that print a text log: each row of their table quotes the log's own lines (picked by pattern),
# so no figure is typed; the log's first lines hold the command, time and load average.
SPEED_ROWS = (
    (
        "built-in corpus, 1,000 patents, 2 processes",
        "democorpus.txt",
        (r"^democorpus:", r"^total "),
        "≤ 60 s",
    ),
    (
        "drawing encoding and query latency, `hmcl-lite-clip` at 128 px, 2 threads, quiet machine",
        "encoder.txt",
        (r"^throughput:", r"^query latency", r"^targets"),
        "≥ 25 drawings/s; p50 ≤ 150 ms",
    ),
    ("the same, 1 thread, under load", "encoder_1thread.txt", (r"^throughput:", r"^query latency"), ""),
    ("the same, 2 threads, under load", "encoder_loaded.txt", (r"^throughput:", r"^query latency"), ""),
    (
        "FAISS kinds on 10,000 random 256-d vectors, 1 thread",
        "index.txt",
        (r"^kind ", r"^(flat|ivf|ivfpq|hnsw) "),
        "",
    ),
    (
        "HMCL loss, vectorised vs the per-anchor loop, forward + backward",
        "hmcl_loss.txt",
        (r"^\s+N\s", r"^\s+(64|512)\s"),
        "equal to the loop",
    ),
    (
        "re-ranking (MiniLM, 128 tokens, 2 threads): DSSDNet fp32 / int8 vs sentence-transformers CrossEncoder",
        "rerank.txt",
        (r"candidates: DSSDNet", r"^int8 vs fp32"),
        "≤ 1.10× the CrossEncoder",
    ),
    (
        "re-ranking 100 candidates by precision (torch / ONNX Runtime)",
        "rerank_precision.txt",
        (r"^# CPU flags", r"^(torch|onnx) \w+\s+[\d.]+ s per"),
        "",
    ),
    (
        "text first stages on 100,000 abstracts, 1 thread (query encoding included)",
        "dense_hybrid.txt",
        (r"^CPU ", r"^\[(fp32|bf16) query encoder\]", r"^  (bm25|dense|hybrid) "),
        "",
    ),
    (
        "the app's whole text search (five lists, DSSDNet on the hybrid top 100)",
        "dense_hybrid.txt",
        (r"^app:",),
        "",
    ),
    (
        "BM25 over 100,000 generated abstracts, k = 1000: bm25s vs rank_bm25",
        "bm25.txt",
        (r"median query latency", r"^ratio"),
        "",
    ),
)
LABEL_ROWS = (
    (
        "16 concurrent annotators, then kill -9 of the server three times while 6 label (60-patent built-in corpus)",
        "labels_load.txt",
        (r"^concurrency:", r"^kill -9 total"),
        "nothing lost, twice or misattributed",
    ),
    (
        "8 identical text searches at once on the real DSSDNet; 16 × 50 labels; 3 × kill -9",
        "labels_load_issue18.txt",
        (r"^determinism:", r"^concurrency:", r"^kill -9 total"),
        "one list; nothing lost",
    ),
    (
        "200 kB classification codes; drawings with a huge padded canvas",
        "hostile_inputs.txt",
        (r"200 kB of spaces \+ '06-01'", r"PNG \("),
        "refused before the work",
    ),
)


def log_lines(path: Path, patterns: tuple[str, ...]) -> list[str]:
    """The lines of a benchmark log that match any of ``patterns``, in log order, stripped."""
    lines = path.read_text(encoding="utf-8").splitlines()
    return [ln.strip() for ln in lines if any(re.search(p, ln) for p in patterns)]


def log_table(rows: tuple, src: list) -> str:
    """A table whose figure cells are the logs' own lines (``rows``: what, log, patterns, target)."""
    by_name = {Path(p).name: p for p in src}
    out = ["| what | measured (the log's lines) | target | log (`docs/bench/`) |", "|---|---|---|---|"]
    for what, log, patterns, target in rows:
        found = log_lines(by_name[log], patterns)
        if not found:
            raise ValueError(f"docs/bench/{log}: no line matches {patterns}")
        cell = "<br>".join("`" + " ".join(ln.split()).replace("|", "\\|") + "`" for ln in found)
        out.append(f"| {what} | {cell} | {target} | [`{log}`](bench/{log}) |")
    return "\n".join(out)


def speed_table(src: list) -> str:
    return log_table(SPEED_ROWS, src)


def labels_table(src: list) -> str:
    return log_table(LABEL_ROWS, src)


def text_page(src: list) -> str:
    from patent_demo.reports import text as text_report

    return text_report.markdown(src[0]) + "\n" + text_report.cutoff_markdown(src[1])


def hmcl_uspc_results(src: list) -> str:
    from patent_demo.reports import drawing as hmcl_uspc_report

    results, *metrics = src
    return inner(
        hmcl_uspc_report.readme_block(
            results, hmcl_uspc_report.drawing_models(("zero-shot", *DRAWING_MODELS), metrics)
        ),
        hmcl_uspc_report.START,
        hmcl_uspc_report.END,
    )


def hmcl_uspc_page(src: list) -> str:
    from patent_demo.reports import drawing as hmcl_uspc_report

    return hmcl_uspc_report.render(src[0], src[1])


def dssdnet_ipc_page(src: list) -> str:
    from patent_demo.reports.rerank import citation_markdown

    return citation_markdown(src[0], src[0]["command"])


def headline(src: list) -> str:
    """The README's two-line summary: the default drawing model against zero-shot on USPC test, and the
    default text list against BM25 on the cs3245 test queries."""
    uspc, text = src
    v = uspc["variants"]
    sh = uspc["shipped"]
    zs = v["zero-shot"]["test"]
    t = text["lists"]["test"]
    d = text["default"]["list"]
    return "\n".join(
        [
            "| task (test split) | baseline | shipped default | metric |",
            "|---|---|---|---|",
            f"| drawings, real USPC 2007 ({uspc['setup']['splits']['test']} test drawings) | zero-shot "
            f"{zs['subclass_map']['mean']:.3f} / {zs['main_map']['mean']:.3f} | `{Path(sh['dir']).name}` ({sh['variant']}) "
            f"{sh['test']['subclass_map']:.3f} / {sh['test']['main_map']:.3f} | subclass / main-class mAP |",
            f"| text, cs3245 citations ({text['queries']['test']} test queries) | BM25 {t['bm25']['map@10']['mean']:.3f} / "
            f"{t['bm25']['recall@100']['mean']:.3f} | {d} {t[d]['map@10']['mean']:.3f} / {t[d]['recall@100']['mean']:.3f} "
            "| MAP@10 / R@100 |",
        ]
    )


def _three(m: dict) -> str:
    return " / ".join(f"{m[k]:.3f}" for k in ("subclass_map", "main_map", "hier_ndcg@10"))


def redbook_application(src: list) -> str:
    """Single pages against whole applications on the Red Book patents (``bench/bench_application.py``)."""
    lines = [
        f"Red Book pages ({src[0]['pages']} pages of {src[0]['patents']} patents), each query against the other "
        "patents (its own left out): subclass / main-class mAP / hier nDCG@10.",
        "",
        "| model | single page | whole application (mean over views) | whole application (max over views) |",
        "|---|---|---|---|",
    ]
    for d in src:
        lines.append(
            f"| `{Path(d['model']).name}` | {_three(d['single_view'])} | {_three(d['application_mean'])} | "
            f"{_three(d['application_max'])} |"
        )
    return "\n".join(lines)


def evaluate_comparison(src: list) -> str:
    """``patent-demo evaluate drawings --against`` JSON: both models and the paired bootstrap per metric."""
    d = src[0]
    lines = [
        f"`{d['model']}` against `{d['against']}` on {d['evaluated']} ({d['num_queries']} queries, "
        f"{d['image_size']} px; per patent, 95 % paired bootstrap interval):",
        "",
        f"| metric | {d['model']} | {d['against']} | difference [95 %] |",
        "|---|---|---|---|",
    ]
    for m in (
        k for k in ("subclass_map", "main_map", "subclass_ndcg@10", "main_ndcg@10") if k in d["comparison"]
    ):
        a, b, c = (
            d["summary"][m]["per_patent"],
            d["baseline_summary"][m]["per_patent"],
            d["comparison"][m]["per_patent"],
        )
        lines.append(f"| {m} | {a:.3f} | {b:.3f} | {c['diff']:+.3f} [{c['low']:+.3f}, {c['high']:+.3f}] |")
    return "\n".join(lines)


def redbook_mix(src: list) -> str:
    """The shipped variant's USPC heads beside the trunk on the Red Book validation pages, by trunk weight."""
    runs, lines = (
        src[0],
        ["| trunk weight α | Red Book patent mAP | subclass mAP | main mAP |", "|---|---|---|---|"],
    )
    rows = [("1.0 (zero-shot)", runs["zero-shot"])]
    rows += [
        (k.split("@")[1], v)
        for k, v in runs.items()
        if k.startswith("hmcl-paper-mix@") and not k.endswith("@0.0")
    ]
    rows.append(("0.0 (head alone)", runs["hmcl-paper-mix"]))
    for a, m in rows:
        lines.append(
            f"| {a} | "
            + " | ".join(
                f"{m[k]['mean']:.3f} ± {m[k]['std']:.3f}" for k in ("patent_map", "subclass_map", "main_map")
            )
            + " |"
        )
    return "\n".join(lines)


def drawings_cutoff(src: list) -> str:
    """The drawing lists with and without the own-date prior-art cut-off (``evaluate drawings --before``)."""
    c = src[0]
    lines = [
        f"{c['num_queries']} figure queries of {c['num_patents']} patents, gallery {c['num_gallery']}, model "
        f"`{c['against'].split(',')[0]}`; the query's own patent left out of both rankings; a relevant figure "
        "the cut-off hides counts as missed. Difference: cut-off minus none, 95 % paired bootstrap over "
        "patents.",
        "",
        "| metric | no cut-off | cut-off at the query's filing date | difference [95 %] |",
        "|---|---|---|---|",
    ]
    for k, s in c["summary"].items():
        d = c["comparison"][k]["per_patent"]
        lines.append(
            f"| {k} | {c['baseline_summary'][k]['per_query']:.3f} | {s['per_query']:.3f} | "
            f"{d['diff']:+.3f} [{d['low']:+.3f}, {d['high']:+.3f}] |"
        )
    h, r = c["hidden"], c["relevant"]
    lines += [
        "",
        f"The cut-off hides {h['subclass']} of {r['subclass']} subclass-relevant and {h['main']} of "
        f"{r['main']} main-class-relevant figures (other patents' figures filed on or after the query's "
        "filing date).",
        "",
        f"    {c['command']}",
        "",
        f"CPU: {c['cpu']}.",
    ]
    return "\n".join(lines)


def locarno_derived(src: list) -> str:
    """The derived Locarno labels' check on the grants, then the heads trained on USPC, derived Locarno or both
    with step and trunk weight chosen on the Red Book pages (``train.hmcl.heads --select-on redbook``)."""
    labels, runs = src[0], src[1:]
    c = labels["check_on_grants"]
    lines = [
        f"Derivation checked on the {c['grants']} design grants with a Locarno code: main class right for "
        f"{c['main_accuracy']:.1%} ({c['main_confirmed_accuracy']:.1%} where the product indication confirms it, "
        f"{c['main_confirmed_coverage']:.0%} of the grants; the product indication alone "
        f"{c['main_product_alone_accuracy']:.1%}); subclass kept at cosine ≥ {c['threshold']}: right for "
        f"{c['subclass_kept_accuracy']:.1%} of the {c['subclass_kept_coverage']:.0%} it labels (leave-one-out; "
        f"{c['subclass_accuracy_all']:.1%} if every grant were labelled). On the {labels['drawings']} USPC drawings: "
        f"main class confirmed for {labels['main_confirmed']}, subclass kept for {labels['subclass_kept']}.",
        "",
        "| trained on | variant | step chosen (per seed) | trunk weight α | Red Book patent / subclass / main mAP |",
        "|---|---|---|---|---|",
    ]
    zs = runs[0]["variants"]["zero-shot"]["val"]
    lines.append(
        "| — | zero-shot | — | 1 | "
        + " / ".join(f"{zs[k]['mean']:.3f}" for k in ("patent_map", "subclass_map", "main_map"))
        + " |"
    )
    for r in runs:
        h = r["setup"]["args"]["hierarchy"]
        for name, e in r["variants"].items():
            if name == "zero-shot":
                continue
            v = e["val"]
            lines.append(
                f"| {h} | {name} | {', '.join(str(x['best_step']) for x in e['runs'])} | "
                f"{', '.join(str(x['alpha']) for x in e['runs'])} | "
                + " / ".join(
                    f"{v[k]['mean']:.3f} ± {v[k]['std']:.3f}"
                    for k in ("patent_map", "subclass_map", "main_map")
                )
                + " |"
            )
    return "\n".join(lines)


def trunk_size(src: list) -> str:
    """The untrained trunk's input size and mirror averaging on validation (``bench/bench_trunk_size.py``)."""
    lines = [
        "| trunk input | Red Book patent mAP | Red Book subclass mAP | Red Book main mAP | USPC val subclass mAP | "
        "USPC val main mAP |",
        "|---|---|---|---|---|---|",
    ]
    for name, row in src[0]["rows"].items():
        cells = [
            f"{v['value']:.3f} ({v['vs_224']['diff']:+.3f} [{v['vs_224']['low']:+.3f}, {v['vs_224']['high']:+.3f}])"
            for where in ("redbook", "uspc-val")
            for v in row[where].values()
        ]
        label = name.replace(" +mirror", " px, mirror averaged") if "mirror" in name else f"{name} px"
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def usppm_ladder(src: list) -> str:
    """The USPPM ablation ladder (``train.dssdnet.scored`` report JSON): Pearson per variant on validation and
    test, each row minus ``dssdnet`` with its anchor-resampled interval, beside the untrained bi-encoder."""
    r = src[0]
    v, t = r["splits"]["val"], r["splits"]["test"]
    lines = [
        f"Validation {v['anchors']} anchors / {v['pairs']} pairs, test {t['anchors']} / {t['pairs']}; one seed, "
        "the budget of the runs' commands.",
        "",
        "| variant | what it tests | val Pearson | val − dssdnet [95 %] | test Pearson | test − dssdnet [95 %] |",
        "|---|---|---|---|---|---|",
        f"| bi-encoder | the untrained MiniLM's cosine (no training) | {v['biencoder']['pearson']:.3f} | | "
        f"{t['biencoder']['pearson']:.3f} | |",
    ]
    from patent_demo.reports.rerank import VARIANTS

    def ci(row: dict) -> str:
        c = row.get("minus_dssdnet")
        return f"{c['diff']:+.3f} [{c['low']:+.3f}, {c['high']:+.3f}]" if c else ""

    for name, row in v["ablation"].items():
        lines.append(
            f"| {name} | {VARIANTS[name][0]} | {row['pearson'][0]:.3f} | {ci(row)} | "
            f"{t['ablation'][name]['pearson'][0]:.3f} | {ci(t['ablation'][name])} |"
        )
    return "\n".join(lines)


def loop_drawings(src: list) -> str:
    """What examiner labels bought on USPC drawings: the headline and every point (``train.loop.curves``)."""
    from patent_demo.labels import loop

    return loop.summary_markdown(src[0]) + "\n\n" + loop.curve_markdown(src[0])


def loop_text(src: list) -> str:
    """The text curve (``train.loop.text``), whatever it shows."""
    from patent_demo.labels import loop

    return loop.text_markdown(src[0])


def feedback_text(src: list) -> str:
    """Relevance feedback on text, on the residual collection (``train.feedback.text``)."""
    from train.feedback.text import render

    return render(src[0])


def feedback_text_cli(src: list) -> str:
    """``patent-demo evaluate text --feedback-depth 10`` on cs3245, each list judged at its own top 10."""
    from train.feedback.text import render_evaluations

    return render_evaluations(src)


def loop_headline(src: list) -> str:
    """The README's lines on what examiner labels bought (``train.loop.curves``, ``train.loop.text``)."""
    from patent_demo.labels import loop

    return loop.headline_markdown(src[0], src[1])


_CKPT_METRICS = (
    "patent_demo/configs/zero_shot_metrics.json",
    *(f"checkpoints/{n}/metrics.json" for n in DRAWING_MODELS),
)

REGISTRY: tuple[Block, ...] = (
    Block("headline", ("docs/results_hmcl_uspc.json", "docs/results_text.json"), headline, "README.md"),
    Block("text-results", ("docs/results_text.json",), text_results, "docs/results.md"),
    Block("feedback-text", ("docs/feedback_text.json",), feedback_text, "docs/feedback_text.md"),
    Block(
        "feedback-text-cli",
        tuple(f"docs/feedback_text_cli/{n}.json" for n in ("dense_val", "hybrid_val", "dense_test")),
        feedback_text_cli,
        "docs/feedback_text.md",
    ),
    Block("hmcl-uspc", ("docs/results_hmcl_uspc.json", *_CKPT_METRICS), hmcl_uspc_results, "docs/results.md"),
    Block("redbook-mix", ("docs/bench/heads_redbook_mix.json",), redbook_mix, "docs/results.md"),
    Block("drawings-cutoff", ("docs/results_drawings_cutoff.json",), drawings_cutoff, "docs/results.md"),
    Block(
        "locarno-derived",
        (
            "splits/uspc2007_locarno.json",
            *(f"docs/bench/heads_redbook_select_{h}.json" for h in ("uspc", "locarno", "both")),
        ),
        locarno_derived,
        "docs/results.md",
    ),
    Block("trunk-size", ("docs/bench/trunk_size.json",), trunk_size, "docs/results.md"),
    Block("usppm-ladder", ("docs/results_usppm/ladder.json",), usppm_ladder, "docs/results.md"),
    Block("loop-drawings", ("docs/loop.json",), loop_drawings, "docs/loop.md"),
    Block("loop-headline", ("docs/loop.json", "docs/loop_text.json"), loop_headline, "README.md"),
    Block("loop-text", ("docs/loop_text.json",), loop_text, "docs/loop.md"),
    Block(
        "redbook-application",
        ("docs/bench/application_redbook_zero_shot.json", "docs/bench/application_redbook_hmcl_uspc.json"),
        redbook_application,
        "docs/results.md",
    ),
    Block(
        "uspc-default-vs-zero-shot",
        ("docs/bench/evaluate_uspc_test_default_vs_zero_shot.json",),
        evaluate_comparison,
        "docs/results.md",
    ),
    Block(
        "scale",
        (
            "docs/bench/bench_scale.log",
            "docs/bench/bench_scale_1m_nprobe.log",
            "docs/bench/bench_scale_hnsw1m.log",
            "docs/bench/bench_scale_1280.log",
            "docs/bench/bench_scale_text384.log",
        ),
        scale_tables,
        "docs/scale_tables.md",
    ),
    Block(
        "bench-speed",
        tuple(dict.fromkeys(f"docs/bench/{r[1]}" for r in SPEED_ROWS)),
        speed_table,
        "docs/benchmarks.md",
    ),
    Block(
        "bench-labels", tuple(f"docs/bench/{r[1]}" for r in LABEL_ROWS), labels_table, "docs/benchmarks.md"
    ),
    Block("scale-summary", SCALE_LOGS, scale_summary, "docs/scale.md"),
    Block("scale-summary-1280", SCALE_LOGS, scale_summary_1280, "docs/scale.md"),
    Block("scale-stats", SCALE_LOGS[:1], scale_stats, "docs/scale.md"),
    Block("scale-stats-1280", SCALE_LOGS[3:], scale_stats, "docs/scale.md"),
    Block("scale-headline", SCALE_LOGS, scale_headline, "README.md"),
    Block("scale-check", ("docs/bench/bench_scale_corpus.log",), scale_check, "docs/scale_tables.md"),
    Block(
        "scale-text",
        (
            "docs/bench/bench_text_scale.log",
            "docs/bench/bench_text_scale_1m.log",
            "docs/bench/bench_text_scale_1m_shards.log",
        ),
        text_scale_table,
        "docs/scale.md",
    ),
    Block(
        "results-text-page",
        ("docs/results_text.json", "docs/results_text_cutoff.json"),
        text_page,
        "docs/results_text.md",
        whole_file=True,
    ),
    Block(
        "results-dssdnet-ipc-page",
        ("docs/results_dssdnet_ipc.json",),
        dssdnet_ipc_page,
        "docs/results_dssdnet_ipc.md",
        whole_file=True,
    ),
    Block(
        "results-hmcl-uspc-page",
        ("docs/results_hmcl_uspc.json", "docs/bench/heads_redbook.json"),
        hmcl_uspc_page,
        "docs/results_hmcl_uspc.md",
        whole_file=True,
    ),
)


# -- writing and checking --------------------------------------------------------------------------------------


def markers(name: str) -> tuple[str, str]:
    return f"<!-- figures:{name} -->", f"<!-- /figures:{name} -->"


def apply(block: Block, text: str, body: str) -> str:
    """``text`` with the block's body replaced (the whole text for a generated page)."""
    if block.whole_file:
        return body
    start, end = markers(block.name)
    found = [m.start() for m in re.finditer(re.escape(start), text)]
    if len(found) != 1 or text.count(end) != 1 or text.index(end) < found[0]:
        raise ValueError(f"{block.target}: expected one '{start}' followed by one '{end}'")
    a, b = found[0] + len(start), text.index(end)
    return text[:a] + "\n\n" + body.strip("\n") + "\n\n" + text[b:]


def run(
    blocks: tuple[Block, ...] = REGISTRY, check: bool = False, root: Path = ROOT
) -> tuple[list[str], list[str]]:
    """Render every block; write the targets, or with ``check`` only say which blocks are stale.
    Returns (one line per stale or rewritten block, one line per block whose markers are missing)."""
    texts: dict[str, str] = {}
    changed, errors = [], []
    for block in blocks:
        path = root / block.target
        if block.target not in texts:
            texts[block.target] = path.read_text(encoding="utf-8") if path.is_file() else ""
        body = block.render([load(s) for s in block.sources])
        try:
            new = apply(block, texts[block.target], body)
        except ValueError as err:
            errors.append(f"block '{block.name}': {err}")
            continue
        if new != texts[block.target]:
            changed.append(f"{block.target}: block '{block.name}' differs from {', '.join(block.sources)}")
            texts[block.target] = new
    if not check:
        for target, text in texts.items():
            path = root / target
            if not path.is_file() or path.read_text(encoding="utf-8") != text:
                path.write_text(text, encoding="utf-8")
    return changed, errors


def orphan_markers(root: Path = ROOT, blocks: tuple[Block, ...] = REGISTRY) -> list[str]:
    """Markers in README.md or docs/*.md that no registered block fills."""
    known = {(b.target, b.name) for b in blocks}
    out = []
    for path in [p for p in [root / "README.md", *sorted((root / "docs").glob("*.md"))] if p.is_file()]:
        rel = path.relative_to(root).as_posix()
        for name in re.findall(r"<!-- figures:([\w.-]+) -->", path.read_text(encoding="utf-8")):
            if (rel, name) not in known:
                out.append(f"{rel}: block '{name}' is in no registry entry")
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--check", action="store_true", help="write nothing; exit 1 naming every stale block")
    p.add_argument("--list", action="store_true", help="print the registry and exit")
    args = p.parse_args(argv)
    if args.list:
        for b in REGISTRY:
            print(f"{b.name}: {', '.join(b.sources)} -> {b.target}{' (whole file)' if b.whole_file else ''}")
        return 0
    changed, errors = run(check=args.check)
    problems = errors + orphan_markers()
    if args.check:
        for line in problems + changed:
            print(f"stale: {line}", file=sys.stderr)
        if problems or changed:
            print("run `python scripts/figures.py` to rewrite them from the JSON", file=sys.stderr)
            return 1
        print(f"{len(REGISTRY)} figure blocks match their JSON")
        return 0
    for line in problems:
        print(f"error: {line}", file=sys.stderr)
    print(
        "\n".join(f"rewrote {c}" for c in changed)
        or f"{len(REGISTRY)} figure blocks already match their JSON"
    )
    return 1 if problems else 0


if __name__ == "__main__":
    raise SystemExit(main())
