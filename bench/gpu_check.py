"""GPU check: short HMCL and DSSDNet trainings on the built-in corpus in bf16, with step throughput and memory.

    python bench/gpu_check.py                      # CUDA when available (bench/gpu_check.sh wraps it)
    python bench/gpu_check.py --device cpu --tiny  # the same code path on the CPU, in seconds

Two parts, each printed as one line of figures:

1. **Step loops** over the real modules (``create_encoder`` + ``HMCLLoss`` on drawings of the built-in corpus;
   ``create_reranker`` + ``DSSDNetLoss`` on its texts), bf16 autocast on CUDA: median step time after warm-up,
   samples per second, peak memory (``torch.cuda.max_memory_allocated``).
2. **The training entry points** ``train.hmcl`` and ``train.dssdnet`` run end to end for a few steps on the same
   device (checkpoint written, evaluation run): wall time and exit status.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import io
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import torch  # noqa: E402


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def _peak_mb(device: torch.device) -> str:
    return (
        f"{torch.cuda.max_memory_allocated(device) / 2**20:.0f} MiB"
        if device.type == "cuda"
        else "n/a on CPU"
    )


def _reset(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats(device)


def _autocast(device: torch.device):
    return torch.autocast(device.type, dtype=torch.bfloat16, enabled=device.type == "cuda")


def _timed_steps(step, n_steps: int, warmup: int, device: torch.device) -> list[float]:
    times = []
    for i in range(warmup + n_steps):
        _sync(device)
        t0 = time.perf_counter()
        step()
        _sync(device)
        if i >= warmup:
            times.append(time.perf_counter() - t0)
    return times


def hmcl_steps(corpus, device: torch.device, args) -> dict:
    """HMCL + text term: P patents x 2 figures per step, full fine-tuning of lite-clip."""
    from patent_demo.drawing.encoders import create_encoder, encode_images, get_tokenizer
    from patent_demo.losses import HMCLLoss

    model, train_tf, _ = create_encoder("lite-clip", image_size=args.image_size)
    model.to(device).train()
    tokenizer = get_tokenizer("lite-clip")
    loss_fn = HMCLLoss(text_weight=0.2).to(device)
    opt = torch.optim.AdamW(list(model.parameters()) + list(loss_fn.parameters()), lr=1e-4)
    patents = [p for p in corpus.split("train") if len(p.figures) >= 2][: args.batch_patents]
    subclasses = sorted({p.locarno for p in patents})
    images, pids, subs, mains, texts = [], [], [], [], []
    for i, p in enumerate(patents):
        for f in p.figures[:2]:
            images.append(train_tf(corpus.open_image(f)))
            pids.append(i)
            subs.append(subclasses.index(p.locarno))
            mains.append(int(p.locarno_main))
        texts.append(p.title)
    x = torch.stack(images).to(device)
    pid, sub, main = (torch.tensor(v, device=device) for v in (pids, subs, mains))
    tokens = tokenizer(texts).to(device)
    text_index = pid  # each image's own patent text

    def step():
        opt.zero_grad(set_to_none=True)
        with _autocast(device):
            z = encode_images(model, x)
            t = torch.nn.functional.normalize(model.encode_text(tokens).float(), dim=-1)[text_index]
            losses = loss_fn(z.float(), pid, sub, main, text=t)
        loss = sum(losses.values())
        loss.backward()
        opt.step()

    _reset(device)
    times = _timed_steps(step, args.steps, args.warmup, device)
    med = statistics.median(times)
    return {
        "job": "hmcl",
        "batch": int(x.shape[0]),
        "image_size": args.image_size,
        "median_step_s": med,
        "samples_per_s": x.shape[0] / med,
        "peak_mb": _peak_mb(device),
    }


def dssdnet_steps(corpus, device: torch.device, args) -> dict:
    """DSSDNet (all losses) on query/candidate pairs of the built-in corpus, full fine-tuning of MiniLM."""
    from patent_demo.losses import DSSDNetLoss
    from patent_demo.text.reranker import create_reranker

    model = create_reranker("minilm", domain_scheme="locarno").to(device).train()
    opt = torch.optim.AdamW(model.parameters(), lr=2e-5, weight_decay=5e-4)
    patents = corpus.split("train")
    n = min(args.pairs, len(patents) - 1)
    pairs = list(zip(patents[:n], patents[1 : n + 1], strict=True))
    queries = [f"{a.title}. {a.text}" for a, _ in pairs]
    docs = [f"{b.title}. {b.text}" for _, b in pairs]
    y = torch.tensor([float(a.extra.get("type") == b.extra.get("type")) for a, b in pairs])
    t = torch.tensor([float(a.locarno == b.locarno) for a, b in pairs])
    alpha = float(1.0 - t.mean()) if 0 < float(t.mean()) < 1 else 0.5  # share of t = 0, as domain_alpha
    loss_fn = DSSDNetLoss(dataclasses.replace(model.config.loss, alpha=alpha), model.config.variant)
    batch = {k: v.to(device) for k, v in model.tokenize(queries, docs).items()}
    y, t = y.to(device), t.to(device)

    def step():
        opt.zero_grad(set_to_none=True)
        with _autocast(device):
            out = model(**batch, t=t)
            losses = loss_fn({k: v.float() for k, v in out.items() if torch.is_tensor(v)}, y, t)
        sum(losses.values()).backward()
        opt.step()

    _reset(device)
    times = _timed_steps(step, args.steps, args.warmup, device)
    med = statistics.median(times)
    return {
        "job": "dssdnet",
        "batch": n,
        "max_length": model.config.max_length,
        "median_step_s": med,
        "samples_per_s": n / med,
        "peak_mb": _peak_mb(device),
    }


def entry_points(device: torch.device, args, cache: Path) -> list[dict]:
    """Run the real training scripts for a few steps; returns wall time and status of each."""
    import train.dssdnet.main
    import train.hmcl.main

    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        jobs = [
            (
                "train.hmcl",
                train.hmcl.main.main,
                [
                    "--device",
                    device.type,
                    "--demo-patents",
                    str(args.patents),
                    "--demo-size",
                    "128",
                    "--cache-dir",
                    str(cache),
                    "--image-size",
                    str(args.image_size),
                    "--steps",
                    str(args.steps),
                    "--batch-patents",
                    str(args.batch_patents),
                    "--skip-eval-before",
                    "--out",
                    tmp,
                    "--name",
                    "hmcl",
                ],
            ),
            (
                "train.dssdnet",
                train.dssdnet.main.main,
                [
                    "--device",
                    device.type,
                    "--precision",
                    "bf16" if device.type == "cuda" else "fp32",
                    "--demo-patents",
                    str(args.patents),
                    "--demo-size",
                    "128",
                    "--cache-dir",
                    str(cache),
                    "--variant",
                    "dssdnet",
                    "--train-layers",
                    "6",
                    "--max-steps",
                    str(args.steps),
                    "--epochs",
                    "1",
                    "--k-first",
                    "50",
                    "--no-eval-before",
                    "--out",
                    str(Path(tmp) / "dssdnet"),
                ],
            ),
        ]
        for name, main, argv in jobs:
            _reset(device)
            t0 = time.perf_counter()
            buf = io.StringIO()
            try:
                with contextlib.redirect_stdout(buf):
                    rc = main(argv)
                status = "ok" if not rc else f"exit {rc}"
            except SystemExit as err:
                status = f"exit {err.code}"
            except Exception as err:  # noqa: BLE001 - a check reports every failure and goes on
                status = f"{type(err).__name__}: {err}"
            rows.append(
                {
                    "job": name,
                    "wall_s": time.perf_counter() - t0,
                    "peak_mb": _peak_mb(device),
                    "status": status,
                }
            )
    return rows


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--device", default="auto", help="auto (cuda when available), cuda or cpu")
    ap.add_argument("--patents", type=int, default=300, help="size of the built-in corpus to generate")
    ap.add_argument("--image-size", type=int, default=224, help="drawing input size of lite-clip")
    ap.add_argument("--batch-patents", type=int, default=128, help="patents per HMCL step (2 figures each)")
    ap.add_argument("--pairs", type=int, default=64, help="query/candidate pairs per DSSDNet step")
    ap.add_argument(
        "--steps", type=int, default=20, help="timed steps per loop and training steps per script"
    )
    ap.add_argument("--warmup", type=int, default=3, help="untimed steps before timing")
    ap.add_argument("--cache-dir", default=str(ROOT / "cache"), help="where the built-in corpus is cached")
    ap.add_argument("--tiny", action="store_true", help="a seconds-long run (tests, CPU)")
    args = ap.parse_args(argv)
    if args.tiny:
        args.patents, args.image_size, args.batch_patents, args.pairs, args.steps, args.warmup = (
            40,
            64,
            4,
            4,
            2,
            1,
        )
    device = torch.device(
        "cuda"
        if args.device == "auto" and torch.cuda.is_available()
        else ("cpu" if args.device == "auto" else args.device)
    )
    from patent_demo.data.democorpus import ensure_demo_corpus

    cache = Path(args.cache_dir)
    corpus = ensure_demo_corpus(cache, patents=args.patents, seed=0, size=128)
    name = torch.cuda.get_device_name(device) if device.type == "cuda" else "cpu"
    print(
        f"device {name}, torch {torch.__version__}, bf16 autocast {'on' if device.type == 'cuda' else 'off'}"
    )
    for fn in (hmcl_steps, dssdnet_steps):
        r = fn(corpus, device, args)
        extra = f"image {r['image_size']} px" if "image_size" in r else f"max_length {r['max_length']}"
        print(
            f"{r['job']:8s} batch {r['batch']:4d} ({extra}): {r['median_step_s'] * 1000:8.1f} ms/step "
            f"(median of {args.steps}), {r['samples_per_s']:8.1f} samples/s, peak {r['peak_mb']}"
        )
    failed = 0
    for r in entry_points(device, args, cache):
        print(
            f"{r['job']:14s} {args.steps} steps end to end: {r['wall_s']:6.1f} s, peak {r['peak_mb']}, {r['status']}"
        )
        failed += r["status"] != "ok"
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
