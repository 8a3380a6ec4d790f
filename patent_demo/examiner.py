"""What an examiner's search shows beside its hits: the "no good match" signal and the side-by-side views.
The searches themselves are ``patent_demo.search`` (a request of ``patent_demo.request`` in).

* :func:`no_match_threshold`: the threshold of ``patent_demo.calibration``, calibrated on judged
  searches of the corpus (citations for text, same subclass for drawings), computed once and cached
  under ``cache_dir/calibration/``; the warning appears only where its measured false-alarm rate is
  at most 5 %, and quotes the score the hit table shows.
* :func:`side_by_side`: the query drawing (after the examiner's crop) and a hit's figure, both as the
  encoder sees them (cropped to ink, centred on a white square) at one size, so they share a scale.
  :func:`searched_drawing` is that query for a hit of a whole application (its views) or of a sheet (the
  figure of the sheet that matched the hit).
* :func:`text_pair_html`: the query and a candidate with the BM25-matched words marked (escaped).
"""

from __future__ import annotations

import os
from pathlib import Path

from PIL import Image

from patent_demo.calibration import NoMatchThreshold, calibrate_drawing, calibrate_text

CALIBRATION_SAMPLES = 300


def no_match_threshold(wb, task: str, model: str = "") -> NoMatchThreshold | None:
    """The calibrated threshold for ``task`` ("drawing" with ``model``, or "text"), cached on disk;
    ``None`` when the corpus cannot be calibrated (a single class, no text)."""
    if task == "drawing":
        spec = wb.model(model, "drawing")
        key = f"drawing-{spec.fingerprint}-judged"
    else:
        key = "text-bm25-judged"

    def calibrate() -> NoMatchThreshold | None:
        path = Path(wb.config.cache_dir) / "calibration" / wb.fingerprint / f"{key}.json"
        if path.is_file():
            return NoMatchThreshold.load(path)
        try:
            if task == "drawing":
                th = calibrate_drawing(wb.index(spec), wb.corpus, CALIBRATION_SAMPLES, seed=wb.config.seed)
            else:
                th = calibrate_text(wb.bm25(), wb.corpus, CALIBRATION_SAMPLES, seed=wb.config.seed)
        except ValueError:
            return None
        th.save(path)
        return th

    return wb.derived(f"no-match {key}", calibrate)


def side_by_side(
    query: Image.Image | bytes | str | os.PathLike,
    figure_path: str | os.PathLike,
    size: int = 448,
    crop: bool = True,
) -> tuple[Image.Image, Image.Image]:
    """The query and a corpus figure as the encoder sees them, each cropped to its ink (unless
    ``crop`` is off for the query), centred on a white square and resized to ``size`` pixels."""
    from patent_demo.imageio import load_drawing

    q = load_drawing(query, crop=crop, square=True, size=size)
    h = load_drawing(figure_path, crop=True, square=True, size=size)
    return q, h


def searched_drawing(store, session: dict | None, extras: dict) -> tuple[bytes, str] | None:
    """The query of a hit (``extras``) of a whole-application or sheet search, as the search kept it in the
    label store ``store``, and how to name it: the application's views (one sheet), or the figure of the
    sheet that matched the hit (its box on the sheet). None for a drawing searched whole (the upload box
    holds it); ``ValueError`` when the search's drawing is no longer held."""
    import io

    from patent_demo.imageio import load_drawing

    kind, box = (session or {}).get("kind"), extras.get("query_box")
    if kind != "application" and not box:
        return None
    path = store.query_image((session or {}).get("image_file", ""))
    if path is None:
        raise ValueError("the query drawing of this search is no longer held: run the search again")
    if kind == "application":
        return path.read_bytes(), "The application's views (the query)"
    buf = io.BytesIO()
    load_drawing(str(path), crop=False, square=False).crop(tuple(box)).save(buf, format="PNG")
    return buf.getvalue(), f"The sheet's {extras.get('query_figure', 'figure')} (the query figure)"


def text_pair_html(wb, query: str, patent_id: str) -> tuple[str, str]:
    """``(query HTML, candidate HTML)``, each escaped, the words BM25 matched between them marked."""
    from patent_demo.text.highlight import highlight_html, matched_spans, query_tokens
    from patent_demo.text.search import candidate_text

    bm25 = wb.bm25()
    p = wb.corpus[patent_id]
    cand = candidate_text(p)
    shared = query_tokens(bm25, query) & query_tokens(bm25, cand)
    return (
        highlight_html(query, matched_spans(bm25, query, shared)),
        highlight_html(cand, matched_spans(bm25, cand, shared)),
    )
