"""``--config FILE`` of every training script: a JSON object of hyper-parameter defaults.

Precedence is defaults < config file < command line. A key the script has no flag for, or an
architecture key (given on the command line with ``--model``), is refused with a message naming the file.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Iterable, Sequence
from pathlib import Path


def apply_config(
    parser: argparse.ArgumentParser, argv: Sequence[str], architecture: Iterable[str] = ("model",)
) -> None:
    """Set ``parser``'s defaults from the ``--config FILE`` in ``argv`` (nothing when there is none)."""
    pre = argparse.ArgumentParser(add_help=False)
    pre.add_argument("--config", default=None)
    known, _ = pre.parse_known_args(list(argv))
    if not known.config:
        return
    path = Path(known.config)
    if not path.is_file():
        parser.error(f"--config {path}: no such file (a JSON object of hyper-parameter defaults)")
    try:
        defaults = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as err:
        parser.error(f"--config {path}: not JSON ({err.msg})")
    if not isinstance(defaults, dict):
        parser.error(f"--config {path}: expected a JSON object")
    arch = sorted(set(defaults) & set(architecture))
    if arch:
        parser.error(f"--config {path}: {arch} is the architecture; give it with --model, not in the config")
    unknown = sorted(set(defaults) - {a.dest for a in parser._actions} - {"config", "help"})
    if unknown:
        parser.error(f"--config {path}: unknown key(s) {unknown}")
    parser.set_defaults(**defaults)
