import json
import os

import pytest
from PIL import Image

from patent_demo.data.corpus import Corpus, CorpusError, Figure, Patent, format_qrels, read_qrels


def _corpus(root):
    (root / "img").mkdir(parents=True, exist_ok=True)
    for name in ("a1.png", "a2.png", "b1.png"):
        Image.new("L", (6, 4), 0).save(root / "img" / name)
    patents = [
        Patent(
            id="USD0000001",
            title="Chair",
            text="FIG. 1 is a front view.",
            codes={"locarno": ["06-01"], "uspc": ["D6/369"]},
            date="2020-01-07",
            citations=["USD0000002"],
            figures=[Figure("img/a1.png", view="front", label="FIG. 1"), Figure("img/a2.png", view="top")],
            extra={"locarno_edition": 13},
        ),
        Patent(
            id="US00000002",
            kind="utility",
            title="Pump",
            text="A pump.",
            codes={"ipc": ["F04B 43/00"]},
            figures=[Figure("img/b1.png")],
        ),
    ]
    return Corpus(
        root,
        patents,
        splits={"train": ["USD0000001"], "test": ["US00000002"]},
        qrels={"US00000002": {"USD0000001": 1}},
        name="tiny",
    )


def test_save_load_round_trip(tmp_path):
    corpus = _corpus(tmp_path)
    assert corpus.save() == tmp_path
    assert sorted(p.name for p in tmp_path.iterdir()) == ["img", "manifest.jsonl", "qrels.txt", "splits.json"]
    back = Corpus.load(tmp_path)
    assert back.patents == corpus.patents
    assert back.splits == corpus.splits and back.qrels == corpus.qrels and back.name == tmp_path.name
    assert [p.id for p in back.split("train")] == ["USD0000001"]
    assert back["USD0000001"].locarno == "06-01" and back["USD0000001"].locarno_main == "06"
    assert "US00000002" in back and "X" not in back
    assert [(p.id, f.path) for p, f in back.figures()] == [
        ("USD0000001", "img/a1.png"),
        ("USD0000001", "img/a2.png"),
        ("US00000002", "img/b1.png"),
    ]
    assert (tmp_path / "qrels.txt").read_text() == "US00000002 0 USD0000001 1\n"


def test_qrels_read_format(tmp_path):
    path = tmp_path / "q.txt"
    path.write_text("q1 0 d2 1\nq1\t0\td1\t2\n\nq2 Q0 d1 0\n")
    qrels = read_qrels(path)
    assert qrels == {"q1": {"d2": 1, "d1": 2}, "q2": {"d1": 0}}
    assert format_qrels(qrels) == "q1 0 d1 2\nq1 0 d2 1\nq2 0 d1 0\n"
    path.write_text("q1 0 d2\n")
    with pytest.raises(CorpusError) as err:
        read_qrels(path)
    assert str(err.value) == f"{path}:1: a qrels line has 4 fields (qid iter docid rel), got 3"


def test_missing_image(tmp_path):
    corpus = _corpus(tmp_path)
    (tmp_path / "img" / "a2.png").unlink()
    with pytest.raises(CorpusError) as err:
        corpus.validate()
    assert str(err.value) == f"patent 'USD0000001': image 'img/a2.png' not found under {tmp_path}"
    corpus.validate(check_images=False)


def test_duplicate_id(tmp_path):
    corpus = _corpus(tmp_path)
    corpus.patents.append(Patent(id="USD0000001"))
    with pytest.raises(CorpusError) as err:
        corpus.validate()
    assert str(err.value) == "duplicate patent id 'USD0000001'"


def test_bad_code_kind_scheme_and_split(tmp_path):
    corpus = _corpus(tmp_path)
    corpus.patents[0].codes["locarno"] = ["6-1-1"]
    with pytest.raises(CorpusError, match=r"^patent 'USD0000001': bad locarno code: "):
        corpus.validate()
    corpus.patents[0].codes = {"loc": ["06-01"]}
    with pytest.raises(CorpusError) as err:
        corpus.validate()
    assert str(err.value) == (
        "patent 'USD0000001': unknown classification scheme 'loc'; use one of ('locarno', 'ipc', 'cpc', 'uspc')"
    )
    corpus.patents[0].codes = {}
    corpus.patents[0].kind = "plant"
    with pytest.raises(CorpusError) as err:
        corpus.validate()
    assert str(err.value) == "patent 'USD0000001': kind 'plant' is not one of ('design', 'utility')"
    corpus.patents[0].kind = "design"
    corpus.splits["val"] = ["nope"]
    with pytest.raises(CorpusError) as err:
        corpus.validate()
    assert str(err.value) == "split 'val' names 1 unknown patent id(s), e.g. 'nope'"
    with pytest.raises(CorpusError) as err:
        corpus.split("dev")
    assert str(err.value) == "corpus tiny has no split 'dev'; it has ['test', 'train', 'val']"


