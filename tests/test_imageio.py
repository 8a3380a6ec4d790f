from __future__ import annotations

import io
import struct
import zlib
from collections.abc import Iterator

import numpy as np
import pytest
from PIL import Image, ImageDraw

from patent_demo.imageio import (
    DEFAULT_MAX_PIXELS,
    INK_THRESHOLD,
    DrawingError,
    Source,
    _check_budget,
    _decode,
    _describe,
    _finish,
    _memory_guard,
    _open,
    ink_bbox,
    ink_ratio,
    load_drawing,
)
from tests.conftest import require_shared

BUDGET = "(possible decompression bomb); pass a larger max_pixels to read it"


def page_count(src: Source, *, max_pixels: int = DEFAULT_MAX_PIXELS, name: str | None = None) -> int:
    """The number of pages (frames) in a drawing file, read from its headers."""
    name = name or _describe(src)
    im = _open(src, name)
    try:
        _check_budget(im, name, max_pixels)
        return int(getattr(im, "n_frames", 1))
    except DrawingError:
        raise
    except Exception as err:
        raise DrawingError(f"{name}: cannot count pages ({type(err).__name__}: {err})") from err
    finally:
        if im is not src:
            im.close()


def iter_pages(
    src: Source,
    *,
    max_pixels: int = DEFAULT_MAX_PIXELS,
    crop: bool = True,
    margin: float = 0.04,
    square: bool = True,
    size: int | None = None,
    threshold: int = INK_THRESHOLD,
    name: str | None = None,
) -> Iterator[Image.Image]:
    """Every page of a (multi-page TIFF) drawing, each prepared as ``load_drawing`` prepares the first.
    Each page's size (and its final canvas) is checked against ``max_pixels`` before it is decoded."""
    name = name or _describe(src)
    im = _open(src, name)
    try:
        try:
            n = int(getattr(im, "n_frames", 1))
        except Exception as err:
            raise DrawingError(f"{name}: cannot count pages ({type(err).__name__}: {err})") from err
        for page in range(n):
            try:
                im.seek(page)
            except Exception as err:
                raise DrawingError(
                    f"{name} (page {page + 1}): cannot seek ({type(err).__name__}: {err})"
                ) from err
            _check_budget(im, name, max_pixels, page)
            with _memory_guard(f"{name} (page {page + 1})"):
                gray = _decode(im, name, page)
                out = _finish(
                    gray,
                    crop=crop,
                    margin=margin,
                    square=square,
                    size=size,
                    threshold=threshold,
                    max_pixels=max_pixels,
                    name=f"{name} (page {page + 1})",
                )
            yield out
    finally:
        if im is not src:
            im.close()


def _page(size=(120, 80), box=(30, 20, 70, 50), ink=0, mode="L", background=255) -> Image.Image:
    """A white page with one filled rectangle; ``box`` is (left, top, right, bottom), right/bottom exclusive."""
    im = Image.new(mode, size, background)
    ImageDraw.Draw(im).rectangle((box[0], box[1], box[2] - 1, box[3] - 1), fill=ink)
    return im


def _encode(im: Image.Image, fmt: str, **kwargs) -> bytes:
    buf = io.BytesIO()
    im.save(buf, format=fmt, **kwargs)
    return buf.getvalue()


