"""Reading patent drawings: any common raster format in, a clean 8-bit grayscale page out.

``load_drawing`` opens PNG, JPEG, TIFF, GIF and BMP (TIFF including the 1-bit CCITT G4 pages of USPTO grants), checks the
pixel count and the bytes decoding will hold (``DEFAULT_MAX_BYTES``: a 7000 x 7000 RGBA PNG of 208 kB
decodes to 196 MB) in the header before any pixel is decoded (a guard against decompression bombs), converts to
8-bit grayscale on a white background, crops to the ink with a margin, pads to a square and optionally
resizes. The same pixel budget applies to the canvas that cropping margins and square padding would
build (a 30000 x 1 strip is small to decode but pads to a 900-megapixel square), checked before it is
allocated. Whatever goes wrong with the input, running out of memory included, the only exception is
``DrawingError`` (a ``ValueError``) whose message names the file (or the ``name`` the caller gives).

The cost of a format lies in its decoder, not its size, so what is decoded is decided from the bytes
before Pillow sees them: the format is sniffed from the file's first bytes (never its name) and must be
one an examiner uploads (``UPLOAD_FORMATS``: PNG, JPEG, TIFF, GIF, BMP; a corpus's own drawings may also
be WebP), and Pillow is told to try no other decoder; a JPEG's scans are counted in its marker segments
(a progressive JPEG has about ten; thousands of repeated scans each decode the whole page again) and
more than ``MAX_JPEG_SCANS`` are refused; a TIFF must use a compression without a JPEG inside
(``TIFF_COMPRESSIONS``).
"""

from __future__ import annotations

import io
import os
import re
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any

import numpy as np
from PIL import Image, ImageOps

from patent_demo.limits import MAX_DECODED_BYTES, MAX_JPEG_SCANS

Source = str | os.PathLike | bytes | bytearray | memoryview | IO[bytes] | Image.Image

DEFAULT_MAX_PIXELS = 50_000_000
DEFAULT_MAX_BYTES = MAX_DECODED_BYTES  # what decoding and the grayscale conversion hold, in bytes
INK_THRESHOLD = 200
_MARKER = re.compile(
    b"\\xff[^\\x00\\xd0-\\xd7\\xff]"
)  # a marker: not a stuffed 0xFF00, a restart or a fill byte
SCANS_PER_BYTE = 10  # a progressive JPEG's scans (after its first) that cost as much as a byte a pixel
UPLOAD_FORMATS = ("PNG", "JPEG", "TIFF", "GIF", "BMP")  # what an examiner uploads (Pillow's names)
CORPUS_FORMATS = (
    *UPLOAD_FORMATS,
    "WEBP",
)  # a corpus's own drawings (patent_demo.data.sources.IMAGE_SUFFIXES)
# the first bytes of each format read (the sniffer), then of formats refused by name in the message
_MAGIC = (
    (b"\x89PNG\r\n\x1a\n", "PNG"),
    (b"\xff\xd8\xff", "JPEG"),
    (b"II*\x00", "TIFF"),
    (b"MM\x00*", "TIFF"),
    (b"GIF87a", "GIF"),
    (b"GIF89a", "GIF"),
    (b"BM", "BMP"),
    (b"RIFF", "WEBP"),  # and "WEBP" at byte 8 (checked below)
    (b"qoif", "QOI"),
    (b"%PDF", "PDF"),
    (b"8BPS", "PSD"),
    (b"II+\x00", "BigTIFF"),
    (b"MM\x00+", "BigTIFF"),
    (b"\x00\x00\x00\x0cjP  ", "JPEG 2000"),
    (b"\xff\x4f\xff\x51", "JPEG 2000"),
    (b"icns", "ICNS"),
    (b"\x00\x00\x01\x00", "ICO"),
    (b"DDS ", "DDS"),
    (b"P1", "PBM"),
    (b"P4", "PBM"),
    (b"P5", "PGM"),
    (b"P6", "PPM"),
)
# TIFF compressions read (Pillow's names): none, CCITT fax (the G4 pages of USPTO grants), LZW, deflate,
# PackBits; a JPEG inside a TIFF would decode outside the scan count
TIFF_COMPRESSIONS = (
    "raw",
    "tiff_ccitt",
    "group3",
    "group4",
    "tiff_lzw",
    "tiff_adobe_deflate",
    "tiff_deflate",
    "tiff_raw_16",
    "packbits",
)
# bytes per pixel that decoding a frame of each mode and converting it to "L" hold at once
_MODE_BYTES = {
    "1": 1,
    "L": 1,
    "P": 4,
    "LA": 2,
    "La": 2,
    "PA": 2,
    "RGB": 3,
    "YCbCr": 3,
    "LAB": 3,
    "HSV": 3,
    "RGBA": 4,
    "RGBa": 4,
    "RGBX": 4,
    "CMYK": 4,
    "I": 8,
    "F": 8,
}


