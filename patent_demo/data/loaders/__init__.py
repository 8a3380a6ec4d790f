"""Loaders that read real patent data formats into a ``patent_demo.data.corpus.Corpus``.

Every loader normalises classification codes through ``patent_demo.taxonomy`` and stores figure
paths relative to the corpus root. Records a loader cannot use are skipped, never fatal, and counted
in an optional ``LoadReport`` passed by the caller::

    report = LoadReport()
    corpus = load_redbook("data/redbook", report=report)
    print(report.summary())

Formats:

- ``uspto``        USPTO Red Book grant folders and weekly ``ipgYYMMDD.xml`` grant files
- ``deeppatent2``  DeepPatent2 per-figure JSON records and its figure file names
- ``manifest``     a user's own CSV/JSONL manifest (one row per figure)
- ``textcorpus``   a JSONL text corpus with TREC qrels, and DSSDNet labelled-pair TSVs
"""

from patent_demo.data.loaders.deeppatent2 import (
    DeepPatent2Name,
    load_deeppatent2,
    load_deeppatent2_names,
    parse_deeppatent2_name,
)
from patent_demo.data.loaders.load_report import LoadReport, codes_dict, normalize_codes
from patent_demo.data.loaders.manifest import load_manifest
from patent_demo.data.loaders.textcorpus import (
    LabelledPair,
    load_labelled_pairs,
    load_text_corpus,
    qrels_from_pairs,
    read_pairs,
)
from patent_demo.data.loaders.uspto import (
    iter_grant_documents,
    load_grant_xml,
    load_redbook,
    normalize_patent_id,
    parse_grant,
)

__all__ = [
    "DeepPatent2Name",
    "LabelledPair",
    "LoadReport",
    "codes_dict",
    "iter_grant_documents",
    "load_deeppatent2",
    "load_deeppatent2_names",
    "load_grant_xml",
    "load_labelled_pairs",
    "load_manifest",
    "load_redbook",
    "load_text_corpus",
    "normalize_codes",
    "normalize_patent_id",
    "parse_deeppatent2_name",
    "parse_grant",
    "qrels_from_pairs",
    "read_pairs",
]
