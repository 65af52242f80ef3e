"""PDF checks at submission, with pypdf: readable, not encrypted, a sane page count.

Printers are not trusted to cope with a broken or encrypted PDF: such a job
would fail at the printer (or print garbage) long after the kiosk was told
"accepted". :func:`count_pages` costs ~0.15 ms for a small badge; the service runs it
in a worker thread for documents over 1 MiB.
"""

from __future__ import annotations

import logging
from typing import BinaryIO

import pypdf

from edgeprint import errors

# pypdf logs every repair it makes to a broken file; a hostile upload must not flood
# the appliance log (the 422 answer carries the reason).
logging.getLogger("pypdf").setLevel(logging.ERROR)

_DETAIL_CHARS = 200


def count_pages(pdf: BinaryIO, max_pages: int) -> int:
    """Pages of the PDF in the readable binary file ``pdf`` (ISO 32000 page tree, via pypdf).

    Raises errors.DocumentRejected: ``document-encrypted`` (needs a password
    or is encrypted at all: printers cannot be given the password),
    ``document-unreadable`` (pypdf cannot parse it, or it has no pages),
    ``too-many-pages`` (more than ``max_pages``).
    """
    try:
        reader = pypdf.PdfReader(pdf, strict=False)
        encrypted = reader.is_encrypted
        pages = 0 if encrypted else len(reader.pages)
    except Exception as exc:  # pypdf raises many kinds on hostile input; all mean "broken"
        reason = f"{type(exc).__name__}: {exc}"[:_DETAIL_CHARS]
        raise errors.DocumentRejected(
            "document-unreadable", f"the PDF cannot be read ({reason}); nothing was stored"
        ) from None
    if encrypted:
        raise errors.DocumentRejected(
            "document-encrypted",
            "the PDF is encrypted; printers cannot open it — send it without encryption",
        )
    if pages == 0:
        raise errors.DocumentRejected("document-unreadable", "the PDF has no pages")
    if pages > max_pages:
        raise errors.DocumentRejected(
            "too-many-pages",
            f"the PDF has {pages} pages; at most {max_pages} are accepted "
            "(server.max_document_pages)",
        )
    return pages