class DrawingError(ValueError):
    """A drawing that cannot be read: missing, empty, not an image, truncated, or over the pixel budget."""


def _describe(src: Any) -> str:
    if isinstance(src, str | os.PathLike):
        return str(src)
    if isinstance(src, bytes | bytearray | memoryview):
        return f"<{len(src)} bytes>"
    if isinstance(src, Image.Image):
        return f"<PIL image {src.mode} {src.size[0]}x{src.size[1]}>"
    return str(getattr(src, "name", "<file object>"))


def _read_source(src: Source, name: str) -> io.BytesIO | Path:
    """A path (checked to exist and be non-empty) or an in-memory buffer of the source's bytes."""
    if isinstance(src, str | os.PathLike):
        path = Path(src)
        if not path.is_file():
            raise DrawingError(f"{name}: no such file")
        if path.stat().st_size == 0:
            raise DrawingError(f"{name}: empty file, not a drawing")
        return path
    if isinstance(src, bytes | bytearray | memoryview):
        data = bytes(src)
    elif hasattr(src, "read"):
        try:
            data = src.read()
        except Exception as err:
            raise DrawingError(f"{name}: cannot read ({err})") from err
        if not isinstance(data, bytes | bytearray):
            raise DrawingError(f"{name}: a drawing must be read from a binary file object")
        data = bytes(data)
    else:
        raise DrawingError(
            f"{name}: expected a path, bytes or a binary file object, got {type(src).__name__}"
        )
    if not data:
        raise DrawingError(f"{name}: empty file, not a drawing")
    return io.BytesIO(data)


def sniff(head: bytes) -> str:
    """The format the first bytes of a file say (Pillow's name, or a plain one for formats not read);
    "" when they say none this module knows."""
    for magic, fmt in _MAGIC:
        if head.startswith(magic):
            if fmt == "WEBP" and head[8:12] != b"WEBP":
                continue
            return fmt
    return ""


def jpeg_scans(data: bytes, stop: int = MAX_JPEG_SCANS) -> int:
    """The scans (SOS segments) of the JPEG ``data``, counted by walking its marker segments and skipping
    each scan's entropy-coded bytes (where 0xFF is stuffed as 0xFF00 and restart markers carry on); the
    count stops at ``stop + 1``. Whatever follows a malformed segment is left to the decoder."""
    n, i, end = 0, 2, len(data)
    while i + 4 <= end and n <= stop:
        if data[i] != 0xFF:
            break
        marker = data[i + 1]
        if marker == 0xFF:  # fill bytes before a marker
            i += 1
            continue
        if marker == 0xD9:  # the end of the image
            break
        if 0xD0 <= marker <= 0xD7 or marker == 0x01:  # markers without a length
            i += 2
            continue
        i += 2 + int.from_bytes(data[i + 2 : i + 4], "big")
        if marker != 0xDA:
            continue
        n += 1
        at = _MARKER.search(data, i)  # the scan's data runs to the next marker
        if at is None:
            return n
        i = at.start()
    return n


def _check_format(source: io.BytesIO | Path, name: str, formats: tuple[str, ...]) -> int:
    """Refuse a file whose first bytes name a format outside ``formats``, or a JPEG of more than
    ``MAX_JPEG_SCANS`` scans, before any decoder reads it; the JPEG's scans (1 for other formats)."""
    if isinstance(source, Path):
        with source.open("rb") as f:
            head = f.read(16)
    else:
        head = source.getbuffer()[:16].tobytes()
    fmt, expected = sniff(head), f"{', '.join(formats[:-1])} or {formats[-1]}"
    if not fmt:
        raise DrawingError(
            f"{name}: not a readable image (expected {expected}): its first bytes are no image format's"
        )
    if fmt not in formats:
        raise DrawingError(
            f"{name}: a {fmt} file; this app reads drawings as {expected} only: save it as one (nothing was decoded)"
        )
    if fmt == "JPEG":
        data = source.read_bytes() if isinstance(source, Path) else source.getvalue()
        scans = jpeg_scans(data)
        if scans > MAX_JPEG_SCANS:
            raise DrawingError(
                f"{name}: a JPEG of more than {MAX_JPEG_SCANS} scans (a progressive JPEG has about ten); "
                "save it again as a baseline JPEG or a PNG (nothing was decoded)"
            )
        return scans
    return 1


