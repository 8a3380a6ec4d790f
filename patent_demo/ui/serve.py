"""How the workbench is served: ``main`` parses the flags (``patent_demo.ui.args``), opens the label store
and the workbench, warms the caches and launches the UI of ``patent_demo.ui.blocks.build_demo`` with
``launch_kwargs`` (theme, CSS, the keyboard shortcuts, the paths Gradio may serve, the login check)."""

from __future__ import annotations

import sys
from pathlib import Path

import gradio as gr

from patent_demo.backends import BackendUnavailable, require_qdrant
from patent_demo.data.corpus import CorpusError
from patent_demo.labels.store import LabelStore, StoreUnwritable
from patent_demo.ui.access import Identity
from patent_demo.ui.args import default_labels_path, make_workbench, on_space_with_sign_in, parse_args
from patent_demo.ui.blocks import build_demo
from patent_demo.ui.guard import OPEN_UPLOAD_MB, Budget, Guard, ServedFiles, TempSweeper
from patent_demo.ui.keys import queue_js
from patent_demo.workbench import Workbench

SHORTCUTS = {
    "1": "lbl-rel",
    "2": "lbl-part",
    "3": "lbl-not",
    "u": "lbl-undo",
    "j": "lbl-next",
    "k": "lbl-prev",
    "r": "d-refine",
}
KEYS_JS = """
<script>
%s
// a cited reference in the corpus (document.references_html): its record opens in the Document tab
document.addEventListener('click', (e) => {
  const ref = e.target.closest && e.target.closest('[data-open-record]');
  const box = ref && document.querySelector('#doc-id textarea, #doc-id input');
  if (!box) return;
  box.value = ref.dataset.openRecord;
  box.dispatchEvent(new Event('input', {bubbles: true}));
  setTimeout(() => document.getElementById('doc-open').click(), 100);
});
</script>
"""
CSS = """
#label-panel {border-top: 2px solid var(--border-color-primary); padding-top: 6px;}
.kbd {font-family: monospace; border: 1px solid #999; border-radius: 3px; padding: 0 4px;}
@media (max-width: 640px) { .gradio-container {padding: 4px !important;}
  #d-gallery .grid-container, #doc-gallery .grid-container {grid-template-columns: repeat(2, 1fr) !important;}
  #d-table {display: none !important;}
  .text-lists {overflow-x: auto !important;} .text-list {min-width: 1040px !important;}
  #l-pick .form > * {min-width: 100% !important;}
  #tr-rows .table-wrap, #tr-models .table-wrap, #g-queue .table-wrap {min-width: 720px;}
  #c-hm .table-wrap, #c-list .table-wrap, #c-rrf .table-wrap {min-width: 900px;}
  #e-table .table-wrap {min-width: 1100px;}
  #tr-summary table, #tr-text table, #g-report table {display: block; overflow-x: auto;}
  #tr-summary :is(th, td), #tr-text :is(th, td), #g-report :is(th, td) {white-space: nowrap;} }
#d-gallery .grid-wrap {max-height: none !important; height: auto !important; overflow: visible !important;}
#d-gallery .grid-container, #d-examples .grid-container, #doc-gallery .grid-container {padding-top: 40px !important;}
#d-gallery .caption-label, #d-examples .caption-label, #doc-gallery .caption-label {white-space: normal !important;
  overflow: visible !important; text-overflow: clip !important; max-width: none !important;}
#d-gallery .thumbnail-item, #d-examples .thumbnail-item, #doc-gallery .thumbnail-item {aspect-ratio: auto !important;
  height: auto !important; display: flex !important; flex-direction: column; overflow: visible !important;}
#d-gallery .thumbnail-item img, #d-examples .thumbnail-item img, #doc-gallery .thumbnail-item img {
  height: 150px !important; width: 100% !important; object-fit: contain !important;}
#d-examples .thumbnail-item img, #doc-gallery .thumbnail-item img {height: 110px !important;}
#d-gallery .caption-label, #d-examples .caption-label, #doc-gallery .caption-label {position: static !important;
  opacity: 1 !important; border: none !important; font-size: 12px; padding: 2px 4px !important; line-height: 1.25;}
#d-file label[data-testid=block-label] {max-width: calc(100% - 40px); white-space: normal;}
#d-views .upload-container {padding-top: 52px !important;}  /* its icon and text below its two-line name */
th .header {overflow-wrap: normal !important; word-break: normal !important;}
#index-status:not(:has(.prose *)) {display: none !important;}  /* nothing being built: no empty band */
"""


