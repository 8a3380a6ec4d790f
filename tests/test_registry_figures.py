"""The model lists show the figures each checkpoint was measured at: real validation beside the
generated-corpus test split for drawing models, the re-ranked list beside BM25 for text models.

Tests: patent_demo/registry.py
"""

from __future__ import annotations

import json

from patent_demo.registry import figures_note, measured_figures, read_checkpoint_spec


def _checkpoint(root, config: dict, metrics: dict):
    root.mkdir()
    (root / "config.json").write_text(json.dumps(config))
    (root / "metrics.json").write_text(json.dumps(metrics))
    (root / "model.safetensors").write_bytes(b"")
    return read_checkpoint_spec(root)


def test_drawing_checkpoint_shows_real_and_generated(tmp_path):
    metrics = {
        "real_validation": {
            "corpus": "redbook",
            "image_size": 224,
            "metrics": {"patent_map": 0.6311, "subclass_map": 0.56512, "main_map": 0.457},
        },
        "after": {
            "test": {
                "metrics": {"patent_map": 0.5, "subclass_map": 0.78, "main_map": 0.74, "num_queries": 61}
            }
        },
    }
    spec = _checkpoint(tmp_path / "hmcl-x", {"kind": "hmcl", "train": {"steps": 10}}, metrics)
    assert measured_figures("drawing", metrics) == {
        "real": {"patent_map": 0.6311, "subclass_map": 0.5651, "main_map": 0.457},
        "generated": {"patent_map": 0.5, "subclass_map": 0.78, "main_map": 0.74},
    }
    assert spec.label == "HMCL: hmcl-x (real subclass mAP 0.565 · generated subclass mAP 0.780)"


def test_text_checkpoint_shows_bm25_beside_it(tmp_path):
    metrics = {
        "after": {"ndcg@10": 0.3206, "recall@10": 0.41},
        "bm25": {"ndcg@10": 0.3699},
        "fusion": {"test": {"fused": {"ndcg@10": 0.3697}}},
    }
    spec = _checkpoint(tmp_path / "ipc", {"kind": "dssdnet"}, metrics)
    assert spec.label == "DSSDNet: ipc (test nDCG@10 0.321 · fused 0.370 · BM25 0.370)"
    assert figures_note("text", {}) == "" and figures_note("drawing", {"after": {}}) == ""


def test_drawing_checkpoint_shows_validation_and_test_apart_and_zero_shot_beside_the_default(tmp_path):
    from patent_demo.registry import figures_note, zero_shot_metrics

    def rec(sub, main):
        return {"metrics": {"subclass_map": sub, "main_map": main, "hier_ndcg@10": 0.25}}

    metrics = {
        "validation": {"uspc": rec(0.4512, 0.2013), "redbook": rec(0.41, 0.3)},
        "test": {"uspc": rec(0.3311, 0.1702)},
    }
    assert measured_figures("drawing", metrics) == {
        "validation": {"subclass_map": 0.4512, "main_map": 0.2013, "hier_ndcg@10": 0.25},
        "test": {"subclass_map": 0.3311, "main_map": 0.1702, "hier_ndcg@10": 0.25},
        "redbook": {"subclass_map": 0.41, "main_map": 0.3, "hier_ndcg@10": 0.25},
    }
    note = "USPC val subclass/main mAP 0.451 / 0.201 · test 0.331 / 0.170 · Red Book val subclass mAP 0.410"
    assert figures_note("drawing", metrics) == note
    spec = _checkpoint(tmp_path / "hmcl-u", {"kind": "hmcl", "default": True, "train": {"steps": 5}}, metrics)
    zs = figures_note("drawing", zero_shot_metrics())
    assert spec.label == f"HMCL: hmcl-u ({note}" + (f"; zero-shot: {zs})" if zs else ")")


def test_models_command_lists_validation_and_test_columns(tmp_path, capsys):
    from patent_demo.cli import main

    def rec(sub, main):
        return {"metrics": {"subclass_map": sub, "main_map": main}}

    root = tmp_path / "ck"
    root.mkdir()
    _checkpoint(
        root / "hmcl-u",
        {"kind": "hmcl", "model": {"name": "lite-head", "image_size": 224}, "train": {"steps": 5}},
        {"validation": {"uspc": rec(0.46, 0.2)}, "test": {"uspc": rec(0.35, 0.19)}},
    )
    assert main(["models", "--checkpoints", str(root), "--json"]) == 0
    rows = {r["name"]: r for r in json.loads(capsys.readouterr().out)}
    assert rows["hmcl-u"]["validation"] == {"subclass_map": 0.46, "main_map": 0.2}
    assert rows["hmcl-u"]["test"] == {"subclass_map": 0.35, "main_map": 0.19}
    assert main(["models", "--checkpoints", str(root)]) == 0
    out = capsys.readouterr().out
    assert "validation (USPC val): subclass_map 0.460, main_map 0.200" in out
    assert "test (USPC test):      subclass_map 0.350, main_map 0.190" in out
