from __future__ import annotations

import collections
import itertools
import re
import xml.etree.ElementTree as ET

import numpy as np
import pytest

from patent_demo import hierarchy as hx
from patent_demo import taxonomy as tx
from patent_demo.hierarchy import HMCLWeights, Relation
from patent_demo.taxonomy import IPC, USPC, Locarno
from patent_demo.titles import locarno_title
from tests.conftest import require_shared

# -- Locarno ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text, edition",
    [
        ("0601", None),
        ("06-01", None),
        ("06.01", None),
        ("6-1", None),
        ("06/01", None),
        (" 06 01 ", None),
        ("LOC (13) Cl. 06-01", 13),
        ("LOC(9)Cl.06-01", 9),
        ("loc (8) cl. 6.1", 8),
        ("Cl. 06-01", None),
    ],
)
def test_locarno_printed_forms(text, edition):
    code = tx.parse_locarno(text)
    assert (code.main, code.subclass, code.edition) == ("06", "06-01", edition)
    assert str(code) == "06-01"
    assert tx.normalize("locarno", text) == "06-01"


def test_locarno_main_class_only_and_edge_subclasses():
    assert tx.parse_locarno("6") == Locarno("06", "")
    assert str(tx.parse_locarno("06")) == "06"
    assert tx.parse_locarno("3100") == Locarno("31", "31-00")
    assert tx.parse_locarno("0299").subclass == "02-99"
    assert tx.parse_locarno("LOC (13) Cl. 32").main == "32"


def test_locarno_edition_is_not_identity():
    a, b = tx.parse_locarno("LOC (13) Cl. 06-01"), tx.parse_locarno("0601")
    assert a == b and hash(a) == hash(b)
    assert (a.edition, b.edition) == (13, None)
    assert tx.parse_locarno("0601", edition=9).edition == 9
    assert tx.parse_locarno("LOC (13) Cl. 06-01", edition=9).edition == 13


def test_locarno_round_trip():
    for main, sub in itertools.product(range(1, 33), (0, 1, 10, 99)):
        if not tx.locarno_subclass_exists(main, sub):
            continue
        code = Locarno(f"{main:02d}", f"{main:02d}-{sub:02d}")
        for text in (str(code), str(code).replace("-", ""), f"{main}.{sub}", f"LOC (14) Cl. {code}"):
            assert tx.parse_locarno(text) == code
        assert tx.parse_locarno(str(code.main)) == Locarno(code.main)


def test_locarno_from_xml_element_parent_and_dict():
    el = ET.fromstring(
        "<classification-locarno><edition>13</edition>"
        "<main-classification>1402</main-classification></classification-locarno>"
    )
    assert tx.locarno_from_xml(el) == Locarno("14", "14-02")
    assert tx.locarno_from_xml(el).edition == 13
    parent = ET.fromstring(
        "<bib><x/><classification-locarno><edition>9</edition>"
        "<main-classification>0601</main-classification></classification-locarno></bib>"
    )
    assert tx.locarno_from_xml(parent).subclass == "06-01"
    code = tx.locarno_from_xml({"edition": "8", "main_classification": "2102"})
    assert (code.subclass, code.edition) == ("21-02", 8)
    assert tx.parse("locarno", {"main-classification": "0603"}) == Locarno("06", "06-03")
    with pytest.raises(ValueError, match=r"^no <classification-locarno> in element <bib>$"):
        tx.locarno_from_xml(ET.fromstring("<bib/>"))


def test_locarno_error_messages():
    forms = "'0601', '06-01', '06.01', '6-1', '06' (main class only), 'LOC (13) Cl. 06-01'"
    for bad in ("x06-01", "", "0601a", "6-123", "06-01-02", "123"):
        with pytest.raises(ValueError) as err:
            tx.parse_locarno(bad)
        assert str(err.value) == f"not a Locarno code: {bad!r}; accepted forms: {forms}"
    with pytest.raises(ValueError) as err:
        tx.parse("locarno", "33-01")
    assert (
        str(err.value)
        == f"not a Locarno code: '33-01' (main class 33 is outside 01-32); accepted forms: {forms}"
    )
    with pytest.raises(ValueError) as err:
        tx.parse_locarno(601)
    assert str(err.value) == f"not a Locarno code: 601; accepted forms: {forms}"
    with pytest.raises(ValueError, match=r"^Locarno subclass '07-01' must read '06-NN'$"):
        Locarno("06", "07-01")