def _png_header_only(width: int, height: int) -> bytes:
    """A PNG signature, an IHDR chunk claiming ``width`` x ``height`` 8-bit grayscale, and IEND: no pixel data."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    ihdr = struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IEND", b"")


# -- helpers ---------------------------------------------------------------------------------------


def test_ink_bbox_and_ratio():
    page = _page()
    assert ink_bbox(page) == (30, 20, 70, 50)
    assert ink_ratio(page) == 40 * 30 / (120 * 80)
    arr = np.full((10, 12), 255, dtype=np.uint8)
    assert ink_bbox(arr) is None and ink_ratio(arr) == 0.0
    arr[3, 4] = 199
    arr[7, 9] = 200  # not darker than the threshold
    assert ink_bbox(arr) == (4, 3, 5, 4)
    assert ink_bbox(arr, threshold=201) == (4, 3, 10, 8)
    assert ink_ratio(np.dstack([arr] * 3)) == 1 / 120


# -- formats written by the test ---------------------------------------------------------------------


@pytest.mark.parametrize("fmt", ["PNG", "TIFF", "JPEG"])
def test_crop_margin_square_exact(fmt):
    data = _encode(_page(), fmt, **({"quality": 95} if fmt == "JPEG" else {}))
    tight = load_drawing(data, margin=0, square=False)
    assert tight.mode == "L" and tight.size == (40, 30)
    assert ink_bbox(tight) == (0, 0, 40, 30)
    framed = load_drawing(data, margin=0.1, square=False)  # 0.1 x 40 = 4 px of white on each side
    assert framed.size == (48, 38) and ink_bbox(framed) == (4, 4, 44, 34)
    squared = load_drawing(data, margin=0.1)
    assert squared.size == (48, 48) and ink_bbox(squared) == (4, 9, 44, 39)
    assert load_drawing(data, size=24).size == (24, 24)
    assert load_drawing(data, margin=0, square=False, size=20).size == (20, 15)
    uncropped = load_drawing(data, crop=False, square=False)
    assert uncropped.size == (120, 80) and ink_bbox(uncropped) == (30, 20, 70, 50)


def test_lossless_pixels_are_exact():
    page = _page(ink=40)
    out = load_drawing(_encode(page, "PNG"), crop=False, square=False)
    np.testing.assert_array_equal(np.asarray(out), np.asarray(page))


def test_blank_page_is_returned_uncropped():
    blank = _encode(Image.new("L", (30, 20), 255), "PNG")
    assert load_drawing(blank, square=False).size == (30, 20)
    out = load_drawing(blank)
    assert out.size == (30, 30) and ink_bbox(out) is None


def test_rgba_composited_on_white():
    im = Image.new("RGBA", (60, 40), (0, 0, 0, 0))  # transparent *black*: must come out white
    ImageDraw.Draw(im).rectangle((10, 5, 29, 14), fill=(0, 0, 0, 255))
    ImageDraw.Draw(im).rectangle((40, 20, 49, 29), fill=(0, 0, 0, 128))
    out = load_drawing(_encode(im, "PNG"), crop=False, square=False)
    arr = np.asarray(out)
    assert arr[0, 0] == 255 and arr[5, 10] == 0 and arr[25, 45] == 127
    assert ink_bbox(out) == (10, 5, 50, 30)
    la = load_drawing(_encode(im.convert("LA"), "PNG"), crop=False, square=False)
    np.testing.assert_array_equal(np.asarray(la), arr)


def test_palette_with_and_without_transparency():
    rgb = _page(mode="RGB", background=(255, 255, 255), ink=(0, 0, 0))
    pal = rgb.convert("P")
    out = load_drawing(_encode(pal, "PNG"), margin=0, square=False)
    assert out.size == (40, 30) and np.asarray(out).max() == 0
    transparent = rgb.convert("P")
    transparent.info["transparency"] = transparent.getpixel((0, 0))
    data = _encode(transparent, "PNG", transparency=transparent.getpixel((0, 0)))
    assert Image.open(io.BytesIO(data)).info.get("transparency") is not None
    assert load_drawing(data, margin=0, square=False).size == (40, 30)


def test_16_bit_and_cmyk():
    arr16 = np.full((40, 50), 65535, dtype=np.uint16)
    arr16[10:20, 5:15] = 128 * 257
    data16 = _encode(Image.fromarray(arr16), "PNG")
    assert Image.open(io.BytesIO(data16)).mode.startswith("I")
    out = load_drawing(data16, crop=False, square=False)
    assert np.asarray(out)[0, 0] == 255 and np.asarray(out)[15, 10] == 128
    assert load_drawing(data16, margin=0, square=False).size == (10, 10)

    cmyk = _page(mode="CMYK", background=(0, 0, 0, 0), ink=(0, 0, 0, 255))
    for fmt in ("TIFF", "JPEG"):
        data = _encode(cmyk, fmt)
        assert Image.open(io.BytesIO(data)).mode == "CMYK"
        assert load_drawing(data, margin=0, square=False).size == (40, 30)


def test_sources_path_bytes_file_object(tmp_path):
    path = tmp_path / "page.png"
    _page().save(path)
    expected = np.asarray(load_drawing(path.read_bytes()))
    for src in (path, str(path), bytearray(path.read_bytes()), io.BytesIO(path.read_bytes()), _page()):
        np.testing.assert_array_equal(np.asarray(load_drawing(src)), expected)
    with path.open("rb") as f:
        np.testing.assert_array_equal(np.asarray(load_drawing(f)), expected)


def test_iter_pages_multipage_g4_tiff(tmp_path):
    pages = [_page(mode="1", box=box, ink=0, background=1) for box in [(10, 10, 30, 20), (50, 30, 110, 70)]]
    path = tmp_path / "two.tif"
    pages[0].save(path, save_all=True, append_images=pages[1:], compression="group4")
    with Image.open(path) as im:
        assert (im.mode, im.info["compression"], im.n_frames) == ("1", "group4", 2)
    assert page_count(path) == 2
    out = list(iter_pages(path, margin=0, square=False))
    assert [p.size for p in out] == [(20, 10), (60, 40)]
    assert all(p.mode == "L" for p in out)
    np.testing.assert_array_equal(np.asarray(load_drawing(path, margin=0, square=False)), np.asarray(out[0]))
    with pytest.raises(DrawingError) as err:
        list(iter_pages(path, max_pixels=5000))
    assert str(err.value) == f"{path}: 120x80 = 9,600 pixels exceeds the budget of 5,000 {BUDGET}"


# -- unreadable input --------------------------------------------------------------------------------


def test_missing_empty_and_text_files(tmp_path):
    missing = tmp_path / "nope.png"
    with pytest.raises(DrawingError) as err:
        load_drawing(missing)
    assert str(err.value) == f"{missing}: no such file"
    empty = tmp_path / "empty.tif"
    empty.write_bytes(b"")
    with pytest.raises(DrawingError) as err:
        load_drawing(empty)
    assert str(err.value) == f"{empty}: empty file, not a drawing"
    with pytest.raises(DrawingError) as err:
        load_drawing(b"")
    assert str(err.value) == "<0 bytes>: empty file, not a drawing"
    text = tmp_path / "notes.png"
    text.write_text("FIG. 1 is a front view of a chair.\n", encoding="utf-8")
    with pytest.raises(DrawingError) as err:
        load_drawing(text)
    assert str(err.value).startswith(f"{text}: not a readable image (expected PNG, JPEG, TIFF, GIF or BMP): ")
    with text.open("r", encoding="utf-8") as f, pytest.raises(DrawingError) as err:
        load_drawing(f)
    assert str(err.value) == f"{text}: a drawing must be read from a binary file object"
    with pytest.raises(DrawingError) as err:
        load_drawing(12345)
    assert str(err.value) == "<file object>: expected a path, bytes or a binary file object, got int"


def test_truncated_files_raise_drawing_error():
    data = _encode(_page(size=(300, 200)), "PNG")
    with pytest.raises(DrawingError) as err:
        load_drawing(data[: len(data) // 2])
    assert str(err.value).startswith(f"<{len(data) // 2} bytes>: truncated or corrupt image data (")
    jpeg = _encode(_page(size=(300, 200), mode="RGB", background=(255, 255, 255), ink=(0, 0, 0)), "JPEG")
    with pytest.raises(DrawingError, match=r"truncated or corrupt image data"):
        load_drawing(jpeg[: len(jpeg) // 2])


@pytest.mark.filterwarnings("ignore::UserWarning")
def test_any_damage_gives_an_image_or_drawing_error():
    """Every prefix and a set of byte-flipped copies either decode or raise DrawingError, nothing else."""
    rng = np.random.default_rng(0)
    for fmt in ("PNG", "TIFF", "JPEG"):
        data = _encode(_page(size=(64, 48)), fmt)
        variants = [data[:n] for n in range(0, len(data), max(1, len(data) // 40))]
        for _ in range(20):
            flipped = bytearray(data)
            for pos in rng.integers(0, len(data), size=4):
                flipped[pos] ^= 0xFF
            variants.append(bytes(flipped))
        for v in variants:
            try:
                out = load_drawing(v)
            except DrawingError:
                continue
            assert out.mode == "L"


def test_pixel_budget_checked_before_decoding():
    # 8000 x 8000 is within Pillow's own guard: the budget check must fire, and since the file holds no
    # pixel data at all, reaching the decoder would have produced a "truncated" error instead
    fake = _png_header_only(8000, 8000)
    with pytest.raises(DrawingError) as err:
        load_drawing(fake)
    assert (
        str(err.value)
        == f"<{len(fake)} bytes>: 8000x8000 = 64,000,000 pixels exceeds the budget of 50,000,000 {BUDGET}"
    )
    huge = _png_header_only(100_000, 100_000)
    with pytest.raises(DrawingError) as err:
        load_drawing(huge)
    assert str(err.value).startswith(f"<{len(huge)} bytes>: ")
    assert "decompression bomb" in str(err.value)
    small = _encode(_page(), "PNG")
    with pytest.raises(DrawingError) as err:
        load_drawing(small, max_pixels=9599)
    assert (
        str(err.value) == f"<{len(small)} bytes>: 120x80 = 9,600 pixels exceeds the budget of 9,599 {BUDGET}"
    )
    assert load_drawing(small, max_pixels=9600).mode == "L"


@pytest.mark.parametrize("size", [(30_000, 1), (1, 100_000)])
def test_pixel_budget_applies_to_the_padded_canvas(size):
    # a thin strip is cheap to decode (30,000 pixels) but its square canvas would hold ~900 million
    strip = Image.new("L", size, 0)
    data = _encode(strip, "PNG")
    assert len(data) < 1000
    with pytest.raises(DrawingError) as err:
        load_drawing(data, name="strip.png")
    msg = str(err.value)
    assert msg.startswith(f"strip.png: a {size[0]}x{size[1]} drawing needs a ")
    assert (
        "canvas after cropping margins and square padding" in msg and "over the budget of 50,000,000" in msg
    )
    with pytest.raises(DrawingError, match="canvas after cropping margins"):
        list(iter_pages(data))
    # without margins or squaring the canvas is the strip itself: within the budget
    assert load_drawing(data, square=False, margin=0).size == size


def test_canvas_budget_counts_margins_and_square():
    page = _encode(_page(size=(100, 100), box=(0, 0, 100, 10)), "PNG")  # ink box 100 x 10
    # margin 4 px each side -> 108 x 18 -> square 108 x 108 = 11,664 pixels
    assert load_drawing(page, max_pixels=11_664).size == (108, 108)
    with pytest.raises(
        DrawingError, match=r"needs a 108x108 canvas .* = 11,664 pixels, over the budget of 11,663"
    ):
        load_drawing(page, max_pixels=11_663)


def test_out_of_memory_becomes_a_drawing_error(monkeypatch):
    import patent_demo.imageio as imageio

    def no_memory(*a, **k):
        raise MemoryError

    monkeypatch.setattr(imageio.ImageOps, "expand", no_memory)
    with pytest.raises(DrawingError) as err:
        load_drawing(_encode(_page(), "PNG"), name="upload.png")
    assert str(err.value) == "upload.png: not enough memory to read this drawing; send a smaller image"


def test_a_given_name_replaces_the_path_in_messages(tmp_path):
    path = tmp_path / "secret" / "upload.xml"
    path.parent.mkdir()
    path.write_text("<xml/>")
    with pytest.raises(DrawingError) as err:
        load_drawing(path, name="upload.xml")
    assert str(err.value).startswith("upload.xml: not a readable image") and str(tmp_path) not in str(
        err.value
    )


# -- real USPTO drawing pages ------------------------------------------------------------------------


def test_real_g4_tiff_pages():
    patents = require_shared("impact_design_patent_samples/patents")
    paths = sorted(patents.glob("USD0907292-*/*.TIF"))[:5]
    assert len(paths) == 5
    for path in paths:
        with Image.open(path) as im:
            header = (im.mode, im.info["compression"], im.size)
        assert header[:2] == ("1", "group4")
        raw = load_drawing(path, crop=False, square=False)
        assert raw.mode == "L" and raw.size == header[2]
        assert set(np.unique(np.asarray(raw)).tolist()) == {0, 255}
        ratio = ink_ratio(raw)
        assert 0.001 < ratio < 0.5  # black lines on white paper, not inverted
        box = ink_bbox(raw)
        tight = load_drawing(path, margin=0, square=False)
        assert tight.size == (box[2] - box[0], box[3] - box[1])
        assert ink_bbox(tight) == (0, 0, *tight.size)
        np.testing.assert_array_equal(np.asarray(tight), np.asarray(raw.crop(box)))
        out = load_drawing(path)
        pad = round(0.04 * max(tight.size))
        assert out.size == (max(tight.size) + 2 * pad,) * 2
        assert load_drawing(path, size=224).size == (224, 224)


def test_real_g4_tiff_truncated():
    patents = require_shared("impact_design_patent_samples/patents")
    path = sorted(patents.glob("USD0907292-*/*-D00001.TIF"))[0]
    data = path.read_bytes()
    with pytest.raises(DrawingError) as err:
        load_drawing(data[: len(data) // 3])
    assert str(err.value).startswith(f"<{len(data) // 3} bytes>: ")


def test_data_uri_is_a_png_of_the_ink_within_its_size(tmp_path):
    import base64
    import io

    from PIL import Image, ImageDraw

    from patent_demo.imageio import data_uri

    page = Image.new("L", (800, 600), 255)
    ImageDraw.Draw(page).rectangle((100, 100, 300, 200), outline=0, width=5)
    page.save(tmp_path / "p.png")
    uri = data_uri(tmp_path / "p.png", size=120)
    assert uri.startswith("data:image/png;base64,")
    im = Image.open(io.BytesIO(base64.b64decode(uri.split(",", 1)[1])))
    assert im.format == "PNG" and max(im.size) <= 120
    assert abs(im.size[0] / im.size[1] - 2.0) < 0.3  # cropped to the 2:1 box, not the 4:3 page
