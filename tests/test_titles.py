"""Titles of Locarno and IPC codes: the built-in table and title tables read from the shared data."""

from __future__ import annotations

import pytest

from patent_demo import titles
from tests.conftest import require_shared


def test_builtin_titles():
    assert titles.locarno_title("6-1") == "Seats"
    assert titles.locarno_title("LOC (13) Cl. 06") == "Furnishing"
    assert titles.locarno_title("14-04") == "Screen displays and icons"
    assert titles.locarno_title("06-12") == ""
    assert titles.ipc_title("A47C 7/02") == "Chairs, sofas, beds"
    assert titles.ipc_title("H") == "Electricity"
    assert titles.ipc_title("H99Z") == ""
    assert titles.ipc_title("not a code") == ""
    with pytest.raises(ValueError):
        titles.locarno_title("99")


def test_builtin_locarno_table_covers_all_main_classes():
    table = titles.load_titles(titles._DATA / "locarno_classes.tsv")
    mains = [k for k in table if len(k) == 2]
    assert mains == [f"{i:02d}" for i in range(1, 33)]
    assert all(table[k] for k in table)


def test_load_titles_from_shared_tables():
    loc_dir = require_shared("locarno_subclass_table_clipdesignsearch")
    subs = titles.load_titles(loc_dir / "locarno_subclasses.tsv")
    assert len(subs) == 215
    assert subs["06-03"] == "Tables And Similar Furniture"
    assert titles.locarno_title("0603", subs) == "Tables And Similar Furniture"
    both = titles.load_titles(loc_dir / "locarno_9.json")
    assert len(both) == 32 + 215
    assert both["06"] == "Furnishing"
    # every subclass of the built-in table exists in the published scheme
    builtin = titles.load_titles(titles._DATA / "locarno_classes.tsv")
    assert sorted(k for k in builtin if len(k) == 5 and k not in subs) == []

    ipc_dir = require_shared("ipc_scheme_2006_wzyjerry")
    ipc = titles.load_titles(ipc_dir / "ipc_subclass_titles.tsv")
    assert len(ipc) == 633
    assert titles.ipc_title("A47C 7/02", ipc) == "CHAIRS"
    assert titles.ipc_title("H04W 4/00", ipc) == ""
    tree = titles.load_titles(ipc_dir / "json" / "A.json")
    assert tree["A47C 7/00"] == "Parts, details, or accessories of chairs or stools"
    assert titles.ipc_title("A47C 7/02", tree) == tree["A47C 7/02"]
    assert "A47C 7/99" not in tree and titles.ipc_title("A47C 7/99", tree) == tree["A47C 7/00"]
    assert titles.ipc_title("A47C 999/00", tree) == "CHAIRS"
    assert tree["A"].startswith("SECTION A")


def test_load_titles_errors(tmp_path):
    bad = tmp_path / "t.tsv"
    bad.write_text("id\tname\n1\tx\n", encoding="utf-8")
    with pytest.raises(ValueError) as err:
        titles.load_titles(bad)
    assert str(err.value) == (
        f"{bad}: a title table needs a code column (code, symbol, subclass, class, main_class, section) and "
        "a title column (title, title_en, en, text, label, name); its header is ['id', 'name']"
    )
    bad.write_text("code\ttitle\n06-01\tSeats\nchairs\tx\n", encoding="utf-8")
    with pytest.raises(ValueError, match=r"t\.tsv:3: 'chairs' is not a Locarno or IPC code$"):
        titles.load_titles(bad)
    with pytest.raises(FileNotFoundError):
        titles.load_titles(tmp_path / "missing.tsv")
