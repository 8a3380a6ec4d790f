"""Relevance feedback on text, measured on the residual collection: ``python -m train.feedback.text``.

For the validation queries of ``--split-file`` (each a citing patent's title + abstract, relevant = its
in-corpus cited patents) an examiner who knows the citations labels the top ``--depth`` hits of the list
the app ships (``patent_demo/configs/hybrid.json`` ``default_list``); then, with those labels:

* **dense**: Rocchio on the MiniLM query vector (``patent_demo.search.feedback.refine``) with the dense index's
  vectors of the judged hits, a grid of β × γ, scored on the dense list;
* **rm3**: RM3 over BM25 with the judged-relevant patents' terms (``patent_demo.text.expansion``), a grid of
  expansion terms × original-query weight, scored on the BM25 list;
* **hybrid** (the shipped list, fusing both stages): each dense setting alone, each RM3 setting alone and
  the two chosen settings together.

Every list is scored before and after on the residual collection (the judged hits removed from both lists
and from the qrels; ``patent_demo.text.feedback.residual_comparison``), MAP@10 with a paired bootstrap of
after - before (10,000 resamples). Choice: the setting of best validation residual MAP@10 for each list.
Rule: text feedback is offered when the shipped list's chosen setting has a validation interval whose
lower bound lies above 0. The test queries are scored once, with the validation choices, for the record.
``--write-config`` writes the ``text`` part of ``patent_demo/configs/feedback.json``.

    python -m train.feedback.text --corpus cache/corpora/cs3245 --split-file splits/cs3245_text.json \
        --cache-dir cache --out docs/feedback_text.json --write-config
"""

from __future__ import annotations

import argparse
import json
import platform
import subprocess
import sys
import time
from pathlib import Path

from patent_demo.atomic import atomic_json, atomic_text
from patent_demo.data.corpus import Corpus
from patent_demo.search.feedback import CONFIG, Feedback
from patent_demo.text.expansion import RM3
from patent_demo.text.feedback import (
    TextFeedback,
    feedback_inputs,
    residual_comparison,
    simulate_examiner,
)
from patent_demo.text.hybrid import default_text_list
from patent_demo.text.lists import FIRST_STAGES, first_stage_runs
from patent_demo.text.search import patent_query
from train.text.first_stages import load_split

BETAS = (0.25, 0.5, 1.0, 2.0)
GAMMAS = (0.0, 0.25, 0.5)
RM3_TERMS = (10, 20, 50)
RM3_ORIGINAL = (0.3, 0.5, 0.7)
KEY = "map@10"
KS = (10, 100)
RESAMPLES = 10_000


def cpu_name() -> str:
    """``lscpu``'s model name (the platform's processor string where lscpu is missing)."""
    try:
        out = subprocess.run(["lscpu"], capture_output=True, text=True, check=True).stdout
        for line in out.splitlines():
            if line.startswith("Model name:"):
                return line.split(":", 1)[1].strip()
    except (OSError, subprocess.CalledProcessError):
        pass
    return platform.processor() or "unknown"


def config_text(config: dict) -> str:
    """The feedback config as it is kept: one line per top-level key, so that writing one part leaves the
    others' lines as they are."""
    lines = [f" {json.dumps(k)}: {json.dumps(v, ensure_ascii=False)}" for k, v in config.items()]
    return "{\n" + ",\n".join(lines) + "\n}\n"


def _name(dense: Feedback | None, rm3: RM3 | None) -> str:
    parts = []
    if dense is not None:
        parts.append(f"rocchio b={dense.beta:g} g={dense.gamma:g}")
    if rm3 is not None:
        parts.append(f"rm3 terms={rm3.terms} orig={rm3.original:g}")
    return " + ".join(parts) or "none"


