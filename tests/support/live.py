"""A served app driven from the tests: the requests sent to it through ``gradio_client``, each as ``(api
name, arguments, index of the message in the answer)``; what one call costs the process that serves it; and a
backend address where nothing listens.

``live`` is the tuple a live-app fixture yields, ``(url, workbench, store, folder of uploads)``."""

from __future__ import annotations

import concurrent.futures
import io
import os
from pathlib import Path

from PIL import Image, ImageDraw

ABSTRACT = "lamp with a shade and bulb"
UNREACHABLE = "http://127.0.0.1:9"  # the discard port: nothing listens, the connection is refused


def drawn_png(size) -> bytes:
    """A white page of ``size`` with a box drawn on it (so cropping finds ink)."""
    im = Image.new("L", size, 255)
    ImageDraw.Draw(im).rectangle((size[0] // 4, size[1] // 4, size[0] // 2, size[1] // 2), outline=0, width=9)
    buf = io.BytesIO()
    im.save(buf, format="PNG")
    return buf.getvalue()


# -- requests ------------------------------------------------------------------------------------------------
def upload(live, name):
    """The file ``name`` of the live app's upload folder, as ``gradio_client`` sends a file."""
    from gradio_client import handle_file

    return handle_file(str(live[3] / name))


def drawing_request(live, name="good.png", k=4, loc=""):
    return ("/search_drawing", (upload(live, name), "zero-shot", k, True, True, loc, "ann"), 1)


def text_request(abstract=ABSTRACT, codes="", k=5):
    return ("/search_text", (abstract, codes, "dssdnet-untrained", k, "ann"), 2)


def combined_request(live, name="good.png", abstract=ABSTRACT, codes="", k=4):
    return (
        "/search_combined",
        (upload(live, name), abstract, codes, "zero-shot", "dssdnet-untrained", k, "ann"),
        3,
    )


def sheet_request(live, name="good.png", k=4, model="zero-shot"):
    return "/search_sheet", (upload(live, name), model, k, "ann", *filter_panel()), 1


def label_request(
    label="relevant", list_name="dssdnet", rank=1, category="", note="", annotator="ann", key=""
):
    return ("/label", (label, list_name, rank, category, note, annotator, key, True), 0)


def adjudicate_request(query_id="txt-0000000000000000", cand="D0001", label="not", note="", annotator="lead"):
    return ("/adjudicate", (query_id, cand, label, note, annotator), 0)


def filter_panel(**given) -> tuple:
    """The filter panel as the one JSON value every search endpoint takes last (``patent_demo.filters.Filters``)."""
    return ({{"kind": "kind_code", "own": "own_date"}.get(k, k): v for k, v in given.items()},)


def filtered_request(endpoint: str, live, name="good.png", **filters):
    """One search endpoint with the filter panel set to ``filters``."""
    f = filter_panel(**filters)
    if endpoint == "/search_drawing":
        return endpoint, (upload(live, name), "zero-shot", 4, True, True, "", "ann", *f), 1
    if endpoint == "/search_sheet":
        return endpoint, (upload(live, name), "zero-shot", 4, "ann", *f), 1
    if endpoint == "/search_text":
        return endpoint, (ABSTRACT, "", "dssdnet-untrained", 5, "ann", *f), 2
    if endpoint == "/search_bm25":
        return endpoint, (ABSTRACT, "", "dssdnet-untrained", 5, *f), 3
    return endpoint, (upload(live, name), ABSTRACT, "", "zero-shot", "dssdnet-untrained", 4, "ann", *f), 3


def shared_hash_predict(client, *args, api_name: str):
    """``client.predict`` on another page's session hash, bounded in time: sent again (at most three
    times) when its wait is cancelled or runs out; the answers checked do not change with it."""
    for attempt in range(3):
        try:
            return client.submit(*args, api_name=api_name).result(timeout=60)
        except (concurrent.futures.CancelledError, concurrent.futures.TimeoutError):
            if attempt == 2:
                raise
    raise AssertionError("unreachable")


# -- what one call costs, read from /proc (the server runs in this process) -----------------------------------
def _cpu_s() -> float:
    fields = Path("/proc/self/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime + stime


def _status_mb(key: str) -> float:
    line = next(x for x in Path("/proc/self/status").read_text().splitlines() if x.startswith(key))
    return int(line.split()[1]) / 1024


def measured(call):
    """``call()``'s result and its cost: CPU seconds of the whole process and the peak resident memory
    above what the process held before (VmHWM after resetting it through ``clear_refs``)."""
    Path("/proc/self/clear_refs").write_text("5")  # VmHWM := VmRSS
    rss, cpu = _status_mb("VmRSS:"), _cpu_s()
    out = call()
    return out, {"cpu_s": round(_cpu_s() - cpu, 3), "peak_mb": round(_status_mb("VmHWM:") - rss, 1)}
