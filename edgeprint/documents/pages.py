"""Keep only some pages of a PDF (IPP ``page-ranges``, RFC 8011 §5.2.7), with pypdf.

Pure and blocking: call it off the event loop. The result is a new PDF holding the
selected pages in document order; nothing is rendered, so what prints is the
client's own page content.
"""

from __future__ import annotations

import io
from collections.abc import Sequence

from edgeprint import errors


def selected(ranges: Sequence[tuple[int, int]], total: int) -> list[int]:
    """The 0-based page indexes that ``ranges`` (1-based, inclusive) select in a ``total``-page
    document, in document order; ranges beyond the last page select nothing."""
    return [i for i in range(total) if any(lo <= i + 1 <= hi for lo, hi in ranges)]


def cut(pdf: bytes, ranges: Sequence[tuple[int, int]], max_pages: int) -> bytes | None:
    """``pdf`` with only the pages ``ranges`` select; None when it does not pass the
    submission check (``check.count_pages``: unreadable, encrypted, a hostile page tree,
    more than ``max_pages``), which then says why. Raises errors.NoPageSelected, and
    errors.DocumentRejected when pypdf cannot take the pages out."""
    import pypdf  # here, not at start-up: most appliances never cut pages (issue 28)

    from edgeprint.documents import check

    try:
        total = check.count_pages(io.BytesIO(pdf), max_pages)
    except errors.DocumentRejected:
        return None
    keep = selected(ranges, total)
    if not keep:
        raise errors.NoPageSelected(total)
    if len(keep) == total:
        return pdf
    try:
        reader = pypdf.PdfReader(io.BytesIO(pdf), strict=False)
        writer = pypdf.PdfWriter()
        for i in keep:
            writer.add_page(reader.pages[i])
        out = io.BytesIO()
        writer.write(out)
    except Exception as exc:  # pypdf raises many kinds on broken input
        raise errors.DocumentRejected(
            "document-unreadable",
            f"the pages page-ranges selects cannot be taken out of this PDF "
            f"({type(exc).__name__}); nothing was stored",
        ) from None
    return out.getvalue()
