"""A search request as one value, checked once where it is built and read as it is below.

* :class:`DrawingRequest`: the query drawing's bytes (read once; an examiner's crop or an application's
  views), the sha256 of the first (hashed once), the corpus patents the drawings come from (resolved once),
  the filter panel (``patent_demo.filters.Filters``, parsed once), the model key, k, one hit per patent,
  crop to ink and the query's Locarno code.
* :class:`TextRequest`: the abstract (``query.check_abstract``, once), its codes (parsed once), the filters,
  the model key, k, the lists wanted, whether the re-ranker runs, and the query's own patent when known.

``build`` raises ``ValueError`` with the message the app shows. ``patent_demo.search`` runs them.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from patent_demo.filters import Filters
from patent_demo.query import check_abstract, parse_query_codes


def _bytes(image: bytes | str | os.PathLike) -> bytes:
    return image if isinstance(image, bytes) else Path(image).read_bytes()


def own_patent_of(wb, sha: str) -> str:
    """The corpus patent whose figure file has this sha256 (``""`` when none)."""
    fig = wb.figure_sha().get(sha)
    return wb.patent_of_figure(fig)[0].id if fig else ""


@dataclass(frozen=True)
class DrawingRequest:
    """One drawing search (or, with several ``images``, a whole application) as it travels to the index."""

    images: tuple[bytes, ...]
    shas: tuple[str, ...]  # the sha256 of each image
    own: tuple[str, ...]  # the corpus patents the drawings come from, first the query's own
    model: str
    k: int = 10
    filters: Filters = field(default_factory=Filters)
    per_patent: bool = True
    crop: bool = True
    locarno: str = ""
    how: str = "mean"  # an application's aggregate over views: mean / max
    name: str = ""  # the drawing's file name, what a message about it says

    @property
    def image(self) -> bytes:
        return self.images[0]

    @property
    def sha(self) -> str:
        return self.shas[0]

    @property
    def own_patent(self) -> str:
        return self.own[0] if self.own else ""

    @classmethod
    def build(
        cls,
        wb,
        image: bytes | str | os.PathLike,
        model: str,
        k: int = 10,
        *,
        per_patent: bool = True,
        crop: bool = True,
        locarno: str = "",
        filters: object = None,
        own_patent: str | None = None,
        sha: str = "",
        name: str = "",
    ) -> DrawingRequest:
        """A single drawing's request. ``own_patent`` (a crop of a corpus figure: that figure's patent) is
        otherwise the corpus patent whose figure has the drawing's bytes; ``sha`` the bytes' sha256 when the
        caller has it; ``name`` the file name messages give (a path's own by default)."""
        from patent_demo import taxonomy

        data = _bytes(image)
        sha = sha or hashlib.sha256(data).hexdigest()
        if locarno is not None and not isinstance(locarno, str):
            raise ValueError("the Locarno code must be text")
        loc = taxonomy.normalize("locarno", locarno) if (locarno or "").strip() else ""
        own = own_patent if own_patent is not None else own_patent_of(wb, sha)
        own = own if own in wb.corpus else ""
        return cls(
            (data,),
            (sha,),
            (own,) if own else (),
            wb.model(model, "drawing").key,
            _k(k),
            Filters.from_value(filters),
            bool(per_patent),
            bool(crop),
            loc,
            name=name or (Path(image).name if not isinstance(image, bytes) else ""),
        )

    @classmethod
    def application(
        cls,
        wb,
        views: Sequence[bytes | str | os.PathLike],
        model: str,
        k: int = 10,
        *,
        crop: bool = True,
        filters: object = None,
        how: str = "mean",
    ) -> DrawingRequest:
        """A whole application's request: its views (the budget checked before any is read), the corpus
        patents they come from in order."""
        from patent_demo.drawing.application import check_views

        if not views:
            raise ValueError("an application query needs at least one view")
        check_views(views)
        data = tuple(_bytes(v) for v in views)
        shas = tuple(hashlib.sha256(d).hexdigest() for d in data)
        own = tuple(p for p in dict.fromkeys(own_patent_of(wb, s) for s in shas) if p)
        return cls(
            data,
            shas,
            own,
            wb.model(model, "drawing").key,
            _k(k),
            Filters.from_value(filters),
            True,
            bool(crop),
            how=how,
        )


@dataclass(frozen=True)
class TextRequest:
    """One text search as it travels to the indexes; ``model`` ``""`` is the default re-ranker."""

    text: str
    codes: Mapping[str, Sequence[str]] = field(default_factory=dict)
    model: str = ""
    k: int = 10
    filters: Filters = field(default_factory=Filters)
    lists: tuple[str, ...] | None = None  # None: every list (``patent_demo.text.lists.LISTS``)
    rerank: bool = True  # False: the BM25 list alone
    own_patent: str = ""  # the query's own patent when the search knows it (the Combined tab's drawing)

    @classmethod
    def build(
        cls,
        abstract: str,
        codes: str | Mapping[str, Sequence[str]] = "",
        model: str = "",
        k: int = 10,
        *,
        filters: object = None,
        lists: Sequence[str] | None = None,
        rerank: bool = True,
        own_patent: str = "",
        wb=None,
    ) -> TextRequest:
        """The request of a pasted abstract and its codes; with ``wb`` a named model is checked there."""
        text = check_abstract(abstract)
        qcodes = (
            parse_query_codes(codes)
            if isinstance(codes, str) or codes is None
            else {s: list(c) for s, c in codes.items()}
        )
        if model and wb is not None:
            model = wb.model(model, "text").key
        return cls(
            text,
            qcodes,
            model or "",
            _k(k),
            Filters.from_value(filters),
            tuple(lists) if lists is not None else None,
            bool(rerank),
            own_patent or "",
        )


def _k(k) -> int:
    k = int(k)
    if k < 1:
        raise ValueError(f"k must be at least 1, got {k}")
    return k
