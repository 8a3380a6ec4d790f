"""``python -m patent_demo.metrics RUN QRELS --k 100 200 400``: score a TREC run file."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence

from patent_demo.metrics.text import DEFAULT_KS, RunFormatError, evaluate_run, read_run


def main(argv: Sequence[str] | None = None) -> int:
    from patent_demo.data.corpus import CorpusError, read_qrels

    parser = argparse.ArgumentParser(
        prog="python -m patent_demo.metrics",
        description="Score a TREC run file against TREC qrels; prints Recall, MAP, MAP over retrieved "
        "relevant documents, PRES and nDCG at each cut-off as JSON.",
    )
    parser.add_argument("run", help="TREC run file: qid Q0 docid rank score tag")
    parser.add_argument("qrels", help="TREC qrels file: qid iter docid rel")
    parser.add_argument(
        "--k", type=int, nargs="+", default=list(DEFAULT_KS), help="cut-offs (default 100 200 400)"
    )
    args = parser.parse_args(argv)
    try:
        run = read_run(args.run)
        qrels = read_qrels(args.qrels)
        result = evaluate_run(run, qrels, args.k)
    except (RunFormatError, CorpusError, ValueError, OSError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    print(json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
