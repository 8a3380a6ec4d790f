"""The retraining example of the README: label drawing queries as an examiner would, then retrain.

    python bench/retrain_example.py OUT            # writes OUT/labels.sqlite (5 train-split + 1 test-split query)
    python -m train.retrain --labels OUT/labels.sqlite --from checkpoints/hmcl-lite-clip \
        --out OUT/hmcl-lite-clip-v2 --demo-patents 400 --steps 40 --threads 2

For each query (its first drawing, searched with ``hmcl-lite-clip`` over the app's built-in corpus of
400 patents at 160 px), the two best-ranked same-subclass patents that rank below the first
other-subclass patent are judged relevant, and the two best-ranked other-subclass patents not relevant.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from patent_demo.labels.store import Label, LabelStore, image_query_id  # noqa: E402
from patent_demo.request import DrawingRequest  # noqa: E402
from patent_demo.workbench import Workbench, WorkbenchConfig  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("out", type=Path, help="folder for labels.sqlite and the stored query drawings")
    ap.add_argument("--model", default="hmcl-lite-clip", help="checkpoint the examiner searched with")
    ap.add_argument("--cache-dir", type=Path, default=ROOT / "cache", help="the app's cache folder")
    args = ap.parse_args(argv)
    wb = Workbench(
        WorkbenchConfig(
            cache_dir=args.cache_dir, demo_patents=400, demo_size=160, checkpoint_dirs=(ROOT / "checkpoints",)
        ),
        progress=False,
    )
    corpus = wb.corpus
    store = LabelStore(args.out / "labels.sqlite")
    test = set(corpus.splits["test"])
    for qpid in corpus.splits["train"][:5] + corpus.splits["test"][:1]:
        query = corpus[qpid]
        path = corpus.image_path(query.figures[0])
        res = wb.search_drawing(DrawingRequest.build(wb, path, args.model, len(corpus)))
        sha, rel = store.save_query_image(path.read_bytes(), ".png")
        others = [h for h in res.hits if h.patent_id != qpid and h.patent_id not in test]
        other_class = [h for h in others if h.locarno != query.locarno]
        low = [h for h in others if h.locarno == query.locarno and h.rank > other_class[0].rank]
        picks = [(h, "relevant") for h in low[:2]] + [(h, "not") for h in other_class[:2]]
        for h, lab in picks:
            store.add(
                Label(
                    "examiner",
                    image_query_id(sha),
                    "image",
                    h.patent_id,
                    "hmcl",
                    h.rank,
                    h.score,
                    lab,
                    query_image_sha=sha,
                    query_image_file=rel,
                    query_patent_id=res.query_patent_id,
                    candidate_figure=h.figure,
                    checkpoint_id=args.model,
                )
            )
        print(qpid, query.locarno, [(h.patent_id, h.rank, lab) for h, lab in picks])
    print(store.count(), "labels in", store.path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
