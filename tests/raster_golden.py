"""Ghostscript as the reference rasteriser, and how close two rasterisers must be.

Pages are compared after a 3x3 box blur: at most a fraction ``differing`` of
the pixels may differ by more than ``LEVELS`` grey levels, the amount of ink
(pixels darker than mid-grey) must agree within ``ink``, and the inked area's
bounding box within ``bbox_px`` pixels. A wrong orientation, offset,
inversion, scale or colour order fails all three. Two tolerances, for two
reasons:

- ``SHAPES`` (rules, fills, curves): PDFium and Ghostscript differ only in the
  anti-aliased coverage of edge pixels and in rounding a fill's grey (0.3 g is
  76 or 77): measured 0 % differing after the blur (0.03 % of raw pixels by
  more than 48 levels) and ink within 1.7 % on an sRGB channel, so the bound
  is 0.05 %, ink 2.5 %, bounding box 1 pixel.
- ``TEXT``: a non-embedded Helvetica is substituted by each renderer with its
  own font (Ghostscript: URW Nimbus Sans; PDFium: its built-in sans), so glyph
  shapes and advance widths differ: measured 0.7 % differing and up to 10 %
  ink on a badge, 1.8 % on 11 pt text at 100 dpi; bound 2.5 %, ink 15 %, 6 px.
"""

from __future__ import annotations

import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import numpy.typing as npt
import pytest

from tests.rig_fixtures import in_ci

LEVELS = 48


@dataclass(frozen=True)
class Tolerance:
    differing: float
    ink: float
    bbox_px: int


SHAPES = Tolerance(differing=0.0005, ink=0.025, bbox_px=1)
TEXT = Tolerance(differing=0.025, ink=0.15, bbox_px=6)

#: cupsColorSpace / cupsBitsPerColor for Ghostscript's CUPS raster devices.
GS_TYPES = {"black_1": (3, 1), "sgray_8": (18, 8), "srgb_8": (19, 8)}


def require_gs() -> str:
    gs = shutil.which("gs")
    if gs is not None:
        return gs
    why = "Ghostscript not found: install the Debian package ghostscript"
    if in_ci():
        pytest.fail(f"{why}; CI is set, so this is a failure, not a skip", pytrace=False)
    pytest.skip(why)


def ghostscript(pdf: Path, device: str, color_space: str, dpi: int) -> bytes:
    """The PDF rendered by Ghostscript's ``pwgraster`` or ``appleraster`` device."""
    space, bits = GS_TYPES[color_space]
    out = pdf.with_suffix(f".{device}.{color_space}.{dpi}")
    subprocess.run(
        [require_gs(), "-q", "-dBATCH", "-dNOPAUSE", "-dSAFER", f"-sDEVICE={device}",
         f"-r{dpi}", "-dTextAlphaBits=4", "-dGraphicsAlphaBits=4", f"-dcupsColorSpace={space}", f"-dcupsBitsPerColor={bits}",
         f"-sOutputFile={out}", str(pdf)],
        check=True, capture_output=True, timeout=60,
    )  # fmt: skip
    return out.read_bytes()


def _blur(a: npt.NDArray[np.uint8]) -> npt.NDArray[np.float64]:
    p = np.pad(a.astype(np.float64), 1, mode="edge")
    h, w = a.shape
    return sum(p[dy : dy + h, dx : dx + w] for dy in range(3) for dx in range(3)) / 9


def _bbox(ink: npt.NDArray[np.bool_]) -> tuple[int, int, int, int]:
    ys, xs = np.nonzero(ink)
    return int(ys.min()), int(ys.max()), int(xs.min()), int(xs.max())


def assert_close(
    ours: npt.NDArray[np.uint8], ref: npt.NDArray[np.uint8], tol: Tolerance
) -> dict[str, float]:
    """Grey pages ``ours`` and ``ref`` agree within ``tol``; returns the figures."""
    assert abs(ours.shape[0] - ref.shape[0]) <= 1
    assert abs(ours.shape[1] - ref.shape[1]) <= 1
    h, w = min(ours.shape[0], ref.shape[0]), min(ours.shape[1], ref.shape[1])
    a, b = ours[:h, :w], ref[:h, :w]
    differing = float((np.abs(_blur(a) - _blur(b)) > LEVELS).mean())
    ink_a, ink_b = a < 128, b < 128
    assert ink_b.any(), "the reference page is blank"
    ratio = abs(int(ink_a.sum()) - int(ink_b.sum())) / int(ink_b.sum())
    box_a, box_b = _bbox(ink_a), _bbox(ink_b)
    figures = {"differing": differing, "ink_ratio": ratio}
    assert differing <= tol.differing, figures
    assert ratio <= tol.ink, figures
    assert max(abs(x - y) for x, y in zip(box_a, box_b, strict=True)) <= tol.bbox_px, (box_a, box_b)
    return figures