class SplitRuns:
    """One split's queries, its base runs, the examiner's labels, and the refined runs of any setting."""

    def __init__(self, stage, corpus: Corpus, qrels: dict, shipped: str, depth: int) -> None:
        self.stage, self.corpus, self.qrels = stage, corpus, qrels
        self.queries = [patent_query(corpus[q]) for q in sorted(qrels)]
        self.k = max(KS) + depth
        self.vectors = stage.encoder.encode([q.text for q in self.queries])
        self.before = first_stage_runs(stage, self.queries, self.k, FIRST_STAGES, query_vectors=self.vectors)
        self.labels = simulate_examiner(self.before[shipped], qrels, depth)
        self.judged = {q: set(lab) for q, lab in self.labels.items()}

    def compare(self, dense: Feedback | None, rm3: RM3 | None, lists=FIRST_STAGES) -> dict[str, dict]:
        """``{list: residual_comparison}`` of the refined runs of (dense, rm3) against the base runs."""
        inputs = feedback_inputs(
            self.stage, self.queries, self.labels, TextFeedback(dense, rm3), self.corpus, self.vectors
        )
        after = first_stage_runs(
            self.stage,
            self.queries,
            self.k,
            lists,
            query_vectors=inputs.query_vectors if inputs.query_vectors is not None else self.vectors,
            term_weights=inputs.term_weights or None,
        )
        return {
            name: residual_comparison(
                self.before[name], after[name], self.qrels, self.judged, KS, resamples=RESAMPLES
            )
            for name in lists
        }


def _row(setting: dict, result: dict) -> dict:
    d = result["difference"][KEY]
    return {
        **setting,
        "queries": result["queries"],
        "before": result["before"][KEY],
        "after": result["after"][KEY],
        "diff": d["diff"],
        "low": d["low"],
        "high": d["high"],
    }


def _summary(result: dict) -> dict:
    """A comparison without its per-query lists, and with them (for the chosen settings)."""
    return {k: v for k, v in result.items() if k != "qids"}


def _ci4(d: dict) -> str:
    return f"{d['diff']:+.4f} [{d['low']:+.4f}, {d['high']:+.4f}]"


def _ci(row: dict) -> str:
    return f"{row['diff']:+.3f} [{row['low']:+.3f}, {row['high']:+.3f}]"