def _open(src: Source, name: str, formats: tuple[str, ...] = UPLOAD_FORMATS) -> Image.Image:
    """Open the image lazily: only the header is parsed, no pixel data is decoded. The format is checked
    first (``_check_format``) and Pillow tries only the decoders of ``formats``."""
    if isinstance(src, Image.Image):
        return src
    source = _read_source(src, name)
    scans = _check_format(source, name, formats)
    try:
        with warnings.catch_warnings():
            # the pixel budget is checked by _check_budget; Pillow's own guard still raises beyond 2x its limit
            warnings.simplefilter("ignore", Image.DecompressionBombWarning)
            im = Image.open(source, formats=list(formats))
    except Image.DecompressionBombError as err:
        raise DrawingError(f"{name}: refused to open a possible decompression bomb ({err})") from err
    except Exception as err:
        detail = str(err).replace(str(src) if isinstance(src, str | os.PathLike) else repr(source), name)
        raise DrawingError(
            f"{name}: not a readable image (expected {', '.join(formats[:-1])} or {formats[-1]}): {detail}"
        ) from err
    im.info["scans"] = scans
    compression = im.info.get("compression") if im.format == "TIFF" else None
    if compression is not None and compression not in TIFF_COMPRESSIONS:
        im.close()
        raise DrawingError(
            f"{name}: a TIFF compressed as {str(compression)[:20]!r}; send it as a TIFF in group 4, LZW or "
            "deflate, or as a PNG (nothing was decoded)"
        )
    return im


def decoded_bytes(im: Image.Image) -> int:
    """The bytes decoding ``im``'s frame and converting it to grayscale hold: pixels x bytes per pixel of
    its mode (an RGBA pixel 4, a 16-bit one 8 while rescaled), read from the header alone; a progressive
    JPEG's scans after its first count a tenth of a byte a pixel each (libjpeg decodes each scan over the
    whole page: a scan of a 6000² page costs about a tenth of what decoding, cropping and shrinking a
    6000² PNG costs)."""
    w, h = im.size
    mode = im.mode
    per = _MODE_BYTES.get(mode, 8 if mode.startswith("I") else 4)
    return w * h * per + w * h * max(0, im.info.get("scans", 1) - 1) // SCANS_PER_BYTE


def _check_budget(
    im: Image.Image, name: str, max_pixels: int, page: int = 0, max_bytes: int | None = None
) -> None:
    w, h = im.size
    if w <= 0 or h <= 0:
        raise DrawingError(f"{name}: image has no pixels ({w}x{h})")
    where = f" (page {page + 1})" if page else ""
    if w * h > max_pixels:
        raise DrawingError(
            f"{name}{where}: {w}x{h} = {w * h:,} pixels exceeds the budget of {max_pixels:,} "
            f"(possible decompression bomb); pass a larger max_pixels to read it"
        )
    max_bytes = DEFAULT_MAX_BYTES if max_bytes is None else max_bytes
    if decoded_bytes(im) > max_bytes:
        scans = im.info.get("scans", 1)
        if scans > 1:
            raise DrawingError(
                f"{name}{where}: a {w}x{h} JPEG of {scans} progressive scans costs as much to decode as "
                f"{decoded_bytes(im) / 1e6:,.0f} MB (each scan decodes the whole page), over the budget of "
                f"{max_bytes / 1e6:,.0f} MB; send it smaller, as a baseline JPEG or as a PNG"
            )
        raise DrawingError(
            f"{name}{where}: a {w}x{h} {im.mode} image decodes to {decoded_bytes(im) / 1e6:,.0f} MB, over the "
            f"budget of {max_bytes / 1e6:,.0f} MB; send it smaller or as a grayscale (8-bit) image"
        )


