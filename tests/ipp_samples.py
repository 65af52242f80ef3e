"""The sample documents CUPS's ``ipp-everywhere.test`` prints, made here.

The test file names PWG raster files such as
``pwg-raster-samples-300dpi/sgray-8/document-a4-sgray-8-300dpi.pwg`` (the PWG's own
sample set, which Debian does not ship). For every resolution and raster type the queue
claims, this module renders a real one with edgeprint's PWG raster encoder (PDFium, in
the render pool) from a PDF of the right page size and page count. ipptool 2.4.2 checks
that *every* ``FILE`` of a test file is readable while it parses it, even for tests that
``SKIP-IF-NOT-DEFINED`` skips, so the others (resolutions and types the queue does not
claim) exist as empty files: those tests are skipped, and the conformance test asserts it.
"""

from __future__ import annotations

import re
from pathlib import Path

from testbed.pdfs import raw_pdf

#: PWG raster file name → (document, raster type keyword, dpi).
_NAME = re.compile(r"^(.+)-(black-1|cmyk-8|sgray-8|srgb-8|srgb-16)-(\d+)dpi\.pwg$")
#: The documents: (PWG media name, width, height in hundredths of mm, pages, colour).
DOCUMENTS = {
    "color.jpg-4x6": ("na_index-4x6_4x6in", 10160, 15240, 1, True),
    "gray.jpg-4x6": ("na_index-4x6_4x6in", 10160, 15240, 1, False),
    "document-a4": ("iso_a4_210x297mm", 21000, 29700, 2, True),
    "document-letter": ("na_letter_8.5x11in", 21590, 27940, 2, True),
    "onepage-a4": ("iso_a4_210x297mm", 21000, 29700, 1, True),
    "onepage-letter": ("na_letter_8.5x11in", 21590, 27940, 1, True),
}


def referenced_files(test_file: Path) -> list[str]:
    """Every ``FILE`` path of a test file, in order, once each."""
    names = re.findall(r"^\s*FILE\s+(\S+)\s*$", test_file.read_text(), re.M)
    return list(dict.fromkeys(names))


def source_pdf(document: str) -> bytes:
    """A PDF of ``document``'s page size and page count: a coloured band and its name."""
    _media, w_hmm, h_hmm, pages, color = DOCUMENTS[document]
    size = (round(w_hmm * 72 / 2540), round(h_hmm * 72 / 2540))
    return pages_pdf([f"{document} page {i + 1}" for i in range(pages)], size, color)


def pages_pdf(texts: list[str], size: tuple[int, int] = (612, 792), color: bool = False) -> bytes:
    """A PDF with one page (``size`` in points) per text: a band (blue, or grey) and the text."""
    w, h = size
    fill = "0.1 0.4 0.7 rg" if color else "0.4 g"
    kids = " ".join(f"{4 + 2 * i} 0 R" for i in range(len(texts)))
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        f"<< /Type /Pages /Kids [{kids}] /Count {len(texts)} >>".encode(),
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
    ]
    for i, text in enumerate(texts):
        stream = (
            f"{fill} 36 {h - 144} {w - 72} 72 re f 0 g BT /F1 14 Tf 36 {h - 180} Td ({text}) Tj ET"
        )
        objects += [
            f"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 {w} {h}] "
            f"/Resources << /Font << /F1 3 0 R >> >> /Contents {5 + 2 * i} 0 R >>".encode(),
            f"<< /Length {len(stream)} >>\nstream\n{stream}\nendstream".encode(),
        ]
    return raw_pdf(objects)


def sample(name: str) -> tuple[str, str, int] | None:
    """(document, raster type, dpi) of a sample file name, None if it is not one."""
    m = _NAME.match(name)
    if m is None or m.group(1) not in DOCUMENTS:
        return None
    return m.group(1), m.group(2).replace("-", "_"), int(m.group(3))
