"""The workbench's start-up settings: ``app.py``'s flags (each with an environment variable), the label
database's default place and the workbench they configure."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Any

from patent_demo.workbench import Workbench, WorkbenchConfig

HERE = Path(__file__).resolve().parents[2]  # the folder of app.py: defaults live beside it
BUNDLED = HERE / "corpus"  # a Space folder's own corpus (scripts/build_space.py)
REAL_DATA = HERE.parent / "shared" / "data"
GENERATED = "generated"


def default_labels_path() -> tuple[Path, str]:
    """The label database path and a warning ("" when none): ``/data`` on a Space with persistent storage."""
    env = os.environ.get("PATENT_DEMO_LABELS")
    if env:
        return Path(env), ""
    if os.environ.get("SPACE_ID"):
        if Path("/data").is_dir() and os.access("/data", os.W_OK):
            return Path("/data/labels.sqlite"), ""
        return HERE / "data" / "labels.sqlite", (
            "Labels are stored on this Space's ephemeral disk and are lost when it restarts: "
            "enable persistent storage (mounted at /data) in the Space settings."
        )
    return HERE / "data" / "labels.sqlite", ""


def on_space_with_sign_in() -> bool:
    return bool(os.environ.get("SPACE_ID") and os.environ.get("OAUTH_CLIENT_ID"))


def _env(name: str, default: Any) -> Any:
    return os.environ.get(name, default)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    on_space = bool(os.environ.get("SPACE_ID"))
    p = argparse.ArgumentParser(
        description="Patent prior-art workbench (Gradio). Every flag has an env variable."
    )
    p.add_argument(
        "--host",
        default=_env("PATENT_DEMO_HOST", "0.0.0.0" if on_space else "127.0.0.1"),
        help="interface to listen on (PATENT_DEMO_HOST)",
    )
    p.add_argument(
        "--port",
        type=int,
        default=int(_env("PATENT_DEMO_PORT", _env("GRADIO_SERVER_PORT", 7860))),
        help="port (PATENT_DEMO_PORT or GRADIO_SERVER_PORT; default 7860)",
    )
    p.add_argument(
        "--corpus",
        default=_env("PATENT_DEMO_CORPUS", None),
        help="corpus directory with manifest.jsonl, or 'generated' for the generated demo corpus "
        "(PATENT_DEMO_CORPUS); default: a corpus/ folder beside app.py (a Space), else the real "
        "USPTO corpus built once from --real-data into the cache, else the generated one",
    )
    p.add_argument(
        "--real-data",
        default=_env("PATENT_DEMO_REAL_DATA", str(REAL_DATA)),
        help="the real data folder the default corpus is built from (PATENT_DEMO_REAL_DATA; "
        "default ../shared/data beside the repository)",
    )
    p.add_argument(
        "--demo-patents",
        type=int,
        default=int(_env("PATENT_DEMO_PATENTS", 300)),
        help="size of the built-in corpus in patents (PATENT_DEMO_PATENTS; default 300)",
    )
    p.add_argument(
        "--demo-size",
        type=int,
        default=int(_env("PATENT_DEMO_IMAGE_SIZE", 160)),
        help="drawing size in pixels of the built-in corpus (PATENT_DEMO_IMAGE_SIZE; default 160)",
    )
    p.add_argument(
        "--cache-dir",
        default=_env("PATENT_DEMO_CACHE", str(HERE / "cache")),
        help="where corpora and indexes are cached (PATENT_DEMO_CACHE; default cache/ beside app.py)",
    )
    p.add_argument(
        "--checkpoints",
        nargs="*",
        default=_env("PATENT_DEMO_CHECKPOINTS", str(HERE / "checkpoints")).split(os.pathsep),
        help="folders scanned for checkpoints (PATENT_DEMO_CHECKPOINTS, os.pathsep-separated)",
    )
    p.add_argument(
        "--labels",
        default=None,
        help="label database (PATENT_DEMO_LABELS; default data/labels.sqlite beside app.py, /data on a Space)",
    )
    p.add_argument(
        "--bm25-candidates",
        type=int,
        default=int(_env("PATENT_DEMO_CANDIDATES", 100)),
        help="hybrid candidates a re-ranker scores when its checkpoint records no depth chosen on "
        "validation (PATENT_DEMO_CANDIDATES; default 100)",
    )
    p.add_argument(
        "--bm25-shards",
        type=int,
        default=int(_env("PATENT_DEMO_BM25_SHARDS", 0)),
        help="score BM25 on this many threads, each over its share of the documents, with the same "
        "scores (needs numba; for corpora of a million abstracts: docs/scale.md); 0: one thread "
        "(PATENT_DEMO_BM25_SHARDS; default 0)",
    )
    p.add_argument(
        "--no-warmup", action="store_true", help="build indexes on first use instead of at start-up"
    )
    p.add_argument(
        "--backend",
        default=_env("PATENT_DEMO_BACKEND", "faiss"),
        choices=("faiss", "qdrant"),
        help="where drawing and dense text searches run (PATENT_DEMO_BACKEND; default faiss); qdrant "
        "searches the collections `patent-demo index push` loaded, filters inside the engine",
    )
    p.add_argument(
        "--backend-url",
        "--url",
        default=_env("PATENT_DEMO_BACKEND_URL", ""),
        help="the engine's server, e.g. http://qdrant-1:6333 (PATENT_DEMO_BACKEND_URL; default: "
        "embedded under --cache-dir/qdrant)",
    )
    p.add_argument(
        "--backend-fallback",
        default=_env("PATENT_DEMO_BACKEND_FALLBACK", ""),
        choices=("", "faiss"),
        help="faiss: answer from the FAISS index, with a ⚠️ note, when the engine does not "
        "(PATENT_DEMO_BACKEND_FALLBACK; default: none, the search fails with a ⚠️)",
    )
    p.add_argument(
        "--backend-timeout",
        type=float,
        default=float(_env("PATENT_DEMO_BACKEND_TIMEOUT", 5)),
        help="seconds a request to the engine's server may take (PATENT_DEMO_BACKEND_TIMEOUT; default 5)",
    )
    p.add_argument(
        "--annotators",
        default=_env("PATENT_DEMO_ANNOTATORS", ""),
        help="who may label: 'name:password,...', '@FILE' (one name:password a line) or '*:SECRET' "
        "(a shared secret, any login name); labels go under the login (PATENT_DEMO_ANNOTATORS)",
    )
    p.add_argument(
        "--admin",
        default=_env("PATENT_DEMO_ADMIN", ""),
        help="names (comma-separated) who may adjudicate and export; needs --annotators or a Space "
        "with sign-in (PATENT_DEMO_ADMIN)",
    )
    p.add_argument(
        "--export-labels",
        metavar="DIR",
        default=None,
        help="write qrels.txt, hmcl.jsonl, dssdnet.jsonl from the label database into DIR and exit",
    )
    return p.parse_args(argv)


def resolve_corpus(args: argparse.Namespace) -> tuple[Path | None, str]:
    """The corpus directory the app serves (``None``: the generated demo corpus) and a line saying which:
    ``--corpus DIR`` or ``generated``; by default a bundled ``corpus/`` beside app.py, else the real corpus
    (``patent_demo.data.real``) built once from ``--real-data`` into ``CACHE/real``, else the generated one."""
    from patent_demo.data.corpus import MANIFEST
    from patent_demo.data.real import available_parts, ensure_real_corpus

    if args.corpus == GENERATED:
        return None, "serving the generated demo corpus (--corpus generated; synthetic, not real patents)"
    if args.corpus:
        return Path(args.corpus), ""
    if (BUNDLED / MANIFEST).is_file():
        return BUNDLED, f"serving the bundled corpus {BUNDLED}"
    data = Path(args.real_data)
    if not available_parts(data):
        return None, (
            f"no real data in {data}: serving the generated demo corpus "
            "(synthetic drawings and texts, not real patents)"
        )
    out = Path(args.cache_dir) / "real"
    try:
        corpus = ensure_real_corpus(data, out, workers=max(1, min(4, os.cpu_count() or 1)))
    except (ValueError, OSError) as err:
        return (
            None,
            f"warning: the real corpus could not be built from {data} ({err}): serving the generated one",
        )
    return out, f"serving {out}: {corpus.source_label}"


def make_workbench(args: argparse.Namespace) -> Workbench:
    corpus, note = resolve_corpus(args)
    if note:
        print(note, file=sys.stderr)
    config = WorkbenchConfig(
        cache_dir=Path(args.cache_dir),
        corpus=corpus,
        demo_patents=args.demo_patents,
        demo_size=args.demo_size,
        checkpoint_dirs=tuple(Path(c) for c in args.checkpoints if c),
        bm25_candidates=args.bm25_candidates,
        bm25_shards=args.bm25_shards,
        backend=args.backend,
        backend_url=args.backend_url,
        backend_fallback=args.backend_fallback,
        backend_timeout=args.backend_timeout,
    )
    return Workbench(config)
