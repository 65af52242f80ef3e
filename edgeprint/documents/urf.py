"""Apple raster (URF, ``image/urf``) encoder: ``UNIRAST``, a 32-byte header per page.

The file starts with ``UNIRAST\\0`` and the page count (big-endian uint32); each
page has a 32-byte header — bits per pixel, colour space (0 sGray, 1 sRGB),
width, height and resolution at bytes 0, 1, 12, 16 and 20, the rest zero as
CUPS writes it — followed by its lines in the same compression as PWG raster
(:func:`edgeprint.documents.pwg.compress`). URF has no 1-bit type: W8 is
8-bit sGray (0 black, 255 white), SRGB24 8-bit sRGB.
"""

from __future__ import annotations

import struct

from edgeprint.documents import pwg

SYNC = b"UNIRAST\0"
PAGE_HEADER_BYTES = 32
#: PWG raster type keyword → (bits per pixel, URF colour space).
TYPES = {"sgray_8": (8, 0), "srgb_8": (24, 1)}


def file_header(pages: int) -> bytes:
    """``UNIRAST\\0`` and the page count."""
    return SYNC + struct.pack(">I", pages)


def page_header(setup: pwg.PageSetup) -> bytes:
    if setup.color_space not in TYPES:
        raise ValueError(f"URF has no {setup.color_space}: only {', '.join(TYPES)}")
    bpp, space = TYPES[setup.color_space]
    h = bytearray(PAGE_HEADER_BYTES)
    h[0], h[1] = bpp, space
    struct.pack_into(">III", h, 12, setup.width, setup.height, setup.dpi)
    return bytes(h)


def encode_page(page: pwg.Pixels, setup: pwg.PageSetup) -> bytes:
    """One page: its 32-byte header and its compressed lines."""
    expected = (setup.height, setup.bytes_per_line)
    if page.reshape(page.shape[0], -1).shape != expected:
        raise ValueError(f"page is {page.shape}, the header says {expected} bytes")
    return page_header(setup) + pwg.compress(page, setup.bytes_per_pixel)