def served_paths(workbench: Workbench, store: LabelStore | None = None) -> tuple[list[str], list[str]]:
    """``(allowed_paths, blocked_paths)`` of ``launch``: Gradio serves ``/gradio_api/file=`` from the corpus
    drawings (its image root), the corpus thumbnails (``thumbs/``) and the thumbnails the app writes
    (``cache/thumbs/<corpus>``) only, besides the copies it makes itself of what a handler returns (a
    search's tiles, a requester's own report or export). Blocked, though they may lie inside an allowed
    folder (a corpus kept in the cache, images beside their manifest): the corpus's own files (manifest,
    splits, qrels, ``corpus.json``), every other folder of the cache (indexes, embeddings, FAISS files,
    calibration) and the label database's files (with its kept drawings, reports and exports)."""
    from patent_demo.data.build import THUMBS
    from patent_demo.data.sources import IMAGE_SUFFIXES

    corpus, cache = workbench.corpus, workbench.config.cache_dir.resolve()
    allowed = [
        Path(corpus.image_root).resolve(),
        Path(corpus.root).resolve() / THUMBS,
        cache / "thumbs" / workbench.fingerprint,
    ]
    blocked = [  # the corpus's own files beside its drawings, and hidden folders (a build's state)
        f.resolve()
        for folder in {Path(corpus.root).resolve(), allowed[0]}
        if folder.is_dir()
        for f in folder.iterdir()
        if f.name.startswith(".") or f.is_file() and f.suffix.lower() not in IMAGE_SUFFIXES
    ]
    on_the_way = {
        a for p in allowed for a in (p, *p.parents)
    }  # the cache folders that lead to an allowed one
    blocked += [f for f in cache.iterdir() if f not in on_the_way] if cache.is_dir() else []
    if store is not None:  # the database, its journal, kept query drawings, reports and exports
        db = store.path.resolve()
        blocked += [db.with_name(db.name + end) for end in ("", "-wal", "-shm", "-journal")]
        blocked += [db.parent / name for name in ("query_images", "reports", "exports")]
    return [str(p) for p in allowed], sorted({str(p) for p in blocked})


def served_files(workbench: Workbench) -> ServedFiles:
    """What the guard lets ``/gradio_api/file=`` answer (``guard.ServedFiles``): each corpus drawing by its
    own path (not the folder it lies in: a corpus built from a data folder shares it with the source's
    tables, licences and pictures that are no corpus drawing), the corpus thumbnails (``thumbs/``) and the
    thumbnails the app writes (``cache/thumbs/<corpus>``); besides them only Gradio's copies of what a
    handler returned."""
    from patent_demo.data.build import THUMBS

    corpus = workbench.corpus
    files = [corpus.image_path(f) for p in corpus for f in p.figures]
    folders = [
        Path(corpus.root).resolve() / THUMBS,
        workbench.config.cache_dir.resolve() / "thumbs" / workbench.fingerprint,
    ]
    return ServedFiles(files, folders)


