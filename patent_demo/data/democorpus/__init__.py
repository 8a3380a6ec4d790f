"""The built-in demo corpus: generated design patents whose classification hierarchy is known.

Drawings are hidden-line renderings of parametric 3-D objects (``geometry``, ``render``) of about fifty
object types spread over real Locarno classes (``designs`` and the ``types_*`` modules), with titles,
figure descriptions and descriptions written from each design's parts (``text``). ``build`` plans
families, dates, citations and splits and writes a ``Corpus``; ``ensure_demo_corpus`` caches one build.
"""

from patent_demo.data.democorpus.build import (
    build_corpus,
    ensure_demo_corpus,
    make_patent,
    plan_corpus,
    retrieval_protocol,
)
from patent_demo.data.democorpus.catalog import TYPES, make_design
from patent_demo.data.democorpus.designs import Design, DesignType, Feature
from patent_demo.data.democorpus.render import VIEWS, Style, build_scene, render_view

__all__ = [
    "TYPES",
    "VIEWS",
    "Design",
    "DesignType",
    "Feature",
    "Style",
    "build_corpus",
    "build_scene",
    "ensure_demo_corpus",
    "make_design",
    "make_patent",
    "plan_corpus",
    "render_view",
    "retrieval_protocol",
]
