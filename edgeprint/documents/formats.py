"""The document formats the IPP queues take, and which of them are converted on the way in.

A raster or JPEG (AirPrint, Mopria, IPP Everywhere clients) is kept as a PDF of its
pages, so it is an ordinary job that reaches any printer in a format that printer takes;
a raw label language (ZPL) is kept as it is; ``application/octet-stream`` is told by its
first bytes (:func:`sniff`). Pure: the conversion itself is the render pool's.
"""

from __future__ import annotations

from edgeprint.documents import ladder, zpl

OCTET_STREAM = "application/octet-stream"
#: Formats kept as a PDF of their pages when a client sends them (AirPrint, Mopria, IPP Everywhere).
CONVERTED_FORMATS = (ladder.PWG_RASTER, ladder.URF, ladder.JPEG)
#: issue 23 (zpl): raw label languages a queue takes as they are (checked, sent unchanged to
#: a printer that lists them; never converted, never sniffed).
RAW_FORMATS = (zpl.ZPL,)
#: Formats a queue takes (octet-stream: sniffed).
DOCUMENT_FORMATS = (ladder.PDF, *CONVERTED_FORMATS, *RAW_FORMATS, OCTET_STREAM)


def sniff(fmt: str, data: bytes) -> str:
    """The format of a document: as declared, or (octet-stream) by its first bytes."""
    if fmt != OCTET_STREAM:
        return fmt
    if data.startswith(b"RaS2"):
        return ladder.PWG_RASTER
    if data.startswith(b"UNIRAST"):
        return ladder.URF
    if data.startswith(b"\xff\xd8\xff"):
        return ladder.JPEG
    return fmt  # not one edgeprint knows: the PDF check refuses it


def converted(fmt: str) -> bool:
    """True when a document sent as ``fmt`` may need making into a PDF (octet-stream may)."""
    return fmt in CONVERTED_FORMATS or fmt == OCTET_STREAM
