"""Stock: does a job's page size fit the media a printer has ready (pure, a leaf).

A job's pages are measured at submission (``documents.check``) into a :class:`PageSizes`:
the smallest and largest short edge and long edge over all its pages, in hundredths of a
millimetre (IPP's unit). Orientation is not kept: a printer may rotate a page, so only
the two edges matter. A printer's ready media (``media-col-ready``, ``media-ready``, or
``[[printers]] media`` when it reports none) become :class:`Stock`.

How a page may meet a stock (``[[printers]] fit``):

- ``exact``: the stock is the page's size, within the tolerance, every page of it;
- ``center``: the stock is at least the page's size (within the tolerance): printed at
  its own size on larger stock;
- ``scale``: any stock: the printer scales the page to it, as office printers do.

The default is ``exact`` for label and roll stock (a 4×6 in roll where the badge is
4×3 in is the wrong stock) and ``scale`` for sheet stock (letter, A4, …), so office
printers keep printing every size. A pool prefers an exact fit over any other: a job a
healthy peer fits exactly is left to that peer (``store.jobs`` turns this into the
claim's condition). A printer whose stock is unknown (it reports none and none is
configured) takes any size, as before stock was read.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal

Fit = Literal["exact", "center", "scale"]

#: hundredths of a millimetre per inch
HMM_PER_INCH = 2540
#: The default tolerance between a page's size and its stock (``[dispatch]
#: media_tolerance_mm``): PDF writers round a 4×3 in label to whole points (±0.2 mm) and
#: printers report their media rounded to 0.01 mm or whole dots (±0.15 mm at 203 dpi).
DEFAULT_TOLERANCE_HMM = 200

#: PWG 5101.1 self-describing media name: ``class_name_WxHunit``.
_MEDIA_NAME = re.compile(r"^([a-z0-9-]+)_([a-z0-9.-]+)_(\d+(?:\.\d+)?)x(\d+(?:\.\d+)?)(in|mm)$")
#: media-type values (PWG 5100.7 / 5101.1 media-type keywords) that are label or roll stock
_LABEL_TYPES = re.compile(r"^(labels|labels-continuous|continuous|continuous-long|roll)")


@dataclass(frozen=True, slots=True)
class PageSizes:
    """The edges of a document's pages: shortest and longest short edge, and long edge."""

    short_min: int
    short_max: int
    long_min: int
    long_max: int
    #: the first page is wider than tall (a 4×3 in badge): only how its size is said
    landscape: bool = field(default=False, compare=False)

    @classmethod
    def of(cls, sizes: Iterable[tuple[int, int]]) -> PageSizes | None:
        """From (width, height) pairs in hundredths of a millimetre; None without one."""
        pairs = [(w, h) for w, h in sizes if w > 0 and h > 0]
        if not pairs:
            return None
        edges = [(min(w, h), max(w, h)) for w, h in pairs]
        shorts, longs = [s for s, _ in edges], [lo for _, lo in edges]
        landscape = pairs[0][0] > pairs[0][1]
        return cls(min(shorts), max(shorts), min(longs), max(longs), landscape)

    @property
    def uniform(self) -> bool:
        """Every page has the same size."""
        return self.short_min == self.short_max and self.long_min == self.long_max

    def describe(self) -> str:
        """``4×3 in`` (the largest page, width first as its first page is laid out, the way
        its badge and label stock are named)."""
        if self.landscape:
            return size_words(self.long_max, self.short_max)
        return size_words(self.short_max, self.long_max)


@dataclass(frozen=True, slots=True)
class Stock:
    """One ready media: its edges, whether it is label or roll stock, and its tray."""

    short: int
    long: int
    label: bool
    name: str | None = None
    source: str | None = None  # media-source: the tray it is in

    def describe(self) -> str:
        """``4×6 in``: in its PWG name's order when it has one, else short edge first."""
        size = media_name_size(self.name) if self.name else None
        if size is not None and {min(size), max(size)} == {self.short, self.long}:
            return size_words(*size)
        return size_words(self.short, self.long)


def size_words(a: int, b: int) -> str:
    """A size (hundredths of a millimetre) as people name it: ``4×6 in`` when both edges are
    whole eighths of an inch (within 0.1 mm), else ``210×297 mm``."""

    def inches(hmm: int) -> float | None:
        eighths = round(hmm * 8 / HMM_PER_INCH)
        return eighths / 8 if eighths and abs(eighths * HMM_PER_INCH / 8 - hmm) <= 10 else None

    ia, ib = inches(a), inches(b)
    if ia is not None and ib is not None:
        return f"{ia:g}×{ib:g} in"
    return f"{a / 100:g}×{b / 100:g} mm"


