"""The model list: a scan reads the checkpoints' files once and again only when they change (a new
checkpoint appears at the next call, an edited one is read again), and every call gets its own specs."""

from __future__ import annotations

import json
import shutil

from patent_demo import registry
from tests.conftest import REPO_ROOT


def test_the_scan_reads_each_checkpoint_once_until_its_files_change(tmp_path, monkeypatch):
    root = tmp_path / "checkpoints"
    root.mkdir()
    shutil.copytree(REPO_ROOT / "checkpoints" / "hmcl-uspc", root / "hmcl-uspc")
    reads: list[str] = []
    real = registry.read_checkpoint_spec

    def counted(path):
        reads.append(path.name)
        return real(path)

    monkeypatch.setattr(registry, "read_checkpoint_spec", counted)
    first = registry.scan_models([root])
    n = len(reads)
    assert n >= 1 and "hmcl-uspc" in [m.key for m in first]
    for _ in range(5):
        again = registry.scan_models([root])
    assert len(reads) == n  # nothing read again
    assert [m.key for m in again] == [m.key for m in first] and again[0] is not first[0]
    again[0].label = "changed by a caller"
    assert registry.scan_models([root])[0].label == first[0].label  # a caller's change stays its own
    shutil.copytree(root / "hmcl-uspc", root / "hmcl-copy")  # a new checkpoint: read at the next call
    assert "hmcl-copy" in [m.key for m in registry.scan_models([root])] and len(reads) > n
    n = len(reads)
    metrics = root / "hmcl-copy" / "metrics.json"  # an edited checkpoint: read again
    metrics.write_text(json.dumps({}))
    assert len(reads) == n and "hmcl-copy" in [m.key for m in registry.scan_models([root])]
    assert len(reads) > n