def test_unknown_field_in_manifest(tmp_path):
    _corpus(tmp_path).save()
    manifest = tmp_path / "manifest.jsonl"
    rows = [json.loads(line) for line in manifest.read_text().splitlines()]
    rows[1]["colour"] = "red"
    manifest.write_text("".join(json.dumps(r) + "\n" for r in rows))
    with pytest.raises(CorpusError) as err:
        Corpus.load(tmp_path)
    assert str(err.value) == f"{manifest}:2: patent 'US00000002': unknown field(s) ['colour']"
    del rows[1]["colour"]
    rows[0]["figures"][0]["angle"] = 30
    manifest.write_text("".join(json.dumps(r) + "\n" for r in rows))
    with pytest.raises(CorpusError) as err:
        Corpus.load(tmp_path)
    assert str(err.value) == f"{manifest}:1: patent 'USD0000001': figure with unknown field(s) ['angle']"
    manifest.write_text("[1, 2]\n")
    with pytest.raises(CorpusError) as err:
        Corpus.load(tmp_path)
    assert str(err.value) == f"{manifest}:1: a patent record is a JSON object, got list"
    manifest.write_text("{not json\n")
    with pytest.raises(CorpusError, match=r"manifest\.jsonl:1: not a patent record \("):
        Corpus.load(tmp_path)


def test_not_a_corpus(tmp_path):
    with pytest.raises(CorpusError) as err:
        Corpus.load(tmp_path)
    assert str(err.value).startswith(f"{tmp_path} is not a built corpus (manifest.jsonl not found)")
    assert "`patent-demo corpus build --source" in str(err.value) and "\n" not in str(err.value)


def test_images_are_read_lazily(tmp_path):
    corpus = _corpus(tmp_path)
    corpus.save()
    (tmp_path / "img" / "a1.png").write_bytes(b"not an image")  # loading never opens images
    back = Corpus.load(tmp_path)
    assert back.image_path(back.patents[0].figures[0]) == tmp_path / "img" / "a1.png"
    pytest.importorskip("patent_demo.imageio")
    image = back.open_image(back.patents[1].figures[0], crop=False, square=False)
    assert image.mode == "L" and image.size == (6, 4)
    with pytest.raises(ValueError):
        back.open_image(back.patents[0].figures[0])


def test_ensure_splits_is_deterministic_and_stable(tmp_path):
    from patent_demo.data.corpus import Corpus, CorpusError, Patent

    ids = [f"P{i:03d}" for i in range(40)]
    corpus = Corpus(root=tmp_path, patents=[Patent(id=i) for i in ids]).ensure_splits()
    assert {k: len(v) for k, v in corpus.splits.items()} == {"train": 28, "val": 6, "test": 6}
    assert sorted(sum(corpus.splits.values(), [])) == ids
    again = Corpus(root=tmp_path, patents=[Patent(id=i) for i in reversed(ids)]).ensure_splits()
    assert again.splits == corpus.splits
    kept = {"train": ["P000"]}
    assert Corpus(root=tmp_path, patents=[Patent(id="P000")], splits=kept).ensure_splits().splits == kept
    with pytest.raises(CorpusError) as err:
        Corpus(root=tmp_path, patents=[]).ensure_splits(fractions=(0.5, 0.5, 0.5))
    assert (
        str(err.value)
        == "split fractions must be three non-negative numbers summing to 1, got (0.5, 0.5, 0.5)"
    )


def test_old_manifest_without_examiner_fields_loads_with_defaults(tmp_path):
    row = {"id": "EP0049154B2", "kind": "utility", "title": "Gas cleaning", "date": "1995-02-15"}
    (tmp_path / "manifest.jsonl").write_text(json.dumps(row) + "\n")
    p = Corpus.load(tmp_path)["EP0049154B2"]
    assert (p.filing_date, p.priority_date, p.claims) == ("", "", "")
    assert p.country == "EP"  # from the id prefix


def test_manifest_is_written_with_normal_permissions(tmp_path):
    corpus = _corpus(tmp_path)
    corpus.save()
    umask = os.umask(0)
    os.umask(umask)
    for name in ("manifest.jsonl", "splits.json", "qrels.txt"):
        assert (tmp_path / name).stat().st_mode & 0o777 == 0o666 & ~umask, name


def test_family_splits_keep_families_whole_and_are_stable():
    from patent_demo.data.corpus import family_splits

    family_of = {f"P{i:03d}": f"F{i // 3}" for i in range(300)}  # 100 families of 3
    splits = family_splits(family_of, seed=1)
    assert sorted(sum(splits.values(), [])) == sorted(family_of)
    where = {pid: name for name, ids in splits.items() for pid in ids}
    for i in range(0, 300, 3):
        assert where[f"P{i:03d}"] == where[f"P{i + 1:03d}"] == where[f"P{i + 2:03d}"]
    assert (len(splits["train"]), len(splits["val"]), len(splits["test"])) == (210, 45, 45)
    # adding families later moves none of the existing patents
    more = {**family_of, **{f"Q{i}": f"G{i}" for i in range(50)}}
    where2 = {pid: name for name, ids in family_splits(more, seed=1).items() for pid in ids}
    assert len([p for p in family_of if where2[p] != where[p]]) <= 0.2 * len(family_of)
    assert family_splits(family_of, seed=2) != splits


def test_family_splits_of_a_small_corpus_have_every_split():
    from patent_demo.data.corpus import family_splits

    for seed in range(20):
        splits = family_splits({f"P{i}": f"P{i}" for i in range(20)}, seed=seed)
        assert [len(splits[n]) for n in ("train", "val", "test")] == [14, 3, 3], seed
