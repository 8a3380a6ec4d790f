"""The drawing model a corpus gets when none is named (``patent_demo.drawing.select``), over the shipped
checkpoints: the USPC-trained default on a USPC corpus, the untouched trunk on a Locarno one."""

from __future__ import annotations

from pathlib import Path

from patent_demo.data.corpus import Figure, Patent
from patent_demo.drawing.select import checkpoint_class_scheme, corpus_class_scheme, drawing_model_for_corpus
from patent_demo.registry import ZERO_SHOT, scan_models

CHECKPOINTS = Path(__file__).resolve().parents[1] / "checkpoints"
LOCARNO = [Patent(f"USD{i}", codes={"locarno": ["06-01"]}) for i in range(3)]
USPC = [Patent(f"USD{i}", codes={"uspc": ["D6/369"]}) for i in range(3)]


def test_corpus_and_checkpoint_schemes():
    assert corpus_class_scheme(LOCARNO) == "locarno" and corpus_class_scheme(USPC) == "uspc"
    assert corpus_class_scheme([Patent("US1", codes={"ipc": ["A47C 7/02"]})]) is None
    assert checkpoint_class_scheme(CHECKPOINTS / "hmcl-uspc") == "uspc"
    assert checkpoint_class_scheme(None) is None


def test_the_uspc_default_serves_uspc_corpora_and_the_trunk_serves_locarno_ones():
    specs = [m for m in scan_models([CHECKPOINTS]) if m.task == "drawing"]
    assert specs[0].key == "hmcl-uspc"  # the declared default leads the list
    assert drawing_model_for_corpus(specs, USPC).key == "hmcl-uspc"
    assert drawing_model_for_corpus(specs, LOCARNO).key == ZERO_SHOT
    ipc = [Patent("US1", codes={"ipc": ["A47C 7/02"]})]
    assert drawing_model_for_corpus(specs, ipc).key == "hmcl-uspc"  # scheme unknown: the declared default
    # a corpus of drawings and texts: the scheme of the patents with figures decides, not that of the texts
    drawn = [Patent(f"USD{i}", codes={"uspc": ["D6/369"]}, figures=[Figure(f"{i}.png")]) for i in range(2)]
    designs = [Patent(f"USD9{i}", codes={"locarno": ["06-01"]}) for i in range(5)]  # text only
    assert corpus_class_scheme(drawn + designs) == "locarno"
    assert drawing_model_for_corpus(specs, drawn + designs).key == "hmcl-uspc"
    assert (
        drawing_model_for_corpus(
            specs, [Patent("USD7", codes={"locarno": ["06-01"]}, figures=[Figure("7.png")]), *USPC]
        ).key
        == ZERO_SHOT
    )
