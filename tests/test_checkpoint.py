import pytest
import torch

from patent_demo.checkpoint import (
    CheckpointError,
    apply_weights,
    delta,
    load_config,
    load_metrics,
    load_weights,
    save_checkpoint,
)


def test_round_trip_and_delta(tmp_path):
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.Linear(3, 2))
    base = {k: v.clone() for k, v in model.state_dict().items()}
    with torch.no_grad():
        model[1].weight.add_(1.0)
    changed = delta(model.state_dict(), base)
    assert sorted(changed) == ["1.weight"]
    save_checkpoint(
        tmp_path / "c", changed, {"kind": "test"}, metrics={"map": 0.5}, command=["train", "--x", "a b"]
    )
    assert load_config(tmp_path / "c") == {"kind": "test"}
    assert load_metrics(tmp_path / "c") == {"map": 0.5}
    assert (tmp_path / "c" / "command.txt").read_text() == "train --x 'a b'\n"

    fresh = torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.Linear(3, 2))
    fresh.load_state_dict(base)
    apply_weights(fresh, load_weights(tmp_path / "c"), partial=True)
    for k, v in model.state_dict().items():
        assert torch.equal(fresh.state_dict()[k], v)
    with pytest.raises(CheckpointError, match="checkpoint lacks 3 parameter"):
        apply_weights(fresh, load_weights(tmp_path / "c"), partial=False)


def test_wrong_architecture_is_refused(tmp_path):
    save_checkpoint(tmp_path / "c", {"bogus.weight": torch.zeros(2)}, {"kind": "test"}, command=["x"])
    with pytest.raises(CheckpointError) as err:
        apply_weights(torch.nn.Linear(2, 2), load_weights(tmp_path / "c"), partial=True)
    assert str(err.value) == "checkpoint has 1 parameter(s) the model lacks, e.g. 'bogus.weight'"
    with pytest.raises(CheckpointError, match="is not a checkpoint"):
        load_weights(tmp_path / "nothing")
