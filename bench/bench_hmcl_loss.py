"""Time the HMCL loss (forward + backward): the vectorised ``hmcl_loss`` against the per-anchor loop.

Prints, per batch size N (D = 256 by default), the median time of each and their ratio. Batches
have the sampler's shape: P patents x 2 figures, half of the patents in one subclass, a quarter
more in its main class.

    python bench/bench_hmcl_loss.py [--device cuda] [--sizes 64 128 256 512]
"""

from __future__ import annotations

import argparse
import statistics
import time

import torch

from patent_demo.losses import hierarchical_weights, hmcl_loss, hmcl_loss_loop


def batch_ids(n: int, device: torch.device) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """``[N]`` patent, subclass and main ids for ``N / 2`` patents of two figures each."""
    p = n // 2
    patents = torch.arange(p).repeat_interleave(2)
    subclass = torch.where(torch.arange(p) < p // 2, 0, torch.arange(p) + 1).repeat_interleave(2)
    main = torch.where(torch.arange(p) < (3 * p) // 4, 0, torch.arange(p) % 3 + 1).repeat_interleave(2)
    return patents.to(device), subclass.to(device), main.to(device)


def time_call(fn, z: torch.Tensor, repeats: int) -> float:
    """Median seconds of ``fn(z).backward()`` over ``repeats`` runs after one warm-up."""
    times = []
    for r in range(repeats + 1):
        z.grad = None
        if z.is_cuda:
            torch.cuda.synchronize()
        start = time.perf_counter()
        fn(z).backward()
        if z.is_cuda:
            torch.cuda.synchronize()
        if r:
            times.append(time.perf_counter() - start)
    return statistics.median(times)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--sizes", type=int, nargs="+", default=[64, 128, 256, 512], help="batch sizes N (even)"
    )
    parser.add_argument("--dim", type=int, default=256, help="embedding size D")
    parser.add_argument("--repeats", type=int, default=20, help="timed runs of the vectorised loss")
    parser.add_argument("--loop-repeats", type=int, default=3, help="timed runs of the per-anchor loop")
    parser.add_argument("--device", default="cpu", help="torch device, e.g. cpu or cuda")
    parser.add_argument("--tau", type=float, default=0.1, help="temperature")
    parser.add_argument("--seed", type=int, default=0, help="random seed for the embeddings")
    args = parser.parse_args(argv)

    device = torch.device(args.device)
    torch.manual_seed(args.seed)
    print(
        f"device={device} D={args.dim} tau={args.tau} threads={torch.get_num_threads()} torch={torch.__version__}"
    )
    print(f"{'N':>5} {'vectorised ms':>14} {'loop ms':>10} {'loop/vec':>9} {'|diff|':>9}")
    for n in args.sizes:
        z = torch.randn(n, args.dim, device=device, requires_grad=True)
        h = hierarchical_weights(*batch_ids(n, device))
        vec = time_call(lambda x, h=h: hmcl_loss(x, h, args.tau), z, args.repeats)
        loop = time_call(lambda x, h=h: hmcl_loss_loop(x, h, args.tau), z, args.loop_repeats)
        with torch.no_grad():
            diff = (hmcl_loss(z, h, args.tau) - hmcl_loss_loop(z, h, args.tau)).abs().item()
        print(f"{n:>5} {vec * 1e3:>14.3f} {loop * 1e3:>10.1f} {loop / vec:>9.1f} {diff:>9.1e}")


if __name__ == "__main__":
    main()
