"""Sharded, resumable embedding of a built corpus and the merge into the app's index.

Tests: patent_demo/index/scale.py, patent_demo/drawing/embed.py, patent_demo/cli/index_cmd.py
"""

from __future__ import annotations

import numpy as np
import pytest

from patent_demo.cli import main
from patent_demo.data.build import build_corpus
from patent_demo.index.dense import DenseIndex
from patent_demo.index.scale import choose_kind, index_settings, shard_ranges
from patent_demo.workbench import Workbench, WorkbenchConfig
from tests.conftest import require_shared


def test_choose_kind_and_shard_ranges():
    # the measured choice (tests/test_scale.py covers the rule): exact for a small corpus, approximate at 1M
    assert choose_kind(1000) == "flat" and index_settings(1000) == {"kind": "flat"}
    assert index_settings(1_000_000)["kind"] != "flat" and choose_kind(1_000_000, dim=12345) == "flat"
    assert shard_ranges(13, 5) == [(0, 5), (5, 10), (10, 13)]
    with pytest.raises(ValueError):
        shard_ranges(3, 0)


def test_shards_by_rank_resume_and_merge_match_the_app_index(tmp_path, monkeypatch, capsys):
    out = tmp_path / "dp2"
    build_corpus(
        "deeppatent2", require_shared("deeppatent2_techdrawfinder_samples") / "images", out, progress=False
    )
    cache = tmp_path / "cache"
    common = ["--corpus", str(out), "--model", "zero-shot", "--cache-dir", str(cache), "--checkpoints"]
    monkeypatch.setenv("WORLD_SIZE", "2")
    monkeypatch.setenv("RANK", "0")
    assert main(["index", "embed", *common[:-1], "--shard-size", "5", "--checkpoints"]) == 0
    assert "rank 0/2: embedded 2 shard(s) [0, 2]" in capsys.readouterr().out
    assert main(["index", "merge", *common]) == 2
    assert "1 of 3 shards are not embedded yet" in capsys.readouterr().err
    monkeypatch.setenv("RANK", "1")
    assert main(["index", "embed", *common[:-1], "--shard-size", "5", "--checkpoints"]) == 0
    shards = sorted((cache / "shards").rglob("shard-*.npy"))
    assert len(shards) == 3
    before = shards[0].stat().st_mtime_ns
    shards[1].unlink()  # a kill before shard 1 was written: the rerun makes only that one
    assert main(["index", "embed", *common[:-1], "--shard-size", "5", "--checkpoints"]) == 0
    assert "embedded 1 shard(s) [1]" in capsys.readouterr().out
    assert shards[0].stat().st_mtime_ns == before
    assert main(["index", "merge", *common]) == 0
    merged_out = capsys.readouterr().out
    assert "index of 13 figures (flat)" in merged_out
    assert "kind: flat (exact), recall@100 1.00 over 13 figures" in merged_out
    # corpus info says which kind each built index runs and its measured recall
    assert main(["corpus", "info", str(out), "--cache-dir", str(cache)]) == 0
    assert (
        "index     drawing (lite-trunk): flat (exact), recall@100 1.00 over 13 figures"
        in capsys.readouterr().out
    )
    # the app finds the merged index in its cache and it equals one embedded in a single pass
    wb = Workbench(WorkbenchConfig(cache_dir=cache, corpus=out, checkpoint_dirs=()), progress=False)
    merged = wb.index("zero-shot")
    fresh = Workbench(
        WorkbenchConfig(cache_dir=tmp_path / "fresh", corpus=out, checkpoint_dirs=()), progress=False
    )
    single = fresh.index("zero-shot")
    assert isinstance(merged, DenseIndex) and merged.ids == single.ids
    np.testing.assert_allclose(merged.embeddings, single.embeddings, atol=1e-5)
