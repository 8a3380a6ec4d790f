"""What a request of the workbench UI carries, checked before any work: top-k, a model name, an uploaded
drawing, the examiner's crop of it, the hit a click selected. A bad value raises ``BadInput`` (or
``ValueError``) with the message the user sees; the handlers (``handlers``, ``examiner``, ``labelling``) turn
it into a ⚠️ line.
"""

from __future__ import annotations

import io
import re
from pathlib import Path
from typing import Any

import gradio as gr
from PIL import Image

from patent_demo.limits import MAX_ID_CHARS, MAX_K

TRACK_TQDM = gr.Progress(track_tqdm=True)  # progress bars of tqdm loops (index builds) in the UI
NO_DRAWINGS = "this corpus has no drawings (a text corpus): search it in the Text search tab"
NO_SELECTION = (
    "select a hit first: this call carried no selection (a click sends one; an API client gives the rank "
    "to /label, /next_hit or /open_document instead)"
)


class BadInput(Exception):
    """Raised inside handlers for messages the user should see (the server carries on)."""


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
    data = path.read_bytes()
    if not data:
        raise BadInput(f"{path.name} is empty (0 bytes): upload the file again")
    return file, data, path.suffix.lower() or ".png"


def cropped_query(upload: bytes | str | None, crop) -> tuple[bytes, bool]:
    """The query bytes: the examiner's crop (the crop box's image, ``examiner.crop_box``) when there is one,
    else the upload as it is (its bytes, or the file read; so a corpus drawing is still recognised).
    ``(bytes, cropped)``."""
    if upload is None or upload == "":
        raise BadInput("upload a drawing (PNG, JPEG or TIFF) or pick an example first")
    if isinstance(crop, Image.Image):
        buf = io.BytesIO()
        crop.convert("L").save(buf, format="PNG")
        return buf.getvalue(), True
    return (upload if isinstance(upload, bytes) else Path(upload).read_bytes()), False


def drawing_request(wb, data: bytes, crop_image, model: str, **request):
    """The ``patent_demo.request.DrawingRequest`` of an upload's bytes: the examiner's crop of it when there is
    one (still of the upload's corpus patent), else the upload; ``request`` as ``DrawingRequest.build`` takes it."""
    import hashlib

    from patent_demo.request import DrawingRequest, own_patent_of

    query, cropped = cropped_query(data, crop_image)
    own = own_patent_of(wb, hashlib.sha256(data).hexdigest()) if cropped else None
    return DrawingRequest.build(wb, query, model, own_patent=own, **request)


class Selection(gr.SelectData):
    """What a select event carries (``gr.SelectData``), also built for a call that carries none (an API
    client's: Gradio's own class fails on it before the handler runs): ``index`` and ``value`` are then
    None and the handler answers with ``NO_SELECTION``. Every select handler of the page takes it."""

    def __init__(self, target, data) -> None:
        super().__init__(target, {"index": None, "value": None, **(data if isinstance(data, dict) else {})})


def picked_rank(evt: Any, gallery: bool = False) -> int:
    """The rank of the hit a click picked: in a gallery (``gallery`` and a single index) the rank its tile's
    caption starts with (``#3 …``, so a filtered gallery picks the right hit), else the index + 1; in a
    table the row's first cell (its rank column), else the row index + 1. ``BadInput`` without a selection."""
    index = getattr(evt, "index", None)
    if index is None:
        raise BadInput(NO_SELECTION)
    try:
        if gallery and not isinstance(index, list | tuple):
            value = getattr(evt, "value", None)
            caption = value.get("caption", "") if isinstance(value, dict) else ""
            m = re.match(r"#(\d+) ", caption if isinstance(caption, str) else "")
            return int(m.group(1)) if m else int(index) + 1
        row = getattr(evt, "row_value", None) or [None]
        return int(row[0]) if isinstance(row[0], int | float) else int(index[0]) + 1
    except (TypeError, ValueError, IndexError, OverflowError):
        raise BadInput(f"the selection {str(index)[:20]!r} names no hit of the list") from None
