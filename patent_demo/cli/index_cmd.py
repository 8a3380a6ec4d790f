"""``patent-demo index embed|merge``: the drawing index of a large corpus, embedded in resumable shards.

``embed`` writes the figure embeddings of one model in shards of ``--shard-size`` figures under
``CACHE/shards/<corpus>/<model>/``; a shard on disk is kept, so a killed run resumes. Run it under
``torchrun --nproc_per_node N -m patent_demo.cli index embed ...`` and each process takes every N-th
shard (on GPU ``cuda:LOCAL_RANK`` with ``--device cuda``). ``merge`` builds one index over all shards,
of the kind ``patent_demo.index.scale.index_settings`` picks for its size from the measured table, where the app looks for it
(``CACHE/index/<corpus>/<model>/``), so ``app.py --corpus DIR --cache-dir CACHE`` serves it at once.
``push --backend qdrant`` loads the drawing index's embeddings and the dense text index's (built first
when the cache has none) into the engine with each patent's payload (``patent_demo.backends``): a server
at ``--url``, else embedded under ``CACHE/qdrant``; then ``search ... --backend qdrant`` and the app's
``--backend qdrant`` search there.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from patent_demo.cli.common import (
    add_backend,
    add_checkpoints,
    add_corpus,
    load_corpus,
    project_path,
    resolve_model,
)
from patent_demo.index.faiss_kinds import KINDS


def add_parser(sub) -> None:
    p = sub.add_parser("index", help="embed a large corpus in resumable shards and merge them into one index")
    xs = p.add_subparsers(dest="index_command", required=True, metavar="SUBCOMMAND")
    for name, help_ in (
        ("embed", "embed the figures into shards (resumable; torchrun-aware)"),
        ("merge", "build the app's index from every shard"),
        ("push", "load the indexes' embeddings and payload into a vector database"),
    ):
        x = xs.add_parser(
            name,
            help=help_,
            description=__doc__.split("\n\n", 1)[1],
            formatter_class=argparse.RawDescriptionHelpFormatter,
        )
        add_corpus(x)
        x.add_argument("--model", default="default", help="a drawing model (see `patent-demo models`)")
        x.add_argument(
            "--cache-dir",
            default=project_path("cache"),
            help="the app's cache folder (default: the project's cache/)",
        )
        add_checkpoints(x)
        if name == "embed":
            x.add_argument("--shard-size", type=int, default=10_000, help="figures per shard (default 10000)")
            x.add_argument("--batch-size", type=int, default=32, help="figures per encoder batch")
            x.add_argument("--device", default="cpu", help="cpu or cuda (cuda:LOCAL_RANK under torchrun)")
            x.set_defaults(handler=run_embed)
        elif name == "push":
            add_backend(x, push=True)
            x.add_argument(
                "--what",
                nargs="+",
                choices=("drawings", "text"),
                default=None,
                help="which indexes to push (default: the drawing index when the corpus has figures, "
                "and the dense text index)",
            )
            x.add_argument(
                "--shards",
                type=int,
                default=None,
                help="shards of each collection on a cluster (default: the server's; docs/scale.md)",
            )
            x.add_argument(
                "--replicas",
                type=int,
                default=None,
                help="copies of each shard on a cluster (default: the server's; deploy/qdrant-compose.yml: 2)",
            )
            x.set_defaults(handler=run_push)
        else:
            x.add_argument(
                "--kind",
                default=None,
                choices=KINDS,
                help="index kind (default: the measured choice for the corpus size, docs/scale.md)",
            )
            x.set_defaults(handler=run_merge)


def _workbench(args: argparse.Namespace):
    """``(Workbench, drawing model spec)`` of the flags."""
    from patent_demo.workbench import Workbench, WorkbenchConfig

    corpus = load_corpus(args.corpus)
    spec = resolve_model(args.model, "drawing", args.checkpoints, corpus)
    dirs = [*args.checkpoints, *([str(spec.path.parent)] if spec.path is not None else [])]
    config = WorkbenchConfig(
        cache_dir=Path(args.cache_dir), corpus=corpus.root, checkpoint_dirs=tuple(Path(d) for d in dirs)
    )
    wb = Workbench(config, corpus=corpus, progress=False)
    return wb, wb.model(spec.key, "drawing")


def _shards(wb, spec) -> Path:
    return wb.config.cache_dir / "shards" / wb.fingerprint / spec.fingerprint


def run_embed(args: argparse.Namespace) -> int:
    from patent_demo.drawing.embed import dist_rank, embed_shards
    from patent_demo.registry import OpenClipDrawingEncoder

    wb, spec = _workbench(args)
    rank, world = dist_rank()
    device = args.device
    if device == "cuda" and world > 1:
        device = f"cuda:{os.environ.get('LOCAL_RANK', rank)}"
    if device == "cpu":
        encoder = wb.encoder(spec)  # exactly the app's encoder
    else:
        encoder = OpenClipDrawingEncoder(spec.encoder, device=device, checkpoint=spec.path)
    corpus = wb.corpus
    figures = [f for _, f in corpus.figures()]
    out = _shards(wb, spec)
    done = embed_shards(
        encoder.encode,
        corpus.open_image,
        figures,
        out,
        args.shard_size,
        rank,
        world,
        args.batch_size,
        progress=sys.stderr.isatty(),
    )
    print(f"rank {rank}/{world}: embedded {len(done)} shard(s) {done} into {out}")
    return 0


def run_merge(args: argparse.Namespace) -> int:
    from patent_demo.index.scale import describe_index, merge_shards

    wb, spec = _workbench(args)
    figures = wb.corpus.figures()
    index = merge_shards(
        _shards(wb, spec),
        [f.path for _, f in figures],
        [p.id for p, _ in figures],
        kind=args.kind,
        model=spec.encoder,
        checkpoint=spec.checkpoint_id,
    )
    root = wb.config.cache_dir / "index" / wb.fingerprint / spec.fingerprint
    index.save(root)
    print(f"index of {index.count:,} figures ({index.kind}) built in {index.build_seconds:.1f} s: {root}")
    print(f"kind: {describe_index(index)}")
    return 0


def run_push(args: argparse.Namespace) -> int:
    from patent_demo.backends import BackendUnavailable, collection_name, push, qdrant_client

    wb, spec = _workbench(args)
    if args.backend == "faiss":
        print("the faiss backend is the app's own index (built by the app or `index merge`): nothing to push")
        return 0
    what = args.what or [*(["drawings"] if wb.has_drawings() else []), "text"]
    client = qdrant_client(args.url or None, wb.config.cache_dir / "qdrant", args.timeout)
    where = args.url or f"embedded in {wb.config.cache_dir / 'qdrant'}"
    for task in what:
        if task == "drawings":
            if not wb.has_drawings():
                raise ValueError("the corpus has no figures: push --what text")
            index, fp, kind = wb.index(spec), spec.fingerprint, "drawing"
        else:
            enc, index, _ = wb.dense()
            fp, kind = enc.fingerprint(), "text"
        name = collection_name(kind, wb.fingerprint, fp)
        try:
            n = push(client, name, index, wb.corpus, shards=args.shards, replicas=args.replicas)
        except Exception as err:  # noqa: BLE001 - a server down or refusing: say so, no stack trace
            if type(err).__module__.startswith(("qdrant_client", "httpx", "grpc", "httpcore")):
                raise BackendUnavailable(f"the search engine at {where} did not answer: {err}") from None
            raise
        print(
            f"pushed {n:,} {kind} vectors ({index.dim}-d, {len(set(index.patent_ids)):,} patents) to "
            f"{args.backend} collection {name} ({where})"
        )
    return 0