# -- IPC / CPC -------------------------------------------------------------------------------------

A47C = IPC("A", "A47", "A47C", "7", "02")


@pytest.mark.parametrize(
    "text, expected",
    [
        ("A47C 7/02", A47C),
        ("A47C7/02", A47C),
        ("a47c  7 / 02", A47C),
        ("A47C0007020000", A47C),
        ("A47C  702", A47C),
        ("A47C-007/02", A47C),
        ("Int. Cl. A47C 7/02 (2006.01)", A47C),
        ("B01D-053/04", IPC("B", "B01", "B01D", "53", "04")),
        ("B01D0053040000", IPC("B", "B01", "B01D", "53", "04")),
        ("H04W 4/00", IPC("H", "H04", "H04W", "4", "00")),
        ("H04W0004000000", IPC("H", "H04", "H04W", "4", "00")),
        ("H01L 21302", IPC("H", "H01", "H01L", "21", "302")),
        ("H01L0021302000", IPC("H", "H01", "H01L", "21", "302")),
        ("C07C24900", IPC("C", "C07", "C07C", "249", "00")),
        ("A43B 1314", IPC("A", "A43", "A43B", "13", "14")),
        ("A47C", IPC("A", "A47", "A47C")),
    ],
)
def test_ipc_forms(text, expected):
    code = tx.parse_ipc(text)
    assert code == expected
    assert tx.parse_ipc(str(code)) == code


def test_ipc_str_and_levels():
    assert str(A47C) == "A47C 7/02"
    assert str(tx.parse_ipc("A47C")) == "A47C"
    assert [A47C.key(level) for level in ("section", "class", "subclass", "group", "symbol")] == [
        "A",
        "A47",
        "A47C",
        "A47C 7/00",
        "A47C 7/02",
    ]
    assert tx.parse_ipc("A47C").group == ""
    assert tx.normalize("ipc", "B01D-053/04") == "B01D 53/04"
    assert tx.normalize("cpc", "H01L 21/02104") == "H01L 21/02104"
    assert tx.normalize("cpc", "Y02E 10/50") == "Y02E 10/50"
    with pytest.raises(ValueError, match=r"^unknown IPC level 'main'; expected one of section, class"):
        A47C.key("main")


def test_ipc_from_xml_fields():
    el = ET.fromstring(
        "<classification-ipcr><classification-level>A</classification-level><section>B</section>"
        "<class>32</class><subclass>B</subclass><main-group>11</main-group><subgroup>02</subgroup>"
        "<symbol-position>F</symbol-position></classification-ipcr>"
    )
    assert tx.ipc_from_xml(el) == IPC("B", "B32", "B32B", "11", "02")
    assert tx.parse(
        "ipc", {"section": "C", "class": "07", "subclass": "D", "main_group": "231", "subgroup": "10"}
    ) == IPC("C", "C07", "C07D", "231", "10")
    assert tx.ipc_from_xml({"section": "A", "class": "47", "subclass": "C"}) == IPC("A", "A47", "A47C")
    assert tx.ipc_from_xml({"main-classification": "A45F  504"}) == IPC("A", "A45", "A45F", "5", "04")


def test_ipc_error_messages():
    forms = (
        "'A47C 7/02', 'A47C7/02', 'B01D-053/04', 'A47C0007020000' (fixed width), "
        "'A47C  702' (IPC-7 fixed width), 'A47C' (subclass only)"
    )
    for bad in ("A47C 7", "A47", "A47C 7/2", "I47C 7/02", "47C 7/02", "A47C 702", "A47C 0/02"):
        with pytest.raises(ValueError) as err:
            tx.parse_ipc(bad)
        reason = " (main group 0)" if bad == "A47C 0/02" else ""
        assert str(err.value) == f"not an IPC code: {bad!r}{reason}; accepted forms: {forms}"
    with pytest.raises(ValueError) as err:
        tx.parse("ipc", "Y02E 10/50")
    assert (
        str(err.value)
        == f"not an IPC code: 'Y02E 10/50' (section Y exists only in CPC); accepted forms: {forms}"
    )
    with pytest.raises(ValueError) as err:
        tx.parse("cpc", "A47C/7")
    assert str(err.value) == f"not a CPC code: 'A47C/7'; accepted forms: {forms}"
    with pytest.raises(ValueError) as err:
        tx.ipc_from_xml({"section": "A", "class": "4", "subclass": "C"})
    assert str(err.value).startswith("not an IPC code: {'section': 'A', 'class': '4', 'subclass': 'C', ")


