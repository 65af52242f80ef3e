"""PWG raster and Apple raster encoders: lossless round trips, and golden pages against Ghostscript."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from edgeprint.documents import pwg, raster, urf
from edgeprint.documents.decode import Malformed, decode_pwg, decode_urf, gray
from edgeprint.documents.render import PageJob
from testbed import pdfs
from tests.raster_golden import SHAPES, TEXT, Tolerance, assert_close, ghostscript

BADGE_HMM = (10160, 7620)  # 4x3 in


def _page(color_space: str, data: np.ndarray, **kw: object) -> tuple[bytes, pwg.PageSetup]:
    width = data.shape[1] * (8 if color_space == "black_1" else 1)
    setup = pwg.PageSetup(color_space, 300, width, data.shape[0], **kw)  # type: ignore[arg-type]
    return pwg.encode_page(data, setup), setup


# Pixel rows with long runs, short runs and noise: what compression has to get right.
@st.composite
def pages(draw: st.DrawFn) -> tuple[str, np.ndarray]:
    space = draw(st.sampled_from(["sgray_8", "black_1", "srgb_8"]))
    h = draw(st.integers(1, 40))
    w = draw(st.integers(1, 300))
    palette = draw(st.lists(st.integers(0, 255), min_size=1, max_size=3))
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    channels = 3 if space == "srgb_8" else 1
    cols = w if space != "black_1" else (w + 7) // 8
    px = rng.choice(np.array(palette, dtype=np.uint8), size=(h, cols, channels))
    # Long runs and repeated lines
    if draw(st.booleans()):
        px[:, : cols // 2] = palette[0]
    if h > 2 and draw(st.booleans()):
        px[h // 2 :] = px[h // 2]
    return space, (px if channels == 3 else px[:, :, 0])


@given(pages())
@settings(max_examples=150, deadline=None)
def test_pwg_round_trip(page: tuple[str, np.ndarray]) -> None:
    """Any page decodes back to exactly its pixels, with the header's sizes and colour space."""
    space, px = page
    encoded, setup = _page(space, px, total_pages=3, media_name="oe_4x3-label_4x3in")
    (decoded,) = decode_pwg(pwg.SYNC + encoded)
    assert decoded.rows.tobytes() == px.tobytes()
    assert (decoded.width, decoded.height, decoded.dpi) == (setup.width, setup.height, 300)
    assert decoded.color_space == pwg.COLOR_SPACE[space]
    assert decoded.total_pages == 3
    assert decoded.media_name == "oe_4x3-label_4x3in"


@given(pages().filter(lambda p: p[0] != "black_1"))
@settings(max_examples=80, deadline=None)
def test_urf_round_trip(page: tuple[str, np.ndarray]) -> None:
    """Any grey or sRGB page decodes back to exactly its pixels from an Apple raster stream."""
    space, px = page
    setup = pwg.PageSetup(space, 600, px.shape[1], px.shape[0])
    stream = urf.file_header(2) + urf.encode_page(px, setup) + urf.encode_page(px, setup)
    decoded = decode_urf(stream)
    assert len(decoded) == 2
    assert decoded[1].rows.tobytes() == px.tobytes()
    assert decoded[0].bits_per_pixel == (24 if space == "srgb_8" else 8)
    assert decoded[0].color_space == urf.TYPES[space][1]
    assert decoded[0].dpi == 600


def test_many_equal_lines_and_long_runs() -> None:
    """A blank 4x3 in page at 600 dpi is a few bytes per 256 lines, and decodes white."""
    px = np.full((1800, 2400), 255, dtype=np.uint8)
    encoded, _ = _page("sgray_8", px)
    # 8 groups of 256 equal lines (1800 = 7 x 256 + 8), each: repeat byte + 19 runs x 2 bytes
    assert len(encoded) - pwg.HEADER_BYTES == 8 * (1 + 19 * 2)
    assert (decode_pwg(pwg.SYNC + encoded)[0].rows == 255).all()


def test_wrong_page_shape_is_refused() -> None:
    """Pixels that disagree with the header's width and height are refused, not encoded."""
    setup = pwg.PageSetup("sgray_8", 300, 100, 10)
    with pytest.raises(ValueError, match="the header says"):
        pwg.encode_page(np.zeros((10, 99), dtype=np.uint8), setup)
    with pytest.raises(ValueError, match="URF has no black_1"):
        urf.page_header(pwg.PageSetup("black_1", 300, 8, 1))


