"""``train.hmcl.loop.fit``, the one HMCL step loop: the same parameters as a plain loop written out by hand
(AdamW, warm-up + cosine schedule, gradient clip), early stop by ``after_step``, and a NaN loss refused."""

from __future__ import annotations

import argparse

import pytest
import torch

from train.hmcl.loop import Step, cosine_schedule, fit, lr_factor, make_optimizer


class Toy(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.lin = torch.nn.Linear(4, 3)

    def forward(self, x, y):
        z = self.lin(x)
        return {"mse_loss": ((z - y) ** 2).mean(), "l1_loss": 0.1 * z.abs().mean()}


def _batches(n):
    g = torch.Generator().manual_seed(1)
    return [(torch.randn(8, 4, generator=g), torch.randn(8, 3, generator=g)) for _ in range(n)]


def test_fit_equals_the_loop_written_out():
    args = argparse.Namespace(warmup_steps=2, min_lr_ratio=0.1)
    data = _batches(6)
    a = Toy()
    opt = make_optimizer(a, 1e-2, 0.05)
    done = fit(
        a, (Step((x, y), {}, 8) for x, y in data), opt, cosine_schedule(opt, 6, args), total=6, grad_clip=0.5
    )
    assert (done.step, done.seen) == (6, 48) and set(done.last) == {"mse_loss", "l1_loss", "loss"}
    b = Toy()
    opt = make_optimizer(b, 1e-2, 0.05)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: lr_factor(s, 6, 2, 0.1))
    for x, y in data:
        loss = sum(b(x, y).values())
        opt.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(list(b.parameters()), 0.5)
        opt.step()
        sched.step()
    for p, q in zip(a.parameters(), b.parameters(), strict=True):
        assert torch.equal(p, q)


def test_fit_stops_early_and_refuses_a_nan_loss():
    m = Toy()
    opt = torch.optim.SGD(m.parameters(), lr=0.1)
    seen = []
    done = fit(m, (Step(b) for b in _batches(5)), opt, total=5, after_step=lambda s: seen.append(s) or s == 2)
    assert done.step == 2 and seen == [1, 2]
    done = fit(m, (Step(b) for b in _batches(5)), opt, total=3, start=1)  # steps 1..2 of 3
    assert done.step == 3
    bad = (torch.full((8, 4), float("nan")), torch.zeros(8, 3))
    with pytest.raises(FloatingPointError, match="loss is nan at step 0"):
        fit(m, [Step(bad)], opt, total=1)