def _to_gray(im: Image.Image) -> Image.Image:
    """Any Pillow mode → ``"L"``: transparency is composited on white, 16-bit and float are rescaled."""
    mode = im.mode
    if mode == "L":
        return im
    if mode == "1":
        return im.convert("L")
    if mode in ("RGBA", "LA", "PA", "La", "RGBa") or (
        mode in ("P", "L", "RGB") and "transparency" in im.info
    ):
        if mode in ("RGBA", "LA"):  # composite on white in grayscale: one byte a pixel per step
            return Image.composite(im.convert("L"), Image.new("L", im.size, 255), im.getchannel("A"))
        rgba = im.convert("RGBA")
        white = Image.new("RGBA", rgba.size, (255, 255, 255, 255))
        return Image.alpha_composite(white, rgba).convert("L")
    if mode.startswith("I") or mode == "F":
        arr = np.asarray(im).astype(np.float32)
        if mode.startswith("I;16") or (mode == "I" and arr.max(initial=0) > 255):
            arr = arr / 257.0
        elif mode == "F" and arr.max(initial=0) <= 1.0:
            arr = arr * 255.0
        return Image.fromarray(np.clip(np.rint(arr), 0, 255).astype(np.uint8), mode="L")
    return im.convert("RGB").convert("L")


def _as_gray_array(img: Image.Image | np.ndarray) -> np.ndarray:
    if isinstance(img, Image.Image):
        return np.asarray(_to_gray(img))
    arr = np.asarray(img)
    if arr.ndim == 3:
        arr = arr.mean(axis=2)
    return arr


def ink_bbox(
    img: Image.Image | np.ndarray, threshold: int = INK_THRESHOLD
) -> tuple[int, int, int, int] | None:
    """The bounding box ``(left, top, right, bottom)`` (right/bottom exclusive, as PIL's ``crop`` takes it)
    of the ink, i.e. pixels darker than ``threshold`` in grayscale; ``None`` when there is no ink.
    ``img`` is a PIL image of any mode or an array ``[H, W]`` / ``[H, W, C]``."""
    if isinstance(img, Image.Image):  # in Pillow: one byte a pixel, no numpy copies
        return _to_gray(img).point(lambda v: 255 if v < threshold else 0).getbbox()
    ink = _as_gray_array(img) < threshold
    rows, cols = np.flatnonzero(ink.any(axis=1)), np.flatnonzero(ink.any(axis=0))
    if rows.size == 0:
        return None
    return int(cols[0]), int(rows[0]), int(cols[-1]) + 1, int(rows[-1]) + 1


def ink_ratio(img: Image.Image | np.ndarray, threshold: int = INK_THRESHOLD) -> float:
    """The fraction of pixels darker than ``threshold`` (0.0 for a blank page)."""
    arr = _as_gray_array(img)
    return float((arr < threshold).mean()) if arr.size else 0.0


def _canvas_budget(name: str, source: tuple[int, int], canvas: tuple[int, int], max_pixels: int) -> None:
    w, h = canvas
    if w * h > max_pixels:
        raise DrawingError(
            f"{name}: a {source[0]}x{source[1]} drawing needs a {w}x{h} canvas after cropping margins and square "
            f"padding = {w * h:,} pixels, over the budget of {max_pixels:,}; crop the drawing to its content "
            "or pass a larger max_pixels"
        )


