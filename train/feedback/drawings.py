"""``python -m train.feedback.drawings``: choose the drawing feedback weights β, γ (and which vector stands for a
judged patent) on validation only, write them to ``patent_demo/configs/feedback.json``, then score test
once with the chosen weights.

Validation sets, embedded with ``--model`` (default ``zero-shot``, the untuned encoder: the Red Book
corpus's default, and the model the examiner-loop measurements search with):

* USPC 2007 ``val`` (``splits/uspc2007.json``): the evaluation protocol of ``patent-demo evaluate drawings
  --split val`` (each figure of the split a query against the others of the split);
* the shared Red Book corpus, ``val`` patents: each of their pages a query against every other page of the
  corpus (the corpus has 20 patents; a split alone holds three).

The examiner is simulated from the classification at ``--depth`` (``patent_demo.drawing.feedback_eval``)
and each (β, γ) of the grid scored by its round-1 subclass-mAP gain on the residual collection. **Rule**:
the largest mean over the two validation sets of that gain; a gain within ``TIE`` of the best counts as a
tie, broken towards the smaller β, then the smaller γ. Then, with the chosen β, γ, the patent-level
search the CLI runs (``patent-demo search drawings --feedback``: patents scored by their best figure) is
simulated on the Red Book validation pages with each judged patent standing as its best figure for the
query or as the mean of its figures (``patent_demo.search.feedback.hit_vectors``): ``mean`` only if its
subclass gain is larger, else ``best`` (the figure the hit shows, what the app keeps with its results).

The text part of the config is left as it is. ``--json`` gets the grid, the choice and the test figures.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

from patent_demo.atomic import atomic_text
from patent_demo.cli.common import load_drawing_model, project_path, resolve_model
from patent_demo.data.corpus import Corpus
from patent_demo.drawing.embed import embed_corpus_figures
from patent_demo.drawing.feedback_eval import examiner_labels, simulate_feedback
from patent_demo.drawing.protocol import _labels, drawing_protocol
from patent_demo.metrics import drawing_metrics, paired_bootstrap
from patent_demo.search.feedback import CONFIG, HITS, Feedback, refine_from_labels

BETAS = (0.5, 0.75, 1.0, 1.5)
GAMMAS = (0.0, 0.15, 0.3, 0.5)
TIE = 0.001
_EMBEDDED: dict[tuple[str, str], np.ndarray] = {}


def feedback_set(
    corpus: Corpus, split: str, within: bool, model: str = "zero-shot", batch_size: int = 32
) -> dict:
    """The queries, gallery, embeddings and self positions of one set: ``within`` the split (the evaluate
    protocol) or the split's pages against every page of the corpus."""
    spec = resolve_model(model, "drawing", [project_path("checkpoints")], corpus)
    model, tf = load_drawing_model(spec)
    if within:
        queries, gallery, self_index = drawing_protocol(corpus, split, "all")
        emb = embed_corpus_figures(model, tf, corpus, gallery, batch_size)
        return {
            "model": spec.key,
            "queries": queries,
            "gallery": gallery,
            "q": emb,
            "g": emb,
            "self": self_index,
        }
    _, items, _ = drawing_protocol(corpus, None, "all")
    key = (str(corpus.root), spec.key)
    if key not in _EMBEDDED:  # every page of the corpus, embedded once for its val and test queries
        _EMBEDDED[key] = embed_corpus_figures(model, tf, corpus, items, batch_size)
    emb = _EMBEDDED[key]
    keep = set(corpus.splits[split])
    rows = np.array([i for i, (p, _) in enumerate(items) if p.id in keep], dtype=np.int64)
    return {
        "model": spec.key,
        "queries": [items[i] for i in rows],
        "gallery": items,
        "q": emb[rows],
        "g": emb,
        "self": rows,
    }


def figure_gain(s: dict, w: Feedback, depth: int, rounds: int = 1, resamples: int = 200) -> dict:
    return simulate_feedback(
        s["queries"], s["gallery"], s["q"], s["g"], s["self"], depth, w, rounds, resamples
    )


def patent_level(s: dict, w: Feedback, depth: int, resamples: int = 2000) -> dict:
    """The CLI's patent-level feedback on one set: patents ranked by their best figure (``DenseIndex``),
    the top ``depth`` judged by the classification, the query refined by ``refine_from_labels`` (the
    CLI's call) and ranked again; before / after on the residual collection at subclass and main level."""
    from patent_demo.index.dense import DenseIndex

    gallery = s["gallery"]
    index = DenseIndex.build(s["g"], [f.path for _, f in gallery], [p.id for p, _ in gallery])
    patents = list({p.id: p for p, _ in gallery}.values())
    col = {p.id: j for j, p in enumerate(patents)}
    rel = examiner_labels(s["queries"], [(p, None) for p in patents])
    n = len(patents)
    before = np.full((len(s["queries"]), n), -1, dtype=np.int64)
    after, judged = before.copy(), np.zeros_like(before, dtype=bool)
    for i, q in enumerate(s["q"]):
        ranked = [col[p] for p in index.search_patents(q, n).ids]
        labels = {patents[j].id: int(rel[i, j]) for j in ranked[:depth]}
        judged[i, ranked[:depth]] = True
        r = refine_from_labels(q, index, labels, w)
        before[i, : len(ranked)] = ranked
        refined = [col[p] for p in index.search_patents(r.vector, n).ids]
        after[i, : len(refined)] = refined
    ql, gl = _labels(s["queries"]), _labels([(p, None) for p in patents])
    per = {
        name: drawing_metrics(ql, gl, ranked=order, exclude=judged, ks=(10,)).per_query
        for name, order in (("before", before), ("after", after))
    }
    groups = [p.id for p, _ in s["queries"]]
    out = {}
    for k in ("subclass_map", "main_map"):
        b, a = per["before"][k], per["after"][k]
        boot = paired_bootstrap(a, b, groups, n_boot=resamples)
        out[k] = {"before": _mean(b), "after": _mean(a), **boot, "met": bool(boot["low"] > 0)}
    return out


