"""``patent-demo evaluate drawings --before own|YYYY-MM-DD``: the drawing ranking restricted to the prior art
of a cut-off against the same ranking without it, both with the query's own patent left out
(``patent_demo.drawing.protocol.score_with_cutoff``), with a paired bootstrap over patents; a relevant
figure the cut-off hides counts as missed.
"""

from __future__ import annotations

from patent_demo.cli.paired import compare, summaries, table, write_json
from patent_demo.data.corpus import Corpus
from patent_demo.drawing.protocol import drawing_protocol, score_with_cutoff
from patent_demo.filters import parse_date
from patent_demo.prior_art import prior_art_date
from patent_demo.text.precision import cpu_name


def evaluate_cutoff(args, corpus: Corpus, spec, split, protocol: str, note: str, res: dict) -> int:
    """``evaluate drawings --before``: the cut-off ranking against the same model without it, both with the
    query's own patent left out (``patent_demo.drawing.protocol.score_with_cutoff``), paired bootstrap."""
    queries, gallery, _ = drawing_protocol(corpus, split, protocol)
    if args.before.strip().lower() == "own":
        cutoffs = [prior_art_date(p) for p, _ in queries]
    else:
        cutoffs = [parse_date(args.before, "cut-off date")] * len(queries)
    scored = score_with_cutoff(
        queries, gallery, res["query_embeddings"], res["gallery_embeddings"], cutoffs, args.k
    )
    keys = [
        k
        for k in (
            "subclass_map",
            "main_map",
            *(f"{lvl}_ndcg@{k}" for k in args.k for lvl in ("subclass", "main")),
        )
        if k in scored["cut"]
    ]
    groups = [p.id for p, _ in queries]
    hidden = "; ".join(
        f"{level}: {scored['hidden'][level]} of {scored['relevant'][level]} relevant figures hidden (counted as missed)"
        for level in ("subclass", "main")
    )
    result = {
        "task": "drawings",
        "corpus": str(corpus.root),
        "source": corpus.source_label or corpus.name,
        "evaluated": note
        + f"; protocol {protocol}; the query's own patent left out; prior-art cut-off {args.before}",
        "split": split or "all",
        "protocol": protocol,
        "model": f"{spec.key}, cut-off {args.before}",
        "against": f"{spec.key}, no cut-off",
        "image_size": res["image_size"],
        "num_queries": len(groups),
        "num_patents": len(set(groups)),
        "num_gallery": res["num_gallery"],
        "queries_without_date": sum(1 for c in cutoffs if not c),
        "hidden": scored["hidden"],
        "relevant": scored["relevant"],
        "summary": summaries(scored["cut"], groups, keys),
        "baseline_summary": summaries(scored["none"], groups, keys),
        "comparison": compare(scored["cut"], scored["none"], groups, keys, args.bootstrap, args.seed),
        "query_patents": groups,
        "per_query": scored["cut"],
        "baseline_per_query": scored["none"],
        "command": f"patent-demo evaluate drawings --corpus {args.corpus} --model {args.model} "
        f"--split {args.split or 'test'} --before {args.before}"
        + (f" --json {args.json}" if args.json else ""),
        "cpu": cpu_name(),
    }
    print(table(result, keys))
    print(
        hidden
        + (
            f"; {result['queries_without_date']} queries without a date, no cut-off"
            if result["queries_without_date"]
            else ""
        )
    )
    write_json(result, args.json)
    return 0
