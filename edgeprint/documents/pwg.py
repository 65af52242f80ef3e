"""PWG Raster encoder (PWG 5102.4): ``RaS2``, a 1796-byte header per page, compressed lines.

A page is a numpy array of rows top to bottom: ``(height, width)`` bytes for
``sgray_8`` (0 black, 255 white), ``(height, width, 3)`` for ``srgb_8``, and for
``black_1`` ``(height, ceil(width / 8))`` bytes of packed bits (1 black, MSB
first). Each line is written as a repeat count (the line and the next N-1 equal
ones, N ≤ 256) and PackBits-like runs of whole pixels: a code 0..127 repeats the
next pixel code+1 times, a code 129..255 is followed by 257-code literal pixels
(PWG 5102.4 §4.3; the same scheme as CUPS's ``cups_raster_write``). Code 128
is never written.

The runs are found with numpy over the whole page; Python only walks the runs
of three pixels or more and the literal stretches between them (a 4x3 in badge
at 300 dpi encodes in a few milliseconds). Apple raster (:mod:`urf`) shares
:func:`compress`.
"""

from __future__ import annotations

import itertools
import struct
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

SYNC = b"RaS2"
HEADER_BYTES = 1796

#: PWG 5102.4 ColorSpace values (the CUPS cups_cspace_t numbers).
COLOR_SPACE = {"black_1": 3, "sgray_8": 18, "srgb_8": 19}
#: bits per colour, colours per pixel.
LAYOUT = {"black_1": (1, 1), "sgray_8": (8, 1), "srgb_8": (8, 3)}

#: Longest run one code can say, and most equal lines one repeat byte can say.
_MAX_RUN = 128
_MAX_LINES = 256
#: Runs shorter than this are written as literals (a run code for 2 pixels saves nothing).
_MIN_RUN = 3

Pixels = npt.NDArray[np.uint8]


@dataclass(frozen=True)
class PageSetup:
    """What a page header says besides the pixels."""

    color_space: str  # black_1, sgray_8, srgb_8
    dpi: int
    width: int  # pixels
    height: int  # lines
    media_name: str = ""
    total_pages: int = 0  # 0: unknown (PWG 5102.4 TotalPageCount)

    @property
    def bytes_per_line(self) -> int:
        bits, colors = LAYOUT[self.color_space]
        return (self.width * bits * colors + 7) // 8

    @property
    def bytes_per_pixel(self) -> int:
        """Compression unit: whole pixels, or bytes for 1-bit pixels."""
        bits, colors = LAYOUT[self.color_space]
        return max(1, bits * colors // 8)

    @property
    def page_size_pt(self) -> tuple[int, int]:
        return round(self.width * 72 / self.dpi), round(self.height * 72 / self.dpi)


def _string(text: str) -> bytes:
    return text.encode("ascii", "replace")[:63].ljust(64, b"\0")


def page_header(setup: PageSetup) -> bytes:
    """The 1796-byte PWG page header (big-endian; unused fields zero)."""
    bits, colors = LAYOUT[setup.color_space]
    w_pt, h_pt = setup.page_size_pt
    h = bytearray(HEADER_BYTES)
    h[0:64] = _string("PwgRaster")  # MediaClass
    be = struct.pack_into
    be(">I", h, 340, 1)  # NumCopies (copies are the job's copies attribute)
    be(">II", h, 276, setup.dpi, setup.dpi)  # HWResolution
    be(">II", h, 352, w_pt, h_pt)  # PageSize, points
    be(">II", h, 372, setup.width, setup.height)  # Width, Height
    be(">III", h, 384, bits, bits * colors, setup.bytes_per_line)
    be(">II", h, 396, 0, COLOR_SPACE[setup.color_space])  # ColorOrder chunky, ColorSpace
    be(">I", h, 420, colors)  # NumColors
    be(">III", h, 452, setup.total_pages, 1, 1)  # TotalPageCount, CrossFeed/FeedTransform
    be(">IIII", h, 464, 0, 0, setup.width, setup.height)  # ImageBox left, top, right, bottom
    be(">I", h, 480, 0xFFFFFF)  # AlternatePrimary (white)
    h[1732:1796] = _string(setup.media_name)  # PageSizeName
    return bytes(h)


def compress(page: Pixels, bytes_per_pixel: int) -> bytes:
    """The lines of ``page`` (height x bytes-per-line, C order) in PWG/URF line compression."""
    height = page.shape[0]
    rows = np.ascontiguousarray(page).reshape(height, -1)
    if rows.shape[1] % bytes_per_pixel:
        raise ValueError("a line is not a whole number of pixels")
    width = rows.shape[1] // bytes_per_pixel
    px = rows.reshape(height, width, bytes_per_pixel)
    # First line of each group of equal lines (a group holds at most 256).
    same = np.zeros(height, dtype=bool)
    if height > 1:
        same[1:] = (rows[1:] == rows[:-1]).all(axis=1)
    heads = [*np.flatnonzero(~same).tolist(), height]  # same[0] is False: line 0 heads
    firsts: list[int] = []
    for head, end in itertools.pairwise(heads):
        firsts.extend(range(head, end, _MAX_LINES))
    counts = np.diff(np.array([*firsts, height]))
    unique = px[firsts]  # (U, width, bpp)
    # Runs of equal pixels on each unique line: starts and lengths.
    starts_mask = np.ones((len(firsts), width), dtype=bool)
    if width > 1:
        starts_mask[:, 1:] = (unique[:, 1:] != unique[:, :-1]).any(axis=2)
    line_idx, run_start = np.nonzero(starts_mask)
    run_end = np.empty_like(run_start)
    run_end[:-1] = run_start[1:]
    new_line = np.empty(len(line_idx), dtype=bool)
    new_line[:-1] = line_idx[1:] != line_idx[:-1]
    new_line[-1:] = True
    run_end[new_line] = width
    long = (run_end - run_start) >= _MIN_RUN
    long_line = line_idx[long].tolist()
    long_start = run_start[long].tolist()
    long_end = run_end[long].tolist()

    out = bytearray()
    k = 0
    n_long = len(long_line)
    for u, count in enumerate(counts.tolist()):
        line = unique[u].tobytes()
        out.append(count - 1)
        pos = 0
        while k < n_long and long_line[k] == u:
            start, end = long_start[k], long_end[k]
            _literal(out, line, pos, start, bytes_per_pixel)
            value = line[start * bytes_per_pixel : (start + 1) * bytes_per_pixel]
            left = end - start
            while left > 0:
                n = min(left, _MAX_RUN)
                out.append(n - 1)
                out += value
                left -= n
            pos = end
            k += 1
        _literal(out, line, pos, width, bytes_per_pixel)
    return bytes(out)


def _literal(out: bytearray, line: bytes, start: int, end: int, bpp: int) -> None:
    while start < end:
        n = min(end - start, _MAX_RUN)
        out.append(0 if n == 1 else 257 - n)  # one pixel: a "run" of one
        out += line[start * bpp : (start + n) * bpp]
        start += n


def encode_page(page: Pixels, setup: PageSetup) -> bytes:
    """One page: its header and its compressed lines (without the file's ``RaS2``)."""
    expected = (setup.height, setup.bytes_per_line)
    if page.reshape(page.shape[0], -1).shape != expected:
        raise ValueError(f"page is {page.shape}, the header says {expected} bytes")
    return page_header(setup) + compress(page, setup.bytes_per_pixel)
