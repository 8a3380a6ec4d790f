"""An outside check of drawing relevance feedback: the CLI's ``--feedback`` run scored on the residual
collection with qrels written here from the classification, not by the project's evaluation code.

    python scripts/feedback_check.py --corpus cache/corpora/redbook --split test --out docs/feedback_check/redbook_test

1. The query pages: every drawing page of the corpus's ``--split`` patents (``all``: every patent), read from
   ``manifest.jsonl`` / ``splits.json`` / ``corpus.json`` as plain JSON; the query id is the file name
   without suffix (as ``patent-demo search drawings`` prints it).
2. ``patent-demo search drawings --run`` ranks every patent of the corpus for each page (before).
3. The examiner, simulated here: of a page's top ``--depth`` patents, one is relevant (1) when its first
   ``--scheme`` code (Locarno by default) has the page's subclass, else not (0), written as TREC qrels.
4. ``patent-demo search drawings --feedback QRELS --run`` ranks again (after).
5. The residual collection: the judged patents are removed from both runs and from the qrels; qrels per
   level (subclass: same code; main: same main class, the code up to its first ``-`` or ``/``) are written
   for the rest, and both runs scored with ``ir_measures`` (AP over the whole residual list, per query).
   The paired bootstrap (``patent_demo.metrics.paired_bootstrap``) resamples query patents.

Writes the runs, qrels and ``check.json`` under ``--out``.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _code(record: dict, scheme: str) -> str:
    codes = (record.get("codes") or {}).get(scheme) or []
    return str(codes[0]).strip() if codes else ""


def _main(code: str) -> str:
    for sep in ("-", "/"):
        if sep in code:
            return code.split(sep, 1)[0]
    return code


def _read_run(path: Path) -> dict[str, list[str]]:
    out: dict[str, list[tuple[float, str]]] = {}
    for line in path.read_text().splitlines():
        qid, _, doc, _, score, _ = line.split()
        out.setdefault(qid, []).append((float(score), doc))
    return {q: [d for _, d in sorted(v, key=lambda x: -x[0])] for q, v in out.items()}


def _write_run(path: Path, run: dict[str, list[str]]) -> None:
    lines = [f"{q} Q0 {d} {r} {-r} check\n" for q, docs in run.items() for r, d in enumerate(docs, 1)]
    path.write_text("".join(lines))


def _search(corpus: str, model: str, queries: Path, k: int, run: Path, extra: list[str]) -> None:
    cmd = [
        sys.executable,
        "-m",
        "patent_demo.cli",
        "search",
        "drawings",
        "--corpus",
        corpus,
        "--model",
        model,
    ]
    cmd += ["--queries", str(queries), "--k", str(k), "--run", str(run), *extra]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    subprocess.run(cmd, check=True, env=env, cwd=ROOT)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--corpus", required=True)
    p.add_argument("--split", default="test", help="the query patents' split, or 'all'")
    p.add_argument("--depth", type=int, default=10)
    p.add_argument(
        "--scheme", default="locarno", help="the classification the examiner reads (locarno, uspc)"
    )
    p.add_argument("--model", default="default")
    p.add_argument("--out", required=True)
    p.add_argument("--extra", nargs=argparse.REMAINDER, default=[], help="more flags for the searches")
    a = p.parse_args(argv)
    import ir_measures
    import numpy as np

    from patent_demo.metrics import paired_bootstrap

    corpus, out = Path(a.corpus), Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    records = [json.loads(x) for x in (corpus / "manifest.jsonl").read_text().splitlines() if x.strip()]
    root = Path(json.loads((corpus / "corpus.json").read_text())["image_root"])
    root = root if root.is_absolute() else corpus / root
    split = set(json.loads((corpus / "splits.json").read_text())[a.split]) if a.split != "all" else None
    code = {r["id"]: _code(r, a.scheme) for r in records}
    drawn = [r for r in records if r.get("figures")]
    pages = {
        Path(f["path"]).stem: (r["id"], root / f["path"])
        for r in drawn
        if split is None or r["id"] in split
        for f in r["figures"]
    }
    (out / "queries.txt").write_text("".join(f"{path}\n" for _, path in pages.values()))
    k = len(drawn)
    _search(str(corpus), a.model, out / "queries.txt", k, out / "before.trec", a.extra)
    before = _read_run(out / "before.trec")
    judged = {q: before[q][: a.depth] for q in pages}
    lines = [
        f"{q} 0 {d} {int(bool(code[pages[q][0]]) and code[d] == code[pages[q][0]])}\n"
        for q, docs in judged.items()
        for d in docs
    ]
    (out / "feedback.qrels").write_text("".join(lines))
    _search(
        str(corpus),
        a.model,
        out / "queries.txt",
        k,
        out / "after.trec",
        ["--feedback", str(out / "feedback.qrels"), *a.extra],
    )
    after = _read_run(out / "after.trec")
    result = {
        "corpus": str(corpus),
        "split": a.split,
        "depth": a.depth,
        "scheme": a.scheme,
        "queries": len(pages),
    }
    runs = {}
    for name, run in (("before", before), ("after", after)):
        runs[name] = {q: [d for d in run[q] if d not in set(judged[q])] for q in pages}
        _write_run(out / f"{name}_residual.trec", runs[name])
    for level, key in (("subclass", lambda c: c), ("main", _main)):
        qrels = []
        for q, (pid, _) in pages.items():
            want = key(code[pid])
            rel = [d for d in runs["before"][q] if want and key(code[d]) == want]
            qrels += [f"{q} 0 {d} 1\n" for d in rel]
        (out / f"{level}.qrels").write_text("".join(qrels))
        qr = list(ir_measures.read_trec_qrels(str(out / f"{level}.qrels")))
        per = {}
        for name in ("before", "after"):
            rn = list(ir_measures.read_trec_run(str(out / f"{name}_residual.trec")))
            per[name] = {m.query_id: m.value for m in ir_measures.iter_calc([ir_measures.AP], qr, rn)}
        qids = sorted(q for q in per["before"] if q in {x.query_id for x in qr})
        b = np.array([per["before"][q] for q in qids])
        f = np.array([per["after"].get(q, 0.0) for q in qids])
        groups = [pages[q][0] for q in qids]
        boot = paired_bootstrap(f, b, groups) if qids else {}
        result[level] = {
            "queries": len(qids),
            "query_patents": len(set(groups)),
            "before": float(b.mean()) if qids else None,
            "after": float(f.mean()) if qids else None,
            "gain": boot,
        }
        if qids:
            print(
                f"{level:8s} {len(qids):3d} queries ({len(set(groups))} patents)  AP {b.mean():.4f} -> {f.mean():.4f}  "
                f"gain {boot['diff']:+.4f} [{boot['low']:+.4f}, {boot['high']:+.4f}]"
            )
        else:
            print(f"{level:8s} no query has a relevant patent left once the judged ones are removed")
    (out / "check.json").write_text(json.dumps(result, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
