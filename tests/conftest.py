"""Shared test helpers: the real data samples that live beside the repository (``../shared/data``)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parent.parent
SHARED = REPO_ROOT.parent / "shared" / "data"


def require_shared(subdir: str = "") -> Path:
    """The path of ``../shared/data/<subdir>``. When it is missing the test fails on CI (``CI=true``),
    where the data must be present, and is skipped elsewhere."""
    path = SHARED / subdir
    if not path.exists():
        message = (
            f"real data sample {path} is missing: tests read it from ../shared/data beside the "
            f"repository (see ../shared/data/README.md)"
        )
        if os.environ.get("CI") == "true":
            pytest.fail(message)
        pytest.skip(message)
    return path


@pytest.fixture
def shared_data() -> Path:
    """The root of the real data samples (``../shared/data``)."""
    return require_shared()