def launch_kwargs(
    workbench: Workbench,
    identity: Identity | None = None,
    store: LabelStore | None = None,
    sweeper: TempSweeper | None = None,
    uploads: Budget | None = None,
) -> dict:
    """Theme, CSS, keyboard script, the paths the UI may serve (``served_paths``; the guard serves only the
    files of ``served_files`` in them), the upload limit
    (25 MB behind a login, 10 MB on an open server), the server's guard (``patent_demo.ui.guard``: login
    attempts, sessions, downloads, uploads, the temporary folder) and, with ``--annotators``, the login
    check."""
    from starlette.middleware import Middleware

    auth = identity.auth() if identity is not None else None
    allowed, blocked = served_paths(workbench, store)
    return {
        **(
            {
                "auth": auth,
                "auth_message": "Log in with the name and password (or shared secret) you were given.",
            }
            if auth
            else {}
        ),
        "theme": gr.themes.Soft(),
        "css": CSS,
        "head": KEYS_JS % queue_js(SHORTCUTS),
        "allowed_paths": allowed,
        "blocked_paths": blocked,
        "max_file_size": "25mb" if auth else f"{OPEN_UPLOAD_MB}mb",
        "app_kwargs": {
            "middleware": [
                Middleware(
                    Guard, identity=identity, sweeper=sweeper, uploads=uploads, served=served_files(workbench)
                )
            ]
        },
    }


def patient_url_ok(url: str, within: float = 60.0) -> bool:
    """Gradio's launch asks its own fresh server for ``/`` (``gradio.networking.url_ok``: tries of 3 s)
    and refuses to start without a share link when that fails, which a loaded machine can make it do.
    The local server gets up to ``within`` seconds, in tries of 10 s."""
    import time

    import httpx

    end = time.monotonic() + within
    while True:
        try:
            r = httpx.head(url, timeout=10, verify=False)
            if r.status_code in (200, 401, 301, 302, 303, 307, 308):
                return True
        except (httpx.ConnectError, httpx.TimeoutException):
            pass
        if time.monotonic() > end:
            return False
        time.sleep(0.5)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    labels_path, warning = (Path(args.labels), "") if args.labels else default_labels_path()
    try:
        store = LabelStore(labels_path)
    except StoreUnwritable as err:  # labels could never be stored: refuse to start, in one line
        print(
            f"error: cannot start: {err.why} ({labels_path.name}); give a writable label database with "
            "--labels (or PATENT_DEMO_LABELS)",
            file=sys.stderr,
        )
        return 2
    if args.backend == "qdrant":
        try:
            require_qdrant()
        except BackendUnavailable as err:  # the optional extra is missing: say how to get it, in one line
            print(f"error: cannot start: {err}", file=sys.stderr)
            return 2
    wb = make_workbench(args)
    if args.export_labels:
        out = store.export_all(Path(args.export_labels), corpus=wb.corpus)
        n = {k: v for k, (_, v) in out.items()}
        print(
            f"{store.count()} labels -> {n['qrels.txt']} qrels lines, {n['hmcl.jsonl']} HMCL rows, "
            f"{n['dssdnet.jsonl']} DSSDNet rows, {n['disputed.jsonl']} disputed pairs in {args.export_labels}"
        )
        return 0
    try:
        identity = Identity.from_flags(args.annotators, args.admin, oauth=on_space_with_sign_in())
    except ValueError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    if warning:
        print(f"warning: {warning}", file=sys.stderr)
    try:
        wb.corpus  # noqa: B018 - a raw collection is refused here, in one line naming the build command
    except CorpusError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    store.purge_staged_images()  # drawings of searches that ended with the last server
    if not args.no_warmup:
        from patent_demo.analysis import evaluate_in_background

        evaluate_in_background(wb, after=wb.warm_up_background())  # the Error-analysis tab, from the cache
    demo = build_demo(wb, store, warning, identity)
    from gradio import networking

    networking.url_ok = patient_url_ok  # gradio's own start-up check of its local URL (above)
    demo.queue(default_concurrency_limit=2).launch(
        server_name=args.host, server_port=args.port, **launch_kwargs(wb, identity, store)
    )
    return 0