def render(out: dict) -> str:
    """The Markdown of ``docs/feedback_text.md``'s figures block, from the JSON :func:`main` wrote."""
    k = out["metric"]
    lines = [
        f"Validation ({out['queries']['val']} queries; the examiner labels the top {out['depth']} of the "
        f"**{out['shipped_list']}** list, {out['judged_relevant']['val']} of those hits relevant). "
        f"Residual {k}, after - before with its 95 % paired-bootstrap interval "
        f"({out['bootstrap_resamples']:,} resamples):",
        "",
        "| feedback | setting | list | queries | before | after | after - before [95 %] |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in out["grid"]["dense"]:
        setting = f"β {r['beta']:g}, γ {r['gamma']:g}"
        lines.append(
            f"| Rocchio (dense) | {setting} | dense | {r['queries']} | {r['before']:.3f} | {r['after']:.3f} | {_ci(r)} |"
        )
    for r in out["grid"]["bm25"]:
        setting = f"{r['terms']} terms, λ {r['original']:g}"
        lines.append(
            f"| RM3 (BM25) | {setting} | bm25 | {r['queries']} | {r['before']:.3f} | {r['after']:.3f} | {_ci(r)} |"
        )
    for r in out["grid"]["hybrid"]:
        setting = " + ".join(x for x in (r["dense"], r["rm3"]) if x)
        lines.append(
            f"| into the hybrid | {setting} | hybrid | {r['queries']} | {r['before']:.3f} | {r['after']:.3f} | {_ci(r)} |"
        )
    lines += [
        "",
        f"Of the {out['grid']['dense'][0]['queries']} validation queries scored, "
        f"{out['scored_with_a_relevant_label']['val']} had a cited patent among the judged hits (the others "
        "have *not relevant* labels only).",
        "",
        "Chosen on validation (best residual MAP@10 of each list), then the test queries once "
        f"({out['queries']['test']} queries, {out['judged_relevant']['test']} judged hits relevant; of the "
        f"{out['results']['test']['dense']['queries']} scored, {out['scored_with_a_relevant_label']['test']} "
        "with a cited patent among the judged hits):",
        "",
        f"| split | list | setting | queries | {k} before | {k} after | after - before [95 %] | "
        "queries changed | nDCG@10 after - before | R@100 after - before |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for split in ("val", "test"):
        for name, r in out["results"][split].items():
            d = r["difference"]
            lines.append(
                f"| {split} | {name} | {r['setting']} | {r['queries']} | {r['before'][k]:.3f} | "
                f"{r['after'][k]:.3f} | {_ci(d[k])} | {r['changed'][k]} | {_ci(d['ndcg@10'])} | "
                f"{_ci(d['recall@100'])} |"
            )
    lines += [
        "",
        f"Verdict: text feedback is **{'offered' if out['offered'] else 'not offered'}** ({out['reason']}).",
    ]
    lines += ["", f"CPU: {out['cpu']}; {out['seconds']:.0f} s.", "", f"    {out['command']}"]
    return "\n".join(lines)


def render_evaluations(evaluations: list[dict]) -> str:
    """A Markdown table of ``patent-demo evaluate text --feedback-depth`` results (their ``--json``): the
    examiner judges the evaluated list's own top hits, and that list is refined."""
    lines = [
        "| split | list (judged and refined) | queries | MAP@10 before | MAP@10 after | after - before [95 %] "
        "| P(≤ 0) | R@100 after - before |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for e in evaluations:
        r = e["residual"]
        d, rec = r["difference"]["map@10"], r["difference"]["recall@100"]
        split = "val" if "the val queries" in e["evaluated"] else "test"
        lines.append(
            f"| {split} | {e['model']} | {r['queries']} | {r['before']['map@10']:.3f} | "
            f"{r['after']['map@10']:.3f} | {_ci(d)} | {d['p_le_0']:.3f} | {_ci(rec)} |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    from patent_demo.workbench import Workbench, WorkbenchConfig

    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--corpus", required=True)
    p.add_argument("--split-file", required=True)
    p.add_argument("--cache-dir", default="cache")
    p.add_argument("--depth", type=int, default=10, help="hits the examiner labels (default 10)")
    p.add_argument("--out", required=True, help="the JSON written")
    p.add_argument("--write-config", action="store_true", help="write the text part of the feedback config")
    args = p.parse_args(argv)
    t0 = time.time()
    corpus = Corpus.load(args.corpus)
    _, qrels = load_split(corpus, args.split_file)
    wb = Workbench(WorkbenchConfig(cache_dir=Path(args.cache_dir), corpus=corpus.root), corpus=corpus)
    stage = wb.text_stage()
    shipped = default_text_list()
    val = SplitRuns(stage, corpus, qrels["val"], shipped, args.depth)

    dense_grid = [Feedback(b, g) for b in BETAS for g in GAMMAS]
    rm3_grid = [RM3(t, o) for t in RM3_TERMS for o in RM3_ORIGINAL]
    grid = {"dense": [], "bm25": [], "hybrid": []}
    for fb in dense_grid:
        r = val.compare(fb, None, ("dense", "hybrid"))
        grid["dense"].append(_row({"beta": fb.beta, "gamma": fb.gamma}, r["dense"]))
        grid["hybrid"].append(_row({"dense": _name(fb, None), "rm3": None}, r["hybrid"]))
        print(f"{_name(fb, None)}: dense {grid['dense'][-1]['diff']:+.4f}", file=sys.stderr)
    for rm in rm3_grid:
        r = val.compare(None, rm, ("bm25", "hybrid"))
        grid["bm25"].append(_row({"terms": rm.terms, "original": rm.original}, r["bm25"]))
        grid["hybrid"].append(_row({"dense": None, "rm3": _name(None, rm)}, r["hybrid"]))
        print(f"{_name(None, rm)}: bm25 {grid['bm25'][-1]['diff']:+.4f}", file=sys.stderr)

    def best(rows):  # the highest validation residual MAP@10 after feedback; ties: the first listed
        return max(range(len(rows)), key=lambda i: (round(rows[i]["after"], 12), -i))

    dense_best = dense_grid[best(grid["dense"])]
    rm3_best = rm3_grid[best(grid["bm25"])]
    both = val.compare(dense_best, rm3_best, ("hybrid",))["hybrid"]
    grid["hybrid"].append(_row({"dense": _name(dense_best, None), "rm3": _name(None, rm3_best)}, both))
    hybrid_options = [
        *((d, None) for d in dense_grid),
        *((None, r) for r in rm3_grid),
        (dense_best, rm3_best),
    ]
    hybrid_best = hybrid_options[best(grid["hybrid"])]

    chosen = {"dense": (dense_best, None), "bm25": (None, rm3_best), "hybrid": hybrid_best}
    results = {}
    test = SplitRuns(stage, corpus, qrels["test"], shipped, args.depth)
    for split, runs in (("val", val), ("test", test)):
        results[split] = {
            name: _summary(runs.compare(*setting, (name,))[name]) | {"setting": _name(*setting)}
            for name, setting in chosen.items()
        }
    verdict_val = results["val"][shipped]["difference"][KEY]
    offered = verdict_val["low"] > 0
    dense_val = results["val"]["dense"]["difference"][KEY]
    figure = (
        f"on the {len(val.queries)} validation queries ({results['val'][shipped]['queries']} with a cited "
        f"patent left unseen after the top {args.depth}), one round of feedback changed the {shipped} list's "
        f"residual MAP@10 by {_ci4(verdict_val)} (95 % paired bootstrap) with {_name(*hybrid_best)}, the best "
        f"of {len(hybrid_options)} settings, and changed {results['val'][shipped]['changed'][KEY]} queries' "
        f"figure; the dense list alone {_ci4(dense_val)} with {_name(dense_best, None)}"
    )
    reason = (
        f"offered: {figure}; the interval lies above 0"
        if offered
        else f"not offered: {figure}; the interval reaches 0, so the gain is not beyond doubt"
    )
    command = "python -m train.feedback.text " + " ".join(argv if argv is not None else sys.argv[1:])
    out = {
        "command": command,
        "cpu": cpu_name(),
        "seconds": round(time.time() - t0, 1),
        "shipped_list": shipped,
        "depth": args.depth,
        "metric": KEY,
        "bootstrap_resamples": RESAMPLES,
        "queries": {"val": len(val.queries), "test": len(test.queries)},
        "judged_relevant": {
            s: sum(1 for lab in r.labels.values() for v in lab.values() if v >= 1)
            for s, r in (("val", val), ("test", test))
        },
        "scored_with_a_relevant_label": {  # residual queries whose judged top held a cited patent
            s: sum(
                1
                for q, lab in r.labels.items()
                if set(r.qrels[q]) - r.judged[q] and any(v >= 1 for v in lab.values())
            )
            for s, r in (("val", val), ("test", test))
        },
        "grid": grid,
        "chosen": {name: _name(*s) for name, s in chosen.items()},
        "results": results,
        "offered": offered,
        "reason": reason,
    }
    atomic_json(Path(args.out), out, indent=1)
    print(render(out))
    if args.write_config:
        config = json.loads(CONFIG.read_text(encoding="utf-8"))
        config["text"] = {
            "offered": offered,
            "beta": dense_best.beta,
            "gamma": dense_best.gamma,
            "rm3": rm3_best.to_dict() if offered and hybrid_best[1] is not None else None,
            "reason": reason,
            "rule": "examiner simulated from the citations at the top "
            f"{args.depth} of the shipped list, scored on the residual collection; beta, gamma: the best "
            f"validation residual MAP@10 of the dense list over beta x gamma {list(BETAS)} x {list(GAMMAS)} "
            f"(what search text --feedback uses); rm3 (terms x original weight {list(RM3_TERMS)} x "
            f"{list(RM3_ORIGINAL)}) kept only where offered; offered when the shipped list's best setting has "
            "a 95 % paired bootstrap interval of validation residual MAP@10 (after - before) above 0",
            "command": command,
        }
        atomic_text(CONFIG, config_text(config))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
