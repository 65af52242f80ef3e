"""A printer's sticker as a one-page vector PDF: its name, a QR code of its release page, the URL.

Written by hand (pure Python, no Pillow or PDFium in the appliance's process):
the QR code (segno) is drawn as filled rectangles, one per run of dark modules
in a row, and the text uses two of the PDF's standard fonts (Helvetica-Bold for
the name, Courier for the URL), so the file is a few kilobytes, sharp at any
resolution, and needs no embedded font. Text is fitted with the fonts' Adobe
AFM widths (Helvetica-Bold below; Courier is 600/1000 em for every character).

A page wider than tall (a 4×3 in label) puts the QR code on the left and the
words on the right; a taller one (4×6 in, A6) stacks name, code and URL.
"""

from __future__ import annotations

from collections.abc import Iterable

import segno

#: Points per hundredth of a millimetre.
_PT_PER_HMM = 72 / 2540
#: Helvetica-Bold advance widths (1/1000 em) of ASCII 32–126 (Adobe Core14 AFM).
_BOLD_WIDTHS = (
    278, 333, 474, 556, 556, 889, 722, 278, 333, 333, 389, 584, 278, 333, 278, 278, 556, 556,
    556, 556, 556, 556, 556, 556, 556, 556, 333, 333, 584, 584, 584, 611, 975, 722, 722, 722,
    722, 667, 611, 778, 722, 278, 556, 722, 611, 833, 722, 778, 667, 778, 722, 667, 611, 722,
    667, 944, 667, 667, 611, 333, 278, 333, 584, 556, 333, 556, 611, 556, 611, 556, 333, 611,
    611, 278, 278, 556, 278, 889, 611, 611, 611, 611, 389, 556, 333, 611, 556, 778, 556, 556,
    500, 389, 280, 389, 584,
)  # fmt: skip
_COURIER_WIDTH = 600
#: Modules of white around the code (ISO/IEC 18004 asks for 4).
QUIET_MODULES = 4
HELP_TEXT = "Scan to release your print jobs here"


def _ascii(text: str) -> str:
    return "".join(c if 32 <= ord(c) < 127 else "?" for c in text)


def _bold_width(text: str, size: float) -> float:
    return sum(_BOLD_WIDTHS[ord(c) - 32] for c in _ascii(text)) * size / 1000


def _fit_bold(text: str, width: float, largest: float) -> float:
    """The largest Helvetica-Bold size (≤ ``largest``) at which ``text`` is ``width`` wide."""
    return min(largest, width * 1000 / max(1.0, _bold_width(text, 1000)))


def _literal(text: str) -> str:
    return "(" + _ascii(text).replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)") + ")"


def _text(font: str, size: float, x: float, y: float, text: str) -> str:
    return f"BT /{font} {size:.2f} Tf {x:.2f} {y:.2f} Td {_literal(text)} Tj ET\n"


def _url_lines(url: str, width: float, largest: float, smallest: float) -> tuple[float, list[str]]:
    """The URL in Courier at the largest size that fits ``width``, on one line, else on two
    (split after a ``/``), else as many as needed at ``smallest``."""
    for lines in ([url], _split_after_slash(url)):
        size = min(largest, width * 1000 / (_COURIER_WIDTH * max(len(x) for x in lines)))
        if size >= smallest:
            return size, lines
    per_line = max(1, int(width * 1000 / (_COURIER_WIDTH * smallest)))
    return smallest, [url[i : i + per_line] for i in range(0, len(url), per_line)]


def _split_after_slash(url: str) -> list[str]:
    cut = url.rfind("/", 0, len(url) - 1)
    return [url[: cut + 1], url[cut + 1 :]] if cut > 0 else [url]


def _qr(url: str, x: float, y: float, side: float) -> str:
    """The QR code of ``url`` in a square of ``side`` points at (x, y), quiet zone included."""
    code = segno.make_qr(url, error="m")
    rows = [list(r) for r in code.matrix]
    n = len(rows)
    module = side / (n + 2 * QUIET_MODULES)
    ops = ["0 g\n"]
    for r, row in enumerate(rows):
        top = y + side - (QUIET_MODULES + r) * module
        c = 0
        while c < n:
            if not row[c]:
                c += 1
                continue
            start = c
            while c < n and row[c]:
                c += 1
            left = x + (QUIET_MODULES + start) * module
            ops.append(
                f"{left:.3f} {top - module:.3f} {(c - start) * module:.3f} {module:.3f} re\n"
            )
    ops.append("f\n")
    return "".join(ops)


