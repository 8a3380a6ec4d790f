"""The ``patent-demo`` argument parser and dispatch (see ``patent_demo.cli``)."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence

from patent_demo.cli import corpus_cmd, evaluate_cmd, index_cmd, labels_cmd, models_cmd, qrels_cmd, search_cmd


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="patent-demo",
        description="Build, describe, search and evaluate patent corpora (drawings and texts).",
    )
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")
    corpus_cmd.add_parser(sub)
    search_cmd.add_parser(sub)
    evaluate_cmd.add_parser(sub)
    index_cmd.add_parser(sub)
    qrels_cmd.add_parser(sub)
    models_cmd.add_parser(sub)
    labels_cmd.add_parser(sub)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    args = build_parser().parse_args(argv)
    try:
        return int(args.handler(args) or 0)
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    except (
        ValueError,
        KeyError,
        FileNotFoundError,
        NotADirectoryError,
        PermissionError,
        ConnectionError,
    ) as err:
        msg = err.args[0] if isinstance(err, KeyError) and err.args else err
        print(f"patent-demo {args.command}: error: {msg}", file=sys.stderr)
        return 2
