"""PDF page → pixels → encoded raster page (PDFium via pypdfium2). Runs in render workers.

Only :mod:`edgeprint.documents.render`'s worker processes import this module
(numpy, pypdfium2 and Pillow stay out of the appliance's own process).

The page is rendered straight into a white canvas of the media's size at the
chosen resolution, centred, turned 90° counter-clockwise when it only fits
that way: one buffer per page, owned by numpy and lent to PDFium
(``FPDFBitmap_CreateEx`` with our own memory), so nothing is copied before
encoding. ``black_1`` is a
threshold of the grey rendering at 50 % (no dithering: badge printers print
text and bar codes, which dithering blurs).
"""

from __future__ import annotations

import ctypes
import io
import os
from struct import error as struct_error

import numpy as np
import pypdfium2 as pdfium
import pypdfium2.raw as pdfium_c

from edgeprint.documents import pwg, urf
from edgeprint.documents.render import PageJob

#: A pixel counts as colour when its channels differ by more than this (of 255).
COLOR_THRESHOLD = 24
#: Resolution of the colour probe (cheap: a 4x3 in page is 72x54 pixels).
COLOR_PROBE_DPI = 18
_JPEG_QUALITY = 90
_RENDER_FLAGS = pdfium_c.FPDF_ANNOT | pdfium_c.FPDF_PRINTING


# One open document per worker: pages of the same document arrive one after another.
_open: tuple[tuple[str, int, int], pdfium.PdfDocument] | None = None


def _document(path: str) -> pdfium.PdfDocument:
    global _open
    st = os.stat(path)
    key = (path, st.st_mtime_ns, st.st_size)
    if _open is None or _open[0] != key:
        if _open is not None:
            _open[1].close()
        _open = (key, pdfium.PdfDocument(path))
    return _open[1]


def close_document() -> None:
    """Close the document this process keeps open (a worker's is closed when it exits)."""
    global _open
    if _open is not None:
        _open[1].close()
        _open = None


def page_sizes(pdf_path: str) -> list[tuple[float, float]]:
    """(width, height) in points of each page as it is shown (its /Rotate applied)."""
    doc = _document(pdf_path)
    out = []
    for i in range(len(doc)):
        page = doc[i]
        out.append((float(page.get_width()), float(page.get_height())))
        page.close()
    return out


def inks(pdf_path: str) -> tuple[bool, bool]:
    """(some page has a mark, some page needs colour), from a coarse rendering of each page.

    A mark is any pixel that is not pure white (anti-aliasing keeps even a hairline
    visible at COLOR_PROBE_DPI); colour is a pixel whose channels differ by more
    than COLOR_THRESHOLD. Stops once both are known.
    """
    doc = _document(pdf_path)
    inked = color = False
    for i in range(len(doc)):
        page = doc[i]
        w, h = page.get_width(), page.get_height()
        size = (max(1, round(w * COLOR_PROBE_DPI / 72)), max(1, round(h * COLOR_PROBE_DPI / 72)))
        px = _render(page, "srgb_8", size, size, turn=False)
        page.close()
        inked = inked or bool(px.min() < 255)
        color = (
            color or int((px.max(axis=2).astype(np.int16) - px.min(axis=2)).max()) > COLOR_THRESHOLD
        )
        if inked and color:
            break
    return inked, color


def _render(
    page: pdfium.PdfPage,
    color_space: str,
    canvas: tuple[int, int],
    drawn: tuple[int, int],
    *,
    turn: bool,
) -> pwg.Pixels:
    """The page drawn ``drawn`` pixels large, centred on a white ``canvas``: (h, w[, 3]) array."""
    width, height = canvas
    rgb = color_space == "srgb_8"
    channels = 3 if rgb else 1
    stride = (width * channels + 3) & ~3  # PDFium wants 4-byte aligned rows
    buf = np.empty((height, stride), dtype=np.uint8)
    bitmap = pdfium_c.FPDFBitmap_CreateEx(
        width,
        height,
        pdfium_c.FPDFBitmap_BGR if rgb else pdfium_c.FPDFBitmap_Gray,
        buf.ctypes.data_as(ctypes.c_void_p),
        stride,
    )
    if not bitmap:
        raise MemoryError(f"PDFium could not make a {width}x{height} bitmap")
    try:
        pdfium_c.FPDFBitmap_FillRect(bitmap, 0, 0, width, height, 0xFFFFFFFF)
        draw_w, draw_h = drawn
        pdfium_c.FPDF_RenderPageBitmap(
            bitmap,
            page.raw,
            (width - draw_w) // 2,
            (height - draw_h) // 2,
            draw_w,
            draw_h,
            3 if turn else 0,  # 90° counter-clockwise, as IPP orientation-requested landscape
            _RENDER_FLAGS | (pdfium_c.FPDF_REVERSE_BYTE_ORDER if rgb else 0),
        )
    finally:
        pdfium_c.FPDFBitmap_Destroy(bitmap)
    rows = buf[:, : width * channels]
    return rows.reshape(height, width, 3) if rgb else rows


