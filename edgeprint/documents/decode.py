"""A decoder of PWG raster and Apple raster (URF) files. Runs in render workers (numpy).

It reads what IPP clients send to edgeprint's own queues (issue 14) and is the
tests' independent check of our encoders. Written from PWG 5102.4 and the CUPS
reader's behaviour, independently of the encoders (``pwg.py``, ``urf.py``), so
a shared mistake is unlikely: it reads the header fields by their offsets and
expands the line compression code by code, refusing anything malformed (short
data, a run past the line end, code 128) with :class:`Malformed`.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt


@dataclass(frozen=True)
class Page:
    """One decoded page: the header fields tests look at, and rows of bytes."""

    width: int
    height: int
    dpi: int
    bits_per_pixel: int
    color_space: int  # PWG ColorSpace (3 black, 18 sgray, 19 srgb) or URF (0 sgray, 1 srgb)
    bytes_per_line: int
    page_size_pt: tuple[int, int]
    total_pages: int
    media_name: str
    rows: npt.NDArray[np.uint8]  # (height, bytes_per_line)


class Malformed(ValueError):
    """The raster stream breaks the format."""


def _lines(data: bytes, pos: int, height: int, bpl: int, unit: int) -> tuple[np.ndarray, int]:
    rows = np.empty((height, bpl), dtype=np.uint8)
    y = 0
    while y < height:
        if pos >= len(data):
            raise Malformed(f"data ends at line {y} of {height}")
        repeat = data[pos] + 1
        pos += 1
        line = bytearray()
        while len(line) < bpl:
            if pos >= len(data):
                raise Malformed(f"data ends inside line {y}")
            code = data[pos]
            pos += 1
            if code == 128:
                raise Malformed(f"code 128 in line {y}")
            if code < 128:
                px = data[pos : pos + unit]
                pos += unit
                line += px * (code + 1)
            else:
                n = (257 - code) * unit
                line += data[pos : pos + n]
                pos += n
            if len(line) > bpl:
                raise Malformed(f"line {y} runs past its {bpl} bytes")
        for _ in range(min(repeat, height - y)):
            rows[y] = np.frombuffer(bytes(line), dtype=np.uint8)
            y += 1
    return rows, pos


def decode_pwg(data: bytes) -> list[Page]:
    """Every page of a PWG raster stream (``RaS2``)."""
    if data[:4] != b"RaS2":
        raise Malformed(f"sync word {data[:4]!r}, not RaS2")
    pos, pages = 4, []
    while pos < len(data):
        h = data[pos : pos + 1796]
        if len(h) < 1796:
            raise Malformed("short page header")
        if h[:10] != b"PwgRaster\0":
            raise Malformed(f"MediaClass {h[:10]!r}")

        def u32(off: int, h: bytes = h) -> int:
            return int(struct.unpack_from(">I", h, off)[0])

        width, height, bpc, bpp, bpl = u32(372), u32(376), u32(384), u32(388), u32(392)
        if bpl != (width * bpp + 7) // 8:
            raise Malformed(f"BytesPerLine {bpl} for {width} pixels of {bpp} bits")
        rows, pos = _lines(data, pos + 1796, height, bpl, max(1, bpp // 8))
        pages.append(
            Page(
                width,
                height,
                u32(276),
                bpp,
                u32(400),
                bpl,
                (u32(352), u32(356)),
                u32(452),
                h[1732:1796].rstrip(b"\0").decode(),
                rows,
            )
        )
        del bpc
    return pages


def decode_urf(data: bytes) -> list[Page]:
    """Every page of an Apple raster stream (``UNIRAST``); checks the page count."""
    if data[:8] != b"UNIRAST\0":
        raise Malformed(f"sync {data[:8]!r}, not UNIRAST")
    count = struct.unpack_from(">I", data, 8)[0]
    pos, pages = 12, []
    while pos < len(data):
        h = data[pos : pos + 32]
        if len(h) < 32:
            raise Malformed("short page header")
        bpp, space = h[0], h[1]
        width, height, dpi = struct.unpack_from(">III", h, 12)
        bpl = width * bpp // 8
        rows, pos = _lines(data, pos + 32, height, bpl, max(1, bpp // 8))
        size = (width * 72 // dpi, height * 72 // dpi)
        pages.append(Page(width, height, dpi, bpp, space, bpl, size, count, "", rows))
    if count and count != len(pages):
        raise Malformed(f"header says {count} pages, stream has {len(pages)}")
    return pages


def gray(page: Page) -> npt.NDArray[np.uint8]:
    """The page as 8-bit grey, 0 black: black_1 unpacked, sRGB averaged."""
    if page.bits_per_pixel == 1:
        bits = np.unpackbits(page.rows, axis=1)[:, : page.width]
        return np.where(bits == 1, 0, 255).astype(np.uint8)
    if page.bits_per_pixel == 24:
        rgb = page.rows.reshape(page.height, page.width, 3).astype(np.uint16)
        grey: npt.NDArray[np.uint8] = (rgb.sum(axis=2) // 3).astype(np.uint8)
        return grey
    return np.asarray(page.rows[:, : page.width], dtype=np.uint8)
