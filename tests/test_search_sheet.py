"""A drawing sheet as a query: split, each figure searched, lists merged with the matching figure named."""

from __future__ import annotations

import io

import pytest
from PIL import Image

from patent_demo.drawing.sheets import FigureLabel
from patent_demo.filters import SearchFilter
from patent_demo.imageio import DrawingError
from patent_demo.search.sheet import search_sheet
from tests.support.tiny import make_workbench


@pytest.fixture(scope="module")
def bench(tmp_path_factory):
    return make_workbench(tmp_path_factory.mktemp("wb"))[0]


def sheet_of(wb, figures: list[tuple[str, int]]) -> Image.Image:
    """Corpus figures pasted side by side on one white sheet, 40 px apart."""
    ims = [wb.corpus.open_image(wb.corpus[pid].figures[f], crop=False, square=False) for pid, f in figures]
    w = sum(im.width for im in ims) + 40 * (len(ims) + 1)
    h = max(im.height for im in ims) + 80
    sheet = Image.new("L", (w, h), 255)
    x = 40
    for im in ims:
        sheet.paste(im, (x, 40))
        x += im.width + 40
    return sheet


def test_each_figure_finds_its_own_patent(bench):
    sheet = sheet_of(bench, [("D0000", 1), ("D0006", 1)])
    res = search_sheet(bench, sheet, "zero-shot", k=4)
    assert len(res.figures) == 2
    assert res.per_figure[0][0] == "D0000" and res.per_figure[1][0] == "D0006"
    by_id = {h.patent_id: h for h in res.hits}
    assert by_id["D0000"].extras["query_figure"] == "figure 1 of 2"
    assert by_id["D0006"].extras["query_figure"] == "figure 2 of 2"
    assert [h.rank for h in res.hits] == [1, 2, 3, 4]
    assert res.status.startswith("2 figure(s) on the sheet (figure 1 of 2, figure 2 of 2)")
    # the merged score of a patent is the best over the figures
    for h in res.hits:
        assert h.score == pytest.approx(max(h.extras["figure_scores"].values()), abs=1e-4)


def test_labels_name_the_figures_and_filter_applies_to_every_figure(bench):
    sheet = sheet_of(bench, [("D0000", 1), ("D0006", 1)])
    buf = io.BytesIO()
    sheet.save(buf, format="PNG")
    half = sheet.width // 2
    labels = [
        FigureLabel("FIG. 1", "1", (half // 2, sheet.height - 30, half // 2 + 20, sheet.height - 20)),
        FigureLabel(
            "FIG. 2", "2", (half + half // 2, sheet.height - 30, half + half // 2 + 20, sheet.height - 20)
        ),
    ]
    only_07 = SearchFilter.parse(classification="07")
    res = search_sheet(bench, buf.getvalue(), "zero-shot", k=10, search_filter=only_07, labels=labels)
    assert [f.label for f in res.figures] == ["FIG. 1", "FIG. 2"]
    allowed = only_07.allowed_ids(bench.corpus)
    assert len(res.hits) == len(allowed) and {h.patent_id for h in res.hits} == allowed
    assert res.hits[0].patent_id == "D0006" and res.hits[0].extras["query_figure"] == "FIG. 2"
    assert "class 07" in res.status


def test_blank_sheet_is_a_clear_error(bench):
    with pytest.raises(DrawingError, match="the sheet holds no drawing"):
        search_sheet(bench, Image.new("L", (200, 200), 255), "zero-shot")
