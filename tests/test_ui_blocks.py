"""The page config gradio deep-copies for every page load holds no reference to the workbench (a bound
method there copied the whole corpus: a 1M-figure corpus never answered its first page).

Tests: patent_demo/ui/blocks.py
"""

from __future__ import annotations

import copy

from gradio.utils import safe_deepcopy

from patent_demo.labels.store import LabelStore
from patent_demo.ui.blocks import build_demo
from patent_demo.workbench import Workbench
from tests.test_pipeline import make_workbench


def test_the_page_config_copies_without_the_workbench(tmp_path, monkeypatch):
    wb, _ = make_workbench(tmp_path)
    demo = build_demo(wb, LabelStore(tmp_path / "labels.sqlite"))
    copied: list[str] = []

    def refuse(self, memo):
        copied.append(type(self).__name__)
        return self

    monkeypatch.setattr(Workbench, "__deepcopy__", refuse, raising=False)
    monkeypatch.setattr(LabelStore, "__deepcopy__", refuse, raising=False)
    safe_deepcopy(demo.config)  # what gradio's "/" route does with it
    copy.deepcopy(demo.config)
    assert copied == []
