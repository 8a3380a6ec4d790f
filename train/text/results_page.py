"""Write ``docs/results_text.json`` and ``.md`` (``patent_demo.reports.text``) from the JSON
``train.text.first_stages`` wrote (untrained, and one per fine-tuned bi-encoder seed).

    python -m train.text.results_page --untrained runs/text/untrained/eval.json \
        --finetuned runs/text/biencoder/seed0/eval.json runs/text/biencoder/seed1/eval.json \
                    runs/text/biencoder/seed2/eval.json --json docs/results_text.json --md docs/results_text.md
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from patent_demo.reports.text import markdown, report, rerank_summary


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--untrained", required=True, help="train.text.first_stages JSON of the packaged MiniLM")
    p.add_argument(
        "--finetuned", nargs="*", default=[], help="train.text.first_stages JSON of each fine-tuned seed"
    )
    p.add_argument(
        "--rerank", nargs="*", default=[], help="train.text.rerank_eval JSON (a DSSDNet on the hybrid pool)"
    )
    p.add_argument("--bootstrap", type=int, default=10000, help="bootstrap resamples")
    p.add_argument("--json", required=True, help="the JSON to write")
    p.add_argument("--md", required=True, help="the Markdown to write")
    p.add_argument("--readme", default=None, help=argparse.SUPPRESS)  # gone: scripts/figures.py writes blocks
    args = p.parse_args(argv)
    if args.readme:
        raise SystemExit(
            "--readme is gone: python scripts/figures.py rewrites every README and docs/ block from JSON"
        )
    load = lambda f: json.loads(Path(f).read_text(encoding="utf-8"))  # noqa: E731
    rerank = [rerank_summary(load(f), args.bootstrap) for f in args.rerank]
    r = report(load(args.untrained), [load(f) for f in args.finetuned], args.bootstrap, rerank)
    r["rerank"] = rerank
    r["split_stats"] = load(r["split_file"]).get("stats", {}) if Path(r["split_file"]).is_file() else {}
    r["command"] = "python -m train.text.results_page " + " ".join(argv if argv is not None else sys.argv[1:])
    Path(args.json).write_text(json.dumps(r, indent=1) + "\n", encoding="utf-8")
    Path(args.md).write_text(markdown(r), encoding="utf-8")
    print(markdown(r))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
