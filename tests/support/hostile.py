"""Hostile files for the decoder budgets, built by hand (``tests/test_attacks_files.py`` and
``bench/bench_request_budget.py``): a QOI image whose pixels are diff operations, a progressive JPEG whose
last scan is repeated thousands of times, a page in any format Pillow writes."""

from __future__ import annotations

import io
import struct

from PIL import Image, ImageDraw


def qoi(side: int) -> bytes:
    """A ``side`` x ``side`` RGB QOI image: per row, half the pixels one-byte diffs (+1 / -1 alternately),
    half a run (about 0.5 bytes a pixel: 3600² makes 6.5 MB)."""
    head = b"qoif" + struct.pack(">IIBB", side, side, 3, 0)
    diffs = bytes([0x7F, 0x55]) * (side // 4) + b"\x00" * (side // 2 % 2)
    diffs = diffs[: side // 2]
    rest, runs = side - len(diffs), bytearray()
    while rest:
        n = min(62, rest)
        runs.append(0xC0 | (n - 1))
        rest -= n
    return head + (diffs + bytes(runs)) * side + b"\x00" * 7 + b"\x01"


def page(side: int, fmt: str = "PNG", **save) -> bytes:
    """A white ``side``² grayscale page with a box drawn on it, saved as ``fmt``."""
    im = Image.new("L", (side, side), 255)
    ImageDraw.Draw(im).rectangle(
        (side // 4, side // 4, side // 2, side // 2), outline=0, width=max(2, side // 600)
    )
    buf = io.BytesIO()
    im.save(buf, format=fmt, **save)
    return buf.getvalue()


def segments(jpeg: bytes) -> list[tuple[int, int, int]]:
    """(marker, start, end) of each marker segment of ``jpeg`` up to its EOI, a scan's segment running to
    the end of its entropy-coded data."""
    out, i = [], 2
    while i + 4 <= len(jpeg) and jpeg[i] == 0xFF:
        marker = jpeg[i + 1]
        if marker == 0xD9:
            break
        end = i + 2 + int.from_bytes(jpeg[i + 2 : i + 4], "big")
        if marker == 0xDA:
            while True:
                end = jpeg.find(b"\xff", end)
                if jpeg[end + 1] not in (0x00, *range(0xD0, 0xD8)):
                    break
                end += 1
        out.append((marker, i, end))
        i = end
    return out


def many_scans_jpeg(side: int, scans: int) -> bytes:
    """A progressive JPEG of a blank ``side``² page whose last scan (an AC refinement: a few bytes of
    end-of-band runs covering the whole page) is repeated until it has ``scans`` scans; libjpeg decodes
    each one over every block of the page."""
    buf = io.BytesIO()
    Image.new("L", (side, side), 255).save(buf, format="JPEG", progressive=True, quality=90)
    data = buf.getvalue()
    sos = [(s, e) for m, s, e in segments(data) if m == 0xDA]
    last = data[sos[-1][0] : sos[-1][1]]
    return data[: sos[-1][1]] + last * (scans - len(sos)) + data[sos[-1][1] :]
