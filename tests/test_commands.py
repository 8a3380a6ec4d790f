"""Tests: checkpoints/, train/

Every shipped checkpoint says how it was made, and that command still runs: each ``python -m`` line of a
``checkpoints/*/command.txt`` names a module whose ``--help`` exits 0 and accepts every flag the line
passes (after a ``--`` the flags go to the ``train`` command it runs or reads), with no absolute path."""

from __future__ import annotations

import functools
import os
import re
import shlex
import subprocess
import sys

import pytest

from tests.conftest import REPO_ROOT

COMMANDS = sorted((REPO_ROOT / "checkpoints").glob("*/command.txt"))
# the command that takes the flags after a '--': train.sweep's per model, the data options of train.dssdnet.summary
PASSED_TO = {
    ("train.sweep", "dssdnet"): "train.dssdnet",
    ("train.sweep", "hmcl"): "train.hmcl",
    ("train.dssdnet.summary", ""): "train.dssdnet",
}


def command_lines(path) -> list[list[str]]:
    lines = [ln.strip() for ln in path.read_text().splitlines()]
    return [shlex.split(ln) for ln in lines if ln and not ln.startswith("#")]


@functools.cache
def help_flags(module: str, sub: str = "") -> frozenset[str]:
    argv = [sys.executable, "-m", module, *([sub] if sub else []), "--help"]
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    run = subprocess.run(argv, cwd=REPO_ROOT, capture_output=True, text=True, timeout=180, env=env)
    assert run.returncode == 0, f"{' '.join(argv[1:])} failed:\n{run.stderr[-2000:]}"
    return frozenset(re.findall(r"(?<![\w-])--[a-z][a-z0-9-]*", run.stdout))


def flags(args: list[str]) -> set[str]:
    return {a.split("=", 1)[0] for a in args if a.startswith("--") and a != "--"}


def test_every_checkpoint_has_a_command():
    shipped = {p.parent for p in (REPO_ROOT / "checkpoints").glob("*/config.json")}
    assert shipped and shipped <= {c.parent for c in COMMANDS}


@pytest.mark.parametrize("path", COMMANDS, ids=lambda p: p.parent.name)
def test_checkpoint_command_runs(path):
    lines = command_lines(path)
    assert lines, f"{path} names no command"
    for argv in lines:
        assert argv[:2] == ["python", "-m"], f"{path}: {shlex.join(argv)} is not 'python -m MODULE ...'"
        assert not [a for a in argv if a.startswith("/") or "/work/" in a], f"{path}: an absolute path"
        module, rest = argv[2], argv[3:]
        sub = rest[0] if module == "train.sweep" else ""
        own, passed = (rest[1:] if sub else rest), []
        if "--" in own:
            cut = own.index("--")
            own, passed = own[:cut], own[cut + 1 :]
        unknown = flags(own) - help_flags(module, sub)
        assert not unknown, f"{path}: {module} {sub} does not take {sorted(unknown)}"
        if passed:
            target = PASSED_TO[module, sub]
            unknown = flags(passed) - help_flags(target)
            assert not unknown, f"{path}: {target} does not take {sorted(unknown)}"
