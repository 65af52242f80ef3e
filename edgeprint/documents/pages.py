"""Keep only some pages of a PDF (IPP ``page-ranges``, RFC 8011 §5.2.7), with pypdf.

Pure and blocking: call it off the event loop. The result is a new PDF holding the
selected pages in document order; nothing is rendered, so what prints is the
client's own page content.
"""

from __future__ import annotations

import io
from collections.abc import Sequence

import pypdf


class NoPageSelected(ValueError):
    """The ranges select no page of the document (which has ``total`` pages)."""

    def __init__(self, total: int) -> None:
        super().__init__(f"page-ranges select no page of this {total}-page document")
        self.total = total


def selected(ranges: Sequence[tuple[int, int]], total: int) -> list[int]:
    """The 0-based page indexes that ``ranges`` (1-based, inclusive) select in a ``total``-page
    document, in document order; ranges beyond the last page select nothing."""
    return [i for i in range(total) if any(lo <= i + 1 <= hi for lo, hi in ranges)]


def cut(pdf: bytes, ranges: Sequence[tuple[int, int]]) -> bytes | None:
    """``pdf`` with only the pages ``ranges`` select; None when pypdf cannot read it (the
    submission check then says why). Raises NoPageSelected."""
    try:
        reader = pypdf.PdfReader(io.BytesIO(pdf), strict=False)
        total = len(reader.pages)
    except Exception:  # pypdf raises many kinds on broken input; the PDF check reports it
        return None
    keep = selected(ranges, total)
    if not keep:
        raise NoPageSelected(total)
    if len(keep) == total:
        return pdf
    writer = pypdf.PdfWriter()
    for i in keep:
        writer.add_page(reader.pages[i])
    out = io.BytesIO()
    writer.write(out)
    return out.getvalue()