def _finish(
    im: Image.Image,
    *,
    crop: bool,
    margin: float,
    square: bool,
    size: int | None,
    threshold: int,
    max_pixels: int = DEFAULT_MAX_PIXELS,
    name: str = "drawing",
) -> Image.Image:
    """Crop to the ink plus a white margin of ``margin`` × the box's longer side, pad to a square, resize.
    The final canvas (after margins and padding) is checked against ``max_pixels`` before it is built."""
    source = im.size
    box = ink_bbox(im, threshold) if crop else None
    w, h = (box[2] - box[0], box[3] - box[1]) if box is not None else im.size
    pad = round(margin * max(w, h)) if box is not None else 0
    w, h = w + 2 * max(pad, 0), h + 2 * max(pad, 0)
    _canvas_budget(name, source, (max(w, h),) * 2 if square else (w, h), max_pixels)
    if box is not None:
        im = im.crop(box)
        if pad > 0:
            im = ImageOps.expand(im, border=pad, fill=255)
    if square and im.size[0] != im.size[1]:
        side = max(im.size)
        canvas = Image.new("L", (side, side), 255)
        canvas.paste(im, ((side - im.size[0]) // 2, (side - im.size[1]) // 2))
        im = canvas
    if size is not None:
        if size <= 0:
            raise ValueError(f"size must be positive, got {size}")
        w, h = im.size
        scale = size / max(w, h)
        target = (size, size) if square else (max(1, round(w * scale)), max(1, round(h * scale)))
        if target != im.size:
            im = im.resize(target, Image.Resampling.LANCZOS, reducing_gap=3.0)
    return im


def _decode(im: Image.Image, name: str, page: int = 0) -> Image.Image:
    """Decode the current frame and convert it to ``"L"``."""
    try:
        im.load()
        im = ImageOps.exif_transpose(im) if im.format == "JPEG" else im
        return _to_gray(im).copy()
    except DrawingError:
        raise
    except Exception as err:
        where = f" (page {page + 1})" if page else ""
        raise DrawingError(
            f"{name}{where}: truncated or corrupt image data ({type(err).__name__}: {err})"
        ) from err


def load_drawing(
    src: Source,
    *,
    max_pixels: int = DEFAULT_MAX_PIXELS,
    crop: bool = True,
    margin: float = 0.04,
    square: bool = True,
    size: int | None = None,
    threshold: int = INK_THRESHOLD,
    name: str | None = None,
    formats: tuple[str, ...] = UPLOAD_FORMATS,
) -> Image.Image:
    """Read a drawing (the first page of a multi-page file) as an 8-bit grayscale ``"L"`` image.

    ``src`` is a path, bytes, a binary file object or a PIL image. The header's pixel count is checked
    against ``max_pixels`` before decoding. With ``crop`` the result is cut to the ink (pixels darker than
    ``threshold``) plus a white margin of ``margin`` × the ink box's longer side; a blank page is kept
    whole. With ``square`` it is centred on a white square; ``size`` resizes to ``size`` × ``size``
    (or the longer side to ``size`` when not square). The header's size and the final canvas (after
    margins and padding) must each fit ``max_pixels``. The format must be one of ``formats`` (sniffed from
    the first bytes; a JPEG of at most ``MAX_JPEG_SCANS`` scans). Raises ``DrawingError`` naming the file (``name``
    when given, e.g. the upload's own file name instead of a server path) on any unreadable input.
    """
    name = name or _describe(src)
    with _memory_guard(name):
        im = _open(src, name, formats)
        try:
            _check_budget(im, name, max_pixels)
            gray = _decode(im, name)
        finally:
            if im is not src:
                im.close()
        return _finish(
            gray,
            crop=crop,
            margin=margin,
            square=square,
            size=size,
            threshold=threshold,
            max_pixels=max_pixels,
            name=name,
        )


@contextmanager
def _memory_guard(name: str) -> Iterator[None]:
    """Running out of memory while decoding or padding becomes a ``DrawingError`` naming the file."""
    try:
        yield
    except MemoryError:
        raise DrawingError(f"{name}: not enough memory to read this drawing; send a smaller image") from None


def decoded_size(src: Source, *, name: str | None = None, formats: tuple[str, ...] = UPLOAD_FORMATS) -> int:
    """The bytes ``load_drawing`` holds decoding ``src`` (``decoded_bytes``), read from its header alone;
    ``DrawingError`` (as ``load_drawing`` would say it) when the file alone is over the budgets."""
    name = name or _describe(src)
    im = _open(src, name, formats)
    try:
        _check_budget(im, name, DEFAULT_MAX_PIXELS)
        return decoded_bytes(im)
    finally:
        if im is not src:
            im.close()


def data_uri(path: str | os.PathLike, size: int = 160) -> str:
    """A drawing cropped to its ink and fitted in ``size`` px, as a PNG ``data:`` URI: an image a page (or a
    report) holds itself, so no server path reaches the browser."""
    import base64

    buf = io.BytesIO()
    load_drawing(path, crop=True, square=False, size=size).save(buf, format="PNG")
    return "data:image/png;base64," + base64.b64encode(buf.getvalue()).decode()