# -- USPC and the scheme dispatcher ------------------------------------------------------------------


@pytest.mark.parametrize(
    "text, expected",
    [
        ("D6/369", "D6/369"),
        ("D 6/369", "D6/369"),
        ("D06/369", "D6/369"),
        ("d6 / 369", "D6/369"),
        ("D 6369", "D6/369"),
        (" D8339", "D8/339"),
        ("D28 47", "D28/47"),
        ("D21765", "D21/765"),
        ("D26  2", "D26/2"),
        ("297/217.1", "297/217.1"),
        ("2611121", "261/112.1"),
        ("  2 52", "2/52"),
        (" 24 305 R", "24/30.5R"),
        ("68/181 R", "68/181R"),
        (" 68181 R", "68/181R"),
        ("261DIG  70", "261/DIG.70"),
        ("261/DIG. 70", "261/DIG.70"),
        ("257E21166", "257/E21.166"),
        ("455FOR 121", "455/FOR.121"),
        ("PLT263", "PLT/263"),
    ],
)
def test_uspc_forms(text, expected):
    assert tx.normalize("uspc", text) == expected
    assert tx.normalize("uspc", expected) == expected


def test_uspc_fields_and_errors():
    assert tx.parse_uspc("D 6/369") == USPC("D6", "369")
    assert tx.parse_uspc("D6/369").design and not tx.parse_uspc("297/217.1").design
    forms = "'D6/369', 'D 6/369', '297/217.1', '68/181 R', 'D 6369' (XML fixed width)"
    with pytest.raises(ValueError) as err:
        tx.parse_uspc("D 2916-919")
    assert str(err.value) == (
        f"not a USPC code: 'D 2916-919' (a range of subclasses names several codes); accepted forms: {forms}"
    )
    for bad in ("D6", "chair", "X12/3", ""):
        with pytest.raises(ValueError) as err:
            tx.parse("uspc", bad)
        assert str(err.value) == f"not a USPC code: {bad!r}; accepted forms: {forms}"


def test_parse_dispatch_and_unknown_scheme():
    assert tx.parse("LOCARNO", "0601") == Locarno("06", "06-01")
    assert tx.parse("cpc", "A47C 7/02") == A47C
    assert tx.iter_codes("locarno", ["0601", "06-01", "6.3"]) == ["06-01", "06-03"]
    with pytest.raises(ValueError) as err:
        tx.parse("nice", "25")
    assert str(err.value) == "unknown classification scheme 'nice'; expected one of locarno, ipc, cpc, uspc"


# -- HMCL relevance ---------------------------------------------------------------------------------


def test_hmcl_weights_validation():
    assert HMCLWeights() == HMCLWeights(1.0, 0.35, 0.2)
    HMCLWeights(1.0, 0.0, 0.0)  # plain contrastive learning
    for bad in ((1.0, 0.2, 0.35), (0.3, 0.35, 0.2), (1.0, 0.35, -0.1), (0.0, 0.0, 0.0)):
        with pytest.raises(ValueError) as err:
            HMCLWeights(*bad)
        assert str(err.value) == (
            f"HMCL weights need s_p >= s_s >= s_m >= 0 and s_p > 0, got s_p={bad[0]}, s_s={bad[1]}, s_m={bad[2]}"
        )