def _landscape(name: str, url: str, shown: str, w: float, h: float, m: float) -> str:
    side = min(h - 2 * m, w * 0.5)
    ops = [_qr(url, m, (h - side) / 2, side)]
    x = m + side + m * 0.5
    col = w - x - m
    size = _fit_bold(name, col, h * 0.28)
    ops.append(_text("F1", size, x, h - m - size * 0.718, name))
    help_size = _fit_bold(HELP_TEXT, col, min(10.0, size * 0.6))
    ops.append(_text("F1", help_size, x, h - m - size * 0.718 - help_size * 2.0, HELP_TEXT))
    url_size, lines = _url_lines(shown, col, 11.0, 5.0)
    for i, line in enumerate(lines):
        ops.append(_text("F2", url_size, x, m + (len(lines) - 1 - i) * url_size * 1.2, line))
    return "".join(ops)


def _portrait(name: str, url: str, shown: str, w: float, h: float, m: float) -> str:
    col = w - 2 * m
    size = _fit_bold(name, col, w * 0.16)
    name_y = h - m - size * 0.718
    ops = [_text("F1", size, (w - _bold_width(name, size)) / 2, name_y, name)]
    url_size, lines = _url_lines(shown, col, 12.0, 5.0)
    bottom = m + len(lines) * url_size * 1.2
    help_size = _fit_bold(HELP_TEXT, col, 11.0)
    help_y = bottom + help_size * 0.8
    low, high = help_y + help_size * 1.5, name_y - m * 0.5
    side = min(col, high - low)
    ops.append(_qr(url, (w - side) / 2, low + (high - low - side) / 2, side))
    ops.append(_text("F1", help_size, (w - _bold_width(HELP_TEXT, help_size)) / 2, help_y,
                     HELP_TEXT))  # fmt: skip
    for i, line in enumerate(lines):
        ops.append(_text("F2", url_size, (w - _COURIER_WIDTH * url_size / 1000 * len(line)) / 2,
                         m + (len(lines) - 1 - i) * url_size * 1.2, line))  # fmt: skip
    return "".join(ops)


def _pdf(objects: Iterable[bytes]) -> bytes:
    out = bytearray(b"%PDF-1.4\n%\xe2\xe3\xcf\xd3\n")
    offsets = []
    for i, obj in enumerate(objects, start=1):
        offsets.append(len(out))
        out += f"{i} 0 obj\n".encode() + obj + b"\nendobj\n"
    xref = len(out)
    out += f"xref\n0 {len(offsets) + 1}\n0000000000 65535 f \n".encode()
    out += b"".join(f"{o:010d} 00000 n \n".encode() for o in offsets)
    out += (
        f"trailer\n<< /Size {len(offsets) + 1} /Root 1 0 R >>\nstartxref\n{xref}\n%%EOF\n"
    ).encode()
    return bytes(out)


def sticker_pdf(name: str, url: str, size_hmm: tuple[int, int]) -> bytes:
    """The sticker of printer ``name`` whose release page is ``url``, on a page of ``size_hmm``
    (width, height in hundredths of a millimetre)."""
    w, h = size_hmm[0] * _PT_PER_HMM, size_hmm[1] * _PT_PER_HMM
    margin = max(7.0, min(w, h) * 0.05)
    shown = url.split("://", 1)[-1]
    draw = _landscape if w >= h else _portrait
    content = draw(name, url, shown, w, h, margin).encode()
    fonts = "/F1 4 0 R /F2 5 0 R"
    return _pdf(
        [
            b"<< /Type /Catalog /Pages 2 0 R >>",
            b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
            (
                f"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 {w:.2f} {h:.2f}] "
                f"/Resources << /Font << {fonts} >> >> /Contents 6 0 R >>"
            ).encode(),
            b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica-Bold "
            b"/Encoding /WinAnsiEncoding >>",
            b"<< /Type /Font /Subtype /Type1 /BaseFont /Courier /Encoding /WinAnsiEncoding >>",
            f"<< /Length {len(content)} >>\nstream\n".encode() + content + b"\nendstream",
        ]
    )
