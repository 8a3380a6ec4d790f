"""Draw the committed, family-aware split of a text corpus's citation queries (``splits/*.json``).

Rule (written into the file): families are ``patent_demo.data.families.families`` over the whole corpus
(listed family members, the family-pair TSVs, identical normalised title + abstract: continuations);
the families that hold a query are ordered by ``sha1(f"{seed}:{family key}")`` and cut where the
cumulative count of queries passes the fractions (train, val, test). A family goes whole into one
split, so no test query has a twin (same family, same text) among the training or validation queries.

    python -m train.text.split --corpus cache/corpora/cs3245 \
        --family-pairs ../shared/data/cs3245_patsnap_corpus_qrels/in_corpus_family_pairs.tsv \
        --out splits/cs3245_text.json

Scored phrase pairs (the USPPM CSV) split by anchor instead (:data:`SCORED_RULE`): every row of one anchor
lies in one split, so validation and test anchors are never trained on::

    python -m train.text.split --scored-pairs ../shared/data/usppm_phrase_matching/train.csv \
        --fractions 0.7 0.15 0.15 --out splits/usppm.json
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from patent_demo.data.corpus import Corpus, family_splits
from patent_demo.data.families import families
from patent_demo.data.loaders.textcorpus import read_pairs

RULE = (
    "queries = the corpus's qrels queries (citing patents with in-corpus citations); families = union-find "
    "over listed family members, the family-pair TSVs and identical normalised title+abstract "
    "(patent_demo.data.families); the families holding a query are ordered by sha1('<seed>:<family key>') "
    "and cut where the cumulative query count passes the fractions train/val/test; a family lies whole in one split"
)


SCORED_RULE = (
    "anchors = the distinct anchor phrases of the scored-pair CSV; ordered by sha1('<seed>:<anchor>') and cut where "
    "the cumulative row count passes the fractions train/val/test; an anchor's rows lie whole in one split"
)


def draw_scored_split(path: str, fractions=(0.7, 0.15, 0.15), seed: int = 0) -> dict:
    """``{"train", "val", "test": [anchors], ...}`` of a scored-pair CSV under :data:`SCORED_RULE`."""
    from patent_demo.text.scored import read_scored_pairs

    rows = read_scored_pairs(path)
    count: dict[str, int] = {}
    for r in rows:
        count[r.anchor] = count.get(r.anchor, 0) + 1
    # each row a member of its anchor's group: the cut counts rows, as the corpus family split counts patents
    by_row = family_splits({str(i): r.anchor for i, r in enumerate(rows)}, tuple(fractions), seed)
    out = {s: sorted({rows[int(i)].anchor for i in ids}) for s, ids in by_row.items()}
    stats = {
        "anchors": {s: len(v) for s, v in out.items()},
        "rows": {s: sum(count[a] for a in v) for s, v in out.items()},
    }
    return {
        "rule": SCORED_RULE,
        "fractions": list(fractions),
        "seed": seed,
        "stats": stats,
        **{s: sorted(v) for s, v in out.items()},
    }


def draw_split(
    corpus: Corpus, pairs: list[tuple[str, str]], fractions=(0.5, 0.25, 0.25), seed: int = 0
) -> dict:
    """``{"train", "val", "test": [query ids], "family": {qid: key}, ...}`` under :data:`RULE`."""
    fam = families(corpus.patents, pairs)
    queries = sorted(q for q in corpus.qrels if q in fam)
    members: dict[str, list[str]] = {}
    for q in queries:
        members.setdefault(fam[q], []).append(q)
    out = family_splits({q: fam[q] for q in queries}, tuple(fractions), seed)
    split_of = {q: s for s, qs in out.items() for q in qs}
    train_pos = {d for q in out["train"] for d, r in corpus.qrels[q].items() if r > 0}
    test_rel = {d for q in out["test"] for d, r in corpus.qrels[q].items() if r > 0}
    stats = {
        "queries": {s: len(v) for s, v in out.items()},
        "families_with_queries": len(members),
        "corpus_families": len(set(fam.values())),
        "test_relevant": len(test_rel),
        "test_relevant_also_train_positive": len(test_rel & train_pos),
        "test_relevant_that_are_train_queries": len(test_rel & set(out["train"])),
    }
    return {
        "rule": RULE,
        "fractions": list(fractions),
        "seed": seed,
        "stats": stats,
        **{s: sorted(v) for s, v in out.items()},
        "family": {q: fam[q] for q in queries if fam[q] != q or len(members[fam[q]]) > 1},
        "split_of_family": {f: split_of[members[f][0]] for f in sorted(members)},
    }


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    src = p.add_mutually_exclusive_group(required=True)
    src.add_argument("--corpus", help="a corpus directory (patent-demo corpus build --source text)")
    src.add_argument("--scored-pairs", help="a scored phrase-pair CSV (USPPM), split by anchor")
    p.add_argument("--family-pairs", nargs="*", default=[], help="TSVs of same-family pairs (two id columns)")
    p.add_argument(
        "--fractions", type=float, nargs=3, default=(0.5, 0.25, 0.25), help="train val test query shares"
    )
    p.add_argument("--seed", type=int, default=0, help="seed of the family order")
    p.add_argument("--out", required=True, help="the split JSON to write")
    args = p.parse_args(argv)
    if args.scored_pairs:
        split = draw_scored_split(args.scored_pairs, tuple(args.fractions), args.seed)
    else:
        corpus = Corpus.load(args.corpus, validate=False)
        pairs = [pair for f in args.family_pairs for pair in read_pairs(f)]
        split = draw_split(corpus, pairs, tuple(args.fractions), args.seed)
    split["command"] = "python -m train.text.split " + " ".join(argv if argv is not None else sys.argv[1:])
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(split, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    print(json.dumps(split["stats"], indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
