import json

import pytest
from PIL import Image

from patent_demo.data.corpus import CorpusError
from patent_demo.data.loaders.manifest import load_manifest


def _png(path):
    path.parent.mkdir(parents=True, exist_ok=True)
    Image.new("L", (4, 4), 255).save(path)


CSV = """patent_id,image,locarno,title,view,text,ipc,date
D100,chairs/d100_1.png,06-01,Chair,front,A chair with a curved back,,2020-01-07
D100,chairs/d100_2.png,0601,,top,,,
D200,lamps/d200.png,26-05;2604,Lamp,perspective,A desk lamp,F21V 21/06,
"""


def test_csv_rows_group_into_patents(tmp_path):
    for rel in ("chairs/d100_1.png", "chairs/d100_2.png", "lamps/d200.png"):
        _png(tmp_path / rel)
    (tmp_path / "mine.csv").write_text(CSV)
    corpus = load_manifest(tmp_path / "mine.csv")
    assert corpus.root == tmp_path and corpus.name == "mine"
    assert [p.id for p in corpus] == ["D100", "D200"]
    chair, lamp = corpus["D100"], corpus["D200"]
    assert (chair.title, chair.text, chair.date, chair.kind) == (
        "Chair",
        "A chair with a curved back",
        "2020-01-07",
        "design",
    )
    assert chair.codes == {"locarno": ["06-01"]}
    assert [(f.path, f.view) for f in chair.figures] == [
        ("chairs/d100_1.png", "front"),
        ("chairs/d100_2.png", "top"),
    ]
    assert lamp.codes == {"locarno": ["26-05", "26-04"], "ipc": ["F21V 21/06"]}
    corpus.validate()


def test_jsonl_manifest_with_absolute_and_parent_paths(tmp_path):
    _png(tmp_path / "pics" / "a.png")
    _png(tmp_path / "elsewhere" / "b.png")
    folder = tmp_path / "pics"
    rows = [
        {
            "patent_id": "P1",
            "image": "a.png",
            "locarno": ["06-01"],
            "title": "Sofa",
            "view": "front",
            "text": "",
        },
        {
            "patent_id": "P1",
            "image": str(tmp_path / "elsewhere" / "b.png"),
            "locarno": "",
            "title": "",
            "view": "rear",
            "text": "",
            "label": "FIG. 2",
        },
    ]
    (folder / "m.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    corpus = load_manifest(folder / "m.jsonl")
    assert [(f.path, f.view, f.label) for f in corpus["P1"].figures] == [
        ("a.png", "front", ""),
        ("../elsewhere/b.png", "rear", "FIG. 2"),
    ]
    corpus.validate()


def test_missing_required_column_names_line_1(tmp_path):
    path = tmp_path / "m.csv"
    path.write_text("patent_id,image,title,view,text\nD1,a.png,Chair,front,\n")
    with pytest.raises(CorpusError) as err:
        load_manifest(path)
    assert str(err.value) == (
        f"{path}:1: missing required column(s) ['locarno']; "
        "the header has ['patent_id', 'image', 'title', 'view', 'text']"
    )


def test_missing_field_in_jsonl_names_the_line(tmp_path):
    path = tmp_path / "m.jsonl"
    good = {"patent_id": "P1", "image": "a.png", "locarno": "06-01", "title": "", "view": "", "text": ""}
    bad = {k: v for k, v in good.items() if k not in ("view", "text")}
    path.write_text(json.dumps(good) + "\n\n" + json.dumps(bad) + "\n")
    with pytest.raises(CorpusError) as err:
        load_manifest(path, check_images=False)
    assert str(err.value) == f"{path}:3: missing required column(s) ['view', 'text']"


def test_missing_image_and_bad_code_name_the_line(tmp_path):
    path = tmp_path / "m.csv"
    path.write_text("patent_id,image,locarno,title,view,text\nD1,a.png,06-01,,,\nD1,b.png,06-01,,,\n")
    _png(tmp_path / "a.png")
    with pytest.raises(CorpusError) as err:
        load_manifest(path)
    assert str(err.value) == f"{path}:3: image 'b.png' not found (looked for {tmp_path / 'b.png'})"
    path.write_text("patent_id,image,locarno,title,view,text\nD1,a.png,99-99-99,,,\n")
    with pytest.raises(CorpusError, match=r"m\.csv:2: bad locarno code '99-99-99': "):
        load_manifest(path)


def test_empty_patent_id_is_an_error(tmp_path):
    path = tmp_path / "m.csv"
    path.write_text("patent_id,image,locarno,title,view,text\n,a.png,06-01,,,\n")
    with pytest.raises(CorpusError) as err:
        load_manifest(path, check_images=False)
    assert str(err.value) == f"{path}:2: empty patent_id"
