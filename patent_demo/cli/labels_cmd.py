"""``patent-demo labels report``: the search report of one labelled query (CSV + printable HTML).

Without ``--query`` it lists the labelled queries of the store (id, kind, labels, what was searched).
The report is ``patent_demo.labels.search_report``: the labelled documents with their X / Y / A
category, the decision, the examiners' notes and the figure or passage that matched.
"""

from __future__ import annotations

import argparse


def add_parser(sub) -> None:
    p = sub.add_parser("labels", help="reports from the app's label store")
    ls = p.add_subparsers(dest="labels_command", required=True, metavar="SUBCOMMAND")
    r = ls.add_parser(
        "report",
        help="the search report of one query (CSV + printable HTML)",
        description=__doc__.split("\n\n", 1)[1],
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    r.add_argument("--labels", required=True, help="the label store (labels.sqlite)")
    r.add_argument("--query", default="", help="query id (img-…, txt-…, mix-…); omit to list the queries")
    r.add_argument("--corpus", default="", help="corpus directory, for titles, dates, codes and passages")
    r.add_argument("--out", default=".", help="output folder (default: here)")
    r.add_argument("--include-not", action="store_true", help="also list documents judged not relevant")
    r.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from patent_demo.labels.search_report import main

    argv = ["--labels", args.labels, "--out", args.out]
    argv += ["--query", args.query] if args.query else []
    argv += ["--corpus", args.corpus] if args.corpus else []
    argv += ["--include-not"] if args.include_not else []
    return main(argv)