def test_decoder_refuses_a_truncated_stream() -> None:
    """The test decoder is strict: a stream cut short is malformed (so round trips prove something)."""
    encoded, _ = _page("sgray_8", np.arange(256, dtype=np.uint8).reshape(2, 128))
    with pytest.raises(Malformed):
        decode_pwg(pwg.SYNC + encoded[:-5])


# --- golden pages against Ghostscript ------------------------------------------------


def _ours(pdf: Path, fmt: str, space: str, dpi: int, media: tuple[int, int], pages: int) -> bytes:
    jobs = [PageJob(str(pdf), i, fmt, space, dpi, media, "", False, pages) for i in range(pages)]
    head = pwg.SYNC if fmt == "image/pwg-raster" else urf.file_header(pages)
    return head + b"".join(raster.encode(j) for j in jobs)


@pytest.mark.parametrize(
    ("fmt", "device", "space", "color", "text"),
    [
        ("image/pwg-raster", "pwgraster", "sgray_8", False, False),
        ("image/pwg-raster", "pwgraster", "sgray_8", False, True),
        ("image/pwg-raster", "pwgraster", "srgb_8", True, False),
        ("image/pwg-raster", "pwgraster", "srgb_8", True, True),
        ("image/urf", "appleraster", "sgray_8", False, False),
        ("image/urf", "appleraster", "srgb_8", True, False),
        ("image/urf", "appleraster", "srgb_8", True, True),
    ],
)
def test_badge_matches_ghostscript(
    tmp_path: Path, fmt: str, device: str, space: str, color: bool, text: bool
) -> None:
    """A 4x3 in badge at 300 dpi decodes to Ghostscript's page within the stated tolerance, per channel."""
    pdf = tmp_path / "badge.pdf"
    pdf.write_bytes(pdfs.make_badge_pdf("Grace Hopper", color=color, text=text))
    tol: Tolerance = TEXT if text else SHAPES
    decode = decode_pwg if fmt == "image/pwg-raster" else decode_urf
    (ours,) = decode(_ours(pdf, fmt, space, 300, BADGE_HMM, 1))
    (ref,) = decode(ghostscript(pdf, device, space, 300))
    for field in ("width", "height", "dpi", "bits_per_pixel", "color_space", "bytes_per_line"):
        assert getattr(ours, field) == getattr(ref, field), field
    if space == "srgb_8":
        a = ours.rows.reshape(ours.height, ours.width, 3)
        b = ref.rows.reshape(ref.height, ref.width, 3)
        for channel in range(3):
            assert_close(a[:, :, channel], b[:, :, channel], tol)
        red = a[int(ours.height * (1 - 165 / 216)), ours.width // 2]
        assert (red[0] > 150, red[1] < 80, red[2] < 80) == (True, True, True), red  # R, G, B order
    else:
        assert_close(gray(ours), gray(ref), tol)


def test_black_1_matches_ghostscript(tmp_path: Path) -> None:
    """A black-and-white badge in black_1 matches Ghostscript's 1-bit page (grey areas are not compared: Ghostscript halftones them, we threshold)."""
    pdf = tmp_path / "bw.pdf"
    pdf.write_bytes(pdfs.make_pdf("Katherine Johnson"))
    (ours,) = decode_pwg(_ours(pdf, "image/pwg-raster", "black_1", 300, BADGE_HMM, 1))
    (ref,) = decode_pwg(ghostscript(pdf, "pwgraster", "black_1", 300))
    assert (ours.bits_per_pixel, ours.color_space, ours.bytes_per_line) == (1, 3, 150)
    assert (ref.bits_per_pixel, ref.color_space, ref.bytes_per_line) == (1, 3, 150)
    assert_close(gray(ours), gray(ref), TEXT)


def test_multipage_a4_matches_ghostscript(tmp_path: Path) -> None:
    """Three A4 pages of text at 100 dpi match Ghostscript page for page, in order."""
    pdf = tmp_path / "a4.pdf"
    pdf.write_bytes(pdfs.make_a4_pdf(3))
    ours = decode_pwg(_ours(pdf, "image/pwg-raster", "sgray_8", 100, (20990, 29704), 3))
    ref = decode_pwg(ghostscript(pdf, "pwgraster", "sgray_8", 100))
    assert len(ours) == len(ref) == 3
    assert [p.total_pages for p in ours] == [3, 3, 3]
    for a, b in zip(ours, ref, strict=True):
        assert_close(gray(a), gray(b), TEXT)
    # pages differ from each other (page numbers), so order is checked too
    assert not np.array_equal(ours[0].rows, ours[1].rows)
