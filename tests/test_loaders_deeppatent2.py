import json
from collections import Counter

import pytest
from PIL import Image

from patent_demo.data.loaders import LoadReport
from patent_demo.data.loaders.deeppatent2 import (
    DeepPatent2Name,
    load_deeppatent2,
    load_deeppatent2_names,
    parse_deeppatent2_name,
)
from tests.conftest import require_shared


def test_parse_segmented_and_sheet_names():
    assert parse_deeppatent2_name(
        "./../vector_search/static/USD0796233-20170905-D00002_3.png"
    ) == DeepPatent2Name(
        patent_id="USD0796233", date="2017-09-05", sheet=2, figure=3, name="USD0796233-20170905-D00002_3.png"
    )
    sheet = parse_deeppatent2_name("I20181127/USD0834581-20181127/USD0834581-20181127-D00010.png")
    assert (sheet.patent_id, sheet.date, sheet.sheet, sheet.figure) == ("USD0834581", "2018-11-27", 10, None)


def test_parse_rejects_other_names():
    with pytest.raises(ValueError, match=r"^'chair\.png' is not a DeepPatent2 file name"):
        parse_deeppatent2_name("figs/chair.png")


def _png(path, size=(8, 6)):
    path.parent.mkdir(parents=True, exist_ok=True)
    Image.new("L", size, 255).save(path)


RECORDS = [
    {
        "patentID": "USD0871717-20200107",
        "pid": "USD0871717",
        "subfigure_file": "USD0871717-20200107-D00001_1.png",
        "object": "chair",
        "aspect": "perspective",
        "classification_locarno": "0601",
        "caption": "FIG. 1 is a perspective view of a chair.",
        "figid": "1",
    },
    {
        "patentID": "USD0871717-20200107",
        "subfigure_file": "USD0871717-20200107-D00002_2.png",
        "aspect": "front",
        "caption": "FIG. 2 is a front view thereof.",
    },
    {"figure_file": "USD0871720-20200107-D00001_1.png", "object": "lamp", "locarno": "26-05"},
    {"patentID": "USD0871721", "object": "no file"},
    {"subfigure_file": "figure.png"},
    {"patentID": "USD0871722", "subfigure_file": "USD0871722-20200107-D00001_1.png"},
    "not a record",
]


def test_records_group_per_patent_and_skip_bad_ones(tmp_path):
    images = tmp_path / "images"
    for name in ("USD0871717-20200107-D00001_1.png", "USD0871720-20200107-D00001_1.png"):
        _png(images / name)
    _png(images / "2020" / "USD0871717-20200107-D00002_2.png")  # found by name below root
    (tmp_path / "design2020.json").write_text(json.dumps(RECORDS))
    report = LoadReport()
    corpus = load_deeppatent2(tmp_path / "design2020.json", root=images, report=report)
    assert [p.id for p in corpus] == ["USD0871717", "USD0871720"]
    assert report.loaded == 2
    assert report.skipped == Counter(
        {"no figure file": 1, "no patent id": 1, "image not found": 1, "not a JSON object": 1}
    )
    chair = corpus["USD0871717"]
    assert (chair.title, chair.codes, chair.date, chair.kind) == (
        "chair",
        {"locarno": ["06-01"]},
        "2020-01-07",
        "design",
    )
    assert [(f.path, f.view, f.label) for f in chair.figures] == [
        ("USD0871717-20200107-D00001_1.png", "perspective", "FIG. 1"),
        ("2020/USD0871717-20200107-D00002_2.png", "front", "FIG. 2"),
    ]
    assert chair.figures[1].description == "FIG. 2 is a front view thereof."
    lamp = corpus["USD0871720"]
    assert (lamp.title, lamp.locarno, lamp.figures[0].label) == ("lamp", "26-05", "FIG. 1")
    corpus.validate()
    assert corpus.image_path(chair.figures[1]) == images / "2020" / "USD0871717-20200107-D00002_2.png"


def test_records_jsonl_without_image_check(tmp_path):
    path = tmp_path / "records.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in RECORDS[:3]) + "\n")
    corpus = load_deeppatent2(path, root=tmp_path, check_images=False)
    assert [(p.id, len(p.figures)) for p in corpus] == [("USD0871717", 2), ("USD0871720", 1)]


def test_records_bad_json_names_the_file(tmp_path):
    path = tmp_path / "broken.json"
    path.write_text("[{")
    with pytest.raises(ValueError, match=r"broken\.json: not JSON"):
        load_deeppatent2(path, root=tmp_path)


def test_techdrawfinder_file_names():
    data = require_shared("deeppatent2_techdrawfinder_samples")
    report = LoadReport()
    corpus = load_deeppatent2_names(data / "imageonly.csv", root=data, report=report)
    # SOURCE.md: 67,515 segmented-figure names covering 9,133 design patents, grant years 2007-2020
    assert sum(len(p.figures) for p in corpus) == 67515
    assert len(corpus) == 9133 and report.loaded == 9133 and report.n_skipped == 0
    assert sorted({p.date[:4] for p in corpus}) == [str(y) for y in range(2007, 2021)]
    assert all(f.label.startswith("FIG. ") for p in corpus for f in p.figures)
    # 4 design patents of the grant-XML sample appear in the list
    assert {"USD0651486", "USD0656453", "USD0656459", "USD0656465"} <= {p.id for p in corpus}


def test_techdrawfinder_images_folder():
    data = require_shared("deeppatent2_techdrawfinder_samples")
    names = sorted(f.name for f in (data / "images").glob("*.png"))
    corpus = load_deeppatent2_names(names, root=data / "images")
    # SOURCE.md: 13 segmented figures from 12 design patents
    assert sum(len(p.figures) for p in corpus) == 13 and len(corpus) == 12
    assert [(f.path, f.label) for f in corpus["USD0739807"].figures] == [
        ("USD0739807-20150929-D00004_5.png", "FIG. 5"),
        ("USD0739807-20150929-D00005_6.png", "FIG. 6"),
    ]
    corpus.validate()


def test_segmentor_sheet_names():
    data = require_shared("deeppatent2_segmentor_samples")
    names = sorted(f.name for f in (data / "images").glob("*.png"))
    corpus = load_deeppatent2_names(names, root=data / "images")
    # SOURCE.md: 15 unsegmented sheets from 11 design patents, all granted 2020-01-07
    assert sum(len(p.figures) for p in corpus) == 15 and len(corpus) == 11
    assert {p.date for p in corpus} == {"2020-01-07"}
    assert [f.label for f in corpus["USD0871727"].figures] == ["sheet 3", "sheet 4"]


def test_split_file_lines_keep_their_folders(tmp_path):
    split = tmp_path / "test_query_patent.txt"
    split.write_text(
        "I20181127/USD0834581-20181127/USD0834581-20181127-D00001.png 1\n"
        "I20181127/USD0834581-20181127/USD0834581-20181127-D00010.png 1\n"
        "\nnot-a-drawing.png 2\n"
    )
    report = LoadReport()
    corpus = load_deeppatent2_names(split, root=tmp_path, report=report)
    assert [f.path for f in corpus["USD0834581"].figures] == [
        "I20181127/USD0834581-20181127/USD0834581-20181127-D00001.png",
        "I20181127/USD0834581-20181127/USD0834581-20181127-D00010.png",
    ]
    assert report.skipped == Counter({"bad file name": 1})
