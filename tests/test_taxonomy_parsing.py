"""Code parsing against hostile input: a length cap before any regex, linear normalisation, and Locarno
subclasses checked against the table (and every real code of the shared samples still parsing).

Tests: patent_demo/taxonomy.py
"""

import csv
import re

import pytest

import patent_demo.taxonomy as tx
from tests.conftest import require_shared


@pytest.mark.parametrize("code", ["06-14", "06-98", "01-00", "31-01", "32-99", "13-04", "6.50"])
def test_locarno_subclass_outside_the_table_is_refused(code):
    with pytest.raises(ValueError, match=r"has no subclass \d\d\)"):
        tx.parse_locarno(code)


@pytest.mark.parametrize(
    "code,expected",
    [
        ("06-99", "06-99"),
        ("3100", "31-00"),
        ("32-00", "32-00"),
        ("03-02", "03-02"),
        ("12-16", "12-16"),
        ("LOC (13)   Cl.\u00a0 06 - 01", "06-01"),
    ],
)
def test_table_subclasses_and_spaced_forms_parse(code, expected):
    assert str(tx.parse_locarno(code)) == expected


class _Tripwire:
    """A regex stand-in that fails the test when any pattern is tried."""

    def __getattr__(self, name):
        raise AssertionError(f"regex .{name} ran on an over-long code")


@pytest.mark.parametrize("scheme", ["locarno", "ipc", "cpc", "uspc"])
@pytest.mark.parametrize("body", [" " * 200_000, "A47C" + " " * 50_000 + "-", "\u00a0\t" * 100_000 + "06-01"])
def test_an_over_long_code_is_refused_by_the_cap_before_any_regex(monkeypatch, scheme, body):
    for name in dir(tx):
        if isinstance(getattr(tx, name), re.Pattern):
            monkeypatch.setattr(tx, name, _Tripwire())
    with pytest.raises(ValueError) as err:
        tx.parse(scheme, body)
    msg = str(err.value)
    assert f"characters, a code at most {tx.MAX_CODE_CHARS}" in msg
    assert len(msg) < 400  # the message quotes the start of the code, not all of it


def test_long_whitespace_inside_the_cap_still_parses():
    assert str(tx.parse_ipc("A47C" + " " * 40 + "7/02")) == "A47C 7/02"
    with pytest.raises(ValueError, match="not an IPC code"):
        tx.parse_ipc("A47C" + " " * 90 + "-")
    assert str(tx.parse_uspc("D6 /   369")) == "D6/369"
    assert str(tx.parse_ipc("A47C  702")) == "A47C 7/02"  # fixed width keeps its spaces


def test_every_real_locarno_code_parses():
    root = require_shared("uspto_grant_xml_samples")
    with open(root / "design_patents_locarno.tsv", encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh, delimiter="\t"))
    codes = {r["locarno"] for r in rows if r["locarno"]}
    assert len(codes) > 50
    parsed = {c: str(tx.parse_locarno(c)) for c in codes}
    assert all(re.fullmatch(r"\d\d-\d\d", v) for v in parsed.values())
    table = require_shared("locarno_subclass_table_clipdesignsearch") / "locarno_subclasses.tsv"
    with open(table, encoding="utf-8") as fh:
        subclasses = [line.split("\t")[0] for line in fh.read().splitlines()[1:] if line]
    assert len(subclasses) == 215
    assert all(str(tx.parse_locarno(c)) == c for c in subclasses)
    # and the table check refuses exactly the numbers the published table does not have (vacant ones aside)
    published = set(subclasses)
    vacant = {"01-05", "03-02", "15-08", "19-05"}
    for main in range(1, 33):
        for sub in range(100):
            code = f"{main:02d}-{sub:02d}"
            assert tx.locarno_subclass_exists(main, sub) == (code in published or code in vacant), code
