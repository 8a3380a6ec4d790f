"""Tests: tests/conftest.py

Under ``CI=true`` a skipped test fails unless its skip reason matches an entry of the allow-list; elsewhere
a skip stays a skip. Each case runs pytest in a subprocess on a tiny test file that uses the project's hook.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

from tests.conftest import REPO_ROOT, SKIP_ALLOWLIST, read_skip_allowlist

CASES = """
import pytest

def test_allowed():
    pytest.skip("needs a CUDA GPU (torch.cuda.is_available() is False)")

@pytest.mark.skipif(True, reason="the sample corpus is not here")
def test_not_allowed_mark():
    pass

def test_not_allowed_import():
    pytest.importorskip("no_such_module_for_the_skip_test")

@pytest.fixture
def missing():
    pytest.skip("a fixture that skips: chromium missing")

def test_not_allowed_fixture(missing):
    pass

@pytest.mark.xfail(reason="expected to fail")
def test_xfail_is_not_a_skip():
    assert False

def test_passes():
    pass
"""


def run_cases(tmp_path, ci: bool) -> subprocess.CompletedProcess:
    (tmp_path / "conftest.py").write_text(
        "from tests.conftest import pytest_runtest_makereport  # noqa: F401\n"
    )
    (tmp_path / "test_cases.py").write_text(textwrap.dedent(CASES))
    env = {k: v for k, v in os.environ.items() if k != "CI"}
    env["PYTHONPATH"] = str(REPO_ROOT)
    if ci:
        env["CI"] = "true"
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-rA", "-p", "no:cacheprovider", str(tmp_path)],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_under_ci_only_allowed_skips_stay_skips(tmp_path):
    r = run_cases(tmp_path, ci=True)
    out = r.stdout + r.stderr
    assert r.returncode == 1, out
    assert "1 failed, 1 passed, 1 skipped, 1 xfailed, 2 errors" in out, out
    for name in ("test_not_allowed_mark", "test_not_allowed_import", "test_not_allowed_fixture"):
        assert name in out
    assert "skipped under CI=true, and the reason is on no line of skip_allowlist.txt" in out
    assert "the sample corpus is not here" in out  # the reason is named in the failure
    assert "SKIPPED [1] test_cases.py" in out and "needs a CUDA GPU" in out


def test_outside_ci_skips_are_skips(tmp_path):
    r = run_cases(tmp_path, ci=False)
    out = r.stdout + r.stderr
    assert r.returncode == 0, out
    assert "1 passed, 4 skipped, 1 xfailed" in out, out


def test_every_allowlist_entry_says_why(tmp_path):
    entries = read_skip_allowlist()
    assert entries and all(len(why.split()) >= 4 for _, why in entries)
    bad = tmp_path / "allow.txt"
    bad.write_text("a pattern without a reason\n")
    with pytest.raises(ValueError, match="expected 'PATTERN :: WHY'"):
        read_skip_allowlist(bad)
    assert SKIP_ALLOWLIST.is_file()