def media_name_size(name: str) -> tuple[int, int] | None:
    """(width, height) in hundredths of a millimetre a PWG self-describing name states."""
    m = _MEDIA_NAME.match(name)
    if m is None:
        return None
    per_unit = HMM_PER_INCH if m.group(5) == "in" else 100
    w, h = (round(float(m.group(i)) * per_unit) for i in (3, 4))
    return (w, h) if w > 0 and h > 0 else None


def is_label_stock(name: str | None, media_type: str | None) -> bool:
    """Label or roll stock: a label/continuous media-type, or a PWG name whose class is
    ``roll`` or whose name says label (``oe_4x3-label_4x3in``)."""
    if media_type and _LABEL_TYPES.match(media_type):
        return True
    if name:
        m = _MEDIA_NAME.match(name)
        if m is not None and (m.group(1) == "roll" or "label" in m.group(2)):
            return True
    return False


def stock(
    width: int,
    height: int,
    *,
    name: str | None = None,
    media_type: str | None = None,
    source: str | None = None,
) -> Stock:
    """A ready media of ``width`` × ``height`` (hundredths of a millimetre)."""
    return Stock(
        min(width, height), max(width, height), is_label_stock(name, media_type), name, source
    )


def configured(names: Sequence[str]) -> tuple[Stock, ...]:
    """``[[printers]] media``: PWG self-describing names (validated by config)."""
    out: list[Stock] = []
    for n in names:
        size = media_name_size(n)
        if size is not None:
            out.append(stock(*size, name=n))
    return tuple(out)


@dataclass(frozen=True, slots=True)
class StockView:
    """What one printer has ready and how it may fit pages to it."""

    stocks: tuple[Stock, ...]
    fit: Fit | None = None  # [[printers]] fit; None: by the stock's kind

    @property
    def known(self) -> bool:
        return bool(self.stocks)

    def fit_of(self, s: Stock) -> Fit:
        if self.fit is not None:
            return self.fit
        return "exact" if s.label else "scale"

    def match(self, page: PageSizes | None, tolerance: int) -> Literal["exact", "other"] | None:
        """How ``page`` meets this printer's stock: ``exact``, ``other`` (centred or scaled),
        or None (it does not fit). Unknown pages and unknown stock fit (``other`` unless an
        exact fit is shown)."""
        if page is None or not self.stocks:
            return "other"
        best: Literal["exact", "other"] | None = None
        for s in self.stocks:
            if exact(page, s, tolerance):
                return "exact"
            fit = self.fit_of(s)
            if fit == "scale" or (fit == "center" and covers(page, s, tolerance)):
                best = "other"
        return best


def exact(page: PageSizes, s: Stock, tolerance: int) -> bool:
    """Every page is the stock's size, within ``tolerance``."""
    return (
        page.short_min >= s.short - tolerance
        and page.short_max <= s.short + tolerance
        and page.long_min >= s.long - tolerance
        and page.long_max <= s.long + tolerance
    )


def covers(page: PageSizes, s: Stock, tolerance: int) -> bool:
    """Every page fits on the stock at its own size, within ``tolerance``."""
    return page.short_max <= s.short + tolerance and page.long_max <= s.long + tolerance


def waiting_reason(
    page: PageSizes | None,
    target: str,
    views: Mapping[str, StockView | None],
    tolerance: int,
) -> str | None:
    """Why a job of ``page`` size cannot be claimed by any printer of ``target`` (a pool, or
    one printer's name) for want of stock, in words a person can act on; None when some
    printer of it fits (or might: its stock is not known yet). ``views``: the target's
    printers, None for one not probed yet."""
    if page is None or not views:
        return None
    if any(v is None or v.match(page, tolerance) is not None for v in views.values()):
        return None
    size = page.describe() if page.uniform else f"{page.describe()} (pages of several sizes)"

    def has(v: StockView) -> str:
        return ", ".join(sorted({s.describe() for s in v.stocks}))

    if len(views) == 1 and target in views:
        only = views[target]
        assert only is not None
        return f"{target} has no {size} stock ready; it has {has(only)}"
    loaded = "; ".join(f"{name} has {has(v)}" for name, v in sorted(views.items()) if v)
    return f"no printer in {target} has {size} stock ready; {loaded}"