def _mean(x) -> float | None:
    x = np.asarray(x, dtype=np.float64)
    x = x[~np.isnan(x)]
    return float(x.mean()) if x.size else None


def choose(grid: list[dict]) -> dict:
    """The grid row the rule picks (module docstring)."""
    best = max(r["mean_gain"] for r in grid)
    return min((r for r in grid if r["mean_gain"] >= best - TIE), key=lambda r: (r["beta"], r["gamma"]))


def _summary(res: dict) -> list[dict]:
    return [
        {"round": r["round"], "before": r["before"], "after": r["after"], "gain": r["gain"]}
        for r in res["rounds"]
    ]


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        prog="python -m train.feedback.drawings", description=__doc__.split("\n\n")[0]
    )
    p.add_argument(
        "--uspc", required=True, help="the USPC 2007 corpus (built with --splits splits/uspc2007.json)"
    )
    p.add_argument("--redbook", required=True, help="the shared Red Book corpus")
    p.add_argument("--depth", type=int, default=10, help="hits the simulated examiner judges per round")
    p.add_argument("--model", default="zero-shot", help="the drawing model (default zero-shot)")
    p.add_argument("--config", default=str(CONFIG), help="the feedback config written")
    p.add_argument("--json", default="docs/feedback.json", help="the grid, the choice and the test figures")
    args = p.parse_args(argv)
    uspc, redbook = Corpus.load(args.uspc), Corpus.load(args.redbook)
    val = {
        "uspc_val": feedback_set(uspc, "val", True, args.model),
        "redbook_val": feedback_set(redbook, "val", False, args.model),
    }
    grid = []
    for beta in BETAS:
        for gamma in GAMMAS:
            w = Feedback(beta, gamma)
            gains = {
                name: figure_gain(s, w, args.depth)["rounds"][0]["gain"]["subclass_map"]["diff"]
                for name, s in val.items()
            }
            grid.append(
                {
                    "beta": beta,
                    "gamma": gamma,
                    "gains": gains,
                    "mean_gain": float(np.mean(list(gains.values()))),
                }
            )
            print(
                f"beta {beta:<5g} gamma {gamma:<5g} " + " ".join(f"{k} {v:+.4f}" for k, v in gains.items()),
                file=sys.stderr,
            )
    pick = choose(grid)
    hits = {
        how: patent_level(val["redbook_val"], Feedback(pick["beta"], pick["gamma"], hits=how), args.depth)
        for how in HITS
    }
    how = "mean" if hits["mean"]["subclass_map"]["diff"] > hits["best"]["subclass_map"]["diff"] else "best"
    rule = (
        f"largest mean round-1 subclass-mAP gain on the residual collection (examiner simulated from the "
        f"classification at depth {args.depth}) over USPC 2007 val and the Red Book val pages; beta in "
        f"{list(BETAS)}, gamma in {list(GAMMAS)}; gains within {TIE} of the best tie, broken to the smaller beta, "
        "then gamma; hits: 'mean' only if its patent-level subclass gain on the Red Book val pages is larger"
    )
    command = "python -m train.feedback.drawings " + " ".join(argv if argv is not None else sys.argv[1:])
    config = json.loads(Path(args.config).read_text())
    config["drawing"] = {"beta": pick["beta"], "gamma": pick["gamma"], "hits": how}
    config.update(rule=rule, command=command)
    atomic_text(Path(args.config), json.dumps(config, indent=1) + "\n")
    chosen = Feedback.load(args.config)
    print(
        f"chosen: beta {chosen.beta:g}, gamma {chosen.gamma:g}, hits {chosen.hits}; wrote {args.config}",
        file=sys.stderr,
    )
    # test, once, with the chosen weights
    test = {
        "uspc_test": feedback_set(uspc, "test", True, args.model),
        "redbook_test": feedback_set(redbook, "test", False, args.model),
    }
    out = {
        "rule": rule,
        "command": command,
        "depth": args.depth,
        "models": {name: s["model"] for name, s in {**val, **test}.items()},
        "num_queries": {name: len(s["queries"]) for name, s in {**val, **test}.items()},
        "grid": grid,
        "chosen": {"beta": chosen.beta, "gamma": chosen.gamma, "hits": chosen.hits},
        "validation_hits": hits,
        "test": {name: _summary(figure_gain(s, chosen, args.depth, 2, 2000)) for name, s in test.items()},
        "test_patent_level": {"redbook_test": patent_level(test["redbook_test"], chosen, args.depth)},
    }
    Path(args.json).parent.mkdir(parents=True, exist_ok=True)
    atomic_text(Path(args.json), json.dumps(out, indent=1) + "\n")
    print(
        json.dumps(
            {"chosen": out["chosen"], "test": {k: [r["gain"] for r in v] for k, v in out["test"].items()}},
            indent=1,
        )
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
