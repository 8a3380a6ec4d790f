"""``train/text/biencoder.py --tiny`` through its real entry point on a 60-patent slice of cs3245: a
self-describing checkpoint that ``TextEncoder`` loads, with fp16 weights that moved from the base."""

from __future__ import annotations

import json

import numpy as np
import pytest

pytestmark = pytest.mark.slow


def test_tiny_biencoder_run_writes_a_loadable_checkpoint(small_text_corpus, tmp_path):
    from patent_demo.data.corpus import Corpus
    from patent_demo.text.dense import DENSE_KIND, TextEncoder, find_dense_checkpoint
    from train.text.biencoder import main
    from train.text.split import draw_split

    corpus = Corpus.load(small_text_corpus)
    split = draw_split(corpus, [], (0.5, 0.25, 0.25), 0)
    (tmp_path / "split.json").write_text(json.dumps(split))
    out = tmp_path / "ckpt"
    assert (
        main(
            [
                "--corpus",
                str(small_text_corpus),
                "--split-file",
                str(tmp_path / "split.json"),
                "--tiny",
                "--seed",
                "0",
                "--cache-dir",
                str(tmp_path / "cache"),
                "--out",
                str(out),
            ]
        )
        == 0
    )
    config = json.loads((out / "config.json").read_text())
    assert (
        config["kind"] == DENSE_KIND and config["max_length"] == 256 and config["pairs_by_kind"]["cite"] == 8
    )
    assert (out / "command.txt").read_text().startswith("python -m train.text.biencoder --corpus")
    assert len(json.loads((out / "metrics.json").read_text())["train_log"]) == 2
    assert find_dense_checkpoint([tmp_path]) == out
    tuned, base = TextEncoder(out), TextEncoder()
    assert tuned.name == "ckpt" and tuned.fingerprint() != base.fingerprint()
    assert next(tuned.model.parameters()).dtype.is_floating_point
    texts = ["a washing machine with bubbles", "waste water treatment"]
    a, b = tuned.encode(texts), base.encode(texts)
    np.testing.assert_allclose(np.linalg.norm(a, axis=1), 1.0, atol=1e-5)
    assert not np.allclose(a, b, atol=1e-4)  # two steps moved the weights