def test_relation_and_weight():
    assert hx.relation("p1", "06-01", "p1", "14-02") is Relation.PATENT
    assert hx.relation("p1", "0601", "p2", "LOC (13) Cl. 06-01") is Relation.SUBCLASS
    assert hx.relation("p1", "06-01", "p2", "06-03") is Relation.MAIN
    assert hx.relation("p1", "06", "p2", "06") is Relation.MAIN
    assert hx.relation("p1", "06-01", "p2", "14-01") is Relation.NONE
    assert hx.relation("p1", "", "p2", "06-01") is Relation.NONE
    assert hx.relation("p1", None, "p2", None) is Relation.NONE
    assert Relation.SUBCLASS == "subclass"
    w = HMCLWeights(0.9, 0.5, 0.1)
    assert hx.hmcl_weight("p1", "06-01", "p1", "06-01") == 1.0
    assert hx.hmcl_weight("p1", "06-01", "p2", "06-01") == 0.35
    assert hx.hmcl_weight("p1", "06-01", "p2", "06-09") == 0.2
    assert hx.hmcl_weight("p1", "06-01", "p2", "07-01") == 0.0
    assert [
        hx.hmcl_weight("a", "0601", b, c, w) for b, c in [("a", ""), ("b", "6-1"), ("b", "6"), ("b", "7")]
    ] == [
        0.9,
        0.5,
        0.1,
        0.0,
    ]


def test_weight_matrix_matches_scalar_function():
    rng = np.random.default_rng(0)
    codes = ["06-01", "0601", "06-03", "6", "14-02", "", None, "LOC (13) Cl. 14-02", "07-01"]
    pids = [f"p{int(i)}" for i in rng.integers(0, 6, size=40)]
    subs = [codes[int(i)] for i in rng.integers(0, len(codes), size=40)]
    for weights in (HMCLWeights(), HMCLWeights(1.0, 0.5, 0.5), HMCLWeights(2.0, 0.0, 0.0)):
        m = hx.hmcl_weight_matrix(pids, subs, weights)
        assert m.shape == (40, 40) and m.dtype == np.float32
        ref = np.array(
            [
                [hx.hmcl_weight(pa, sa, pb, sb, weights) for pb, sb in zip(pids, subs, strict=True)]
                for pa, sa in zip(pids, subs, strict=True)
            ],
            dtype=np.float32,
        )
        np.testing.assert_array_equal(m, ref)
        np.testing.assert_array_equal(np.diag(m), np.full(40, weights.s_p, dtype=np.float32))
    small = hx.hmcl_weight_matrix(
        ["a", "a", "b", "c", "d"], ["06-01", "06-01", "06-01", "06-02", "14-01"], dtype=np.float64
    )
    np.testing.assert_array_equal(
        small,
        [
            [1.0, 1.0, 0.35, 0.2, 0.0],
            [1.0, 1.0, 0.35, 0.2, 0.0],
            [0.35, 0.35, 1.0, 0.2, 0.0],
            [0.2, 0.2, 0.2, 1.0, 0.0],
            [0.0, 0.0, 0.0, 0.0, 1.0],
        ],
    )
    with pytest.raises(ValueError, match=r"^3 patent ids but 2 subclasses$"):
        hx.hmcl_weight_matrix(["a", "b", "c"], ["06-01", "06-02"])


# -- domain label -----------------------------------------------------------------------------------


def test_domain_label_levels():
    assert hx.domain_label(["A47C 7/02", "G06F 3/00"], ["A47C 1/00"]) == 1
    assert hx.domain_label("A47C 7/02", "A47B 13/00") == 0
    assert hx.domain_label("A47C 7/02", "A47B 13/00", level="class") == 1
    assert hx.domain_label("A47C 7/02", "A61B 5/00", level="class") == 0
    assert hx.domain_label("A47C 7/02", "A61B 5/00", level="section") == 1
    assert hx.domain_label("A47C 7/02", "A47C 7/04", level="group") == 1
    assert hx.domain_label("A47C", "A47C 7/04", level="group") == 0
    assert hx.domain_label([], ["A47C"]) == 0
    assert hx.domain_label("", "A47C") == 0
    assert hx.domain_label(["A47C0007020000"], {"A47C"}) == 1
    assert hx.domain_label("06-01", "06-03", scheme="locarno") == 0
    assert hx.domain_label("06-01", "06-03", level="main", scheme="locarno") == 1
    with pytest.raises(ValueError, match=r"^unknown IPC level 'main'"):
        hx.domain_label("A47C", "A47C", level="main")
    with pytest.raises(
        ValueError, match=r"^domain labels need scheme 'ipc', 'cpc' or 'locarno', got 'uspc'$"
    ):
        hx.domain_label("D6/369", "D6/369", scheme="uspc")