def pixels(job: PageJob) -> pwg.Pixels:
    """The page's pixels in the job's colour space (black_1 packed), media-sized."""
    doc = _document(job.pdf_path)
    page = doc[job.index]
    try:
        w_pt, h_pt = page.get_width(), page.get_height()
        canvas = (_px(job.media_hmm[0], job.dpi), _px(job.media_hmm[1], job.dpi))
        drawn = (round(w_pt * job.dpi / 72), round(h_pt * job.dpi / 72))
        if job.turn:
            drawn = (drawn[1], drawn[0])
        space = "sgray_8" if job.color_space == "black_1" else job.color_space
        px = _render(page, space, canvas, drawn, turn=job.turn)
    finally:
        page.close()
    if job.color_space == "black_1":
        return np.packbits(px < 128, axis=1)
    return px


def _px(hmm: int, dpi: int) -> int:
    return max(1, round(hmm * dpi / 2540))


def setup(job: PageJob) -> pwg.PageSetup:
    return pwg.PageSetup(
        color_space=job.color_space,
        dpi=job.dpi,
        width=_px(job.media_hmm[0], job.dpi),
        height=_px(job.media_hmm[1], job.dpi),
        media_name=job.media_name,
        total_pages=job.total_pages,
    )


def encode(job: PageJob) -> bytes:
    """The page encoded for its format: a PWG or URF page (no file header), or a JPEG file."""
    px = pixels(job)
    if job.format == "image/pwg-raster":
        return pwg.encode_page(px, setup(job))
    if job.format == "image/urf":
        return urf.encode_page(px, setup(job))
    if job.format == "image/jpeg":
        from PIL import Image  # only JPEG printers need Pillow loaded

        if job.color_space == "black_1":
            raise ValueError("JPEG is sent in sgray_8 or srgb_8, not black_1")
        out = io.BytesIO()
        Image.fromarray(px).save(out, "JPEG", quality=_JPEG_QUALITY, dpi=(job.dpi, job.dpi))
        return out.getvalue()
    raise ValueError(f"cannot encode {job.format}")


def warm() -> int:
    """Nothing: makes a fresh worker import this module (and PDFium) before real work."""
    return os.getpid()


def to_pdf(data: bytes, document_format: str, max_pages: int) -> bytes:
    """A raster (PWG, URF) or JPEG document an IPP client sent, as a PDF of its pages.

    Each page keeps its pixels and its resolution (the PDF page has the page's
    physical size). Raises ValueError for a document that is not what its
    format says, or has more than ``max_pages`` pages.
    """
    from PIL import Image

    from edgeprint.documents import decode

    images: list[Image.Image] = []
    dpi = 300
    if document_format == "image/jpeg":
        try:
            img = Image.open(io.BytesIO(data))
            img.load()
        except Exception as exc:  # Pillow raises many kinds for a broken JPEG
            raise ValueError(f"not a JPEG: {exc}") from None
        got = img.info.get("dpi")
        if got and got[0] >= 50:
            dpi = round(got[0])
        images.append(img.convert("RGB") if img.mode not in ("L", "RGB") else img)
    else:
        decoder = decode.decode_pwg if document_format == "image/pwg-raster" else decode.decode_urf
        try:
            pages = decoder(data)
        except (decode.Malformed, struct_error, IndexError) as exc:
            raise ValueError(f"not a valid {document_format} stream: {exc}") from None
        if not pages:
            raise ValueError(f"the {document_format} stream has no pages")
        if len(pages) > max_pages:
            raise ValueError(f"{len(pages)} pages; at most {max_pages}")
        for page in pages:
            dpi = page.dpi or dpi
            if page.bits_per_pixel == 24:
                rows = page.rows[:, : page.width * 3]
                images.append(Image.frombytes("RGB", (page.width, page.height), rows.tobytes()))
            else:
                images.append(Image.fromarray(decode.gray(page), mode="L"))
    out = io.BytesIO()
    images[0].save(out, "PDF", resolution=float(dpi), save_all=True, append_images=images[1:])
    return out.getvalue()


def preview_png(pdf_path: str, index: int, width: int) -> bytes:
    """Page ``index`` (0-based) drawn ``width`` pixels wide in sRGB, as a PNG (a preview).

    The height follows the page's aspect ratio (its /Rotate applied), at least 1 pixel.
    Raises IndexError for a page the document does not have.
    """
    from PIL import Image  # only previews and JPEG printers need Pillow loaded

    doc = _document(pdf_path)
    if not 0 <= index < len(doc):
        raise IndexError(f"page {index + 1} of a {len(doc)}-page document")
    page = doc[index]
    try:
        w_pt, h_pt = page.get_width(), page.get_height()
        size = (width, max(1, round(width * h_pt / w_pt)))
        px = _render(page, "srgb_8", size, size, turn=False)
    finally:
        page.close()
    out = io.BytesIO()
    Image.fromarray(px).save(out, "PNG", optimize=False, compress_level=6)
    return out.getvalue()
