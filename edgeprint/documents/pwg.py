"""PWG Raster encoder (PWG 5102.4): ``RaS2``, a 1796-byte header per page, compressed lines.

A page is a numpy array of rows top to bottom: ``(height, width)`` bytes for
``sgray_8`` (0 black, 255 white), ``(height, width, 3)`` for ``srgb_8``, and for
``black_1`` ``(height, ceil(width / 8))`` bytes of packed bits (1 black, MSB
first). Each line is written as a repeat count (the line and the next N-1 equal
ones, N ≤ 256) and PackBits-like runs of whole pixels: a code 0..127 repeats the
next pixel code+1 times, a code 129..255 is followed by 257-code literal pixels
(PWG 5102.4 §4.3; the same scheme as CUPS's ``cups_raster_write``). Code 128
is never written.

Runs of three pixels or more become run codes, the pixels between them
literal codes. Everything is computed with numpy, in bands of lines of about
512 KiB (bounded temporaries), without a Python loop per run: an A4 page of
text at 600 dpi encodes in about a tenth of a second. Apple raster
(:mod:`urf`) shares :func:`compress`.
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
#: Lines are encoded in bands of about this many bytes (bounded temporaries).
_BAND_BYTES = 1 << 19

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
    line_bytes = rows.shape[1]
    if line_bytes % bytes_per_pixel or line_bytes == 0:
        raise ValueError("a line is not a whole, non-zero number of pixels")
    band = max(1, _BAND_BYTES // line_bytes)
    # Lines equal to the one before them, found band by band (no page-sized temporary).
    same = np.zeros(height, dtype=bool)
    for a in range(1, height, band):
        b = min(height, a + band)
        same[a:b] = (rows[a:b] == rows[a - 1 : b - 1]).all(axis=1)
    heads = [*np.flatnonzero(~same).tolist(), height]  # same[0] is False: line 0 heads
    firsts: list[int] = []
    for head, end in itertools.pairwise(heads):
        firsts.extend(range(head, end, _MAX_LINES))  # at most 256 lines per repeat byte
    counts = np.diff(np.array([*firsts, height]))
    out = []
    for a in range(0, len(firsts), band):
        lines = np.array(firsts[a : a + band])
        out.append(_encode_lines(rows[lines], counts[a : a + band], bytes_per_pixel))
    return b"".join(out)


def _excl_cumsum(n: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]:
    out = np.zeros(len(n), dtype=np.int64)
    np.cumsum(n[:-1], out=out[1:])
    return out


def _ranges(starts: npt.NDArray[np.int64], lengths: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]:
    """The concatenation of range(start, start + length) for each pair."""
    total = int(lengths.sum())
    return np.repeat(starts - _excl_cumsum(lengths), lengths) + np.arange(total, dtype=np.int64)


def _encode_lines(lines: Pixels, counts: npt.NDArray[np.int64], bpp: int) -> bytes:
    """Lines (each written once, with its repeat count) as PackBits-like runs, all in numpy.

    Runs of at least _MIN_RUN equal pixels become run codes; the pixels between
    them literal codes; both are cut in pieces of at most 128 pixels.
    """
    n_lines, line_bytes = lines.shape
    width = line_bytes // bpp
    px = lines.reshape(n_lines, width, bpp)
    starts = np.ones((n_lines, width), dtype=bool)
    if width > 1:
        starts[:, 1:] = (px[:, 1:] != px[:, :-1]).any(axis=2)
    run_line, run_start = (a.astype(np.int64) for a in np.nonzero(starts))
    last = np.ones(len(run_line), dtype=bool)  # last run of its line
    last[:-1] = run_line[1:] != run_line[:-1]
    first = np.ones(len(run_line), dtype=bool)
    first[1:] = last[:-1]
    run_end = np.empty_like(run_start)
    run_end[:-1] = run_start[1:]
    run_end[last] = width
    long = (run_end - run_start) >= _MIN_RUN
    short = ~long
    # Consecutive short runs of a line make one literal stretch.
    short_before = np.zeros_like(short)
    short_before[1:] = short[:-1]
    short_after = np.zeros_like(short)
    short_after[:-1] = short[1:]
    lit_begin = short & (first | ~short_before)
    lit_finish = short & (last | ~short_after)
    seg = long | lit_begin
    seg_line, seg_start, seg_run = run_line[seg], run_start[seg], long[seg]
    seg_end = run_end[seg]
    seg_end[~seg_run] = run_end[lit_finish]
    # Pieces of at most 128 pixels.
    seg_len = seg_end - seg_start
    pieces = (seg_len + _MAX_RUN - 1) // _MAX_RUN
    which = np.repeat(np.arange(len(seg_len)), pieces)
    k = np.arange(int(pieces.sum()), dtype=np.int64) - np.repeat(_excl_cumsum(pieces), pieces)
    p_line, p_run = seg_line[which], seg_run[which]
    p_start = seg_start[which] + k * _MAX_RUN
    p_len = np.minimum(_MAX_RUN, seg_end[which] - p_start)
    p_data = np.where(p_run, bpp, p_len * bpp)
    # Where each piece goes: after the pieces before it and one repeat byte per line so far.
    p_pos = _excl_cumsum(1 + p_data) + p_line + 1
    p_first = np.ones(len(p_line), dtype=bool)
    p_first[1:] = p_line[1:] != p_line[:-1]
    out = np.empty(int((1 + p_data).sum()) + n_lines, dtype=np.uint8)
    out[p_pos[p_first] - 1] = counts - 1
    out[p_pos] = np.where(p_run, p_len - 1, np.where(p_len == 1, 0, 257 - p_len))
    flat = lines.reshape(-1)
    src = p_line * line_bytes + p_start * bpp
    run_src, run_dst = src[p_run], p_pos[p_run] + 1
    for b in range(bpp):
        out[run_dst + b] = flat[run_src + b]
    lit = ~p_run
    dst = _ranges(p_pos[lit] + 1, p_data[lit])
    out[dst] = flat[dst + np.repeat(src[lit] - (p_pos[lit] + 1), p_data[lit])]
    return out.tobytes()


def encode_page(page: Pixels, setup: PageSetup) -> bytes:
    """One page: its header and its compressed lines (without the file's ``RaS2``)."""
    expected = (setup.height, setup.bytes_per_line)
    if page.reshape(page.shape[0], -1).shape != expected:
        raise ValueError(f"page is {page.shape}, the header says {expected} bytes")
    return page_header(setup) + compress(page, setup.bytes_per_pixel)