# -- every code in the real USPTO XML samples --------------------------------------------------------


def _grant_documents(path):
    """The ``us-patent-grant`` roots of a concatenated weekly file (other document kinds skipped)."""
    text = path.read_text(encoding="utf-8")
    for chunk in re.split(r"<\?xml[^>]*\?>", text):
        chunk = re.sub(r"<!DOCTYPE[^>]*>", "", chunk).strip()
        if chunk.startswith("<us-patent-grant"):
            yield ET.fromstring(chunk)


def test_every_code_in_uspto_grant_samples_parses():
    xml_dir = require_shared("uspto_grant_xml_samples/xml")
    docs = {}
    for path in sorted(xml_dir.glob("*.xml")):
        for root in _grant_documents(path):
            bib = root.find("us-bibliographic-data-grant")
            docs[bib.findtext("publication-reference/document-id/doc-number")] = root
    assert len(docs) == 421  # SOURCE.md: 421 unique documents

    locarno, ipcr_subclasses, legacy_only, uspc = {}, set(), 0, 0
    for root in docs.values():
        bib = root.find("us-bibliographic-data-grant")
        el = bib.find("classification-locarno")
        if el is not None:
            locarno[bib] = tx.locarno_from_xml(el)
        ipcr = [tx.ipc_from_xml(e) for e in bib.iter("classification-ipcr")]
        ipcr_subclasses |= {c.subclass for c in ipcr}
        legacy = bib.find("classification-ipc")
        if legacy is not None:
            parsed = [tx.parse_ipc(e.text) for e in legacy if e.tag.endswith("classification")]
            assert parsed
            legacy_only += not ipcr
        for e in bib.find("classification-national"):
            if e.tag.endswith("classification"):
                tx.parse_uspc(e.text)
                uspc += 1

    # SOURCE.md counts: 220 design patents with Locarno codes (edition 9: 208, edition 8: 12),
    # 25 main classes and 64 subclasses; 25 documents with only IPC-7; 126 IPC subclasses.
    assert len(locarno) == 220
    assert collections.Counter(c.edition for c in locarno.values()) == {9: 208, 8: 12}
    assert len({c.main for c in locarno.values()}) == 25
    assert len({c.subclass for c in locarno.values()}) == 64
    mains = collections.Counter(c.main for c in locarno.values())
    assert mains.most_common(6) == [("06", 29), ("14", 26), ("12", 25), ("08", 21), ("09", 20), ("02", 16)]
    assert legacy_only == 25
    assert len(ipcr_subclasses) == 126
    assert uspc > 421


def test_every_locarno_code_in_impact_samples_parses():
    patents = require_shared("impact_design_patent_samples/patents")
    codes = {}
    for path in sorted(patents.glob("*/*.XML")):
        root = ET.fromstring(
            re.sub(r"<!DOCTYPE[^>]*>", "", path.read_text(encoding="utf-8").split("?>", 1)[1])
        )
        bib = root.find("us-bibliographic-data-grant")
        codes[path.parent.name] = tx.locarno_from_xml(bib)
        tx.parse_uspc(bib.findtext("classification-national/main-classification"))
    assert len(codes) == 20
    assert {c.edition for c in codes.values()} == {13}
    assert codes["USD0907292-20210105"] == Locarno("28", "28-03")
    # every subclass here has a built-in title
    assert all(locarno_title(c) for c in codes.values())


def test_require_shared_fails_on_ci_and_skips_elsewhere(monkeypatch):
    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.fail.Exception, match=r"real data sample .*no_such_sample is missing"):
        require_shared("no_such_sample")
    monkeypatch.delenv("CI")
    with pytest.raises(pytest.skip.Exception, match=r"real data sample .*no_such_sample is missing"):
        require_shared("no_such_sample")
