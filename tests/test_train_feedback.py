"""``python -m train.feedback.drawings``: the rule that picks β and γ from the validation grid (the largest mean gain,
near-ties to the smaller β, then γ)."""

from __future__ import annotations

from train.feedback.drawings import TIE, choose


def _row(beta, gamma, gain):
    return {"beta": beta, "gamma": gamma, "mean_gain": gain}


def test_the_largest_mean_gain_wins():
    grid = [_row(0.5, 0.0, 0.01), _row(1.0, 0.3, 0.05), _row(1.5, 0.5, 0.02)]
    assert choose(grid) == grid[1]


def test_a_near_tie_goes_to_the_smaller_beta_then_the_smaller_gamma():
    grid = [
        _row(1.5, 0.0, 0.05),
        _row(1.0, 0.5, 0.05 - TIE / 2),
        _row(1.0, 0.15, 0.05 - TIE / 2),
        _row(0.5, 0, 0.01),
    ]
    assert choose(grid) == grid[2]
    grid.append(_row(0.75, 0.0, 0.05 - 2 * TIE))  # outside the tie: not chosen though smaller
    assert choose(grid) == grid[2]
