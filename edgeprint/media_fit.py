"""Does a badge fit the stock a printer has ready? (pure; a leaf)

Preflight's own small rule, kept apart so that the stock-aware routing's
``edgeprint.stock`` can replace it: a page fits ready media of the same size
within :data:`TOLERANCE_HMM` (1.5 mm) on each side, either way round (a 4x3 in
badge fits 3x4 in labels: the printer rotates it). Larger cut-sheet stock
(letter, A4) takes a smaller page scaled or centred, as the routing's default
``fit`` for sheet stock says: preflight warns of it rather than failing. Sizes
are in hundredths of a millimetre, as IPP's media-size.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

#: Hundredths of millimetre per inch, and per PostScript point (PDF page sizes).
HMM_PER_INCH = 2540
HMM_PER_POINT = 2540 / 72
#: How far a page may differ from the ready stock, per side, and still fit it.
TOLERANCE_HMM = 150

#: PWG 5101.1 self-describing media name: ``class_name_WxHunit`` (``oe_4x3-label_4x3in``).
MEDIA_NAME = re.compile(r"^[a-z0-9-]+_[a-z0-9.-]+_(\d+(?:\.\d+)?)x(\d+(?:\.\d+)?)(in|mm)$")
#: A size as GET /v1/printers shows ready media: ``101.6x76.2mm``, alone or in brackets
#: after the name (``oe_4x3-label_4x3in (101.6x76.2mm)``).
_SHOWN_SIZE = re.compile(r"(?:^|\()(\d+(?:\.\d+)?)x(\d+(?:\.\d+)?)mm\)?$")


@dataclass(frozen=True)
class Size:
    """A page or media size in hundredths of a millimetre; ``name`` as given, if any."""

    width_hmm: int
    height_hmm: int
    name: str | None = None

    def inches(self) -> str:
        """``4x3 in`` (as a person at a badge desk says it)."""
        w, h = (round(v / HMM_PER_INCH, 2) for v in (self.width_hmm, self.height_hmm))
        return f"{w:g}x{h:g} in"

    def __str__(self) -> str:
        return f"{self.name} ({self.inches()})" if self.name else self.inches()


def from_media_name(name: str) -> Size | None:
    """The size a PWG self-describing media name states, or None for any other text."""
    m = MEDIA_NAME.match(name)
    if m is None:
        return None
    per_unit = HMM_PER_INCH if m.group(3) == "in" else 100
    w, h = (round(float(m.group(i)) * per_unit) for i in (1, 2))
    if w <= 0 or h <= 0:
        return None
    return Size(w, h, name)


def from_points(width_pt: float, height_pt: float) -> Size:
    """A PDF page's size (PostScript points)."""
    return Size(round(width_pt * HMM_PER_POINT), round(height_pt * HMM_PER_POINT))


def from_shown(text: str) -> Size | None:
    """A ready medium as GET /v1/printers shows it (``name (WxHmm)``, ``WxHmm`` or a PWG
    name); None when no size can be read from it (a printer's garbage name)."""
    m = _SHOWN_SIZE.search(text.strip())
    name = text.split(" (", 1)[0].strip() if " (" in text else None
    if m is not None:
        w, h = (round(float(m.group(i)) * 100) for i in (1, 2))
        if w > 0 and h > 0:
            return Size(w, h, name)
    return from_media_name(text.strip())


def fits(page: Size, media: Size, tolerance_hmm: int = TOLERANCE_HMM) -> bool:
    """The page is the media's size within the tolerance, either way round."""

    def close(a: int, b: int) -> bool:
        return abs(a - b) <= tolerance_hmm

    same = close(page.width_hmm, media.width_hmm) and close(page.height_hmm, media.height_hmm)
    turned = close(page.width_hmm, media.height_hmm) and close(page.height_hmm, media.width_hmm)
    return same or turned


#: PWG media classes of cut-sheet stock (letter, A4, envelopes…): an office printer scales
#: or centres a smaller page on them (the routing's default ``fit`` for sheet stock).
SHEET_CLASSES = frozenset({"na", "iso", "jis", "jpn", "prc", "roc", "om"})


def is_sheet(media: Size) -> bool:
    """Cut-sheet stock by its PWG name (``na_letter_…``, ``iso_a4_…``); unnamed sizes and
    labels or rolls (``oe_4x3-label_…``, ``roll_…``) are not."""
    if not media.name:
        return False
    klass, _, rest = media.name.partition("_")
    return klass in SHEET_CLASSES and "label" not in rest and "roll" not in rest


def larger(page: Size, media: Size) -> bool:
    """The page fits inside the media, either way round."""
    pw, ph, mw, mh = page.width_hmm, page.height_hmm, media.width_hmm, media.height_hmm
    return (pw <= mw and ph <= mh) or (pw <= mh and ph <= mw)


def sheet_fitting(page: Size, ready: list[str]) -> list[str]:
    """Those of ``ready`` that are sheet stock larger than the page (scaled or centred)."""
    out = []
    for text in ready:
        media = from_shown(text)
        if media is not None and is_sheet(media) and larger(page, media):
            out.append(text)
    return out


def fitting(page: Size, ready: list[str]) -> list[str]:
    """Those of ``ready`` (as GET /v1/printers shows them) the page fits."""
    out = []
    for text in ready:
        media = from_shown(text)
        if media is not None and fits(page, media):
            out.append(text)
    return out


Fit = Literal["exact", "sheet", "none"]


def judge(page: Size, ready: list[str]) -> Fit:
    """``exact``: stock of the page's size is ready; ``sheet``: only larger cut-sheet stock
    (the page is scaled or centred on it); ``none``: wrong stock."""
    if fitting(page, ready):
        return "exact"
    return "sheet" if sheet_fitting(page, ready) else "none"
