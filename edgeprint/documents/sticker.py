"""A printer's sticker as a one-page vector PDF: its name, a QR code of its release page, the URL.

Drawn with fpdf2 (a well-kept PDF writer, not ours): the QR code (segno's
matrix) is filled rectangles, one per run of dark modules in a row, and the
text uses two of the PDF's standard fonts (Helvetica-Bold for the name,
Courier for the URL), so the file is a few kilobytes, sharp at any resolution,
and needs no embedded font. Text is fitted with fpdf2's own font metrics
(``get_string_width``).

fpdf2 imports Pillow and numpy, so this module runs only in the render pool's
workers (:meth:`edgeprint.documents.render.RenderPool.sticker`), never in the
appliance's process.

A page wider than tall (a 4×3 in label) puts the QR code on the left and the
words on the right; a taller one (4×6 in, A6) stacks name, code and URL.
"""

from __future__ import annotations

import segno
from fpdf import FPDF

#: Points per hundredth of a millimetre.
_PT_PER_HMM = 72 / 2540
#: Helvetica-Bold's cap height in ems (its AFM: 718/1000): a name's top to its baseline.
_CAP_HEIGHT = 0.718
#: Modules of white around the code (ISO/IEC 18004 asks for 4).
QUIET_MODULES = 4
HELP_TEXT = "Scan to release your print jobs here"
_BOLD = ("helvetica", "B")
_MONO = ("courier", "")


def _ascii(text: str) -> str:
    """What the standard fonts can show of ``text``: printable ASCII, else ``?``."""
    return "".join(c if 32 <= ord(c) < 127 else "?" for c in text)


def _width(pdf: FPDF, font: tuple[str, str], size: float, text: str) -> float:
    pdf.set_font(font[0], font[1], size)
    return pdf.get_string_width(text)


def _fit(pdf: FPDF, font: tuple[str, str], text: str, width: float, largest: float) -> float:
    """The largest size (≤ ``largest``) at which ``text`` is at most ``width`` wide."""
    return min(largest, largest * width / max(1e-6, _width(pdf, font, largest, text)))


def _url_lines(
    pdf: FPDF, url: str, width: float, largest: float, smallest: float
) -> tuple[float, list[str]]:
    """The URL in Courier at the largest size that fits ``width``, on one line, else on two
    (split after a ``/``), else as many as needed at ``smallest``."""
    for lines in ([url], _split_after_slash(url)):
        size = min(_fit(pdf, _MONO, line, width, largest) for line in lines)
        if size >= smallest:
            return size, lines
    lines = [""]
    for c in url:
        if lines[-1] and _width(pdf, _MONO, smallest, lines[-1] + c) > width:
            lines.append("")
        lines[-1] += c
    return smallest, lines


def _split_after_slash(url: str) -> list[str]:
    cut = url.rfind("/", 0, len(url) - 1)
    return [url[: cut + 1], url[cut + 1 :]] if cut > 0 else [url]


def _text(pdf: FPDF, font: tuple[str, str], size: float, x: float, y: float, text: str) -> None:
    """``text`` with its baseline at ``y`` (points from the top)."""
    pdf.set_font(font[0], font[1], size)
    pdf.text(x, y, text)


def _centred(pdf: FPDF, font: tuple[str, str], size: float, w: float, y: float, text: str) -> None:
    _text(pdf, font, size, (w - _width(pdf, font, size, text)) / 2, y, text)


def _qr(pdf: FPDF, url: str, x: float, top: float, side: float) -> None:
    """The QR code of ``url`` in a square of ``side`` points, its top left corner at
    (x, top), quiet zone included."""
    code = segno.make_qr(url, error="m")
    rows = [list(r) for r in code.matrix]
    n = len(rows)
    module = side / (n + 2 * QUIET_MODULES)
    pdf.set_fill_color(0)
    for r, row in enumerate(rows):
        y = top + (QUIET_MODULES + r) * module
        c = 0
        while c < n:
            if not row[c]:
                c += 1
                continue
            start = c
            while c < n and row[c]:
                c += 1
            left = x + (QUIET_MODULES + start) * module
            pdf.rect(left, y, (c - start) * module, module, style="F")


def _landscape(pdf: FPDF, name: str, url: str, shown: str, m: float) -> None:
    w, h = pdf.w, pdf.h
    side = min(h - 2 * m, w * 0.5)
    _qr(pdf, url, m, (h - side) / 2, side)
    x = m + side + m * 0.5
    col = w - x - m
    size = _fit(pdf, _BOLD, name, col, h * 0.28)
    name_y = m + size * _CAP_HEIGHT
    _text(pdf, _BOLD, size, x, name_y, name)
    help_size = _fit(pdf, _BOLD, HELP_TEXT, col, min(10.0, size * 0.6))
    _text(pdf, _BOLD, help_size, x, name_y + help_size * 2.0, HELP_TEXT)
    url_size, lines = _url_lines(pdf, shown, col, 11.0, 5.0)
    for i, line in enumerate(lines):
        _text(pdf, _MONO, url_size, x, h - m - (len(lines) - 1 - i) * url_size * 1.2, line)


def _portrait(pdf: FPDF, name: str, url: str, shown: str, m: float) -> None:
    w, h = pdf.w, pdf.h
    col = w - 2 * m
    size = _fit(pdf, _BOLD, name, col, w * 0.16)
    name_y = m + size * _CAP_HEIGHT
    _centred(pdf, _BOLD, size, w, name_y, name)
    url_size, lines = _url_lines(pdf, shown, col, 12.0, 5.0)
    url_top = h - m - len(lines) * url_size * 1.2  # above the URL's first line
    help_size = _fit(pdf, _BOLD, HELP_TEXT, col, 11.0)
    help_y = url_top - help_size * 0.8
    top, bottom = name_y + m * 0.5, help_y - help_size * 1.5
    side = min(col, bottom - top)
    _qr(pdf, url, (w - side) / 2, top + (bottom - top - side) / 2, side)
    _centred(pdf, _BOLD, help_size, w, help_y, HELP_TEXT)
    for i, line in enumerate(lines):
        _centred(pdf, _MONO, url_size, w, h - m - (len(lines) - 1 - i) * url_size * 1.2, line)


def sticker_pdf(name: str, url: str, size_hmm: tuple[int, int]) -> bytes:
    """The sticker of printer ``name`` whose release page is ``url``, on a page of ``size_hmm``
    (width, height in hundredths of a millimetre)."""
    w, h = size_hmm[0] * _PT_PER_HMM, size_hmm[1] * _PT_PER_HMM
    pdf = FPDF(unit="pt", format=(w, h))  # portrait: the page is (w, h) as given
    pdf.set_auto_page_break(False)
    pdf.set_title(f"Sticker of {_ascii(name)}")
    pdf.set_creator("edgeprint")
    pdf.add_page()
    margin = max(7.0, min(w, h) * 0.05)
    shown = url.split("://", 1)[-1]
    draw = _landscape if w >= h else _portrait
    draw(pdf, _ascii(name), url, _ascii(shown), margin)
    return bytes(pdf.output())
