"""What a request of the workbench UI carries, checked before any work: top-k, a model name, an uploaded
drawing, the examiner's crop of it. A bad value raises ``BadInput`` (or ``ValueError``) with the message the
user sees; the handlers (``handlers``, ``examiner``) turn it into a ⚠️ line.
"""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import gradio as gr
from PIL import Image

from patent_demo.limits import MAX_ID_CHARS, MAX_K

TRACK_TQDM = gr.Progress(track_tqdm=True)  # progress bars of tqdm loops (index builds) in the UI
NO_DRAWINGS = "this corpus has no drawings (a text corpus): search it in the Text search tab"


class BadInput(Exception):
    """Raised inside handlers for messages the user should see (the server carries on)."""


NOT_SELECTED = ("no hit was selected: this endpoint answers a click on a result; through the API, move the "
                "cursor with /next_hit or label a rank with /label")


def selection(evt: Any) -> gr.SelectData:
    """The select event of a click (``gr.SelectData``) from the plain event data a handler is given: a call
    without a click (an API call, a forged event) carries none and gets :data:`NOT_SELECTED`. Handlers take
    ``gr.EventData`` and call this, since Gradio's own ``SelectData`` fails inside Gradio on such a call."""
    if isinstance(evt, gr.SelectData):
        return evt
    data = getattr(evt, "_data", None)
    if not isinstance(data, dict) or data.get("index") is None:
        raise BadInput(NOT_SELECTED)
    try:
        return gr.SelectData(getattr(evt, "target", None), data)
    except (KeyError, TypeError):
        raise BadInput(NOT_SELECTED) from None


def top_k(value: Any) -> int:
    """top-k from a request: a whole number from 1 to ``MAX_K``."""
    try:
        k = float(value)
    except (TypeError, ValueError):
        raise BadInput(f"top-k must be a whole number from 1 to {MAX_K}, got {str(value)[:20]!r}") from None
    if not k.is_integer() or not 1 <= k <= MAX_K:
        raise BadInput(f"top-k must be a whole number from 1 to {MAX_K}, got {str(value)[:20]!r}")
    return int(k)


def model_key(value: Any, what: str) -> str:
    """A model name from a request (the workbench says whether it exists)."""
    if not isinstance(value, str) or not value.strip() or len(value) > MAX_ID_CHARS:
        raise BadInput(f"choose a {what} model")
    return value


def upload(file: Any, what: str = "a drawing (PNG, JPEG or TIFF)") -> tuple[str, bytes, str]:
    """(path, bytes, suffix) of an uploaded file."""
    if not file:
        raise BadInput(f"upload {what} or pick an example first")
    if not isinstance(file, str):
        raise BadInput("the drawing must be an uploaded file")
    path = Path(file)
    if not path.is_file():
        raise BadInput(f"the uploaded file {path.name} is gone: upload it again")
    return file, path.read_bytes(), path.suffix.lower() or ".png"


def cropped_query(file: str | None, crop) -> tuple[bytes, bool]:
    """The query bytes: the examiner's crop (the crop box's image, ``examiner.crop_box``) when there is one,
    else the uploaded file as it is (so a corpus drawing is still recognised). ``(bytes, cropped)``."""
    if not file:
        raise BadInput("upload a drawing (PNG, JPEG or TIFF) or pick an example first")
    if isinstance(crop, Image.Image):
        buf = io.BytesIO()
        crop.convert("L").save(buf, format="PNG")
        return buf.getvalue(), True
    return Path(file).read_bytes(), False
